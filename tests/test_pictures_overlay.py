"""An answer drawn over a graph picture keeps the picture's layout guarantee: no line it draws passes
within a disc's radius of a vertex it does not touch (a line under a disc reads as ending there)."""

from __future__ import annotations

import numpy as np
import pytest

import mmnp
from mmnp.render import BLACK, WHITE, Canvas


def _lines_over(task: str, difficulty: str, seed: int, answer: list[int], monkeypatch) -> tuple[list, Canvas]:
    """Every polyline the answer's picture draws, and the picture."""
    drawn: list[np.ndarray] = []
    real = Canvas.line

    def line(self, points, *args, **kwargs):
        drawn.append(np.array(points, dtype=float))
        return real(self, points, *args, **kwargs)

    monkeypatch.setattr(Canvas, "line", line)
    t = mmnp.get_task(task)
    inst = t.generate(difficulty, seed)
    solution = t.verifier.parse("Answer: " + t.verifier.format(answer))
    _, violations = t.verifier.check(inst.data, solution)
    canvas = t.generator.render(inst.data, 768, solution, tuple(violations))
    return drawn, canvas


def _closest_pass(drawn: list[np.ndarray], canvas: Canvas) -> float:
    """The least distance, beyond the disc radius, from any drawn segment to a vertex its line does not
    start or end at (lines run from centre to centre)."""
    centres, radius = np.array(canvas.layout["centres"]), canvas.layout["radius"]
    closest = np.inf
    for points in drawn:
        ends = [int(np.argmin(np.hypot(*(centres - p).T))) for p in (points[0], points[-1])]
        others = np.delete(centres, ends, axis=0)
        for a, b in zip(points[:-1], points[1:]):
            t = np.clip((others - a) @ (b - a) / max((b - a) @ (b - a), 1e-9), 0.0, 1.0)
            closest = min(closest, np.hypot(*(others - (a + t[:, None] * (b - a))).T).min() - radius)
    return closest


@pytest.mark.parametrize("difficulty,seeds,arrangement", [
    ("easy", (0, 1, 3), "ring"),  # the edge list's discs on a ring: short chords would pass under discs
    ("hard", (0, 1), "rows"),  # in rows: nearly every straight line would
])
def test_a_bisections_cut_edges_never_pass_under_a_disc(difficulty, seeds, arrangement, monkeypatch):
    for seed in seeds:
        n = mmnp.get_task("min_bisection").generate(difficulty, seed).data["n"]
        half = sorted(int(v) for v in np.random.default_rng(seed).permutation(n)[: n // 2])
        drawn, canvas = _lines_over("min_bisection", difficulty, seed, half, monkeypatch)
        assert canvas.kind == "edge_list" and len(drawn) > 10
        heights = len(set(np.round(np.array(canvas.layout["centres"])[:, 1])))
        assert (heights > n / 4) == (arrangement == "ring")  # a ring has many heights, rows a few
        assert _closest_pass(drawn, canvas) > 0, (difficulty, seed)
        assert any(len(points) > 2 for points in drawn)  # some were routed, not straight


def test_a_cliques_missing_edges_bend_around_the_discs(monkeypatch):
    """A max_clique answer of every other vertex on a drawn graph: the pairs it needs but the graph
    lacks are drawn too, and straight they would cross discs."""
    n = mmnp.get_task("max_clique").generate("medium", 1).data["n"]
    drawn, canvas = _lines_over("max_clique", "medium", 1, list(range(0, n, 2)), monkeypatch)
    assert canvas.kind == "drawing"
    assert _closest_pass(drawn, canvas) > 0
    assert any(len(points) > 2 for points in drawn)


def _delta_e(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    """CIE76 colour difference of two sRGB colours (D65)."""
    def lab(rgb):
        c = np.array(rgb, dtype=float) / 255
        c = np.where(c > 0.04045, ((c + 0.055) / 1.055) ** 2.4, c / 12.92)
        xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ c
        f = np.cbrt(xyz / [0.95047, 1.0, 1.08883])
        return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])

    return float(np.linalg.norm(lab(a) - lab(b)))


def test_the_class_colours_told_apart_are_those_at_least_10_delta_e_apart():
    from mmnp.render import CLASS_COLOURS, DISTINCT_CLASSES

    first = CLASS_COLOURS[:DISTINCT_CLASSES]
    assert min(_delta_e(a, b) for i, a in enumerate(first) for b in first[i + 1:]) >= 10
    assert min(_delta_e(CLASS_COLOURS[DISTINCT_CLASSES], c) for c in first) < 10


def test_past_the_distinct_colours_each_disc_names_its_colour(monkeypatch):
    """A 32-colour answer (classes 14-32 repeat or nearly repeat fills): each disc shows its vertex
    and, under it, its colour, both at least MIN_FONT px and inside the disc."""
    from mmnp.kits.graphs import graph_picture
    from mmnp.render import MIN_FONT, class_colour

    drawn: list[tuple[str, tuple, int]] = []
    real = Canvas.text

    def text(self, xy, s, size=14, colour=BLACK, anchor="la", bold=False, bg=WHITE):
        drawn.append((s, self.text_box(xy, s, size, anchor, bold), size))
        return real(self, xy, s, size, colour, anchor, bold, bg)

    monkeypatch.setattr(Canvas, "text", text)
    data = {"n": 32, "edges": [[u, v] for u in range(32) for v in range(u + 1, 32) if (u * v) % 3 == 0]}
    canvas = graph_picture(data, 768, "Graph colouring", node_fill=[class_colour(v) for v in range(32)],
                           notes=[str(v + 1) for v in range(32)])
    assert class_colour(0) == class_colour(18)  # without the numbers, vertices 0 and 18 look alike
    centres, radius = np.array(canvas.layout["centres"]), canvas.layout["radius"]
    for v, (x, y) in enumerate(centres):
        inside = [(s, size) for s, box, size in drawn
                  if max(np.hypot(bx - x, by - y) for bx in box[::2] for by in box[1::2]) <= radius]
        assert (str(v), True) in {(s, size >= MIN_FONT) for s, size in inside}
        assert (str(v + 1), True) in {(s, size >= MIN_FONT) for s, size in inside}, v


def test_a_colouring_answer_with_more_colours_than_the_eye_tells_apart_names_them(monkeypatch):
    """`mmnp show` of a feasible 32-colour answer drew adjacent vertices 0 and 18 in one fill with
    nothing else to tell them apart; past DISTINCT_CLASSES each disc carries its colour's number
    (drawn inside it: test_past_the_distinct_colours_each_disc_names_its_colour), and an answer
    within them is drawn as before."""
    from mmnp.render import DISTINCT_CLASSES

    task = mmnp.get_task("graph_coloring")
    inst = task.generate("hard", 0)
    real, notes = task.generator.graph_picture, []
    monkeypatch.setattr(task.generator, "graph_picture", lambda *a, **kw: notes.append(kw["notes"]) or real(*a, **kw))
    n = inst.data["n"]
    for colours in (DISTINCT_CLASSES + 1, DISTINCT_CLASSES):
        task.generator.render(inst.data, 768, [v % colours + 1 for v in range(n)])
    assert notes == [[str(v % (DISTINCT_CLASSES + 1) + 1) for v in range(n)], None]
