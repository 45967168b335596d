"""Subset sum: exact DP over sums keeping the most numbers per sum (NP-Bench's reference);
CP-SAT exact."""

from __future__ import annotations

import numpy as np

from mmnp.solvers import cpsat


def heuristic(data: dict) -> list[int]:
    """most[s] = the largest count of numbers summing to s; vectorised over s."""
    numbers, target = data["numbers"], data["target"]
    most = np.full(target + 1, -1, dtype=np.int64)
    most[0] = 0
    take = np.zeros((len(numbers), target + 1), dtype=bool)
    for i, x in enumerate(numbers):
        if x > target:
            continue
        candidate = np.where(most[: target + 1 - x] >= 0, most[: target + 1 - x] + 1, -1)
        improves = candidate > most[x:]
        take[i, x:] = improves
        most[x:] = np.where(improves, candidate, most[x:])
    chosen, s = [], target
    for i in range(len(numbers) - 1, -1, -1):
        if take[i, s]:
            chosen.append(i)
            s -= numbers[i]
    return sorted(chosen)


def optimal(data: dict, time_limit: float, hint: list[int]) -> tuple[list[int], bool]:
    from ortools.sat.python import cp_model

    numbers = data["numbers"]
    model = cp_model.CpModel()
    x = [model.NewBoolVar("") for _ in numbers]
    model.Add(sum(v * xi for v, xi in zip(numbers, x)) == data["target"])
    model.Maximize(sum(x))
    cpsat.hint_subset(model, x, hint)
    solver, proven = cpsat.solve(model, time_limit)
    return cpsat.selected(solver, x), proven


def random(data: dict, rng: np.random.Generator) -> list[int]:
    """Each number taken with probability 1/2: rarely hits the target."""
    return [i for i in range(len(data["numbers"])) if rng.random() < 0.5]
