"""TSP: integer cities on a grid, TSPLIB EUC_2D distances (rounded Euclidean)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mmnp.core import Violation
from mmnp.prompting import answer_instructions
from mmnp.render import (BLACK, BLUE, DARK_GREY, DEFAULT_SIZE, FAINT_RED, GREY, LIGHT_GREY, MIN_FONT, RED, Canvas,
                         draw_table, table_height, text_width)
from mmnp.transcribe import Form, indexed_tuples

CATEGORY = "planning"  # how `mmnp tasks` and the leaderboard group it (mmnp.core.CATEGORIES)
VERSION = 2  # bump when this task's instances, prompts or picture change (manifests record it). 2: answer templates, picture kinds


@dataclass(frozen=True)
class Config:
    n: tuple[int, int] | int = (20, 30)
    grid: int = 100  # coordinates in [0, grid]
    min_separation: int = 4  # keeps cities (and their labels) apart in the picture


PRESETS = {"easy": Config(n=(10, 20)), "medium": Config(n=(20, 30)), "hard": Config(n=(35, 45))}
LEVELS = (  # L1..L10 (`mmnp.levels`): a preset name, or the Config fields that differ from its defaults
    {"n": (5, 9)}, "easy", "medium", "hard",
    {"n": (45, 55)}, {"n": (55, 70)}, {"n": (70, 90)}, {"n": (90, 115)}, {"n": (115, 145)}, {"n": (145, 180)},
)

DISTANCE_RULE = (
    "The distance between two cities is their Euclidean distance rounded to the nearest integer "
    "(TSPLIB EUC_2D): d = floor(sqrt((x1 - x2)^2 + (y1 - y2)^2) + 0.5)."
)
FORMAT = answer_instructions(
    "Give the tour as a list of city ids in visiting order, every city exactly once "
    "(the return to the first city is implied).",
    "[<first city id>, <second city id>, ...]",
)
IMPORTS = ("tsplib",)  # `mmnp import` formats whose data this task takes (TSPLIB files)
IMAGE_PROMPT = (
    "The image shows cities on a plane with integer coordinates, and a table of their exact coordinates. "
    f"{DISTANCE_RULE} Find the shortest tour that visits every city exactly once and returns to its start "
    "(the length of a tour is the sum of its legs, including the leg back to the start).\n" + FORMAT
)


def generate(params: dict, rng: np.random.Generator) -> tuple[dict, None]:
    """Uniform random cities, no two closer than `min_separation` (no planted tour: the
    exact solver proves the optimum at these sizes)."""
    n, grid, sep = params["n"], params["grid"], params["min_separation"]
    if n < 3:
        raise ValueError(f"tsp needs at least 3 cities, got n={n}")
    if n * (sep + 1) ** 2 > (grid + 1) ** 2 // 2:
        raise ValueError(f"{n} cities at separation {sep} do not fit a {grid}x{grid} grid; raise grid")
    coords: list[list[int]] = []
    while len(coords) < n:
        x, y = (int(v) for v in rng.integers(0, grid + 1, size=2))
        if all((x - a) ** 2 + (y - b) ** 2 >= sep * sep for a, b in coords):
            coords.append([x, y])
    return {"coords": coords, "grid": grid, "distance": "EUC_2D"}, None


def prompt(data: dict) -> str:
    cities = "\n".join(f"City {i}: ({x}, {y})" for i, (x, y) in enumerate(data["coords"]))
    return (
        f"There are {len(data['coords'])} cities with integer coordinates (x, y):\n{cities}\n\n{DISTANCE_RULE}\n"
        "Find the shortest tour that visits every city exactly once and returns to its start. "
        "The length of a tour is the sum of its legs, including the leg back to the start.\n\n" + FORMAT
    )


def render(data: dict, size: int, solution: list[int] | None = None,
           violations: tuple[Violation, ...] = ()) -> Canvas:
    """Cities on a labelled coordinate grid with their exact coordinates in a table under
    it, on a square canvas (a wide one loses its table first when a client downscales).
    Each label sits on the side of its dot that keeps it off every other city's dot.

    When the table would leave the plot under half the width (about 50 cities), the plot
    keeps the full width, the table drops to MIN_FONT in as many column groups as fit, and
    the canvas grows taller to hold it."""
    coords, grid = data["coords"], data["grid"]
    n = len(coords)
    s = size / DEFAULT_SIZE
    rows = [[str(i), str(x), str(y)] for i, (x, y) in enumerate(coords)]
    header = ["city", "x", "y"]
    font_size = max(MIN_FONT, round(18 * s))
    table_h = table_height(size - 16 * s, header, rows, font_size)
    plot = size - table_h - 16 * s  # the plot's side, axis labels included
    if plot < size / 2:
        font_size = MIN_FONT
        table_h = table_height(size - 16 * s, header, rows, font_size)
        plot = size - 16 * s
    canvas = Canvas(size, math.ceil(plot + table_h + 16 * s), kind="chart")
    tick = max(MIN_FONT, round(14 * s))
    # margin for axis labels: wider only where the largest label needs it (imported TSPLIB grids)
    m = max(round(40 * s), math.ceil(text_width(str(grid), tick) + 10 * s))
    x_left = (size - plot) / 2
    scale = (plot - 2 * m) / grid
    to_px = lambda x, y: (x_left + m + x * scale, plot - m - y * scale + 4 * s)  # noqa: E731
    step = 10 if grid <= 150 else 50 if grid <= 1000 else _round_step(grid / 20)
    for t in range(0, grid + 1, step):
        canvas.line((to_px(t, 0), to_px(t, grid)), LIGHT_GREY)
        canvas.line((to_px(0, t), to_px(grid, t)), LIGHT_GREY)
        if t % (2 * step) == 0:
            canvas.text((to_px(t, 0)[0], to_px(t, 0)[1] + 6 * s), str(t), size=tick, colour=DARK_GREY, anchor="mt")
            canvas.text((to_px(0, t)[0] - 6 * s, to_px(0, t)[1]), str(t), size=tick, colour=DARK_GREY, anchor="rm")
    canvas.rect((*to_px(0, grid), *to_px(grid, 0)), outline=GREY)
    pts = [to_px(x, y) for x, y in coords]
    if solution:
        tour = [c for c in solution if isinstance(c, int) and 0 <= c < n]
        for a, b in zip(tour, tour[1:] + tour[:1]):
            canvas.arrow(pts[a], pts[b], BLUE, width=2, shorten=6)
    flagged = {c for v in violations for c in v.where if isinstance(c, int) and 0 <= c < n}
    dot = max(4.0, 4.5 * s)
    label = max(MIN_FONT, round(15 * s))
    for i, p in enumerate(pts):
        if i in flagged:
            canvas.circle(p, 11 * s, outline=RED, width=3)
        canvas.circle(p, dot, fill=BLACK, outline=BLACK)
    for i, (xy, anchor) in enumerate(label_positions(canvas, pts, dot, label)):
        canvas.text(xy, str(i), size=label, anchor=anchor, bold=True)
    draw_table(canvas, (8 * s, plot + 8 * s, size - 8 * s, plot + table_h + 8 * s), header, rows,
               row_fill={i: FAINT_RED for i in flagged}, max_font=font_size, min_font=font_size)
    return canvas


def label_positions(canvas: Canvas, pts: list[tuple[float, float]], dot: float,
                    size: int) -> list[tuple[tuple[float, float], str]]:
    """For each city, the first of eight spots around its dot where the label's box keeps
    clear of every other dot (and of the labels placed before it, when it can)."""
    centres = np.array(pts)
    gap = dot + 2
    spots = [((gap, -gap), "lb"), ((gap, gap), "lt"), ((-gap, -gap), "rb"), ((-gap, gap), "rt"),
             ((0, -gap - 1), "mb"), ((0, gap + 1), "mt"), ((gap + 1, 0), "lm"), ((-gap - 1, 0), "rm")]
    placed: list[tuple[float, float, float, float]] = []
    out = []
    for i, (x, y) in enumerate(pts):
        others = np.delete(centres, i, axis=0)
        choice, fallback = None, None
        for (dx, dy), anchor in spots:
            box = canvas.text_box((x + dx, y + dy), str(i), size, anchor, bold=True)
            # distance from every other dot to the box, against the dot's radius plus a pixel
            cx = np.clip(others[:, 0], box[0], box[2])
            cy = np.clip(others[:, 1], box[1], box[3])
            if (np.hypot(others[:, 0] - cx, others[:, 1] - cy) <= dot + 1).any():
                continue
            fallback = fallback or ((x + dx, y + dy), anchor)
            if not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in placed):
                choice = ((x + dx, y + dy), anchor)
                placed.append(box)
                break
        out.append(choice or fallback or (((x + gap, y - gap)), "lb"))
    return out


def _round_step(least: float) -> int:
    """The smallest 1, 2 or 5 times a power of ten that is at least `least` (grid lines of a large grid)."""
    power = 10 ** max(0, math.floor(math.log10(least)))
    return next(k * power for k in (1, 2, 5, 10) if k * power >= least)


# -- transcription (the perception probe, `mmnp.transcribe`): {"cities": [[x0, y0], [x1, y1], ...]},
# city i at index i; field cities: F1 over (id, x, y)

def _transcription(data: dict) -> dict:
    return {"cities": [list(c) for c in data["coords"]]}


def _transcription_facts(t: dict) -> dict[str, set]:
    return {"cities": indexed_tuples(t.get("cities"), 2)}


TRANSCRIPTION = Form(
    _transcription, _transcription_facts,
    '{"cities": [[<x of city 0>, <y of city 0>], [<x of city 1>, <y of city 1>], ...]}')
