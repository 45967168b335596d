"""Maximum clique: a random graph with a planted clique larger than its natural ones."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mmnp.core import Violation
from mmnp.generators.graphs import GRAPH_IMAGE, chosen_fill, graph_picture, graph_text, marked, random_edges
from mmnp.prompting import answer_instructions
from mmnp.render import Canvas

VERSION = 2  # bump when this task's instances, prompts or picture change (manifests record it). 2: answer templates, picture kinds


@dataclass(frozen=True)
class Config:
    n: tuple[int, int] | int = (12, 20)
    clique: tuple[int, int] | int = (5, 7)
    density: float | tuple[float, float] = 0.35


# NP-Bench uses 4-8 / 8-12 / 12-16 vertices; larger graphs keep the task from being trivial.
PRESETS = {
    "easy": Config(n=(8, 12), clique=(4, 5), density=0.3),
    "medium": Config(n=(12, 20), clique=(5, 7), density=0.35),
    "hard": Config(n=(20, 30), clique=(7, 9), density=0.4),
}

FORMAT = answer_instructions(
    "Give the clique as a list of vertex ids, each at most once.",
    "[<vertex id>, <vertex id>, ...]",
)
IMAGE_PROMPT = (
    GRAPH_IMAGE + "Find a largest clique: "
    "a set of vertices in which every two are joined by an edge.\n" + FORMAT
)


def generate(params: dict, rng: np.random.Generator) -> tuple[dict, list[int]]:
    n, density = params["n"], params["density"]
    k = min(params["clique"], n)
    clique = sorted(int(v) for v in rng.choice(n, size=k, replace=False))
    planted = {(u, v) for i, u in enumerate(clique) for v in clique[i + 1 :]}
    pairs = [(u, v) for u in range(n) for v in range(u + 1, n) if (u, v) not in planted]
    edges = planted | random_edges(rng, pairs, density)
    return {"n": n, "edges": [list(e) for e in sorted(edges)]}, clique


def prompt(data: dict) -> str:
    return (
        f"{graph_text(data)}\n\n"
        "Find a largest clique: a set of vertices in which every two are joined by an edge.\n\n" + FORMAT
    )


def render(data: dict, size: int, solution=None, violations: tuple[Violation, ...] = ()) -> Canvas:
    apart = [tuple(p) for p in marked(violations, "not_adjacent")]  # drawn where an edge is missing
    return graph_picture(data, size, "Maximum clique", extra_edges=apart,
                         node_fill=chosen_fill(solution, data["n"]), bold_edges=apart,
                         ringed=marked(violations, "repeated_vertex"))
