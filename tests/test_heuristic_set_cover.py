"""The set cover heuristic's local search (RWLS with lazy weights) against a plain reading of
RWLS that keeps every weight and recomputes every score from scratch, and its stopping rules.
Its steps are compiled (numba): they must make the moves of the list-based Python search they
replaced (kept here as `python_rwls`, as mmnp ran it through a0c564e), cover for cover and step
for step; every generated set cover reference depends on them."""

from __future__ import annotations

from random import Random

import numpy as np
import pytest

from mmnp.solvers import set_cover

_SHIFT = 40  # bits of a timestamp in python_rwls's ranks


def _plain_rwls(a: np.ndarray, start: np.ndarray, bound: int, steps: int) -> list[int]:
    """RWLS as written in the paper: explicit element weights, each uncovered one + 1 per step,
    scores summed afresh; the same tie-breaks (oldest, then lowest id) and the same draws."""
    m, universe = a.shape
    rows = [set(np.flatnonzero(a[s]).tolist()) for s in range(m)]
    chosen = set(np.flatnonzero(start).tolist())
    weight = [1] * universe
    stamp = [0] * m
    can_add = [True] * m
    draw = Random(0).random
    uncovered_order: list[int] = []  # the search draws from its own list order: mirror it

    def count(e: int) -> int:
        return sum(e in rows[k] for k in chosen)

    def loss(s: int) -> int:
        return sum(weight[e] for e in rows[s] if count(e) == 1)

    def gain(s: int) -> int:
        return sum(weight[e] for e in rows[s] if count(e) == 0)

    def flip(s: int, add: bool) -> None:
        before = {e: count(e) for e in rows[s]}
        (chosen.add if add else chosen.discard)(s)
        for e in sorted(rows[s]):
            now = count(e)
            if (before[e] == 0) != (now == 0):
                for k in range(m):
                    if e in rows[k]:
                        can_add[k] = True
                if now == 0:
                    uncovered_order.append(e)
                else:
                    i = uncovered_order.index(e)
                    uncovered_order[i] = uncovered_order[-1]
                    uncovered_order.pop()

    uncovered_order.extend(e for e in range(universe) if count(e) == 0)
    best = sorted(chosen)
    tabu = -1
    for step in range(1, steps + 1):
        while not uncovered_order:
            if len(chosen) < len(best):
                best = sorted(chosen)
            if len(best) <= bound:
                return best
            s = min(chosen, key=lambda k: (loss(k), stamp[k], k))
            flip(s, False)
            can_add[s], stamp[s] = False, step
        s = min((k for k in chosen if k != tabu or len(chosen) == 1), key=lambda k: (loss(k), stamp[k], k))
        flip(s, False)
        can_add[s], stamp[s] = False, step
        e = uncovered_order[int(draw() * len(uncovered_order))]
        options = [k for k in range(m) if e in rows[k]]
        t = max([k for k in options if can_add[k]] or options, key=lambda k: (gain(k), -stamp[k], -k))
        flip(t, True)
        stamp[t], tabu = step, t
        for e in uncovered_order:
            weight[e] += 1
    return best


def _random_instance(seed: int, universe: int = 40, subsets: int = 30, density: float = 0.12) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = (rng.random((subsets, universe)) < density).astype(np.int8)
    for e in range(universe):  # every element held by two subsets at least
        a[rng.choice(subsets, 2, replace=False), e] = 1
    return a


