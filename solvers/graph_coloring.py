"""Graph colouring: DSatur, then Tabucol to remove colours while it can; CP-SAT exact."""

from __future__ import annotations

import numpy as np

from mmnp.solvers import cpsat

TABU_ITERATIONS = 4000  # per attempt to remove one colour


def _adjacency(data: dict) -> list[list[int]]:
    adj: list[list[int]] = [[] for _ in range(data["n"])]
    for u, v in data["edges"]:
        adj[u].append(v)
        adj[v].append(u)
    return adj


def greedy_clique(adj: list[list[int]]) -> list[int]:
    """A maximal clique grown from each vertex by highest degree; the largest is a lower bound."""
    sets = [set(a) for a in adj]
    best: list[int] = []
    for start in range(len(adj)):
        clique, cand = [start], set(sets[start])
        while cand:
            v = max(cand, key=lambda x: (len(sets[x] & cand), -x))
            clique.append(v)
            cand &= sets[v]
        if len(clique) > len(best):
            best = clique
    return best


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


def tabucol(adj: list[list[int]], k: int, start: list[int], rng: np.random.Generator) -> list[int] | None:
    """Search for a proper k-colouring from `start` (colours > k folded in); None if not found."""
    n = len(adj)
    col = [(c - 1) % k for c in start]
    gamma = [[0] * k for _ in range(n)]  # gamma[v][c]: neighbours of v coloured c
    for v in range(n):
        for w in adj[v]:
            gamma[v][col[w]] += 1
    conflicts = sum(gamma[v][col[v]] for v in range(n)) // 2
    tabu = [[0] * k for _ in range(n)]
    noise = rng.integers(0, 10, size=TABU_ITERATIONS + 1)
    for it in range(1, TABU_ITERATIONS + 1):
        if conflicts == 0:
            return [c + 1 for c in col]
        best_delta, move = None, None
        for v in range(n):
            gv, cv = gamma[v], col[v]
            if gv[cv] == 0:
                continue
            for c in range(k):
                if c == cv:
                    continue
                delta = gv[c] - gv[cv]
                if (tabu[v][c] < it or conflicts + delta == 0) and (best_delta is None or delta < best_delta):
                    best_delta, move = delta, (v, c)
        if move is None:
            return None
        v, c = move
        old = col[v]
        col[v] = c
        for w in adj[v]:
            gamma[w][old] -= 1
            gamma[w][c] += 1
        conflicts += best_delta
        tabu[v][old] = it + int(0.6 * conflicts) + int(noise[it])
    return [c + 1 for c in col] if conflicts == 0 else None


def heuristic(data: dict) -> list[int]:
    adj = _adjacency(data)
    best = dsatur(adj)
    lower = len(greedy_clique(adj))
    rng = np.random.default_rng(0)
    while max(best) > lower:
        better = tabucol(adj, max(best) - 1, best, rng)
        if better is None:
            break
        best = better
    return best


def optimal(data: dict, time_limit: float, hint: list[int]) -> tuple[list[int], bool]:
    """CP-SAT on colour indices with a greedy clique fixed (symmetry breaking)."""
    from ortools.sat.python import cp_model

    adj = _adjacency(data)
    n, upper = data["n"], max(hint)
    model = cp_model.CpModel()
    x = [model.NewIntVar(0, upper - 1, "") for _ in range(n)]
    for u, v in data["edges"]:
        model.Add(x[u] != x[v])
    clique = greedy_clique(adj)
    for i, v in enumerate(clique):
        model.Add(x[v] == i)
    used = model.NewIntVar(1, upper, "")
    model.AddMaxEquality(used, [xi + 1 for xi in x])
    model.Minimize(used)
    # rename the hint's colours so the clique's match the fixed ones
    rename = {hint[v]: i for i, v in enumerate(clique)}
    for c in sorted(set(hint)):
        rename.setdefault(c, len(rename))
    for xi, c in zip(x, hint):
        model.AddHint(xi, rename[c])
    solver, proven = cpsat.solve(model, time_limit)
    return [solver.Value(xi) + 1 for xi in x], proven


def random(data: dict, rng: np.random.Generator) -> list[int]:
    """Uniform colours from as many as the heuristic needs: usually some conflict."""
    k = max(heuristic(data))
    return [int(c) for c in rng.integers(1, k + 1, size=data["n"])]


def trivial(data: dict) -> list[int]:
    """One colour per vertex: feasible on every graph, the floor a non-solver reaches."""
    return list(range(1, data["n"] + 1))
