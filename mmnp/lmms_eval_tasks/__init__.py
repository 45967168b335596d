"""lmms-eval tasks for MM-NP-Bench's image modality, scored by mmnp's verifiers.

    mmnp export --data DATA --format hf --split-by task --out mmnp-export
    lmms-eval --include_path "$(python -m mmnp.lmms_eval_tasks)" --tasks mmnp_image --model ...
    lmms-eval --include_path "$(python -m mmnp.lmms_eval_tasks --data /abs/path/export)" ...

lmms-eval reads a task's data only through `datasets.load_dataset(dataset_path)`, and its YAML has no
runtime parameter for the path, so the path is written into the task folder: `mmnp-export` (in
the folder where lmms-eval runs) unless `--data` names another export (a split per task); the
group lists the tasks an export found at that path holds. Each row's instance is checked against
its content hash. The task files are written from the registry
(`mmnp.harness`) into mmnp's cache folder; this package holds their template.
"""

from __future__ import annotations

from pathlib import Path

from mmnp.errors import DataError
from mmnp.harness import task_files, write_task_folder

GROUP = "mmnp_image"
DEFAULT_DATA = "mmnp-export"


def files(data: str = DEFAULT_DATA) -> dict[str, str]:
    """The task folder's files. An export found here is read now, checked as every mmnp reader checks
    it, and its group lists the tasks it holds (lmms-eval stops at a group member with no split);
    its path is made absolute (the folder is cached, and lmms-eval may run elsewhere). Anything
    else (a Hub id, or `mmnp-export` not made yet) is passed on as it is, every task listed."""
    members = None
    if Path(data).exists():
        from mmnp.export import load_export

        data = str(Path(data).resolve())
        members = sorted({inst.task for inst in load_export(data).instances})
        # what `datasets` reads as splits: data/<split>-00000-of-00001.parquet (an hf export, or its Hub copy)
        splits = {file.name.partition("-")[0] for file in Path(data).glob("data/*-of-*.parquet")}
        if missing := [task for task in members if task not in splits]:
            raise DataError(f"{data} has no split named {missing[0]}: lmms-eval reads one split per task from an hf "
                            f"export; export it with `mmnp export --data DATA --format hf --split-by task --out OUT`")
    # the export is checked as a whole (its rows re-derive the source's hashes) before any row is used
    check = f"from {__name__}.utils import checked_docs_for\nchecked_docs = checked_docs_for({data!r})\n"
    return task_files(__name__, GROUP, lambda task: {"test_split": task.name}, {"dataset_path": data}, check,
                      members=members)


def include_path(data: str = DEFAULT_DATA) -> Path:
    """The folder to pass to `lmms-eval --include_path`, reading the export at `data`."""
    return write_task_folder(files(data), GROUP)