def python_rwls(a: np.ndarray, start: np.ndarray, bound: int, steps: int, patience: int,
                 seed: int = 0) -> tuple[list[int], int]:
    """`set_cover.local_search` in Python lists (its docstring says what the search does)."""
    m, universe = a.shape
    rows = [np.flatnonzero(a[s]).tolist() for s in range(m)]
    holders = [np.flatnonzero(column).tolist() for column in a.T]
    count = [0] * universe  # chosen subsets holding each element
    sole = [0] * universe  # xor of those subsets: the only one where count is 1
    chosen = [False] * m
    inside: list[int] = []  # the chosen subsets, `where` their positions
    where = [-1] * m
    for s in np.flatnonzero(start).tolist():
        chosen[s], where[s] = True, len(inside)
        inside.append(s)
        for e in rows[s]:
            count[e] += 1
            sole[e] ^= s
    clock = 0  # steps so far: the weight each uncovered element has gained since it was uncovered
    weight = [1] * universe  # a covered element's weight; an uncovered one's, less the clock
    uncovered = [e for e in range(universe) if count[e] == 0]  # `spot` their positions
    spot = [-1] * universe
    gain_base = [0] * m  # an unchosen subset's gain is gain_base + clock * open_count
    open_count = [0] * m  # its uncovered elements
    for i, e in enumerate(uncovered):
        spot[e] = i
        for k in holders[e]:
            gain_base[k] += 1
            open_count[k] += 1
    ids = m.bit_length()  # rank: a chosen subset's (loss, timestamp, id) in one int, the smallest leaves
    unit = 1 << (_SHIFT + ids)  # a loss of one
    rank = [s for s in range(m)]
    for s in inside:
        rank[s] += sum(count[e] == 1 for e in rows[s]) * unit
    stamp = [0] * m
    can_add = [True] * m
    best, best_size, last_better = list(inside), len(inside), 0
    draw = Random(seed).random
    tabu, step = -1, 0

    def remove(s: int) -> None:
        chosen[s] = False
        i, last = where[s], inside.pop()
        if last != s:
            inside[i], where[last] = last, i
        for e in rows[s]:
            c = count[e] = count[e] - 1
            x = sole[e] = sole[e] ^ s
            if c == 0:  # uncovered: every holder would gain it
                spot[e] = len(uncovered)
                uncovered.append(e)
                w = weight[e] = weight[e] - clock
                for k in holders[e]:
                    gain_base[k] += w
                    open_count[k] += 1
                    can_add[k] = True
            elif c == 1:  # its remaining holder would now lose it
                rank[x] += weight[e] * unit
        can_add[s] = False
        stamp[s] = step

    while step < steps and step - last_better <= patience:
        step += 1
        while not uncovered:  # a cover: keep it, then try one subset fewer
            if len(inside) < best_size:
                best, best_size, last_better = list(inside), len(inside), step
            if best_size <= bound:
                return sorted(best), step
            remove(min(inside, key=rank.__getitem__))
        if tabu >= 0 and chosen[tabu] and len(inside) > 1:
            rank[tabu] += 1 << 200  # out of reach for this choice (the removal may still change its loss)
            remove(min(inside, key=rank.__getitem__))
            rank[tabu] -= 1 << 200
        else:
            remove(min(inside, key=rank.__getitem__))
        options = holders[uncovered[int(draw() * len(uncovered))]]
        t, top = -1, 0
        for k in [k for k in options if can_add[k]] or options:
            value = ((gain_base[k] + open_count[k] * clock) << _SHIFT) - stamp[k]
            if t < 0 or value > top:
                t, top = k, value
        chosen[t], where[t] = True, len(inside)
        inside.append(t)
        gained = 0
        for e in rows[t]:
            c = count[e] = count[e] + 1
            x, sole[e] = sole[e], sole[e] ^ t
            if c == 1:  # covered: no other holder gains it any more
                i, last = spot[e], uncovered.pop()
                if last != e:
                    uncovered[i], spot[last] = last, i
                w = weight[e]
                weight[e] = w + clock
                gained += w + clock
                for k in holders[e]:
                    gain_base[k] -= w
                    open_count[k] -= 1
                    can_add[k] = True
            elif c == 2:  # its previous sole holder would no longer lose it
                rank[x] -= weight[e] * unit
        stamp[t] = step
        rank[t] = gained * unit | step << ids | t
        tabu = t
        clock += 1
    return sorted(best), step

def test_compiled_search_makes_the_python_searchs_moves():
    """The same cover and the same number of steps as the Python search, over budgets, patiences,
    seeds and bounds, on random instances of varied density (ties everywhere on the sparse ones)."""
    rng = np.random.default_rng(23)
    for case in range(120):
        universe, subsets = int(rng.integers(5, 90)), int(rng.integers(3, 60))
        a = _random_instance(case, universe, subsets, float(rng.uniform(0.02, 0.4)))
        start = set_cover.greedy(a) if case % 3 else np.ones(subsets, dtype=bool)
        bound = int(rng.integers(1, max(2, start.sum())))
        steps, patience, seed = int(rng.integers(0, 3_000)), int(rng.integers(0, 800)), case % 5
        found, spent = set_cover.local_search(a, start, bound, steps, patience, seed)
        assert (np.flatnonzero(found).tolist(), spent) == python_rwls(a, start, bound, steps, patience, seed), case


