"""Set cover: subsets of a universe 1..U, a planted cover hidden among random subsets."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mmnp.core import Violation
from mmnp.prompting import answer_instructions
from mmnp.render import (BLACK, DARK_GREY, DEFAULT_SIZE, FAINT_RED, GREY, HIGHLIGHT, LIGHT_GREY, MIN_FONT, RED, Canvas,
                         draw_panel, text_panel)
from mmnp.transcribe import Form, as_int, as_list, scalar

CATEGORY = "selection"  # how `mmnp tasks` and the leaderboard group it (mmnp.core.CATEGORIES)
VERSION = 3  # bump when this task's instances, prompts or picture change (manifests record it). 2: answer templates, picture kinds; 3: L7-L10 draw smaller subsets (L1-L6 unchanged)

MIN_CELL = 21.5  # px at the default size: the smallest incidence cell whose element number stays legible


@dataclass(frozen=True)
class Config:
    universe: tuple[int, int] | int = (20, 25)
    subsets: tuple[int, int] | int = (10, 15)
    planted_fraction: float | tuple[float, float] = (0.25, 0.4)  # of the subsets, forming the planted cover
    other_size: float | tuple[float, float] = (0.15, 0.35)  # size of the other subsets, as a universe fraction


PRESETS = {
    "easy": Config(universe=(10, 20), subsets=(5, 10)),
    "medium": Config(universe=(20, 25), subsets=(10, 15)),
    "hard": Config(universe=(25, 30), subsets=(15, 25)),
}
LEVELS = (  # L1..L10 (`mmnp.levels`): a preset name, or the Config fields that differ from its defaults
    {"universe": (6, 10), "subsets": (4, 6)}, "easy", "medium", "hard",
    {"universe": (30, 40), "subsets": (25, 35)}, {"universe": (40, 50), "subsets": (35, 45)},
    # from L7 smaller subsets: covers of 8-20 subsets instead of 5-9, which a branch and bound
    # with the cardinality bound no longer proves in a second from L9 (CP-SAT's bound is trivial)
    {"universe": (50, 65), "subsets": (45, 60), "other_size": (0.10, 0.20), "planted_fraction": (0.20, 0.30)},
    {"universe": (65, 80), "subsets": (60, 75), "other_size": (0.08, 0.16), "planted_fraction": (0.18, 0.28)},
    {"universe": (80, 100), "subsets": (75, 90), "other_size": (0.07, 0.14), "planted_fraction": (0.16, 0.26)},
    {"universe": (100, 120), "subsets": (90, 110), "other_size": (0.06, 0.12), "planted_fraction": (0.15, 0.25)},
)

FORMAT = answer_instructions(
    "Give the chosen subsets as a list of subset ids, each at most once.",
    "[<subset id>, <subset id>, ...]",
)
IMPORTS = ("orlib",)  # `mmnp import` formats whose data this task takes (OR-Library scp files)
IMAGE_PROMPT = (
    "The image shows a universe of elements and a table of subsets: a filled cell means the subset in that row "
    "contains the element in that column (a large instance lists each subset's elements instead: the row "
    "\"i: a, b, c\" is subset i = {a, b, c}). Choose as few subsets as possible whose union is the whole universe.\n"
    + FORMAT
)


def generate(params: dict, rng: np.random.Generator) -> tuple[dict, list[int]]:
    """The planted subsets partition the universe (then each gains a few extra elements);
    the others are random. Subset order is shuffled so the cover does not stand out."""
    u, m = params["universe"], params["subsets"]
    k = max(2, min(m - 1, round(params["planted_fraction"] * m)))
    owner = rng.permutation(np.arange(u) % k)  # every planted subset gets >= 1 element
    planted = [set(int(e) + 1 for e in np.flatnonzero(owner == j)) for j in range(k)]
    for s in planted:
        s |= {int(e) + 1 for e in rng.choice(u, size=int(rng.integers(0, 3)), replace=False)}
    others = []
    for _ in range(m - k):
        size = max(1, round(params["other_size"] * u * rng.uniform(0.7, 1.3)))
        others.append({int(e) + 1 for e in rng.choice(u, size=min(size, u), replace=False)})
    order = [int(i) for i in rng.permutation(m)]
    everything = planted + others
    subsets = [sorted(everything[i]) for i in order]
    cover = sorted(pos for pos, i in enumerate(order) if i < k)
    return {"universe": u, "subsets": subsets}, cover


def prompt(data: dict) -> str:
    rows = "\n".join(f"Subset {i}: {s}" for i, s in enumerate(data["subsets"]))
    return (
        f"The universe is the elements 1 to {data['universe']}. There are {len(data['subsets'])} subsets:\n{rows}\n\n"
        "Choose as few subsets as possible whose union is the whole universe.\n\n" + FORMAT
    )


def render(data: dict, size: int, solution=None, violations: tuple[Violation, ...] = ()) -> Canvas:
    """An incidence table: a row per subset, a column per element, filled cells = membership.

    When the cells would be too small for legible element numbers (past about 30 elements
    or 30 subsets), each subset's elements are listed instead ("3: 1, 7, 12"), at MIN_FONT
    or larger, on a canvas as tall as the list needs."""
    u, subsets = data["universe"], data["subsets"]
    m = len(subsets)
    label_w, top = 96, 78
    cell = min((size - label_w - 16) / u, (size - top - 16) / (m + 0.5))
    chosen = {s for s in solution or () if isinstance(s, int) and 0 <= s < m}
    if cell < MIN_CELL * size / DEFAULT_SIZE:
        return _render_list(data, size, chosen, violations)
    canvas = Canvas(size, size, kind="table")
    canvas.text((size / 2, 10), f"Set cover: universe 1..{u}, {m} subsets", size=20, anchor="mt", bold=True)
    uncovered = {e for v in violations if v.kind == "uncovered_element" for e in v.where}
    font = max(MIN_FONT, min(16, int(cell * 0.6)))
    # element numbers too wide to stand apart in one row alternate between two rows
    stagger = canvas.text_width(str(u), font) + font * 0.6 > cell
    x0 = label_w
    canvas.text((x0 - 8, top - 6), "element", size=font, colour=DARK_GREY, anchor="rb")
    for e in range(1, u + 1):
        x = x0 + (e - 1) * cell
        if e in uncovered:
            canvas.rect((x, top, x + cell, top + m * cell), fill=FAINT_RED)
        y = top - 6 - (round(font * 1.25) if stagger and e % 2 == 0 else 0)
        canvas.text((x + cell / 2, y), str(e), size=font, anchor="mb", colour=RED if e in uncovered else BLACK)
    for i, members in enumerate(subsets):
        y = top + i * cell
        if i in chosen:
            canvas.rect((0, y, x0 + u * cell, y + cell), fill=HIGHLIGHT)
        canvas.text((x0 - 8, y + cell / 2), f"subset {i}", size=font, anchor="rm", bold=i in chosen)
        for e in members:
            x = x0 + (e - 1) * cell
            pad = max(2, cell * 0.18)
            canvas.rect((x + pad, y + pad, x + cell - pad, y + cell - pad), fill=BLACK if i in chosen else DARK_GREY)
    for e in range(u + 1):
        canvas.line(((x0 + e * cell, top), (x0 + e * cell, top + m * cell)), LIGHT_GREY)
    for i in range(m + 1):
        canvas.line(((x0, top + i * cell), (x0 + u * cell, top + i * cell)), LIGHT_GREY)
    canvas.rect((x0, top, x0 + u * cell, top + m * cell), outline=GREY)
    return canvas


def subset_rows(subsets: list[list[int]], chosen: set[int]) -> list[str]:
    """The list form's rows: "i: a, b, c" is subset i = {a, b, c} ("i*:" when an answer chose it)."""
    return [f"{i}{'*' if i in chosen else ''}: " + ", ".join(map(str, members)) for i, members in enumerate(subsets)]


