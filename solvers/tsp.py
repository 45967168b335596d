"""TSP: nearest neighbour + 2-opt/Or-opt (vectorised, several starts, double-bridge kicks);
exact by subtour elimination over SCIP (Dantzig-Fulkerson-Johnson cuts), CP-SAT circuit when
that stops at its limits."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from mmnp.solvers import cpsat

STARTS = 4  # nearest-neighbour starts tried by the heuristic
LARGE = 100  # cities beyond which one start is tried and no kicks
KICKS = 60  # double-bridge kicks of the iterated local search, at most
KICK_PATIENCE = 12  # kicks in a row without a shorter tour before the search stops
CUTTING_MAX_CITIES = 150  # subtour elimination tried up to this size
CUTTING_ROUNDS = 40  # rounds of subtour cuts before handing over to CP-SAT
CUTTING_NODES_PER_SECOND = 500  # SCIP branch-and-bound nodes per round per second of the time limit


def distances(data: dict) -> np.ndarray:
    xy = np.asarray(data["coords"], dtype=np.float64)
    return np.floor(np.sqrt(((xy[:, None, :] - xy[None, :, :]) ** 2).sum(-1)) + 0.5).astype(np.int64)


def heuristic(data: dict) -> list[int]:
    """Nearest neighbour from a few starts, each improved by 2-opt/Or-opt; then iterated local
    search (double-bridge kicks of the best tour, kept when shorter), a fixed number of kicks."""
    d = distances(data)
    n = len(d)
    best, best_len = None, None
    starts = STARTS if n <= LARGE else 1  # each start costs O(n^2) per move: one start on large instances
    for start in sorted({(k * n) // starts for k in range(starts)}):
        tour = _local_search(d, _nearest_neighbour(d, start))
        length = _length(d, tour)
        if best_len is None or length < best_len:
            best, best_len = tour, length
    rng = np.random.default_rng(0)
    since = 0
    for _ in range(KICKS if 8 <= n <= LARGE else 0):
        if since >= KICK_PATIENCE:
            break
        since += 1
        tour = _local_search(d, _double_bridge(best, rng))
        length = _length(d, tour)
        if length < best_len:
            since = 0
            best, best_len = tour, length
    return [int(c) for c in _shift(best, int(np.argmin(best)))]


def _length(d: np.ndarray, tour: np.ndarray) -> int:
    return int(d[tour, _shift(tour, 1)].sum())


def _shift(tour: np.ndarray, k: int) -> np.ndarray:
    """`np.roll(tour, -k)`, without its generality's cost (the local search's hot path)."""
    k %= len(tour)
    return np.concatenate((tour[k:], tour[:k]))


@lru_cache(maxsize=64)
def _move_masks(n: int) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """The legal 2-opt pairs (i, j) and, per Or-opt segment length, the legal insertion
    edges j for a segment starting at i: they depend only on n, so are built once."""
    idx = np.arange(n)
    two_opt = (idx[None, :] > idx[:, None] + 1) & ~((idx[:, None] == 0) & (idx[None, :] == n - 1))
    offset = (idx[None, :] - idx[:, None]) % n
    or_opt = tuple((offset >= seg) & (offset <= n - 2) for seg in (1, 2, 3))
    return two_opt, or_opt


def _double_bridge(tour: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The classic 4-opt kick: cut into A B C D, reconnect as A C B D (2-opt cannot undo it)."""
    i, j, k = sorted(rng.choice(np.arange(1, len(tour)), size=3, replace=False))
    return np.concatenate([tour[:i], tour[j:k], tour[i:j], tour[k:]])


def _nearest_neighbour(d: np.ndarray, start: int) -> np.ndarray:
    n = len(d)
    unvisited = np.ones(n, dtype=bool)
    tour = [start]
    unvisited[start] = False
    for _ in range(n - 1):
        row = np.where(unvisited, d[tour[-1]], np.iinfo(np.int64).max)
        nxt = int(np.argmin(row))
        tour.append(nxt)
        unvisited[nxt] = False
    return np.array(tour)


def _local_search(d: np.ndarray, tour: np.ndarray) -> np.ndarray:
    """Best-improvement 2-opt, then Or-opt (segments of 1-3 cities, either direction),
    each move found with one vectorised pass, until neither improves."""
    n = len(tour)
    if n < 5:
        return tour
    two_opt_ok, or_opt_ok = _move_masks(n)
    while True:
        a, b = tour, _shift(tour, 1)
        ab = d[a, b]
        gain = ab[:, None] + ab[None, :] - d[a[:, None], a[None, :]] - d[b[:, None], b[None, :]]
        gain = np.where(two_opt_ok, gain, 0)
        k = int(np.argmax(gain))
        if gain.flat[k] > 0:
            i, j = divmod(k, n)
            tour = np.concatenate([tour[: i + 1], tour[i + 1 : j + 1][::-1], tour[j + 1 :]])
            continue
        moved = _or_opt(d, tour, or_opt_ok)
        if moved is None:
            return tour
        tour = moved