def test_compiled_search_makes_the_python_searchs_moves_on_published_covers():
    """OR-Library scp41 and the clr set scpclr10 (shipped), 6,000 steps from greedy's cover with
    the bound at 1 (the search never stops early): the same cover, seeds 0 and 1, and past the
    Mersenne Twister's first refill of 624 words."""
    from mmnp.importers import classic_instances

    classic = {i.name: i for i in classic_instances() if i.task == "set_cover"}
    for name in ("scp41", "scpclr10"):
        a = set_cover._matrix(classic[name].data)
        start = set_cover.greedy(a)
        for seed in (0, 1):
            found, spent = set_cover.local_search(a, start, 1, 6_000, 6_000, seed)
            assert (np.flatnonzero(found).tolist(), spent) == python_rwls(a, start, 1, 6_000, 6_000, seed)


def test_the_search_refuses_what_has_no_cover_to_start_from():
    """An empty start or an element no subset holds: a clear error, not an answer (the compiled
    steps would otherwise add subset -1 or return nothing as a cover)."""
    a = _random_instance(1)
    with pytest.raises(ValueError, match="non-empty start"):
        set_cover.local_search(a, np.zeros(len(a), dtype=bool), 1, 100, 100)
    a[:, 3] = 0
    with pytest.raises(ValueError, match="every element"):
        set_cover.local_search(a, np.ones(len(a), dtype=bool), 1, 100, 100)


def test_lazy_weights_follow_the_plain_reading_step_by_step():
    """Same covers after every budget: the incremental scores, the lazy weight growth and the
    configuration checking make the same choices as recomputing everything each step."""
    for seed in range(3):
        a = _random_instance(seed)
        start = set_cover.greedy(a)
        for steps in (1, 7, 60, 400):
            fast = np.flatnonzero(set_cover.local_search(a, start, 0, steps, steps)[0]).tolist()
            assert fast == _plain_rwls(a, start, 0, steps), (seed, steps)


def test_the_search_stops_at_the_bound_and_keeps_its_best():
    """A planted cover of 4 among decoys: the search returns a cover of 4 once it has one
    (bound reached), and never returns a cover worse than its start."""
    rng = np.random.default_rng(5)
    universe, planted = 60, 4
    a = np.zeros((40, universe), dtype=np.int8)
    owner = rng.permutation(np.arange(universe) % planted)
    for j in range(planted):
        a[j, owner == j] = 1
    for s in range(planted, 40):
        a[s, rng.choice(universe, 18, replace=False)] = 1
    start = set_cover.greedy(a)
    found = set_cover.local_search(a, start, planted, 50_000, 50_000)[0]
    assert found.sum() == planted and a[found].max(0).min() == 1
    assert set_cover.local_search(a, start, 0, 0, 0)[0].sum() == start.sum()


def test_published_sts_and_clr_covers_within_budget():
    """Steiner triple covering STS81 (61, optimal) and the clr set scpclr10 (25), both shipped:
    the local search alone, from greedy's cover, reaches them."""
    from mmnp.importers import classic_instances

    classic = {i.name: i for i in classic_instances() if i.task == "set_cover"}
    for name, best in (("stn81", 61), ("scpclr10", 25)):
        a = set_cover._matrix(classic[name].data)
        start = set_cover.greedy(a)
        assert start.sum() > best
        assert set_cover.local_search(a, start, best, 20_000, 20_000)[0].sum() == best, name


def test_restarts_free_a_stuck_run_within_one_shared_budget():
    """OR-Library scp41 (38) and scp61 (21), both shipped: with 10,000 steps of patience the
    seed-0 run stops one above the optimum, the restarts (seeds 1, 2) reach it; and the runs
    share one budget: a budget that seed 0's run alone spends leaves no second run."""
    from mmnp.importers import classic_instances

    classic = {i.name: i for i in classic_instances() if i.task == "set_cover"}
    for name, best in (("scp41", 38), ("scp61", 21)):
        a = set_cover._matrix(classic[name].data)
        start = set_cover.greedy(a)
        alone, spent = set_cover.local_search(a, start, best, 100_000, 10_000, 0)
        assert alone.sum() == best + 1, name
        found = set_cover.restarts(a, start, best, 100_000, 10_000)
        assert found.sum() == best and a[found].max(0).min() == 1, name
        assert set_cover.restarts(a, start, best, spent, 10_000).sum() == best + 1, name


def test_restarts_go_on_until_the_budget_is_spent():
    """No cap on the number of runs: on scp44 (38, shipped) with 5,000 steps of patience, seeds
    0-3 stop above the optimum and seed 4 reaches it; the restarts find it within a budget that
    holds those five runs, and not within one that holds only the first four."""
    from mmnp.importers import classic_instances

    data = next(i.data for i in classic_instances() if i.task == "set_cover" and i.name == "scp44")
    a, best, patience = set_cover._matrix(data), 38, 5_000
    start = set_cover.greedy(a)
    runs = [set_cover.local_search(a, start, best, 100_000, patience, seed) for seed in range(5)]
    assert [int(found.sum()) > best for found, _ in runs] == [True] * 4 + [False]
    four = sum(spent for _, spent in runs[:4])
    assert set_cover.restarts(a, start, best, four + runs[4][1], patience).sum() == best
    assert set_cover.restarts(a, start, best, four, patience).sum() > best


