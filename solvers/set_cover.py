"""Set cover: greedy (most new elements), redundancy removal, a Lagrangian/packing lower bound, a
small branch and bound, then row-weighting local search (RWLS: Gao, Yao, Weise & Li, EJOR 2015,
for unicost set cover), run again with further seeds while its budget lasts. Exact: CP-SAT,
then, when it does not prove its cover optimal, the branch and bound again from CP-SAT's cover
with a budget that grows with the time limit, its cover kept when smaller (CP-SAT's LP bound is
trivial on the generated covers from L7, where the search still proves L7 and L8:
docs/levels.md).

Budget (deterministic: seeded draws, no wall clock): the exact search stops after NODE_WORDS words
of bit-set work, about a tenth of a CPU second (what its former cap of 20,000 nodes cost on
these sizes); its cardinality bound settles the generated covers to L7 there (the local search
then never runs: L7 0.1 -> 0.03 CPU s), and L8-L10's sizes with the wide subsets of L6 7, 2 and
1 times in 10. Then local searches from greedy's cover, seeds 0, 1, ... one after another,
spend min(400 steps per subset, WORK list updates' worth) steps in all; each run stops at the
lower bound or after min(100,000, max(100 per subset, PATIENCE_WORK updates' worth)) steps
without a smaller cover, and the next seed starts while steps are left (`restarts`). On many
elements both grow with them: patience at least 2 steps per element and the budget at least
twice that for each of two runs (PATIENCE_PER_ELEMENT), since the elements' weights take steps
in proportion to their number to reshape the search: STS729's runs (88,452 elements) sit
at 644-647 for 110,000-130,000 steps, then fall to 617 on 4 seeds in 12 by step 280,000 (the
others stay at 633-639 through 600,000), where the budget was 48,000 steps, all spent by seed 0
(and 100 steps per subset of patience, 72,900, stops runs on the plateau). It binds on STS405
and STS729 only (generated covers have at most 120 elements, the classic set's at most 9,801).
The first run, seed 0 with the whole budget before it, can only be improved on. Measured on
OR-Library's unicost sets (one core, benchmarks/bench_published.py, CPU s an instance): scp4x
0.23-0.25, scp5x 0.64-0.66, scp6x 0.45-0.46, scpa 1.4, scpb 3.2-3.4, scpc 2.2-2.3, scpd 3.6-3.8,
scpe 0.57, scpnre 5.2-5.4, scpnrf 8.1-8.6, scpnrg 3.2-3.3, scpnrh 4.7-4.8, scpclr13 2.3, scpcyc09-11
1.5, 5.8 and 17.6 (the other core busy), STS405 1.3 (340 for 335), STS729 7.9 (617, the best known:
729 less AG(6, 3)'s largest cap, 112; seed 1 reaches it at step ~160,000; on AG(6, 3)'s own triple
system, labelled another way, 637 against 647 with the per-subset patience:
tests/test_heuristic_set_cover.py). With the runs capped at two (and WORK at a quarter), scpc1, c2
and c5 ended at 44 (0.5 CPU s); of seeds 0-10, 3, 2, 6 and 4 runs reach 43 on scpc1-c4 and none on
c5, whose first 43 (seed 26) lies past the budget. Where mmnp differs from the paper: seeded runs,
each ended by its patience, within a step budget of 400 steps per subset at most (the paper: 10 runs
of 3 x 10^7 steps each on these sets, in C; the compiled steps here make 0.15-1.9 million a second,
`local_search`): scpa1-4 stay one above the optimum within 250,000 steps a seed, and with 10 million
(about 11 s) scpa3 is still at 39 on seeds 0-3, scpa1 reaches 38 on one of them and scpa4 37 on two;
scpd, scpnre, scpnrg, scpnrh, scpcyc09 and scpcyc11 stay 2.2-7.6% above the best known (scpcyc10 is
0.8% above: SCANNED_PER_UPDATE), which RWLS reaches within 3 x 10^7-10^8 steps (docs/datasets.md);
weights grow lazily (same choices, checked step by step in tests/test_heuristic_set_cover.py);
configuration checking re-enables a subset when an element it holds changes between covered and
uncovered (the paper and pinam45/USCP's rwls.cpp: also between once and twice covered; measured with
10 million steps a seed it does no better on scpa1 or scpa3, reaches scpa4's 37 on three seeds
instead of two, and no better on scp51), so a step costs only the elements whose coverage
changes."""

