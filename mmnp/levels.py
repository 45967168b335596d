"""The level ladder: ten integer levels of generator parameters per task, L1 (smaller than
NP-Bench's easy) to L10 (far beyond its hard), so a benchmark never saturates and a curriculum
always has a next step.

The named difficulties sit inside the ladder: `easy` = L2, `medium` = L3, `hard` = L4 (the
generators' own presets, unchanged, so existing datasets and the canonical benchmark hash stay
as they are) and `bench` = L5 (NP-Engine's harder level, e.g. TSP 45-55 cities). A level is a
difficulty name like any other: `Task.config("L7")`, instance ids `tsp-L7-0003`,
`mmnp generate --levels 1-10`. The sizes were chosen so that measured hardness (the heuristic's
gap to the best known solution, CP-SAT's work to prove optimality, solver baselines' SR/QR)
grows with the level; `benchmarks/calibrate_levels.py` measures it (docs/levels.md).

Each task declares its own ladder in its generator module: `LEVELS`, a tuple of `TOP` entries,
each the name of one of its presets (kept exact) or a dict of the Config fields that differ from
the Config's defaults. This module holds only the machinery that reads them.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from mmnp.errors import UsageError

TOP = 10
NAMED: dict[str, int] = {"easy": 2, "medium": 3, "hard": 4, "bench": 5}

_LEVEL_NAME = re.compile(r"L([1-9][0-9]*)")


def level_name(level: int) -> str:
    return f"L{level}"


def level_of(difficulty: str) -> int | None:
    """The ladder level a difficulty name stands for (`L7` -> 7, `hard` -> 4); None when it has none."""
    if difficulty in NAMED:
        return NAMED[difficulty]
    match = _LEVEL_NAME.fullmatch(difficulty)
    return int(match.group(1)) if match and int(match.group(1)) <= TOP else None


def is_level(difficulty: str) -> bool:
    """Whether `difficulty` is a ladder name (`L1`..`L10` or `bench`) rather than a generator preset."""
    return level_of(difficulty) is not None


def ladder(task: Any) -> tuple[str | dict[str, Any], ...]:
    """The `LEVELS` its generator module declares (every task has one: `Task.from_package` checks it)."""
    return task.generator.LEVELS


def check_ladder(entries: Any, presets: Any, config: type) -> None:
    """Raise ValueError saying what is wrong with a generator's `LEVELS` (a task plug-in's check)."""
    if not isinstance(entries, tuple) or len(entries) != TOP:
        raise ValueError(f"LEVELS must be a tuple of {TOP} entries (L1..L{TOP})")
    fields = {f.name for f in dataclasses.fields(config)}
    for k, entry in enumerate(entries, 1):
        if isinstance(entry, str) and entry not in presets:
            raise ValueError(f"LEVELS L{k} names {entry!r}, which is not one of its PRESETS")
        if isinstance(entry, dict) and not set(entry) <= fields:
            raise ValueError(f"LEVELS L{k} sets {sorted(set(entry) - fields)}, which its Config has no field for")
        if not isinstance(entry, (str, dict)):
            raise ValueError(f"LEVELS L{k} must be a preset name or a dict of Config fields")


def level_config(task: Any, difficulty: str) -> Any:
    """The generator Config of `task` (a `Task`) at a ladder level or named level."""
    level = level_of(difficulty)
    if level is None:
        raise UsageError(f"unknown level {difficulty!r}; levels are L1..L{TOP} or {', '.join(NAMED)}")
    entry = ladder(task)[level - 1]
    if isinstance(entry, str):
        return task.generator.PRESETS[entry]
    return dataclasses.replace(task.generator.Config(), **entry)


def parse_levels(spec: str) -> list[str]:
    """`--levels` text -> difficulty names: "1-3,7" -> ["L1", "L2", "L3", "L7"]; also L5, bench, all."""
    out: list[str] = []
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        if part == "all":
            numbers = list(range(1, TOP + 1))
        elif part in NAMED:
            numbers = [NAMED[part]]
        else:
            lo, sep, hi = part.partition("-")
            try:
                first = int(lo.strip().removeprefix("L"))
                numbers = list(range(first, int(hi.strip().removeprefix("L")) + 1)) if sep else [first]
            except ValueError:
                raise UsageError(f"--levels {spec!r}: {part!r} is not a level; write e.g. 1-10, 3,5,7, L4 or bench") from None
            if not numbers:
                raise UsageError(f"--levels {spec!r}: the range {part!r} is empty; write the lower level first")
        bad = [n for n in numbers if not 1 <= n <= TOP]
        if bad:
            raise UsageError(f"--levels {spec!r}: level {bad[0]} is outside the ladder 1-{TOP}")
        out += [level_name(n) for n in numbers if level_name(n) not in out]
    if not out:
        raise UsageError(f"--levels {spec!r}: name at least one level, e.g. 1-10")
    return out


def describe(config: Any) -> str:
    """A Config as one short line: `n=35-45, density=0.4, max_weight=100_000` (large integers
    grouped as Python and `--param` write them)."""
    def one(v: Any) -> str:
        return f"{v:_}" if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 10_000 else str(v)

    fmt = lambda v: f"{one(v[0])}-{one(v[1])}" if isinstance(v, (list, tuple)) else one(v)  # noqa: E731
    return ", ".join(f"{f.name}={fmt(getattr(config, f.name))}" for f in dataclasses.fields(config))


def ladder_rows(tasks: list[Any] | None = None) -> list[dict[str, Any]]:
    """One row per task and level, for `mmnp tasks --levels`: task, level, alias (easy/.../bench or
    ""), and the level's parameters (JSON-ready dict) with their one-line description."""
    from mmnp.registry import list_tasks

    aliases = {n: name for name, n in NAMED.items()}
    rows = []
    for task in tasks if tasks is not None else list_tasks():
        for level in range(1, TOP + 1):
            config = level_config(task, level_name(level))
            rows.append({"task": task.name, "level": level_name(level), "alias": aliases.get(level, ""),
                         "params": {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(config).items()},
                         "text": describe(config)})
    return rows
