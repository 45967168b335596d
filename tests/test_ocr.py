"""Read-back: Tesseract recovers every number each picture shows, each in its place (table
rows as rows, disc i as the label i, edge-list rows whole; tests/ocr_readback.py), from the
PNG at native size and after a downscale to a 512 px long side.

The bar is exact (found == shown): Tesseract's output is a function of the PNG and its
version (5.3.0 here and in CI), and the harness retries what a first reading leaves
unexplained, so an item missed here is a picture a client cannot read, not noise.
benchmarks/audit_pictures.py --ocr N prints the figures over more seeds."""

from __future__ import annotations

import pytest
from ocr_readback import LONG_SIDE, TESSERACT, read_back

import mmnp

pytestmark = pytest.mark.skipif(TESSERACT is None, reason="needs Debian's tesseract-ocr (.ci/run installs it)")


def _missed(task, difficulty: str, long_side: int | None, seed: int = 0) -> tuple[list[str], dict]:
    inst = task.generate(difficulty, seed=seed)
    png, picture = task.picture(inst)
    return read_back(task.name, inst.data, png, picture, long_side).missed, picture


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_every_number_reads_back_at_native_size(task, difficulty):
    missed, _ = _missed(task, difficulty, None)
    assert missed == []


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_every_number_reads_back_at_512_px(task, difficulty):
    """What a client that caps the long side at 512 px sends: a picture's text must survive
    it (a hard graph's edge list, on a 768 x 1150 canvas when its discs stood on a ring,
    fell to ~7 px there and lost rows)."""
    missed, _ = _missed(task, difficulty, LONG_SIDE)
    assert missed == []


@pytest.mark.parametrize("name", ["tsp", "knapsack"])
def test_top_level_tables_read_back_at_native_size(name):
    """At L10 (TSP 145-180 cities, knapsack 260-320 items) the table keeps MIN_FONT on a
    taller canvas, and every row still reads back as its row."""
    task = mmnp.get_task(name)
    inst = task.generate("L10", seed=0)
    png, picture = task.picture(inst)
    assert picture["height"] > picture["width"]  # the grown canvas, not a shrunken table
    assert read_back(name, inst.data, png, picture, None).missed == []


def test_a_number_counts_only_in_its_place():
    """Two table rows with their values swapped, or every disc given its neighbour's place,
    show the same numbers, but not in their place: those items are missed."""
    knapsack = mmnp.get_task("knapsack")
    inst = knapsack.generate("easy", seed=0)
    png, picture = knapsack.picture(inst)
    data = dict(inst.data, weights=list(inst.data["weights"]), values=list(inst.data["values"]))
    i, j = next((i, j) for i in range(len(data["weights"])) for j in range(i)
                if (data["weights"][i], data["values"][i]) != (data["weights"][j], data["values"][j]))
    for key in ("weights", "values"):
        data[key][i], data[key][j] = data[key][j], data[key][i]
    assert sorted(read_back("knapsack", data, png, picture, None).missed) == sorted([f"row {i}", f"row {j}"])

    clique = mmnp.get_task("max_clique")
    inst = clique.generate("easy", seed=0)
    png, picture = clique.picture(inst)
    centres = picture["layout"]["centres"]
    moved = dict(picture, layout=dict(picture["layout"], centres=centres[1:] + centres[:1]))
    rb = read_back("max_clique", inst.data, png, moved, None)
    assert rb.found == set() and len(rb.items) == inst.data["n"]
