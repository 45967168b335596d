"""Pieces shared by the graph tasks' prompts and pictures."""

from __future__ import annotations

import numpy as np

from mmnp.render import Canvas


def edge_list_text(edges: list[list[int]]) -> str:
    return ", ".join(f"({u}, {v})" for u, v in edges)


def title(canvas: Canvas, text: str) -> None:
    canvas.text((canvas.width / 2, 8), text, size=16, anchor="mt", bold=True)


def random_edges(rng: np.random.Generator, pairs: list[tuple[int, int]], p: float) -> set[tuple[int, int]]:
    """Each candidate pair kept independently with probability p (one vectorised draw)."""
    keep = rng.random(len(pairs)) < p
    return {pair for pair, kept in zip(pairs, keep) if kept}
