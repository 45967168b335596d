"""The algorithm registry: `--algo NAME` picks a trainer from `REGISTRY` (`mmnp.plugins.Registry`),
the built-in table `ALGORITHMS` joined with the `mmnp.algorithms` entry points of plug-in packages.

A built-in algorithm is one file in this folder, named as the algorithm: its loss functions, its
config (a dataclass extending TRL's GRPOConfig: its fields are the algorithm's CLI flags and YAML
keys) and its trainer (a subclass of `mmnp.trainers.base.MMNPTrainer`), marked with the
decorator:

    @register_algorithm("dmpo")
    class DMPOTrainer(MMNPTrainer):
        config_class = DMPOConfig

Adding one = adding its file. From a separate package: an entry point `NAME = "module:TrainerClass"`
(or `"module"`, whose trainer carries `@register_algorithm(NAME)`) in the group `mmnp.algorithms`.

Names are listed without importing any algorithm (so `mmnp --help` and `mmnp train --help` import
neither torch nor TRL); `get_algorithm` imports one on demand, and a plug-in that fails to import
breaks only `--algo` of its own name, with one line naming it. The trainer's `self_test`
(`mmnp.trainers.base.SelfTest`) says how the conformance suite (tests/test_algorithm_conformance.py)
trains it on a CPU.
"""

from __future__ import annotations

import dataclasses
import pkgutil
import types
import typing
from typing import Any

from mmnp.errors import UsageError
from mmnp.plugins import Registry, UnknownPluginError


def _files() -> list[str]:
    """The built-in algorithms: this folder's modules, GRPO (the baseline) first."""
    names = sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
    return sorted(names, key=lambda n: n != "grpo")


ALGORITHMS: dict[str, str | type] = {name: f"{__name__}.{name}" for name in _files()}  # name -> module or class


def register_algorithm(name: str):
    """Class decorator: mark a trainer as the algorithm `name`, so the registry finds it in its module."""

    def register(trainer_class: type) -> type:
        if not dataclasses.is_dataclass(getattr(trainer_class, "config_class", None)):
            raise TypeError(f"{trainer_class.__name__}.config_class must be its config dataclass")
        trainer_class.algorithm = name
        return trainer_class

    return register


def _trainer_of(name: str, loaded: Any) -> type:
    """The trainer class a registry entry stands for: the class itself, or the class of a module
    marked `@register_algorithm(name)`. A TypeError says what the entry lacks."""
    if isinstance(loaded, types.ModuleType):
        marked = [c for c in vars(loaded).values() if isinstance(c, type) and c.__dict__.get("algorithm") == name]
        if len(marked) != 1:
            raise TypeError(f"module {loaded.__name__} must hold one trainer marked @register_algorithm({name!r}); "
                            f"found {len(marked)}")
        loaded = marked[0]
    from trl import GRPOConfig

    from mmnp.trainers.base import MMNPTrainer
    from mmnp.trainers.spec import TRAIN_FIELDS

    if not (isinstance(loaded, type) and issubclass(loaded, MMNPTrainer)):
        raise TypeError(f"expected a subclass of mmnp.trainers.base.MMNPTrainer, got {loaded!r}")
    config = getattr(loaded, "config_class", None)
    if not (isinstance(config, type) and dataclasses.is_dataclass(config) and issubclass(config, GRPOConfig)):
        raise TypeError(f"{loaded.__name__}.config_class must be a dataclass extending trl.GRPOConfig")
    shared = {field for field, _, _ in TRAIN_FIELDS}
    base = {f.name for f in dataclasses.fields(GRPOConfig)}
    taken = sorted(f.name for f in dataclasses.fields(config) if f.name in shared - base)
    if taken:
        raise TypeError(f"{config.__name__} declares {', '.join(taken)}, already a setting of every algorithm")
    return loaded


def _check_algorithm(name: str, loaded: Any) -> None:
    _trainer_of(name, loaded)


REGISTRY: Registry[Any] = Registry("mmnp.algorithms", ALGORITHMS, kind="algorithm", check=_check_algorithm)


def algorithm_names() -> list[str]:
    """Every algorithm (built-in in file order with GRPO first, then plug-ins), none imported."""
    return REGISTRY.names()


def get_algorithm(name: str) -> type:
    """The trainer class of `name` (its config: `.config_class`), imported now; an unknown name
    is a UsageError listing the choices, a broken plug-in a `PluginError` line naming it."""
    try:
        trainer_class = _trainer_of(name, REGISTRY.load(name))
    except UnknownPluginError:
        raise UsageError(f"--algo {name!r}: choose one of {', '.join(algorithm_names())}") from None
    if trainer_class.__dict__.get("algorithm") is None:  # a plug-in's class offered without the decorator
        trainer_class.algorithm = name
    return trainer_class


def own_options(name: str) -> list[dataclasses.Field]:
    """The fields an algorithm's config adds to TRL's GRPOConfig."""
    from trl import GRPOConfig

    base = {f.name for f in dataclasses.fields(GRPOConfig)}
    return [f for f in dataclasses.fields(get_algorithm(name).config_class) if f.name not in base]


def option_flags(name: str) -> dict[str, tuple[type, Any, str]]:
    """The algorithm's own settings as generated flags: option name -> (type, default, help)."""
    hints = typing.get_type_hints(get_algorithm(name).config_class)
    out = {}
    for f in own_options(name):
        args = [a for a in typing.get_args(hints[f.name]) if a is not type(None)]
        out[f.name] = (args[0] if args else hints[f.name], f.default, f.metadata.get("help", ""))
    return out
