"""Minimum bisection: a connected graph with a planted low-cut split into two halves."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mmnp.core import Violation
from mmnp.kits.graphs import (GRAPH_IMAGE, GRAPH_TRANSCRIPTION, DisjointSets, graph_picture, graph_text, marked,
                              random_edges)
from mmnp.prompting import answer_instructions
from mmnp.render import Canvas, class_colour

CATEGORY = "partition"  # how `mmnp tasks` and the leaderboard group it (mmnp.core.CATEGORIES)
VERSION = 2  # bump when this task's instances, prompts or picture change (manifests record it). 2: answer templates, picture kinds


@dataclass(frozen=True)
class Config:
    n: tuple[int, int] | int = (30, 40)
    p_in: float | tuple[float, float] = (0.2, 0.3)  # edge probability inside a planted half
    p_out: float | tuple[float, float] = (0.03, 0.06)  # across the halves (the noise)


PRESETS = {
    "easy": Config(n=(20, 30), p_in=(0.25, 0.35)),
    "medium": Config(n=(30, 40)),
    "hard": Config(n=(40, 50), p_in=(0.15, 0.25), p_out=(0.04, 0.07)),
}
LEVELS = (  # L1..L10 (`mmnp.levels`): a preset name, or the Config fields that differ from its defaults
    {"n": (10, 16), "p_in": (0.3, 0.4)}, "easy", "medium", "hard",
    {"n": (50, 60), "p_in": (0.15, 0.25), "p_out": (0.04, 0.07)},
    {"n": (60, 75), "p_in": (0.12, 0.2), "p_out": (0.03, 0.06)},
    {"n": (75, 90), "p_in": (0.1, 0.16), "p_out": (0.03, 0.05)},
    {"n": (90, 110), "p_in": (0.08, 0.14), "p_out": (0.025, 0.045)},
    {"n": (110, 130), "p_in": (0.07, 0.12), "p_out": (0.02, 0.04)},
    {"n": (130, 150), "p_in": (0.06, 0.1), "p_out": (0.02, 0.035)},
)

FORMAT = answer_instructions(
    "Give one half as a list of vertex ids (the other half is every other vertex).",
    "[<vertex id>, <vertex id>, ...]",
)
TRANSCRIPTION = GRAPH_TRANSCRIPTION  # the perception probe's form (`mmnp.transcribe`)
IMPORTS = ("dimacs",)  # `mmnp import` formats whose data this task takes (DIMACS graphs)
IMAGE_PROMPT = (
    GRAPH_IMAGE + "Split the vertices into "
    "two halves of equal size (sizes may differ by one when the number of vertices is odd) so that as few edges "
    "as possible join the two halves.\n" + FORMAT
)


def generate(params: dict, rng: np.random.Generator) -> tuple[dict, list[int]]:
    n = params["n"]
    if n < 4:
        raise ValueError(f"min_bisection needs n >= 4, got {n}")
    order = [int(v) for v in rng.permutation(n)]
    side = [0] * n
    for v in order[n // 2 :]:
        side[v] = 1
    inside = [(u, v) for u in range(n) for v in range(u + 1, n) if side[u] == side[v]]
    across = [(u, v) for u in range(n) for v in range(u + 1, n) if side[u] != side[v]]
    edges = random_edges(rng, inside, params["p_in"]) | random_edges(rng, across, params["p_out"])
    if not any(side[u] != side[v] for u, v in edges):
        u, v = across[int(rng.integers(len(across)))]
        edges.add((u, v))
    _connect(edges, n, side, rng)
    half = sorted(v for v in range(n) if side[v] == side[0])
    return {"n": n, "edges": [list(e) for e in sorted(edges)]}, half


def _connect(edges: set[tuple[int, int]], n: int, side: list[int], rng: np.random.Generator) -> None:
    """Join components by edges inside a half where possible, so every bisection cuts >= 1
    edge (the reference objective is never 0) and the planted cut stays low."""
    sets = DisjointSets(n)
    find = sets.find
    for u, v in edges:
        sets.join(u, v)
    for v in range(1, n):
        if find(v) != find(0):
            same = [u for u in range(n) if find(u) == find(0) and side[u] == side[v]]
            pool = same or [u for u in range(n) if find(u) == find(0)]
            u = pool[int(rng.integers(len(pool)))]
            edges.add((min(u, v), max(u, v)))
            sets.join(v, 0)


def prompt(data: dict) -> str:
    return (
        f"{graph_text(data)}\n\n"
        "Split the vertices into two halves of equal size (sizes may differ by one when the number of vertices "
        "is odd) so that as few edges as possible join the two halves.\n\n" + FORMAT
    )


def render(data: dict, size: int, solution=None, violations: tuple[Violation, ...] = ()) -> Canvas:
    """The two halves in two colours, the edges across them in bold red."""
    from mmnp.kits.answers import halves

    n = data["n"]
    fill, cut, heading = None, [], "Minimum bisection"
    if solution is not None:
        first = {v for v in halves(solution)[0] if isinstance(v, int)}
        fill = [class_colour(0) if v in first else class_colour(2) for v in range(n)]
        cut = [(u, v) for u, v in data["edges"] if (u in first) != (v in first)]
        heading = f"Minimum bisection ({len(cut)} edges cut)"
    return graph_picture(data, size, heading, node_fill=fill, bold_edges=cut,
                         ringed=marked(violations, "repeated_vertex", "missing_vertex"))
