"""The task registry: every task by name. The built-in tasks (`mmnp.tasks.BUILTIN`) load their
modules on first use, so `get_task("tsp")` imports tsp's three files and nothing else."""

from __future__ import annotations

from mmnp.errors import UsageError
from mmnp.task import Task
from mmnp.tasks import BUILTIN


class UnknownTaskError(UsageError, KeyError):
    """A task name that is not registered (a KeyError too, for library callers)."""

    def __str__(self) -> str:
        return str(self.args[0])


_BUILTIN = {name: (category, direction) for name, category, direction in BUILTIN}
_TASKS: dict[str, Task] = {}  # loaded built-ins and registered extra tasks
_EXTRA: list[str] = []  # names registered with `register`, in registration order


def register(task: Task) -> Task:
    """Add a task beyond the built-in ten (it follows them in `list_tasks`)."""
    if task.name in _BUILTIN or task.name in _TASKS:
        raise ValueError(f"task {task.name!r} is already registered")
    _TASKS[task.name] = task
    _EXTRA.append(task.name)
    return task


def task_names() -> list[str]:
    """Every task's name in registry order (the built-ins first, in their published order)."""
    return [name for name, _, _ in BUILTIN] + _EXTRA


def get_task(name: str) -> Task:
    task = _TASKS.get(name)
    if task is None:
        if name not in _BUILTIN:
            raise UnknownTaskError(f"unknown task {name!r}; registered tasks: {', '.join(task_names())}")
        task = _TASKS[name] = Task.from_modules(name, *_BUILTIN[name])
    return task


def list_tasks() -> list[Task]:
    return [get_task(name) for name in task_names()]


def resolve_tasks(spec: str | list[str]) -> list[Task]:
    """`all`, a comma-separated string, or a list of names -> tasks, in registry order for `all`."""
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    names = [n.strip() for n in names if n.strip()]
    if names == ["all"]:
        return list_tasks()
    return [get_task(n) for n in names]
