"""Maximum clique: a bitset branch and bound with colouring bounds (Tomita's MCQ as San Segundo's
BBMC writes it) that proves the optimum when it finishes within its node budget, else dynamic
local search with vertex penalties (Pullan & Hoos's DLS-MC) up to the bound; CP-SAT exact.

DLS-MC's one parameter, the penalty delay pd, is tuned per instance family in the paper (1 or 2
for most DIMACS families, 15 for brock400, whose planted cliques are made of
low-degree vertices: penalties that decay slowly steer the search away from the frequent
high-degree vertices). mmnp tunes nothing per instance: it runs DLS-MC at pd 1, 2, 4, 8 and 16
(the doubling ladder over the paper's settings up to brock400's) side by side, each with an
equal share of the steps, and keeps the largest clique. Budget, in steps (so deterministic),
over the five runs together: 50 per vertex pair (n^2), at most 8 million. After 15 per vertex
pair without a larger clique the five stop and start again from seeds RESTART_SEED, + 1, ...
while the steps last (renumbered at random, brock400_1 meets 25-cliques early and its 27 after
that patience on about half the numberings); everything stops when a run reaches the branch and
bound's upper bound. Over 400 vertices the steps the cap withholds (50 n^2 less 8 million) go to a
second search at pd 32, 45 and 64 (32 and 64 the ladder's next doublings, 45 the paper's
setting for brock800, whose optima the first ladder does not reach), with the same patience,
run again with seeds 3, 4, ... while those steps last (DLS-MC's time to brock800_1's 23-clique
is heavy-tailed over seeds: seed 2's run meets a 21-clique early and its patience ends it
first, seed 3's run finds the 23); generated graphs (at most 160 vertices) never get there,
imported ones over 400 vertices may, and pay the whole budget unless the bound is reached.
The runs are compiled (`local_search`; the moves of the Python generators they replaced, so
the generated references are unchanged): about 1-2 million steps/s. The whole heuristic, branch and
bound included, takes 9-11 CPU s on a 400-vertex graph the branch and bound leaves open (brock400,
gen400, san400: the whole 8 million steps; 3-5 s when the patience ended the search there, before
the restarts), 57-58 s on brock800 and up to 128 s at 1,000 vertices (p_hat1000-1; both measured
with both cores busy). brock400_1's 27-clique comes 0.5-2.7 million steps after its 25-cliques over
seeds 0-4 (the heuristic's seed: 0.5 million); the patience, 2.4 million at 400 vertices, covers
four of those five. Renumbered at random (8 numberings each of brock400_1-4), the search ended below
the optimum on 5 of 32 with one run (brock400_1 25 on 4, brock400_2 25 on 1) and on 1 with the
restarts. Generated instances up to `hard` are proven by the branch and bound and never reach the
long search.

Vertex cover uses the same search on the complement graph (a cover is the complement of an
independent set, an independent set a clique of the complement)."""

from __future__ import annotations

import itertools

import numpy as np

from mmnp.kits.graphs import neighbour_masks
from mmnp.solvers import cpsat
from mmnp.solvers.compiled import compiled, randbelow, twister, twister_state

QUICK_NODES = 2_000  # a first branch and bound, enough for small graphs
WARM_STEPS = 3_000  # local-search steps for an incumbent before the full branch and bound
NODES = 60_000  # branch-and-bound nodes (about 1 s at 200 vertices) before the long local search
STEPS_PER_PAIR = 50  # local-search steps (all runs together) per vertex pair, at most STEPS
STEPS = 8_000_000
PATIENCE_PER_PAIR = 15  # ... or this many per vertex pair without a larger clique
PENALTY_DELAYS = (1, 2, 4, 8, 16)  # DLS-MC's pd, one run each, interleaved (see local_search)
LONG_PENALTY_DELAYS = (32, 45, 64)  # ... and on the steps STEPS withholds (over 400 vertices)
RESTART_SEED = 100  # the first ladder's runs after seed 1's, when its patience ends it: seeds 100, 101, ...


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
    search.best = max(local_search(n, masks, [], min(WARM_STEPS, 50 * n), n)[0], search.best, key=len)
    if search.run(nodes) or len(search.best) >= search.bound:
        return sorted(search.best)
    steps, patience = STEPS_PER_PAIR * n * n, PATIENCE_PER_PAIR * n * n
    found: list[int] = []
    first = min(STEPS, steps)
    for seed in itertools.chain([1], itertools.count(RESTART_SEED)):  # while the first budget lasts
        if first <= 0 or len(found) >= search.bound:
            break
        run, made = local_search(n, masks, [], first, search.bound, seed=seed, patience=patience)
        found, first = max(found, run, key=len), first - max(made, 1)
    left = steps - STEPS
    for seed in itertools.count(2):  # seed 2: Random(6-8), as the first search's runs at pd 2, 4
        #   and 8 draw (their moves part at those runs' first decay); then 3, 4, ... while steps are left
        if left <= 0 or len(found) >= search.bound:
            break
        longer, made = local_search(n, masks, [], left, search.bound, seed=seed, patience=patience,
                                    delays=LONG_PENALTY_DELAYS)
        found, left = max(found, longer, key=len), left - max(made, 1)
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


