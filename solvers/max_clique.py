"""Maximum clique: a bitset branch and bound with colouring bounds (Tomita's MCQ as San Segundo's
BBMC writes it) that proves the optimum when it finishes within its node budget, else dynamic
local search with vertex penalties (Pullan & Hoos's DLS-MC) up to the bound; CP-SAT exact.

DLS-MC's one parameter, the penalty delay pd, is tuned per instance family in the paper (1 or 2
for most DIMACS families, 15 for brock400, whose planted cliques are made of
low-degree vertices: penalties that decay slowly steer the search away from the frequent
high-degree vertices). mmnp tunes nothing per instance: it runs DLS-MC at pd 1, 2, 4, 8 and 16
(the doubling ladder over the paper's settings up to brock400's) side by side, each with an
equal share of the steps, and keeps the largest clique. Budget, in steps (so deterministic),
over the five runs together: 50 per vertex pair (n^2), at most 8 million; stopping earlier
after 15 per vertex pair without a larger clique, or when a run reaches the branch and bound's
upper bound. At 150,000-250,000 steps/s that is up to ~40 CPU s on a 400-vertex graph the
branch and bound leaves open (brock400, gen400), 3-4 s at 155 vertices (vertex cover at L10).
brock400_1's 27-clique comes 0.5-2.7 million steps after its 25-cliques over seeds 0-4 (the
heuristic's seed: 0.5 million); the patience, 2.4 million at 400 vertices, covers four of
those five. Generated instances up to `hard` are proven by the branch and bound and never
reach the long search.

Vertex cover uses the same search on the complement graph (a cover is the complement of an
independent set, an independent set a clique of the complement)."""

from __future__ import annotations

from collections.abc import Iterator
from random import Random

import numpy as np

from mmnp.kits.graphs import neighbour_masks
from mmnp.solvers import cpsat

QUICK_NODES = 2_000  # a first branch and bound, enough for small graphs
WARM_STEPS = 3_000  # local-search steps for an incumbent before the full branch and bound
NODES = 60_000  # branch-and-bound nodes (about 1 s at 200 vertices) before the long local search
STEPS_PER_PAIR = 50  # local-search steps (all runs together) per vertex pair, at most STEPS
STEPS = 8_000_000
PATIENCE_PER_PAIR = 15  # ... or this many per vertex pair without a larger clique
PENALTY_DELAYS = (1, 2, 4, 8, 16)  # DLS-MC's pd, one run each, interleaved (see local_search)


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
    found = local_search(n, masks, [], min(STEPS, STEPS_PER_PAIR * n * n), search.bound, seed=1,
                         patience=PATIENCE_PER_PAIR * n * n)
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
                 seed: int = 0, patience: int | None = None) -> list[int]:
    """DLS-MC at every penalty delay of PENALTY_DELAYS, interleaved: each run takes its turn
    (one dead end at a time) while it has used the fewest steps, so each gets an equal share of
    `steps`. Stops when a run reaches `target`, after `steps` moves in all, or after
    `patience` of them without a larger clique."""
    runs = [_dls_mc(n, masks, start, delay, seed * len(PENALTY_DELAYS) + i, target)
            for i, delay in enumerate(PENALTY_DELAYS)]
    used = [0] * len(runs)
    best, improved_at = list(start), 0
    patience = steps if patience is None else patience
    while sum(used) < steps and sum(used) - improved_at < patience and len(best) < target:
        turn = used.index(min(used))
        clique, used[turn] = next(runs[turn])
        if len(clique) > len(best):
            best, improved_at = clique, sum(used)
    return best


