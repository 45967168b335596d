"""Graph colouring: DSatur, then Tabucol removing one colour at a time down to a clique's size
(a lower bound); CP-SAT exact."""

from __future__ import annotations

import numpy as np

from mmnp.kits.graphs import neighbour_masks
from mmnp.solvers import cpsat
from mmnp.solvers.max_clique import CliqueSearch

CLIQUE_NODES = 3_000  # branch-and-bound nodes spent on the clique that bounds the colours from below
ITERATIONS = 4_000  # Tabucol moves per attempt to remove one colour, at least ...
ITERATIONS_PER_VERTEX = 500  # ... or this many per vertex, if more
MAX_ITERATIONS = 200_000  # ... and at most this many


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


def tabucol(adj: list[list[int]], k: int, start: list[int], iterations: int,
            rng: np.random.Generator) -> list[int] | None:
    """Tabucol (Hertz & de Werra 1987, with Galinier & Hao's tenure 0.6 x conflicts + 0-9):
    from `start` (colours above k folded in), move a conflicting vertex to the colour that
    lowers the conflicts most (ties at random), not back to a colour it left within its
    tenure unless that beats the best count so far. A proper k-colouring, or None after
    `iterations` moves. gamma[v, c] counts v's neighbours of colour c, updated per move."""
    n = len(adj)
    col = np.array([(c - 1) % k for c in start], dtype=np.int64)
    nbrs = [np.asarray(a, dtype=np.int64) for a in adj]
    gamma = np.zeros((n, k), dtype=np.int64)
    for v in range(n):
        np.add.at(gamma[v], col[nbrs[v]], 1)
    rows = np.arange(n)
    conflicts = int(gamma[rows, col].sum()) // 2
    best = conflicts
    tabu = np.zeros((n, k), dtype=np.int64)
    noise = rng.integers(0, 10, size=iterations + 1)
    ties = rng.random(iterations + 1)
    big = n * n + 1
    for it in range(1, iterations + 1):
        if conflicts == 0:
            return [int(c) + 1 for c in col]
        bad = np.flatnonzero(gamma[rows, col] > 0)
        own = gamma[bad, col[bad]]
        delta = gamma[bad] - own[:, None]
        delta[np.arange(len(bad)), col[bad]] = big
        blocked = (tabu[bad] >= it) & (conflicts + delta >= best)
        delta[blocked] = big
        low = delta.min()
        if low >= big:
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
        tabu[v, old] = it + int(0.6 * conflicts) + int(noise[it])
    return [int(c) + 1 for c in col] if conflicts == 0 else None


def heuristic(data: dict) -> list[int]:
    adj = _adjacency(data)
    best = dsatur(adj)
    lower = len(large_clique(data))
    iterations = min(MAX_ITERATIONS, max(ITERATIONS, ITERATIONS_PER_VERTEX * data["n"]))
    rng = np.random.default_rng(0)
    while max(best) > lower:
        better = tabucol(adj, max(best) - 1, best, iterations, rng)
        if better is None:
            break
        best = better
    return best


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
