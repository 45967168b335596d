"""Set cover: greedy (most new elements), redundancy removal, then row-weighting local search
(Gao et al.'s RWLS for unicost set cover), stopped by a Lagrangian lower bound or when it
stops paying; CP-SAT exact."""

from __future__ import annotations

import numpy as np

from mmnp.solvers import cpsat

STEPS = 200_000  # swaps of the local search at most
STEPS_PER_SUBSET = 400  # ... and at most this many per subset
PATIENCE = 30_000  # swaps without a smaller cover before the search stops
PATIENCE_PER_SUBSET = 100  # ... or this many per subset, if fewer
BOUND_ROUNDS = 60  # subgradient steps of the Lagrangian bound
NODES = 20_000  # nodes of the exact search before the local search takes over


def _matrix(data: dict) -> np.ndarray:
    """Incidence matrix: a row per subset, a column per element 1..U."""
    a = np.zeros((len(data["subsets"]), data["universe"]), dtype=np.int8)
    for i, members in enumerate(data["subsets"]):
        a[i, [e - 1 for e in members]] = 1
    return a


def greedy(a: np.ndarray) -> np.ndarray:
    """Subsets covering the most uncovered elements (ties: lowest id) until all are covered,
    then each chosen subset whose elements are all covered twice dropped, last chosen first."""
    chosen = np.zeros(len(a), dtype=bool)
    count = np.zeros(a.shape[1], dtype=np.int32)
    gain = a.sum(1, dtype=np.int64)
    picked = []
    while gain.max() > 0:
        s = int(np.argmax(gain))
        newly = (count == 0) & (a[s] > 0)
        chosen[s] = True
        picked.append(s)
        count += a[s]
        gain -= a[:, newly].sum(1, dtype=np.int64)
    for s in reversed(picked):
        if np.all(count[a[s] > 0] >= 2):
            chosen[s] = False
            count -= a[s]
    return chosen


def lower_bound(a: np.ndarray, upper: int) -> int:
    """A lower bound on the cover size: the packing bound (elements no two of which share a
    subset each need their own), or the Lagrangian bound max_u sum(u) - sum_s max(0, u(s) - 1)
    (element prices u >= 0, improved by subgradient steps), whichever is larger; every value
    of the Lagrangian function is a valid bound."""
    a64 = a.astype(np.float64)
    best = float(packing_bound(a))
    u = np.full(a.shape[1], 1.0 / max(1, a.sum(0).max()))
    step = 1.0
    for _ in range(BOUND_ROUNDS):
        price = a64 @ u
        value = u.sum() - np.maximum(price - 1, 0).sum()
        if value > best + 1e-9:
            best = value
        if np.ceil(best - 1e-6) >= upper:
            break
        taken = price > 1  # the Lagrangian's chosen subsets
        g = 1 - taken.astype(np.float64) @ a64  # subgradient: 1 - times covered
        norm = float(g @ g)
        if norm == 0:
            break
        u = np.maximum(u + step * (upper - value) / norm * g, 0)
        step *= 0.95
    return int(np.ceil(best - 1e-6))


def packing_bound(a: np.ndarray) -> int:
    """Elements no two of which share a subset, packed greedily rarest first: each needs its
    own subset."""
    blocked = np.zeros(len(a), dtype=bool)
    size = 0
    for e in np.argsort(a.sum(0), kind="stable"):
        holders = a[:, e] > 0
        if not (holders & blocked).any():
            blocked |= holders
            size += 1
    return size


