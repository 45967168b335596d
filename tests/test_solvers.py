"""Reference solvers beyond the presets: starts on any minute, edges in either order,
bounded-memory fallbacks, locally optimal bisections, large sizes under a memory limit."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from mmnp.registry import get_task
from mmnp.solvers import cpsat, knapsack, subset_sum
from mmnp.verifiers.meeting_scheduling import minutes


def _meetings(available: list[list[str]], durations: list[int]) -> dict:
    """Two people available in the same windows, one two-seat room, meetings of both."""
    people = [{"name": name, "available": available} for name in ("Ana", "Ben")]
    return {"day": ["09:00", "17:00"], "people": people, "rooms": [{"name": "Room 0", "capacity": 2}],
            "meetings": [{"duration": d, "attendees": [0, 1]} for d in durations]}


@pytest.mark.parametrize("solver", ["heuristic", "optimal"])
def test_meetings_start_on_any_minute_not_only_a_grid(solver):
    task = get_task("meeting_scheduling")
    # only 09:10 works: a 15-minute grid finds nothing, and would call that optimal
    single = _meetings([["09:10", "10:10"]], [60])
    # back to back from 09:10: the second starts at 10:00 or 10:05, the first on no grid at all
    chained = _meetings([["09:10", "11:00"]], [55, 50])
    for data, value in ((single, 2), (chained, 4)):
        if solver == "heuristic":
            schedule = task.solver.heuristic(data)
        else:
            schedule, proven = task.solver.optimal(data, 5.0, [])
            assert proven
        objective, violations = task.verifier.check(data, schedule)
        assert not violations and objective == value
        assert minutes("09:10") in [minutes(s) for _, _, s in schedule]  # off any 15-minute grid


def test_meeting_candidate_starts_keep_the_optimum_of_generated_instances():
    """On generated data (everything on a 30-minute grid) the exact solver still proves the
    planted schedule's value or better."""
    task = get_task("meeting_scheduling")
    for seed in range(4):
        inst = task.generate("hard", seed, optimal=True, time_limit=5.0)
        assert inst.reference["optimal"]["proven"]
        assert inst.reference["optimal"]["objective"] >= inst.reference["planted"]["objective"]


@pytest.mark.parametrize("name", ["max_clique", "longest_cycle"])
def test_graph_verifiers_accept_edges_stored_in_either_order(name):
    task = get_task(name)
    inst = task.generate("medium", 3)
    data = dict(inst.data, edges=[[v, u] for u, v in inst.data["edges"]])  # every edge as [v, u], v > u
    solution = inst.reference["heuristic"]["solution"]
    objective, violations = task.verifier.check(data, solution)
    assert not violations and objective == inst.reference["heuristic"]["objective"]
    edges = {tuple(sorted(e)) for e in inst.data["edges"]}
    u, v = next((u, v) for u in range(data["n"]) for v in range(u + 1, data["n"]) if (u, v) not in edges)
    w = next(w for w in range(data["n"]) if w not in (u, v))
    assert task.verifier.check(data, [u, v, w])[1]  # a non-edge is still refused


def test_knapsack_falls_back_to_bounded_memory_when_the_table_would_not_fit(monkeypatch):
    """Over DP_CELLS the heuristic never runs the capacity DP, and the better of greedy and the
    scaled DP stays within 2% of the exact DP on the hard preset."""
    task = get_task("knapsack")
    instances = [task.generate("hard", seed).data for seed in range(10)]
    exact = [sum(d["values"][i] for i in knapsack.dp(d)) for d in instances]
    monkeypatch.setattr(knapsack, "DP_CELLS", 0)
    monkeypatch.setattr(knapsack, "dp", lambda data: pytest.fail("the DP ran over its cell budget"))
    for data, best in zip(instances, exact):
        objective, violations = task.verifier.check(data, knapsack.heuristic(data))
        assert not violations and objective >= 0.98 * best


