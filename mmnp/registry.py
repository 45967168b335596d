"""The task registry: every task by name, mmnp's own (`BUILTIN`) and those that separate packages
add through the `mmnp.tasks` entry point group (`mmnp.plugins.Registry`).

A task is three modules with its name, `generators/<name>.py`, `verifiers/<name>.py` and
`solvers/<name>.py`, under one package root, and one line that names it:

- a built-in: its name in `BUILTIN` below (the order is the published one: `--tasks all`, and the
  benchmark hash, follow it);
- a plug-in: an entry point whose value is the package root holding the three modules, e.g. in
  its pyproject.toml

      [project.entry-points."mmnp.tasks"]
      independent_set = "mmnp_independent_set"   # mmnp_independent_set/{generators,verifiers,solvers}/independent_set.py

Everything else about the task is declared in those modules (`mmnp.task` lists what). A task loads
on first use: `get_task("tsp")` imports tsp's three modules and reads no installed metadata; a
plug-in that cannot be imported, or lacks what a task needs, raises `PluginError` (one line
naming it) on its own use and is left out of `list_tasks()`, which says so once on stderr, as it
says why an entry point is not offered at all (a name clash: `Registry.problems`).
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

from mmnp.plugins import PluginError, Registry, UnknownPluginError
from mmnp.task import Task

# The built-in tasks, in their published order (releases name theirs: `mmnp.releases`).
BUILTIN: tuple[str, ...] = (
    "tsp",
    "graph_coloring",
    "vertex_cover",
    "knapsack",
    "longest_cycle",
    "max_clique",
    "set_cover",
    "subset_sum",
    "min_bisection",
    "meeting_scheduling",
)

UnknownTaskError = UnknownPluginError  # a task name that nothing registers (a UsageError and a KeyError)

_TABLE: dict[str, Any] = {name: "mmnp" for name in BUILTIN}  # name -> package root (or a Task), by reference
_BOUND: dict[tuple[str, str], Task] = {}  # (name, package root) -> its Task, bound once
_SAID: set[str] = set()  # the lines list_tasks wrote on stderr (each said once)


def bind(name: str, root: ModuleType | Task) -> Task:
    """The Task of `name` whose three modules live under the package `root` (or `root` itself
    when it is a Task); ValueError saying what is missing (the registry's check)."""
    if isinstance(root, Task):
        if root.name != name:
            raise ValueError(f"its Task is named {root.name!r}")
        return root
    if not isinstance(root, ModuleType):
        raise ValueError(f"it is a {type(root).__name__}, not a package holding generators/, verifiers/, solvers/")
    key = (name, root.__name__)
    if key not in _BOUND:
        _BOUND[key] = Task.from_package(name, root.__name__)
    return _BOUND[key]


TASKS: Registry[Any] = Registry("mmnp.tasks", _TABLE, kind="task", check=lambda name, root: bind(name, root) and None)


def register(task: Task) -> Task:
    """Add a task object in code (it follows the built-ins and plug-ins in `list_tasks`)."""
    if task.name in _TABLE:
        raise ValueError(f"task {task.name!r} is already registered")
    bind(task.name, task)
    _TABLE[task.name] = task
    return task


def task_names() -> list[str]:
    """Every task's name in registry order: the built-ins in their published order, then the
    plug-ins by name (reads the installed entry points; imports nothing)."""
    return TASKS.names()


def get_task(name: str) -> Task:
    """The task `name`, loaded on first use (`UnknownTaskError`, or `PluginError` for a broken plug-in)."""
    if name in _TABLE and (task := _BOUND.get((name, _root_name(_TABLE[name])))) is not None:
        return task  # the hot path (a reward worker's every call): two dict lookups
    return bind(name, TASKS.load(name))


def list_tasks() -> list[Task]:
    """Every task that loads, in registry order; a plug-in that does not is left out, with one
    line on stderr naming it (its own use fails with the same line), and so is each entry point
    that is not offered (a clash with a built-in or between two distributions)."""
    for problem in TASKS.problems():
        _say_once(f"mmnp: not offered: {problem}")
    out = []
    for name in task_names():
        try:
            out.append(get_task(name))
        except PluginError as e:
            if name in BUILTIN:
                raise
            _say_once(f"mmnp: left out: {e}")
    return out


def _say_once(line: str) -> None:
    if line not in _SAID:
        _SAID.add(line)
        print(line, file=sys.stderr)


def resolve_tasks(spec: str | list[str]) -> list[Task]:
    """`all`, a comma-separated string, or a list of names -> tasks, in registry order for `all`;
    a name given twice counts once (`tsp,tsp` is one task's instances, not each twice)."""
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    names = list(dict.fromkeys(n.strip() for n in names if n.strip()))
    if names == ["all"]:
        return list_tasks()
    return [get_task(n) for n in names]


def _root_name(target: Any) -> str:
    return target.__name__ if isinstance(target, ModuleType) else target if isinstance(target, str) else ""
