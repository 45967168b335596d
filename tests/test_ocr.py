"""Read-back: Tesseract recovers the numbers each picture shows (table cells, vertex
labels, edge-list rows) from the PNG, at native size and after a downscale to a 512 px
long side. Tesseract is a weak reader of lone digits, so the bars are rates, set just
under what it reaches here; benchmarks/audit_pictures.py prints the full figures."""

from __future__ import annotations

import pytest

from ocr_readback import LONG_SIDE, TESSERACT, recovered

pytestmark = pytest.mark.skipif(TESSERACT is None, reason="needs Debian's tesseract-ocr (.ci/run installs it)")

# the rate each kind of picture must reach: tables of numbers and set cover's staggered
# element headers and meeting pictures (read region by region); graphs (lone digits in discs, edge
# lists) take the default
BAR = {"tsp": 0.97, "knapsack": 0.97, "subset_sum": 0.97, "set_cover": 0.97, "meeting_scheduling": 0.95}
GRAPH_BAR = 0.95


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_pictures_read_back_at_native_size(task, difficulty):
    inst = task.generate(difficulty, seed=0)
    png, picture = task.picture(inst)
    found, shown = recovered(task.name, inst.data, png, picture, None)
    assert found / shown >= BAR.get(task.name, GRAPH_BAR), f"{found}/{shown}"


def test_pictures_read_back_at_512_px(task):
    inst = task.generate("medium", seed=0)
    png, picture = task.picture(inst)
    found, shown = recovered(task.name, inst.data, png, picture, LONG_SIDE)
    assert found / shown >= BAR.get(task.name, GRAPH_BAR), f"{found}/{shown}"


@pytest.mark.parametrize("name", ["tsp", "knapsack"])
def test_top_level_tables_read_back_at_native_size(name):
    """At L10 (TSP 145-180 cities, knapsack 260-320 items) the table keeps MIN_FONT on a
    taller canvas, and reads back as well as at the presets."""
    import mmnp

    task = mmnp.get_task(name)
    inst = task.generate("L10", seed=0)
    png, picture = task.picture(inst)
    assert picture["height"] > picture["width"]  # the grown canvas, not a shrunken table
    found, shown = recovered(name, inst.data, png, picture, None)
    assert found / shown >= BAR[name], f"{found}/{shown}"
