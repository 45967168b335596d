"""What the harness calls: the documents of one mmnp task, and their scoring by mmnp's verifier."""

from __future__ import annotations

import json
from typing import Any

from mmnp.core import DIFFICULTIES
from mmnp.errors import UsageError
from mmnp.registry import get_task


def load_docs(data: str | None = None, task: str | None = None, difficulty: str | list[str] | None = None,
              **_: Any):
    """`custom_dataset` of every mmnp task: `data` and `difficulty` come from `--metadata` (or
    `data` from the folder `python -m mmnp.lm_eval_tasks --data` wrote), `task` from the task's
    `dataset_kwargs` (the harness passes both; `version` and the rest are its own). lm_eval 0.4
    cannot run a task with no documents, so a task the data lacks is refused in one line that
    names the tasks it holds."""
    import datasets

    if not data:
        raise UsageError("mmnp's lm_eval tasks need the data: take the folder from `python -m mmnp.lm_eval_tasks "
                         "--data PATH`, or pass --metadata '{\"data\": \"PATH\"}', with a folder from `mmnp generate`, "
                         "an `mmnp export` folder or a Hub dataset (hf://owner/name)")
    difficulties = _difficulties(difficulty)
    from mmnp.dataset import select_instances  # the same checked reading as `mmnp eval --data`

    try:
        instances = select_instances([task], difficulties, data=data).instances
    except UsageError:
        _refuse_missing(data, task, difficulties)
        raise
    docs = [{"id": i.id, "task": i.task, "difficulty": i.difficulty, "prompt": i.prompt,
             "instance": json.dumps(i.data, separators=(",", ":")), "reference_objective": float(i.reference_objective)}
            for i in instances]
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(docs)})


def _difficulties(difficulty: str | list[str] | None) -> list[str]:
    """--metadata's "difficulty" ("easy,medium" or ["easy", "medium"]; every difficulty when absent)."""
    if difficulty is None:
        return list(DIFFICULTIES)
    names = difficulty.split(",") if isinstance(difficulty, str) else difficulty
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names) \
            or not [n for n in names if n.strip()]:
        raise UsageError(f"--metadata \"difficulty\": {json.dumps(difficulty)} is not a list of difficulties; give "
                         "\"easy,medium\" or [\"easy\", \"medium\"]")
    return [n.strip() for n in names if n.strip()]


def _refuse_missing(data: str, task: str, difficulties: list[str]) -> None:
    """One line for a task `data` holds no instances of at `difficulties`, naming what it holds."""
    from mmnp.dataset import open_data

    counts = open_data(data).manifest["counts"]
    if any(counts.get(task, {}).get(d) for d in difficulties):
        return  # not a missing task: the caller's error stands
    at = ",".join(difficulties)
    held = [t for t in counts if any(counts[t].get(d) for d in difficulties)]
    if not held:
        levels = ",".join(dict.fromkeys(d for t in counts for d in counts[t]))
        raise UsageError(f"{data} holds no instances at difficulty {at}; it holds {levels}: pass "
                         f"--metadata '{{\"difficulty\": \"{levels}\"}}'") from None
    group = "" if task in counts else (f", or the group mmnp_text of `python -m mmnp.lm_eval_tasks --data {data}`, "
                                       "which lists only the tasks it holds")
    raise UsageError(f"{data} holds no {task} instances at {at}, and lm_eval runs no task without documents: pass "
                     f"--tasks {','.join(f'mmnp_text_{t}' for t in held)}{group}") from None


def process_results(doc: dict, results: list[str]) -> dict[str, float]:
    """`sr` and `qr` of the model's answer, exactly as `mmnp eval` scores one sample."""
    task = get_task(doc["task"])
    verdict = task.verify({"task": doc["task"], "instance": json.loads(doc["instance"])}, results[0])
    return {"sr": 1.0 if verdict.feasible else 0.0, "qr": task.quality_ratio(verdict.objective, doc["reference_objective"])}
