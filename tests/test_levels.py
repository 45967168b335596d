"""The level ladder: named levels keep the presets, levels parse, records carry level and
hardness, and every task's top level generates within a memory limit."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap

import pytest

import mmnp
from mmnp.core import Instance
from mmnp.errors import UsageError
from mmnp.levels import NAMED, TOP, check_ladder, ladder, ladder_rows, level_config, level_of, parse_levels

SIZE = {"set_cover": "universe", "meeting_scheduling": "meetings"}


def test_every_task_declares_a_full_ladder(task):
    """Each task's generator module declares its own ladder; a missing or malformed one is refused."""
    check_ladder(ladder(task), task.presets, task.generator.Config)
    assert len(ladder(task)) == TOP
    with pytest.raises(ValueError, match="10 entries"):
        check_ladder(ladder(task)[:-1], task.presets, task.generator.Config)
    with pytest.raises(ValueError, match="no field"):
        check_ladder(({"no_such_field": 1},) + ladder(task)[1:], task.presets, task.generator.Config)


def test_named_levels_are_exactly_the_presets(task):
    """easy/medium/hard keep today's parameters (so existing datasets and the benchmark hash
    stay valid); bench is L5."""
    for name in ("easy", "medium", "hard"):
        assert level_config(task, f"L{NAMED[name]}") == task.generator.PRESETS[name] == task.config(name)
    assert task.config("bench") == task.config("L5") == level_config(task, "bench")


def test_sizes_grow_with_the_level(task):
    """The main size parameter's range never shrinks up the ladder and grows beyond hard."""
    key = SIZE.get(task.name, "n")
    ranges = [getattr(task.config(f"L{lv}"), key) for lv in range(1, TOP + 1)]
    for lower, upper in zip(ranges, ranges[1:]):
        assert upper[0] >= lower[0] and upper[1] >= lower[1], (task.name, ranges)
    assert ranges[-1][0] > 2 * ranges[NAMED["hard"] - 1][0], "the top level should be far beyond hard"


@pytest.mark.parametrize("name", ["knapsack", "subset_sum"])
def test_upper_levels_make_cp_sat_search_where_medium_needs_none(name):
    """CP-SAT's presolve settles medium with no search; L8's hard families (large, nearly tied
    numbers) leave it searching and unproven within the same deterministic time."""
    task = mmnp.get_task(name)
    low = task.generate("medium", 0, optimal=True, time_limit=0.3).hardness
    high = task.generate("L8", 0, optimal=True, time_limit=0.3).hardness
    assert low["proven"] and low["num_branches"] == 0
    assert not high["proven"] and high["num_branches"] > 1000 and high["deterministic_time"] >= 0.3


def test_knapsack_and_subset_sum_ladder_rows_state_the_numbers_they_draw():
    """`mmnp tasks --levels` is truthful: every level's numbers lie within the ranges it shows."""
    knapsack, subset_sum = mmnp.get_task("knapsack"), mmnp.get_task("subset_sum")
    for level in range(1, TOP + 1):
        config, data = knapsack.config(f"L{level}"), knapsack.generate(f"L{level}", 0).data
        assert max(data["weights"]) <= config.max_weight and max(data["values"]) <= config.max_value, level
        config, data = subset_sum.config(f"L{level}"), subset_sum.generate(f"L{level}", 0).data
        assert config.min_value <= min(data["numbers"]) and max(data["numbers"]) <= config.max_value, level
    rows = {r["level"]: r["text"] for r in ladder_rows([knapsack])}
    assert "family=inverse_strong, max_weight=10_000_000" in rows["L10"] and "family=weak" in rows["L4"]


def test_parse_levels():
    assert parse_levels("1-3,7") == ["L1", "L2", "L3", "L7"]
    assert parse_levels("L4, bench,2,4") == ["L4", "L5", "L2"]
    assert parse_levels("all") == [f"L{i}" for i in range(1, TOP + 1)]
    for bad, words in (("0-3", "outside"), ("5-3", "empty"), ("x", "not a level"), ("11", "outside"), (" , ", "at least")):
        with pytest.raises(UsageError, match=words):
            parse_levels(bad)


def test_level_of():
    assert [level_of(d) for d in ("easy", "medium", "hard", "bench", "L7", "L10")] == [2, 3, 4, 5, 7, 10]
    assert level_of("L11") is None and level_of("L0") is None and level_of("extreme") is None


