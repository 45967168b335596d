"""Knapsack: exact dynamic programming over capacities (NP-Bench's reference) where its
table fits, else the better of greedy by value per weight improved by swaps and a dynamic
programme over values scaled to fit a smaller table (the knapsack FPTAS of Ibarra & Kim: within
n x the scale of the optimum, which keeps it within 1% up to 100 items); CP-SAT exact.

Large coefficients are where the capacity DP stops fitting: on Pisinger's instance types
("Where are the hard knapsack problems?", 2005) with weights up to 10^6, 10 capacities from 1%
to 91% of the total weight each, n = 20-200, greedy with swaps alone ends up to 3.9% below the
optimum (uncorrelated and weakly correlated items), the better of the two within 0.012%, the
scaled DP taking at most 10 ms (tests/test_solvers.py). On the generated L6-L10 instances
(capacities in the millions) it improves 4-13 of 20 references a level, by at most 0.05%."""

from __future__ import annotations

import numpy as np

from mmnp.solvers import cpsat


DP_CELLS = 20_000_000  # the DP's n x (capacity + 1) choice table, one byte a cell
SCALED_DP_CELLS = 2_000_000  # the scaled DP's n x (bound / scale + 1) table where that one does not
#   fit: 3-4 ms an instance at L6-L10 (20 million: 30-36 ms, for under 0.01% more)


def heuristic(data: dict) -> list[int]:
    """The exact DP when its table fits in DP_CELLS, else the more valuable of `greedy` and
    `scaled_dp` (bounded memory both)."""
    if len(data["weights"]) * (data["capacity"] + 1) > DP_CELLS:
        values = data["values"]
        return max(greedy(data), scaled_dp(data), key=lambda chosen: sum(values[i] for i in chosen))
    return dp(data)


def dp(data: dict) -> list[int]:
    """Exact DP, vectorised over capacity: O(n * capacity) numpy steps and table cells."""
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


def scaled_dp(data: dict) -> list[int]:
    """The fewest-weight DP over values divided by a scale K, about the smallest that keeps its
    n x (bound / K + 1) table within SCALED_DP_CELLS (bound: the LP relaxation's, Dantzig's, at
    most twice the optimum); exact over the scaled values, so within n (K - 1) of the optimum
    (each item of an optimal set loses at most K - 1 to the rounding): under 1% up to 100 items.
    The room left is then filled by value. [] where the table cannot hold one scaled value."""
    w = np.asarray(data["weights"], dtype=np.int64)
    v = np.asarray(data["values"], dtype=np.int64)
    cap, n = data["capacity"], len(w)
    fits = np.flatnonzero(w <= cap)
    if not len(fits) or SCALED_DP_CELLS <= n:
        return []
    efficiency = np.divide(v, w, out=np.full(n, np.inf), where=w > 0)  # weightless items first
    order = fits[np.lexsort((fits, -efficiency[fits]))]
    load = np.cumsum(w[order])
    whole = int(np.searchsorted(load, cap, side="right"))
    bound = int(v[order[:whole]].sum())
    if whole < len(order):
        spare = cap - (int(load[whole - 1]) if whole else 0)
        bound += -(-int(v[order[whole]]) * spare // int(w[order[whole]]))
    scale = max(1, -(-n * (bound + 1) // (SCALED_DP_CELLS - n)))
    if scale > bound:
        return []
    scaled = v // scale
    top = bound // scale
    lightest = np.full(top + 1, np.iinfo(np.int64).max // 2, dtype=np.int64)
    lightest[0] = 0
    take = np.zeros((n, top + 1), dtype=bool)
    for i in fits:
        s = int(scaled[i])
        if s == 0:
            continue
        candidate = lightest[: top + 1 - s] + w[i]
        improves = candidate < lightest[s:]
        take[i, s:] = improves
        lightest[s:] = np.where(improves, candidate, lightest[s:])
    p = int(np.flatnonzero(lightest <= cap).max())
    chosen = np.zeros(n, dtype=bool)
    for i in range(n - 1, -1, -1):
        if take[i, p]:
            chosen[i] = True
            p -= int(scaled[i])
    room = cap - int(w[chosen].sum())
    for i in np.lexsort((np.arange(n), -v)):
        if not chosen[i] and w[i] <= room:
            chosen[i] = True
            room -= int(w[i])
    return [int(i) for i in np.flatnonzero(chosen)]


def greedy(data: dict) -> list[int]:
    """Items by value per weight while they fit, then the best 1-for-1 swaps (each the
    largest gain over all pairs, one vectorised pass) and additions, until none gains;
    never worse than the single most valuable item that fits. O(n log n) plus passes."""
    w = np.asarray(data["weights"], dtype=np.int64)
    v = np.asarray(data["values"], dtype=np.int64)
    cap = data["capacity"]
    chosen = np.zeros(len(w), dtype=bool)
    load = 0
    for i in np.lexsort((np.arange(len(w)), -v / np.maximum(w, 1))):
        if load + w[i] <= cap:
            chosen[i] = True
            load += int(w[i])
    for _ in range(10 * len(w) + 10):
        inside, outside = np.flatnonzero(chosen), np.flatnonzero(~chosen)
        spare = cap - load
        fits = outside[w[outside] <= spare]
        if len(fits):  # room left for one more item
            i = fits[np.argmax(v[fits])]
            chosen[i] = True
            load += int(w[i])
            continue
        if not len(inside) or not len(outside):
            break
        # swap a in for b out: gain v[a] - v[b], allowed when w[a] - w[b] <= spare
        outside = outside[np.argsort(-v[outside], kind="stable")[:2000]]  # bounded pass
        gain = v[outside][:, None] - v[inside][None, :]
        gain[w[outside][:, None] - w[inside][None, :] > spare] = 0
        k = int(np.argmax(gain))
        if gain.flat[k] <= 0:
            break
        a, b = outside[k // len(inside)], inside[k % len(inside)]
        chosen[a], chosen[b] = True, False
        load += int(w[a] - w[b])
    best = np.flatnonzero(w <= cap)
    if len(best) and v[best].max() > v[chosen].sum():
        return [int(best[np.argmax(v[best])])]
    return [int(i) for i in np.flatnonzero(chosen)]


def optimal(data: dict, time_limit: float, hint: list[int]) -> tuple[list[int], bool]:
    from ortools.sat.python import cp_model

    weights, values = data["weights"], data["values"]
    model = cp_model.CpModel()
    x = [model.NewBoolVar("") for _ in weights]
    model.Add(sum(w * xi for w, xi in zip(weights, x)) <= data["capacity"])
    model.Maximize(sum(v * xi for v, xi in zip(values, x)))
    solver, proven = cpsat.solve(model, time_limit)  # the hint stays out (mmnp.solvers.cpsat)
    if not proven and cpsat.settles(solver, sum(values[i] for i in hint), minimize=False):
        return hint, True
    return cpsat.selected(solver, x), proven


def random(data: dict, rng: np.random.Generator) -> list[int]:
    """Each item taken with probability 1/2: often over capacity."""
    return [i for i in range(len(data["weights"])) if rng.random() < 0.5]


def trivial(data: dict) -> list[int]:
    """The empty knapsack: within every capacity, value 0 (QR 0), the floor a non-solver reaches."""
    return []
