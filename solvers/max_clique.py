"""Maximum clique: a bitset branch and bound with colouring bounds (Tomita's MCQ as San Segundo's
BBMC writes it) that proves the optimum when it finishes within its node budget, else dynamic
local search with vertex penalties (Pullan & Hoos's DLS-MC) up to the bound; CP-SAT exact.

Vertex cover uses the same search on the complement graph (a cover is the complement of an
independent set, an independent set a clique of the complement)."""

from __future__ import annotations

import numpy as np

from mmnp.kits.graphs import neighbour_masks
from mmnp.solvers import cpsat

QUICK_NODES = 2_000  # a first branch and bound, enough for small graphs
WARM_STEPS = 3_000  # local-search steps for an incumbent before the full branch and bound
NODES = 60_000  # branch-and-bound nodes (about 1 s at 200 vertices) before the long local search
STEPS_PER_VERTEX = 1_000  # local-search steps per vertex, at most STEPS
STEPS = 400_000
PATIENCE = 30_000  # local-search steps without a larger clique before it stops
PENALTY_DELAY = 2  # DLS-MC's pd: penalties decay every pd-th update (2 suits most DIMACS families)


def heuristic(data: dict) -> list[int]:
    return maximum_clique(data["n"], neighbour_masks(data))


def maximum_clique(n: int, masks: list[int], nodes: int = NODES) -> list[int]:
    """A largest clique found: the optimum when the branch and bound finishes (first briefly,
    then from a local-search incumbent, which prunes from the start, within `nodes`), else a
    long local search up to the bound the search proved."""
    if n == 0:
        return []
    search = CliqueSearch(n, masks)
    if search.run(QUICK_NODES):
        return sorted(search.best)
    search.best = max(local_search(n, masks, [], min(WARM_STEPS, 50 * n), n), search.best, key=len)
    if search.run(nodes) or len(search.best) >= search.bound:
        return sorted(search.best)
    found = local_search(n, masks, [], min(STEPS, STEPS_PER_VERTEX * n), search.bound, seed=1)
    return sorted(max(found, search.best, key=len))


class CliqueSearch:
    """Branch and bound over bit sets: vertices renumbered by non-increasing degree (ties by
    id), each node's candidates greedily coloured in that order; a candidate whose colour
    number cannot lift the clique past the best is pruned, with all after it. `bound` is an
    upper bound on the clique number once `run` returns (exact when it finished)."""

    def __init__(self, n: int, masks: list[int]) -> None:
        self.order = sorted(range(n), key=lambda v: (-masks[v].bit_count(), v))
        position = {v: i for i, v in enumerate(self.order)}
        self.adj = [0] * n
        for i, v in enumerate(self.order):
            m, bits = masks[v], 0
            while m:
                low = m & -m
                bits |= 1 << position[low.bit_length() - 1]
                m ^= low
            self.adj[i] = bits
        self.n = n
        self.best: list[int] = []  # an incumbent may be set before `run`
        self.bound = n
        self.nodes = 0
        self.budget = 0
        self._root_colour = n  # colour number of the root candidate being explored

    def run(self, nodes: int) -> bool:
        """Search with at most `nodes` nodes; True when the search space was exhausted. Either
        way `bound` is then an upper bound: the root candidates not yet explored (the one
        being explored included) hold no clique larger than its colour number."""
        self.budget, self.nodes = nodes, 0
        everything = (1 << self.n) - 1
        self.best = self.best or [self.order[0]]
        try:
            self._expand([], everything, self._colour(everything))
        except _Budget:
            self.bound = max(len(self.best), self._root_colour)
            return False
        self.bound = len(self.best)
        return True

    def _colour(self, candidates: int) -> list[tuple[int, int]]:
        """(vertex, colour number) for every candidate, by greedy colour classes in index order."""
        adj, out, k = self.adj, [], 0
        rest = candidates
        while rest:
            k += 1
            q = rest
            while q:
                low = q & -q
                v = low.bit_length() - 1
                rest ^= low
                q &= ~adj[v] & ~low
                out.append((v, k))
        return out

    def _expand(self, clique: list[int], candidates: int, coloured: list[tuple[int, int]]) -> None:
        self.nodes += 1
        if self.nodes > self.budget:
            raise _Budget
        adj = self.adj
        for v, k in reversed(coloured):
            if len(clique) + k <= len(self.best):
                return
            if not clique:
                self._root_colour = k
            inside = candidates & adj[v]
            clique.append(v)
            if inside:
                self._expand(clique, inside, self._colour(inside))
            elif len(clique) > len(self.best):
                self.best = [self.order[u] for u in clique]
            clique.pop()
            candidates &= ~(1 << v)


class _Budget(Exception):
    """The branch and bound ran out of nodes."""


