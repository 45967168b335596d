"""Plug-ins: what a separate package adds to mmnp through Python entry points, without editing mmnp.

A plug-in package declares entry points in one of the four groups (`GROUPS`), e.g. in its
pyproject.toml:

    [project.entry-points."mmnp.backends"]
    echo = "mmnp_echo.backend:EchoBackend"      # NAME = "module:attribute" (or "module")

Each plug point keeps one `Registry`, which joins its built-in table with the entry points of
its group:

    BACKENDS = {"solver": "mmnp.evaluation.solver_backend:SolverBackend", ...}   # name -> target
    REGISTRY = Registry("mmnp.backends", BACKENDS, kind="backend", check=check_backend)

    REGISTRY.names()      # every name: built-ins in table order, then plug-ins by name; imports nothing
    REGISTRY.entries()    # name -> Entry (target, distribution, version): also imports nothing
    REGISTRY.load(name)   # imports that one entry (once), runs `check` on it, returns the object
    REGISTRY.problems()   # one line per entry point that is not offered (a name clash, a bad name)

- Nothing is imported until it is used: names come from the built-in table and from the installed
  distributions' metadata (`importlib.metadata`, read on the first call that needs it: ~10 ms with
  120 distributions installed).
- A plug-in that cannot be imported, or that `check` refuses, raises `PluginError`: one line naming
  the group, the name, the distribution and the error. Only that name's use fails; every other
  entry loads as before.
- Targets in the table are "module:attribute" strings (loaded like entry points) or the objects
  themselves; the table is held by reference, so in-code registration is `table[name] = target`.
- A built-in (or registered) name wins over an entry point of the same name; two distributions
  offering one name make that name unusable until one is uninstalled. Both are `problems()`.

Wiring another plug point (tasks, algorithms, rewards) is the same few lines: keep its table of
built-ins, build a `Registry` over it with the group's name, list with `names()`, load with
`load(name)` (its `check` raises TypeError or ValueError saying what the object lacks). Loading a
built-in name reads no metadata, so a hot path (`get_task("tsp")` in a reward worker) stays as
fast as the table alone; only listing, or a name the table lacks, reads the entry points. E.g.:

    ALGORITHMS = Registry("mmnp.algorithms", {n: f"mmnp.trainers.algorithms.{n}" for n in files},
                          kind="algorithm")          # a target may be a module ("pkg.mod"): it is imported
    REWARDS = Registry("mmnp.rewards", REWARD_TABLE, kind="reward", check=must_be_callable)
    TASKS = Registry("mmnp.tasks", {"tsp": "mmnp", ...}, kind="task", check=binds)  # mmnp/registry.py: a package root
"""

from __future__ import annotations

import importlib
import re
import sys
from dataclasses import dataclass
from typing import Any, Callable, Generic, Mapping, TypeVar

from mmnp.errors import RunError, UsageError

GROUPS = ("mmnp.tasks", "mmnp.backends", "mmnp.algorithms", "mmnp.rewards")
NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")  # a plug-in name: usable in a flag such as --model NAME:...

T = TypeVar("T")


class PluginError(RunError):
    """A registered entry that cannot be used (it fails to import, or is not what its group needs)."""


