"""lm-evaluation-harness tasks for MM-NP-Bench (text modality), scored by mmnp's verifiers.

    lm_eval --include_path "$(python -m mmnp.lm_eval_tasks)" --tasks mmnp_text \\
        --metadata '{"data": "DATA"}' --apply_chat_template --model ...

`DATA` is a folder from `mmnp generate`, an `mmnp export --format hf|parquet` folder, or a Hub
dataset id of such an export. The group `mmnp_text` holds one task per registered mmnp task
(`mmnp_text_<task>`); each reports `sr` (feasible) and `qr` (Quality Ratio against the
heuristic reference) per instance, averaged by the harness; the group's figure is the
unweighted mean over its tasks (mmnp's macro mean over tasks). The task files are written from
the registry (`mmnp.harness`) into mmnp's cache folder; this package holds their template.
"""

from __future__ import annotations

from pathlib import Path

from mmnp.harness import task_files, write_task_folder

GROUP = "mmnp_text"


def files() -> dict[str, str]:
    return task_files(__name__, GROUP, lambda task: {"dataset_kwargs": {"task": task.name}})


def include_path() -> Path:
    """The folder to pass to `lm_eval --include_path`."""
    return write_task_folder(files(), GROUP)