def _affine_triples(dim: int) -> dict:
    """The Steiner triple system of the affine space AG(dim, 3) as a set cover: an element per
    line {x, y, -(x + y)}, a subset per point holding its lines. A cover's complement holds no
    line (a cap), so the optimum is 3^dim minus the largest cap: 617 at dim 6 (caps of 112),
    the best known of OR-Library's STS729, which has its size."""
    points = [tuple(p) for p in np.ndindex(*(3,) * dim)]
    index = {p: i for i, p in enumerate(points)}
    subsets: list[list[int]] = [[] for _ in points]
    for x, px in enumerate(points):
        for y in range(x + 1, len(points)):
            z = index[tuple(-(a + b) % 3 for a, b in zip(px, points[y]))]
            if z > y:
                line = sum(map(len, subsets)) // 3 + 1
                for p in (x, y, z):
                    subsets[p].append(line)
    return {"universe": sum(map(len, subsets)) // 3, "subsets": subsets}


def test_runs_on_many_elements_wait_for_the_weights_to_reshape_the_search():
    """On 88,452 elements (AG(6, 3)'s triple system, STS729's size) RWLS runs sit on a plateau
    for longer than the per-subset budget and patience allow before they improve: with patience
    of at least PATIENCE_PER_ELEMENT steps per element, and twice that per run of budget, the
    heuristic makes a smaller cover than the same runs within the per-subset settings (647:
    raising only the budget gives 646, only the patience 647)."""
    data = _affine_triples(6)
    a = set_cover._matrix(data)
    assert a.shape == (729, 88_452) and (a.sum(0) == 3).all()
    start = set_cover.greedy(a)
    m, cost = len(a), set_cover._step_cost(a, start)
    per_subset = min(set_cover.PATIENCE, max(set_cover.PATIENCE_PER_SUBSET * m, set_cover.PATIENCE_WORK // cost))
    assert per_subset < set_cover.PATIENCE_PER_ELEMENT * a.shape[1]
    impatient = set_cover.restarts(a, start, 0, min(set_cover.STEPS_PER_SUBSET * m, set_cover.WORK // cost),
                                   per_subset)
    found = set_cover.heuristic(data)
    assert a[found].max(0).min() == 1
    assert len(found) < impatient.sum() - 5, (len(found), int(impatient.sum()))


def test_exact_search_stops_at_its_bit_set_work_budget():
    """The exact search's second budget, in words of bit-set work: a planted instance it solves
    within its node budget is left unfinished (greedy's cover returned) when the words run out."""
    rng = np.random.default_rng(3)
    universe, planted = 200, 5
    owner = rng.permutation(np.arange(universe) % planted)
    subsets = [sorted(int(e) + 1 for e in np.flatnonzero(owner == j)) for j in range(planted)]
    subsets += [sorted(int(e) + 1 for e in rng.choice(universe, 60, replace=False)) for _ in range(25)]
    data = {"universe": universe, "subsets": subsets}
    a = set_cover._matrix(data)
    start = set_cover.greedy(a)
    found, finished = set_cover.branch_and_bound(data, start, 1, set_cover.NODES)
    assert finished and len(found) == planted
    found, finished = set_cover.branch_and_bound(data, start, 1, set_cover.NODES, words=4 * 200)
    assert not finished and found == np.flatnonzero(start).tolist()


def test_exact_search_finds_the_optimum_of_small_instances():
    """The exact search, with its packing and cardinality bounds, against every combination of
    subsets on small random instances (a bound that overstates prunes the optimum away)."""
    from itertools import combinations

    rng = np.random.default_rng(11)
    for _ in range(60):
        universe, m = int(rng.integers(6, 16)), int(rng.integers(5, 13))
        subsets = [sorted({int(e) + 1 for e in rng.choice(universe, int(rng.integers(1, universe // 2 + 2)),
                                                          replace=False)}) for _ in range(m)]
        subsets.append(sorted(set(range(1, universe + 1)) - set().union(*subsets)) or [1])  # a cover exists
        data = {"universe": universe, "subsets": subsets}
        masks = [set(s) for s in subsets]
        smallest = next(k for k in range(1, len(subsets) + 1) if any(
            len(set().union(*(masks[i] for i in pick))) == universe for pick in combinations(range(len(subsets)), k)))
        a = set_cover._matrix(data)
        found, finished = set_cover.branch_and_bound(data, set_cover.greedy(a), 1, set_cover.NODES)
        assert finished and len(found) == smallest
        assert set().union(*(masks[i] for i in found)) == set(range(1, universe + 1))


# L8's sizes (about 70 subsets of 75 elements) with the default subset sizes, 15-35% of the
# universe: optima of 5-9 subsets (the ladder's L8 draws smaller subsets, to be hard for this search)
WIDE_L8 = {"other_size": (0.15, 0.35), "planted_fraction": (0.25, 0.4)}


def _cp_sat_alone(data: dict, limit: float):
    """CP-SAT on the exact solver's model (the same constraints in the same order), without
    mmnp's search after it: (solver, proven)."""
    from ortools.sat.python import cp_model

    from mmnp.solvers import cpsat

    model = cp_model.CpModel()
    x = [model.NewBoolVar("") for _ in data["subsets"]]
    for e in range(1, data["universe"] + 1):
        model.AddBoolOr([x[i] for i, s in enumerate(data["subsets"]) if e in s])
    model.Minimize(sum(x))
    return cpsat.solve(model, limit)


def test_cardinality_bound_proves_generated_covers_the_packing_bound_cannot():
    """On covers of L8's size with wide subsets the exact search finishes within 8,000 nodes
    (with the packing bound alone it needs 20,000-40,000), at a cover no larger than CP-SAT's
    best on its own model (it proves two of these four only after 10 CPU s, two not within 30)."""
    from mmnp.registry import get_task

    task = get_task("set_cover")
    for seed in (0, 2, 6, 7):
        data = task.generate("L8", seed, **WIDE_L8).data
        a = set_cover._matrix(data)
        found, finished = set_cover.branch_and_bound(data, set_cover.greedy(a), 1, 8_000, words=1 << 40)
        assert finished, seed
        assert a[found].max(0).min() == 1
        solver, _ = _cp_sat_alone(data, 2.0)
        assert len(found) <= solver.objective_value, seed


def test_exact_solver_proves_by_bit_set_search_what_cp_sat_cannot():
    """CP-SAT leaves these wide L8 covers unproven at the default limit; the exact solver
    then proves them with the branch and bound, started from CP-SAT's cover (not the hint, so a
    poor hint ends at the same answer)."""
    from mmnp.registry import get_task
    from mmnp.solvers import cpsat

    task = get_task("set_cover")
    for seed in (2, 6):
        inst = task.generate("L8", seed, **WIDE_L8)
        data, good = inst.data, inst.reference["heuristic"]["solution"]
        limit = 1.0
        with cpsat.effort() as work:
            cover, proven = set_cover.optimal(data, limit, good)
        assert proven and len(cover) == len(good), seed
        assert set().union(*(data["subsets"][i] for i in cover)) == set(range(1, data["universe"] + 1))
        assert work["deterministic_time"] >= 0.9 * limit  # CP-SAT ran to its limit: the proof is the search's
        assert set_cover.optimal(data, limit, list(range(len(data["subsets"])))) == (cover, True), seed


def test_an_unproven_exact_answer_keeps_the_searchs_smaller_cover():
    """At L10 neither CP-SAT nor the search proves the optimum in 1 deterministic second; the
    exact answer is then the search's cover, smaller than CP-SAT's on the same model."""
    from mmnp.registry import get_task

    data = get_task("set_cover").generate("L10", 4).data
    cover, proven = set_cover.optimal(data, 1.0, list(range(len(data["subsets"]))))
    solver, cp_sat_proven = _cp_sat_alone(data, 1.0)
    assert not proven and not cp_sat_proven
    assert len(cover) < solver.objective_value
    assert set().union(*(data["subsets"][i] for i in cover)) == set(range(1, data["universe"] + 1))


def test_an_unproven_reference_records_the_tighter_lagrangian_bound():
    """CP-SAT's LP bound on an L10 cover is near 0 at its limit; the record carries the tighter
    Lagrangian bound instead, no larger than the recorded cover."""
    from mmnp.registry import get_task

    inst = get_task("set_cover").generate("L10", 4, optimal=True, time_limit=1.0)
    data, optimal = inst.data, inst.reference["optimal"]
    solver, _ = _cp_sat_alone(data, 1.0)
    assert not optimal["proven"]
    assert solver.best_objective_bound + 1 <= optimal["bound"] <= optimal["objective"]