class UnknownPluginError(UsageError, KeyError):
    """A name that no built-in and no installed plug-in offers (a KeyError too, for library callers)."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class Entry:
    """One registered name: where it loads from and who provides it."""

    group: str
    name: str
    target: Any  # "module:attribute" (or "module"), or the object itself
    distribution: str | None = None  # the plug-in's distribution; None for mmnp's own entries
    version: str | None = None
    kind: str = "entry"  # what the group holds, for messages: "backend", "task", ...

    @property
    def origin(self) -> str:
        """"built-in", or "plug-in DIST VERSION"."""
        if self.distribution is None:
            return "built-in"
        return f"plug-in {self.distribution}" + (f" {self.version}" if self.version else "")

    @property
    def where(self) -> str:
        return self.target if isinstance(self.target, str) else _qualified_name(self.target)

    def describe(self) -> str:
        """How a message names the entry: kind, name, origin (the distribution), target and group."""
        return f"{self.kind} {self.name!r} ({self.origin}, {self.where}, group {self.group})"


class Registry(Generic[T]):
    """One plug point's names: `builtin` (held by reference) and the entry points of `group`."""

    def __init__(self, group: str, builtin: Mapping[str, Any], *, kind: str,
                 check: Callable[[str, Any], None] | None = None) -> None:
        self.group, self.builtin, self.kind, self.check = group, builtin, kind, check
        self._loaded: dict[tuple[str, Any], T] = {}  # (name, its target or the target's id) -> the object
        self._scan: tuple[tuple[str, ...], dict[str, Entry], dict[str, str]] | None = None  # per sys.path

    def _plugins(self) -> tuple[dict[str, Entry], dict[str, str]]:
        """The group's entry points (name -> Entry) and, per name not offered, the line saying why;
        read from the installed distributions' metadata once per sys.path."""
        path = tuple(sys.path)
        if self._scan is None or self._scan[0] != path:
            self._scan = (path, *_read_entry_points(self.group, self.kind))
        return self._scan[1], self._scan[2]

    def entries(self) -> dict[str, Entry]:
        """Every usable name -> its Entry: the built-ins in table order, then plug-ins by name."""
        out = {name: Entry(self.group, name, target, kind=self.kind) for name, target in self.builtin.items()}
        plugins, _ = self._plugins()
        out.update((name, e) for name, e in sorted(plugins.items()) if name not in out)
        return out

    def names(self) -> list[str]:
        """Every usable name, in `entries()` order; imports nothing."""
        return list(self.entries())

    def problems(self) -> list[str]:
        """One line per entry point that is not offered: a name clash or a name that cannot be used."""
        plugins, refused = self._plugins()
        shadowed = [f"{e.describe()} is ignored: mmnp's own {self.kind} {name!r} has that name; rename the plug-in"
                    for name, e in sorted(plugins.items()) if name in self.builtin]
        return list(refused.values()) + shadowed

    def entry(self, name: str) -> Entry:
        """The Entry of `name` (nothing imported); `UnknownPluginError` or, for a clash, `PluginError`.
        A built-in name is answered from the table alone: no metadata is read on that path."""
        if name in self.builtin:
            return Entry(self.group, name, self.builtin[name], kind=self.kind)
        entries = self.entries()
        if name not in entries:
            refused = self._plugins()[1]
            if name in refused:
                raise PluginError(refused[name])
            raise UnknownPluginError(f"unknown {self.kind} {name!r}; use one of {', '.join(entries) or 'none'}")
        return entries[name]

    def load(self, name: str) -> T:
        """The object registered as `name`, imported on first use and checked; `PluginError`
        (one line naming it) when it cannot be imported or is not a usable entry."""
        entry = self.entry(name)
        key = (name, entry.target if isinstance(entry.target, str) else id(entry.target))
        if key not in self._loaded:
            self._loaded[key] = load_entry(entry, self.check)
        return self._loaded[key]


def load_entry(entry: Entry, check: Callable[[str, Any], None] | None = None) -> Any:
    """Import `entry`'s target (or take the object) and run `check` on it; every failure is one
    `PluginError` line naming the entry and what to do."""
    fix = f"fix or uninstall {entry.distribution}" if entry.distribution else "this is a bug in mmnp"
    try:
        obj = _import_target(entry.target) if isinstance(entry.target, str) else entry.target
    except Exception as e:  # whatever a plug-in's import raises: its own use fails, nothing else
        raise PluginError(f"{entry.describe()} cannot be imported: {_one_line(e)}; {fix}") from e
    if check is not None:
        try:
            check(entry.name, obj)
        except (TypeError, ValueError) as e:
            raise PluginError(f"{entry.describe()} is not usable: {_one_line(e)}; {fix}") from e
    return obj


def _read_entry_points(group: str, kind: str) -> tuple[dict[str, Entry], dict[str, str]]:
    """(name -> Entry, name -> why it is not offered) of one group, from metadata only."""
    from importlib.metadata import entry_points

    found: dict[str, list[Entry]] = {}
    refused = {}
    for ep in entry_points(group=group):
        dist = getattr(ep, "dist", None)
        entry = Entry(group, ep.name, ep.value, getattr(dist, "name", None) or "an unnamed distribution",
                      getattr(dist, "version", None), kind)
        if not NAME.fullmatch(ep.name):
            refused[ep.name] = f"{entry.describe()} is ignored: a name may hold only letters, digits, '_', '.' and '-'"
            continue
        same = found.setdefault(ep.name, [])
        if all((e.distribution, e.target) != (entry.distribution, entry.target) for e in same):
            same.append(entry)
    offered = {}
    for name, entries in found.items():
        if len(entries) == 1:
            offered[name] = entries[0]
        else:
            refused[name] = (f"{kind} {name!r} (group {group}) is offered by " + " and ".join(
                f"{e.distribution} ({e.target})" for e in sorted(entries, key=lambda e: e.distribution or ""))
                + "; uninstall all but one to use it")
    return offered, refused


def _import_target(target: str) -> Any:
    """"module" or "module:attribute.path", as an entry point's value is loaded."""
    module, _, attribute = target.partition(":")
    obj = importlib.import_module(module.strip())
    for part in filter(None, attribute.strip().split(".")):
        obj = getattr(obj, part)
    return obj


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split()) or "no message"
    return f"{type(e).__name__}: {text[:300]}"


def _qualified_name(obj: Any) -> str:
    module = getattr(obj, "__module__", None) or "?"
    return f"{module}:{getattr(obj, '__qualname__', type(obj).__name__)}"