def test_unknown_difficulty_names_the_choices():
    with pytest.raises(UsageError, match="bench or a level L1..L10"):
        mmnp.get_task("tsp").config("L11")


def test_ladder_rows_cover_every_task_and_level():
    rows = ladder_rows()
    assert len(rows) == TOP * len(mmnp.list_tasks())
    tsp = [r for r in rows if r["task"] == "tsp"]
    assert [r["alias"] for r in tsp[:6]] == ["", "easy", "medium", "hard", "bench", ""]
    assert tsp[4]["params"]["n"] == [45, 55] and "n=45-55" in tsp[4]["text"]
    json.dumps(rows)  # JSON-ready for `mmnp tasks --json`


def test_level_instances_are_seeded_and_record_their_level():
    task = mmnp.get_task("knapsack")
    a, b = task.generate("L7", 3), task.generate("L7", 3)
    assert a.to_record() == b.to_record()
    assert a.level == 7 and a.difficulty == "L7" and a.hardness is None
    lo, hi = task.config("L7").n
    assert lo <= len(a.data["weights"]) <= hi
    assert task.generate("medium", 3).level == 3


def test_hardness_is_recorded_and_consistent():
    task = mmnp.get_task("vertex_cover")
    inst = task.generate("hard", 1, optimal=True, time_limit=2.0)
    h, ref = inst.hardness, inst.reference
    assert h["proven"] is ref["optimal"]["proven"]
    best, heuristic = ref["optimal"]["objective"], ref["heuristic"]["objective"]
    assert h["heuristic_gap"] == pytest.approx((heuristic - best) / best, abs=1e-6)
    assert h["deterministic_time"] > 0 and h["num_branches"] >= 0
    again = Instance.from_record(json.loads(json.dumps(inst.to_record())))
    assert again.level == 4 and again.hardness == h


def test_an_unproven_reference_says_so_with_its_bound():
    """A bisection of 60 vertices is not proven in 1 deterministic second: the record must say
    `proven: false` and carry CP-SAT's bound, which no cut can beat."""
    inst = mmnp.get_task("min_bisection").generate("L5", 3, optimal=True, time_limit=1.0)
    optimal = inst.reference["optimal"]
    assert optimal["proven"] is False and inst.hardness["proven"] is False
    assert 0 <= optimal["bound"] < optimal["objective"]
    proven = mmnp.get_task("tsp").generate("L1", 0, optimal=True, time_limit=2.0).reference["optimal"]
    assert proven["proven"] is True and "bound" not in proven


def test_no_exact_solution_in_time_falls_back_to_the_heuristic_unproven():
    """CP-SAT finds nothing for 145+ cities in 0.05 deterministic seconds: the best known is
    then the heuristic's tour, marked unproven, instead of a crash."""
    task = mmnp.get_task("tsp")
    inst = task.generate("L10", 0, optimal=True, time_limit=0.05)
    assert inst.reference["optimal"]["proven"] is False and "bound" not in inst.reference["optimal"]
    assert inst.reference["optimal"]["objective"] == inst.reference["heuristic"]["objective"]
    assert inst.hardness["heuristic_gap"] == 0.0 and inst.hardness["proven"] is False


def test_old_records_without_level_still_load():
    record = mmnp.get_task("tsp").generate("easy", 0).to_record()
    del record["level"], record["hardness"]
    inst = Instance.from_record(record)
    assert inst.level is None and inst.hardness is None


MEMORY_LIMIT = 3 << 30


