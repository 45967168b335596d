"""The algorithm registry: one file per algorithm in this folder holds its loss functions,
its config (a dataclass extending TRL's GRPOConfig: its fields are the algorithm's CLI flags
and YAML keys) and its trainer (a subclass of `mmnp.trainers.base.MMNPTrainer`), which
registers itself:

    @register_algorithm("dmpo")
    class DMPOTrainer(MMNPTrainer):
        config_class = DMPOConfig

Adding an algorithm = adding its file. Names are the files' names, listed without importing
them (so `mmnp --help` imports neither torch nor TRL); `get_algorithm` imports one on demand.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import typing
from typing import Any

from mmnp.errors import UsageError

_TRAINERS: dict[str, type] = {}


def algorithm_names() -> list[str]:
    """Every algorithm, in file-name order, GRPO (the baseline) first."""
    names = sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
    return sorted(names, key=lambda n: n != "grpo")


def register_algorithm(name: str):
    """Class decorator: make a trainer selectable as `--algo NAME` (NAME = its file's name)."""

    def register(trainer_class: type) -> type:
        module = trainer_class.__module__.rsplit(".", 1)[-1]
        if module != name:
            raise TypeError(f"algorithm {name!r} must live in trainers/algorithms/{name}.py, not in {module}.py")
        if not dataclasses.is_dataclass(getattr(trainer_class, "config_class", None)):
            raise TypeError(f"{trainer_class.__name__}.config_class must be its config dataclass")
        trainer_class.algorithm = name
        _TRAINERS[name] = trainer_class
        return trainer_class

    return register


def get_algorithm(name: str) -> type:
    """The trainer class registered as `name` (its config: `.config_class`)."""
    if name not in algorithm_names():
        raise UsageError(f"--algo {name!r}: choose one of {', '.join(algorithm_names())}")
    importlib.import_module(f"{__name__}.{name}")
    return _TRAINERS[name]


def own_options(name: str) -> list[dataclasses.Field]:
    """The fields an algorithm's config adds to TRL's GRPOConfig."""
    from trl import GRPOConfig

    base = {f.name for f in dataclasses.fields(GRPOConfig)}
    return [f for f in dataclasses.fields(get_algorithm(name).config_class) if f.name not in base]


def option_flags() -> dict[str, tuple[type, Any, str, str]]:
    """name -> (type, default, help, algorithm) over every algorithm: the generated flags."""
    out: dict[str, tuple[type, Any, str, str]] = {}
    for algo in algorithm_names():
        hints = typing.get_type_hints(get_algorithm(algo).config_class)
        for f in own_options(algo):
            args = [a for a in typing.get_args(hints[f.name]) if a is not type(None)]
            kind = args[0] if args else hints[f.name]
            if f.name in out and out[f.name][0] is not kind:
                raise TypeError(f"option {f.name!r} is declared with two types ({algo} and {out[f.name][3]})")
            out.setdefault(f.name, (kind, f.default, f.metadata.get("help", ""), algo))
    return out
