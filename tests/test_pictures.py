"""Picture geometry and legibility: the graph layout's invariants on arbitrary graphs, the
edge-list panel's content, TSP labels off other dots, strokes and anti-aliased text, and
the canonical sets' hashes."""

from __future__ import annotations

import io
import re
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

import mmnp
from mmnp import layout
from mmnp.render import (BLACK, DEFAULT_SIZE, MAX_ASPECT, Canvas, _panel_layout, _text_width, _wrapped, adjacency_rows,
                         graph_canvas)

graphs = st.integers(3, 50).flatmap(lambda n: st.tuples(
    st.just(n), st.sets(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(lambda e: e[0] < e[1]),
                        max_size=min(300, n * (n - 1) // 2))))


@settings(max_examples=60, deadline=None)
@given(graphs)
def test_any_graph_is_drawn_unambiguously_or_gets_its_panel(graph):
    n, edges = graph
    edges = sorted([u, v] for u, v in edges)
    canvas, drawing = graph_canvas(n, edges, DEFAULT_SIZE, "t")
    found = layout.faults(drawing.centres, np.array(edges, dtype=int).reshape(-1, 2), drawing.geometry)
    assert found["overlap"] == 0 and found["outside"] == 0
    if drawing.unambiguous:
        assert sum(found.values()) == 0 and drawing.panel is None
    else:
        assert drawing.panel is not None and canvas.height <= MAX_ASPECT * DEFAULT_SIZE + 1
        listed = [line for col in drawing.panel[4] for line in col]
        assert _edges_from_panel(listed) == {tuple(e) for e in edges}
        top, font_size, line_h, _, cols = drawing.panel
        # every line's baseline (draw_panel's) on the canvas: the panel is given room for all
        assert top + (max(map(len, cols)) + 1.5) * line_h + font_size / 2 <= canvas.height


def _edges_from_panel(lines: list[str]) -> set[tuple[int, int]]:
    """Read the panel back as a person would: "u: v, w" rows, continuation lines indented."""
    edges, u = set(), None
    for line in lines:
        head, sep, rest = line.partition(":")
        if sep and not line.startswith(" "):
            u, tail = int(head), rest
        else:
            tail = line
        edges |= {(u, int(v)) for v in re.findall(r"\d+", tail)}
    return edges


def _every_column_count(canvas_w: float, rows: list[str], size: int, pad: float) -> tuple | None:
    """`_panel_layout` without its pruning: every column count from 1 to 5 laid out, the
    fewest lines in the tallest column kept, the first (fewest columns) on a tie."""
    space = _text_width(" ", size, False)
    tokens = [row.split(" ") for row in rows]
    widths = [[_text_width(tok, size, False) for tok in toks] for toks in tokens]
    best = None
    for ncols in range(1, 6):
        col_w = (canvas_w - 2 * pad) / ncols - size
        blocks = _wrapped(rows, tokens, widths, [sum(ws) + space * (len(ws) - 1) for ws in widths], col_w,
                          space, 4 * space)
        if blocks is None:
            continue
        for target in range(max(map(len, blocks)), sum(map(len, blocks)) + 1):
            cols = [[]]
            for block in blocks:
                if cols[-1] and len(cols[-1]) + len(block) > target:
                    cols.append([])
                cols[-1].extend(block)
            if len(cols) <= ncols:
                break
        if best is None or target < best[0]:
            best = (target, col_w + size, cols)
    return best


@settings(max_examples=80, deadline=None)
@given(graphs, st.sampled_from([300, 768, 1500]), st.integers(10, 18))
def test_the_edge_list_takes_the_fewest_lines_of_any_column_count(graph, width, size):
    """The layout search skips column counts that cannot win; what it returns must be what
    laying out every count gives (the tallest column as short as any, fewer columns on a tie)."""
    n, edges = graph
    rows = adjacency_rows(n, sorted(edges))
    if not rows:
        return
    got, expected = _panel_layout(width, rows, size, 12.0), _every_column_count(width, rows, size, 12.0)
    assert (got is None) == (expected is None)
    if got is not None:
        assert got[0] == expected[0] and got[1] == pytest.approx(expected[1]) and got[2] == expected[2]
        assert max(map(len, got[2])) <= got[0]  # no column taller than the lines it is given


def test_a_hubs_wrapped_row_stays_inside_the_panel():
    """A hub's row wraps into more lines than the columns' average; the panel's height used to
    count the average, so the hub's column ran 3 lines past the bottom of the picture."""
    n = 60
    edges = [[0, v] for v in range(1, n)] + [[u, v] for u in range(1, n) for v in range(u + 1, min(n, u + 4))]
    canvas, drawing = graph_canvas(n, edges, DEFAULT_SIZE, "t")
    top, font_size, line_h, _, cols = drawing.panel
    hub_lines = 1 + next((i for i, line in enumerate(cols[0][1:]) if not line.startswith(" ")), len(cols[0]) - 1)
    assert hub_lines >= 10  # the case in point: one row wrapped over many lines
    assert top + (max(map(len, cols)) + 1.5) * line_h + font_size / 2 <= canvas.height


def test_adjacency_rows_list_each_edge_once_under_its_smaller_end():
    assert adjacency_rows(5, [[3, 1], [1, 4], [0, 2]]) == ["0: 2", "1: 3, 4"]


@pytest.mark.parametrize("difficulty", ["medium", "hard"])
def test_the_edge_list_stays_legible_after_a_downscale_to_512_px(difficulty):
    """A ring of discs leaves its middle empty and made hard graphs' pictures up to 1.5x
    taller, so a client's downscale to a 512 px long side shrank the 14 px list to ~6 px;
    the discs in rows and the font chosen against the long side keep it at 10 px or more."""
    for task in mmnp.list_tasks():
        for seed in range(6):
            data = task.generate(difficulty, seed=seed).data
            if "edges" not in data:
                break
            canvas, drawing = graph_canvas(data["n"], data["edges"], DEFAULT_SIZE, "title")
            if drawing.panel is not None:
                assert drawing.panel[1] * 512 / max(canvas.width, canvas.height) >= 10, (task.name, seed)


def test_faults_catch_an_edge_under_a_vertex_and_crowded_edges():
    geo = layout.Geometry(radius=15, margin=4, box=(0, 0, 400, 400))
    pos = np.array([[50.0, 200.0], [350.0, 200.0], [200.0, 210.0], [200.0, 60.0]])
    found = layout.faults(pos, np.array([[0, 1]]), geo)
    assert found["clearance"] == 1  # vertex 2 sits 10 px from the edge (0, 1)
    pos[2, 1] = 300.0
    assert layout.faults(pos, np.array([[0, 1]]), geo)["clearance"] == 0
    crowded = np.array([[200.0, 200.0], [350.0, 200.0], [350.0, 215.0], [50.0, 50.0]])
    assert layout.faults(crowded, np.array([[0, 1], [0, 2]]), geo)["angle"] == 1  # 5.7 degrees apart


def test_placement_is_deterministic_and_circle_suffices_for_a_cycle():
    geo = layout.Geometry(radius=15, margin=4, box=(0, 40, 768, 768))
    cycle = [[i, (i + 1) % 12] for i in range(12)]
    pos = layout.place(12, cycle, geo)
    assert pos is not None and np.array_equal(pos, layout.place(12, cycle, geo))
    assert np.array_equal(pos, layout.circle(12, geo))  # the first layout tried, kept when clean


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_tsp_labels_never_touch_another_citys_dot(difficulty):
    from mmnp.generators.tsp import label_positions

    task = mmnp.get_task("tsp")
    for seed in range(6):
        coords = task.generate(difficulty, seed=seed).data["coords"]
        canvas = Canvas(768, 768)
        pts = [(40 + x * 4.0, 440 - y * 4.0) for x, y in coords]
        for i, (xy, anchor) in enumerate(label_positions(canvas, pts, 4.5, 15)):
            box = canvas.text_box(xy, str(i), 15, anchor, bold=True)
            for j, (px, py) in enumerate(pts):
                if j != i:
                    dx = max(box[0] - px, 0, px - box[2])
                    dy = max(box[1] - py, 0, py - box[3])
                    assert dx * dx + dy * dy > 4.5 ** 2, f"label {i} touches city {j}"


def test_strokes_are_at_least_two_pixels_and_text_is_anti_aliased():
    canvas = Canvas(100, 100)
    canvas.line(((10, 50), (90, 50)), BLACK, width=1)
    column = np.asarray(canvas.image.convert("L"))[:, 50]
    assert (column < 128).sum() >= 2
    canvas = Canvas(200, 60)
    canvas.text((10, 10), "0123456789", size=16)
    grey = np.asarray(canvas.image.convert("L"))
    assert ((grey > 30) & (grey < 225)).sum() > 20, "glyph edges should blend into the background"


@pytest.mark.parametrize("bold", [False, True])
def test_text_is_what_imagedraw_draws_word_by_word(bold):
    """Text tiles come from the font's glyph mask directly (one layout, not two): each word's
    tile must be the coverage ImageDraw.text draws, at ImageDraw's offset, and a line must be
    its words at their advances, whatever the anchor, size or script (empty strings included)."""
    from PIL import ImageDraw

    from mmnp.render import _COVERAGE, WHITE, _shade_lut, _text_tile, font, text_width

    for s in ("17,", "3:", "Minimum bisection: 35 vertices", "é漢🙂", "", "—", "W"):
        for size, anchor in ((9, "la"), (13, "mm"), (18, "mt"), (24, "rb")):
            f = font(size, bold)
            left, top, right, bottom = f.getbbox(s, anchor=anchor)
            w, h = max(1, right - left), max(1, bottom - top)
            grey = Image.new("L", (w, h), 0)
            ImageDraw.Draw(grey).text((-left, -top), s, fill=255, font=f, anchor=anchor)
            tile, footprint, *place = _text_tile(s, size, bold, anchor, BLACK, WHITE)
            assert place == [left, top, w, h], (s, size, anchor)
            coverage = grey.tobytes().translate(_COVERAGE)
            assert Image.new("P", (w, h))._new(tile).tobytes() == coverage.translate(_shade_lut(BLACK, WHITE))
            assert Image.new("1", (w, h))._new(footprint).tobytes() == Image.frombytes(
                "L", (w, h), bytes(255 if c else 0 for c in coverage)).convert("1").tobytes(), (s, size, anchor)
    line, size = "0: 4, 17, 23", 14
    canvas, by_word = Canvas(300, 40), Canvas(300, 40)
    canvas.text((5.3, 9.6), line, size=size, bold=bold)
    x = 5.3
    for word in line.split(" "):
        by_word.text((x, 9.6), word, size=size, bold=bold)
        x += text_width(word, size, bold) + text_width(" ", size, bold)
    assert canvas.image.tobytes() == by_word.image.tobytes()
    assert (np.asarray(canvas.image) != WHITE).sum() > 40  # the line was drawn at all


def _pillow_png(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, "PNG", compress_level=1, compress_type=3)  # zlib's RLE deflate, as mmnp asks of zlib-ng
    return buf.getvalue()


def test_encode_png_writes_pillows_bytes_with_zlib_ng(task):
    """The pictures are hashed into the releases: zlib-ng must deflate them byte for byte as
    Pillow's zlib does, on every task's pictures and on noise that needs several deflate blocks
    and IDAT chunks (a zlib-ng that changed its RLE stream would change every hash)."""
    from mmnp.render import encode_png

    for difficulty in ("easy", "hard"):
        canvas = task.generator.render(task.generate(difficulty, seed=3).data, DEFAULT_SIZE)
        png = encode_png(canvas.image)
        assert png == _pillow_png(canvas.image)
        assert np.array_equal(np.asarray(Image.open(io.BytesIO(png))), np.asarray(canvas.image))
    rng = np.random.default_rng(zlib.crc32(task.name.encode()))
    palette = [int(c) for c in rng.integers(0, 256, 768)]
    chunks = []
    for levels, width, height in ((256, 1500, 700), (3, 2100, 900), (2, 1, 1)):
        image = Image.frombytes("P", (width, height), rng.integers(0, levels, width * height, dtype=np.uint8).tobytes())
        image.putpalette(palette)
        png = encode_png(image)
        assert png == _pillow_png(image)
        chunks.append(png.count(b"IDAT"))
    assert chunks[0] > 10 and chunks[2] == 1  # 1 MB of noise spans many chunks; one pixel, one


def test_every_picture_stays_square_or_taller_and_at_the_requested_width(task):
    for size in (512, 1024):
        img = Image.open(io.BytesIO(task.render(task.generate("hard", seed=2), size)))
        assert img.width == size and img.height >= img.width * 0.5


def test_a_picture_is_drawn_whole_or_refused_naming_the_width_that_holds_it(task, tmp_path):
    """At a small --image-size a picture is drawn with nothing off the canvas, or refused in one line
    naming the width that holds it, which then draws it whole (a subset-sum target lost its last digits
    at 384 px, a meeting its attendees at 512); below MIN_IMAGE_SIZE the option is refused."""

    from typer.testing import CliRunner

    from mmnp.cli import app
    from mmnp.errors import UsageError
    from mmnp.render import MIN_IMAGE_SIZE

    for level in ("L1", "L10"):
        inst = task.generate(level, 0)
        for size in (MIN_IMAGE_SIZE, 384):
            if not task.generator.render(inst.data, size).clipped:
                assert Image.open(io.BytesIO(task.render(inst, size))).width == size
                continue
            with pytest.raises(UsageError) as refused:
                task.picture(inst, size)
            assert str(refused.value).startswith(f"{inst.id}: at --image-size {size} its picture would cut off")
            holds = int(re.search(r"needs --image-size (\d+) or more", str(refused.value)).group(1))
            assert holds > size and not task.generator.render(inst.data, holds).clipped
            assert task.generator.render(inst.data, holds - 32).clipped  # the first width that holds it
            png, info = task.picture(inst, holds)
            assert info["width"] == holds
    result = CliRunner().invoke(app, ["generate", "--tasks", task.name, "--difficulty", "easy", "--count", "1",
                                      "--no-optimal", "--image-size", str(MIN_IMAGE_SIZE - 1), "--out",
                                      str(tmp_path / "d")])
    assert result.exit_code == 2 and f"--image-size must be between {MIN_IMAGE_SIZE} and" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "d").exists()


def test_generate_refuses_a_size_that_cuts_a_picture_in_one_line(tmp_path):
    from typer.testing import CliRunner

    from mmnp.cli import app

    out = tmp_path / "d"
    result = CliRunner().invoke(app, ["generate", "--tasks", "subset_sum", "--difficulty", "L8", "--count", "1",
                                      "--no-optimal", "--image-size", "384", "--out", str(out)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "subset_sum-L8-0000: at --image-size 384 its picture would cut off 'Subset sum: target" in result.output
    assert not (out / "subset_sum").exists()  # no picture with a cut target reaches a dataset


def test_readme_states_the_v2_benchmark_hash_and_v1_is_unchanged():
    """v2 (picture version 2) is its own set: a different hash from v1, quoted in the README (the
    regeneration to the recorded hashes: tests/test_dataset.py)."""
    from mmnp.dataset import PRESETS

    readme = (Path(__file__).parent.parent / "README.md").read_text()
    section = readme[readme.index("### The canonical test set"):]
    v1, v2 = (PRESETS[name]["benchmark_hash"] for name in ("mm-np-bench-v1", "mm-np-bench-v2"))
    assert v1 in section and v2 in section and v1 != v2


def test_each_picture_says_what_kind_it_is():
    """The kind follows the render path taken: a graph drawn with its edges is a drawing, one too
    dense to draw carries its edge list; set cover's incidence table gives way to subset lists
    past its legible size; number tables and charts are what their tasks always draw."""
    from mmnp.render import PICTURE_KINDS

    def kind(task: str, data: dict) -> str:
        png, info = mmnp.get_task(task).picture({"instance": data})
        return info["kind"]

    path = {"n": 6, "edges": [[i, i + 1] for i in range(5)]}
    complete = {"n": 40, "edges": [[u, v] for u in range(40) for v in range(u + 1, 40)]}
    for task in ("vertex_cover", "max_clique", "graph_coloring", "longest_cycle"):
        data = mmnp.get_task(task).generate("easy", seed=0).data
        assert kind(task, {**data, **path}) == "drawing"
        assert kind(task, {**data, **complete}) == "edge_list"
        canvas, drawing = graph_canvas(complete["n"], complete["edges"], DEFAULT_SIZE, "t")
        assert drawing.panel is not None  # the list is really there
    small = {"universe": 6, "subsets": [[1, 2], [3, 4], [5, 6], [1, 6]]}
    large = {"universe": 80, "subsets": [[e, e % 80 + 1] for e in range(1, 81)]}
    assert kind("set_cover", small) == "table" and kind("set_cover", large) == "edge_list"
    for task, expected in (("knapsack", "table"), ("subset_sum", "table"), ("tsp", "chart"),
                           ("meeting_scheduling", "chart")):
        for difficulty in ("easy", "hard"):
            assert kind(task, mmnp.get_task(task).generate(difficulty, seed=1).data) == expected
    assert all(mmnp.get_task(t.name).picture(t.generate("medium", seed=2))[1]["kind"] in PICTURE_KINDS
               for t in mmnp.list_tasks())
