"""Minimum bisection: Kernighan-Lin passes from several random splits, iterated with
perturbations on large graphs; CP-SAT exact.

A KL step looks only at the vertices whose balance is within 2 of their half's best (with
unit weights no other pair can have the best gain) and a swap updates only its two
vertices' neighbours: the textbook pass's swaps (tests/test_heuristic_min_bisection.py)
without its gain matrix. The pass is compiled (numba, `_pass`): the Python pass it replaced
made the same swaps at ~9 million instructions a medium instance, a fifth of generating one
with its picture."""

from __future__ import annotations

import numpy as np

from mmnp.solvers import cpsat
from mmnp.solvers.compiled import compiled

STARTS = 4
LARGE = 100  # vertices beyond which one start is tried, then iterated KL
KICKS = 20  # perturbations of the iterated KL on large graphs
_NONE = np.iinfo(np.int64).min // 4  # gain of a vertex that may not move


def _matrix(data: dict) -> np.ndarray:
    n = data["n"]
    w = np.zeros((n, n), dtype=np.int64)
    for u, v in data["edges"]:
        w[u, v] = w[v, u] = 1
    return w


def _cut(w: np.ndarray, side: np.ndarray) -> int:
    return int(w[side][:, ~side].sum())


def kernighan_lin(w: np.ndarray, side: np.ndarray) -> np.ndarray:
    """Passes of KL swaps until a pass no longer lowers the cut. `side` is a bool mask (changed
    in place and returned); `w` the 0/1 adjacency matrix."""
    while True:
        on_a = side.astype(np.int64)
        inside = np.where(side, w @ on_a, w @ (1 - on_a))
        swaps = _pass(w, side, w.sum(1) - 2 * inside)
        if not len(swaps):
            return side
        side[swaps[:, 0]] = False
        side[swaps[:, 1]] = True


@compiled
def _pass(w: np.ndarray, in_a: np.ndarray, d: np.ndarray) -> np.ndarray:
    """One KL pass from `d`, each vertex's external minus internal degree (changed in place):
    the swaps (a, b) of its best prefix, none when no prefix lowers the cut.

    Each step swaps the first pair (a in A, b in B, in (a, b) id order) of largest gain
    d[a] + d[b] - 2 w(a, b). With unit weights that gain is top_a + top_b less 0, 1 or 2 (the
    halves' largest balances), so each target in turn is looked for among the vertices close
    enough to their half's best; a swap moves each neighbour's balance by 2."""
    n = len(in_a)
    locked = np.zeros(n, dtype=np.bool_)
    steps = min(int(in_a.sum()), n - int(in_a.sum()))
    swaps = np.empty((steps, 2), dtype=np.int64)
    total, best_total, best_len = 0, 0, 0
    for step in range(steps):
        top_a, top_b = -(1 << 60), -(1 << 60)
        for v in range(n):
            if not locked[v]:
                if in_a[v]:
                    top_a = max(top_a, d[v])
                else:
                    top_b = max(top_b, d[v])
        pick_a, pick_b, gain = -1, -1, 0
        for drop in range(3):
            gain = top_a + top_b - drop
            for a in range(n):
                if locked[a] or not in_a[a] or gain - d[a] > top_b:
                    continue
                need = gain - d[a]  # what d[b] - 2 w(a, b) must reach
                for b in range(n):
                    if locked[b] or in_a[b] or d[b] < gain - top_a:
                        continue
                    if d[b] >= need + 2 or (d[b] >= need and w[a, b] == 0):
                        pick_a, pick_b = a, b
                        break
                if pick_a >= 0:
                    break
            if pick_a >= 0:
                break
        swaps[step, 0], swaps[step, 1] = pick_a, pick_b
        locked[pick_a] = locked[pick_b] = True
        for x in range(n):  # pick_a moving to B and pick_b to A
            if w[pick_a, x]:
                d[x] += 2 if in_a[x] else -2
            if w[pick_b, x]:
                d[x] -= 2 if in_a[x] else -2
        total += gain
        if total > best_total:
            best_total, best_len = total, step + 1
    return swaps[:best_len]


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
    w = _matrix(data)
    side = polish(w, side)
    half_with_0 = side if side[0] else ~side
    return [int(v) for v in np.flatnonzero(half_with_0)], False


def random(data: dict, rng: np.random.Generator) -> list[int]:
    """A uniformly random balanced split: feasible, with a high cut."""
    n = data["n"]
    return sorted(int(v) for v in rng.permutation(n)[: n // 2])


def trivial(data: dict) -> list[int]:
    """The lower half of the ids: a balanced split of every graph, the floor a non-solver reaches."""
    return list(range(data["n"] // 2))
