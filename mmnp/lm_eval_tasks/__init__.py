"""lm-evaluation-harness tasks for MM-NP-Bench (text modality), scored by mmnp's verifiers.

    lm_eval --include_path "$(python -m mmnp.lm_eval_tasks --data DATA)" --tasks mmnp_text \\
        --apply_chat_template --model ...

`DATA` is a folder from `mmnp generate`, an `mmnp export --format hf|parquet` folder, or a Hub
dataset id of such an export. The group `mmnp_text` holds one task per mmnp task (`mmnp_text_<task>`);
each reports `sr` (feasible) and `qr` (Quality Ratio against the heuristic reference) per instance,
averaged by the harness; the group's figure is the unweighted mean over its tasks (mmnp's macro
mean over tasks). With `--data`, the group lists the tasks DATA holds and every task reads DATA
unless `--metadata '{"data": ...}'` names other data; without it, the group lists every registered
task and `--metadata` must name the data (lm_eval 0.4 cannot run a task with no documents, so a
member the data lacks is refused in one line). The task files are written from the registry
(`mmnp.harness`) into mmnp's cache folder; this package holds their template.
"""

from __future__ import annotations

from pathlib import Path

from mmnp.harness import task_files, write_task_folder

GROUP = "mmnp_text"


def files(data: str | None = None) -> dict[str, str]:
    """The task folder's files; with `data`, its tasks read it and the group lists those it holds."""
    if data is None:
        return task_files(__name__, GROUP, lambda task: {"dataset_kwargs": {"task": task.name}})
    if Path(data).exists():  # the folder is cached and lm_eval may run elsewhere: a local path is made absolute
        data = str(Path(data).resolve())
    return task_files(__name__, GROUP, lambda task: {"dataset_kwargs": {"task": task.name},
                                                     "metadata": {"version": 1.0, "data": data}},
                      members=held_tasks(data))


def held_tasks(data: str) -> list[str]:
    """The tasks `data` holds (read and checked as `mmnp eval --data` reads it)."""
    from mmnp.dataset import open_data

    return [task for task, counts in open_data(data).manifest["counts"].items() if any(counts.values())]


def include_path(data: str | None = None) -> Path:
    """The folder to pass to `lm_eval --include_path` (reading `data`, when given)."""
    return write_task_folder(files(data), GROUP)
