"""TSP: iterated local search (2-opt and Or-opt over neighbour lists, double-bridge kicks);
CP-SAT's circuit constraint with its subtour cuts for the exact one."""

from __future__ import annotations

import numpy as np

from mmnp.solvers import cpsat
from mmnp.solvers.compiled import compiled

NEIGHBOURS = 10  # candidate cities per city for the local search's moves
SMALL, LARGE = 32, 60  # city counts where the kick budget changes (see `heuristic`)
KICKS = 3_000  # double-bridge kicks per run, at most


def distances(data: dict) -> np.ndarray:
    xy = np.asarray(data["coords"], dtype=np.float64)
    return np.floor(np.sqrt(((xy[:, None, :] - xy[None, :, :]) ** 2).sum(-1)) + 0.5).astype(np.int64)


def budget(n: int) -> tuple[int, int]:
    """The heuristic's runs and its patience in kicks, for `n` cities (`heuristic` says why)."""
    if n < SMALL:
        return 2, n
    if n <= LARGE:
        return 3, 8 * n
    return 1, min(1_000, 10 * n)


def nearest(d: np.ndarray) -> np.ndarray:
    """Each city's other cities, nearest first (ties: lowest index; itself last)."""
    return np.argsort(d + np.eye(len(d), dtype=np.int64) * (int(d.max()) + 1), axis=1, kind="stable")