def local_search(n: int, masks: list[int], start: list[int], steps: int, target: int,
                 seed: int = 0) -> list[int]:
    """DLS-MC (Pullan & Hoos, JAIR 25, 2006): grow the clique by the least-penalised vertex
    adjacent to all of it; on a plateau swap in the least-penalised vertex missing exactly one
    member (each vertex once per plateau, while the plateau still shares a vertex with where it
    began); at a dead end raise the members' penalties (decaying every PENALTY_DELAY-th time)
    and restart from a random vertex with its neighbours among the members. Stops after
    `steps` moves, PATIENCE moves without a larger clique, or on reaching `target`."""
    rng = np.random.default_rng(seed)
    penalty = [0] * n
    updates = 0
    best = list(start)
    clique = list(start) if start else [int(rng.integers(n))]
    members, common = _members_and_common(clique, masks, n)
    picks = rng.integers(0, 1 << 30, size=steps + 2 * n + 2)
    step = improved_at = 0
    while step < steps and step - improved_at < PATIENCE:
        plateau_start, banned = None, 0
        while step < steps:
            if common:  # expand
                v = _least(common, penalty, int(picks[step]))
                clique.append(v)
                members |= 1 << v
                common &= masks[v]
                plateau_start, banned = None, 0
                step += 1
                continue
            if plateau_start is None:
                plateau_start = members
            elif not members & plateau_start:
                break
            # plateau: vertices outside the clique missing exactly one member
            one = _missing_one(clique, masks, n) & ~banned & ~members
            if not one:
                break
            v = _least(one, penalty, int(picks[step]))
            u = next(w for w in clique if not masks[v] >> w & 1)
            clique.remove(u)
            clique.append(v)
            members ^= (1 << u) | (1 << v)
            banned |= 1 << u
            common = (1 << n) - 1
            for w in clique:
                common &= masks[w]
            step += 1
        if len(clique) > len(best):
            best, improved_at = list(clique), step
            if len(best) >= target:
                break
        updates += 1
        penalty = _penalise(clique, penalty, updates)
        v = int(picks[step % len(picks)]) % n  # perturb: a random vertex, with its neighbours kept
        clique = [w for w in clique if masks[v] >> w & 1] + [v] if not members >> v & 1 else [v]
        members, common = _members_and_common(clique, masks, n)
        common &= ~members
        step += 1
    return best


def _members_and_common(clique: list[int], masks: list[int], n: int) -> tuple[int, int]:
    """The clique as a bit set, and the vertices adjacent to every member."""
    members, common = 0, (1 << n) - 1
    for v in clique:
        members |= 1 << v
        common &= masks[v]
    return members, common


def _penalise(clique: list[int], penalty: list[int], updates: int) -> list[int]:
    """A dead end's members are penalised; every PENALTY_DELAY-th time all penalties decay by one."""
    for w in clique:
        penalty[w] += 1
    if updates % PENALTY_DELAY == 0:
        penalty = [p - 1 if p else 0 for p in penalty]
    return penalty


def _least(bits: int, penalty: list[int], pick: int) -> int:
    """The vertex of `bits` with the smallest penalty, ties broken by `pick`."""
    low_value, chosen = None, []
    while bits:
        low = bits & -bits
        v = low.bit_length() - 1
        bits ^= low
        p = penalty[v]
        if low_value is None or p < low_value:
            low_value, chosen = p, [v]
        elif p == low_value:
            chosen.append(v)
    return chosen[pick % len(chosen)]


def _missing_one(clique: list[int], masks: list[int], n: int) -> int:
    """Vertices adjacent to all members but one (prefix and suffix intersections)."""
    full = (1 << n) - 1
    k = len(clique)
    prefix = [full] * (k + 1)
    for i, v in enumerate(clique):
        prefix[i + 1] = prefix[i] & masks[v]
    out, suffix = 0, full
    for i in range(k - 1, -1, -1):
        out |= prefix[i] & suffix & ~masks[clique[i]]
        suffix &= masks[clique[i]]
    return out


def optimal(data: dict, time_limit: float, hint: list[int]) -> tuple[list[int], bool]:
    from ortools.sat.python import cp_model

    n, masks = data["n"], neighbour_masks(data)
    model = cp_model.CpModel()
    x = [model.NewBoolVar("") for _ in range(n)]
    for u in range(n):
        for v in range(u + 1, n):
            if not masks[u] >> v & 1:
                model.AddBoolOr([x[u].Not(), x[v].Not()])
    model.Maximize(sum(x))
    solver, proven = cpsat.solve(model, time_limit)  # the hint stays out (mmnp.solvers.cpsat)
    if not proven and cpsat.settles(solver, len(hint), minimize=False):
        return hint, True
    return cpsat.selected(solver, x), proven


def random(data: dict, rng: np.random.Generator) -> list[int]:
    """Random vertices, as many as the planted-size range suggests: usually not a clique."""
    k = max(2, data["n"] // 3)
    return sorted(int(v) for v in rng.choice(data["n"], size=k, replace=False))


def trivial(data: dict) -> list[int]:
    """A single vertex: a clique in every graph, the floor a non-solver reaches."""
    return [0]
