"""Importing mmnp and verifying an answer must not pull in the heavy libraries (OR-Tools,
pandas, matplotlib, aiohttp, torch): every reward worker and `mmnp verify` call pays for them."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("ortools", "pandas", "matplotlib", "aiohttp", "torch", "transformers", "datasets", "trl", "vllm", "pyarrow")
COMPILER = ("numba", "llvmlite")  # some heuristics compile their loops: generating may load it, scoring never

VERIFY_EVERY_TASK = """
import json, sys, mmnp
for task in mmnp.list_tasks():
    inst = task.generate("easy", 0)
    task.verify(inst, "Answer: " + task.verifier.format(inst.reference["heuristic"]["solution"]))
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


def _imported(code: str) -> set[str]:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_import_generate_and_verify_stay_light():
    assert not _imported(VERIFY_EVERY_TASK) & set(HEAVY)


def test_verifying_every_task_loads_no_compiler(tmp_path):
    """What a reward worker does for each task (a record in, an answer scored) never loads numba:
    only heuristics (colouring, bisection), at generation, compile."""
    import mmnp

    records = []
    for task in mmnp.list_tasks():
        inst = task.generate("medium", 0)
        records.append([task.name, inst.to_record(), task.verifier.format(inst.reference["heuristic"]["solution"])])
    path = tmp_path / "records.json"
    path.write_text(json.dumps(records))
    loaded = _imported(f"import json, sys, mmnp\nfor name, record, answer in json.load(open({str(path)!r})):\n"
                       "    assert mmnp.get_task(name).verify(record, 'Answer: ' + answer).feasible\n"
                       "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    assert not loaded & set(HEAVY + COMPILER)


def test_cli_startup_stays_light():
    loaded = _imported("import json, sys, mmnp.cli; print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    assert not loaded & set(HEAVY + COMPILER)


def test_exact_solving_still_loads_ortools():
    """The guard above is meaningful: the exact references do import OR-Tools."""
    loaded = _imported("import json, sys, mmnp; mmnp.get_task('knapsack').generate('easy', 0, optimal=True, "
                       "time_limit=0.1); print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    assert "ortools" in loaded


def test_reward_workers_stay_light():
    """verl's reward workers import `mmnp.trainers.rewards.verl` and score every response there:
    the training layer's package must not pull torch, TRL or OR-Tools in with it."""
    loaded = _imported("import json, sys, mmnp\nfrom mmnp.trainers.rewards import record_payload\n"
                       "from mmnp.trainers.rewards.verl import compute_score\n"
                       "inst = mmnp.get_task('knapsack').generate('easy', 0)\n"
                       "assert compute_score('mmnp/knapsack', 'Answer: []', record_payload(inst), {'reward': 'shaped'}) < 1\n"
                       "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    assert not loaded & set(HEAVY + COMPILER)