def heuristic(data: dict) -> list[int]:
    """Iterated local search (Johnson & McGeoch's ILS): nearest-neighbour tours improved by
    2-opt and Or-opt moves over each city's NEIGHBOURS nearest cities, then double-bridge
    kicks of the best tour, each followed by the local search around the kick's cities, the
    result kept when no longer. Each run starts from its own first city and stops after a
    patience of kicks without a shorter tour: two runs of 1 kick per city below SMALL cities
    (33 of mm-np-bench-v2's 34 medium tours optimal, the other 0.2% off), three of 8 per city
    up to LARGE (all 34 hard tours optimal), and one of up to 1,000 beyond. The loops are
    compiled (numba: `_nearest_neighbour`, `_improve`, `_kicks`, `_move_segment`); the cut points are
    numpy's draws, as before."""
    d = distances(data)
    n = len(d)
    if n <= 3:
        return list(range(n))
    runs, patience = budget(n)
    near = np.ascontiguousarray(nearest(d)[:, :min(NEIGHBOURS, n - 1)], dtype=np.int64)
    best, best_length = None, None
    for run in range(runs):  # each run from its own nearest-neighbour tour
        tour = _nearest_neighbour(d, (run * n) // runs)
        _improve(tour, d, near, np.arange(n, dtype=np.int64))
        length = _iterate(tour, d, near, patience, np.random.default_rng(run))
        if best_length is None or length < best_length:
            best, best_length = tour, length
    return np.roll(best, -int(np.flatnonzero(best == 0)[0])).tolist()


def _iterate(tour: np.ndarray, d: np.ndarray, near: np.ndarray, patience: int, rng: np.random.Generator) -> int:
    """Double-bridge kicks of `tour` (changed in place to the best found) until `patience`
    kicks in a row bring no shorter tour or KICKS are made; returns its length. The cut points
    are drawn 64 kicks' worth at a time and only the rows of three distinct cuts kept (`_kicks` makes
    the kicks)."""
    length = int(d[tour, np.roll(tour, -1)].sum())
    n, kicks, since = len(tour), 0, 0
    if n < 8:
        return length
    while kicks < KICKS and since < patience:
        cuts = np.sort(rng.integers(1, n, size=(64, 3)), axis=1)
        cuts = np.ascontiguousarray(cuts[(cuts[:, 0] < cuts[:, 1]) & (cuts[:, 1] < cuts[:, 2])], dtype=np.int64)
        kicks, since, length = _kicks(tour, length, d, near, cuts, kicks, since, patience, KICKS)
    return length


@compiled
def _nearest_neighbour(d: np.ndarray, first: int) -> np.ndarray:
    """The nearest-neighbour tour from `first`, ties to the lowest id."""
    n = len(d)
    tour = np.empty(n, dtype=np.int64)
    seen = np.zeros(n, dtype=np.bool_)
    tour[0], seen[first] = first, True
    for at in range(1, n):
        row, nxt = d[tour[at - 1]], -1
        for c in range(n):
            if not seen[c] and (nxt < 0 or row[c] < row[nxt]):
                nxt = c
        tour[at], seen[nxt] = nxt, True
    return tour


@compiled
def _kicks(best: np.ndarray, best_length: int, d: np.ndarray, near: np.ndarray, cuts: np.ndarray,
           kicks: int, since: int, patience: int, limit: int) -> tuple[int, int, int]:
    """Double-bridge kicks (cut into A B C D at `cuts`' rows, reconnect as A C B D: 2-opt
    cannot undo it) of the best tour so far (`best`, changed in place), each locally improved
    around its six cut cities and the tour's ends; a tour at least as short replaces the best.
    Stops when `cuts` run out, after `limit` kicks in all, or after `patience` kicks in a row
    without a shorter one: returns (kicks, since, best_length), to go on from."""
    n = len(best)
    tour = np.empty(n, dtype=np.int64)
    touched = np.empty(8, dtype=np.int64)
    for row in range(len(cuts)):
        if kicks >= limit or since >= patience:
            break
        kicks += 1
        since += 1
        i, j, k = cuts[row, 0], cuts[row, 1], cuts[row, 2]
        tour[:i] = best[:i]
        tour[i:i + k - j] = best[j:k]
        tour[i + k - j:k] = best[i:j]
        tour[k:] = best[k:]
        p, q, r, s, t, u = best[i - 1], best[i], best[j - 1], best[j], best[k - 1], best[k]
        kick = d[p, s] + d[t, q] + d[r, u] - d[p, q] - d[r, s] - d[t, u]
        touched[0], touched[1], touched[2], touched[3] = p, q, r, s
        touched[4], touched[5], touched[6], touched[7] = t, u, best[0], best[n - 1]
        length = best_length + kick - _improve(tour, d, near, np.unique(touched))
        if length < best_length:
            since = 0
        if length <= best_length:
            best[:] = tour
            best_length = length
    return kicks, since, best_length


@compiled
def _improve(tour: np.ndarray, d: np.ndarray, near: np.ndarray, queue: np.ndarray) -> int:
    """2-opt and Or-opt (a segment of 1-3 cities moved, either way round, next to a neighbour
    of one of its ends) over candidate neighbours, first improvement, from the cities in
    `queue` (distinct; the cities of each improving move are queued again, first in, first
    out): until no move gains. Changes `tour` in place; returns the length gained."""
    n, width = len(tour), near.shape[1]
    pos = np.empty(n, dtype=np.int64)
    for i in range(n):
        pos[tour[i]] = i
    ring = np.empty(n, dtype=np.int64)  # the queue: each city in it at most once
    waiting = np.zeros(n, dtype=np.bool_)
    head, size = 0, 0
    for c in queue:
        ring[size], waiting[c] = c, True
        size += 1
    moved = np.empty(6, dtype=np.int64)
    gained = 0
    top = min(3, n - 3)  # Or-opt segment lengths: at least 3 cities stay outside one
    while size:
        a = ring[head]
        head, size = (head + 1) % n, size - 1
        waiting[a] = False
        while True:
            # 2-opt, the first gaining move: on a's successor side (a, b), (c, e) -> (a, c),
            # (b, e), then its predecessor side; neighbours are scanned nearest first, and
            # none farther than a's current partner can gain
            ia = pos[a]
            b = tour[(ia + 1) % n]
            gain, i, j, c, e = 0, 0, 0, 0, 0
            for x in range(width):
                c = near[a, x]
                first = d[a, b] - d[a, c]
                if first <= 0:
                    break
                e = tour[(pos[c] + 1) % n]
                if c != b and e != a and first + d[c, e] - d[b, e] > 0:
                    gain, i, j = first + d[c, e] - d[b, e], pos[b], pos[c]  # reverse b .. c
                    break
            if gain == 0:
                b = tour[(ia - 1) % n]
                for x in range(width):
                    c = near[a, x]
                    first = d[a, b] - d[a, c]
                    if first <= 0:
                        break
                    e = tour[(pos[c] - 1) % n]
                    if c != b and e != a and first + d[e, c] - d[b, e] > 0:
                        gain, i, j = first + d[e, c] - d[b, e], ia, pos[e]  # reverse a .. e
                        break
            if gain > 0:
                # reverse the path from tour[i] forward to tour[j] (for a cycle, the same as the rest)
                lo, hi = (i, j) if i <= j else (j + 1, i - 1)
                while lo < hi:
                    tour[lo], tour[hi] = tour[hi], tour[lo]
                    pos[tour[lo]], pos[tour[hi]] = lo, hi
                    lo, hi = lo + 1, hi - 1
                if lo == hi:
                    pos[tour[lo]] = lo
                moved[0], moved[1], moved[2], moved[3] = a, b, c, e
                count = 4
            else:
                # Or-opt, the best gaining move of the segment of 1, 2 or 3 cities starting at a:
                # out of its place, in between a neighbour c of one end and c's successor or
                # predecessor
                prev = tour[(ia - 1) % n]
                best_gain, first_city, x_city, y_city, k, last, nxt = 0, 0, 0, 0, 0, 0, 0
                for k in range(1, top + 1):
                    last, nxt = tour[(ia + k - 1) % n], tour[(ia + k) % n]
                    removal = d[prev, a] + d[last, nxt] - d[prev, nxt]
                    if removal <= 0:
                        continue
                    for side in range(2 if k > 1 else 1):  # one city has one end
                        end, other = (a, last) if side == 0 else (last, a)
                        for x in range(width):
                            c = near[end, x]
                            to_c = d[end, c]
                            if to_c >= removal:
                                break
                            at_c = pos[c]
                            if (at_c - ia) % n < k:  # c is in the segment
                                continue
                            after = nxt if c == prev else tour[(at_c + 1) % n]  # c's neighbours once the segment is out
                            before = prev if c == nxt else tour[(at_c - 1) % n]
                            gain = removal - (to_c + d[other, after] - d[c, after])  # c, end .. other, after
                            if gain > best_gain:
                                best_gain, first_city, x_city, y_city = gain, end, c, after
                            gain = removal - (d[other, before] + to_c - d[c, before])  # before, other .. end, c
                            if gain > best_gain:
                                best_gain, first_city, x_city, y_city = gain, other, before, c
                    if best_gain > 0:
                        break
                if best_gain == 0:
                    break
                gain = best_gain
                _move_segment(tour, pos, ia, k, first_city, x_city)
                moved[0], moved[1], moved[2], moved[3], moved[4], moved[5] = prev, nxt, a, last, x_city, y_city
                count = 6
            gained += gain
            for m in range(count):
                c = moved[m]
                if not waiting[c]:
                    waiting[c] = True
                    ring[(head + size) % n] = c
                    size += 1
    return gained


@compiled
def _move_segment(tour: np.ndarray, pos: np.ndarray, at: int, k: int, first: int, x: int) -> None:
    """Move the k cities from position `at` to just after city x, `first` of them next to x;
    the tour then starts where the rest did (the city after the segment)."""
    n = len(tour)
    segment = np.empty(k, dtype=np.int64)
    for s in range(k):
        segment[s] = tour[(at + s) % n]
    rest = np.empty(n - k, dtype=np.int64)
    for r in range(n - k):
        rest[r] = tour[(at + k + r) % n]
    out = 0
    for r in range(n - k):
        tour[out] = rest[r]
        out += 1
        if rest[r] == x:
            for s in range(k):
                tour[out] = segment[s] if segment[0] == first else segment[k - 1 - s]
                out += 1
    for i in range(n):
        pos[tour[i]] = i


def optimal(data: dict, time_limit: float, hint: list[int]) -> tuple[list[int], bool]:
    """CP-SAT with a circuit constraint over all arcs, at linearization level 2: its LP then
    carries CP-SAT's own subtour cuts for the circuit, which prove the optimum of 100-city
    TSPLIB instances within a few deterministic seconds (and measures the work as CP-SAT's
    deterministic time and branches, like every other task)."""
    from ortools.sat.python import cp_model

    d = distances(data)
    n = len(d)
    model = cp_model.CpModel()
    arcs, lits = [], {}
    for i in range(n):
        for j in range(n):
            if i != j:
                lits[i, j] = model.NewBoolVar("")
                arcs.append((i, j, lits[i, j]))
    model.AddCircuit(arcs)
    model.Minimize(sum(int(d[i, j]) * lit for (i, j), lit in lits.items()))
    solver, proven = cpsat.solve(model, time_limit, linearization_level=2)  # the hint stays out (cpsat)
    if not proven and cpsat.settles(solver, int(d[hint, np.roll(hint, -1)].sum()), minimize=True):
        return hint, True
    succ = {i: j for (i, j), lit in lits.items() if solver.Value(lit)}
    tour = [0]
    while len(tour) < n:
        tour.append(succ[tour[-1]])
    return tour, proven


def random(data: dict, rng: np.random.Generator) -> list[int]:
    return [int(c) for c in rng.permutation(len(data["coords"]))]


def trivial(data: dict) -> list[int]:
    """The cities in id order: a tour of every instance, the floor a non-solver reaches."""
    return list(range(len(data["coords"])))