def _render_list(data: dict, size: int, chosen: set[int], violations: tuple[Violation, ...]) -> Canvas:
    """Each subset's elements as a text row; an answer's subsets get a highlighted marker,
    uncovered elements are named in red under the title."""
    u, subsets = data["universe"], data["subsets"]
    s = size / DEFAULT_SIZE
    uncovered = sorted({e for v in violations if v.kind == "uncovered_element" for e in v.where})
    top = 78 * s
    panel, height = text_panel(size, subset_rows(subsets, chosen), top)
    canvas = Canvas(size, height, kind="edge_list")
    canvas.text((size / 2, 10 * s), f"Set cover: universe 1..{u}, {len(subsets)} subsets",
                size=max(MIN_FONT + 2, round(20 * s)), anchor="mt", bold=True)
    if chosen:
        canvas.text((size / 2, 40 * s), f"chosen (marked *): {len(chosen)} subsets", size=MIN_FONT, anchor="mt")
    if uncovered:
        canvas.text((size / 2, 58 * s), f"{len(uncovered)} elements uncovered", size=MIN_FONT, anchor="mt",
                    colour=RED, bold=True)
    draw_panel(canvas, panel, "Subsets and their elements (i: elements of subset i):")
    return canvas


# -- transcription (the perception probe, `mmnp.transcribe`): {"universe": 16, "subsets": [[7, 8, 9],
# ...]}; fields universe and subsets (F1 over (subset id, element))

def _transcription(data: dict) -> dict:
    return {"universe": data["universe"], "subsets": [sorted(s) for s in data["subsets"]]}


def _transcription_facts(t: dict) -> dict[str, set]:
    members = {(i, v) for i, s in enumerate(as_list(t.get("subsets"))) for v in map(as_int, as_list(s)) if v is not None}
    return {"universe": scalar(t.get("universe")), "subsets": members}


TRANSCRIPTION = Form(
    _transcription, _transcription_facts,
    '{"universe": <number of elements>, "subsets": [[<element of subset 0>, ...], [<element of subset '
    '1>, ...], ...]}')
