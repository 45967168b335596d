"""What the harness calls: the documents of one mmnp task, and their scoring by mmnp's verifier."""

from __future__ import annotations

import json
from typing import Any

from mmnp.core import DIFFICULTIES
from mmnp.errors import UsageError
from mmnp.registry import get_task


def load_docs(data: str | None = None, task: str | None = None, difficulty: str | None = None,
              **_: Any):
    """`custom_dataset` of every mmnp task: `data` and `difficulty` come from `--metadata`,
    `task` from the task's `dataset_kwargs` (the harness passes both; `version` and the rest
    are its own)."""
    import datasets

    if not data:
        raise UsageError("mmnp's lm_eval tasks need the data: pass --metadata '{\"data\": \"PATH\"}' with a folder "
                         "from `mmnp generate`, an `mmnp export` folder or a Hub dataset (hf://owner/name)")
    difficulties = [d.strip() for d in (difficulty or ",".join(DIFFICULTIES)).split(",") if d.strip()]
    from mmnp.dataset import select_instances  # the same checked reading as `mmnp eval --data`

    instances = select_instances([task], difficulties, data=data).instances
    docs = [{"id": i.id, "task": i.task, "difficulty": i.difficulty, "prompt": i.prompt,
             "instance": json.dumps(i.data, separators=(",", ":")), "reference_objective": float(i.reference_objective)}
            for i in instances]
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(docs)})


def process_results(doc: dict, results: list[str]) -> dict[str, float]:
    """`sr` and `qr` of the model's answer, exactly as `mmnp eval` scores one sample."""
    task = get_task(doc["task"])
    verdict = task.verify({"task": doc["task"], "instance": json.loads(doc["instance"])}, results[0])
    return {"sr": 1.0 if verdict.feasible else 0.0, "qr": task.quality_ratio(verdict.objective, doc["reference_objective"])}
