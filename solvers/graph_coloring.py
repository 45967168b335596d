"""Graph colouring: DSatur, then one colour fewer at a time down to a clique's size (a lower
bound), by TabuCol, PartialCol and HEA (their hybrid with GPX crossover); CP-SAT exact.

The heuristic's budget, in moves (deterministic, seeded, no wall clock): for each number of
colours k, at most `step_budget(n)` steps = max(4,000, 500 n, 5 n^2) capped at 1,000,000 (n = 450:
1,000,000, about 35 CPU s of numpy PartialCol at ~30,000 moves/s), spent in this order, each
stage only if the ones before failed:
  1. TabuCol, 20 n moves, from the (k+1)-colouring with its smallest class uncoloured;
  2. PartialCol, 100 n moves, from the same start (TabuCol stalls on le450_15c at 20 colours);
  3. TabuCol, 300 n moves, from the same start (le450_15a's 15th colour takes ~50,000-130,000);
  4. TabuCol, 300 n moves, from a random colouring, drawn from a stream of its own (seeded by k),
     so that the stages after it make the moves they made before it was added: a start taken
     from the (k+1)-colouring can lie where no k-colouring is near (le450_25c at 26: the other
     stages fail in their 1 million moves; from a random start TabuCol reaches 26 in 0.1 CPU s on
     4 seeds of 5); these 300 n moves come on top of `step_budget(n)`;
  5. PartialCol from another random colouring of that stream, as the paper states it (the
     neighbours a move uncolours may not take its colour back) with a tenure of 1.5 x
     |uncoloured| + 0-9 (at the authors' 0.6 it fails half the time or more), its moves
     compiled: 15 n^2 of them, at most 4 million (n = 450: 3 million, 2-4 CPU s), also on top
     of `step_budget(n)` (le450_15c and le450_15d, relabelled at random, reach 15 here where
     the other stages end at 16 on some labellings: `long_partialcol`);
  6. HEA with PartialCol children (10 n moves each), half of what is left;
  7. HEA with TabuCol children (20 n moves each), the other half's CPU: TabuCol's moves are
     compiled (numba), 23x the numpy loop's rate on DSJC250.5 with the same moves, so this
     stage gets COMPILED_MOVES_PER_STEP = 25 moves a step (2.6 million at n = 250, which reach
     DSJC250.5's 28 colours). The gain is smaller where a move scans more (8-11x measured on
     dense or 1,000-vertex graphs): there this stage costs up to 3x the CPU it did in numpy.
At k equal to the clique's size, when local search fails and a greedy search (or, where it finds
none, an exact cover by k-cliques) splits the vertices into k-cliques (a queen graph's rows), an
exact cover of the vertices by independent sets with one vertex per clique
(`clique_cover_colouring`, each stage within a node budget) is tried last, and where the graph has
an automorphism of order 4 or 2, a cover that the one fixing the fewest vertices (a square board's
quarter turn, then an odd board's half turn) maps onto itself. Before that, wherever local search
stops above the clique's size on a graph with two commuting automorphisms that, with their product,
move every vertex (the mirrors of a queen board with even sides), a colouring with the clique's size
that both map onto itself is searched for on a quarter of the vertices (`mirrored_colouring`:
queen16_16 16, where the stages above end at 18). The automorphisms are searched for
(`symmetry.automorphisms`: colour refinement and individualisation, within a budget), not read from
the numbering, so a board renumbered at random gets them too.
The search stops at the first k it cannot reach in its budget, or when k equals the clique's
size (proven optimal). So a graph whose clique is smaller than its chromatic number (myciel,
queen6_6 to queen10_10, the generated levels without a clique) always spends one full budget at
the k it cannot reach. Where it stops at most CLIQUE_GAP = 2 colours above the clique, CP-SAT
looks for a colouring with the clique's size, the clique's colours fixed, for CLIQUE_SECONDS = 1
deterministic second (`fixed_clique_colouring`; one worker, as the exact solver runs, the model
laid down in a canonical order of the vertices, so that given the clique the answer does not
depend on the numbering, up to vertices colour refinement cannot tell apart; it depends on the
OR-Tools version, as the exact references do): the random geometric graph r250.5 gets its 65
colours in 0.3 deterministic seconds (2 CPU s), where the stages above end at 67 (TabuCol and
PartialCol keep 2-6 conflicting edges at 65 and 66 after 2 million moves). Where no such
colouring exists CP-SAT proves it at once on the generated L6-L10 graphs (67 of 100 at seed 3
are within two colours of their clique: 0.01-0.3 CPU s each, their references unchanged); where
it can decide nothing the second costs 5-10 CPU s (le450_25c/d, queen14_14, queen15_15) and more
on larger models (DSJR500.5's: 35 s, r1000.5's: 70 s a deterministic second; neither is within
two colours of its clique here). Last, where the colours stay more than CLIQUE_GAP above the
clique, the LP over independent sets (Mehrotra & Trick, INFORMS J. Computing 8, 1996: minimise
the sets chosen, each vertex covered) is priced and dived (`price_and_dive`): columns are greedy
maximal independent sets by dual weight, one from each vertex with a positive dual, added until
none prices in; then the sets at 1 (else the largest) become colours and their vertices leave
the LP, which is priced again, until all are coloured. It gives up as soon as the colours fixed
and the LP's value (rounded up) reach the count to beat, and where the first LP is far from
integral: its bound more than CLIQUE_SLACK above the clique, or not settled within ROOT_SOLVES
solves, or once the pricing has scanned DIVE_SCANS vertices. On random geometric graphs, whose
LP bound is their clique, it succeeds where local search does not: DSJR500.5 and r1000.5 get
their optima, 122 and 234 (local search: 125 and 242; the dive alone, from DSatur's 130 and 250
colours, 3-8 and 39-43 CPU s, on the file's numbering and 2-3 random renumberings, where r1000.5
got 235 once). Where the LP is far from integral (le450_25c: 25.39 for 26 colours after 73
solves; DSJC500.5: 44.7 after 310, 91 CPU s; FullIns and Insertions graphs, with independent
sets of hundreds of vertices) it finds nothing: le450_25c stops within CLIQUE_GAP of its clique,
so the dive never runs there, and those budgets end it early on the rest (docs/datasets.md: the
cost measured on the listed graphs). The pricing is greedy, so the LP's value is no proven
bound and the dive's answer no proof. One model is kept across the dive, on COIN-OR CLP
(OR-Tools' build; the stage is skipped where a build lacks it): the LP only gains columns and
loses rows, so each solve is a primal simplex from the last basis (0.14 s on r1000.5, where GLOP
re-solved from scratch in 0.6-1 s); the answer depends on the OR-Tools version, as the exact
references do.

Where mmnp differs from the publications: HEA (Galinier & Hao 1999) builds its population from
random greedy colourings and runs one long search at a fixed k; here the population is the
(k+1)-colouring with each of its 10 smallest classes dropped in turn, one k at a time, with a
budget in moves rather than generations, and a second HEA whose local search is PartialCol
(Bloechliger & Zufferey 2008; the GPX child keeps its leftover vertices uncoloured). TabuCol's
tenure is Galinier & Hao's 0.6 x conflicting vertices + 0-9; stage 2's and HEA's PartialCol
follow the authors' FOO code (marijnheule/clicolcom React-Partialcol) with a fixed, not
reactive, tenure; stage 5's follows the paper's tabu rule with a longer tenure. Mehrotra & Trick
price exactly (a weighted independent set by branch and bound) and branch on the LP (branch and
price, an exact method); here the pricing is greedy and the LP is dived once, a heuristic within
seconds.

Measured (bench_published, seed 0): le450_15a-d all 15 (1-9 CPU s; and on each of 4 random
relabellings, where le450_15c ended at 16 on 3 of 5 labellings before stage 5), DSJC250.9 72,
DSJC250.5 28 and DSJC500.1 12, the best known (16 and 57 s; with stage 7 in numpy at its 1x
share: 29 and 13), le450_25c/d 26 at 32-39 s (stage 4 on le450_25c, which ended at 27
without it; 25 is out of reach here:
docs/datasets.md), queen11_11 11 (1 s: local search 12, then the exact cover; renumbered at
random, 1.4-3 s on 8 labellings of 8, `covering_partition` and the larger cover budgets),
queen13_13 13 (9.5-11 s, on its own numbering and on 8 random ones: local search 14; over all
73,712 13-queens solutions neither Algorithm X in millions of nodes, a cover search for 360,000
steps nor CP-SAT in 418 deterministic seconds made 13, nor CP-SAT on the colouring with each
13-clique all different in 60; the cover that the quarter turn maps onto itself takes under 1,000
nodes, `turned_cover`, where the half turn's took ~27,000 on the file's numbering and more than
its 50,000 on 5 random numberings of 7). Stage
2's and HEA's PartialCol moves are numpy still (the uncoloured set is a Python set whose order
the moves follow, so a compiled copy would not make the same moves, and the generated
references would change); stage 5 is compiled from the start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from mmnp.kits.graphs import neighbour_masks
from mmnp.solvers import cpsat, symmetry
from mmnp.solvers.compiled import compiled
from mmnp.solvers.max_clique import CliqueSearch

if TYPE_CHECKING:
    from ortools.sat.python import cp_model

CLIQUE_NODES = 3_000  # branch-and-bound nodes spent on the clique that bounds the colours from below
STEPS = 4_000  # moves spent on each number of colours, at least ...
STEPS_PER_VERTEX = 500  # ... or this many per vertex ...
STEPS_PER_VERTEX_SQUARED = 5  # ... or this many per vertex squared (larger graphs need longer runs), if more
MAX_STEPS = 1_000_000  # ... and at most this many
QUICK_STEPS_PER_VERTEX = 20  # a short TabuCol run first, which settles most easy steps at once
PARTIAL_STEPS_PER_VERTEX = 100  # then PartialCol, strong on the Leighton graphs where TabuCol stalls
LONG_STEPS_PER_VERTEX = 300  # then one long TabuCol run (le450_15a: 15 in ~50,000-130,000 moves)
LONG_PARTIAL_MOVES_PER_VERTEX_SQUARED = 15  # compiled PartialCol moves from a random start (n = 450: 3 million,
MAX_LONG_PARTIAL_MOVES = 4_000_000  # ~2-4 CPU s), at most this many
LONG_TENURE_PER_UNCOLOURED = 1.5  # its tenure per uncoloured vertex (the authors': 0.6; `long_partialcol`)
POPULATION = 10  # HEA's colourings
CHILD_STEPS = 1_000  # TabuCol moves per child, at least ...
CHILD_STEPS_PER_VERTEX = 20  # ... or this many per vertex with TabuCol ...
PARTIAL_CHILD_STEPS_PER_VERTEX = 10  # ... or with PartialCol
COMPILED_MOVES_PER_STEP = 25  # compiled TabuCol moves the last HEA gets per step of its share (the same CPU)
PARTITION_NODES = 20_000  # search nodes splitting the vertices into cliques of the lower bound's size
TRANSVERSAL_NODES = 1_000_000  # search nodes listing the independent sets with one vertex per clique
#   (queen11_11's 2,680 take up to ~200,000 on the board's order, up to 1 million renumbered)
COVER_NODES = 100_000  # exact-cover search nodes over those sets (queen11_11 takes ~150 on the board's
#   order, 20,000-100,000 renumbered at random)
TURNED_TRANSVERSAL_NODES = 4_000_000  # the listing's budget where the graph has a turn (queen13_13's
#   73,712 13-queens solutions take 3.5 million, ~6 CPU s, in `linked_order`)
TURNED_MAX_CLASSES = 100_000  # ... and at most this many classes for it to pair (queen13_13: 73,712)
TURNED_COVER_NODES = 50_000  # exact-cover search nodes over the orbits of the classes under a turn ...
TURNED_COVER_WORDS = 10**10  # ... or fewer where a node's bit sets are wider: a node scans each
#   vertex's live options (about classes x vertices / 64 words; queen13_13's ~27,000 nodes, 2 s)
CLIQUE_GAP = 2  # where local search stops at most this many colours above the clique ...
CLIQUE_SECONDS = 1.0  # ... CP-SAT looks for a colouring with its size for this many deterministic seconds
CLIQUE_SLACK = 0.1  # `price_and_dive` gives up where the first LP's bound passes the clique by
#   more than this fraction (geometric graphs: 0-4.3%, the quick clique search finding 117 of
#   DSJR500.5's 122; random graphs: DSJC250.1 4 and DSJC500.5 12 against 6-7 and 44.7) ...
ROOT_SOLVES = 50  # ... or has not settled in this many LP solves (geometric graphs: 18-32;
#   le450_25c 73 and DSJC500.5 310, where the LP is far from integral) ...
DIVE_SOLVES_PER_VERTEX = 2  # ... or spends more LP solves than this per vertex (r1000.5: 273) ...
DIVE_SCANS = 5 * 10**8  # ... or its pricing scans more vertices than this (n a pick; r1000.5: 2.3 x
#   10^8, DSJR500.5: 2.5 x 10^7; 4-FullIns_5 and 3-Insertions_5, whose independent sets hold
#   hundreds of vertices, found nothing in 10^9, 9 and 21 CPU s, and 140 and 71 s unbounded)
DUAL_EPSILON = 1e-6  # the LP's tolerance: reduced costs, values at 1 and the dive's bound
MIRRORED_STARTS = 4  # random starts of the search for a colouring the board's mirrors map onto itself ...
MIRRORED_MOVES_PER_CELL = 2_000  # ... each this many TabuCol moves per quarter-board cell (queen16_16: 12 runs
#   of 12 within 4,000, 10 within 1,000; queen20_20: 6 of 8 within 16,000)


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
               rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """PartialCol (Bloechliger & Zufferey 2008, the authors' FOO variant): a proper partial
    colouring with colours 0..k-1 (-1: uncoloured) from `start`; a move gives an uncoloured
    vertex a colour and uncolours its neighbours of that colour, the move that uncolours fewest
    (ties at random); as in the authors' code, every neighbour of the moved vertex may not take
    its colour for 0.6 x |uncoloured| + 0-9 moves, unless that colours everything seen so far
    best; a random move when all are tabu. The partial colouring with fewest uncoloured
    vertices seen within `steps` moves (stopping at 0), and that count. gamma[c, v] counts v's neighbours of colour c; a move changes only row c."""
    n = len(nbrs)
    col = start.copy()
    gamma = np.zeros((k, n), dtype=np.int32)
    for v in np.flatnonzero(col >= 0).tolist():
        gamma[col[v], nbrs[v]] += 1
    out = set(np.flatnonzero(col < 0).tolist())
    best, kept = len(out), col.copy()
    tabu = np.zeros((k, n), dtype=np.int64)
    draws = rng.integers(0, 1 << 30, size=steps + 1).tolist()
    ties = rng.random(steps + 1).tolist()
    blocked, tenure = 1 << 30, 10
    for it in range(1, steps + 1):
        if not out:
            break
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
        if len(out) < best:
            best = len(out)
            kept[:] = col
    return kept, best


def long_partialcol(nbrs: list[np.ndarray], k: int, start: np.ndarray, steps: int, rng: np.random.Generator,
                    per_uncoloured: float = LONG_TENURE_PER_UNCOLOURED) -> tuple[np.ndarray, int]:
    """PartialCol as Bloechliger & Zufferey's paper states it, compiled, with a longer tenure: a
    move gives an uncoloured vertex the colour that uncolours fewest of its neighbours (ties at
    random), and each neighbour it uncolours may not take that colour back for
    LONG_TENURE_PER_UNCOLOURED x |uncoloured| + 0-9 moves (counted before they join), unless
    that leaves fewer uncoloured than the best seen; a random move when all are tabu. `start`:
    colours 0..k-1 or -1; a vertex sharing its colour with a lower-numbered neighbour that keeps
    its colour starts uncoloured. The partial colouring with fewest uncoloured vertices seen
    within `steps` moves (stopping at 0), and that count. From 8 random 15-colourings each of
    le450_15c and le450_15d, on the file's numbering and renumbered (`default_rng(1)`), it
    reaches 15 within 2 million moves 8 times in 8 on all four at 1.5 (0.2-0.5 CPU s a run); at
    the authors' 0.6, 3, 4, 1 and 1 times (1 CPU s a run). Renumbered at random, le450_15c ended
    at 16 on 3 labellings in 5 before this stage was added."""
    if k < 1 or (len(start) and not -1 <= int(start.min()) <= int(start.max()) < k):
        raise ValueError(f"long_partialcol: {k} colours, a start with colours {int(start.min())}..{int(start.max())}")
    draws = rng.integers(0, 10, size=steps + 1, dtype=np.int8)  # tenure noise, then tie draws
    ties = rng.random(steps + 1, dtype=np.float32)
    kept, best = _partialcol_moves(*_csr(nbrs), k, start.astype(np.int64), steps, draws, ties, per_uncoloured)
    return kept, int(best)


@compiled
def _partialcol_moves(indptr: np.ndarray, indices: np.ndarray, k: int, col: np.ndarray, steps: int,
                      draws: np.ndarray, ties: np.ndarray, per_uncoloured: float) -> tuple[np.ndarray, int]:
    """`long_partialcol`'s moves on a CSR graph (`col` is changed in place): each move scans the
    uncoloured vertices in the order of their list and the colours in order, and takes option
    int(ties[it] x options) in that order."""
    n = len(col)
    for v in range(n):  # proper: a vertex whose colour a lower-numbered neighbour still has leaves it
        if col[v] >= 0:
            for j in range(indptr[v], indptr[v + 1]):
                if indices[j] < v and col[indices[j]] == col[v]:
                    col[v] = -1
                    break
    gamma = np.zeros((n, k), dtype=np.int64)  # gamma[v, c]: v's neighbours of colour c
    for v in range(n):
        if col[v] >= 0:
            for j in range(indptr[v], indptr[v + 1]):
                gamma[indices[j], col[v]] += 1
    out = np.empty(n, dtype=np.int64)  # the uncoloured vertices, `spot` their places
    spot = np.full(n, -1, dtype=np.int64)
    size = 0
    for v in range(n):
        if col[v] < 0:
            out[size], spot[v] = v, size
            size += 1
    best, kept = size, col.copy()
    tabu = np.zeros((n, k), dtype=np.int64)
    options = np.empty(n * k, dtype=np.int64)
    for it in range(1, steps + 1):
        if size == 0:
            break
        low, count = n + 1, 0
        for i in range(size):
            v = out[i]
            for c in range(k):
                change = gamma[v, c] - 1
                if tabu[v, c] >= it and size + change >= best:
                    continue
                if change < low:
                    low, count = change, 0
                if change == low:
                    options[count] = i * k + c
                    count += 1
        at = options[int(ties[it] * count)] if count else int(ties[it] * size * k)  # all tabu: a random move
        v, c = out[at // k], at % k
        size -= 1
        last = out[size]
        out[spot[v]], spot[last], spot[v] = last, spot[v], -1
        col[v] = c
        for j in range(indptr[v], indptr[v + 1]):
            gamma[indices[j], c] += 1
        tenure = int(per_uncoloured * size) + draws[it]
        for j in range(indptr[v], indptr[v + 1]):
            u = indices[j]
            if col[u] == c:
                col[u] = -1
                out[size], spot[u] = u, size
                size += 1
                tabu[u, c] = it + tenure
                for x in range(indptr[u], indptr[u + 1]):
                    gamma[indices[x], c] -= 1
        if size < best:
            best = size
            kept[:] = col
    return kept, best


def tabucol(nbrs: list[np.ndarray], k: int, start: np.ndarray, steps: int,
            rng: np.random.Generator, twists: list[np.ndarray] | None = None) -> tuple[np.ndarray, int]:
    """TabuCol (Hertz & de Werra 1987, with Galinier & Hao's tenure 0.6 x conflicting vertices +
    0-9): a complete colouring with colours 0..k-1 from `start` (uncoloured vertices take their
    least conflicting colour); move a conflicting vertex to the colour that lowers the conflicts
    most (ties at random), not back to a colour it left within its tenure unless that beats the
    best count so far. The colouring with fewest conflicting edges seen within `steps` moves
    (stopping at 0), and that count. `nbrs[v]` lists v's neighbours once each (the heuristic's
    lists do; with twists, once per neighbour and twist). The moves are `_tabucol_moves`,
    compiled by numba (about 600,000 a second on DSJC250.5 at 28 colours, 23x the numpy loop
    this replaced, whose moves they equal: tests/test_heuristic_graph_coloring.py). With
    `twists` (aligned with `nbrs`, each in 0..3, k a multiple of 4) an edge to u with twist t
    asks colour != u's colour XOR t: the quarter board of a colouring that the board's mirrors
    map onto itself (`mirrored_colouring`)."""
    if k < 1 or (len(start) and int(start.max()) >= k):
        raise ValueError(f"tabucol: {k} colours, a start with colour {int(start.max()) if len(start) else None}")
    if twists is not None and k % 4:
        raise ValueError(f"tabucol: {k} colours with twists, which XOR colours in fours")
    draws = rng.integers(0, 10, size=steps + 1)  # tenure noise, then tie draws: one stream, as always
    ties = rng.random(steps + 1)
    indptr, indices = _csr(nbrs)
    flips = np.zeros_like(indices) if twists is None else _csr(twists)[1]
    kept, best = _tabucol_moves(indptr, indices, flips, k, start.astype(np.int64), steps, draws, ties)
    return kept, int(best)


def _csr(nbrs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The neighbour lists as the compiled moves take them: (indptr, indices), int64."""
    sizes = np.fromiter(map(len, nbrs), dtype=np.int64, count=len(nbrs))
    indptr = np.concatenate([[0], np.cumsum(sizes)])
    indices = np.concatenate(nbrs).astype(np.int64) if len(nbrs) else np.zeros(0, dtype=np.int64)
    return indptr, indices


@compiled
def _tabucol_moves(indptr: np.ndarray, indices: np.ndarray, twists: np.ndarray, k: int, col: np.ndarray,
                   steps: int, draws: np.ndarray, ties: np.ndarray) -> tuple[np.ndarray, int]:
    """TabuCol's moves on a CSR graph (`col` is changed in place): each move scans the
    conflicting vertices in id order and their colours in order for the lowest change in
    conflicts (gamma[v, c] counts v's neighbours u with col[u] ^ twist = c; the twists are 0 on a
    plain graph), skipping a vertex's own colour
    and tabu colours that do not beat the best count, and takes option int(ties[it] x options)
    in that order; no move while every option is tabu."""
    n, plain = len(col), not twists.any()
    gamma = np.zeros((n, k), dtype=np.int64)
    for v in range(n):
        if col[v] >= 0:
            for j in range(indptr[v], indptr[v + 1]):
                gamma[indices[j], col[v] ^ twists[j]] += 1
    for v in range(n):  # uncoloured vertices, in id order, take their first least conflicting colour
        if col[v] < 0:
            c = 0
            for x in range(1, k):
                if gamma[v, x] < gamma[v, c]:
                    c = x
            col[v] = c
            for j in range(indptr[v], indptr[v + 1]):
                gamma[indices[j], c ^ twists[j]] += 1
    conflicts = 0
    for v in range(n):
        conflicts += gamma[v, col[v]]
    conflicts //= 2
    best, kept = conflicts, col.copy()
    tabu = np.zeros((n, k), dtype=np.int64)
    blocked = n * n + 1
    options = np.empty(n * k, dtype=np.int64)
    bad = np.empty(n, dtype=np.int64)
    for it in range(1, steps + 1):
        if conflicts == 0:
            break
        nbad, low, count = 0, blocked, 0
        for v in range(n):
            own = gamma[v, col[v]]
            if own <= 0:
                continue
            for c in range(k):
                if c == col[v]:
                    continue
                change = gamma[v, c] - own
                if tabu[v, c] >= it and conflicts + change >= best:
                    continue
                if change < low:
                    low, count = change, 0
                if change == low:
                    options[count] = nbad * k + c
                    count += 1
            bad[nbad] = v
            nbad += 1
        if low >= blocked:
            continue  # every move tabu: wait for a tenure to end
        at = options[int(ties[it] * count)]
        v, c = bad[at // k], at % k
        old = col[v]
        col[v] = c
        if plain:  # the same update with every twist 0, without reading them (~9% of the moves' time)
            for j in range(indptr[v], indptr[v + 1]):
                gamma[indices[j], old] -= 1
                gamma[indices[j], c] += 1
        else:
            for j in range(indptr[v], indptr[v + 1]):
                gamma[indices[j], old ^ twists[j]] -= 1
                gamma[indices[j], c ^ twists[j]] += 1
        conflicts += low
        if conflicts < best:
            best = conflicts
            kept[:] = col
        tabu[v, old] = it + int(0.6 * nbad) + draws[it]
    return kept, best


def gpx(first: np.ndarray, second: np.ndarray, k: int, rng: np.random.Generator | None) -> np.ndarray:
    """Greedy partition crossover (Galinier & Hao 1999): colour l of the child is the largest
    class left in parent l mod 2 (-1: uncoloured, in no class), whose vertices leave both
    parents; the vertices left after k classes take random colours, or stay -1 without `rng`
    (PartialCol's children). Lewis's code (hybridea/xover.cpp, multiParent with 2 parents)
    takes the first class from either parent and breaks ties at random; here, as in the paper,
    the first parent starts, and the lowest-numbered largest class wins ties."""
    child = np.full(len(first), -1, dtype=np.int64)
    left = np.ones(len(first), dtype=bool)
    for colour in range(k):
        parent = first if colour % 2 == 0 else second
        sizes = np.bincount(parent[left] + 1, minlength=k + 1)[1:]  # -1: uncoloured
        taken = left & (parent == int(np.argmax(sizes)))
        child[taken] = colour
        left &= ~taken
    if rng is not None:
        child[left] = rng.integers(0, k, size=int(left.sum()))
    return child


def hybrid(nbrs: list[np.ndarray], colouring: np.ndarray, steps: int, rng: np.random.Generator,
           partial: bool) -> np.ndarray | None:
    """HEA (Galinier & Hao 1999) for one colour fewer than `colouring` (colours 0..k): a
    population of POPULATION k-colourings, each `colouring` with one of its classes dropped
    (smallest first, its vertices then placed by TabuCol) and improved by TabuCol; then a child
    of two random members by GPX, improved by TabuCol, replaces the worse of its two parents.
    With `partial`, PartialCol instead of TabuCol (fitness: uncoloured vertices instead of
    conflicting edges; GPX leaves its leftovers uncoloured). Each run is CHILD_STEPS_PER_VERTEX
    (PARTIAL_CHILD_STEPS_PER_VERTEX) x n moves, at least CHILD_STEPS; a proper k-colouring, or
    None after `steps` moves in all (population included)."""
    n, k = len(nbrs), int(colouring.max())
    length = max(CHILD_STEPS, (PARTIAL_CHILD_STEPS_PER_VERTEX if partial else CHILD_STEPS_PER_VERTEX) * n)
    search = partialcol if partial else tabucol
    order = np.argsort(np.bincount(colouring, minlength=k + 1), kind="stable")
    population, conflicts = [], []
    for i in range(min(POPULATION, steps // length)):
        drop = int(order[i % (k + 1)])
        start = np.where(colouring == drop, -1, colouring)
        start[start == k] = drop
        found, count = search(nbrs, k, start, length, rng)
        if count == 0:
            return found
        population.append(found)
        conflicts.append(count)
    for _ in range(steps // length - POPULATION if len(population) == POPULATION else 0):
        a, b = (int(x) for x in rng.choice(POPULATION, size=2, replace=False))
        child, count = search(nbrs, k, gpx(population[a], population[b], k, None if partial else rng), length, rng)
        if count == 0:
            return child
        worse = a if conflicts[a] >= conflicts[b] else b
        population[worse], conflicts[worse] = child, count
    return None


def fewer_colours(nbrs: list[np.ndarray], colouring: np.ndarray, rng: np.random.Generator) -> np.ndarray | None:
    """A colouring with one colour fewer than `colouring` (colours 0..k), or None: a short
    TabuCol run (QUICK_STEPS_PER_VERTEX moves per vertex) from `colouring` with its smallest
    class uncoloured and the top colour renamed into its place, which settles most steps at
    once; then PartialCol and a long TabuCol run from the same start; then a long TabuCol run
    and a long-tenure PartialCol run from random colourings; then HEA with PartialCol, then with
    TabuCol, halving what is left of `step_budget` (module docstring)."""
    n, k = len(nbrs), int(colouring.max())
    drop = int(np.argmin(np.bincount(colouring, minlength=k + 1)))
    start = np.where(colouring == drop, -1, colouring)
    start[start == k] = drop
    found, count = tabucol(nbrs, k, start, QUICK_STEPS_PER_VERTEX * n, rng)
    if count == 0:
        return found
    found, count = partialcol(nbrs, k, start, PARTIAL_STEPS_PER_VERTEX * n, rng)
    if count == 0:
        return found
    found, count = tabucol(nbrs, k, start, LONG_STEPS_PER_VERTEX * n, rng)
    if count == 0:
        return found
    fresh = np.random.default_rng(k)  # its own stream: the stages after it draw what they drew before it
    found, count = tabucol(nbrs, k, fresh.integers(0, k, n), LONG_STEPS_PER_VERTEX * n, fresh)
    if count == 0:
        return found
    found, count = long_partialcol(nbrs, k, fresh.integers(0, k, n),
                                   min(MAX_LONG_PARTIAL_MOVES, LONG_PARTIAL_MOVES_PER_VERTEX_SQUARED * n * n), fresh)
    if count == 0:
        return found
    half = (step_budget(n) - (QUICK_STEPS_PER_VERTEX + PARTIAL_STEPS_PER_VERTEX + LONG_STEPS_PER_VERTEX) * n) // 2
    found = hybrid(nbrs, colouring, half, rng, partial=True)
    if found is not None:
        return found
    # TabuCol's compiled moves cost ~1/25 of a numpy step: its HEA gets as many more for its CPU
    return hybrid(nbrs, colouring, half * COMPILED_MOVES_PER_STEP, rng, partial=False)


def _members(mask: int) -> list[int]:
    """The positions of the set bits, lowest first."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def clique_partition(masks: list[int], k: int, nodes: int) -> list[list[int]] | None:
    """The vertices split into disjoint k-cliques, each the lexicographically first k-clique
    through the lowest vertex left (a rows-first split of a queen graph), or None: no such
    clique, or more than `nodes` search nodes. Greedy: a split that starts elsewhere is missed."""
    left, parts = (1 << len(masks)) - 1, []
    while left:
        v = (left & -left).bit_length() - 1
        stack, clique = [([v], left & masks[v])], None
        while stack:
            members, candidates = stack.pop()
            if len(members) == k:
                clique = members
                break
            nodes -= 1
            if nodes < 0:
                return None
            if len(members) + candidates.bit_count() < k:
                continue
            children = [(members + [u], candidates >> (u + 1) << (u + 1) & masks[u])  # later candidates only
                        for u in _members(candidates)]
            stack.extend(reversed(children))  # lowest vertex first
        if clique is None:
            return None
        parts.append(clique)
        left &= ~sum(1 << u for u in clique)
    return parts


def covering_partition(masks: list[int], k: int, nodes: int) -> list[list[int]] | None:
    """The vertices split into disjoint k-cliques however they are numbered, or None: every
    k-clique listed (from its lowest vertex; a branch ends when the candidates left cannot make
    k), then an exact cover of the vertices by them (Algorithm X), within `nodes` search nodes
    in all. Where `clique_partition`'s greedy split, which follows the numbering, finds none (a
    queen graph renumbered at random: 1 labelling in 8 of queen11_11), this finds its rows or
    columns."""
    cliques: list[int] = []
    for v in range(len(masks)):
        stack = [(1 << v, masks[v] >> (v + 1) << (v + 1), 1)]
        while stack:
            members, candidates, size = stack.pop()
            nodes -= 1
            if nodes < 0:
                return None
            if size == k:
                cliques.append(members)
            elif size + candidates.bit_count() >= k:
                stack.extend((members | 1 << u, candidates >> (u + 1) << (u + 1) & masks[u], size + 1)
                             for u in _members(candidates))
    picked = exact_cover(cliques, (1 << len(masks)) - 1, nodes)
    return None if picked is None else [_members(cliques[i]) for i in sorted(picked)]


def linked_order(parts: list[list[int]], masks: list[int]) -> list[list[int]]:
    """`parts` from the first on, each next the one with the most edges to those before it (the
    lowest index among equals): the order in which `transversals` prunes soonest, whatever the
    numbering. A queen board's rows come out each next to one before it (adjacent rows share the
    most attacks), as `clique_partition` finds them on the file's numbering; renumbered at random
    they come in any order, and listing queen13_13's 73,712 solutions took over 4 million nodes
    (3.5 million in the board's order)."""
    if not parts:
        return parts
    spans = [sum(1 << v for v in part) for part in parts]
    links = [[sum((masks[v] & span).bit_count() for v in part) for span in spans] for part in parts]
    order, left = [0], list(range(1, len(parts)))
    while left:
        best = max(left, key=lambda i: (sum(links[i][j] for j in order), -i))
        left.remove(best)
        order.append(best)
    return [parts[i] for i in order]


def transversals(parts: list[list[int]], masks: list[int], nodes: int) -> list[int] | None:
    """Every independent set with one vertex in each part (as bit masks, in the lexicographic
    order of the chosen vertices), or None after `nodes` search nodes and sets found (each
    costs one: the list is what the cover search then works on); a branch ends as soon as a
    later part has no vertex left that is not a chosen vertex's neighbour."""
    spans = [sum(1 << v for v in part) for part in parts]
    found, stack = [], [(0, 0, 0)]  # (parts chosen from, chosen vertices, their neighbours)
    while stack:
        depth, chosen, blocked = stack.pop()
        nodes -= 1
        if nodes < 0:
            return None
        if depth == len(parts):
            found.append(chosen)
            continue
        if all(span & ~blocked for span in spans[depth + 1:]):  # else a later part has no vertex left
            stack.extend((depth + 1, chosen | 1 << v, blocked | masks[v])
                         for v in reversed(parts[depth]) if not blocked >> v & 1)
    return found


def exact_cover(sets: list[int], universe: int, nodes: int) -> list[int] | None:
    """Indices of pairwise disjoint `sets` (bit masks, each within `universe`) whose union is
    `universe`, or None: there are none, or the search tried more than `nodes` sets. Knuth's
    Algorithm X on bit sets: the live sets are one integer's bits, and each step branches on
    the element fewest live sets hold."""
    if not universe:
        return []
    elements = [_members(s) for s in sets]
    holders: dict[int, int] = {}
    for i, members in enumerate(elements):
        for e in members:
            holders[e] = holders.get(e, 0) | 1 << i

    def options(alive: int, left: int) -> list[int]:
        fewest, count = None, len(sets) + 1
        for e in _members(left):
            live = holders.get(e, 0) & alive
            size = live.bit_count()
            if size < count:
                fewest, count = live, size
                if not count:
                    break
        return _members(fewest or 0)

    everything = (1 << len(sets)) - 1
    chosen: list[int] = []  # one set per frame above the first
    stack = [(everything, universe, iter(options(everything, universe)))]
    while stack:
        alive, left, untried = stack[-1]
        pick = next(untried, None)
        if pick is None:
            stack.pop()
            if chosen:
                chosen.pop()
            continue
        nodes -= 1
        if nodes < 0:
            return None
        rest = left & ~sets[pick]
        if not rest:
            return chosen + [pick]
        live = alive
        for e in elements[pick]:
            live &= ~holders[e]
        following = options(live, rest)
        if following:
            stack.append((live, rest, iter(following)))
            chosen.append(pick)
    return None


def turned_cover(classes: list[int], image: list[int], universe: int, nodes: int) -> list[int] | None:
    """Pairwise disjoint `classes` covering `universe` and mapped onto each other by the
    automorphism `image` (`classes` closed under it, as the list of every transversal is; a class
    whose image is not listed may come back as that image), or None (none, or more than `nodes`
    search nodes): the exact cover of the vertices by the unions of the classes' orbits under it
    whose members are pairwise disjoint (a class it fixes, a pair it swaps, four it turns round),
    fewer options of more vertices each, so the search is much shallower. queen13_13's linear
    colourings are such covers: (2 row + column) mod 13 under the half turn, found among 22,532
    options in ~27,000 nodes where over all 73,712 solutions Algorithm X finds none in millions, and
    (5 row + column) mod 13 under the quarter turn (5 x 5 = -1 mod 13), found among 3,432 options in
    under 1,000 nodes."""
    def turned(mask: int) -> int:
        return sum(1 << image[v] for v in _members(mask))

    options, orbits, seen = [], [], set()
    for mask in classes:
        orbit, union, other = [mask], mask, turned(mask)
        while other != mask and not other & union:
            orbit.append(other)
            union |= other
            other = turned(other)
        if other == mask and union not in seen:  # closed, its members pairwise disjoint
            seen.add(union)
            options.append(union)
            orbits.append(orbit)
    picked = exact_cover(options, universe, nodes)
    return None if picked is None else [member for i in picked for member in orbits[i]]


def mirrored_colouring(n: int, edges: np.ndarray, k: int, group: list[np.ndarray]) -> np.ndarray | None:
    """A k-colouring (k a multiple of 4) that two commuting automorphisms a and b of `group`
    (`symmetry.free_klein`: a board's two mirrors) map onto itself, colours swapped in fours
    (colour c of vertex x is c XOR 1 on a(x), c XOR 2 on b(x), c XOR 3 on a(b(x))), or None:
    TabuCol on one vertex of each orbit {x, a x, b x, a b x}, where an edge from x's image under
    t to y's under u asks col(x) != col(y) XOR t XOR u, so the search is over a quarter of the
    vertices, MIRRORED_STARTS runs of MIRRORED_MOVES_PER_CELL moves a cell.
    Vasquez & Habet (ECAI 2004) saw both mirrors in the colour layout of queen12_12's 454
    12-colourings and used symmetries in an exact, incomplete tree search (no public code); this
    is local search on the symmetric board instead. It takes 0.1-0.3 CPU s on queen16_16, where the
    stages before end at 18; queen20_20 (22) and queen24_24 need more moves than it gets on most
    seeds (docs/datasets.md). It finds only colourings whose classes all go in fours (k a
    multiple of 4). A queen board's classes are n queens each, one a row, so no mirror maps a
    class onto itself (hence no n-colouring of an odd board has a mirror: it fixes the middle
    column's cells, hence their classes); the half turn may, and then the mirrors pair its
    classes. On queen14_14 some do (420 of the 365,596 solutions are their own half turn), and
    the exact cover by the orbits of pairs and fours (42,822 options) finds none within 1 million
    nodes."""
    pair = symmetry.free_klein(group) if k >= 4 and k % 4 == 0 else None
    if pair is None:
        return None
    images = np.stack([np.arange(n), pair[0], pair[1], pair[0][pair[1]]])  # x's images under 1, a, b, a b
    first = images.min(axis=0)  # the orbit's least vertex, where its colour is kept
    twist = np.argmax(images[:, first] == np.arange(n), axis=0)  # which image of it x is: 0..3
    quarter = np.searchsorted(np.unique(first), first)
    cells = n // 4
    u, v = quarter[edges[:, 0]], quarter[edges[:, 1]]
    t = twist[edges[:, 0]] ^ twist[edges[:, 1]]
    if ((u == v) & (t == 0)).any():  # a vertex its own neighbour: no colouring
        return None
    keep = u != v  # a cell and its own image differ in colour whatever it is (XOR 1, 2 or 3)
    keys = np.unique(np.concatenate([(u * cells + v) * 4 + t, (v * cells + u) * 4 + t])[np.tile(keep, 2)])
    ends, flips = np.divmod(keys, 4)
    starts, ends = np.divmod(ends, cells)
    cut = np.searchsorted(starts, np.arange(1, cells))
    nbrs, twists = np.split(ends, cut), np.split(flips, cut)
    rng = np.random.default_rng(k)
    for _ in range(MIRRORED_STARTS):
        found, count = tabucol(nbrs, k, rng.integers(0, k, cells), MIRRORED_MOVES_PER_CELL * cells, rng, twists)
        if count == 0:
            return found[quarter] ^ twist
    return None


def clique_cover_colouring(masks: list[int], k: int, group: list[np.ndarray]) -> np.ndarray | None:
    """A k-colouring (colours 0..k-1) of a graph whose vertices split into k-cliques, or None.
    Each clique then holds every colour once, so a colour class is an independent set with one
    vertex per clique, and a k-colouring is an exact cover of the vertices by k such sets:
    listed, then covered by Algorithm X, each within a node budget; where that finds none, a
    cover that an automorphism of `group` maps onto itself (`turned_cover`), with larger budgets:
    of order 4 (a square board's quarter turn), then of order 2 (an odd board's half turn), each
    the one fixing the fewest vertices. The n x n queen graph (n coprime to 6) is the case in
    point: its n-colourings are n disjoint n-queens solutions, which local search does not find
    (queen11_11: 6-9 conflicts left by TabuCol, PartialCol and HEA) and this finds: queen11_11 in
    ~150 cover steps, queen13_13 by the quarter turn (module docstring)."""
    n = len(masks)
    if k < 2 or n % k:
        return None
    parts = clique_partition(masks, k, PARTITION_NODES) or covering_partition(masks, k, PARTITION_NODES)
    if parts is None:
        return None
    parts = linked_order(parts, masks)
    everything = (1 << n) - 1
    classes = transversals(parts, masks, TRANSVERSAL_NODES)
    picked = None if classes is None else exact_cover(classes, everything, COVER_NODES)
    chosen = None if picked is None else [classes[i] for i in picked]
    if chosen is None:  # a cover that a quarter turn, else an involution, maps onto itself
        turns = [turn for turn in (symmetry.quarter_turn(group), symmetry.involution(group)) if turn is not None]
        if turns and classes is None:
            classes = transversals(parts, masks, TURNED_TRANSVERSAL_NODES)
        if turns and classes is not None and len(classes) <= TURNED_MAX_CLASSES:
            nodes = min(TURNED_COVER_NODES, TURNED_COVER_WORDS // (len(classes) * n // 64 + 1))
            for turn in turns:
                chosen = chosen or turned_cover(classes, turn.tolist(), everything, nodes)
    if chosen is None:
        return None
    colouring = np.empty(n, dtype=np.int64)
    for colour, mask in enumerate(chosen):
        colouring[_members(mask)] = colour
    return colouring


def heuristic(data: dict) -> list[int]:
    adj = _adjacency(data)
    # each neighbour once (a hand-made record may repeat an edge): what the moves count
    nbrs = [np.fromiter(dict.fromkeys(a), dtype=np.intp) for a in adj]
    best = np.asarray(dsatur(adj), dtype=np.int64) - 1
    clique = large_clique(data)
    lower = len(clique)
    rng = np.random.default_rng(0)
    while data["n"] and best.max() + 1 > lower:
        better = fewer_colours(nbrs, best, rng)
        group: list[np.ndarray] = []
        mirrorable = lower % 4 == 0 and data["n"] % 4 == 0
        coverable = best.max() == lower and data["n"] % lower == 0
        if better is None and (mirrorable or coverable):  # the searches below could use symmetries
            edges = np.asarray(data["edges"], dtype=np.int64).reshape(-1, 2)
            group = symmetry.automorphisms(data["n"], edges)
            better = mirrored_colouring(data["n"], edges, lower, group)  # the bound itself (queen boards)
        if better is None and best.max() == lower:  # the last colour, where local search fails on queens
            better = clique_cover_colouring(neighbour_masks(data), lower, group)
        if better is None:
            break
        best = better
    if data["n"] and 0 < best.max() + 1 - lower <= CLIQUE_GAP:  # stopped a colour or two above the clique
        fewer = fixed_clique_colouring(data, clique, CLIQUE_SECONDS)
        best = best if fewer is None else fewer
    if data["n"] and best.max() + 1 - lower > CLIQUE_GAP:  # further above: the LP over independent sets
        fewer = price_and_dive(adj, best, lower)
        best = best if fewer is None else fewer
    return [int(c) + 1 for c in best]


@compiled
def _price(adjacent: np.ndarray, duals: np.ndarray, alive: np.ndarray, seeds: np.ndarray,
           budget: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Pricing for `price_and_dive`: from each seed (in order, while its dual is positive) a
    maximal independent set of live vertices, grown greedily by the largest dual (the lowest
    vertex on ties); those whose duals sum past 1 (a negative reduced cost) are returned, each
    sorted, as members and offsets, with the vertices scanned (n a pick), stopping once these
    pass `budget`."""
    n = adjacent.shape[0]
    members = np.empty(8 * n, dtype=np.int64)
    offsets = np.zeros(len(seeds) + 1, dtype=np.int64)
    free = np.empty(n, dtype=np.bool_)
    chosen = np.empty(n, dtype=np.int64)
    count = 0
    used = 0
    scanned = 0
    for seed in seeds:
        if duals[seed] <= DUAL_EPSILON or scanned > budget:
            break
        for u in range(n):
            free[u] = alive[u] and not adjacent[seed, u]
        free[seed] = False
        chosen[0] = seed
        size = 1
        weight = duals[seed]
        while True:
            scanned += n
            pick = -1
            pick_dual = -1.0
            for v in range(n):
                if free[v] and duals[v] > pick_dual:
                    pick = v
                    pick_dual = duals[v]
            if pick < 0:
                break
            chosen[size] = pick
            size += 1
            weight += pick_dual
            for u in range(n):
                if adjacent[pick, u]:
                    free[u] = False
            free[pick] = False
        if weight > 1 + DUAL_EPSILON:
            if used + size > len(members):
                grown = np.empty(2 * (used + size), dtype=np.int64)
                grown[:used] = members[:used]
                members = grown
            members[used:used + size] = np.sort(chosen[:size])
            used += size
            count += 1
            offsets[count] = used
    return members[:used], offsets[:count + 1], scanned


def price_and_dive(adj: list[list[int]], colouring: np.ndarray, clique: int) -> np.ndarray | None:
    """A colouring with fewer colours than `colouring` (0-based), or None: Mehrotra & Trick's LP
    over independent sets (minimise the sets chosen, each vertex covered), its columns priced in
    by `_price`, then dived: the sets at 1 (else the largest) become colours, their vertices leave
    the LP, columns are priced again, until every vertex has a colour. It gives up as soon as the
    colours fixed plus the LP's value (rounded up) reach `colouring`'s count, and where the first
    LP is far from integral: its bound (Farley's, the LP's value over the largest column priced)
    more than CLIQUE_SLACK above the `clique`'s size, or not settled in ROOT_SOLVES. One incremental
    COIN-OR CLP model (primal simplex from the last basis), since the LP only gains columns and
    loses rows (module docstring)."""
    from ortools.linear_solver import pywraplp

    lp = pywraplp.Solver.CreateSolver("CLP")
    if lp is None:  # an OR-Tools build without COIN-OR
        return None
    n, target = len(adj), int(colouring.max()) + 1
    adjacent = np.zeros((n, n), dtype=np.bool_)
    for v, neighbours in enumerate(adj):
        adjacent[v, neighbours] = True
    adjacent[np.arange(n), np.arange(n)] = False
    rows = [lp.Constraint(1, lp.infinity()) for _ in range(n)]
    objective = lp.Objective()
    objective.SetMinimization()
    columns: list[tuple[int, ...]] = []
    variables: list = []
    known: set[tuple[int, ...]] = set()
    scans = DIVE_SCANS

    def add(column: tuple[int, ...]) -> bool:
        if column in known:
            return False
        known.add(column)
        x = lp.NumVar(0, lp.infinity(), "")
        objective.SetCoefficient(x, 1)
        for v in column:
            rows[v].SetCoefficient(x, 1)
        columns.append(column)
        variables.append(x)
        return True

    for c in range(target):
        if (members := np.flatnonzero(colouring == c)).size:
            add(tuple(members.tolist()))
    params = pywraplp.MPSolverParameters()
    params.SetIntegerParam(params.LP_ALGORITHM, params.PRIMAL)
    alive = np.ones(n, dtype=np.bool_)
    classes: list[list[int]] = []
    for solves in range(1, DIVE_SOLVES_PER_VERTEX * n + 1):
        if lp.Solve(params) != lp.OPTIMAL:
            return None
        duals = np.array([row.dual_value() for row in rows])
        duals[~alive] = 0
        found, offsets, scanned = _price(adjacent, duals, alive, np.argsort(-duals, kind="stable"), scans)
        scans -= scanned
        if scans < 0:
            return None  # pricing has spent its budget (large independent sets, many rounds)
        if not classes:  # the first LP: give up where it is far from integral
            priced = np.add.reduceat(duals[found], offsets[:-1]).max() if len(offsets) > 1 else 1.0
            if objective.Value() / priced > (1 + CLIQUE_SLACK) * clique:
                return None
        if sum(add(tuple(found[a:b].tolist())) for a, b in zip(offsets[:-1], offsets[1:])):
            if not classes and solves >= ROOT_SOLVES:
                return None  # the first LP tails off
            continue  # solve again with the new columns
        if np.ceil(len(classes) + objective.Value() - DUAL_EPSILON) >= target:
            return None  # this dive cannot beat `colouring`
        values = np.array([x.solution_value() for x in variables])
        order = np.argsort(-values, kind="stable")
        for j in [j for j in order if values[j] > 1 - DUAL_EPSILON] or order[:1].tolist():
            if members := [v for v in columns[j] if alive[v]]:
                classes.append(members)
                alive[members] = False
                for v in members:
                    rows[v].SetBounds(-lp.infinity(), lp.infinity())
        if not alive.any():
            if len(classes) >= target:
                return None
            fewer = np.empty(n, dtype=np.int64)
            for c, members in enumerate(classes):
                fewer[members] = c
            return fewer
    return None


def optimal(data: dict, time_limit: float, hint: list[int]) -> tuple[list[int], bool]:
    """CP-SAT on colour indices (as many as DSatur needs) with a large clique's colours fixed
    (symmetry breaking)."""
    model, x = _colouring_model(data, large_clique(data), max(dsatur(_adjacency(data)), default=1))
    solver, proven = cpsat.solve(model, time_limit)  # the hint stays out (mmnp.solvers.cpsat)
    if not proven and cpsat.settles(solver, len(set(hint)), minimize=True):
        return hint, True
    return [solver.Value(xi) + 1 for xi in x], proven


def fixed_clique_colouring(data: dict, clique: list[int], time_limit: float) -> np.ndarray | None:
    """A colouring with as many colours as `clique` has vertices (0-based), or None: CP-SAT
    within `time_limit` deterministic seconds, the clique's colours fixed, which leaves it
    little to branch on where local search stops just above the clique (module docstring). The
    model is built in `symmetry.canonical_order`, so that given the clique the answer does not
    depend on the numbering (r250.5 renumbered at random, seeds 1-3: 0.37-3.8 deterministic seconds to 65
    colours in the numbering's order, 0.09 in the file's; 0.32 on all four in this order)."""
    edges = np.asarray(data["edges"], dtype=np.int64).reshape(-1, 2)
    model, x = _colouring_model(data, clique, len(clique), minimise=False,
                                order=symmetry.canonical_order(data["n"], edges))
    try:
        solver, _ = cpsat.solve(model, time_limit)
    except cpsat.NoSolution:
        return None
    return np.array([solver.Value(xi) for xi in x], dtype=np.int64)


def _colouring_model(data: dict, clique: list[int], colours: int, minimise: bool = True,
                     order: np.ndarray | None = None) -> tuple[cp_model.CpModel, list]:
    """Colours 0..colours-1, adjacent vertices apart, clique member i coloured i; the number of
    colours used minimised, or any such colouring. With `order`, the variables, edges and clique
    members are laid down in that order of the vertices rather than by number."""
    from ortools.sat.python import cp_model

    n, edges = data["n"], data["edges"]
    if order is not None:
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n)
        edges = sorted((sorted(edge, key=rank.__getitem__) for edge in edges),
                       key=lambda edge: (rank[edge[0]], rank[edge[1]]))
        clique = sorted(clique, key=rank.__getitem__)
    model = cp_model.CpModel()
    x: list = [None] * n
    for v in range(n) if order is None else order.tolist():
        x[v] = model.NewIntVar(0, colours - 1, "")
    for u, v in edges:
        model.Add(x[u] != x[v])
    for i, v in enumerate(clique):
        model.Add(x[v] == i)
    if minimise:
        used = model.NewIntVar(1, colours, "")
        model.AddMaxEquality(used, [xi + 1 for xi in x])
        model.Minimize(used)
    return model, x


def random(data: dict, rng: np.random.Generator) -> list[int]:
    """Uniform colours from as many as DSatur needs: usually some conflict."""
    k = max(dsatur(_adjacency(data)), default=1)
    return [int(c) for c in rng.integers(1, k + 1, size=data["n"])]


def trivial(data: dict) -> list[int]:
    """One colour per vertex: feasible on every graph, the floor a non-solver reaches."""
    return list(range(1, data["n"] + 1))