def test_every_task_generates_its_top_level_under_a_memory_limit():
    """Heuristic reference, exact solver (briefly) and picture at L10, in a child process whose
    address space is capped (a table that outgrows memory fails here, not on a user's machine)."""
    code = textwrap.dedent(f"""
        import resource, json
        resource.setrlimit(resource.RLIMIT_AS, ({MEMORY_LIMIT}, {MEMORY_LIMIT}))
        import mmnp
        out = {{}}
        for task in mmnp.list_tasks():
            inst = task.generate("L{TOP}", 0, optimal=True, time_limit=0.2)
            png = task.render(inst)
            out[task.name] = [inst.level, len(png) > 1000, inst.reference["heuristic"]["objective"] > 0]
        print(json.dumps(out))
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-2000:]
    out = json.loads(result.stdout)
    assert out == {t.name: [TOP, True, True] for t in mmnp.list_tasks()}


def test_overrides_apply_on_top_of_a_level():
    task = mmnp.get_task("tsp")
    config = task.config("L8", n="12")
    assert config.n == 12 and dataclasses.replace(task.config("L8"), n=12) == config


# Content hashes of L1-L5 (easy, medium, hard, bench among them), seeds 0-4, every task, as the
# code before the hard upper levels generated them: only L6-L10 may change.
LOW_LEVELS_DIGEST = "a46ba06aa0633900e11c93a7fcf3eed713f4342dfe20ae4208635016e8b656b4"


def test_levels_one_to_five_keep_their_instances():
    import hashlib

    digest = hashlib.sha256()
    for task in mmnp.list_tasks():
        for level in ("L1", "L2", "L3", "L4", "L5"):
            for seed in range(5):
                digest.update(task.generate(level, seed).hash.encode())
    assert digest.hexdigest() == LOW_LEVELS_DIGEST


def _degrees(data: dict) -> list[int]:
    degree = [0] * data["n"]
    for u, v in data["edges"]:
        degree[u] += 1
        degree[v] += 1
    return degree


def test_hidden_cliques_and_independent_sets_do_not_stand_out_by_degree():
    """A planted clique's members have more neighbours than the rest unless hidden; hidden,
    their mean degree is the others' (within noise), and the clique is still one."""
    import numpy as np

    clique = mmnp.get_task("max_clique")
    for hidden, apart in ((False, True), (True, False)):
        gaps = []
        for seed in range(6):
            inst = clique.generate("L10", seed, hidden=hidden)
            members, degree = set(inst.reference["planted"]["solution"]), _degrees(inst.data)
            edges = {tuple(e) for e in inst.data["edges"]}
            assert all((u, v) in edges for u in members for v in members if u < v)
            gaps.append(np.mean([degree[v] for v in members]) - np.mean([d for v, d in enumerate(degree) if v not in members]))
        assert (np.mean(gaps) > 2.5 if apart else abs(np.mean(gaps)) < 1.5), (hidden, gaps)
    cover = mmnp.get_task("vertex_cover")
    for hidden, apart in ((False, True), (True, False)):
        gaps = []
        for seed in range(6):
            inst = cover.generate("L10", seed, hidden=hidden)
            chosen, degree = set(inst.reference["planted"]["solution"]), _degrees(inst.data)
            outside = [v for v in range(inst.data["n"]) if v not in chosen]
            inside = set(outside)
            assert not any(u in inside and v in inside for u, v in inst.data["edges"])  # an independent set
            gaps.append(np.mean([degree[v] for v in chosen]) - np.mean([degree[v] for v in outside]))
        assert (np.mean(gaps) > 2.5 if apart else abs(np.mean(gaps)) < 1.5), (hidden, gaps)


def test_upper_graph_levels_use_their_hard_families():
    """From L6: colouring without the planted clique (its chromatic number is the graph's own,
    below the planted colours), random geometric graphs for longest cycle (no planted cycle)."""
    colouring = mmnp.get_task("graph_coloring")
    inst = colouring.generate("L8", 0)
    assert inst.params["clique"] is False and "clique" not in colouring.generate("L5", 0).params
    assert inst.reference["heuristic"]["objective"] < inst.params["colours"]
    cycle = mmnp.get_task("longest_cycle")
    inst = cycle.generate("L8", 0)
    assert inst.params["family"] == "geometric" and "planted" not in inst.reference
    assert not cycle.verifier.check(inst.data, inst.reference["heuristic"]["solution"])[1]


@pytest.mark.parametrize("name", ["tsp", "graph_coloring", "vertex_cover", "max_clique"])
def test_graph_tasks_top_levels_are_unproven_where_medium_is_proven(name):
    """The calibration's finding, on one instance each: CP-SAT proves medium in a fraction of a
    deterministic second and leaves L10 unproven at the same limit, having used all of it (at
    TSP's top it has not even left its root LP: 0 branches)."""
    task = mmnp.get_task(name)
    low = task.generate("medium", 0, optimal=True, time_limit=0.5).hardness
    high = task.generate("L10", 0, optimal=True, time_limit=0.5).hardness
    assert low["proven"] and low["deterministic_time"] < 0.5
    assert not high["proven"] and high["deterministic_time"] >= 0.5 > 10 * low["deterministic_time"]
