"""Calibrate the level ladder (mmnp/levels.py): per task and level, generate a few instances
with the exact solver and measure what makes an instance hard.

    nice python benchmarks/calibrate_levels.py --count 3 --time-limit 1 --workers 2 \
        --cache runs/levels.json --plot docs/images/levels.png

Columns: size (the main size parameter, mean over the instances), prompt chars (the text
prompt's length), gap (the heuristic's mean relative gap to the best known objective), proven
(share of instances the exact solver proved optimal within the deterministic time limit: CP-SAT,
and for set cover its bit-set branch and bound after CP-SAT, with a budget set by the limit), bound gap (the
relative distance from the best known objective to the recorded bound, CP-SAT's or set cover's
Lagrangian one where tighter: 0 when proven, 100% when
CP-SAT found nothing in time or its bound is trivial), dtime (CP-SAT's mean deterministic time, the machine-free
work measure), branches (its mean search branches), gen s and total s (mean wall seconds for the
instance with its heuristic reference, and with the exact solver too), rand SR / rand QR (the
`solver:random` baseline's success rate and mean quality ratio, 8 draws per instance). A level
where no hardness measure (gap, proof rate, bound gap, dtime, branches) is at least the
previous level's is marked with `!`; a cell where cpsat's wall-clock guard stopped CP-SAT before
its deterministic limit (a loaded machine: the measures there understate the work) with `w`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from mmnp.clikit import script_main
from mmnp.levels import TOP, level_name
from mmnp.registry import get_task, resolve_tasks

SIZE = {"set_cover": "universe", "meeting_scheduling": "meetings"}  # else "n"
RANDOM_DRAWS = 8


def measure(job: tuple[str, int, int, float]) -> dict:
    """One task x level cell: `count` instances, seeds 0..count-1."""
    name, level, count, time_limit = job
    task = get_task(name)
    rows = []
    for seed in range(count):
        start = time.perf_counter()
        fast = task.generate(level_name(level), seed)
        gen_s = time.perf_counter() - start
        start = time.perf_counter()
        inst = task.generate(level_name(level), seed, optimal=True, time_limit=time_limit)
        total_s = time.perf_counter() - start
        rng = np.random.default_rng(seed)
        sr = qr = 0.0
        for _ in range(RANDOM_DRAWS):
            verdict = task.check(inst, task.solver.random(inst.data, rng))
            sr += verdict.feasible / RANDOM_DRAWS
            qr += task.quality_ratio(verdict.objective, inst.reference_objective) / RANDOM_DRAWS
        assert fast.hash == inst.hash
        optimal = inst.reference["optimal"]
        bound = optimal.get("bound")  # unproven: the recorded bound; no bound at all when CP-SAT found nothing
        bound_gap = 0.0 if optimal["proven"] else 1.0 if bound is None else abs(optimal["objective"] - bound) / optimal["objective"]
        # stopped by cpsat's wall-clock guard before its deterministic limit: a loaded machine
        capped = not optimal["proven"] and inst.hardness["deterministic_time"] < 0.98 * time_limit
        rows.append({"size": inst.params[SIZE.get(name, "n")], "chars": len(inst.prompt), "capped": capped,
                     "gap": inst.hardness["heuristic_gap"], "bound_gap": bound_gap,
                     "proven": inst.hardness["proven"], "dtime": inst.hardness["deterministic_time"],
                     "branches": inst.hardness["num_branches"], "gen_s": gen_s, "total_s": total_s,
                     "rand_sr": sr, "rand_qr": qr})
    cell = {key: float(np.mean([r[key] for r in rows])) for key in rows[0]}
    return {"task": name, "level": level, "count": count, "time_limit": time_limit, **cell}


def harder(a: dict, b: dict) -> bool:
    """Whether cell `b` is at least as hard as `a` on some measure (the ladder's promise)."""
    return (b["gap"] >= a["gap"] or b["proven"] < a["proven"] or b["dtime"] >= a["dtime"]
            or b["bound_gap"] > a["bound_gap"] or b["branches"] >= a["branches"])


def table(cells: list[dict]) -> str:
    head = ("| task | level | size | prompt chars | gap % | proven | bound gap % | dtime | branches | gen s | total s "
            "| rand SR | rand QR |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    previous = None
    for c in cells:
        flag = " !" if previous and previous["task"] == c["task"] and not harder(previous, c) else ""
        flag += " w" * (c["capped"] > 0)
        lines.append(f"| {c['task']} | L{c['level']}{flag} | {c['size']:.1f} | {c['chars']:.0f} | {100 * c['gap']:.2f} | "
                     f"{c['proven']:.2f} | {100 * c['bound_gap']:.1f} | {c['dtime']:.3f} | {c['branches']:.0f} | {c['gen_s']:.3f} | "
                     f"{c['total_s']:.2f} | {c['rand_sr']:.2f} | {c['rand_qr']:.3f} |")
        previous = c
    return "\n".join(lines)


def plot(cells: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("gap", "heuristic gap to best known (%)", 100, False), ("proven", "exact solver's proof rate", 1, False),
              ("dtime", "CP-SAT deterministic time (s, log)", 1, True),
              ("bound_gap", "gap between best known and the recorded bound (%)", 100, False)]
    fig, axes = plt.subplots(2, 2, figsize=(12, 8), constrained_layout=True)
    tasks = list(dict.fromkeys(c["task"] for c in cells))
    colours = plt.get_cmap("tab10")
    for ax, (key, label, scale, log) in zip(axes.flat, panels):
        for i, name in enumerate(tasks):
            mine = [c for c in cells if c["task"] == name]
            ax.plot([c["level"] for c in mine], [scale * c[key] + (1e-4 if log else 0) for c in mine],
                    marker="o", ms=3, color=colours(i), label=name)
        ax.set_title(label)
        ax.set_xlabel("level")
        ax.set_xticks(range(1, TOP + 1))
        if log:
            ax.set_yscale("log")
        ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=8, ncol=2)
    limit = cells[0]["time_limit"]
    fig.suptitle(f"mmnp level ladder: {cells[0]['count']} instances per cell, CP-SAT limit {limit:g} deterministic s "
                 "(easy=L2, medium=L3, hard=L4, bench=L5)")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}.png")
    fig.savefig(tmp, dpi=110)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default="all")
    parser.add_argument("--levels", default="1-10", help="e.g. 1-10 or 3,5")
    parser.add_argument("--count", type=int, default=3, help="instances per task and level")
    parser.add_argument("--time-limit", type=float, default=2.0, help="CP-SAT deterministic seconds per instance")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--cache", type=Path, help="JSON file of measured cells: reused, and extended as cells finish")
    parser.add_argument("--plot", type=Path, help="PNG to draw the calibration into")
    args = parser.parse_args(argv)

    from mmnp.levels import level_of, parse_levels

    levels = [level_of(name) for name in parse_levels(args.levels)]
    names = [t.name for t in resolve_tasks(args.tasks)]
    cached = json.loads(args.cache.read_text()) if args.cache and args.cache.exists() else []
    key = lambda c: (c["task"], c["level"], c["count"], c["time_limit"])  # noqa: E731
    have = {key(c): c for c in cached}
    jobs = [(n, lv, args.count, args.time_limit) for n in names for lv in levels
            if (n, lv, args.count, args.time_limit) not in have]
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        for cell in pool.map(measure, jobs):
            have[key(cell)] = cell
            print(f"{cell['task']} L{cell['level']}: gap {100 * cell['gap']:.2f}% proven {cell['proven']:.2f} "
                  f"dtime {cell['dtime']:.3f}", file=sys.stderr, flush=True)
            if args.cache:
                args.cache.parent.mkdir(parents=True, exist_ok=True)
                tmp = args.cache.with_name(f".{args.cache.name}.tmp")
                tmp.write_text(json.dumps(list(have.values()), indent=0))
                os.replace(tmp, args.cache)
    cells = [have[(n, lv, args.count, args.time_limit)] for n in names for lv in levels]
    print(table(cells))
    if args.plot:
        plot(cells, args.plot)
        print(f"wrote {args.plot}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(script_main(main))
