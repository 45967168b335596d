"""Generated references against independent optima (tests/independent_optima.py): per
instance, the heuristic reference, the exact reference (mmnp's CP-SAT formulation) and the
optimum of a second exact formulation on another model (TSP: DFJ subtour elimination on
SCIP; meeting scheduling: integer starts over every minute on CP-SAT).

    nice python benchmarks/check_references.py [--count 34] [--seed 2027] [--time-limit 10]

Defaults: mm-np-bench-v2's instances (seed 2027) of TSP hard and meeting scheduling medium
and hard. Prints one line per instance and the counts of references equal to the independent
optimum; exits 1 when any differs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from mmnp.clikit import script_main

sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))

CELLS = (("tsp", "hard"), ("meeting_scheduling", "medium"), ("meeting_scheduling", "hard"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=34)
    parser.add_argument("--seed", type=int, default=2027, help="the dataset seed (2027: mm-np-bench-v2)")
    parser.add_argument("--time-limit", type=float, default=10.0, help="deterministic CP-SAT seconds")
    args = parser.parse_args(argv)

    from independent_optima import meeting_optimum, tsp_optimum

    from mmnp.dataset import instance_seed
    from mmnp.registry import get_task

    bad = 0
    for name, difficulty in CELLS:
        task = get_task(name)
        same = {"heuristic": 0, "optimal": 0, "proven": 0}
        for index in range(args.count):
            inst = task.generate(difficulty, instance_seed(args.seed, index), optimal=True, time_limit=args.time_limit)
            start = time.process_time()
            if name == "tsp":
                truth = tsp_optimum(inst.data["coords"])
            else:
                truth = meeting_optimum(inst.data)
            spent = time.process_time() - start
            heuristic, optimal = inst.reference["heuristic"]["objective"], inst.reference["optimal"]
            same["heuristic"] += heuristic == truth
            same["optimal"] += optimal["objective"] == truth
            same["proven"] += bool(optimal["proven"])
            flag = "" if heuristic == optimal["objective"] == truth else "  <-- differs"
            bad += bool(flag)
            print(f"{name} {difficulty} {index:2d}: independent {truth} ({spent:.1f}s), heuristic {heuristic:g}, exact "
                  f"{optimal['objective']:g} (proven {optimal['proven']}, dtime {inst.hardness['deterministic_time']}, "
                  f"branches {inst.hardness['num_branches']}){flag}", flush=True)
        print(f"== {name} {difficulty}: of {args.count}, heuristic = independent optimum {same['heuristic']}, "
              f"exact = independent optimum {same['optimal']}, exact proven {same['proven']}\n", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(script_main(main))
