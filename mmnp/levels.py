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
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from mmnp.errors import UsageError

TOP = 10
NAMED: dict[str, int] = {"easy": 2, "medium": 3, "hard": 4, "bench": 5}

# task -> the parameters of L1..L10. A string is the generator preset of that name (kept exact);
# a dict replaces those fields of the generator's Config defaults.
LEVELS: dict[str, tuple[str | dict[str, Any], ...]] = {
    "tsp": (
        {"n": (5, 9)}, "easy", "medium", "hard",
        {"n": (45, 55)}, {"n": (55, 70)}, {"n": (70, 90)}, {"n": (90, 115)}, {"n": (115, 145)}, {"n": (145, 180)},
    ),
    # past bench: no planted clique, and more colours planted than such a graph needs, so the
    # chromatic number is the random graph's own and CP-SAT must prove its lower bound
    "graph_coloring": (
        {"n": (5, 8), "colours": (2, 3), "density": 0.2}, "easy", "medium", "hard",
        {"n": (32, 40), "colours": (7, 9), "density": 0.5},
        {"n": (40, 50), "colours": (8, 10), "density": 0.45, "clique": False},
        {"n": (50, 60), "colours": (9, 11), "density": 0.4, "clique": False},
        {"n": (60, 75), "colours": (10, 12), "density": 0.35, "clique": False},
        {"n": (75, 90), "colours": (11, 13), "density": 0.3, "clique": False},
        {"n": (90, 110), "colours": (12, 14), "density": 0.28, "clique": False},
    ),
    # past bench: the complement of a hidden clique (a planted independent set whose vertices'
    # degrees are evened out, as DIMACS's brock graphs hide theirs) near the natural set size
    "vertex_cover": (
        {"n": (6, 10), "density": 0.35}, "easy", "medium", "hard",
        {"n": (50, 65), "density": 0.18},
        {"n": (70, 85), "cover_fraction": 0.7, "density": 0.12, "hidden": True},
        {"n": (85, 100), "cover_fraction": 0.72, "density": 0.11, "hidden": True},
        {"n": (100, 120), "cover_fraction": 0.74, "density": 0.1, "hidden": True},
        {"n": (120, 140), "cover_fraction": 0.75, "density": 0.085, "hidden": True},
        {"n": (140, 160), "cover_fraction": 0.77, "density": 0.075, "hidden": True},
    ),
    # past bench: Pisinger's strongly correlated items (value = weight + max_weight/10), then
    # inversely strongly correlated ones (weight = value + max_weight/10), with numbers large
    # enough (10^5 and up) that CP-SAT's presolve no longer settles them and must search. These
    # families derive values from weights: max_value states the largest value they reach. The
    # inverse family plants fewer items: its best value per weight are the heaviest, and 30-50%
    # of them would leave a capacity that half the items at random fit.
    "knapsack": (
        {"n": (8, 12)}, "easy", "medium", "hard", {"n": (60, 80)},
        {"n": (80, 110), "family": "strong", "max_weight": 100_000, "max_value": 110_000},
        {"n": (110, 150), "family": "strong", "max_weight": 1_000_000, "max_value": 1_100_000},
        {"n": (150, 200), "family": "inverse_strong", "max_weight": 1_000_000, "max_value": 900_000,
         "planted_fraction": (0.2, 0.35)},
        {"n": (200, 260), "family": "inverse_strong", "max_weight": 1_000_000, "max_value": 900_000,
         "planted_fraction": (0.2, 0.35)},
        {"n": (260, 320), "family": "inverse_strong", "max_weight": 10_000_000, "max_value": 9_000_000,
         "planted_fraction": (0.2, 0.35)},
    ),
    # past bench: random geometric graphs (points in the unit square joined below a radius) near
    # their Hamiltonicity threshold, about 6 neighbours a vertex, no planted cycle: long cycles
    # must thread through narrow places, and CP-SAT's bound stays far off (G(n, p) at its own
    # threshold, or unbalanced bipartite graphs, it settles in hundredths of a second)
    "longest_cycle": (
        {"n": (8, 12), "density": 0.3}, "easy", "medium", "hard",
        {"n": (40, 50), "density": 0.3},
        {"n": (60, 75), "density": 0.09, "family": "geometric"},
        {"n": (75, 95), "density": 0.071, "family": "geometric"},
        {"n": (95, 120), "density": 0.056, "family": "geometric"},
        {"n": (120, 150), "density": 0.045, "family": "geometric"},
        {"n": (150, 180), "density": 0.037, "family": "geometric"},
    ),
    # past bench: hidden cliques (Brockington & Culberson, DIMACS's brock family): the members'
    # degrees are evened out, and the clique is barely larger than the graph's natural ones
    "max_clique": (
        {"n": (6, 8), "clique": (3, 4), "density": 0.3}, "easy", "medium", "hard",
        {"n": (30, 40), "clique": (8, 10), "density": 0.45},
        {"n": (60, 70), "clique": (10, 11), "density": 0.5, "hidden": True},
        {"n": (70, 80), "clique": (10, 11), "density": 0.5, "hidden": True},
        {"n": (80, 90), "clique": (11, 12), "density": 0.5, "hidden": True},
        {"n": (90, 100), "clique": (11, 12), "density": 0.5, "hidden": True},
        {"n": (100, 110), "clique": (11, 12), "density": 0.5, "hidden": True},
    ),
    "set_cover": (
        {"universe": (6, 10), "subsets": (4, 6)}, "easy", "medium", "hard",
        {"universe": (30, 40), "subsets": (25, 35)}, {"universe": (40, 50), "subsets": (35, 45)},
        {"universe": (50, 65), "subsets": (45, 60)}, {"universe": (65, 80), "subsets": (60, 75)},
        {"universe": (80, 100), "subsets": (75, 90)}, {"universe": (100, 120), "subsets": (90, 110)},
    ),
    # past bench: numbers of 5 to 12 digits (at most 40 of them, which the exact meet-in-the-middle
    # heuristic handles): hardly any other subset hits the target, and CP-SAT must prove that
    # no larger one does
    "subset_sum": (
        {"n": (4, 6)}, "easy", "medium", "hard", {"n": (15, 20), "max_value": 200},
        {"n": (20, 24), "min_value": 10**4, "max_value": 10**5}, {"n": (24, 28), "min_value": 10**5, "max_value": 10**6},
        {"n": (28, 32), "min_value": 10**7, "max_value": 10**8}, {"n": (32, 36), "min_value": 10**9, "max_value": 10**10},
        {"n": (36, 40), "min_value": 10**11, "max_value": 10**12},
    ),
    "min_bisection": (
        {"n": (10, 16), "p_in": (0.3, 0.4)}, "easy", "medium", "hard",
        {"n": (50, 60), "p_in": (0.15, 0.25), "p_out": (0.04, 0.07)},
        {"n": (60, 75), "p_in": (0.12, 0.2), "p_out": (0.03, 0.06)},
        {"n": (75, 90), "p_in": (0.1, 0.16), "p_out": (0.03, 0.05)},
        {"n": (90, 110), "p_in": (0.08, 0.14), "p_out": (0.025, 0.045)},
        {"n": (110, 130), "p_in": (0.07, 0.12), "p_out": (0.02, 0.04)},
        {"n": (130, 150), "p_in": (0.06, 0.1), "p_out": (0.02, 0.035)},
    ),
    # past bench: more meetings than the rooms can hold and people available most of the day,
    # so that many schedules nearly tie and CP-SAT must search
    "meeting_scheduling": (
        {"meetings": (3, 4), "people": (3, 4), "rooms": (2, 3)}, "easy", "medium", "hard",
        {"meetings": (7, 9), "people": (6, 8), "rooms": (5, 6)},
        {"meetings": (9, 11), "people": (7, 9), "rooms": (4, 5), "availability": (0.6, 0.8)},
        {"meetings": (11, 14), "people": (8, 10), "rooms": (4, 5), "availability": (0.65, 0.85)},
        {"meetings": (14, 17), "people": (9, 11), "rooms": (3, 4), "availability": (0.7, 0.9)},
        {"meetings": (17, 21), "people": (10, 12), "rooms": (3, 4), "availability": (0.7, 0.9)},
        {"meetings": (21, 25), "people": (11, 12), "rooms": (3, 4), "availability": (0.75, 0.9)},
    ),
}

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


def level_config(task: Any, difficulty: str) -> Any:
    """The generator Config of `task` (a `Task`) at a ladder level or named level."""
    level = level_of(difficulty)
    if level is None:
        raise UsageError(f"unknown level {difficulty!r}; levels are L1..L{TOP} or {', '.join(NAMED)}")
    entry = LEVELS[task.name][level - 1]
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
