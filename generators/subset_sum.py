"""Subset sum: numbers and a target that a planted subset hits exactly; use as many
numbers as possible."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mmnp.core import Violation
from mmnp.prompting import answer_instructions
from mmnp.render import HIGHLIGHT, RED, Canvas, draw_table


@dataclass(frozen=True)
class Config:
    n: tuple[int, int] | int = (8, 12)
    max_value: int = 100
    planted_fraction: float | tuple[float, float] = (0.3, 0.6)


PRESETS = {
    "easy": Config(n=(5, 10)),
    "medium": Config(n=(8, 12)),
    "hard": Config(n=(12, 15)),
}

FORMAT = answer_instructions(
    "Give the chosen numbers by their indices (0-based), each index at most once.",
    "[0, 2, 5]",
)
IMAGE_PROMPT = (
    "The image shows a target and a table of numbers with their indices. Choose numbers whose sum is exactly "
    "the target, using as many numbers as possible.\n" + FORMAT
)


def generate(params: dict, rng: np.random.Generator) -> tuple[dict, list[int]]:
    n, vmax = params["n"], params["max_value"]
    numbers = [int(x) for x in rng.integers(1, vmax + 1, size=n)]
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
    canvas = Canvas(size, size)
    canvas.text((size / 2, 12), f"Subset sum: target {data['target']}", size=24, anchor="mt", bold=True)
    chosen = {i for i in solution or () if isinstance(i, int) and 0 <= i < len(numbers)}
    if solution is not None:
        wrong = any(v.kind == "wrong_sum" for v in violations)
        canvas.text((size / 2, 46), f"chosen: {len(chosen)} numbers, sum {sum(numbers[i] for i in chosen)}",
                    size=16, anchor="mt", colour=RED if wrong else 1, bold=wrong)
    rows = [[str(i), str(x)] for i, x in enumerate(numbers)]
    draw_table(canvas, (size * 0.3, 76, size * 0.7, size - 12), ["index", "number"], rows,
               row_fill={i: HIGHLIGHT for i in chosen}, max_font=22)
    return canvas
