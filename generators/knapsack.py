"""0/1 knapsack: items with integer weights and values; capacity just above a planted
selection's weight. `family` picks how values relate to weights: weakly correlated (the
default, NP-Bench's), or one of Pisinger's classes that are hard for branch and bound and
for CP-SAT once the numbers are large ("Where are the hard knapsack problems?", 2005)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from mmnp.core import Violation
from mmnp.prompting import answer_instructions
from mmnp.render import HIGHLIGHT, RED, Canvas, draw_table, table_box_height
from mmnp.transcribe import Form, indexed_tuples, scalar

CATEGORY = "selection"  # how `mmnp tasks` and the leaderboard group it (mmnp.core.CATEGORIES)
VERSION = 2  # bump when this task's instances, prompts or picture change (manifests record it). 2: answer templates, picture kinds

FAMILIES = ("weak", "strong", "inverse_strong", "spanner", "profit_ceiling")
SPANNER_ITEMS, SPANNER_MULTIPLIER = 2, 10  # Pisinger's spanner(2, 10)
MAX_NUMBER = 10**9  # weights and values: their sums stay far inside 64-bit integers; the DP is bounded anyway


@dataclass(frozen=True)
class Config:
    n: tuple[int, int] | int = (23, 37)
    # how values relate to weights; added after the first datasets, so recorded only when set
    # (they regenerate byte for byte; a text field draws no random number)
    family: str = field(default="weak", metadata={"choices": FAMILIES, "recorded": "when_set"})
    max_weight: int = field(default=50, metadata={"limit": MAX_NUMBER})
    # the weak family's value range; the others derive values from weights
    max_value: int = field(default=100, metadata={"limit": MAX_NUMBER})
    planted_fraction: float | tuple[float, float] = (0.3, 0.5)


PRESETS = {
    "easy": Config(n=(14, 25)),
    "medium": Config(n=(23, 37)),
    "hard": Config(n=(35, 60)),
}
# past bench: Pisinger's strongly correlated items (value = weight + max_weight/10), then
# inversely strongly correlated ones (weight = value + max_weight/10), with numbers large
# enough (10^5 and up) that CP-SAT's presolve no longer settles them and must search. These
# families derive values from weights: max_value states the largest value they reach. The
# inverse family plants fewer items: its best value per weight are the heaviest, and 30-50%
# of them would leave a capacity that half the items at random fit.
LEVELS = (  # L1..L10 (`mmnp.levels`): a preset name, or the Config fields that differ from its defaults
    {"n": (8, 12)}, "easy", "medium", "hard", {"n": (60, 80)},
    {"n": (80, 110), "family": "strong", "max_weight": 100_000, "max_value": 110_000},
    {"n": (110, 150), "family": "strong", "max_weight": 1_000_000, "max_value": 1_100_000},
    {"n": (150, 200), "family": "inverse_strong", "max_weight": 1_000_000, "max_value": 900_000,
     "planted_fraction": (0.2, 0.35)},
    {"n": (200, 260), "family": "inverse_strong", "max_weight": 1_000_000, "max_value": 900_000,
     "planted_fraction": (0.2, 0.35)},
    {"n": (260, 320), "family": "inverse_strong", "max_weight": 10_000_000, "max_value": 9_000_000,
     "planted_fraction": (0.2, 0.35)},
)

FORMAT = answer_instructions(
    "Give the chosen items as a list of item ids, each at most once.",
    "[<item id>, <item id>, ...]",
)
IMPORTS = ("orlib",)  # `mmnp import` formats whose data this task takes (OR-Library knapsack files)
IMAGE_PROMPT = (
    "The image shows a knapsack capacity and a table of items with their weights and values. Choose a set of "
    "items whose total weight does not exceed the capacity and whose total value is as large as possible.\n"
    + FORMAT
)


def generate(params: dict, rng: np.random.Generator) -> tuple[dict, list[int]]:
    """Items of the chosen family; the planted set favours good value per weight, and the
    capacity is its weight plus a little slack."""
    n, wmax, vmax = params["n"], params["max_weight"], params["max_value"]
    family = params.get("family", "weak")
    if family == "weak":  # value = weight x a factor in [0.6, 1.4] (the random stream of every dataset so far)
        weights = rng.integers(1, wmax + 1, size=n)
        values = np.clip(np.round(weights * (vmax / wmax) * rng.uniform(0.6, 1.4, size=n)).astype(int), 1, vmax)
    elif family in FAMILIES:
        weights, values = pisinger(family, n, wmax, rng)
    else:
        raise ValueError(f"knapsack family {family!r}: expected one of {', '.join(FAMILIES)}")
    k = max(1, round(params["planted_fraction"] * n))
    score = values / weights * rng.uniform(0.7, 1.3, size=n)
    planted = sorted(int(i) for i in np.argsort(-score, kind="stable")[:k])
    capacity = int(weights[planted].sum() + rng.integers(0, max(2, wmax // 10)))
    data = {"capacity": capacity, "weights": [int(w) for w in weights], "values": [int(v) for v in values]}
    return data, planted


def pisinger(family: str, n: int, r: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Weights and values of Pisinger's classes with data range `r` (weights in 1..r):
    strong: value = weight + r/10; inverse_strong: weight = value + r/10; profit_ceiling:
    value = 3 * ceil(weight / 3); spanner: every item a multiple (1..10) of one of two
    strongly correlated "spanner" items. Their value per weight nearly ties, so bounds are
    weak and many selections come within a few units of the optimum."""
    if family == "strong":
        weights = rng.integers(1, r + 1, size=n)
        values = weights + r // 10
    elif family == "inverse_strong":
        weights = rng.integers(r // 10 + 1, r + 1, size=n)
        values = weights - r // 10
    elif family == "profit_ceiling":
        weights = rng.integers(1, r + 1, size=n)
        values = 3 * -(-weights // 3)
    else:  # spanner
        m = SPANNER_MULTIPLIER
        base_w = rng.integers(1, max(1, r // m) + 1, size=SPANNER_ITEMS)
        base_v = base_w + r // (10 * m)
        which, times = rng.integers(0, SPANNER_ITEMS, size=n), rng.integers(1, m + 1, size=n)
        weights, values = times * base_w[which], times * base_v[which]
    return weights, values


def prompt(data: dict) -> str:
    items = "\n".join(f"Item {i}: weight {w}, value {v}" for i, (w, v) in enumerate(zip(data["weights"], data["values"])))
    return (
        f"A knapsack has capacity {data['capacity']}. There are {len(data['weights'])} items:\n{items}\n\n"
        "Choose a set of items whose total weight does not exceed the capacity and whose total value is as "
        "large as possible.\n\n" + FORMAT
    )


def render(data: dict, size: int, solution=None, violations: tuple[Violation, ...] = ()) -> Canvas:
    weights, values, cap = data["weights"], data["values"], data["capacity"]
    rows = [[str(i), str(w), str(v)] for i, (w, v) in enumerate(zip(weights, values))]
    header = ["item", "weight", "value"]
    # more items than a square holds at MIN_FONT: the canvas grows taller, the text does not shrink
    table_h = table_box_height(size - 24, size - 76, header, rows)
    canvas = Canvas(size, math.ceil(64 + table_h + 12), kind="table")
    chosen = {i for i in solution or () if isinstance(i, int) and 0 <= i < len(weights)}
    canvas.text((size / 2, 10), f"Knapsack capacity: {cap}    ({len(weights)} items)", size=20, anchor="mt", bold=True)
    if solution is not None:
        w = sum(weights[i] for i in chosen)
        v = sum(values[i] for i in chosen)
        over = any(x.kind == "over_capacity" for x in violations)
        canvas.text((size / 2, 38), f"chosen: weight {w} / {cap}, value {v}", size=16, anchor="mt",
                    colour=RED if over else 1, bold=over)
    draw_table(canvas, (12, 64, size - 12, 64 + table_h), header, rows,
               row_fill={i: HIGHLIGHT for i in chosen})
    return canvas


# -- transcription (the perception probe, `mmnp.transcribe`): {"capacity": 100, "items": [[weight0,
# value0], ...]}, item i at index i; fields capacity and items (F1 over (id, weight, value))

def _transcription(data: dict) -> dict:
    return {"capacity": data["capacity"], "items": [[w, v] for w, v in zip(data["weights"], data["values"])]}


def _transcription_facts(t: dict) -> dict[str, set]:
    return {"capacity": scalar(t.get("capacity")), "items": indexed_tuples(t.get("items"), 2)}


TRANSCRIPTION = Form(
    _transcription, _transcription_facts,
    '{"capacity": <capacity>, "items": [[<weight of item 0>, <value of item 0>], [<weight of item 1>, '
    '<value of item 1>], ...]}')
