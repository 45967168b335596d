"""Graph colouring: DSatur, then one colour fewer at a time down to a clique's size (a lower
bound), by PartialCol alternating with TabuCol; CP-SAT exact.

The heuristic's budget, in moves (deterministic, no wall clock): for each number of colours k, at
most `step_budget(n)` moves = max(4,000, 500 n, 5 n^2) capped at 800,000 (n = 450: 800,000, about
27 CPU s of these numpy loops at ~30,000 moves/s): 20 n TabuCol moves, then half PartialCol, then
TabuCol for the rest; the search
stops at the first k it cannot reach in its budget, or when k equals the clique's size (proven
optimal). So a graph whose clique is smaller than its chromatic number (myciel, the generated
levels without a clique) always spends one full budget at the k it cannot reach.
"""

from __future__ import annotations

import numpy as np

from mmnp.kits.graphs import neighbour_masks
from mmnp.solvers import cpsat
from mmnp.solvers.max_clique import CliqueSearch

CLIQUE_NODES = 3_000  # branch-and-bound nodes spent on the clique that bounds the colours from below
STEPS = 4_000  # moves spent on each number of colours, at least ...
STEPS_PER_VERTEX = 500  # ... or this many per vertex ...
STEPS_PER_VERTEX_SQUARED = 5  # ... or this many per vertex squared (larger graphs need longer runs), if more
MAX_STEPS = 800_000  # ... and at most this many
QUICK_STEPS_PER_VERTEX = 20  # a short TabuCol run first, which settles most easy steps at once


def step_budget(n: int) -> int:
    return min(MAX_STEPS, max(STEPS, STEPS_PER_VERTEX * n, STEPS_PER_VERTEX_SQUARED * n * n))


def _adjacency(data: dict) -> list[list[int]]:
    adj: list[list[int]] = [[] for _ in range(data["n"])]
    for u, v in data["edges"]:
        adj[u].append(v)
        adj[v].append(u)
    return adj


def large_clique(data: dict) -> list[int]:
    """A clique from a short branch and bound (the maximum one on small graphs): every colouring
    needs at least its size, and CP-SAT fixes its colours (symmetry breaking)."""
    if data["n"] == 0:
        return []
    search = CliqueSearch(data["n"], neighbour_masks(data))
    search.run(CLIQUE_NODES)
    return sorted(search.best)


def dsatur(adj: list[list[int]]) -> list[int]:
    n = len(adj)
    colour = [0] * n
    seen: list[set[int]] = [set() for _ in range(n)]
    degree = [len(a) for a in adj]
    for _ in range(n):
        v = max((u for u in range(n) if not colour[u]), key=lambda u: (len(seen[u]), degree[u], -u))
        c = 1
        while c in seen[v]:
            c += 1
        colour[v] = c
        for w in adj[v]:
            seen[w].add(c)
    return colour


def partialcol(nbrs: list[np.ndarray], k: int, start: np.ndarray, steps: int,
               rng: np.random.Generator) -> np.ndarray | None:
    """PartialCol (Bloechliger & Zufferey 2008, the authors' FOO variant): a proper partial
    colouring with colours 0..k-1 (-1: uncoloured) from `start`; a move gives an uncoloured
    vertex a colour and uncolours its neighbours of that colour, the move that uncolours fewest
    (ties at random); as in the authors' code, every neighbour of the moved vertex may not take
    its colour for 0.6 x |uncoloured| + 0-9 moves, unless that colours everything seen so far
    best; a random move when all are tabu. A full k-colouring, or None after `steps` moves.
    gamma[c, v] counts v's neighbours of colour c; a move changes only row c."""
    n = len(nbrs)
    col = start.copy()
    gamma = np.zeros((k, n), dtype=np.int32)
    for v in np.flatnonzero(col >= 0).tolist():
        gamma[col[v], nbrs[v]] += 1
    out = set(np.flatnonzero(col < 0).tolist())
    best = len(out)
    tabu = np.zeros((k, n), dtype=np.int64)
    draws = rng.integers(0, 1 << 30, size=steps + 1).tolist()
    ties = rng.random(steps + 1).tolist()
    blocked, tenure = 1 << 30, 10
    for it in range(1, steps + 1):
        if not out:
            return col
        pending = np.fromiter(out, dtype=np.intp, count=len(out))
        cost = gamma[:, pending]
        allowed = tabu[:, pending] < it
        if len(out) == best:
            allowed |= cost == 0
        cost = np.where(allowed, cost, blocked).ravel()
        low = cost.min()
        if low >= blocked:
            at = draws[it] % len(cost)
        else:
            options = np.flatnonzero(cost == low)
            at = int(options[int(ties[it] * len(options))])
        c, i = divmod(at, len(pending))
        u = int(pending[i])
        nb = nbrs[u]
        bumped = nb[col[nb] == c].tolist()
        tabu[c, nb] = it + tenure
        gamma[c, nb] += 1
        col[u] = c
        out.discard(u)
        if bumped:
            col[bumped] = -1
            if len(bumped) == 1:
                gamma[c, nbrs[bumped[0]]] -= 1
            else:
                gamma[c] -= np.bincount(np.concatenate([nbrs[w] for w in bumped]), minlength=n).astype(np.int32)
            out.update(bumped)
        tenure = int(0.6 * len(out)) + draws[it] % 10
        best = min(best, len(out))
    return None if out else col


