"""The TSP heuristic's loops are compiled (numba): they must make the moves of the list-based
Python iterated local search they replaced (kept here as `python_ils`, as mmnp ran it through
a0c564e): the same tours, city for city, on random and degenerate instances. Every generated
TSP reference depends on these moves."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

import mmnp
from mmnp.solvers import tsp
from mmnp.solvers.tsp import KICKS, NEIGHBOURS, distances


def python_ils(data: dict) -> list[int]:
    """`tsp.heuristic` in Python lists, one function call per local search (its docstring says
    what the search does)."""
    d = distances(data)
    n = len(d)
    if n <= 3:
        return list(range(n))
    runs, patience = tsp.budget(n)
    table = d.tolist()
    neighbours = tsp.nearest(d)[:, :min(NEIGHBOURS, n - 1)].tolist()
    best, best_length = None, None
    for run in range(runs):  # each run from its own nearest-neighbour tour
        start = _nearest_neighbour(table, (run * n) // runs)
        _improve(start, table, neighbours, list(range(n)))
        tour, length = _iterate(start, table, neighbours, patience, np.random.default_rng(run))
        if best_length is None or length < best_length:
            best, best_length = tour, length
    at = best.index(0)
    return best[at:] + best[:at]


def _length(tour: list[int], table: list[list[int]]) -> int:
    return sum(table[tour[i - 1]][tour[i]] for i in range(len(tour)))


def _nearest_neighbour(table: list[list[int]], first: int) -> list[int]:
    """The nearest-neighbour tour from `first`, ties to the lowest id (plain lists: at the
    sizes generated, numpy's per-call cost is most of it)."""
    unvisited = [c for c in range(len(table)) if c != first]
    tour = [first]
    while unvisited:
        nxt = min(unvisited, key=table[tour[-1]].__getitem__)
        tour.append(nxt)
        unvisited.remove(nxt)
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
        p, q, r, s, t, u = best[i - 1], best[i], best[j - 1], best[j], best[k - 1], best[k]
        kick = table[p][s] + table[t][q] + table[r][u] - table[p][q] - table[r][s] - table[t][u]
        length = best_length + kick - _improve(tour, table, neighbours, sorted({p, q, r, s, t, u, best[0], best[-1]}))
        if length < best_length:
            since = 0
        if length <= best_length:
            best, best_length = tour, length
    return best, best_length


def _improve(tour: list[int], table: list[list[int]], neighbours: list[list[int]], queue: list[int]) -> int:
    """2-opt and Or-opt (a segment of 1-3 cities moved, either way round, next to a neighbour
    of one of its ends) over candidate neighbours, first improvement, from the cities in
    `queue` (the cities of each improving move are queued again): until no move gains.
    Returns the length gained. Plain lists in one flat loop, not numpy nor a call per move
    tried: a move touches a handful of cities, and per-call costs would dominate (this loop is
    most of what generating a TSP instance costs)."""
    n = len(tour)
    pos = [0] * n
    for i, c in enumerate(tour):
        pos[c] = i
    active = deque(queue)
    waiting = set(queue)
    gained = 0
    sizes = range(1, min(3, n - 3) + 1)  # Or-opt segment lengths: at least 3 cities stay outside one
    while active:
        a = active.popleft()
        waiting.discard(a)
        near, row = neighbours[a], table[a]
        while True:
            # 2-opt, the first gaining move: on a's successor side (a, b), (c, e) -> (a, c),
            # (b, e), then its predecessor side; neighbours are scanned nearest first, and
            # none farther than a's current partner can gain
            ia = pos[a]
            b = tour[ia + 1 - n]
            ab = row[b]
            gain = 0
            for c in near:
                first = ab - row[c]
                if first <= 0:
                    break
                e = tour[pos[c] + 1 - n]
                if c != b and e != a and first + table[c][e] - table[b][e] > 0:
                    gain, i, j = first + table[c][e] - table[b][e], pos[b], pos[c]  # reverse b .. c
                    break
            if not gain:
                b = tour[ia - 1]
                ab = row[b]
                for c in near:
                    first = ab - row[c]
                    if first <= 0:
                        break
                    e = tour[pos[c] - 1]
                    if c != b and e != a and first + table[e][c] - table[b][e] > 0:
                        gain, i, j = first + table[e][c] - table[b][e], ia, pos[e]  # reverse a .. e
                        break
            if gain:
                # reverse the path from tour[i] forward to tour[j] (for a cycle, the same as the rest)
                if i <= j:
                    tour[i:j + 1] = tour[i:j + 1][::-1]
                    lo, hi = i, j + 1
                else:
                    tour[j + 1:i] = tour[j + 1:i][::-1]
                    lo, hi = j + 1, i
                for k in range(lo, hi):
                    pos[tour[k]] = k
                moved = (a, b, c, e)
            else:
                # Or-opt, the best gaining move of the segment of 1, 2 or 3 cities starting at a:
                # out of its place, in between a neighbour c of one end and c's successor or
                # predecessor
                prev = tour[ia - 1]
                row_prev = table[prev]
                prev_a = row_prev[a]
                best = None
                for k in sizes:
                    last, nxt = tour[ia + k - 1 - n], tour[ia + k - n]  # (ia + k - 1) % n, (ia + k) % n
                    removal = prev_a + table[last][nxt] - row_prev[nxt]
                    if removal <= 0:
                        continue
                    for end, other in ((a, last), (last, a)) if k > 1 else ((a, a),):  # one city has one end
                        row_end, row_other = table[end], table[other]
                        for c in neighbours[end]:
                            to_c = row_end[c]
                            if to_c >= removal:
                                break
                            at_c = pos[c]
                            if (at_c - ia) % n < k:  # c is in the segment
                                continue
                            after = nxt if c == prev else tour[at_c + 1 - n]  # c's neighbours once the segment is out
                            before = prev if c == nxt else tour[at_c - 1]
                            row_c = table[c]  # distances are symmetric: row_c[x] is table[x][c]
                            gain = removal - (to_c + row_other[after] - row_c[after])  # c, end .. other, after
                            if gain > 0 and (best is None or gain > best[0]):
                                best = (gain, end, c, after)
                            gain = removal - (row_other[before] + to_c - row_c[before])  # before, other .. end, c
                            if gain > 0 and (best is None or gain > best[0]):
                                best = (gain, other, before, c)
                    if best is not None:
                        break
                if best is None:
                    break
                gain, first, x, y = best  # the segment goes between x and y, `first` next to x
                _move_segment(tour, pos, ia, k, first, x)
                moved = (prev, nxt, a, last, x, y)
            gained += gain
            for c in moved:
                if c not in waiting:
                    waiting.add(c)
                    active.append(c)
    return gained


def _move_segment(tour: list[int], pos: list[int], at: int, k: int, first: int, x: int) -> None:
    """Move the k cities from position `at` to just after city x, `first` of them next to x."""
    rotated = tour[at:] + tour[:at]
    segment, rest = rotated[:k], rotated[k:]
    i = rest.index(x)
    tour[:] = rest[:i + 1] + (segment if segment[0] == first else segment[::-1]) + rest[i + 1:]
    for i, c in enumerate(tour):
        pos[c] = i


def random_cities(seed: int) -> dict:
    """1-130 cities on a grid of 3 to 1,000 (a small grid puts cities on top of each other:
    zero distances and ties everywhere)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 12)) if seed % 3 == 0 else int(rng.integers(12, 130))
    return {"coords": rng.integers(0, int(rng.choice([3, 10, 100, 1000])), size=(n, 2)).tolist()}


@pytest.mark.parametrize("seed", range(48))
def test_compiled_search_makes_the_python_searchs_moves(seed: int) -> None:
    data = random_cities(seed)
    assert tsp.heuristic(data) == python_ils(data)


@pytest.mark.parametrize(("difficulty", "seed"), [("medium", 0), ("medium", 1), ("hard", 0), ("L8", 0)])
def test_generated_tours_are_the_python_searchs(difficulty: str, seed: int) -> None:
    data = mmnp.get_task("tsp").generate(difficulty, seed).data
    assert tsp.heuristic(data) == python_ils(data)