def local_search(a: np.ndarray, start: np.ndarray, bound: int, steps: int, patience: int,
                 seed: int = 0) -> np.ndarray:
    """RWLS (Gao, Weise & Li, EJOR 2015), on element weights: each cover found is recorded and
    its least useful subset dropped; otherwise the chosen subset losing the least weight
    leaves (not the one just added), and the subset gaining the most weight among those
    covering a random uncovered element comes in (configuration checking: a subset that left
    re-enters only after a neighbouring subset changed; ties go to the longest unchanged,
    then the lowest id); the weights of the still-uncovered elements then grow. Stops at
    `bound`, after `steps` swaps, or after `patience` swaps without a smaller cover.

    Plain lists, not numpy: a swap touches a few elements and their few holders, where
    numpy's per-call cost would dominate (3-5x slower on OR-Library's scp and clr sets)."""
    m, universe = a.shape
    rows, holders, neighbours = _incidence(a)
    weight = [1] * universe
    chosen, count, score = _coverage(rows, start, universe)
    uncovered = {e for e in range(universe) if count[e] == 0}
    inside = {s for s in range(m) if chosen[s]}
    stamp = [0] * m
    can_add = [True] * m
    best, best_size = set(inside), len(inside)
    tabu, last_better = -1, 0
    draws = np.random.default_rng(seed).random(steps + 1)

    def pick(options) -> int:
        return max(options, key=lambda k: (score[k], -stamp[k], -k))

    def flip(s: int) -> None:
        _flip(s, chosen, inside, uncovered, count, score, weight, rows, holders)

    for step in range(1, steps + 1):
        if step - last_better > patience:
            break
        while not uncovered:  # a cover: keep it, then try one subset fewer
            if len(inside) < best_size:
                best, best_size, last_better = set(inside), len(inside), step
            if best_size <= bound:
                return _mask(best, m)
            s = pick(inside)
            flip(s)
            stamp[s] = step
        s = pick([k for k in inside if k != tabu] or inside)
        flip(s)
        stamp[s] = step
        for k in neighbours[s]:
            can_add[k] = True
        can_add[s] = False
        missing = sorted(uncovered)
        e = missing[int(draws[step] * len(missing))]
        t = pick([k for k in holders[e] if can_add[k]] or holders[e])
        flip(t)
        stamp[t] = step
        for k in neighbours[t]:
            can_add[k] = True
        tabu = t
        for e in uncovered:
            weight[e] += 1
            for k in holders[e]:
                score[k] += 1
    return _mask(best, m)


def _incidence(a: np.ndarray) -> tuple[list[list[int]], list[list[int]], list[list[int]]]:
    """Per subset its elements, per element its subsets, per subset those sharing an element with it."""
    m, universe = a.shape
    rows = [[int(e) for e in np.flatnonzero(a[s])] for s in range(m)]
    holders = [[int(s) for s in np.flatnonzero(a[:, e])] for e in range(universe)]
    near: list[set[int]] = [set() for _ in range(m)]  # subsets sharing an element
    for group in holders:
        for s in group:
            near[s].update(group)
    return rows, holders, [sorted(x) for x in near]


def _coverage(rows: list[list[int]], start: np.ndarray, universe: int) -> tuple[list[bool], list[int], list[int]]:
    """The start's chosen flags, how often each element is covered, and each subset's score (unit
    weights: minus the elements only it covers if chosen, else the uncovered elements it holds)."""
    chosen = [bool(x) for x in start]
    count = [0] * universe
    for s, members in enumerate(rows):
        if chosen[s]:
            for e in members:
                count[e] += 1
    score = [-sum(count[e] == 1 for e in rows[s]) if chosen[s] else sum(count[e] == 0 for e in rows[s])
             for s in range(len(rows))]
    return chosen, count, score


def _flip(s: int, chosen: list[bool], inside: set[int], uncovered: set[int], count: list[int], score: list[int],
          weight: list[int], rows: list[list[int]], holders: list[list[int]]) -> None:
    """Add or remove subset `s`, keeping the counts, the uncovered set and every subset's score
    (the weight it would gain by entering, or lose by leaving) up to date."""
    score[s] = -score[s]
    if chosen[s]:
        chosen[s] = False
        inside.discard(s)
        for e in rows[s]:
            count[e] -= 1
            if count[e] == 0:  # left uncovered: every holder would gain it
                uncovered.add(e)
                for k in holders[e]:
                    if k != s:
                        score[k] += weight[e]
            elif count[e] == 1:  # its one remaining holder would now lose it
                for k in holders[e]:
                    if chosen[k]:
                        score[k] -= weight[e]
                        break
    else:
        chosen[s] = True
        inside.add(s)
        for e in rows[s]:
            count[e] += 1
            if count[e] == 1:  # newly covered: no other holder gains it any more
                uncovered.discard(e)
                for k in holders[e]:
                    if k != s:
                        score[k] -= weight[e]
            elif count[e] == 2:  # its previous sole holder would no longer lose it
                for k in holders[e]:
                    if chosen[k] and k != s:
                        score[k] += weight[e]
                        break


def _mask(members: set[int], m: int) -> np.ndarray:
    out = np.zeros(m, dtype=bool)
    out[list(members)] = True
    return out


