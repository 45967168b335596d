"""TSP: iterated local search (2-opt and Or-opt over neighbour lists, double-bridge kicks);
CP-SAT's circuit constraint with its subtour cuts for the exact one."""

from __future__ import annotations

from collections import deque

import numpy as np

from mmnp.solvers import cpsat

NEIGHBOURS = 10  # candidate cities per city for the local search's moves
SMALL, LARGE = 32, 60  # city counts where the kick budget changes (see `heuristic`)
KICKS = 3_000  # double-bridge kicks per run, at most


def distances(data: dict) -> np.ndarray:
    xy = np.asarray(data["coords"], dtype=np.float64)
    return np.floor(np.sqrt(((xy[:, None, :] - xy[None, :, :]) ** 2).sum(-1)) + 0.5).astype(np.int64)


def heuristic(data: dict) -> list[int]:
    """Iterated local search (Johnson & McGeoch's ILS): nearest-neighbour tours improved by
    2-opt and Or-opt moves over each city's NEIGHBOURS nearest cities, then double-bridge
    kicks of the best tour, each followed by the local search around the kick's cities, the
    result kept when no longer. Each run starts from its own first city and stops after a
    patience of kicks without a shorter tour: two runs of 1 kick per city below SMALL cities
    (33 of mm-np-bench-v2's 34 medium tours optimal, the other 0.2% off), three of 8 per city
    up to LARGE (all 34 hard tours optimal), and one of up to 1,000 beyond."""
    d = distances(data)
    n = len(d)
    if n <= 3:
        return list(range(n))
    if n < SMALL:
        runs, patience = 2, n
    elif n <= LARGE:
        runs, patience = 3, 8 * n
    else:
        runs, patience = 1, min(1_000, 10 * n)
    table = d.tolist()
    near = np.argsort(d + np.eye(n, dtype=np.int64) * (int(d.max()) + 1), axis=1, kind="stable")
    neighbours = near[:, :min(NEIGHBOURS, n - 1)].tolist()
    best, best_length = None, None
    for run in range(runs):  # each run from its own nearest-neighbour tour
        start = _nearest_neighbour(d, (run * n) // runs)
        _improve(start, table, neighbours, list(range(n)))
        tour, length = _iterate(start, table, neighbours, patience, np.random.default_rng(run))
        if best_length is None or length < best_length:
            best, best_length = tour, length
    at = best.index(0)
    return best[at:] + best[:at]


def _length(tour: list[int], table: list[list[int]]) -> int:
    return sum(table[tour[i - 1]][tour[i]] for i in range(len(tour)))


def _nearest_neighbour(d: np.ndarray, first: int) -> list[int]:
    n = len(d)
    unvisited = np.ones(n, dtype=bool)
    tour = [first]
    unvisited[first] = False
    for _ in range(n - 1):
        nxt = int(np.argmin(np.where(unvisited, d[tour[-1]], np.iinfo(np.int64).max)))
        tour.append(nxt)
        unvisited[nxt] = False
    return tour


def _iterate(start: list[int], table: list[list[int]], neighbours: list[list[int]], patience: int,
             rng: np.random.Generator) -> tuple[list[int], int]:
    """Double-bridge kicks (cut into A B C D, reconnect as A C B D: 2-opt cannot undo it) of
    the best tour so far, each locally improved around its eight cut cities; a tour at least
    as short replaces the best. Stops after `patience` kicks in a row without a shorter one."""
    n = len(start)
    best, best_length = list(start), _length(start, table)
    if n < 8:
        return best, best_length
    since = 0
    cuts = iter(())
    for _ in range(KICKS):
        if since >= patience:
            break
        since += 1
        i, j, k = next(cuts, None) or (None, None, None)
        while i is None:  # three distinct cut points, drawn in batches (one numpy call per 64 kicks)
            batch = np.sort(rng.integers(1, n, size=(64, 3)), axis=1).tolist()
            cuts = iter([c for c in batch if c[0] < c[1] < c[2]])
            i, j, k = next(cuts, None) or (None, None, None)
        tour = best[:i] + best[j:k] + best[i:j] + best[k:]
        cut = {best[i - 1], best[i], best[j - 1], best[j], best[k - 1], best[k % n], best[0], best[-1]}
        _improve(tour, table, neighbours, sorted(cut))
        length = _length(tour, table)
        if length < best_length:
            since = 0
        if length <= best_length:
            best, best_length = tour, length
    return best, best_length


def _improve(tour: list[int], table: list[list[int]], neighbours: list[list[int]], queue: list[int]) -> None:
    """2-opt and Or-opt (a segment of 1-3 cities moved, either way round, next to a neighbour
    of one of its ends) over candidate neighbours, first improvement, from the cities in
    `queue` (the cities of each improving move are queued again): until no move gains.
    Plain lists, not numpy: a move touches a handful of cities (numpy's per-call cost would
    dominate); a reversal takes the shorter side of the tour."""
    n = len(tour)
    pos = [0] * n
    for i, c in enumerate(tour):
        pos[c] = i
    active = deque(queue)
    waiting = set(queue)

    def renumber(lo: int, hi: int) -> None:
        for i in range(lo, hi):
            pos[tour[i]] = i

    def reverse_path(x: int, y: int) -> None:
        """Reverse the path from x forward to y (or, equivalently for a cycle, the rest)."""
        i, j = pos[x], pos[y]
        if i <= j:
            tour[i:j + 1] = tour[i:j + 1][::-1]
            renumber(i, j + 1)
        else:
            tour[j + 1:i] = tour[j + 1:i][::-1]
            renumber(j + 1, i)

    def push(*cities: int) -> None:
        for c in cities:
            if c not in waiting:
                waiting.add(c)
                active.append(c)

    while active:
        a = active.popleft()
        waiting.discard(a)
        while _two_opt(a, tour, pos, table, neighbours, reverse_path, push) or \
                _or_opt(a, tour, pos, table, neighbours, renumber, push):
            pass


def _two_opt(a, tour, pos, table, neighbours, reverse_path, push) -> bool:  # noqa: ANN001
    """The first gaining 2-opt move at `a`: on its successor side (a, b), (c, e) -> (a, c),
    (b, e), then its predecessor side; neighbours are scanned nearest first, and none
    farther than a's current partner can gain."""
    n = len(tour)
    ia = pos[a]
    b = tour[ia + 1 - n]
    ab = table[a][b]
    for c in neighbours[a]:
        first = ab - table[a][c]
        if first <= 0:
            break
        e = tour[pos[c] + 1 - n]
        if c != b and e != a and first + table[c][e] - table[b][e] > 0:
            reverse_path(b, c)
            push(a, b, c, e)
            return True
    b = tour[ia - 1]
    ab = table[b][a]
    for c in neighbours[a]:
        first = ab - table[a][c]
        if first <= 0:
            break
        e = tour[pos[c] - 1]
        if c != b and e != a and first + table[e][c] - table[b][e] > 0:
            reverse_path(a, e)
            push(a, b, c, e)
            return True
    return False


def _or_opt(a, tour, pos, table, neighbours, renumber, push) -> bool:  # noqa: ANN001
    """The best gaining Or-opt move of the segment of 1, 2 or 3 cities starting at `a`: out
    of its place, in between a neighbour c of one end and c's successor or predecessor."""
    n = len(tour)
    for k in (1, 2, 3):
        if k >= n - 2:
            return False
        ia = pos[a]
        last = tour[(ia + k - 1) % n]
        prev, nxt = tour[ia - 1], tour[(ia + k) % n]
        removal = table[prev][a] + table[last][nxt] - table[prev][nxt]
        if removal <= 0:
            continue
        best = None
        for end, other in ((a, last), (last, a)) if k > 1 else ((a, a),):  # one city has one end
            for c in neighbours[end]:
                to_c = table[end][c]
                if to_c >= removal:
                    break
                if (pos[c] - ia) % n < k:  # c is in the segment
                    continue
                after = nxt if c == prev else tour[pos[c] + 1 - n]  # c's neighbours once the segment is out
                before = prev if c == nxt else tour[pos[c] - 1]
                gain = removal - (to_c + table[other][after] - table[c][after])  # c, end .. other, after
                if gain > 0 and (best is None or gain > best[0]):
                    best = (gain, end, c, after)
                gain = removal - (table[before][other] + to_c - table[before][c])  # before, other .. end, c
                if gain > 0 and (best is None or gain > best[0]):
                    best = (gain, other, before, c)
        if best is not None:
            _, first, x, y = best  # the segment goes between x and y, `first` next to x
            rotated = tour[ia:] + tour[:ia]
            segment, rest = rotated[:k], rotated[k:]
            at = rest.index(x)
            tour[:] = rest[:at + 1] + (segment if segment[0] == first else segment[::-1]) + rest[at + 1:]
            renumber(0, n)
            push(prev, nxt, a, last, x, y)
            return True
    return False


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
