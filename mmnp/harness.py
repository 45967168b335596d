"""Task folders for lm-evaluation-harness and lmms-eval, written from the task registry: the group
and one YAML per registered task (plug-in tasks included), on one shared template. Nothing per task
is checked in, so a new task gets its harness tasks with no file to add."""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable

import yaml

from mmnp.registry import list_tasks
from mmnp.task import Task


def cache_root() -> Path:
    """Where generated folders live: $MMNP_CACHE, else $XDG_CACHE_HOME/mmnp, else ~/.cache/mmnp."""
    if os.environ.get("MMNP_CACHE"):
        return Path(os.environ["MMNP_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mmnp"


def task_files(package: str, group: str, task_fields: Callable[[Task], dict[str, Any]],
               template_fields: dict[str, Any] | None = None, utils_lines: str = "",
               members: Iterable[str] | None = None) -> dict[str, str]:
    """The folder's files by name: `package`'s `_template_yaml` (updated with `template_fields`), a
    `utils.py` that re-exports `package.utils` (the templates' `!function utils.*` resolve beside
    them) followed by `utils_lines`, the group `group` (an unweighted mean over its tasks: mmnp's
    macro mean; over the tasks named in `members`, else every registered task) and `group_<task>`
    for every registered task."""
    here = Path(importlib.import_module(package).__file__).parent
    template = (here / "_template_yaml").read_text()
    for key, value in (template_fields or {}).items():
        template += f"{key}: {json.dumps(value)}\n"  # JSON is YAML
    names = [f"{group}_{task.name}" for task in list_tasks()]
    chosen = None if members is None else set(members)
    listed = [f"{group}_{task.name}" for task in list_tasks() if chosen is None or task.name in chosen]
    mean = [{"metric": m, "aggregation": "mean", "weight_by_size": False} for m in ("sr", "qr")]
    files = {"_template_yaml": template, "utils.py": f"from {package}.utils import *  # noqa: F401,F403\n{utils_lines}",
             f"{group}.yaml": yaml.safe_dump({"group": group, "task": listed, "aggregate_metric_list": mean,
                                              "metadata": {"version": 1.0}}, sort_keys=False)}
    for name, task in zip(names, list_tasks()):
        files[f"{name}.yaml"] = yaml.safe_dump({"include": "_template_yaml", "task": name, **task_fields(task)},
                                               sort_keys=False)
    return files


def write_task_folder(files: dict[str, str], group: str) -> Path:
    """The folder holding `files`, under `cache_root()`, named by their digest: written once (whole,
    through a temporary sibling and a rename), then reused by every run with the same tasks while it
    holds exactly `files` (a few KB, compared on each use: a folder edited since, its YAML naming
    other data or its utils.py other scoring, is replaced whole, never trusted by its name). The
    bytecode Python caches beside utils.py is removed on each use: the harnesses would run a cached
    .pyc whose header still matches the source, whatever its body says."""
    digest = hashlib.sha256(repr(sorted(files.items())).encode()).hexdigest()[:16]
    folder = cache_root() / f"{group}-{digest}"
    if _holds(folder, files):
        shutil.rmtree(folder / "__pycache__", ignore_errors=True)  # a real folder there: `_holds` refuses a link
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        for name, text in files.items():
            (staging / name).write_text(text)
        if (folder.exists() or folder.is_symlink()) and not _holds(folder, files):
            # edited or damaged since it was written (a file or a link there too): moved aside whole, then removed
            stale = Path(tempfile.mkdtemp(prefix=f".{folder.name}.stale.", dir=folder.parent))
            os.replace(folder, stale / "old")
            shutil.rmtree(stale, ignore_errors=True)
        os.replace(staging, folder)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if not _holds(folder, files):  # not a concurrent writer's finished copy: a real failure
            raise
    return folder


def _holds(folder: Path, files: dict[str, str]) -> bool:
    """Whether `folder` is a directory (not a link) holding exactly `files`, byte for byte (nothing
    missing, changed or added; the `__pycache__` folder Python writes beside an imported utils.py
    aside, but not a link or a file by that name, which its removal would not clear)."""
    cache = folder / "__pycache__"
    try:
        return folder.is_dir() and not folder.is_symlink() and \
            (not (cache.exists() or cache.is_symlink()) or (cache.is_dir() and not cache.is_symlink())) and \
            {p.name for p in folder.iterdir()} - {"__pycache__"} == set(files) and all(
                (folder / name).read_text() == text for name, text in files.items())
    except (OSError, UnicodeDecodeError):
        return False