from __future__ import annotations

import heapq
import itertools

import numpy as np

from mmnp.solvers import cpsat
from mmnp.solvers.compiled import compiled, twister, twister_state

WORK = 200_000_000  # the local searches' budget, all runs together, in list updates (a step costs
#   about a subset's size, an element's holders and a scan of the chosen subsets: `_step_cost`),
#   unless PATIENCE_PER_ELEMENT asks for more (STS729: 3.7x this)
STEPS_PER_SUBSET = 400  # ... and at most this many steps per subset, all runs together
PATIENCE = 100_000  # steps without a smaller cover before a run stops
PATIENCE_PER_SUBSET = 100  # ... or this many per subset, if fewer,
PATIENCE_WORK = 400_000  # ... but never fewer than this many list updates' worth,
PATIENCE_PER_ELEMENT = 2  # ... nor than this many per element, and the budget at least twice
#   that for each of RESHAPING_RUNS runs: element weights reshape the search in steps
#   proportional to their number
RESHAPING_RUNS = 2
SCANNED_PER_UPDATE = 16  # chosen subsets the scan for the one to drop reads in the time of one list
#   update (a sequential read against a scattered write). Measured, one core: scpa1 (66 updates and
#   42 chosen a step) and scpcyc09 (12 and 816) both make 0.87 million steps a second, scpcyc11 (15
#   and 4,272) 0.20 million: ~17 ns an update, ~1.1 ns a subset scanned. Counted as updates (1:1),
#   the scan cut scpcyc09-11's budgets to 240,000, 104,000 and 225,000 steps (0.3-1.2 CPU s)
BOUND_ROUNDS = 60  # subgradient steps of the Lagrangian bound
NODE_WORDS = 1 << 20  # machine words of bit-set operations the exact search may spend before the
#   local search takes over (a node scans its uncovered elements, each a bit set of the universe,
#   and the subsets holding them for its bound; on STS729's 88,452 elements a node costs a second)
NODES = 100_000  # ... or this many nodes (the words run out first on every instance measured)
EXACT_WORDS_PER_SECOND = 1 << 23  # the exact solver's bit-set search, when CP-SAT does not prove the
#   optimum: this many words per deterministic second of its time limit (about half a CPU second;
#   at 1 s it proves the generated L7 and L8 covers 10/10, L9 1/10, L10 none)


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
    of the Lagrangian function is a valid bound. Products through the memberships, not the dense
    matrix (STS729's would be half a gigabyte of floats)."""
    m, universe = a.shape
    subset_of, element_of = np.nonzero(a)  # the memberships
    best = float(packing_bound(a))
    u = np.full(universe, 1.0 / max(1, a.sum(0).max()))
    step = 1.0
    for _ in range(BOUND_ROUNDS):
        price = np.bincount(subset_of, weights=u[element_of], minlength=m)
        value = u.sum() - np.maximum(price - 1, 0).sum()
        if value > best + 1e-9:
            best = value
        if np.ceil(best - 1e-6) >= upper:
            break
        taken = (price > 1).astype(np.float64)  # the Lagrangian's chosen subsets
        g = 1 - np.bincount(element_of, weights=taken[subset_of], minlength=universe)  # 1 - times covered
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


def incidence(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each subset's elements and each element's holders, as CSR offsets and indices: built
    once for all of `restarts`' runs (1.7 CPU s on scpcyc11's 11,264 x 28,160 matrix)."""
    rows, holders = np.nonzero(a), np.nonzero(a.T)
    return (np.searchsorted(rows[0], np.arange(a.shape[0] + 1)), rows[1].astype(np.int64),
            np.searchsorted(holders[0], np.arange(a.shape[1] + 1)), holders[1].astype(np.int64))


def local_search(a: np.ndarray, start: np.ndarray, bound: int, steps: int, patience: int,
                 seed: int = 0, lists: tuple[np.ndarray, ...] | None = None) -> tuple[np.ndarray, int]:
    """RWLS (Gao, Yao, Weise & Li, EJOR 2015), the unicost set cover's row-weighting local
    search. Each cover found is recorded and the chosen subset losing the least weight leaves
    (oldest first) until an element is uncovered; then each step drops the chosen subset losing
    the least weight (oldest first, not the one just added), adds the subset gaining the most
    weight among those holding a random uncovered element (configuration checking: a subset
    that left re-enters only after an element it holds changed between covered and uncovered;
    ties go to the oldest), and the weight of every uncovered element grows by one. Stops at
    `bound`, after `steps` steps, or after `patience` steps without a smaller cover. Returns the
    smallest cover found (a mask) and the steps made. `lists`: `incidence(a)`, if already built.

    The weight growth is lazy: an uncovered element's weight is stored less the step clock, and
    a subset's gain is the sum of those over its uncovered elements plus the clock times their
    number, so a step costs only the elements whose coverage changes (not every uncovered
    element's holders). The steps are compiled (numba, `_rwls`), the random element drawn by
    Python's Mersenne Twister from Random(seed) (`compiled.twister`): the moves of the list-based Python
    search it replaced (tests/test_heuristic_set_cover.py). Measured (one core, 300,000 steps from
    greedy's cover): 1.9 million steps/s on OR-Library scp4x, 0.9 million on scpa, 340,000 on
    scpe, 145,000 on scpclr13 and STS729 (the Python search: 70-100k, 20k, -, 3.5k, 2.5k)."""
    if not np.any(start) or not a.any(0).all():
        raise ValueError("the local search needs a non-empty start and a subset holding every element")
    best, step = _rwls(*(incidence(a) if lists is None else lists),
                       np.asarray(start, dtype=np.bool_), max(bound, 0), steps, patience, *twister_state(seed))
    return _mask(best, a.shape[0]), int(step)


@compiled
def _rwls(row_start: np.ndarray, row_elements: np.ndarray, holder_start: np.ndarray, holder_subsets: np.ndarray,
          start: np.ndarray, bound: int, steps: int, patience: int, mt_state: np.ndarray, position: int
          ) -> tuple[np.ndarray, int]:
    """`local_search`'s steps on the subsets' elements and the elements' holders (CSR)."""
    m, universe = len(row_start) - 1, len(holder_start) - 1
    count = np.zeros(universe, dtype=np.int64)  # chosen subsets holding each element
    sole = np.zeros(universe, dtype=np.int64)  # xor of those subsets: the only one where count is 1
    chosen = np.zeros(m, dtype=np.bool_)
    inside = np.empty(m, dtype=np.int64)  # the chosen subsets, `where` their positions
    where = np.full(m, -1, dtype=np.int64)
    size = 0
    for s in range(m):
        if start[s]:
            chosen[s], where[s], inside[size] = True, size, s
            size += 1
            for x in range(row_start[s], row_start[s + 1]):
                count[row_elements[x]] += 1
                sole[row_elements[x]] ^= s
    clock = 0  # steps so far: the weight each uncovered element has gained since it was uncovered
    weight = np.ones(universe, dtype=np.int64)  # a covered element's weight; an uncovered one's, less the clock
    uncovered = np.empty(universe, dtype=np.int64)  # `spot` their positions
    spot = np.full(universe, -1, dtype=np.int64)
    open_size = 0
    gain_base = np.zeros(m, dtype=np.int64)  # an unchosen subset's gain is gain_base + clock * open_count
    open_count = np.zeros(m, dtype=np.int64)  # its uncovered elements
    for e in range(universe):
        if count[e] == 0:
            spot[e], uncovered[open_size] = open_size, e
            open_size += 1
            for x in range(holder_start[e], holder_start[e + 1]):
                gain_base[holder_subsets[x]] += 1
                open_count[holder_subsets[x]] += 1
    loss = np.zeros(m, dtype=np.int64)  # a chosen subset leaves by (loss, stamp, id), the smallest
    for i in range(size):
        s = inside[i]
        for x in range(row_start[s], row_start[s + 1]):
            if count[row_elements[x]] == 1:
                loss[s] += 1
    stamp = np.zeros(m, dtype=np.int64)  # the step a subset last entered or left: a chosen one's, when it entered
    can_add = np.ones(m, dtype=np.bool_)
    best, best_size, last_better = inside[:size].copy(), size, 0
    tabu, step = -1, 0
    while step < steps and step - last_better <= patience:
        step += 1
        while open_size == 0:  # a cover: keep it, then try one subset fewer
            if size < best_size:
                best, best_size, last_better = inside[:size].copy(), size, step
            if best_size <= bound:
                return best, step
            s = _leaving(inside, size, loss, stamp, -1)
            size, open_size = _remove(s, step, clock, inside, size, where, chosen, row_start, row_elements,
                                      holder_start, holder_subsets, count, sole, weight, uncovered, spot,
                                      open_size, gain_base, open_count, loss, can_add, stamp)
        if size == 0:  # one subset held everything and a bound of 0 let it go: nothing left to drop
            break
        s = _leaving(inside, size, loss, stamp, tabu if tabu >= 0 and chosen[tabu] and size > 1 else -1)
        size, open_size = _remove(s, step, clock, inside, size, where, chosen, row_start, row_elements,
                                  holder_start, holder_subsets, count, sole, weight, uncovered, spot,
                                  open_size, gain_base, open_count, loss, can_add, stamp)
        position, high = twister(mt_state, position)
        position, low = twister(mt_state, position)
        draw = ((high >> 5) * 67108864.0 + (low >> 6)) * (1.0 / 9007199254740992.0)  # random.random()
        e = uncovered[int(draw * open_size)]
        first, last = holder_start[e], holder_start[e + 1]
        any_can = False
        for x in range(first, last):
            any_can |= can_add[holder_subsets[x]]
        t, top_gain, top_stamp = -1, 0, 0
        for x in range(first, last):
            k = holder_subsets[x]
            if any_can and not can_add[k]:
                continue
            value = gain_base[k] + open_count[k] * clock
            if t < 0 or value > top_gain or (value == top_gain and stamp[k] < top_stamp):
                t, top_gain, top_stamp = k, value, stamp[k]
        chosen[t], where[t], inside[size] = True, size, t
        size += 1
        gained = 0
        for x in range(row_start[t], row_start[t + 1]):
            e = row_elements[x]
            count[e] += 1
            previous = sole[e]
            sole[e] ^= t
            if count[e] == 1:  # covered: no other holder gains it any more
                open_size -= 1
                i, moved = spot[e], uncovered[open_size]
                if moved != e:
                    uncovered[i], spot[moved] = moved, i
                w = weight[e]
                weight[e] = w + clock
                gained += w + clock
                for y in range(holder_start[e], holder_start[e + 1]):
                    k = holder_subsets[y]
                    gain_base[k] -= w
                    open_count[k] -= 1
                    can_add[k] = True
            elif count[e] == 2:  # its previous sole holder would no longer lose it
                loss[previous] -= weight[e]
        stamp[t], loss[t] = step, gained
        tabu = t
        clock += 1
    return best, step


@compiled
def _leaving(inside: np.ndarray, size: int, loss: np.ndarray, stamp: np.ndarray, skip: int) -> int:
    """The chosen subset that leaves: the least loss, then the earliest added, then the lowest id."""
    out = -1
    for i in range(size):
        s = inside[i]
        if s != skip and (out < 0 or loss[s] < loss[out] or (loss[s] == loss[out] and (
                stamp[s] < stamp[out] or (stamp[s] == stamp[out] and s < out)))):
            out = s
    return out


@compiled
def _remove(s: int, step: int, clock: int, inside: np.ndarray, size: int, where: np.ndarray, chosen: np.ndarray,
            row_start: np.ndarray, row_elements: np.ndarray, holder_start: np.ndarray,
            holder_subsets: np.ndarray, count: np.ndarray, sole: np.ndarray, weight: np.ndarray,
            uncovered: np.ndarray, spot: np.ndarray, open_size: int, gain_base: np.ndarray,
            open_count: np.ndarray, loss: np.ndarray, can_add: np.ndarray, stamp: np.ndarray) -> tuple[int, int]:
    """Subset `s` leaves the cover: returns the new numbers of chosen subsets and uncovered elements."""
    chosen[s] = False
    size -= 1
    i, last = where[s], inside[size]
    if last != s:
        inside[i], where[last] = last, i
    for x in range(row_start[s], row_start[s + 1]):
        e = row_elements[x]
        count[e] -= 1
        sole[e] ^= s
        if count[e] == 0:  # uncovered: every holder would gain it
            spot[e], uncovered[open_size] = open_size, e
            open_size += 1
            weight[e] -= clock
            for y in range(holder_start[e], holder_start[e + 1]):
                k = holder_subsets[y]
                gain_base[k] += weight[e]
                open_count[k] += 1
                can_add[k] = True
        elif count[e] == 1:  # its remaining holder would now lose it
            loss[sole[e]] += weight[e]
    can_add[s] = False
    stamp[s] = step
    return size, open_size


def _mask(members: list[int] | np.ndarray, m: int) -> np.ndarray:
    out = np.zeros(m, dtype=bool)
    out[members] = True
    return out


def heuristic(data: dict) -> list[int]:
    """Greedy cover, pruned; then, unless the lower bound proves it optimal, the exact search
    within its budget, and when that does not finish local searches from greedy's cover (seeds
    0, 1, ... until one step budget, which grows with the number of subsets, is spent), the
    smallest cover kept."""
    a = _matrix(data)
    m = len(a)
    chosen = greedy(a)
    bound = lower_bound(a, int(chosen.sum()))
    if chosen.sum() > bound:
        found, finished = branch_and_bound(data, chosen, bound)
        if finished:
            return found
        cost, reshaping = _step_cost(a, chosen), PATIENCE_PER_ELEMENT * a.shape[1]
        budget = max(min(STEPS_PER_SUBSET * m, WORK // cost), 2 * RESHAPING_RUNS * reshaping)
        chosen = restarts(a, chosen, bound, budget,
                          max(min(PATIENCE, max(PATIENCE_PER_SUBSET * m, PATIENCE_WORK // cost)), reshaping))
    return [int(i) for i in np.flatnonzero(chosen)]


def restarts(a: np.ndarray, start: np.ndarray, bound: int, budget: int, patience: int) -> np.ndarray:
    """Local searches from `start` with seeds 0, 1, ..., each stopping after `patience` steps
    without a smaller cover, one after another until they have spent `budget` steps or one
    reaches `bound`: the smallest cover (the first found at that size). Independent runs, as in
    the paper's experiments: its time to a better cover is heavy-tailed (scp51: seed 0 stays at 35
    for a million steps, seeds 1-3 reach 34 within 130,000; OR-Library's unicost scpc1-c4 reach 43
    on 2-6 of their first 11 runs, each stopped by the patience at 44 or 45 otherwise)."""
    best, lists = start, incidence(a)
    for seed in itertools.count():
        if budget <= 0 or best.sum() <= bound:
            break
        found, spent = local_search(a, start, bound, budget, patience, seed, lists)
        if found.sum() < best.sum():
            best = found
        budget -= max(spent, 1)
    return best


def _step_cost(a: np.ndarray, start: np.ndarray) -> int:
    """What one local search step costs, in list updates: the elements of the subsets flipped (a
    subset's mean size), the holders of the few elements whose coverage changes (an element's
    mean number of holders), and the chosen subsets scanned for the one to drop, SCANNED_PER_UPDATE
    of them to an update."""
    memberships = int(a.sum(dtype=np.int64))
    scan = int(start.sum()) // SCANNED_PER_UPDATE
    return max(1, memberships // a.shape[0] + memberships // a.shape[1] + scan)


def branch_and_bound(data: dict, start: np.ndarray, bound: int, nodes: int | None = NODES,
                     words: int = NODE_WORDS) -> tuple[list[int], bool]:
    """Depth-first search on bit sets: branch on the uncovered element with the fewest
    subsets left to cover it (the i-th branch takes its i-th subset, by most new elements,
    and rules out the ones before); prune when the cover so far plus a bound on the uncovered
    elements cannot beat the best: a packing (elements no two of which share a subset), or
    the fewest subsets whose sizes on the uncovered elements, largest first, add up to their
    number (on covers of L8-L10's size with wide subsets it leaves 5-40x fewer nodes than the
    packing alone, 2.5-4x less CPU). Returns the best cover (never larger than `start`) and
    whether the search finished within `nodes` nodes (None: no cap) and `words` words of
    bit-set work (then it is optimal)."""
    subsets = [sum(1 << (e - 1) for e in members) for members in data["subsets"]]
    holders = _holder_masks(subsets, data["universe"])
    full = (1 << data["universe"]) - 1
    best = [int(i) for i in np.flatnonzero(start)]
    width = data["universe"] // 64 + 1  # words in a bit set of the universe
    subset_width = len(subsets) // 64 + 1  # ... and of the subsets
    spent, work = 0, 0

    def search(covered: int, allowed: int, picked: list[int]) -> None:
        nonlocal best, spent, work
        spent += 1
        work += (full & ~covered).bit_count() * width  # the scans of its uncovered elements
        if work > words or (nodes is not None and spent > nodes):
            raise _Budget
        if covered == full:
            if len(picked) < len(best):
                best = list(picked)
            return
        rest = full & ~covered
        if len(picked) + max(1, _residual_bound(rest, allowed, holders)) >= len(best):
            return
        # the cardinality bound: the `room` subsets that may still be added to beat the best
        # cover at most the sum of the `room` largest numbers of uncovered elements they hold
        # (the same scan picks the branching element: the first with the fewest allowed holders,
        # or the first with at most one)
        room, reach, union, options, fewest, left = len(best) - 1 - len(picked), [], 0, None, 0, rest
        while left:  # the allowed subsets holding an uncovered element: the others hold none
            low = left & -left
            left ^= low
            h = holders[low.bit_length() - 1] & allowed
            union |= h
            if options is None or fewest > 1:
                count = h.bit_count()
                if options is None or count < fewest:
                    options, fewest = h, count
        while union:
            low = union & -union
            union ^= low
            reach.append((subsets[low.bit_length() - 1] & rest).bit_count())
        work += rest.bit_count() * (subset_width + 2) + len(reach) * (width + 2)  # + 2: a loop turn's cost
        if sum(heapq.nlargest(room, reach)) < rest.bit_count():
            return
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
    """The exact search ran out of its budget (words of bit-set work, or nodes)."""


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
    found = cpsat.selected(solver, x)
    if proven:
        return found, True
    # CP-SAT's bound on these covers is its LP's (trivial on the generated ones from L7); the
    # bit-set search with its cardinality bound proves L7-L8 and improves on CP-SAT's cover at
    # L9-L10. It starts from CP-SAT's cover, never the hint: the answer stays a function of the
    # instance alone (mmnp.solvers.cpsat), and is never worse than CP-SAT's. An unproven answer
    # records the Lagrangian bound when it is tighter than CP-SAT's.
    a = _matrix(data)
    bound = lower_bound(a, len(found))
    cpsat.tighten_bound(bound, minimize=True)  # the Lagrangian bound, where CP-SAT's LP gives 0
    return branch_and_bound(data, _mask(found, len(subsets)), bound, None, int(time_limit * EXACT_WORDS_PER_SECOND))


def random(data: dict, rng: np.random.Generator) -> list[int]:
    """Each subset taken with probability 1/3: often leaves elements uncovered."""
    return [i for i in range(len(data["subsets"])) if rng.random() < 1 / 3]


def trivial(data: dict) -> list[int]:
    """Every subset: covers whatever any cover covers, the floor a non-solver reaches."""
    return list(range(len(data["subsets"])))
