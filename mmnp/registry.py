"""The task registry: every task by name, filled by the registrations in `mmnp.tasks`."""

from __future__ import annotations

from mmnp.task import Task

_TASKS: dict[str, Task] = {}


def register(task: Task) -> Task:
    if task.name in _TASKS:
        raise ValueError(f"task {task.name!r} is already registered")
    _TASKS[task.name] = task
    return task


def _ensure_loaded() -> None:
    import mmnp.tasks  # noqa: F401  (its import performs the registrations)


def get_task(name: str) -> Task:
    _ensure_loaded()
    try:
        return _TASKS[name]
    except KeyError:
        raise KeyError(f"unknown task {name!r}; registered tasks: {', '.join(_TASKS)}") from None


def list_tasks() -> list[Task]:
    _ensure_loaded()
    return list(_TASKS.values())


def resolve_tasks(spec: str | list[str]) -> list[Task]:
    """`all`, a comma-separated string, or a list of names -> tasks, in registry order for `all`."""
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    names = [n.strip() for n in names if n.strip()]
    if names == ["all"]:
        return list_tasks()
    return [get_task(n) for n in names]
