"""Pieces shared by the graph tasks' prompts and pictures."""

from __future__ import annotations

import numpy as np

from mmnp.core import Violation
from mmnp.render import ORANGE, Canvas, draw_graph


def edge_list_text(edges: list[list[int]]) -> str:
    return ", ".join(f"({u}, {v})" for u, v in edges)


def graph_text(data: dict) -> str:
    """The graph as the text prompts state it: vertex count and every edge."""
    return (f"An undirected graph has {data['n']} vertices, numbered 0 to {data['n'] - 1}, and these "
            f"{len(data['edges'])} edges:\n{edge_list_text(data['edges'])}")


def title(canvas: Canvas, text: str) -> None:
    canvas.text((canvas.width / 2, 8), text, size=16, anchor="mt", bold=True)


def graph_picture(data: dict, size: int, heading: str, **draw) -> Canvas:
    """A graph task's picture: a title line, then the graph (see `draw_graph` for `draw`)."""
    canvas = Canvas(size, size)
    title(canvas, f"{heading}: {data['n']} vertices, {len(data['edges'])} edges")
    draw_graph(canvas, data["n"], draw.pop("edges", data["edges"]), (0, 30, size, size), **draw)
    return canvas


def chosen_fill(solution, n: int) -> list[int] | None:
    """Node fills marking the vertices an answer picked (None: no answer to show)."""
    if solution is None:
        return None
    chosen = {v for v in solution if isinstance(v, int)}
    return [ORANGE if v in chosen else 0 for v in range(n)]


def marked(violations: tuple[Violation, ...], *kinds: str) -> list:
    """The elements named by the violations of the given kinds."""
    return [w for v in violations if v.kind in kinds for w in v.where]


def random_edges(rng: np.random.Generator, pairs: list[tuple[int, int]], p: float) -> set[tuple[int, int]]:
    """Each candidate pair kept independently with probability p (one vectorised draw)."""
    keep = rng.random(len(pairs)) < p
    return {pair for pair, kept in zip(pairs, keep) if kept}


def neighbour_masks(data: dict) -> list[int]:
    """Each vertex's neighbours as a bit mask (bit v of masks[u] set when u-v is an edge): the
    graph solvers' fast set algebra."""
    masks = [0] * data["n"]
    for u, v in data["edges"]:
        masks[u] |= 1 << v
        masks[v] |= 1 << u
    return masks
