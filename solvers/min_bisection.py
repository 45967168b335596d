"""Minimum bisection: Kernighan-Lin passes (vectorised gains) from several random splits,
iterated with perturbations on large graphs; CP-SAT exact."""

from __future__ import annotations

import numpy as np

from mmnp.solvers import cpsat

STARTS = 4
LARGE = 100  # vertices beyond which one start is tried, then iterated KL
KICKS = 20  # perturbations of the iterated KL on large graphs
_NONE = np.iinfo(np.int64).min // 4  # gain of a pair that may not swap


def _matrix(data: dict) -> np.ndarray:
    n = data["n"]
    w = np.zeros((n, n), dtype=np.int64)
    for u, v in data["edges"]:
        w[u, v] = w[v, u] = 1
    return w


def _cut(w: np.ndarray, side: np.ndarray) -> int:
    return int(w[side][:, ~side].sum())


def kernighan_lin(w: np.ndarray, side: np.ndarray) -> np.ndarray:
    """Passes of KL swaps until a pass no longer lowers the cut. `side` is a bool mask."""
    n = len(w)
    w2 = 2.0 * w
    while True:
        s = side.copy()
        same = np.where(s[:, None] == s[None, :], w, 0).sum(1)
        d = (w.sum(1) - 2 * same).astype(np.float64)  # external minus internal degree
        # d of the unlocked vertices of each half, -inf elsewhere: pair gains in one addition
        d_a, d_b = np.where(s, d, -np.inf), np.where(s, -np.inf, d)
        sign = np.where(s, 1.0, -1.0)  # +1 on A's side (the unlocked keep their side in a pass)
        gains, swaps = [], []
        g, change = np.empty((n, n)), np.empty(n)  # reused buffers: the step is allocation-bound
        for _ in range(min(s.sum(), (~s).sum())):
            np.add(d_a[:, None], d_b[None, :], out=g)
            g -= w2
            k = int(np.argmax(g))
            a, b = divmod(k, n)
            gains.append(int(g.flat[k]))
            swaps.append((a, b))
            # moving a to B and b to A changes every other vertex's external-internal balance
            np.subtract(w2[a], w2[b], out=change)
            change *= sign
            d_a += change
            d_b += change
            d_a[a] = d_b[b] = -np.inf
        total = np.cumsum(gains) if gains else np.array([0])
        best = int(np.argmax(total))
        if total[best] <= 0:
            return side
        for a, b in swaps[: best + 1]:
            side[a], side[b] = False, True


def polish(w: np.ndarray, side: np.ndarray) -> np.ndarray:
    """KL passes and, with an odd vertex count, single moves from the larger half to the
    smaller (the other balanced split), until neither lowers the cut: a 1-swap and 1-move
    local optimum."""
    side = side.copy()
    while True:
        side = kernighan_lin(w, side)
        if len(w) % 2 == 0:
            return side
        big = side if side.sum() > (~side).sum() else ~side
        gain = np.where(big, w[:, ~big].sum(1) - w[:, big].sum(1), _NONE)  # cut lost by moving v out of `big`
        v = int(np.argmax(gain))
        if gain[v] <= 0:
            return side
        side[v] = not side[v]


def heuristic(data: dict) -> list[int]:
    """KL polish (`polish`) from random splits (STARTS; one on large graphs, where a pass is
    O(n^3)), then, on large graphs, iterated KL: KICKS times, a tenth of each half swapped at
    random and polished again, kept when no worse."""
    w = _matrix(data)
    n = data["n"]
    rng = np.random.default_rng(0)
    best, best_cut = None, None
    for _ in range(STARTS if n <= LARGE else 1):
        side = np.zeros(n, dtype=bool)
        side[rng.permutation(n)[: n // 2]] = True
        side = polish(w, side)
        cut = _cut(w, side)
        if best_cut is None or cut < best_cut:
            best, best_cut = side, cut
    for _ in range(KICKS if n > LARGE else 0):
        side = best.copy()
        k = max(1, n // 20)
        side[rng.choice(np.flatnonzero(side), k, replace=False)] = False
        side[rng.choice(np.flatnonzero(~best), k, replace=False)] = True
        side = polish(w, side)
        cut = _cut(w, side)
        if cut <= best_cut:
            best, best_cut = side, cut
    half = best if best[0] else ~best
    return [int(v) for v in np.flatnonzero(half)]


def optimal(data: dict, time_limit: float, hint: list[int]) -> tuple[list[int], bool]:
    from ortools.sat.python import cp_model

    n = data["n"]
    model = cp_model.CpModel()
    x = [model.NewBoolVar("") for _ in range(n)]  # True: in the half with vertex 0
    model.Add(x[0] == 1)
    model.AddLinearConstraint(sum(x), n // 2, (n + 1) // 2)  # vertex 0's half may be the larger one
    cut = []
    for u, v in data["edges"]:
        y = model.NewBoolVar("")
        model.AddBoolOr([x[u], x[v].Not(), y])
        model.AddBoolOr([x[u].Not(), x[v], y])
        cut.append(y)
    model.Minimize(sum(cut))
    solver, proven = cpsat.solve(model, time_limit)  # the hint stays out (mmnp.solvers.cpsat)
    half = cpsat.selected(solver, x)
    if proven:
        return half, True
    hinted = np.zeros(n, dtype=bool)
    hinted[hint] = True
    if cpsat.settles(solver, _cut(_matrix(data), hinted), minimize=True):
        return hint, True
    # CP-SAT stopped early: its split may still lose to a swap, so finish it by local search
    side = np.zeros(n, dtype=bool)
    side[half] = True
    side = polish(_matrix(data), side)
    half_with_0 = side if side[0] else ~side
    return [int(v) for v in np.flatnonzero(half_with_0)], False


def random(data: dict, rng: np.random.Generator) -> list[int]:
    """A uniformly random balanced split: feasible, with a high cut."""
    n = data["n"]
    return sorted(int(v) for v in rng.permutation(n)[: n // 2])


def trivial(data: dict) -> list[int]:
    """The lower half of the ids: a balanced split of every graph, the floor a non-solver reaches."""
    return list(range(data["n"] // 2))