def heuristic(data: dict) -> list[int]:
    """Greedy cover, pruned; then, unless the lower bound proves it optimal, the exact search
    within NODES nodes, and the local search when that does not finish (its budget grows
    with the number of subsets)."""
    a = _matrix(data)
    m = len(a)
    chosen = greedy(a)
    bound = lower_bound(a, int(chosen.sum()))
    if chosen.sum() > bound:
        found, finished = branch_and_bound(data, chosen, bound, NODES)
        if finished:
            return found
        chosen = local_search(a, chosen, bound, min(STEPS, STEPS_PER_SUBSET * m),
                              min(PATIENCE, PATIENCE_PER_SUBSET * m))
    return [int(i) for i in np.flatnonzero(chosen)]


def branch_and_bound(data: dict, start: np.ndarray, bound: int, nodes: int) -> tuple[list[int], bool]:
    """Depth-first search on bit sets: branch on the uncovered element with the fewest
    subsets left to cover it (the i-th branch takes its i-th subset, by most new elements,
    and rules out the ones before); prune when the cover so far plus a packing bound on the
    uncovered elements cannot beat the best. Returns the best cover and whether the search
    finished within `nodes` (then it is optimal)."""
    subsets = [sum(1 << (e - 1) for e in members) for members in data["subsets"]]
    holders = _holder_masks(subsets, data["universe"])
    full = (1 << data["universe"]) - 1
    best = [int(i) for i in np.flatnonzero(start)]
    spent = 0

    def search(covered: int, allowed: int, picked: list[int]) -> None:
        nonlocal best, spent
        spent += 1
        if spent > nodes:
            raise _Budget
        if covered == full:
            if len(picked) < len(best):
                best = list(picked)
            return
        if len(picked) + max(1, _residual_bound(full & ~covered, allowed, holders)) >= len(best):
            return
        rest, options = full & ~covered, None
        while rest:
            low = rest & -rest
            rest ^= low
            h = holders[low.bit_length() - 1] & allowed
            if options is None or h.bit_count() < options.bit_count():
                options = h
                if h.bit_count() <= 1:
                    break
        choices = []
        while options:
            low = options & -options
            options ^= low
            i = low.bit_length() - 1
            choices.append(((subsets[i] & ~covered).bit_count(), -i, i))
        for _, _, i in sorted(choices, reverse=True):
            picked.append(i)
            search(covered | subsets[i], allowed, picked)
            picked.pop()
            allowed &= ~(1 << i)
            if len(best) <= bound:
                return

    try:
        search(0, (1 << len(subsets)) - 1, [])
    except _Budget:
        return sorted(best), False
    return sorted(best), True


def _holder_masks(subsets: list[int], universe: int) -> list[int]:
    """Per element (bit e-1), the bit set of the subsets holding it."""
    holders = [0] * universe
    for i, mask in enumerate(subsets):
        bits = mask
        while bits:
            low = bits & -bits
            holders[low.bit_length() - 1] |= 1 << i
            bits ^= low
    return holders


def _residual_bound(rest: int, allowed: int, holders: list[int]) -> int:
    """Elements of `rest` (the uncovered ones) no two of which share an allowed subset, lowest first."""
    blocked, size = 0, 0
    while rest:
        low = rest & -rest
        rest ^= low
        h = holders[low.bit_length() - 1] & allowed
        if not h & blocked:
            blocked |= h
            size += 1
    return size


class _Budget(Exception):
    """The exact search ran out of nodes."""


def optimal(data: dict, time_limit: float, hint: list[int]) -> tuple[list[int], bool]:
    from ortools.sat.python import cp_model

    subsets = data["subsets"]
    model = cp_model.CpModel()
    x = [model.NewBoolVar("") for _ in subsets]
    for e in range(1, data["universe"] + 1):
        model.AddBoolOr([x[i] for i, s in enumerate(subsets) if e in s])
    model.Minimize(sum(x))
    solver, proven = cpsat.solve(model, time_limit)  # the hint stays out (mmnp.solvers.cpsat)
    if not proven and cpsat.settles(solver, len(hint), minimize=True):
        return hint, True
    return cpsat.selected(solver, x), proven


def random(data: dict, rng: np.random.Generator) -> list[int]:
    """Each subset taken with probability 1/3: often leaves elements uncovered."""
    return [i for i in range(len(data["subsets"])) if rng.random() < 1 / 3]


def trivial(data: dict) -> list[int]:
    """Every subset: covers whatever any cover covers, the floor a non-solver reaches."""
    return list(range(len(data["subsets"])))
