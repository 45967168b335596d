"""Reference solvers against published optima and at large sizes, on one core.

    python benchmarks/bench_solvers.py [--exact] [--time-limit 10] [--large-only | --classic-only]

Classic: per instance of the shipped classic set, the heuristic's objective, gap to the
published optimum and time (with --exact, the exact solver's objective, proof and time).
Large: per task, the heuristic's time and peak memory growth at sizes far beyond the hard
preset (generation included), to check it stays near a second and in bounded memory.

Targets: heuristic within 2% of every published optimum; exact == optimum where proven;
every heuristic within ~1 s at the large sizes below.
"""

from __future__ import annotations

import argparse
import resource
import time

from mmnp.clikit import script_main
from mmnp.importers import build_instance, classic_instances
from mmnp.registry import get_task
from mmnp.task import sample_params

# Sizes far beyond the hard presets (each still a valid generator configuration).
LARGE: dict[str, dict] = {
    "tsp": {"n": 200, "grid": 2000},
    "graph_coloring": {"n": 150, "colours": 10},
    "vertex_cover": {"n": 300, "density": 0.05},
    "knapsack": {"n": 2000, "max_weight": 1_000_000},
    "longest_cycle": {"n": 300, "density": 0.05},
    "max_clique": {"n": 300, "clique": 12, "density": 0.1},
    "set_cover": {"universe": 1000, "subsets": 200},
    "subset_sum": {"n": 500, "max_value": 10_000_000},
    "min_bisection": {"n": 300, "p_in": 0.05, "p_out": 0.01},
    "meeting_scheduling": {"meetings": 100, "people": 12, "rooms": 20},
}


def classic(exact: bool, time_limit: float) -> None:
    print(f"{'task':16s} {'instance':22s} {'optimum':>9s} {'heuristic':>9s} {'gap':>7s} {'time':>6s}"
          + (f" {'exact':>9s} {'proven':>6s} {'time':>6s}" if exact else ""))
    worst: dict[str, float] = {}
    for item in classic_instances():
        task = get_task(item.task)
        start = time.perf_counter()
        objective, _ = task.verifier.check(item.data, task.solver.heuristic(item.data))
        spent = time.perf_counter() - start
        gap = (objective - item.optimum) / item.optimum * (1 if task.direction == "min" else -1)
        worst[item.task] = max(worst.get(item.task, 0.0), gap)
        line = (f"{item.task:16s} {item.name:22s} {item.optimum:>9g} {objective:>9g} {gap:>7.2%} {spent:>5.2f}s")
        if exact:
            start = time.perf_counter()
            ref = build_instance(item, 0, "classic", optimal=True, time_limit=time_limit).reference["optimal"]
            line += f" {ref['objective']:>9g} {str(ref['proven']):>6s} {time.perf_counter() - start:>5.1f}s"
        print(line, flush=True)
    print("worst heuristic gap per task: " + ", ".join(f"{t} {g:.2%}" for t, g in worst.items()))


def large() -> None:
    print(f"\n{'task':20s} {'size':40s} {'generate':>9s} {'heuristic':>9s} {'peak RSS growth':>16s}")
    for name, overrides in LARGE.items():
        task = get_task(name)
        rng = task.rng("hard", 0)
        params = sample_params(task.config("hard", **overrides), rng)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.perf_counter()
        data, _ = task.generator.generate(params, rng)
        generated = time.perf_counter() - start
        start = time.perf_counter()
        solution = task.solver.heuristic(data)
        solved = time.perf_counter() - start
        objective, violations = task.verifier.check(data, solution)
        grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
        size = ", ".join(f"{k}={v}" for k, v in overrides.items())
        print(f"{name:20s} {size:40s} {generated:>8.2f}s {solved:>8.2f}s {grown:>13.0f} MB"
              + ("" if not violations else "  INFEASIBLE"), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--exact", action="store_true", help="also run the exact solver on the classic set")
    parser.add_argument("--time-limit", type=float, default=10.0, help="deterministic CP-SAT seconds")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--large-only", action="store_true")
    group.add_argument("--classic-only", action="store_true")
    args = parser.parse_args()
    if not args.large_only:
        classic(args.exact, args.time_limit)
    if not args.classic_only:
        large()


if __name__ == "__main__":
    raise SystemExit(script_main(main))