def _dls_mc(n: int, masks: list[int], start: list[int], delay: int, seed: int,
            target: int) -> Iterator[tuple[list[int], int]]:
    """DLS-MC (Pullan & Hoos, JAIR 25, 2006) with penalty delay `delay`; yields (largest clique
    so far, steps so far) at every dead end. Grow the clique by the least-penalised vertex
    adjacent to all of it; when none is, swap in the least-penalised vertex missing exactly one
    member (a swapped-out vertex does not return within the plateau, which ends when no vertex
    of the clique it began with is left); at a dead end the members' penalties rise, and every
    `delay`-th time all penalties fall by one. Perturbation as the paper's: delay > 1 restarts
    from the last vertex added, delay 1 adds a random vertex and drops its non-neighbours.

    Counts of non-adjacent members are kept per vertex in bit planes (plane i holds bit i of
    every count), so adding or removing a member is a bit-sliced increment or decrement;
    penalties as one bit set per penalty value, so the least-penalised candidates are the first
    non-empty intersection."""
    rng = Random(seed)
    full = (1 << n) - 1
    missing = [full & ~m for m in masks]  # a vertex's non-neighbours, itself included
    planes = [0] * n.bit_length()
    level = [full]  # level[p]: the vertices with penalty p
    raised = [0] * n  # a vertex's penalty is raised[v] - decays, or 0 when that is negative
    clique: list[int] = []
    best: list[int] = []
    members = updates = decays = step = 0

    def add(v: int) -> None:
        nonlocal members
        carry = missing[v]
        for i, plane in enumerate(planes):
            planes[i] = plane ^ carry
            carry &= plane
            if not carry:
                break
        clique.append(v)
        members |= 1 << v

    def remove(u: int) -> None:
        nonlocal members
        borrow = missing[u]
        for i, plane in enumerate(planes):
            planes[i] = plane ^ borrow
            borrow &= ~plane
            if not borrow:
                break
        clique.remove(u)
        members ^= 1 << u

    def least(candidates: int) -> int:
        """The least-penalised candidate, ties broken at random: by the first penalty level
        that meets the candidates, or, when that is not among as many levels as there are
        candidates (penalties spread wide at a long delay), candidate by candidate."""
        for vertices in level[:candidates.bit_count()]:
            tied = candidates & vertices
            if tied:
                count = tied.bit_count()
                if count > 1:
                    for _ in range(rng.getrandbits(32) % count):
                        tied &= tied - 1
                return (tied & -tied).bit_length() - 1
        lowest, chosen = len(level), []
        while candidates:
            low = candidates & -candidates
            v = low.bit_length() - 1
            candidates ^= low
            p = raised[v] - decays if raised[v] > decays else 0
            if p < lowest:
                lowest, chosen = p, [v]
            elif p == lowest:
                chosen.append(v)
        return chosen[rng.getrandbits(32) % len(chosen)] if len(chosen) > 1 else chosen[0]

    def grow() -> int:
        """Add least-penalised common neighbours while there are any; the vertices missing
        two or more members after."""
        nonlocal step
        while True:
            high = 0
            for plane in planes[1:]:
                high |= plane
            common = full & ~(high | planes[0])
            if not common:
                return high
            add(least(common))
            step += 1

    for v in start or [rng.randrange(n)]:
        add(v)
    while True:
        high = grow()
        began, banned = members, 0
        while len(clique) < target and members & began:
            swaps = planes[0] & ~high & ~members & ~banned  # vertices missing exactly one member
            if not swaps:
                break
            v = least(swaps)
            u = (missing[v] & members).bit_length() - 1
            remove(u)
            add(v)
            banned |= 1 << u
            step += 1
            high = grow()
        if len(clique) > len(best):
            best = list(clique)
        yield best, step
        updates += 1
        for w in clique:
            p = raised[w] - decays if raised[w] > decays else 0
            level[p] ^= 1 << w
            if p + 1 == len(level):
                level.append(0)
            level[p + 1] |= 1 << w
            raised[w] = decays + p + 1
        if updates % delay == 0:
            decays += 1
            if len(level) > 1:
                level[0] |= level.pop(1)
        if delay > 1:
            last = clique[-1]
            clique[:], members = [last], 1 << last
            planes[:] = [missing[last]] + [0] * (len(planes) - 1)
        else:
            v = rng.randrange(n)
            if not members >> v & 1:
                apart = members & missing[v]
                while apart:
                    low = apart & -apart
                    remove(low.bit_length() - 1)
                    apart ^= low
                add(v)
        step += 1


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
