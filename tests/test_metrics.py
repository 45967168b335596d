"""Standard errors and level order of evaluation/metrics.py."""

from __future__ import annotations

import math
import random
from statistics import stdev

import pytest

from mmnp.evaluation.metrics import aggregate, instance_metrics, level_key

CATEGORIES = {"tsp": "planning", "vertex_cover": "graph", "graph_coloring": "graph", "knapsack": "selection"}


def _sample(feasible: bool, ratio: float) -> dict:
    return {"feasible": feasible, "ratio": ratio, "opt_ratio": min(ratio, 1.0), "failed": False,
            "parsed": True, "canonical": [1] if feasible else None}


def _row(task: str, difficulty: str, ratios: list[float]) -> dict:
    """One instance with one sample per ratio (0 = infeasible)."""
    return {"task": task, "difficulty": difficulty,
            "metrics": instance_metrics([_sample(r > 0, r) for r in ratios])}


def test_task_stderr_is_the_standard_error_of_the_mean_over_instances():
    qrs = [0.9, 0.5, 0.0, 0.7, 1.1]
    rows = [_row("tsp", "easy", [q]) for q in qrs]
    task = aggregate(rows, CATEGORIES)["tasks"]["tsp"]
    srs = [float(q > 0) for q in qrs]
    assert task["sr_se"] == pytest.approx(stdev(srs) / math.sqrt(5))
    assert task["qr_se"] == pytest.approx(stdev(qrs) / math.sqrt(5))
    assert task["sr_at_1_se"] == pytest.approx(task["sr_se"]) and task["qr_at_1_se"] == pytest.approx(task["qr_se"])


def test_stderr_of_best_of_n_uses_per_instance_best_not_samples():
    # two instances, three samples each: per-instance QR (best) is 0.8 and 0.2; QR@1 means are 0.4 and 0.2
    rows = [_row("tsp", "easy", [0.8, 0.4, 0.0]), _row("tsp", "easy", [0.2, 0.2, 0.2])]
    task = aggregate(rows, CATEGORIES)["tasks"]["tsp"]
    assert task["qr_se"] == pytest.approx(stdev([0.8, 0.2]) / math.sqrt(2))
    assert task["qr_at_1_se"] == pytest.approx(stdev([0.4, 0.2]) / math.sqrt(2))


def test_stderr_propagates_through_means_of_tasks_and_categories():
    rows = ([_row("vertex_cover", "easy", [q]) for q in (1.0, 0.0, 1.0, 1.0)]
            + [_row("graph_coloring", "easy", [q]) for q in (0.0, 0.0, 1.0)]
            + [_row("tsp", "easy", [q]) for q in (0.9, 0.8)])
    agg = aggregate(rows, CATEGORIES)
    t = agg["tasks"]
    graph = math.hypot(t["vertex_cover"]["sr_se"], t["graph_coloring"]["sr_se"]) / 2
    assert agg["categories"]["graph"]["sr_se"] == pytest.approx(graph)
    assert agg["categories"]["planning"]["sr_se"] == pytest.approx(t["tsp"]["sr_se"]) == 0.0  # both feasible
    assert agg["overall"]["sr_se"] == pytest.approx(math.hypot(graph, 0.0) / 2)
    macro = math.sqrt(sum(t[x]["qr_se"] ** 2 for x in t)) / 3
    assert agg["macro_over_tasks"]["qr_se"] == pytest.approx(macro)


def test_one_instance_has_no_stderr_and_neither_has_a_mean_over_it():
    rows = [_row("tsp", "easy", [0.9]), _row("knapsack", "easy", [0.5]), _row("knapsack", "easy", [0.7])]
    agg = aggregate(rows, CATEGORIES)
    assert agg["tasks"]["tsp"]["sr_se"] is None and agg["tasks"]["knapsack"]["qr_se"] == pytest.approx(0.1)
    assert agg["categories"]["planning"]["qr_se"] is None and agg["overall"]["qr_se"] is None
    assert agg["categories"]["selection"]["qr_se"] == pytest.approx(0.1)


def test_stderr_matches_the_spread_of_the_mean_over_repeated_benchmarks():
    """Coverage check: the mean reported standard error of a task's SR is close to the standard
    deviation of that SR across many independently drawn sets of 40 instances."""
    rng = random.Random(7)
    srs, ses = [], []
    for _ in range(300):
        rows = [_row("tsp", "easy", [1.0 if rng.random() < 0.3 else 0.0 for _ in range(2)]) for _ in range(40)]
        task = aggregate(rows, CATEGORIES)["tasks"]["tsp"]
        srs.append(task["sr"])
        ses.append(task["sr_se"])
    assert sum(ses) / len(ses) == pytest.approx(stdev(srs), rel=0.15)


def test_levels_order_by_ladder_position_numerically():
    names = ["L10", "hard", "L2", "bench", "easy", "zeta", "L6", "medium", "L1", "alpha", "L9"]
    assert sorted(names, key=level_key) == ["L1", "easy", "L2", "medium", "hard", "bench", "L6", "L9", "L10",
                                            "alpha", "zeta"]


def test_aggregate_orders_ladder_levels_numerically():
    rows = [_row("tsp", level, [q]) for level in ("L10", "L2", "L1") for q in (1.0, 0.5)]
    agg = aggregate(rows, CATEGORIES)
    assert list(agg["difficulties"]) == ["L1", "L2", "L10"]
    assert list(agg["task_difficulty"]) == ["tsp/L1", "tsp/L2", "tsp/L10"]
    assert agg["difficulties"]["L2"]["qr_se"] == pytest.approx(agg["task_difficulty"]["tsp/L2"]["qr_se"])