def tabucol(nbrs: list[np.ndarray], k: int, start: np.ndarray, steps: int,
            rng: np.random.Generator) -> np.ndarray | None:
    """TabuCol (Hertz & de Werra 1987, with Galinier & Hao's tenure 0.6 x conflicting vertices
    + 0-9): a complete colouring with colours 0..k-1 from `start` (uncoloured vertices take
    their least conflicting colour); move a conflicting vertex to the colour that lowers the
    conflicts most (ties at random), not back to a colour it left within its tenure unless that
    beats the best count so far. A proper k-colouring, or None after `steps` moves. gamma[v, c] counts v's neighbours
    of colour c, updated per move."""
    n = len(nbrs)
    col = start.copy()
    gamma = np.zeros((n, k), dtype=np.int64)
    for v in np.flatnonzero(col >= 0).tolist():
        gamma[nbrs[v], col[v]] += 1
    for v in np.flatnonzero(col < 0).tolist():
        col[v] = c = int(np.argmin(gamma[v]))
        gamma[nbrs[v], c] += 1
    rows = np.arange(n)
    conflicts = int(gamma[rows, col].sum()) // 2
    best = conflicts
    tabu = np.zeros((n, k), dtype=np.int64)
    draws = rng.integers(0, 10, size=steps + 1).tolist()
    ties = rng.random(steps + 1).tolist()
    blocked = n * n + 1
    for it in range(1, steps + 1):
        if conflicts == 0:
            return col
        bad = np.flatnonzero(gamma[rows, col] > 0)
        own = gamma[bad, col[bad]]
        delta = gamma[bad] - own[:, None]
        delta[np.arange(len(bad)), col[bad]] = blocked
        delta[(tabu[bad] >= it) & (conflicts + delta >= best)] = blocked
        low = delta.min()
        if low >= blocked:
            continue  # every move tabu: wait for a tenure to end
        options = np.flatnonzero(delta.ravel() == low)
        at = int(options[int(ties[it] * len(options))])
        v, c = int(bad[at // k]), at % k
        old = int(col[v])
        col[v] = c
        gamma[nbrs[v], old] -= 1
        gamma[nbrs[v], c] += 1
        conflicts += int(low)
        best = min(best, conflicts)
        tabu[v, old] = it + int(0.6 * conflicts) + draws[it]
    return col if conflicts == 0 else None


def fewer_colours(nbrs: list[np.ndarray], colouring: np.ndarray, rng: np.random.Generator) -> np.ndarray | None:
    """A colouring with one colour fewer than `colouring` (colours 0..k), or None within
    `step_budget` moves: a short TabuCol run (20 moves per vertex), then PartialCol for half of
    the budget, then TabuCol for the rest, each from `colouring` with its smallest class
    uncoloured and the top colour renamed into its place. The two excel on different graphs
    (PartialCol on the dense Leighton graphs, TabuCol on the queens and on many uncoloured
    vertices at once, where a PartialCol move colours only one)."""
    n, k = len(nbrs), int(colouring.max())
    drop = int(np.argmin(np.bincount(colouring, minlength=k + 1)))
    start = np.where(colouring == drop, -1, colouring)
    start[start == k] = drop
    budget, quick = step_budget(n), QUICK_STEPS_PER_VERTEX * n
    found = tabucol(nbrs, k, start, quick, rng)
    if found is None:
        found = partialcol(nbrs, k, start, budget // 2, rng)
    if found is None:
        found = tabucol(nbrs, k, start, max(budget - budget // 2 - quick, 0), rng)
    return found


def heuristic(data: dict) -> list[int]:
    adj = _adjacency(data)
    nbrs = [np.asarray(a, dtype=np.intp) for a in adj]
    best = np.asarray(dsatur(adj), dtype=np.int64) - 1
    lower = len(large_clique(data))
    rng = np.random.default_rng(0)
    while data["n"] and best.max() + 1 > lower:
        better = fewer_colours(nbrs, best, rng)
        if better is None:
            break
        best = better
    return [int(c) + 1 for c in best]


def optimal(data: dict, time_limit: float, hint: list[int]) -> tuple[list[int], bool]:
    """CP-SAT on colour indices (as many as DSatur needs) with a large clique's colours fixed
    (symmetry breaking)."""
    from ortools.sat.python import cp_model

    n, upper = data["n"], max(dsatur(_adjacency(data)), default=1)
    model = cp_model.CpModel()
    x = [model.NewIntVar(0, upper - 1, "") for _ in range(n)]
    for u, v in data["edges"]:
        model.Add(x[u] != x[v])
    clique = large_clique(data)
    for i, v in enumerate(clique):
        model.Add(x[v] == i)
    used = model.NewIntVar(1, upper, "")
    model.AddMaxEquality(used, [xi + 1 for xi in x])
    model.Minimize(used)
    solver, proven = cpsat.solve(model, time_limit)  # the hint stays out (mmnp.solvers.cpsat)
    if not proven and cpsat.settles(solver, len(set(hint)), minimize=True):
        return hint, True
    return [solver.Value(xi) + 1 for xi in x], proven


def random(data: dict, rng: np.random.Generator) -> list[int]:
    """Uniform colours from as many as DSatur needs: usually some conflict."""
    k = max(dsatur(_adjacency(data)), default=1)
    return [int(c) for c in rng.integers(1, k + 1, size=data["n"])]


def trivial(data: dict) -> list[int]:
    """One colour per vertex: feasible on every graph, the floor a non-solver reaches."""
    return list(range(1, data["n"] + 1))
