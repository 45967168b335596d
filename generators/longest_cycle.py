"""Longest cycle: a graph with a planted Hamiltonian cycle (so the optimum is n); or, without
one, a graph near the Hamiltonicity threshold whose longest cycle no one knows in advance:
`family` random (G(n, p)) or geometric (points in the unit square joined below a radius, the
hard one: its threshold is where the graph just holds together, and long cycles must thread
through narrow places)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mmnp.core import Violation
from mmnp.kits.graphs import (GRAPH_IMAGE, GRAPH_TRANSCRIPTION, DisjointSets, graph_picture, graph_text, marked,
                              random_edges)
from mmnp.prompting import answer_instructions
from mmnp.render import BLUE, Canvas

CATEGORY = "planning"  # how `mmnp tasks` and the leaderboard group it (mmnp.core.CATEGORIES)
VERSION = 2  # bump when this task's instances, prompts or picture change (manifests record it). 2: answer templates, picture kinds


FAMILIES = ("planted", "random", "geometric")


@dataclass(frozen=True)
class Config:
    n: tuple[int, int] | int = (20, 30)
    density: float | tuple[float, float] = 0.3
    # added with the hard upper levels, so recorded only when set (older datasets regenerate);
    # for the geometric family, `density` is the chance that two points lie within the radius
    family: str = field(default="planted", metadata={"choices": FAMILIES, "recorded": "when_set"})


PRESETS = {
    "easy": Config(n=(15, 20), density=0.2),
    "medium": Config(n=(20, 30), density=0.3),
    "hard": Config(n=(30, 40), density=0.4),
}
# past bench: random geometric graphs (points in the unit square joined below a radius) near
# their Hamiltonicity threshold, about 6 neighbours a vertex, no planted cycle: long cycles
# must thread through narrow places, and CP-SAT's bound stays far off (G(n, p) at its own
# threshold, or unbalanced bipartite graphs, it settles in hundredths of a second)
LEVELS = (  # L1..L10 (`mmnp.levels`): a preset name, or the Config fields that differ from its defaults
    {"n": (8, 12), "density": 0.3}, "easy", "medium", "hard",
    {"n": (40, 50), "density": 0.3},
    {"n": (60, 75), "density": 0.09, "family": "geometric"},
    {"n": (75, 95), "density": 0.071, "family": "geometric"},
    {"n": (95, 120), "density": 0.056, "family": "geometric"},
    {"n": (120, 150), "density": 0.045, "family": "geometric"},
    {"n": (150, 180), "density": 0.037, "family": "geometric"},
)

FORMAT = answer_instructions(
    "Give the cycle as a list of vertex ids in order, each at most once (the edge from the last back to the "
    "first is implied and must exist).",
    "[<first vertex id>, <next vertex id>, <next vertex id>, ...]",
)
TRANSCRIPTION = GRAPH_TRANSCRIPTION  # the perception probe's form (`mmnp.transcribe`)
IMPORTS = ("dimacs",)  # `mmnp import` formats whose data this task takes (DIMACS graphs)
IMAGE_PROMPT = (
    GRAPH_IMAGE + "Find the longest simple "
    "cycle: at least 3 distinct vertices, each consecutive pair joined by an edge, and an edge from the last "
    "vertex back to the first. Its length is its number of vertices.\n" + FORMAT
)


def generate(params: dict, rng: np.random.Generator) -> tuple[dict, list[int]]:
    n, density = params["n"], params["density"]
    if n < 3:
        raise ValueError(f"longest_cycle needs n >= 3, got {n}")
    family = params.get("family", "planted")
    if family == "random":
        pairs = [(u, v) for u in range(n) for v in range(u + 1, n)]
        return _with_a_cycle(n, random_edges(rng, pairs, density), rng), None
    if family == "geometric":
        xy = rng.random((n, 2))
        near = np.hypot(*(xy[:, None, :] - xy[None, :, :]).transpose(2, 0, 1)) < np.sqrt(density / np.pi)
        return _with_a_cycle(n, {(u, v) for u, v in zip(*np.nonzero(np.triu(near, 1)))}, rng), None
    if family != "planted":
        raise ValueError(f"longest_cycle family {family!r}: expected one of {', '.join(FAMILIES)}")
    cycle = [int(v) for v in rng.permutation(n)]
    edges = {(min(a, b), max(a, b)) for a, b in zip(cycle, cycle[1:] + cycle[:1])}
    pairs = [(u, v) for u in range(n) for v in range(u + 1, n) if (u, v) not in edges]
    target = density * n * (n - 1) / 2
    p = max(0.0, min(1.0, (target - len(edges)) / max(len(pairs), 1)))
    edges |= random_edges(rng, pairs, p)
    start = cycle.index(0)
    return {"n": n, "edges": [list(e) for e in sorted(edges)]}, cycle[start:] + cycle[:start]


def _with_a_cycle(n: int, edges: set[tuple[int, int]], rng: np.random.Generator) -> dict:
    """The graph, plus an edge closing a cycle in each tree component of three or more
    vertices (so there is always a cycle to find, and no vertex is left without one by chance)."""
    edges = {(int(u), int(v)) for u, v in edges}
    sets = DisjointSets(n)
    cyclic: set[int] = set()
    for u, v in sorted(edges):
        a, b = sets.find(u), sets.find(v)
        if a == b:
            cyclic.add(a)
        else:
            sets.join(a, b)
            if a in cyclic:
                cyclic.add(b)
    groups: dict[int, list[int]] = {}
    for v in range(n):
        groups.setdefault(sets.find(v), []).append(v)
    for root, members in sorted(groups.items()):
        if root not in cyclic and len(members) >= 3:  # a tree: join two of its vertices not yet adjacent
            missing = [(u, v) for i, u in enumerate(members) for v in members[i + 1:] if (u, v) not in edges]
            edges.add(missing[int(rng.integers(len(missing)))])
    if not any(len(m) >= 3 for m in groups.values()):  # no component can hold a cycle: a triangle
        a, b, c = sorted(int(v) for v in rng.choice(n, size=3, replace=False))
        edges |= {(a, b), (a, c), (b, c)}
    return {"n": n, "edges": [list(e) for e in sorted(edges)]}


def prompt(data: dict) -> str:
    return (
        f"{graph_text(data)}\n\n"
        "Find the longest simple cycle: at least 3 distinct vertices, each consecutive pair joined by an edge, "
        "and an edge from the last vertex back to the first. Its length is its number of vertices.\n\n" + FORMAT
    )


def render(data: dict, size: int, solution=None, violations: tuple[Violation, ...] = ()) -> Canvas:
    """The answer's existing edges in blue, the ones it needs but the graph lacks in red."""
    n = data["n"]
    inside = lambda a, b: 0 <= a < n and 0 <= b < n and a != b  # noqa: E731
    missing = [(min(a, b), max(a, b)) for a, b in marked(violations, "missing_edge") if inside(a, b)]
    path = [v for v in solution or () if isinstance(v, int) and 0 <= v < n]
    used = [(min(a, b), max(a, b)) for a, b in zip(path, path[1:] + path[:1]) if a != b]
    colours = {e: BLUE for e in used if e not in missing}
    return graph_picture(data, size, "Longest cycle", extra_edges=missing,
                         edge_colour=colours, bold_edges=used, ringed=marked(violations, "repeated_vertex"))