def _pisinger(kind: str, n: int, spread: int, share: float, rng: np.random.Generator) -> dict:
    """Pisinger's uncorrelated or weakly correlated items ("Where are the hard knapsack
    problems?", 2005), the capacity a share of the total weight."""
    weights = rng.integers(1, spread + 1, n)
    if kind == "uncorrelated":
        values = rng.integers(1, spread + 1, n)
    else:
        values = np.maximum(1, weights + rng.integers(-spread // 10, spread // 10 + 1, n))
    return {"capacity": int(share * weights.sum()), "weights": weights.tolist(), "values": values.tolist()}


def test_knapsack_with_large_coefficients_stays_near_the_optimum(monkeypatch):
    """Weights up to 10^6: on Pisinger's uncorrelated and weakly correlated items whose capacity
    DP does not fit (76 of 80) the heuristic is within 0.1% of the optimum (OR-Tools' knapsack
    branch and bound, proven), where greedy with swaps alone is more than 2% below on some; the
    scaled DP alone is within 1% up to 100 items (its n (K - 1) bound) and leaves no room an
    item left out would fit."""
    from ortools.algorithms.python import knapsack_solver

    task = get_task("knapsack")
    monkeypatch.setattr(knapsack, "dp", lambda data: pytest.fail("the DP ran over its cell budget"))
    rng = np.random.default_rng(0)
    greedy_gaps = []
    for kind in ("uncorrelated", "weakly correlated"):
        for n in (20, 50, 100, 200):
            for share in np.arange(1, 101, 10) / 101:
                data = _pisinger(kind, n, 10**6, share, rng)
                if n * (data["capacity"] + 1) <= knapsack.DP_CELLS:
                    continue  # the exact DP's (the smallest capacity at n = 20 and 50)
                exact = knapsack_solver.KnapsackSolver(
                    knapsack_solver.SolverType.KNAPSACK_MULTIDIMENSION_BRANCH_AND_BOUND_SOLVER, "exact")
                exact.init(data["values"], [data["weights"]], [data["capacity"]])
                best = exact.solve()
                assert exact.is_solution_optimal()
                objective, violations = task.verifier.check(data, knapsack.heuristic(data))
                assert not violations and objective >= 0.999 * best, (kind, n, share)
                chosen = knapsack.scaled_dp(data)
                scaled, _ = task.verifier.check(data, chosen)
                assert n > 100 or scaled >= 0.99 * best, (kind, n, share)
                room = data["capacity"] - sum(data["weights"][i] for i in chosen)
                assert all(data["weights"][i] > room for i in set(range(n)) - set(chosen))  # filled
                greedy_gaps.append(1 - task.verifier.check(data, knapsack.greedy(data))[0] / best)
    assert len(greedy_gaps) == 76 and max(greedy_gaps) > 0.02


def test_subset_sum_meet_in_the_middle_is_exact_where_the_dp_does_not_fit(monkeypatch):
    """Few numbers of many digits (the upper levels): the DP's table is out of reach, and meet
    in the middle must still find the largest subset hitting the target (checked by brute force)."""
    import itertools

    task = get_task("subset_sum")
    monkeypatch.setattr(subset_sum, "dp", lambda data: pytest.fail("the DP ran over its cell budget"))
    for seed in range(4):
        data = task.generate("hard", seed, min_value=10**11, max_value=10**12).data
        numbers, target = data["numbers"], data["target"]
        best = max(k for k in range(len(numbers) + 1) for c in itertools.combinations(range(len(numbers)), k)
                   if sum(numbers[i] for i in c) == target)
        objective, violations = task.verifier.check(data, subset_sum.heuristic(data))
        assert not violations and objective == best
    # more numbers than one subset can hit by chance: several subsets of different sizes do
    rng = np.random.default_rng(0)
    numbers = [int(x) for x in rng.integers(1, 40, size=14)]
    data = {"numbers": numbers, "target": sum(numbers) // 2}
    best = max(k for k in range(15) for c in itertools.combinations(range(14), k)
               if sum(numbers[i] for i in c) == data["target"])
    assert len(subset_sum.meet_in_the_middle(data)) == best


def test_subset_sum_falls_back_to_an_exchange_search(monkeypatch):
    task = get_task("subset_sum")
    monkeypatch.setattr(subset_sum, "DP_CELLS", 0)
    monkeypatch.setattr(subset_sum, "MITM_MAX", 0)
    monkeypatch.setattr(subset_sum, "dp", lambda data: pytest.fail("the DP ran over its cell budget"))
    for seed in range(10):
        data = task.generate("hard", seed, max_value=10_000_000).data
        assert not task.verifier.check(data, subset_sum.heuristic(data))[1]


def _cut_after_best_move(n: int, edges: list[list[int]], half: list[int]) -> tuple[int, int]:
    """(cut, best cut reachable by one swap across the halves or, for odd n, one move from the
    larger half): an independent 1-swap local search step."""
    w = np.zeros((n, n), dtype=np.int64)
    for u, v in edges:
        w[u, v] = w[v, u] = 1
    a = np.zeros(n, dtype=bool)
    a[half] = True
    cut = int(w[a][:, ~a].sum())
    ext_minus_int = np.where(a[:, None] == a[None, :], -w, w).sum(1)  # per vertex: external - internal
    swap = ext_minus_int[a][:, None] + ext_minus_int[~a][None, :] - 2 * w[a][:, ~a]
    best = cut - int(swap.max()) if swap.size else cut
    if n % 2:
        big = a if a.sum() > (~a).sum() else ~a
        best = min(best, cut - int(ext_minus_int[big].max()))
    return cut, best


def test_min_bisection_references_lose_to_no_single_swap():
    """The recorded references (heuristic, and CP-SAT stopped by its time limit) are local
    optima: a 1-swap search started from them finds no better cut."""
    task = get_task("min_bisection")
    for seed in range(3):
        inst = task.generate("hard", seed, optimal=True, time_limit=0.5)
        for kind in ("heuristic", "optimal"):
            ref = inst.reference[kind]
            cut, best = _cut_after_best_move(inst.data["n"], inst.data["edges"], ref["solution"])
            assert cut == ref["objective"] and best >= cut, (seed, kind, cut, best)


LARGE = {  # far beyond the hard presets; the old knapsack/subset-sum DPs needed terabytes here
    "knapsack": {"n": 2000, "max_weight": 1_000_000},
    "subset_sum": {"n": 500, "max_value": 10_000_000},
    "set_cover": {"universe": 600, "subsets": 150},
    "vertex_cover": {"n": 200, "density": 0.05},
    "meeting_scheduling": {"meetings": 60, "people": 12, "rooms": 12},
    "tsp": {"n": 150, "grid": 2000},
    "min_bisection": {"n": 150, "p_in": 0.05, "p_out": 0.01},
}


@pytest.mark.slow
def test_heuristics_at_large_sizes_finish_under_an_address_space_limit():
    script = textwrap.dedent(f"""
        import json, resource
        resource.setrlimit(resource.RLIMIT_AS, (2 * 1024 ** 3, 2 * 1024 ** 3))
        from mmnp.registry import get_task
        out = {{}}
        for name, overrides in json.loads({json.dumps(json.dumps(LARGE))}).items():
            task = get_task(name)
            inst = task.generate("hard", 0, **overrides)  # runs the heuristic
            out[name] = inst.reference["heuristic"]["objective"]
        print(json.dumps(out))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    objectives = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(objectives) == set(LARGE) and all(v > 0 for v in objectives.values())


def _brute_clique(n: int, edges: list[list[int]]) -> int:
    import itertools

    adjacent = {tuple(e) for e in edges} | {(v, u) for u, v in edges}
    return max(k for k in range(1, n + 1) for c in itertools.combinations(range(n), k)
               if all((u, v) in adjacent for u, v in itertools.combinations(c, 2)))


def test_clique_branch_and_bound_is_exact_and_its_bound_holds_when_stopped():
    from mmnp.kits.graphs import neighbour_masks
    from mmnp.solvers.max_clique import CliqueSearch

    rng = np.random.default_rng(1)
    for _ in range(8):
        n = 13
        edges = [[u, v] for u in range(n) for v in range(u + 1, n) if rng.random() < 0.55]
        search = CliqueSearch(n, neighbour_masks({"n": n, "edges": edges}))
        assert search.run(10_000)
        assert len(search.best) == search.bound == _brute_clique(n, edges)
    # stopped after 50 nodes on brock200_4 (clique number 17): the bound still covers it
    from mmnp.importers import classic_instances

    brock = next(i for i in classic_instances() if i.name == "brock200_4")
    search = CliqueSearch(brock.data["n"], neighbour_masks(brock.data))
    assert not search.run(50) and len(search.best) <= 17 <= search.bound


def test_the_local_searches_alone_reach_published_optima():
    """DLS-MC (no branch and bound) finds brock200_4's hidden 17-clique, which greedy growth
    misses; RWLS takes OR-Library scp41 (unit costs) from the greedy 41 subsets to the best
    known 38."""
    from mmnp.kits.graphs import neighbour_masks
    from mmnp.importers import classic_instances
    from mmnp.solvers import max_clique, set_cover

    classic = {(i.task, i.name): i for i in classic_instances()}
    brock = classic["max_clique", "brock200_4"].data
    found, made = max_clique.local_search(brock["n"], neighbour_masks(brock), [], 150_000, 17)
    assert len(found) == 17 and made <= 150_000
    a = set_cover._matrix(classic["set_cover", "scp41"].data)
    start = set_cover.greedy(a)
    assert start.sum() == 41
    assert set_cover.local_search(a, start, 38, 60_000, 60_000)[0].sum() == 38


@pytest.mark.parametrize("name", ["vertex_cover", "set_cover"])
def test_cover_heuristics_stop_when_a_bound_proves_them(name, monkeypatch):
    """On the presets the covers are proven optimal (a lower bound reached, or the exact
    search finished) before any local search: it must not run there (it used to run its whole
    patience), and the answer is CP-SAT's optimum."""
    from mmnp.solvers import max_clique, set_cover

    target = max_clique if name == "vertex_cover" else set_cover
    monkeypatch.setattr(target, "local_search", lambda *a, **k: pytest.fail("the local search ran"))
    task = get_task(name)
    for difficulty in ("easy", "medium", "hard"):
        for seed in range(4):
            inst = task.generate(difficulty, seed, optimal=True, time_limit=5.0)
            assert inst.reference["optimal"]["proven"]
            assert inst.reference["heuristic"]["objective"] == inst.reference["optimal"]["objective"]


def test_set_cover_lower_bound_never_exceeds_the_optimum():
    from mmnp.solvers import set_cover

    task = get_task("set_cover")
    for seed in range(6):
        inst = task.generate("L7", seed)
        a = set_cover._matrix(inst.data)
        solution, proven = task.solver.optimal(inst.data, 5.0, inst.reference["heuristic"]["solution"])
        bound = set_cover.lower_bound(a, int(set_cover.greedy(a).sum()))
        assert 0 < bound <= len(solution) or not proven


def test_tsp_tours_are_two_opt_optimal():
    """No pair of tour edges can be exchanged for a shorter tour (checked over all pairs, not
    only the neighbour lists the search uses)."""
    from mmnp.solvers import tsp

    task = get_task("tsp")
    for difficulty, seed in (("medium", 0), ("medium", 1), ("L7", 0)):
        data = task.generate(difficulty, seed).data
        d, tour = tsp.distances(data), task.solver.heuristic(data)
        n = len(tour)
        for i in range(n):
            for j in range(i + 2, n if i else n - 1):
                a, b, c, e = tour[i], tour[i + 1], tour[j], tour[(j + 1) % n]
                assert d[a, b] + d[c, e] <= d[a, c] + d[b, e], (difficulty, seed, i, j)


def test_longest_cycle_heuristic_is_close_on_random_graphs_near_the_threshold():
    """No Hamiltonian cycle is planted there: the heuristic must search the blocks (it used to
    find cycles 20-90% short of CP-SAT's optimum on such graphs). G(n, p) at L9's sizes, where
    CP-SAT still proves its optimum (the ladder's own L9 is the geometric family, which it
    does not prove)."""
    task = get_task("longest_cycle")
    for seed in range(3):
        inst = task.generate("L9", seed, family="random")
        solution, proven = task.solver.optimal(inst.data, 5.0, inst.reference["heuristic"]["solution"])
        assert proven and inst.reference["heuristic"]["objective"] >= 0.95 * len(solution)


def test_a_compiled_loop_runs_where_numba_cannot_cache(monkeypatch):
    """A read-only install with no home folder gives numba's cache nowhere to write, and
    njit(cache=True) raises: the loop is then compiled without the cache, not refused."""
    import numba

    from mmnp.solvers.compiled import compiled

    real_njit, asked = numba.njit, []

    def njit(*args, cache=False, **kwargs):
        if not args:  # the decorator's own call (numba's internals call njit on functions too)
            asked.append(cache)
        if cache:
            raise RuntimeError("cannot cache function 'loop': no locator available for file 'x.py'")
        return real_njit(*args, cache=False, **kwargs)

    monkeypatch.setattr(numba, "njit", njit)

    def loop(values):
        total = 0
        for v in values:
            total += v * v
        return total

    squares = compiled(loop)
    assert squares(np.arange(5)) == 30 and asked == [True, False]
    assert squares.py_func is loop


def test_the_compiled_twister_draws_what_pythons_random_draws():
    """The compiled searches make the moves of the Python code they replaced by drawing from
    Python's own Mersenne Twister: `twister` is getrandbits(32), `randbelow` is randrange(n)
    (rejection on the top bits), from Random(seed)'s state, past the 624-word regeneration."""
    from random import Random

    from mmnp.solvers.compiled import randbelow, twister, twister_state

    for seed in (0, 1, 12345):
        state, position = twister_state(seed)
        python = Random(seed)
        for _ in range(1_500):
            position, word = twister(state, position)
            assert word == python.getrandbits(32)
        for n in (1, 2, 3, 5, 100, 801, 2**31 + 7):
            for _ in range(200):
                position, draw = randbelow(state, position, n)
                assert draw == python.randrange(n)
    with pytest.raises(ValueError):
        randbelow(state, position, 0)



def test_a_hamiltonian_hint_is_proven_optimal_even_where_cp_sat_finds_nothing(monkeypatch):
    """No cycle is longer than one through every vertex: with a Hamiltonian hint the exact reference is
    proven whatever CP-SAT reaches in its time, while a shorter hint stays unproven."""
    task = get_task("longest_cycle")
    inst = task.generate("medium", 0)
    hamiltonian = inst.reference["heuristic"]["solution"]
    assert len(hamiltonian) == inst.data["n"]

    def nothing(model, time_limit, **parameters):
        raise cpsat.NoSolution("CP-SAT found no solution (UNKNOWN) within the time limit")

    monkeypatch.setattr(cpsat, "solve", nothing)
    best, _ = task.best_known(inst.data, inst.reference["heuristic"])
    assert best["proven"] and best["objective"] == inst.data["n"]
    triangle = task.solver.trivial(inst.data)
    shorter = {"objective": task.verifier.check(inst.data, triangle)[0], "solution": triangle}
    assert not task.best_known(inst.data, shorter)[0]["proven"]
