"""Longest cycle: a graph with a planted Hamiltonian cycle (so the optimum is n)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mmnp.core import Violation
from mmnp.generators.graphs import edge_list_text, random_edges, title
from mmnp.prompting import answer_instructions
from mmnp.render import BLUE, Canvas, draw_graph


@dataclass(frozen=True)
class Config:
    n: tuple[int, int] | int = (20, 30)
    density: float | tuple[float, float] = 0.3


PRESETS = {
    "easy": Config(n=(15, 20), density=0.2),
    "medium": Config(n=(20, 30), density=0.3),
    "hard": Config(n=(30, 40), density=0.4),
}

FORMAT = answer_instructions(
    "Give the cycle as a list of vertex ids in order, each at most once (the edge from the last back to the "
    "first is implied and must exist). For example:",
    "[0, 3, 5, 2]",
)
IMAGE_PROMPT = (
    "The image shows an undirected graph; each circle is a vertex labelled with its id. Find the longest simple "
    "cycle: at least 3 distinct vertices, each consecutive pair joined by an edge, and an edge from the last "
    "vertex back to the first. Its length is its number of vertices.\n" + FORMAT
)


def generate(params: dict, rng: np.random.Generator) -> tuple[dict, list[int]]:
    n, density = params["n"], params["density"]
    if n < 3:
        raise ValueError(f"longest_cycle needs n >= 3, got {n}")
    cycle = [int(v) for v in rng.permutation(n)]
    edges = {(min(a, b), max(a, b)) for a, b in zip(cycle, cycle[1:] + cycle[:1])}
    pairs = [(u, v) for u in range(n) for v in range(u + 1, n) if (u, v) not in edges]
    target = density * n * (n - 1) / 2
    p = max(0.0, min(1.0, (target - len(edges)) / max(len(pairs), 1)))
    edges |= random_edges(rng, pairs, p)
    start = cycle.index(0)
    return {"n": n, "edges": [list(e) for e in sorted(edges)]}, cycle[start:] + cycle[:start]


def prompt(data: dict) -> str:
    return (
        f"An undirected graph has {data['n']} vertices, numbered 0 to {data['n'] - 1}, and these "
        f"{len(data['edges'])} edges:\n{edge_list_text(data['edges'])}\n\n"
        "Find the longest simple cycle: at least 3 distinct vertices, each consecutive pair joined by an edge, "
        "and an edge from the last vertex back to the first. Its length is its number of vertices.\n\n" + FORMAT
    )


def render(data: dict, size: int, solution=None, violations: tuple[Violation, ...] = ()) -> Canvas:
    n = data["n"]
    canvas = Canvas(size, size)
    colours: dict[tuple[int, int], int] = {}
    bold: list[tuple[int, int]] = []
    if solution:
        path = [v for v in solution if isinstance(v, int) and 0 <= v < n]
        for a, b in zip(path, path[1:] + path[:1]):
            if a != b:
                key = (min(a, b), max(a, b))
                colours[key] = BLUE
                bold.append(key)
    for v in violations:  # missing edges are drawn (red) where the answer needs them
        if v.kind == "missing_edge":
            for a, b in v.where:
                if 0 <= a < n and 0 <= b < n:
                    colours.pop((min(a, b), max(a, b)), None)
    ringed = [w for v in violations if v.kind == "repeated_vertex" for w in v.where]
    title(canvas, f"Longest cycle: {n} vertices, {len(data['edges'])} edges")
    edges = data["edges"] + [[a, b] for v in violations if v.kind == "missing_edge" for a, b in v.where
                             if 0 <= a < n and 0 <= b < n]
    draw_graph(canvas, n, edges, (0, 30, size, size), edge_colour=colours, bold_edges=bold, ringed=ringed)
    return canvas
