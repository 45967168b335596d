"""Graph colouring: a graph with a planted k-colouring and a planted k-clique (so chi = k);
without the clique (`clique` false) and near the k-colourability threshold, the lower bound
that proves the planted colouring optimal is what makes the instance hard."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mmnp.core import Violation
from mmnp.kits.graphs import GRAPH_IMAGE, GRAPH_TRANSCRIPTION, graph_picture, graph_text, marked, random_edges
from mmnp.prompting import answer_instructions
from mmnp.render import DISTINCT_CLASSES, Canvas, class_colour

CATEGORY = "graph"  # how `mmnp tasks` and the leaderboard group it (mmnp.core.CATEGORIES)
VERSION = 2  # bump when this task's instances, prompts or picture change (manifests record it). 2: answer templates, picture kinds


@dataclass(frozen=True)
class Config:
    n: tuple[int, int] | int = (15, 22)
    colours: tuple[int, int] | int = (4, 6)
    density: float | tuple[float, float] = 0.35
    # added with the hard upper levels, so recorded only when set (older datasets regenerate)
    clique: bool = field(default=True, metadata={"recorded": "when_set"})


PRESETS = {
    "easy": Config(n=(8, 12), colours=(3, 4), density=0.2),
    "medium": Config(n=(15, 22), colours=(4, 6), density=0.35),
    "hard": Config(n=(25, 32), colours=(6, 8), density=0.5),
}
# past bench: no planted clique, and more colours planted than such a graph needs, so the
# chromatic number is the random graph's own and CP-SAT must prove its lower bound
LEVELS = (  # L1..L10 (`mmnp.levels`): a preset name, or the Config fields that differ from its defaults
    {"n": (5, 8), "colours": (2, 3), "density": 0.2}, "easy", "medium", "hard",
    {"n": (32, 40), "colours": (7, 9), "density": 0.5},
    {"n": (40, 50), "colours": (8, 10), "density": 0.45, "clique": False},
    {"n": (50, 60), "colours": (9, 11), "density": 0.4, "clique": False},
    {"n": (60, 75), "colours": (10, 12), "density": 0.35, "clique": False},
    {"n": (75, 90), "colours": (11, 13), "density": 0.3, "clique": False},
    {"n": (90, 110), "colours": (12, 14), "density": 0.28, "clique": False},
)

FORMAT = answer_instructions(
    "Give the colours as a list of positive integers, where the i-th entry is the colour of vertex i "
    "(use as few distinct colours as you can).",
    "[<colour of vertex 0>, <colour of vertex 1>, <colour of vertex 2>, ...]",
)
TRANSCRIPTION = GRAPH_TRANSCRIPTION  # the perception probe's form (`mmnp.transcribe`)
IMPORTS = ("dimacs",)  # `mmnp import` formats whose data this task takes (DIMACS graphs)
IMAGE_PROMPT = (
    GRAPH_IMAGE + "Colour every vertex "
    "so that two vertices joined by an edge have different colours, using as few colours as possible.\n" + FORMAT
)


def generate(params: dict, rng: np.random.Generator) -> tuple[dict, list[int]]:
    n, k, density = params["n"], params["colours"], params["density"]
    if not 2 <= k <= n:
        raise ValueError(f"graph_coloring needs 2 <= colours <= n, got colours={k}, n={n}")
    colour = [int(c) for c in rng.permutation(np.arange(n) % k)]  # balanced classes, all non-empty
    representatives = [colour.index(c) for c in range(k)]
    pairs = [(u, v) for u in range(n) for v in range(u + 1, n) if colour[u] != colour[v]]
    p = min(1.0, density * n * (n - 1) / 2 / len(pairs))
    edges = random_edges(rng, pairs, p)
    if params.get("clique", True):
        edges |= {(min(u, v), max(u, v)) for i, u in enumerate(representatives) for v in representatives[i + 1 :]}
    return {"n": n, "edges": [list(e) for e in sorted(edges)]}, [c + 1 for c in colour]


def prompt(data: dict) -> str:
    return (
        f"{graph_text(data)}\n\n"
        "Colour every vertex so that two vertices joined by an edge have different colours, "
        "using as few colours as possible.\n\n" + FORMAT
    )


def render(data: dict, size: int, solution=None, violations: tuple[Violation, ...] = ()) -> Canvas:
    from mmnp.kits.answers import as_mapping

    fill = notes = None
    if solution is not None:
        names: dict[int, int] = {}
        mapping = as_mapping(solution)
        fill = [class_colour(names.setdefault(mapping[v], len(names))) if v in mapping else 0 for v in range(data["n"])]
        if len(names) > DISTINCT_CLASSES:  # past the fills the eye tells apart, each disc names its colour too
            notes = [str(mapping[v]) if v in mapping else "" for v in range(data["n"])]
    ringed = [w for w in marked(violations, "missing_vertex", "invalid_colour", "repeated_vertex") if isinstance(w, int)]
    return graph_picture(data, size, "Graph colouring", node_fill=fill, notes=notes,
                         bold_edges=[tuple(e) for e in marked(violations, "conflict")], ringed=ringed)
