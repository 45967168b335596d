"""Maximum clique: a random graph with a planted clique larger than its natural ones; `hidden`
camouflages it (Brockington & Culberson's hidden cliques, as in DIMACS's brock graphs): its
members' other edges are thinner, so that their degrees do not stand out."""

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
    n: tuple[int, int] | int = (12, 20)
    clique: tuple[int, int] | int = (5, 7)
    density: float | tuple[float, float] = 0.35
    # added with the hard upper levels, so recorded only when set (older datasets regenerate)
    hidden: bool = field(default=False, metadata={"recorded": "when_set"})


# NP-Bench uses 4-8 / 8-12 / 12-16 vertices; larger graphs keep the task from being trivial.
PRESETS = {
    "easy": Config(n=(8, 12), clique=(4, 5), density=0.3),
    "medium": Config(n=(12, 20), clique=(5, 7), density=0.35),
    "hard": Config(n=(20, 30), clique=(7, 9), density=0.4),
}
# past bench: hidden cliques (Brockington & Culberson, DIMACS's brock family): the members'
# degrees are evened out, and the clique is barely larger than the graph's natural ones
LEVELS = (  # L1..L10 (`mmnp.levels`): a preset name, or the Config fields that differ from its defaults
    {"n": (6, 8), "clique": (3, 4), "density": 0.3}, "easy", "medium", "hard",
    {"n": (30, 40), "clique": (8, 10), "density": 0.45},
    {"n": (60, 70), "clique": (10, 11), "density": 0.5, "hidden": True},
    {"n": (70, 80), "clique": (10, 11), "density": 0.5, "hidden": True},
    {"n": (80, 90), "clique": (11, 12), "density": 0.5, "hidden": True},
    {"n": (90, 100), "clique": (11, 12), "density": 0.5, "hidden": True},
    {"n": (100, 110), "clique": (11, 12), "density": 0.5, "hidden": True},
)

FORMAT = answer_instructions(
    "Give the clique as a list of vertex ids, each at most once.",
    "[<vertex id>, <vertex id>, ...]",
)
TRANSCRIPTION = GRAPH_TRANSCRIPTION  # the perception probe's form (`mmnp.transcribe`)
IMPORTS = ("dimacs",)  # `mmnp import` formats whose data this task takes (DIMACS graphs)
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
    if not params.get("hidden"):
        edges = planted | random_edges(rng, pairs, density)
        return {"n": n, "edges": [list(e) for e in sorted(edges)]}, clique
    # a member has k - 1 clique edges; its other n - k pairs get the probability that leaves its
    # expected degree equal to a non-member's (k of whose pairs touch the clique)
    members = set(clique)
    member = max(0.0, ((n - k - 1) * density - (k - 1)) / (n - 2 * k)) if n > 2 * k else density
    chance = np.array([member if u in members or v in members else density for u, v in pairs])
    keep = rng.random(len(pairs)) < chance
    edges = planted | {pair for pair, kept in zip(pairs, keep) if kept}
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
