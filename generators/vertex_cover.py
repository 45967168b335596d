"""Vertex cover: a graph whose non-cover vertices form a planted independent set; `hidden`
camouflages it (the complement of a hidden clique, as DIMACS's brock graphs hide theirs): the
set's vertices get denser edges to the cover, so that their degrees do not stand out."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mmnp.core import Violation
from mmnp.kits.graphs import GRAPH_IMAGE, GRAPH_TRANSCRIPTION, chosen_fill, graph_picture, graph_text, marked, random_edges
from mmnp.prompting import answer_instructions
from mmnp.render import Canvas

CATEGORY = "graph"  # how `mmnp tasks` and the leaderboard group it (mmnp.core.CATEGORIES)
VERSION = 2  # bump when this task's instances, prompts or picture change (manifests record it). 2: answer templates, picture kinds


@dataclass(frozen=True)
class Config:
    n: tuple[int, int] | int = (20, 35)
    cover_fraction: float | tuple[float, float] = (0.35, 0.5)
    density: float | tuple[float, float] = 0.25  # edge probability for pairs touching the cover
    # added with the hard upper levels, so recorded only when set (older datasets regenerate)
    hidden: bool = field(default=False, metadata={"recorded": "when_set"})


PRESETS = {
    "easy": Config(n=(10, 20), density=0.3),
    "medium": Config(n=(20, 35), density=0.25),
    "hard": Config(n=(35, 50), density=0.2),
}
# past bench: the complement of a hidden clique (a planted independent set whose vertices'
# degrees are evened out, as DIMACS's brock graphs hide theirs) near the natural set size
LEVELS = (  # L1..L10 (`mmnp.levels`): a preset name, or the Config fields that differ from its defaults
    {"n": (6, 10), "density": 0.35}, "easy", "medium", "hard",
    {"n": (50, 65), "density": 0.18},
    {"n": (70, 85), "cover_fraction": 0.7, "density": 0.12, "hidden": True},
    {"n": (85, 100), "cover_fraction": 0.72, "density": 0.11, "hidden": True},
    {"n": (100, 120), "cover_fraction": 0.74, "density": 0.1, "hidden": True},
    {"n": (120, 140), "cover_fraction": 0.75, "density": 0.085, "hidden": True},
    {"n": (140, 160), "cover_fraction": 0.77, "density": 0.075, "hidden": True},
)

FORMAT = answer_instructions(
    "Give the cover as a list of vertex ids, each at most once.",
    "[<vertex id>, <vertex id>, ...]",
)
TRANSCRIPTION = GRAPH_TRANSCRIPTION  # the perception probe's form (`mmnp.transcribe`)
IMPORTS = ("dimacs",)  # `mmnp import` formats whose data this task takes (DIMACS graphs)
IMAGE_PROMPT = (
    GRAPH_IMAGE + "Find a smallest "
    "vertex cover: a set of vertices such that every edge has at least one endpoint in the set.\n" + FORMAT
)


def generate(params: dict, rng: np.random.Generator) -> tuple[dict, list[int]]:
    n, p = params["n"], params["density"]
    k = max(1, min(n - 1, round(params["cover_fraction"] * n)))
    cover = sorted(int(v) for v in rng.choice(n, size=k, replace=False))
    in_cover = set(cover)
    pairs = [(u, v) for u in range(n) for v in range(u + 1, n) if u in in_cover or v in in_cover]
    if params.get("hidden") and 2 * k > n:
        # an outside vertex has only the k cover vertices as possible neighbours, a cover vertex
        # n - 1: pairs reaching outside get the probability that evens their expected degrees
        across = (k - 1) * p / (2 * k - n)
        chance = np.array([p if u in in_cover and v in in_cover else min(1.0, across) for u, v in pairs])
        keep = rng.random(len(pairs)) < chance
        edges = {pair for pair, kept in zip(pairs, keep) if kept}
    else:
        edges = random_edges(rng, pairs, p)
    outside = [v for v in range(n) if v not in in_cover]
    for v in outside:  # no isolated vertex: each outside vertex hangs off some cover vertex
        if not any(v in e for e in edges):
            u = cover[int(rng.integers(len(cover)))]
            edges.add((min(u, v), max(u, v)))
    return {"n": n, "edges": [list(e) for e in sorted(edges)]}, cover


def prompt(data: dict) -> str:
    return (
        f"{graph_text(data)}\n\n"
        "Find a smallest vertex cover: a set of vertices such that every edge has at least one endpoint "
        "in the set.\n\n" + FORMAT
    )


def render(data: dict, size: int, solution=None, violations: tuple[Violation, ...] = ()) -> Canvas:
    return graph_picture(data, size, "Vertex cover", node_fill=chosen_fill(solution, data["n"]),
                         bold_edges=[tuple(e) for e in marked(violations, "uncovered_edge")],
                         ringed=marked(violations, "repeated_vertex"))
