"""Fast, deterministic PNG drawing shared by every task's renderer.

Images are palette ("P" mode) canvases encoded with zlib's RLE strategy: a third of the
bytes of RGB and several times faster to encode, which is most of an image's cost. Text
uses DejaVu Sans (shipped with matplotlib), so the same instance gives the same bytes on
any machine with the same Pillow.
"""

from __future__ import annotations

import importlib.util
import io
import math
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Sequence

from PIL import Image, ImageDraw, ImageFont

DEFAULT_SIZE = 768

# Palette indices. Fixed, so drawings never depend on colour allocation order.
WHITE, BLACK, GREY, LIGHT_GREY, NODE, RED, GREEN, BLUE, ORANGE, HIGHLIGHT, FAINT_RED, DARK_GREY = range(12)
_BASE = [
    (255, 255, 255), (0, 0, 0), (140, 140, 140), (225, 225, 225), (221, 234, 252), (214, 39, 40),
    (44, 160, 44), (31, 119, 180), (255, 127, 14), (255, 236, 150), (253, 215, 215), (80, 80, 80),
]
# Distinct fills for colour classes (graph colouring answers, bisection halves, schedules).
CLASS_COLOURS = [
    (102, 194, 165), (252, 141, 98), (141, 160, 203), (231, 138, 195), (166, 216, 84), (255, 217, 47),
    (229, 196, 148), (179, 179, 179), (141, 211, 199), (190, 186, 218), (251, 128, 114), (128, 177, 211),
    (253, 180, 98), (179, 222, 105), (252, 205, 229), (188, 128, 189), (204, 235, 197), (255, 237, 111),
]
CLASS_BASE = len(_BASE)
_PALETTE = [c for rgb in _BASE + CLASS_COLOURS for c in rgb]
_PALETTE += [0] * (768 - len(_PALETTE))


def class_colour(k: int) -> int:
    """Palette index of the k-th class colour (cycling when there are more classes)."""
    return CLASS_BASE + k % len(CLASS_COLOURS)


def _font_path() -> str | None:
    spec = importlib.util.find_spec("matplotlib")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "mpl-data" / "fonts" / "ttf" / "DejaVuSans.ttf"
    return str(path) if path.exists() else None


@lru_cache(maxsize=None)
def font(size: int, bold: bool = False) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    path = _font_path()
    if path is None:
        return ImageFont.load_default(size)
    if bold:
        bold_path = path.replace("DejaVuSans.ttf", "DejaVuSans-Bold.ttf")
        if Path(bold_path).exists():
            path = bold_path
    return ImageFont.truetype(path, size)


@lru_cache(maxsize=50_000)
def _text_mask(s: str, size: int, bold: bool, anchor: str) -> tuple[Image.Image, int, int]:
    """A string drawn once as a 1-bit mask with its offset from the anchor point: labels
    repeat across images (ids, small numbers), and pasting a mask is far cheaper than
    rasterising glyphs again."""
    f = font(size, bold)
    left, top, right, bottom = f.getbbox(s, anchor=anchor)
    mask = Image.new("1", (max(1, right - left), max(1, bottom - top)), 0)
    ImageDraw.Draw(mask).text((-left, -top), s, fill=1, font=f, anchor=anchor)
    return mask, left, top


@lru_cache(maxsize=50_000)
def _text_width(s: str, size: int, bold: bool) -> float:
    return font(size, bold).getlength(s)


class Canvas:
    """A palette image with the few drawing calls the renderers need."""

    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height
        self.image = Image.new("P", (width, height), WHITE)
        self.image.putpalette(_PALETTE)
        self.draw = ImageDraw.Draw(self.image)

    def text(self, xy: tuple[float, float], s: str, size: int = 14, colour: int = BLACK,
             anchor: str = "la", bold: bool = False) -> None:
        mask, left, top = _text_mask(s, size, bold, anchor)
        self.image.paste(colour, (round(xy[0] + left), round(xy[1] + top)), mask)

    def text_width(self, s: str, size: int, bold: bool = False) -> float:
        return _text_width(s, size, bold)

    def line(self, points: Sequence[tuple[float, float]], colour: int = BLACK, width: int = 1) -> None:
        self.draw.line(list(points), fill=colour, width=width)

    def rect(self, box: tuple[float, float, float, float], fill: int | None = None,
             outline: int | None = None, width: int = 1) -> None:
        self.draw.rectangle(box, fill=fill, outline=outline, width=width)

    def circle(self, centre: tuple[float, float], r: float, fill: int | None = None,
               outline: int | None = BLACK, width: int = 1) -> None:
        x, y = centre
        self.draw.ellipse((x - r, y - r, x + r, y + r), fill=fill, outline=outline, width=width)

    def arrow(self, a: tuple[float, float], b: tuple[float, float], colour: int, width: int = 2,
              head: float = 9.0, shorten: float = 0.0) -> None:
        """A line from a to b with a head at b, both ends pulled in by `shorten` pixels."""
        (x1, y1), (x2, y2) = a, b
        length = math.hypot(x2 - x1, y2 - y1)
        if length <= 2 * shorten + 1:
            return
        ux, uy = (x2 - x1) / length, (y2 - y1) / length
        x1, y1, x2, y2 = x1 + ux * shorten, y1 + uy * shorten, x2 - ux * shorten, y2 - uy * shorten
        self.draw.line([(x1, y1), (x2, y2)], fill=colour, width=width)
        left = (x2 - ux * head - uy * head * 0.5, y2 - uy * head + ux * head * 0.5)
        right = (x2 - ux * head + uy * head * 0.5, y2 - uy * head - ux * head * 0.5)
        self.draw.polygon([(x2, y2), left, right], fill=colour)

    def png(self) -> bytes:
        buf = io.BytesIO()
        self.image.save(buf, "PNG", compress_level=1, compress_type=3)  # zlib Z_RLE: fast, small
        return buf.getvalue()