def local_search(n: int, masks: list[int], start: list[int], steps: int, target: int, seed: int = 0,
                 patience: int | None = None, delays: tuple[int, ...] = PENALTY_DELAYS) -> tuple[list[int], int]:
    """DLS-MC at every penalty delay of `delays`, interleaved: each run takes its turn
    (one dead end at a time) while it has used the fewest steps, so each gets an equal share of
    `steps`. Stops when a run reaches `target`, after `steps` moves in all, or after
    `patience` of them without a larger clique. The largest clique met (in the order its run
    added the vertices) and the moves made in all.

    One run (Pullan & Hoos, JAIR 25, 2006), with penalty delay pd and its own Random(seed x
    len(delays) + i): grow the clique by the least-penalised vertex adjacent to all of it; when
    none is, swap in the least-penalised vertex missing exactly one member (a swapped-out vertex
    does not return within the plateau, which ends when no vertex of the clique it began with is
    left);
    at a dead end the members' penalties rise, and every pd-th time all penalties fall by one.
    Perturbation as the paper's: pd > 1 restarts from the last vertex added, pd 1 adds a random
    vertex and drops its non-neighbours. Ties go to the `getrandbits(32) % count`-th lowest
    vertex, a random vertex is `randrange(n)`: the moves of the bit-set Python generators this
    replaced (tests/test_heuristic_max_clique.py), compiled (`_dls_mc_runs`): 2.8-10x their rate
    (brock800 2.8x, brock400 4.6x, C125.9 10x; ~1 million steps/s at 400 vertices)."""
    if n == 0:
        return [], 0
    runs = len(delays)
    states = np.zeros((runs, 624), dtype=np.int64)
    positions = np.zeros(runs, dtype=np.int64)
    for i in range(runs):
        states[i], positions[i] = twister_state(seed * runs + i)
    width = (n + 7) // 8
    adjacent = np.unpackbits(np.frombuffer(b"".join(m.to_bytes(width, "little") for m in masks), dtype=np.uint8)
                             .reshape(n, width), axis=1, count=n, bitorder="little").astype(bool)
    rows, missing = np.nonzero(~adjacent)  # each vertex's non-neighbours, itself included, ascending
    first = np.searchsorted(rows, np.arange(n + 1)).astype(np.int64)
    found, size, made = _dls_mc_runs(n, first, missing.astype(np.int64), np.array(delays, dtype=np.int64),
                                     states, positions, np.array(start, dtype=np.int64), steps, target,
                                     steps if patience is None else patience)
    return [int(v) for v in found[:size]], int(made)


@compiled
def _least(n: int, count: np.ndarray, member: np.ndarray, banned: np.ndarray, missing_one: bool,
           raised: np.ndarray, decays: int, tied: np.ndarray, state: np.ndarray, position: int) -> tuple[int, int]:
    """The least-penalised vertex adjacent to every member (`missing_one`: a non-member, not
    banned, missing exactly one), ties by the `getrandbits(32) % ties`-th lowest; -1 if none.
    (the vertex, the twister's new position)."""
    ties, lowest = 0, 1 << 62
    for v in range(n):
        if (count[v] == 1 and not member[v] and not banned[v]) if missing_one else count[v] == 0:
            penalty = raised[v] - decays if raised[v] > decays else 0
            if penalty < lowest:
                lowest, ties = penalty, 0
            if penalty == lowest:
                tied[ties] = v
                ties += 1
    if ties == 0:
        return -1, position
    if ties == 1:
        return tied[0], position
    position, word = twister(state, position)
    return tied[word % ties], position


@compiled
def _join(v: int, first: np.ndarray, missing: np.ndarray, count: np.ndarray, member: np.ndarray,
          order: np.ndarray, size: int) -> int:
    for j in range(first[v], first[v + 1]):
        count[missing[j]] += 1
    member[v] = True
    order[size] = v
    return size + 1


@compiled
def _leave(u: int, first: np.ndarray, missing: np.ndarray, count: np.ndarray, member: np.ndarray,
           order: np.ndarray, size: int) -> int:
    for j in range(first[u], first[u + 1]):
        count[missing[j]] -= 1
    member[u] = False
    at = 0
    while order[at] != u:
        at += 1
    for i in range(at, size - 1):
        order[i] = order[i + 1]
    return size - 1


