"""Vertex cover: the complement of a largest independent set, found as a largest clique of the
complement graph (`mmnp.solvers.max_clique`: branch and bound with colouring bounds, proving
the optimum when it finishes, else DLS-MC at five penalty delays side by side, with the step
budget stated there); CP-SAT exact."""

from __future__ import annotations

import numpy as np

from mmnp.kits.graphs import neighbour_masks
from mmnp.solvers import cpsat
from mmnp.solvers.max_clique import maximum_clique


def heuristic(data: dict) -> list[int]:
    n = data["n"]
    full = (1 << n) - 1
    complement = [full & ~mask & ~(1 << v) for v, mask in enumerate(neighbour_masks(data))]
    independent = set(maximum_clique(n, complement))
    return [v for v in range(n) if v not in independent]


def optimal(data: dict, time_limit: float, hint: list[int]) -> tuple[list[int], bool]:
    from ortools.sat.python import cp_model

    n = data["n"]
    model = cp_model.CpModel()
    x = [model.NewBoolVar("") for _ in range(n)]
    for u, v in data["edges"]:
        model.AddBoolOr([x[u], x[v]])
    model.Minimize(sum(x))
    solver, proven = cpsat.solve(model, time_limit)  # the hint stays out (mmnp.solvers.cpsat)
    if not proven and cpsat.settles(solver, len(hint), minimize=True):
        return hint, True
    return cpsat.selected(solver, x), proven


def random(data: dict, rng: np.random.Generator) -> list[int]:
    """Each vertex kept with probability 1/2: usually leaves edges uncovered."""
    return [v for v in range(data["n"]) if rng.random() < 0.5]


def trivial(data: dict) -> list[int]:
    """Every vertex: covers every edge of every graph, the floor a non-solver reaches."""
    return list(range(data["n"]))
