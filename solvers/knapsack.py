"""Knapsack: exact dynamic programming over capacities (NP-Bench's reference); CP-SAT."""

from __future__ import annotations

import numpy as np

from mmnp.solvers import cpsat


def heuristic(data: dict) -> list[int]:
    """Exact DP, vectorised over capacity: O(n * capacity) numpy steps."""
    weights, values, cap = data["weights"], data["values"], data["capacity"]
    best = np.zeros(cap + 1, dtype=np.int64)
    take = np.zeros((len(weights), cap + 1), dtype=bool)
    for i, (w, v) in enumerate(zip(weights, values)):
        if w > cap:
            continue
        candidate = best[: cap + 1 - w] + v
        improves = candidate > best[w:]
        take[i, w:] = improves
        best[w:] = np.where(improves, candidate, best[w:])
    chosen, c = [], cap
    for i in range(len(weights) - 1, -1, -1):
        if take[i, c]:
            chosen.append(i)
            c -= weights[i]
    return sorted(chosen)


def optimal(data: dict, time_limit: float, hint: list[int]) -> tuple[list[int], bool]:
    from ortools.sat.python import cp_model

    weights, values = data["weights"], data["values"]
    model = cp_model.CpModel()
    x = [model.NewBoolVar("") for _ in weights]
    model.Add(sum(w * xi for w, xi in zip(weights, x)) <= data["capacity"])
    model.Maximize(sum(v * xi for v, xi in zip(values, x)))
    cpsat.hint_subset(model, x, hint)
    solver, proven = cpsat.solve(model, time_limit)
    return cpsat.selected(solver, x), proven


def random(data: dict, rng: np.random.Generator) -> list[int]:
    """Each item taken with probability 1/2: often over capacity."""
    return [i for i in range(len(data["weights"])) if rng.random() < 0.5]