@compiled
def _dls_mc_runs(n: int, first: np.ndarray, missing: np.ndarray, delays: np.ndarray, states: np.ndarray,
                 positions: np.ndarray, start: np.ndarray, steps: int, target: int, patience: int
                 ) -> tuple[np.ndarray, int, int]:
    """`local_search`'s runs, one per delay, on the non-neighbour lists (CSR `first`/`missing`).
    count[v]: members not adjacent to v (itself included), so 0 marks the common neighbours
    and 1 the swap candidates. Penalty: raised - decays, at least 0."""
    runs = delays.shape[0]
    count = np.zeros((runs, n), dtype=np.int64)
    member = np.zeros((runs, n), dtype=np.bool_)
    order = np.zeros((runs, n), dtype=np.int64)  # the clique, in the order its vertices joined
    size = np.zeros(runs, dtype=np.int64)
    raised = np.zeros((runs, n), dtype=np.int64)
    decays = np.zeros(runs, dtype=np.int64)
    updates = np.zeros(runs, dtype=np.int64)
    used = np.zeros(runs, dtype=np.int64)
    run_best = np.zeros((runs, n), dtype=np.int64)
    run_best_size = np.zeros(runs, dtype=np.int64)
    began = np.zeros(n, dtype=np.bool_)
    banned = np.zeros(n, dtype=np.bool_)
    tied = np.zeros(n, dtype=np.int64)
    best = np.zeros(n, dtype=np.int64)
    best_size = start.shape[0]
    best[:best_size] = start
    total = improved_at = 0
    while total < steps and total - improved_at < patience and best_size < target:
        r = 0  # the run with the fewest steps, the first such
        for i in range(1, runs):
            if used[i] < used[r]:
                r = i
        cnt, mem, ordr, state, position, k = count[r], member[r], order[r], states[r], positions[r], size[r]
        if k == 0:  # the run's first turn (a started run's clique is never empty)
            if start.shape[0]:
                for v in start:
                    k = _join(v, first, missing, cnt, mem, ordr, k)
            else:
                position, v = randbelow(state, position, n)
                k = _join(v, first, missing, cnt, mem, ordr, k)
        else:  # the dead end's penalties, decay and perturbation, after the turn it ended
            updates[r] += 1
            for a in range(k):
                w = ordr[a]
                raised[r, w] = decays[r] + (raised[r, w] - decays[r] if raised[r, w] > decays[r] else 0) + 1
            if updates[r] % delays[r] == 0:
                decays[r] += 1
            if delays[r] > 1:  # restart from the last vertex added
                while k > 1:
                    k = _leave(ordr[0], first, missing, cnt, mem, ordr, k)
            else:  # add a random vertex, dropping its non-neighbours (lowest first)
                position, v = randbelow(state, position, n)
                if not mem[v]:
                    for j in range(first[v], first[v + 1]):
                        if mem[missing[j]]:
                            k = _leave(missing[j], first, missing, cnt, mem, ordr, k)
                    k = _join(v, first, missing, cnt, mem, ordr, k)
            used[r] += 1
        began[:] = False
        banned[:] = False
        began_in = -1  # members of the clique the plateau began with, once the first growth ends
        while True:
            while True:  # grow
                v, position = _least(n, cnt, mem, banned, False, raised[r], decays[r], tied, state, position)
                if v < 0:
                    break
                k = _join(v, first, missing, cnt, mem, ordr, k)
                if began[v]:
                    began_in += 1
                used[r] += 1
            if began_in < 0:
                for a in range(k):
                    began[ordr[a]] = True
                began_in = k
            if k >= target or began_in == 0:
                break
            v, position = _least(n, cnt, mem, banned, True, raised[r], decays[r], tied, state, position)
            if v < 0:
                break
            u = -1
            for j in range(first[v], first[v + 1]):
                if mem[missing[j]]:
                    u = missing[j]  # the member v misses (the highest-numbered; there is one)
            k = _leave(u, first, missing, cnt, mem, ordr, k)
            if began[u]:
                began_in -= 1
            k = _join(v, first, missing, cnt, mem, ordr, k)
            banned[u] = True
            used[r] += 1
        size[r], positions[r] = k, position
        if k > run_best_size[r]:
            run_best_size[r] = k
            run_best[r, :k] = ordr[:k]
        total = used.sum()
        if run_best_size[r] > best_size:
            best_size = run_best_size[r]
            best[:best_size] = run_best[r, :best_size]
            improved_at = total
    return best, best_size, total


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
