"""Set cover: greedy (most new elements), redundancy removal, then an iterated local search
that drops a few subsets and repairs greedily (plateaus accepted); CP-SAT exact."""

from __future__ import annotations

import numpy as np

from mmnp.solvers import cpsat

STEPS = 2500  # swaps per run of the local search, fewer on large instances
RESTARTS = 3  # runs from the greedy cover, each with its own random stream
PATIENCE = 1200  # swaps without a smaller cover before a run stops (at most 5 per subset)
WORK = 1_000_000_000  # matrix cells the local search may touch (bounds its time on large instances)


def _matrix(data: dict) -> np.ndarray:
    """Incidence matrix: a row per subset, a column per element 1..U."""
    a = np.zeros((len(data["subsets"]), data["universe"]), dtype=np.int32)
    for i, members in enumerate(data["subsets"]):
        a[i, [e - 1 for e in members]] = 1
    return a


def _repair(a: np.ndarray, chosen: np.ndarray, count: np.ndarray, rng: np.random.Generator | None) -> None:
    """Add subsets covering the most uncovered elements until all are covered (ties: lowest
    id, or at random with `rng`). Updates `chosen` and the per-element `count` in place."""
    gain = a[:, count == 0].sum(1)
    while gain.max() > 0:
        best = np.flatnonzero(gain == gain.max())
        s = int(best[0] if rng is None else rng.choice(best))
        newly = (count == 0) & (a[s] > 0)
        chosen[s] = True
        count += a[s]
        gain -= a[:, newly].sum(1)


def _prune(a: np.ndarray, chosen: np.ndarray, count: np.ndarray, order: np.ndarray) -> None:
    """Drop chosen subsets, in `order`, whose every element another chosen subset covers."""
    for s in order:
        if chosen[s] and np.all(count[a[s] > 0] >= 2):
            chosen[s] = False
            count -= a[s]


def packing_bound(a: np.ndarray) -> int:
    """A lower bound: elements no two of which share a subset each need their own subset
    (packed greedily, rarest element first)."""
    blocked = np.zeros(len(a), dtype=bool)
    size = 0
    for e in np.argsort(a.sum(0), kind="stable"):
        holders = a[:, e] > 0
        if not (holders & blocked).any():
            blocked |= holders
            size += 1
    return size


def _weighted_search(a: np.ndarray, cover: np.ndarray, steps: int, rng: np.random.Generator,
                     bound: int) -> np.ndarray:
    """Element-weighting local search (as in NuSC/NuMVC): after each cover is found, drop the
    subset losing least; then repeatedly swap the chosen subset whose loss is lowest for the
    outside subset that best covers a random uncovered element, and raise the weights of
    the still-uncovered elements so the search leaves local minima. Returns the best cover."""
    chosen = cover.copy()
    best = cover.copy()
    count = a[chosen].sum(0)
    weight = np.ones(a.shape[1], dtype=np.int64)
    banned = -1  # the subset just dropped may not come straight back
    since = 0
    patience = min(PATIENCE, 5 * len(a))
    for _ in range(steps):
        since += 1
        if not (count == 0).any():
            best, since = chosen.copy(), 0
            if best.sum() <= bound:
                break
            inside = np.flatnonzero(chosen)
            s = inside[np.argmin(a[inside] @ (weight * (count == 1)))]
            chosen[s] = False
            count -= a[s]
            continue
        e = rng.choice(np.flatnonzero(count == 0))
        options = np.flatnonzero((a[:, e] > 0) & ~chosen)
        if len(options) > 1:
            options = options[options != banned]
        gain = a[options] @ (weight * (count == 0))
        add = int(options[rng.choice(np.flatnonzero(gain == gain.max()))])
        chosen[add] = True
        count += a[add]
        inside = np.flatnonzero(chosen)
        inside = inside[inside != add]
        loss = a[inside] @ (weight * (count == 1))
        banned = int(inside[rng.choice(np.flatnonzero(loss == loss.min()))])
        chosen[banned] = False
        count -= a[banned]
        weight[count == 0] += 1
        if since > patience:
            break
    if not (count == 0).any() and chosen.sum() < best.sum():  # the last swap completed a smaller cover
        best = chosen
    return best


def heuristic(data: dict) -> list[int]:
    """Greedy cover, pruned, then the weighted local search for a budget of steps that
    shrinks with the instance (bounded time at any size)."""
    a = _matrix(data)
    m = len(a)
    chosen = np.zeros(m, dtype=bool)
    count = np.zeros(a.shape[1], dtype=np.int32)
    _repair(a, chosen, count, None)
    _prune(a, chosen, count, np.arange(m)[::-1])
    steps = min(STEPS, WORK // max(1, 3 * a.size * RESTARTS))
    bound = packing_bound(a)
    best = chosen
    for seed in range(RESTARTS):
        if best.sum() <= bound:
            break
        found = _weighted_search(a, chosen, steps, np.random.default_rng(seed), bound)
        if found.sum() < best.sum():
            best = found
    return [int(i) for i in np.flatnonzero(best)]


def optimal(data: dict, time_limit: float, hint: list[int]) -> tuple[list[int], bool]:
    from ortools.sat.python import cp_model

    subsets = data["subsets"]
    model = cp_model.CpModel()
    x = [model.NewBoolVar("") for _ in subsets]
    for e in range(1, data["universe"] + 1):
        model.AddBoolOr([x[i] for i, s in enumerate(subsets) if e in s])
    model.Minimize(sum(x))
    cpsat.hint_subset(model, x, hint)
    solver, proven = cpsat.solve(model, time_limit)
    return cpsat.selected(solver, x), proven


def random(data: dict, rng: np.random.Generator) -> list[int]:
    """Each subset taken with probability 1/3: often leaves elements uncovered."""
    return [i for i in range(len(data["subsets"])) if rng.random() < 1 / 3]


def trivial(data: dict) -> list[int]:
    """Every subset: covers whatever any cover covers, the floor a non-solver reaches."""
    return list(range(len(data["subsets"])))
