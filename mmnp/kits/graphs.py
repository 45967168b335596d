"""Pieces shared by the graph tasks' prompts and pictures."""

from __future__ import annotations

import numpy as np

from mmnp.core import Violation
from mmnp.render import ORANGE, Canvas, draw_graph, graph_canvas
from mmnp.transcribe import Form, as_int, as_list, scalar

GRAPH_IMAGE = (
    "The image shows an undirected graph; each circle is a vertex labelled with its id, each line an edge "
    "(no line passes under a vertex it does not end at). A graph too dense to draw that way shows its vertices "
    "without lines and an edge list under them: the row \"u: v, w\" lists the edges (u, v) and (u, w), each "
    "edge once, under its smaller endpoint. "
)


def edge_list_text(edges: list[list[int]]) -> str:
    return ", ".join(f"({u}, {v})" for u, v in edges)


def graph_text(data: dict) -> str:
    """The graph as the text prompts state it: vertex count and every edge."""
    return (f"An undirected graph has {data['n']} vertices, numbered 0 to {data['n'] - 1}, and these "
            f"{len(data['edges'])} edges:\n{edge_list_text(data['edges'])}")


def graph_picture(data: dict, size: int, heading: str, extra_edges: list | None = None, **draw) -> Canvas:
    """A graph task's picture: a title line, then the graph (see `draw_graph` for `draw`).

    The vertex placement depends on the instance's edges only, so an answer drawn over it
    (`extra_edges`: pairs an answer needs but the graph lacks) leaves every vertex in place."""
    canvas, drawing = graph_canvas(data["n"], data["edges"], size,
                                   f"{heading}: {data['n']} vertices, {len(data['edges'])} edges")
    draw_graph(canvas, drawing, data["edges"] + [list(e) for e in extra_edges or ()], **draw)
    canvas.layout = drawing.to_record()
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


class DisjointSets:
    """Union-find over 0..n-1 with path halving. `join(a, b)` puts a's set under b's root, so
    which vertex is a component's root (and the generators' draws that follow from it) is fixed."""

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, x: int) -> int:
        parent = self.parent
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def join(self, a: int, b: int) -> None:
        self.parent[self.find(a)] = self.find(b)


def neighbour_masks(data: dict) -> list[int]:
    """Each vertex's neighbours as a bit mask (bit v of masks[u] set when u-v is an edge): the
    graph solvers' fast set algebra."""
    masks = [0] * data["n"]
    for u, v in data["edges"]:
        masks[u] |= 1 << v
        masks[v] |= 1 << u
    return masks


# -- transcription (the perception probe, `mmnp.transcribe`): {"n": 12, "edges": [[0, 1], ...]};
# fields n (right or wrong) and edges (F1 over unordered vertex pairs)

def _transcription(data: dict) -> dict:
    return {"n": data["n"], "edges": sorted([min(u, v), max(u, v)] for u, v in data["edges"])}


def _transcription_facts(t: dict) -> dict[str, set]:
    edges = set()
    for e in as_list(t.get("edges")):
        if isinstance(e, list) and len(e) == 2:
            u, v = as_int(e[0]), as_int(e[1])
            if u is not None and v is not None and u != v:
                edges.add((min(u, v), max(u, v)))
    return {"n": scalar(t.get("n")), "edges": edges}


GRAPH_TRANSCRIPTION = Form(
    _transcription, _transcription_facts,
    '{"n": <number of vertices>, "edges": [[<smaller vertex>, <larger vertex>], ...]}  (vertices numbered '
    '0..n-1; each edge once)')
