"""Maximum independent set, an 11th task added from outside mmnp (tests/test_task_plugin.py): a
graph with a planted independent set, built from mmnp's graph kit."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mmnp.core import Violation
from mmnp.kits.graphs import GRAPH_IMAGE, GRAPH_TRANSCRIPTION, chosen_fill, graph_picture, graph_text, marked, random_edges
from mmnp.prompting import answer_instructions
from mmnp.render import Canvas

CATEGORY = "graph"
VERSION = 1


@dataclass(frozen=True)
class Config:
    n: tuple[int, int] | int = (20, 35)
    set_fraction: float | tuple[float, float] = (0.3, 0.45)
    density: float | tuple[float, float] = 0.25  # edge probability for pairs not both in the planted set


PRESETS = {
    "easy": Config(n=(10, 20), density=0.3),
    "medium": Config(n=(20, 35), density=0.25),
    "hard": Config(n=(35, 50), density=0.2),
}
LEVELS = (
    {"n": (6, 10), "density": 0.35}, "easy", "medium", "hard",
    {"n": (50, 65), "density": 0.18}, {"n": (65, 80), "density": 0.15}, {"n": (80, 95), "density": 0.13},
    {"n": (95, 110), "density": 0.12}, {"n": (110, 130), "density": 0.1}, {"n": (130, 150), "density": 0.09},
)
TRANSCRIPTION = GRAPH_TRANSCRIPTION
IMPORTS = ("dimacs",)

FORMAT = answer_instructions(
    "Give the independent set as a list of vertex ids, each at most once.",
    "[<vertex id>, <vertex id>, ...]",
)
TASK = "Find a largest independent set: a set of vertices no two of which are joined by an edge."
IMAGE_PROMPT = GRAPH_IMAGE + TASK + "\n" + FORMAT


def generate(params: dict, rng: np.random.Generator) -> tuple[dict, list[int]]:
    n = params["n"]
    k = max(1, min(n - 1, round(params["set_fraction"] * n)))
    planted = sorted(int(v) for v in rng.choice(n, size=k, replace=False))
    inside = set(planted)
    pairs = [(u, v) for u in range(n) for v in range(u + 1, n) if not (u in inside and v in inside)]
    edges = random_edges(rng, pairs, params["density"])
    return {"n": n, "edges": [list(e) for e in sorted(edges)]}, planted


def prompt(data: dict) -> str:
    return f"{graph_text(data)}\n\n{TASK}\n\n{FORMAT}"


def render(data: dict, size: int, solution=None, violations: tuple[Violation, ...] = ()) -> Canvas:
    return graph_picture(data, size, "Independent set", node_fill=chosen_fill(solution, data["n"]),
                         bold_edges=[tuple(e) for e in marked(violations, "adjacent")],
                         ringed=marked(violations, "repeated_vertex"))
