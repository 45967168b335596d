"""Subset sum: numbers and a target that a planted subset hits exactly; use as many
numbers as possible. Large numbers make it hard (Chvatal's hard sets are numbers of about n/2
digits; `min_value` keeps every number near 10^k): the DP over sums no longer fits, almost no
other subset hits the target, and proving that no larger subset does is hard for CP-SAT."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from mmnp.core import Violation
from mmnp.prompting import answer_instructions
from mmnp.render import HIGHLIGHT, RED, Canvas, draw_table, table_box_height
from mmnp.transcribe import Form, as_int, as_list, scalar

CATEGORY = "selection"  # how `mmnp tasks` and the leaderboard group it (mmnp.core.CATEGORIES)
VERSION = 2  # bump when this task's instances, prompts or picture change (manifests record it). 2: answer templates, picture kinds

MAX_VALUE = 10**15  # sums of a hundred such numbers stay far inside CP-SAT's and numpy's 64-bit integers


@dataclass(frozen=True)
class Config:
    n: tuple[int, int] | int = (8, 12)
    # numbers are drawn from min_value..max_value; min_value came after the first datasets, so it
    # is recorded only when set (they regenerate byte for byte; a scalar draws no random number)
    min_value: int = field(default=1, metadata={"recorded": "when_set", "limit": MAX_VALUE})
    max_value: int = field(default=100, metadata={"limit": MAX_VALUE})
    planted_fraction: float | tuple[float, float] = (0.3, 0.6)


PRESETS = {
    "easy": Config(n=(5, 10)),
    "medium": Config(n=(8, 12)),
    "hard": Config(n=(12, 15)),
}
# past bench: numbers of 5 to 12 digits (at most 40 of them, which the exact meet-in-the-middle
# heuristic handles): hardly any other subset hits the target, and CP-SAT must prove that
# no larger one does
LEVELS = (  # L1..L10 (`mmnp.levels`): a preset name, or the Config fields that differ from its defaults
    {"n": (4, 6)}, "easy", "medium", "hard", {"n": (15, 20), "max_value": 200},
    {"n": (20, 24), "min_value": 10**4, "max_value": 10**5}, {"n": (24, 28), "min_value": 10**5, "max_value": 10**6},
    {"n": (28, 32), "min_value": 10**7, "max_value": 10**8}, {"n": (32, 36), "min_value": 10**9, "max_value": 10**10},
    {"n": (36, 40), "min_value": 10**11, "max_value": 10**12},
)

FORMAT = answer_instructions(
    "Give the chosen numbers by their indices (0-based), each index at most once.",
    "[<index>, <index>, ...]",
)
IMAGE_PROMPT = (
    "The image shows a target and a table of numbers with their indices. Choose numbers whose sum is exactly "
    "the target, using as many numbers as possible.\n" + FORMAT
)


def generate(params: dict, rng: np.random.Generator) -> tuple[dict, list[int]]:
    n, vmin, vmax = params["n"], params.get("min_value", 1), params["max_value"]
    if not 1 <= vmin <= vmax <= MAX_VALUE:
        raise ValueError(f"subset_sum min_value={vmin}, max_value={vmax}: expected 1 <= min_value <= max_value "
                         f"<= {MAX_VALUE}")
    numbers = [int(x) for x in rng.integers(vmin, vmax + 1, size=n)]
    k = max(1, min(n - 1, round(params["planted_fraction"] * n)))
    planted = sorted(int(i) for i in rng.choice(n, size=k, replace=False))
    return {"numbers": numbers, "target": sum(numbers[i] for i in planted)}, planted


def prompt(data: dict) -> str:
    rows = "\n".join(f"Number {i}: {x}" for i, x in enumerate(data["numbers"]))
    return (
        f"The target is {data['target']}. There are {len(data['numbers'])} numbers:\n{rows}\n\n"
        "Choose numbers whose sum is exactly the target, using as many numbers as possible.\n\n" + FORMAT
    )


def render(data: dict, size: int, solution=None, violations: tuple[Violation, ...] = ()) -> Canvas:
    numbers = data["numbers"]
    rows = [[str(i), str(x)] for i, x in enumerate(numbers)]
    header = ["index", "number"]
    # a middle column while it holds the numbers at MIN_FONT; then the full width, then a taller canvas
    x0, x1 = size * 0.3, size * 0.7
    table_h = table_box_height(x1 - x0, size - 88, header, rows, max_font=22)
    if table_h > size - 88:
        x0, x1 = 12, size - 12
        table_h = table_box_height(x1 - x0, size - 88, header, rows, max_font=22)
    canvas = Canvas(size, math.ceil(76 + table_h + 12), kind="table")
    canvas.text((size / 2, 12), f"Subset sum: target {data['target']}", size=24, anchor="mt", bold=True)
    chosen = {i for i in solution or () if isinstance(i, int) and 0 <= i < len(numbers)}
    if solution is not None:
        wrong = any(v.kind == "wrong_sum" for v in violations)
        canvas.text((size / 2, 46), f"chosen: {len(chosen)} numbers, sum {sum(numbers[i] for i in chosen)}",
                    size=16, anchor="mt", colour=RED if wrong else 1, bold=wrong)
    draw_table(canvas, (x0, 76, x1, 76 + table_h), header, rows,
               row_fill={i: HIGHLIGHT for i in chosen}, max_font=22)
    return canvas


# -- transcription (the perception probe, `mmnp.transcribe`): {"target": 115, "numbers": [12, 50,
# ...]}; fields target and numbers (F1 over (index, number))

def _transcription(data: dict) -> dict:
    return {"target": data["target"], "numbers": list(data["numbers"])}


def _transcription_facts(t: dict) -> dict[str, set]:
    numbers = {(i, v) for i, v in enumerate(map(as_int, as_list(t.get("numbers")))) if v is not None}
    return {"target": scalar(t.get("target")), "numbers": numbers}


TRANSCRIPTION = Form(
    _transcription, _transcription_facts,
    '{"target": <target>, "numbers": [<number 0>, <number 1>, ...]}  (the numbers in the order shown)')
