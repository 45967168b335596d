"""Pictures at every level of the ladder (L1..L10, far beyond `hard`) and for the classic
set keep the picture guarantees or their stated fallback (docs/PICTURES.md): no text off
the canvas, no text under MIN_FONT (the canvas grows taller instead), graph layouts that
pass `mmnp.layout.faults` or carry the edge-list panel, and PNGs that decode to the size
the record states."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

import mmnp
from mmnp.cli import app
from mmnp.layout import Geometry, faults
from mmnp.levels import TOP
from mmnp.render import DEFAULT_SIZE, MIN_FONT

LEVELS = [f"L{k}" for k in range(1, TOP + 1)]
# drawn one pixel under MIN_FONT by design, at every size: meeting pictures' ":30" half-hour
# ticks, and set cover's element numbers in the incidence grid (which falls back to a list
# before they would get smaller)
SMALLER_BY_DESIGN = {"meeting_scheduling": 1, "set_cover": 1}


def check_picture(task, data: dict, png: bytes, info: dict) -> None:
    """The guarantees a picture of `data` must keep, whatever its size."""
    canvas = task.generator.render(data, DEFAULT_SIZE)
    assert not canvas.clipped, f"text drawn off the canvas: {canvas.clipped[:5]}"
    assert canvas.smallest_font >= MIN_FONT - SMALLER_BY_DESIGN.get(task.name, 0)
    assert canvas.width == DEFAULT_SIZE and canvas.height >= DEFAULT_SIZE // 3
    with Image.open(io.BytesIO(png)) as img:
        img.load()
        assert img.size == (info["width"], info["height"]) == (canvas.width, canvas.height)
    if "edges" in data:
        layout = info["layout"]
        geo = Geometry(layout["radius"], layout["margin"], tuple(layout["box"]))
        found = faults(np.array(layout["centres"]), np.array(data["edges"]).reshape(-1, 2), geo)
        assert not found["overlap"] and not found["outside"]
        if layout["edges_unambiguous"]:
            assert not any(found.values()), found
        else:
            assert layout["adjacency_panel"]


@pytest.mark.parametrize("level", LEVELS)
def test_every_level_has_a_legible_picture(task, level):
    inst = task.generate(level, seed=0)
    png, info = task.picture(inst)
    check_picture(task, inst.data, png, info)


@pytest.mark.parametrize("name", ["tsp", "knapsack", "set_cover", "meeting_scheduling"])
def test_top_level_grows_the_canvas_instead_of_shrinking_text(name):
    """The fallback is really taken at L10: a canvas taller than wide, text at MIN_FONT."""
    task = mmnp.get_task(name)
    canvas = task.generator.render(task.generate(f"L{TOP}", seed=0).data, DEFAULT_SIZE)
    assert canvas.height > DEFAULT_SIZE and canvas.smallest_font >= MIN_FONT - SMALLER_BY_DESIGN.get(name, 0)


def test_set_cover_list_fallback_shows_every_subset():
    """Past the incidence grid's reach each subset is a text row "i: a, b, c"."""
    from mmnp.generators import set_cover

    task = mmnp.get_task("set_cover")
    data = task.generate(f"L{TOP}", seed=0).data
    rows = set_cover.subset_rows(data["subsets"], set())
    parsed = [[int(x) for x in re.findall(r"\d+", row)] for row in rows]
    assert [p[0] for p in parsed] == list(range(len(data["subsets"])))
    assert [p[1:] for p in parsed] == data["subsets"]


def test_classic_import_writes_every_picture(tmp_path: Path):
    out = tmp_path / "classic"
    result = CliRunner().invoke(app, ["import", "classic", "--out", str(out), "--no-optimal"])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for f in sorted(out.glob("*/*.jsonl")) for line in f.read_text().splitlines()]
    assert {r["task"] for r in records} >= {"tsp", "knapsack", "set_cover", "graph_coloring"}
    for r in records:
        assert r["image"], r["id"]
        check_picture(mmnp.get_task(r["task"]), r["instance"], (out / r["image"]).read_bytes(), r["picture"])


def test_top_level_answer_overlays_stay_on_the_canvas(task):
    """An answer drawn over an L10 picture (the reference, then a wrong one) keeps its text
    on the canvas and at MIN_FONT, as the picture itself does."""
    inst = task.generate(f"L{TOP}", seed=1)
    for answer in (task.format_answer(inst.reference["heuristic"]["solution"]), "[0, 1, 2]"):
        verdict = task.verify(inst, answer)
        canvas = task.generator.render(inst.data, DEFAULT_SIZE, verdict.solution, tuple(verdict.violations))
        assert not canvas.clipped and canvas.smallest_font >= MIN_FONT - SMALLER_BY_DESIGN.get(task.name, 0)
