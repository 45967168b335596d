"""Vertex cover: complement of an independent set grown greedily and improved by
(1,2)-swaps (Andrade-Resende-Werneck); CP-SAT exact."""

from __future__ import annotations

import numpy as np

from mmnp.generators.graphs import neighbour_masks
from mmnp.solvers import cpsat


def independent_set(masks: list[int]) -> int:
    """A maximal independent set (as a bit mask) improved by (1,2)-swaps until none applies."""
    n = len(masks)
    free = (1 << n) - 1
    chosen = 0
    while free:  # greedy: the free vertex with fewest free neighbours
        v = min((u for u in range(n) if free >> u & 1), key=lambda u: ((masks[u] & free).bit_count(), u))
        chosen |= 1 << v
        free &= ~(masks[v] | 1 << v)
    improved = True
    while improved:
        improved = False
        for v in range(n):
            if not chosen >> v & 1:
                continue
            # outside vertices whose only chosen neighbour is v
            tight = [u for u in range(n) if masks[v] >> u & 1 and not chosen >> u & 1
                     and (masks[u] & chosen) == 1 << v]
            pair = next(((a, b) for i, a in enumerate(tight) for b in tight[i + 1:] if not masks[a] >> b & 1), None)
            if pair is None:
                continue
            chosen = (chosen & ~(1 << v)) | 1 << pair[0] | 1 << pair[1]
            for u in range(n):  # re-maximise
                if not chosen >> u & 1 and not masks[u] & chosen:
                    chosen |= 1 << u
            improved = True
    return chosen


def heuristic(data: dict) -> list[int]:
    chosen = independent_set(neighbour_masks(data))
    return [v for v in range(data["n"]) if not chosen >> v & 1]


def optimal(data: dict, time_limit: float, hint: list[int]) -> tuple[list[int], bool]:
    from ortools.sat.python import cp_model

    n = data["n"]
    model = cp_model.CpModel()
    x = [model.NewBoolVar("") for _ in range(n)]
    for u, v in data["edges"]:
        model.AddBoolOr([x[u], x[v]])
    model.Minimize(sum(x))
    cpsat.hint_subset(model, x, hint)
    solver, proven = cpsat.solve(model, time_limit)
    return cpsat.selected(solver, x), proven


def random(data: dict, rng: np.random.Generator) -> list[int]:
    """Each vertex kept with probability 1/2: usually leaves edges uncovered."""
    return [v for v in range(data["n"]) if rng.random() < 0.5]
