"""The metrics of METRICS.md: per sample, per instance (n samples), and their aggregation
by task, difficulty (level), category and overall, with analytic standard errors.

Standard errors are of the mean over instances: a task's (or task x level cell's) `sr_se` is
the sample standard deviation of its per-instance SR (ddof=1) over sqrt(instances); a mean of
independent groups (category = mean of tasks, overall = mean of categories, a level = mean of its
task cells) has sqrt(sum of squared group errors) / groups. A group with one instance has no
standard error (null), and neither has any mean that includes it: an error bar is true or absent.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from statistics import mean, stdev
from typing import Iterable

import numpy as np

from mmnp.core import CATEGORIES

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
# the scalars that carry a standard error, and its key
STDERR = {"sr": "sr_se", "qr": "qr_se", "sr_at_1": "sr_at_1_se", "qr_at_1": "qr_at_1_se"}

# where the named difficulties sit on the level ladder (mmnp.levels.NAMED): easy is L2, ...
from mmnp.levels import NAMED as NAMED_LEVELS  # noqa: E402  (easy = L2, ..., bench = L5)


def level_key(name: str) -> tuple:
    """Sort key of difficulty names by ladder position: L1 < easy (= L2) < L2 < medium < ... <
    bench < L6 < ... (numerically, so L10 after L9), then any other name alphabetically."""
    if name in NAMED_LEVELS:
        return 0, NAMED_LEVELS[name], 0, ""
    ladder = re.fullmatch(r"[Ll](\d+)", name)
    if ladder:
        return 0, int(ladder.group(1)), 1, ""
    return 1, 0, 0, name


def _stderr_of_mean(values: list[float]) -> float | None:
    return stdev(values) / math.sqrt(len(values)) if len(values) > 1 else None


def _stderr_of_mean_of_groups(errors: list[float | None]) -> float | None:
    if not errors or any(e is None for e in errors):
        return None
    return math.sqrt(sum(e * e for e in errors)) / len(errors)


def over_instances(groups: Iterable[dict]) -> dict:
    """The scalars and pass@k curves of the union of disjoint groups of instances (tasks), each
    instance weighing the same: each group's mean weighed by its instance count (exact: a group's
    figures are means over its instances), and its standard error combined likewise, each group
    taken as fixed (as `average` of groups takes them: the spread between tasks is not counted). A
    figure some group lacks is left out."""
    groups = [g for g in groups if g and g.get("instances")]
    total = sum(g["instances"] for g in groups)
    if not total:
        return {}
    out: dict = {"instances": total}
    for key in SCALARS:
        if all(g.get(key) is not None for g in groups):
            out[key] = sum(g["instances"] * g[key] for g in groups) / total
    for key, se in STDERR.items():
        errors = [g.get(se) for g in groups]
        if key in out and all(e is not None for e in errors):
            out[se] = math.sqrt(sum((g["instances"] * e) ** 2 for g, e in zip(groups, errors))) / total
    for curve in ("pass_at_k", "pass_at_k_opt"):
        if all(isinstance(g.get(curve), dict) for g in groups):
            ks = set.intersection(*(set(g[curve]) for g in groups))
            out[curve] = {k: sum(g["instances"] * g[curve][k] for g in groups) / total for k in sorted(ks, key=int)}
    return out


def average(rows: Iterable[dict], of_groups: bool = False) -> dict:
    """Unweighted mean of instance metric dicts (or, `of_groups`, of group averages such as
    tasks), pass@k curves included, with the standard errors of STDERR (see the module doc)."""
    rows = list(rows)
    if not rows:
        return {}
    out = {key: mean(r[key] for r in rows) for key in SCALARS}
    for key, se in STDERR.items():
        out[se] = (_stderr_of_mean_of_groups([r.get(se) for r in rows]) if of_groups
                   else _stderr_of_mean([r[key] for r in rows]))
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
    cells = sorted(by_cell, key=lambda cell: (cell[0], level_key(cell[1])))
    difficulty = {f"{t}/{d}": average(by_cell[t, d]) for t, d in cells}
    by_category: dict[str, list[dict]] = defaultdict(list)
    for t, m in tasks.items():
        by_category[categories[t]].append(m)
    cats = {c: average(by_category[c], of_groups=True) for c in CATEGORIES if c in by_category}
    levels = sorted({d for _, d in by_cell}, key=level_key)
    return {
        "overall": average(cats.values(), of_groups=True),
        "macro_over_tasks": average(tasks.values(), of_groups=True),
        "categories": cats,
        "tasks": tasks,
        "difficulties": {d: average((difficulty[f"{t}/{d}"] for t, level in cells if level == d), of_groups=True)
                         for d in levels},
        "task_difficulty": difficulty,
    }
