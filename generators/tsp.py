"""TSP: integer cities on a grid, TSPLIB EUC_2D distances (rounded Euclidean)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mmnp.core import Violation
from mmnp.prompting import answer_instructions
from mmnp.render import BLUE, BLACK, DARK_GREY, GREY, LIGHT_GREY, RED, Canvas, draw_table


@dataclass(frozen=True)
class Config:
    n: tuple[int, int] | int = (20, 30)
    grid: int = 100  # coordinates in [0, grid]
    min_separation: int = 4  # keeps cities (and their labels) apart in the picture


PRESETS = {"easy": Config(n=(10, 20)), "medium": Config(n=(20, 30)), "hard": Config(n=(35, 45))}

DISTANCE_RULE = (
    "The distance between two cities is their Euclidean distance rounded to the nearest integer "
    "(TSPLIB EUC_2D): d = floor(sqrt((x1 - x2)^2 + (y1 - y2)^2) + 0.5)."
)
FORMAT = answer_instructions(
    "Give the tour as a list of city ids in visiting order, every city exactly once "
    "(the return to the first city is implied). For example, for 4 cities:",
    "[0, 2, 3, 1]",
)
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
    """Cities on a labelled coordinate grid (left) and their exact coordinates (right)."""
    coords, grid = data["coords"], data["grid"]
    n = len(coords)
    table_w = int(size * 0.45)
    canvas = Canvas(size + table_w, size)
    m = 44  # margin for axis labels
    scale = (size - 2 * m) / grid
    to_px = lambda x, y: (m + x * scale, size - m - y * scale)  # noqa: E731
    step = 10 if grid <= 150 else 50
    for t in range(0, grid + 1, step):
        canvas.line((to_px(t, 0), to_px(t, grid)), LIGHT_GREY)
        canvas.line((to_px(0, t), to_px(grid, t)), LIGHT_GREY)
        canvas.text((to_px(t, 0)[0], size - m + 8), str(t), size=12, colour=DARK_GREY, anchor="mt")
        canvas.text((m - 8, to_px(0, t)[1]), str(t), size=12, colour=DARK_GREY, anchor="rm")
    canvas.rect((*to_px(0, grid), *to_px(grid, 0)), outline=GREY)
    pts = [to_px(x, y) for x, y in coords]
    if solution:
        tour = [c for c in solution if isinstance(c, int) and 0 <= c < n]
        for a, b in zip(tour, tour[1:] + tour[:1]):
            canvas.arrow(pts[a], pts[b], BLUE, width=2, shorten=6)
    flagged = {c for v in violations for c in v.where if isinstance(c, int) and 0 <= c < n}
    for i, p in enumerate(pts):
        if i in flagged:
            canvas.circle(p, 11, outline=RED, width=3)
        canvas.circle(p, 4.5, fill=BLACK, outline=BLACK)
        canvas.text((p[0] + 6, p[1] - 5), str(i), size=15, anchor="lb", bold=True)
    rows = [[str(i), str(x), str(y)] for i, (x, y) in enumerate(coords)]
    draw_table(canvas, (size + 4, 12, size + table_w - 8, size - 12), ["city", "x", "y"], rows,
               row_fill={i: 10 for i in flagged}, max_font=16)
    return canvas