def _or_opt(d: np.ndarray, tour: np.ndarray, legal: tuple[np.ndarray, ...]) -> np.ndarray | None:
    n = len(tour)
    best_gain, best_move = 0, None
    c, e, prev = tour, _shift(tour, 1), _shift(tour, -1)  # insertion edge (c_j, e_j)
    ce = d[c, e][None, :]
    d_c_from = d[c]  # d[c_j, x] as rows over j
    for seg in (1, 2, 3):
        first = tour
        last = _shift(tour, seg - 1)
        nxt = _shift(tour, seg)
        removal = d[prev, first] + d[last, nxt] - d[prev, nxt]  # per segment start i
        forward = d_c_from[:, first].T + d[last[:, None], e[None, :]]
        backward = d_c_from[:, last].T + d[first[:, None], e[None, :]]
        insert = np.minimum(forward, backward) - ce
        gain = removal[:, None] - insert
        # edge j must lie outside the segment and not be one of its two boundary edges
        gain = np.where(legal[seg - 1], gain, 0)
        k = int(np.argmax(gain))
        if gain.flat[k] > best_gain:
            i, j = divmod(k, n)
            best_gain, best_move = int(gain.flat[k]), (i, j, seg, bool(backward.flat[k] < forward.flat[k]))
    if best_move is None:
        return None
    i, j, seg, reverse = best_move
    order = _shift(tour, i)  # the segment is now order[:seg], edge j is at offset (j - i) % n
    segment, rest = order[:seg], order[seg:]
    at = (j - i) % n - seg  # index in `rest` of the edge's first city
    if reverse:
        segment = segment[::-1]
    return np.concatenate([rest[: at + 1], segment, rest[at + 1 :]])


def optimal(data: dict, time_limit: float, hint: list[int]) -> tuple[list[int], bool]:
    """Subtour elimination when it finishes within its (deterministic) limits, else CP-SAT."""
    d = distances(data)
    if len(d) <= CUTTING_MAX_CITIES:
        tour = subtour_elimination(d, nodes=max(100, int(CUTTING_NODES_PER_SECOND * time_limit)))
        if tour is not None:
            return tour, True
    return circuit(data, time_limit, hint)


def subtour_elimination(d: np.ndarray, nodes: int) -> list[int] | None:
    """Dantzig-Fulkerson-Johnson: a 0/1 program with degree 2 at every city, solved to
    optimality by SCIP (one thread, `nodes` per solve: deterministic), cutting off each
    subtour it returns until the answer is one tour, which is then optimal. None at the limits."""
    from ortools.linear_solver import pywraplp

    n = len(d)
    solver = pywraplp.Solver.CreateSolver("SCIP")
    solver.SetNumThreads(1)
    # misc/catchctrlc off: SCIP would swallow Ctrl-C and return a cut-short result (mmnp.solvers.cpsat)
    solver.SetSolverSpecificParametersAsString(f"limits/nodes = {nodes}\nmisc/catchctrlc = FALSE\n")
    x = {(i, j): solver.BoolVar("") for i in range(n) for j in range(i + 1, n)}
    for v in range(n):
        solver.Add(sum(x[min(v, u), max(v, u)] for u in range(n) if u != v) == 2)
    solver.Minimize(sum(int(d[i, j]) * var for (i, j), var in x.items()))
    for _ in range(CUTTING_ROUNDS):
        if solver.Solve() != pywraplp.Solver.OPTIMAL:
            return None
        succ: dict[int, list[int]] = {v: [] for v in range(n)}
        for (i, j), var in x.items():
            if var.solution_value() > 0.5:
                succ[i].append(j)
                succ[j].append(i)
        tours = _cycles(succ)
        if len(tours) == 1:
            return tours[0]
        for tour in tours:  # each subtour's cities must connect to the rest by two edges
            inside = set(tour)
            solver.Add(sum(x[min(i, j), max(i, j)] for i in tour for j in range(n) if j not in inside) >= 2)
    return None


def _cycles(succ: dict[int, list[int]]) -> list[list[int]]:
    """The cycles of a 2-regular graph, each in order from its smallest city."""
    seen: set[int] = set()
    cycles = []
    for start in sorted(succ):
        if start in seen:
            continue
        cycle, prev, here = [start], None, start
        seen.add(start)
        while True:
            a, b = succ[here]
            nxt = a if a != prev else b
            if nxt == start:
                break
            cycle.append(nxt)
            seen.add(nxt)
            prev, here = here, nxt
        cycles.append(cycle)
    return cycles


def circuit(data: dict, time_limit: float, hint: list[int]) -> tuple[list[int], bool]:
    """CP-SAT with a circuit constraint over all arcs, started from `hint`."""
    from ortools.sat.python import cp_model

    d = distances(data)
    n = len(d)
    model = cp_model.CpModel()
    arcs, lits = [], {}
    for i in range(n):
        for j in range(n):
            if i != j:
                lits[i, j] = model.NewBoolVar("")
                arcs.append((i, j, lits[i, j]))
    model.AddCircuit(arcs)
    model.Minimize(sum(int(d[i, j]) * lit for (i, j), lit in lits.items()))
    hinted = {(a, b) for a, b in zip(hint, hint[1:] + hint[:1])}
    for key, lit in lits.items():
        model.AddHint(lit, key in hinted)
    solver, proven = cpsat.solve(model, time_limit)
    succ = {i: j for (i, j), lit in lits.items() if solver.Value(lit)}
    tour = [0]
    while len(tour) < n:
        tour.append(succ[tour[-1]])
    return tour, proven


def random(data: dict, rng: np.random.Generator) -> list[int]:
    return [int(c) for c in rng.permutation(len(data["coords"]))]


def trivial(data: dict) -> list[int]:
    """The cities in id order: a tour of every instance, the floor a non-solver reaches."""
    return list(range(len(data["coords"])))
