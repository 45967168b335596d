"""Longest cycle: Posa rotation-extension search (the classic Hamiltonian-cycle heuristic
for random graphs), keeping the longest cycle closed on the way; on graphs where that finds
no Hamiltonian cycle, more searches inside each biconnected block (a cycle never leaves one)
and detours through vertices off the cycle; CP-SAT with optional nodes for the exact one."""

from __future__ import annotations

import numpy as np

from mmnp.solvers import cpsat

ROTATIONS = 400  # rotation steps per start before giving up on a full cycle
STARTS = 3
BLOCK_STARTS = 8  # searches per biconnected block when the first ones found no Hamiltonian cycle
BLOCK_ROTATIONS_PER_VERTEX = 40  # their rotation steps, per vertex of the block


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


def _search(adj: list[set[int]], start: int, rng: np.random.Generator, rotations: int = ROTATIONS,
            size: int | None = None) -> list[int]:
    """Posa's rotation-extension from `start` for `rotations` steps, or until a cycle through
    `size` vertices (all of them by default) closes."""
    n = len(adj) if size is None else size
    path, on_path = [start], {start}
    best: list[int] = []
    for _ in range(rotations):
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
    if len(best) < n:
        best = max(best, _by_blocks(adj, len(best), rng), key=len)
    if not best:  # no rotation closed a cycle: fall back to any triangle
        best = next([u, v, w] for u in range(n) for v in adj[u] for w in adj[v] if w != u and w in adj[u])
    i = best.index(min(best))
    return best[i:] + best[:i]


def _by_blocks(adj: list[set[int]], beat: int, rng: np.random.Generator) -> list[int]:
    """The longest cycle found inside the biconnected blocks of more than `beat` vertices,
    largest first: BLOCK_STARTS Posa searches each (the block's vertices only, a budget that
    grows with its size), each result lengthened by `_detour`."""
    import networkx as nx

    graph = nx.Graph((u, v) for u in range(len(adj)) for v in adj[u] if u < v)
    blocks = sorted((sorted(b) for b in nx.biconnected_components(graph) if len(b) > max(beat, 2)),
                    key=lambda b: (-len(b), b[0]))
    best: list[int] = []
    for block in blocks:
        if len(block) <= len(best):
            break
        inside = set(block)
        sub = [adj[v] & inside if v in inside else set() for v in range(len(adj))]
        starts = sorted(block, key=lambda v: (-len(sub[v]), v))[:BLOCK_STARTS]
        for start in starts:
            cycle = _detour(_search(sub, start, rng, BLOCK_ROTATIONS_PER_VERTEX * len(block), len(block)), sub)
            if len(cycle) > len(best):
                best = cycle
            if len(best) == len(block):
                break
    return best


def _detour(cycle: list[int], adj: list[set[int]]) -> list[int]:
    """Lengthen a cycle while some edge (a, b) of it can go through one or two vertices off
    it instead (a - v - b, or a - v - w - b)."""
    if not cycle:
        return cycle
    cycle = list(cycle)
    on = set(cycle)
    grown = True
    while grown:
        grown = False
        for i in range(len(cycle)):
            a, b = cycle[i], cycle[(i + 1) % len(cycle)]
            via = sorted((adj[a] & adj[b]) - on)
            if via:
                cycle.insert(i + 1, via[0])
                on.add(via[0])
                grown = True
                break
            pair = next(((v, w) for v in sorted(adj[a] - on) for w in sorted(adj[v] & adj[b] - on) if w != v), None)
            if pair is not None:
                cycle[i + 1:i + 1] = list(pair)
                on.update(pair)
                grown = True
                break
    return cycle


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
    try:
        solver, proven = cpsat.solve(model, time_limit)  # the hint stays out (mmnp.solvers.cpsat)
    except cpsat.NoSolution:
        if len(hint) == n:
            return hint, True  # a Hamiltonian cycle: no cycle is longer
        raise
    if not proven and (len(hint) == n or cpsat.settles(solver, len(hint), minimize=False)):
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


def trivial(data: dict) -> list[int]:
    """A shortest cycle (a triangle where there is one), the least any feasible answer earns:
    no cycle can be named without reading the graph, so the floor is the easiest one to find.
    Breadth-first search from each vertex; a non-tree edge closes a walk through the root,
    kept when it is a simple cycle. Empty for a graph without a cycle."""
    adj = [[] for _ in range(data["n"])]
    for u, v in data["edges"]:
        adj[u].append(v)
        adj[v].append(u)
    best: list[int] = []
    for root in range(data["n"]):
        parent, depth, queue = {root: root}, {root: 0}, [root]
        for u in queue:
            if best and 2 * depth[u] >= len(best):
                break  # no shorter cycle through this root
            for w in adj[u]:
                if w not in parent:
                    parent[w], depth[w] = u, depth[u] + 1
                    queue.append(w)
                elif w != parent[u]:
                    cycle = _path_to_root(u, parent)[::-1] + _path_to_root(w, parent)[:-1]
                    if len(set(cycle)) == len(cycle) and (not best or len(cycle) < len(best)):
                        best = cycle
        if len(best) == 3:
            break
    return best


def _path_to_root(v: int, parent: dict[int, int]) -> list[int]:
    path = [v]
    while parent[path[-1]] != path[-1]:
        path.append(parent[path[-1]])
    return path
