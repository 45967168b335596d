"""Independent set: a largest clique of the complement graph (mmnp's max-clique search); CP-SAT exact."""

from __future__ import annotations

import numpy as np

from mmnp.kits.graphs import neighbour_masks
from mmnp.solvers import cpsat
from mmnp.solvers.max_clique import maximum_clique


def heuristic(data: dict) -> list[int]:
    n = data["n"]
    full = (1 << n) - 1
    complement = [full & ~mask & ~(1 << v) for v, mask in enumerate(neighbour_masks(data))]
    return sorted(maximum_clique(n, complement))


def optimal(data: dict, time_limit: float, hint: list[int]) -> tuple[list[int], bool]:
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    x = [model.NewBoolVar("") for _ in range(data["n"])]
    for u, v in data["edges"]:
        model.AddBoolOr([x[u].Not(), x[v].Not()])
    model.Maximize(sum(x))
    solver, proven = cpsat.solve(model, time_limit)
    if not proven and cpsat.settles(solver, len(hint), minimize=False):
        return hint, True
    return cpsat.selected(solver, x), proven


def random(data: dict, rng: np.random.Generator) -> list[int]:
    """Each vertex kept with probability 1/2: usually takes both ends of some edge."""
    return [v for v in range(data["n"]) if rng.random() < 0.5]


def trivial(data: dict) -> list[int]:
    """One vertex: independent in every graph, the floor a non-solver reaches."""
    return [0]