def circle_layout(n: int, cx: float, cy: float, radius: float) -> list[tuple[float, float]]:
    """Vertices evenly on a circle, vertex 0 at the top, clockwise: never two nodes overlap."""
    return [(cx + radius * math.sin(2 * math.pi * i / n), cy - radius * math.cos(2 * math.pi * i / n)) for i in range(n)]


def node_radius(n: int, radius: float) -> float:
    return max(9.0, min(20.0, math.pi * radius / max(n, 1) * 0.8))


def draw_graph(
    canvas: Canvas,
    n: int,
    edges: Iterable[Sequence[int]],
    box: tuple[float, float, float, float],
    *,
    node_fill: Sequence[int] | None = None,
    edge_colour: dict[tuple[int, int], int] | None = None,
    ringed: Iterable[int] = (),
    bold_edges: Iterable[tuple[int, int]] = (),
) -> list[tuple[float, float]]:
    """Draw an undirected graph with labelled nodes in `box`; returns node centres.

    `edge_colour` maps (min, max) pairs to palette indices; `bold_edges` are drawn thick
    (used to mark violations), `ringed` nodes get a red ring.
    """
    x0, y0, x1, y1 = box
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    outer = min(x1 - x0, y1 - y0) / 2
    r_node = node_radius(n, outer - 22)
    pos = circle_layout(n, cx, cy, outer - r_node - 4)
    edge_colour = edge_colour or {}
    bold = {(min(u, v), max(u, v)) for u, v in bold_edges}
    for u, v in edges:
        key = (u, v) if u < v else (v, u)
        if key not in bold:
            canvas.line((pos[u], pos[v]), edge_colour.get(key, GREY), 1)
    for u, v in bold:
        canvas.line((pos[u], pos[v]), edge_colour.get((u, v), RED), 4)
    ring = set(ringed)
    size = max(10, int(r_node * 0.95))
    for i, p in enumerate(pos):
        fill = node_fill[i] if node_fill is not None else NODE
        if i in ring:
            canvas.circle(p, r_node + 4, fill=None, outline=RED, width=3)
        canvas.circle(p, r_node, fill=fill, outline=BLACK, width=2)
        canvas.text(p, str(i), size=size, anchor="mm")
    return pos


def draw_table(
    canvas: Canvas,
    box: tuple[float, float, float, float],
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    row_fill: dict[int, int] | None = None,
    max_font: int = 18,
) -> None:
    """A table filling `box`, split into side-by-side column groups when rows do not fit.

    The font shrinks to fit but never below 11 px, so the numbers stay legible.
    """
    x0, y0, x1, y1 = box
    row_fill = row_fill or {}
    ncols = len(header)
    cells = [list(header)] + [list(r) for r in rows]
    for font_size in range(max_font, 10, -1):
        row_h = int(font_size * 1.55)
        per_group = max(1, int((y1 - y0) // row_h) - 1)
        groups = math.ceil(len(rows) / per_group) if rows else 1
        col_w = [max(canvas.text_width(c[j], font_size, bold=(k == 0)) for k, c in enumerate(cells)) + font_size
                 for j in range(ncols)]
        group_w = sum(col_w) + font_size
        if group_w * groups <= (x1 - x0) or font_size == 11:
            break
    for g in range(groups):
        gx = x0 + g * group_w
        chunk = range(g * per_group, min(len(rows), (g + 1) * per_group))
        y = y0
        canvas.rect((gx, y, gx + sum(col_w), y + row_h), fill=LIGHT_GREY)
        _table_row(canvas, gx, y, header, col_w, row_h, font_size, bold=True)
        for i in chunk:
            y += row_h
            if i in row_fill:
                canvas.rect((gx, y, gx + sum(col_w), y + row_h), fill=row_fill[i])
            _table_row(canvas, gx, y, rows[i], col_w, row_h, font_size)
            canvas.line(((gx, y), (gx + sum(col_w), y)), LIGHT_GREY)
        canvas.rect((gx, y0, gx + sum(col_w), y + row_h), outline=DARK_GREY)


def _table_row(canvas: Canvas, x: float, y: float, cells: Sequence[str], col_w: Sequence[float],
               row_h: int, size: int, bold: bool = False) -> None:
    for cell, w in zip(cells, col_w):
        canvas.text((x + w - size / 2, y + row_h / 2), cell, size=size, anchor="rm", bold=bold)
        x += w
