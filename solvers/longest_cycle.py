"""Longest cycle: Posa rotation-extension search (the classic Hamiltonian-cycle heuristic
for random graphs), keeping the longest cycle closed on the way; CP-SAT with optional
nodes for the exact one."""

from __future__ import annotations

import numpy as np

from mmnp.solvers import cpsat

ROTATIONS = 400  # rotation steps per start before giving up on a full cycle
STARTS = 3


def _adjacency(data: dict) -> list[set[int]]:
    adj: list[set[int]] = [set() for _ in range(data["n"])]
    for u, v in data["edges"]:
        adj[u].add(v)
        adj[v].add(u)
    return adj


def _longest_closed(path: list[int], adj: list[set[int]]) -> list[int]:
    """The longest cycle made of a suffix of `path` closed by an edge back from its end."""
    end = path[-1]
    for i, v in enumerate(path[:-2]):
        if v in adj[end]:
            return path[i:]
    return []


def _search(adj: list[set[int]], start: int, rng: np.random.Generator) -> list[int]:
    n = len(adj)
    path, on_path = [start], {start}
    best: list[int] = []
    for _ in range(ROTATIONS):
        end = path[-1]
        fresh = sorted(adj[end] - on_path)
        if fresh:
            nxt = fresh[int(rng.integers(len(fresh)))]
            path.append(nxt)
            on_path.add(nxt)
            continue
        cycle = _longest_closed(path, adj)
        if len(cycle) > len(best):
            best = cycle
            if len(best) == n:
                return best
        # rotate: pick a path neighbour w = path[i] of the end, reverse the part after it
        pivots = [i for i, v in enumerate(path[:-2]) if v in adj[end]]
        if not pivots:
            break
        i = pivots[int(rng.integers(len(pivots)))]
        path[i + 1 :] = path[i + 1 :][::-1]
    cycle = _longest_closed(path, adj)
    return cycle if len(cycle) > len(best) else best


def heuristic(data: dict) -> list[int]:
    adj = _adjacency(data)
    n = data["n"]
    rng = np.random.default_rng(0)
    best: list[int] = []
    for start in sorted({(k * n) // STARTS for k in range(STARTS)}, key=lambda v: -len(adj[v])):
        cycle = _search(adj, start, rng)
        if len(cycle) > len(best):
            best = cycle
        if len(best) == n:
            break
    if not best:  # no rotation closed a cycle: fall back to any triangle
        best = next([u, v, w] for u in range(n) for v in adj[u] for w in adj[v] if w != u and w in adj[u])
    i = best.index(min(best))
    return best[i:] + best[:i]


def optimal(data: dict, time_limit: float, hint: list[int]) -> tuple[list[int], bool]:
    """A circuit over the graph's arcs in which a node may be skipped (its self-loop)."""
    from ortools.sat.python import cp_model

    n = data["n"]
    model = cp_model.CpModel()
    arcs, lits = [], {}
    for u, v in data["edges"]:
        for a, b in ((u, v), (v, u)):
            lits[a, b] = model.NewBoolVar("")
            arcs.append((a, b, lits[a, b]))
        model.AddBoolOr([lits[u, v].Not(), lits[v, u].Not()])  # no 2-cycles
    skip = [model.NewBoolVar("") for _ in range(n)]
    arcs += [(v, v, skip[v]) for v in range(n)]
    model.AddCircuit(arcs)
    model.Add(sum(skip) <= n - 3)
    model.Maximize(n - sum(skip))
    solver, proven = cpsat.solve(model, time_limit)  # the hint stays out (mmnp.solvers.cpsat)
    if not proven and cpsat.settles(solver, len(hint), minimize=False):
        return hint, True
    succ = {a: b for (a, b), lit in lits.items() if solver.Value(lit)}
    start = min(succ)
    cycle = [start]
    while succ[cycle[-1]] != start:
        cycle.append(succ[cycle[-1]])
    return cycle, proven


def random(data: dict, rng: np.random.Generator) -> list[int]:
    """A random ordering of a random half of the vertices: usually misses edges."""
    n = data["n"]
    return [int(v) for v in rng.permutation(n)[: max(3, n // 2)]]
