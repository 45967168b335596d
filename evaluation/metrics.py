"""The metrics of METRICS.md: per sample, per instance (n samples), and their aggregation
by task, difficulty, category and overall."""

from __future__ import annotations

from collections import defaultdict
from statistics import mean
from typing import Iterable

import numpy as np

from mmnp.core import CATEGORIES, DIFFICULTIES

BEST_TOLERANCE = 1e-9  # opt_ratio at or above 1 - this reaches the best-known objective


def pass_at_k(n: int, c: int, k: int) -> float:
    """Chen et al.'s unbiased estimator 1 - C(n-c, k) / C(n, k), in its stable product form."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def instance_metrics(samples: list[dict]) -> dict:
    """Metrics of one instance from its n sample records (each with feasible, ratio,
    opt_ratio, failed and canonical)."""
    n = len(samples)
    feasible = [s["feasible"] for s in samples]
    ratios = [s["ratio"] for s in samples]
    best = sum(1 for s in samples if s["feasible"] and s["opt_ratio"] >= 1 - BEST_TOLERANCE)
    c = sum(feasible)
    distinct = {repr(s["canonical"]) for s in samples if s["feasible"]}
    return {
        "n": n,
        "sr_at_1": c / n,  # avg@n of feasibility
        "qr_at_1": mean(ratios),  # avg@n of the quality ratio
        "sr": float(c > 0),  # NP-Bench: any sample feasible
        "qr": max(ratios),  # NP-Bench: best ratio over the samples
        "opt_ratio": max(s["opt_ratio"] for s in samples),
        "pass_at_k": {str(k): pass_at_k(n, c, k) for k in range(1, n + 1)},
        "pass_at_k_opt": {str(k): pass_at_k(n, best, k) for k in range(1, n + 1)},
        "distinct": len(distinct),
        "fail_rate": sum(1 for s in samples if s["failed"]) / n,
        "parse_rate": sum(1 for s in samples if s["parsed"]) / n,
    }


SCALARS = ("sr_at_1", "qr_at_1", "sr", "qr", "opt_ratio", "distinct", "fail_rate", "parse_rate")


def average(rows: Iterable[dict]) -> dict:
    """Unweighted mean of instance (or task) metric dicts, pass@k curves included."""
    rows = list(rows)
    if not rows:
        return {}
    out = {key: mean(r[key] for r in rows) for key in SCALARS}
    for curve in ("pass_at_k", "pass_at_k_opt"):
        ks = set.intersection(*(set(r[curve]) for r in rows))
        out[curve] = {k: mean(r[curve][k] for r in rows) for k in sorted(ks, key=int)}
    out["instances"] = sum(r.get("instances", 1) for r in rows)
    return out


def aggregate(per_instance: list[dict], categories: dict[str, str]) -> dict:
    """Task, task x difficulty, category and overall scores from per-instance rows
    ({"task", "difficulty", "metrics"}). Category = mean of its tasks; overall = mean of
    the categories present (NP-Bench), plus the macro mean over tasks."""
    by_task: dict[str, list[dict]] = defaultdict(list)
    by_cell: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in per_instance:
        by_task[row["task"]].append(row["metrics"])
        by_cell[row["task"], row["difficulty"]].append(row["metrics"])
    tasks = {t: average(rows) for t, rows in by_task.items()}
    difficulty = {f"{t}/{d}": average(rows) for (t, d), rows in sorted(by_cell.items())}
    by_category: dict[str, list[dict]] = defaultdict(list)
    for t, m in tasks.items():
        by_category[categories[t]].append(m)
    cats = {c: average(by_category[c]) for c in CATEGORIES if c in by_category}
    levels = sorted({d for _, d in by_cell}, key=lambda d: (d not in DIFFICULTIES, DIFFICULTIES.index(d) if d in DIFFICULTIES else d))
    return {
        "overall": average(cats.values()),
        "macro_over_tasks": average(tasks.values()),
        "categories": cats,
        "tasks": tasks,
        "difficulties": {d: average(difficulty[k] for k in difficulty if k.endswith(f"/{d}")) for d in levels},
        "task_difficulty": difficulty,
    }
