"""Fast, deterministic PNG drawing shared by every task's renderer.

Images are palette ("P" mode) canvases encoded with zlib's RLE strategy: a third of the
bytes of RGB and several times faster to encode. The deflate runs in zlib-ng
(`encode_png`): byte for byte what Pillow's zlib writes, in a third of the time. Text uses
DejaVu Sans (shipped with matplotlib), so the same instance gives the same bytes on any
machine with the same Pillow.
"""

from __future__ import annotations

import importlib.util
import math
import struct
import threading
import zlib
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
from PIL import Image, ImageDraw, ImageFont
from zlib_ng import zlib_ng

from mmnp.errors import UsageError
from mmnp.layout import Geometry, circle, place, segment_distances

DEFAULT_SIZE = 768
# What a picture asks of a reader, recorded as `picture["kind"]` so image scores can be split by it:
# `drawing` a node-link diagram (edges seen as lines), `edge_list` the structure written out as rows of
# text ("u: v, w"), `table` numbers (or an incidence grid) in rows and columns, `chart` a plot or
# timeline with its numbers in a table beside it.
PICTURE_KINDS = ("drawing", "edge_list", "table", "chart")

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
# the first 13 class colours are at least 10 apart in CIE76 delta E (the 14th is 7.7 from the 5th, the 19th
# is the 1st again): an answer with more classes than this names them in text too. The colours stay as they
# are: the palette is in every PNG, so a new colour would change every dataset picture's bytes
DISTINCT_CLASSES = 13
_COLOURS = _BASE + CLASS_COLOURS
# Anti-aliased text on a palette canvas: glyph edges take one of AA_LEVELS - 1 blends of
# the text colour with the colour under the text, each a fixed palette entry.
AA_LEVELS = 4
_RAMP_TEXT = (BLACK, DARK_GREY, WHITE)
_RAMP_BG = {BLACK: range(len(_COLOURS)), DARK_GREY: range(len(_COLOURS)), WHITE: (GREEN, RED, BLUE, BLACK, DARK_GREY)}
_RAMP: dict[tuple[int, int], int] = {}  # (text, background) -> palette index of the first blend
_palette_rgb = list(_COLOURS)
for _fg in _RAMP_TEXT:
    for _bg in _RAMP_BG[_fg]:
        _RAMP[_fg, _bg] = len(_palette_rgb)
        for _k in range(1, AA_LEVELS):
            _palette_rgb.append(tuple(round(_COLOURS[_bg][c] + (_COLOURS[_fg][c] - _COLOURS[_bg][c]) * _k / AA_LEVELS)
                                      for c in range(3)))
assert len(_palette_rgb) <= 256
_PALETTE = [c for rgb in _palette_rgb for c in rgb]
_PALETTE += [0] * (768 - len(_PALETTE))
MIN_STROKE = 2  # px: no line, outline or glyph stem thinner, so a downscaled picture keeps them
MIN_FONT = 14  # px at the default size
MIN_IMAGE_SIZE = 160  # px: below it some pictures cannot hold their text at MIN_FONT (a schedule's name column)
MAX_IMAGE_SIZE = 8192
# a client's downscale to a 512 px long side must leave an edge list at least this size (px)
LIST_FONT_AT_512 = 10
MAX_ASPECT = 1.5  # a picture's height over its width at most (graphs with an edge-list panel), from the
# default size up; smaller pictures keep MIN_FONT and grow taller instead


def class_colour(k: int) -> int:
    """Palette index of the k-th class colour (cycling when there are more classes)."""
    return CLASS_BASE + k % len(CLASS_COLOURS)


def _font_path() -> str | None:
    spec = importlib.util.find_spec("matplotlib")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "mpl-data" / "fonts" / "ttf" / "DejaVuSans.ttf"
    return str(path) if path.exists() else None



def check_image_size(size: int, option: str = "--image-size") -> int:
    """`size` when every task's picture can be drawn at it, else a UsageError naming `option`."""
    if not MIN_IMAGE_SIZE <= size <= MAX_IMAGE_SIZE:
        raise UsageError(f"{option} must be between {MIN_IMAGE_SIZE} and {MAX_IMAGE_SIZE} pixels (smaller pictures "
                         f"cannot hold their text), got {size}")
    return size

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


# byte maps for bytes.translate (Image.point rounds its table in Python on every call)
_COVERAGE = bytes(min(AA_LEVELS, (v * AA_LEVELS + 127) // 255) for v in range(256))  # grey -> coverage level
_FOOTPRINT = bytes([0] + [255] * 255)  # any coverage -> pasted


@lru_cache(maxsize=None)
def _shade_lut(colour: int, bg: int) -> bytes:
    """Coverage level -> palette index: `bg`, the blends of `colour` over it, `colour`
    (a solid colour from half coverage where no blend is in the palette)."""
    ramp = _RAMP.get((colour, bg))
    if ramp is None:
        lut = [bg] + [bg if k < AA_LEVELS / 2 else colour for k in range(1, AA_LEVELS)] + [colour]
    else:
        lut = [bg] + [ramp + k - 1 for k in range(1, AA_LEVELS)] + [colour]
    return bytes(lut + [colour] * (256 - len(lut)))


@lru_cache(maxsize=50_000)
def _text_tile(s: str, size: int, bold: bool, anchor: str, colour: int, bg: int) -> tuple:
    """A string drawn once, anti-aliased, as a palette tile and its 1-bit footprint (their
    pixel cores, pasted directly), its offset from the anchor point and its size: labels
    repeat across images (ids, small numbers), and pasting a tile is far cheaper than
    rasterising glyphs again."""
    f = font(size, bold)
    if isinstance(f, ImageFont.FreeTypeFont):
        # the glyph mask as ImageDraw.text would lay it into a blank tile at (-left, -top),
        # without laying the text out twice (getbbox, then text): half the cost of a new tile
        mask, (left, top) = f.getmask2(s, "L", anchor=anchor)
        w, h = mask.size
        grey = Image.new("L", (max(1, w), max(1, h)), 0)
        if w and h:
            grey.im.paste(mask, (0, 0, w, h))
        w, h = grey.size
    else:
        left, top, right, bottom = f.getbbox(s, anchor=anchor)
        w, h = max(1, right - left), max(1, bottom - top)
        grey = Image.new("L", (w, h), 0)
        ImageDraw.Draw(grey).text((-left, -top), s, fill=255, font=f, anchor=anchor)
    level = grey.tobytes().translate(_COVERAGE)
    tile = Image.frombytes("P", (w, h), level.translate(_shade_lut(colour, bg)))
    footprint = Image.frombytes("L", (w, h), level.translate(_FOOTPRINT)).convert("1")
    return tile.im, footprint.im, left, top, w, h


@lru_cache(maxsize=50_000)
def _text_width(s: str, size: int, bold: bool) -> float:
    return font(size, bold).getlength(s)


_WORDS: dict[tuple, dict[str, tuple]] = {}  # (size, bold, anchor, colour, bg) -> word -> tile and advance
_WORDS_MAX = 50_000  # words kept per style (a style's table starts afresh beyond: no unbounded growth)


def _words(size: int, bold: bool, anchor: str, colour: int, bg: int) -> dict[str, tuple]:
    """The word tiles of one text style: an edge-list line is a dozen words, and one dict
    lookup a word costs a quarter of two cached calls with their argument tuples (0.06 vs
    0.25 us)."""
    key = (size, bold, anchor, colour, bg)
    words = _WORDS.get(key)
    if words is None:
        words = _WORDS[key] = {}
    return words


def _word(words: dict[str, tuple], word: str, size: int, bold: bool, anchor: str, colour: int, bg: int) -> tuple:
    """`word`'s tile, footprint, offset, size and advance, made and kept in `words`."""
    if len(words) >= _WORDS_MAX:
        words.clear()
    placed = words[word] = (*_text_tile(word, size, bold, anchor, colour, bg), _text_width(word, size, bold))
    return placed


def text_width(s: str, size: int, bold: bool = False) -> float:
    """The advance width of `s` in pixels (what laying out a canvas before creating it needs)."""
    return _text_width(s, size, bold)


class Canvas:
    """A palette image with the few drawing calls the renderers need."""

    def __init__(self, width: int, height: int, kind: str | None = None) -> None:
        self.width, self.height = width, height
        self.kind = kind  # one of PICTURE_KINDS (None: an answer overlay, or a plugin that does not say)
        self.image = Image.new("P", (width, height), WHITE)
        self.image.putpalette(_PALETTE)
        self.draw = ImageDraw.Draw(self.image)
        self._pixels = self.image.im  # pasted into directly: Image.paste's checks cost more than the paste
        self.layout: dict | None = None  # where a graph picture put its vertices (see GraphDrawing)
        # what the legibility checks read back: the smallest font drawn and the strings drawn
        # (partly) off the canvas, which a picture must never have
        self.smallest_font: int | None = None
        self.clipped: list[str] = []

    def text(self, xy: tuple[float, float], s: str, size: int = 14, colour: int = BLACK,
             anchor: str = "la", bold: bool = False, bg: int = WHITE) -> None:
        """Anti-aliased text; `bg` is the fill it is drawn on (its edges blend into it).

        Left-anchored text with spaces is laid word by word from cached word tiles: lines
        that are unique to one picture (an edge list, a table row) are then made of tiles
        every picture shares, which is what keeps rendering fast."""
        words = _words(size, bold, anchor, colour, bg)
        if anchor[0] == "l" and " " in s:
            x, y, space = xy[0], xy[1], _text_width(" ", size, bold)
            for word in s.split(" "):
                if word:
                    placed = words.get(word) or _word(words, word, size, bold, anchor, colour, bg)
                    self._paste(x, y, word, placed)
                    x += placed[6]
                x += space
        else:
            self._paste(xy[0], xy[1], s, words.get(s) or _word(words, s, size, bold, anchor, colour, bg))
        self.smallest_font = size if self.smallest_font is None else min(self.smallest_font, size)

    def _paste(self, x: float, y: float, s: str, placed: tuple) -> None:
        """One string's tile (`_word`'s entry) at (x, y), noted when it falls off the canvas."""
        tile, footprint, left, top, w, h, _ = placed
        x, y = round(x + left), round(y + top)
        self._pixels.paste(tile, (x, y, x + w, y + h), footprint)
        if x < 0 or y < 0 or x + w > self.width or y + h > self.height:
            self.clipped.append(s)

    def text_width(self, s: str, size: int, bold: bool = False) -> float:
        return _text_width(s, size, bold)

    def text_box(self, xy: tuple[float, float], s: str, size: int, anchor: str = "la",
                 bold: bool = False) -> tuple[float, float, float, float]:
        """The box the text would cover, drawn at xy (from the cached tile: labels repeat)."""
        left, top, w, h = _text_tile(s, size, bold, anchor, BLACK, WHITE)[2:]
        return (xy[0] + left, xy[1] + top, xy[0] + left + w, xy[1] + top + h)

    def line(self, points: Sequence[tuple[float, float]], colour: int = BLACK, width: int = MIN_STROKE,
             joint: str | None = None) -> None:
        self.draw.line(list(points), fill=colour, width=max(MIN_STROKE, width), joint=joint)

    def rect(self, box: tuple[float, float, float, float], fill: int | None = None,
             outline: int | None = None, width: int = MIN_STROKE) -> None:
        self.draw.rectangle(box, fill=fill, outline=outline, width=max(MIN_STROKE, width))

    def polygon(self, points: Sequence[tuple[float, float]], fill: int) -> None:
        self.draw.polygon(list(points), fill=fill)

    def circle(self, centre: tuple[float, float], r: float, fill: int | None = None,
               outline: int | None = BLACK, width: int = MIN_STROKE) -> None:
        x, y = centre
        self.draw.ellipse((x - r, y - r, x + r, y + r), fill=fill, outline=outline, width=max(MIN_STROKE, width))

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
        return encode_png(self.image)


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_IDAT_BLOCK = 65536  # Pillow's ImageFile.MAXBLOCK: the size of each IDAT chunk it writes but the last


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(data, zlib.crc32(kind)))


_buffers = threading.local()


def _row_buffer(width: int, height: int) -> np.ndarray:
    """A (height, width + 1) array whose first column is PNG's filter byte 0 (none) on each row:
    the first rows of one kept per thread and width (a fresh 600 KB array costs its page
    faults, half a deflate)."""
    rows = getattr(_buffers, "rows", None)
    if rows is None or rows.shape[1] != width + 1 or rows.shape[0] < height:
        rows = _buffers.rows = np.zeros((max(height, 2 * width), width + 1), np.uint8)
    return rows[:height]


def encode_png(image: Image.Image) -> bytes:
    """The bytes of `image.save(f, "PNG", compress_level=1, compress_type=3)` for a palette
    image of 256 colours (every Canvas), with the deflate done by zlib-ng: its RLE strategy
    emits the same stream as zlib's in a third of the time (Pillow's save was ~2 ms of a
    ~7 ms graph picture, this is ~0.9 ms; tests/test_pictures.py checks the bytes against
    Pillow's)."""
    width, height = image.size
    palette = image.getpalette()
    if image.mode != "P" or palette is None or len(palette) != 768:
        raise ValueError(f"encode_png writes 8-bit palette images of 256 colours, not mode {image.mode}")
    rows = _row_buffer(width, height)
    rows[:, 1:] = np.frombuffer(image.tobytes(), np.uint8).reshape(height, width)
    deflate = zlib_ng.compressobj(1, zlib_ng.DEFLATED, 15, 9, zlib_ng.Z_RLE)
    data = deflate.compress(rows) + deflate.flush()
    block = max(_IDAT_BLOCK, width * 4)
    return b"".join([_PNG_SIGNATURE, _png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 3, 0, 0, 0)),
                     _png_chunk(b"PLTE", bytes(palette)),
                     *(_png_chunk(b"IDAT", data[at:at + block]) for at in range(0, len(data), block)),
                     _png_chunk(b"IEND", b"")])


class GraphDrawing:
    """Where a graph picture put its vertices: what the record stores so anyone can
    re-check the drawing's invariants (`mmnp.layout.faults`). `grid` (x0, y0, cell, per row)
    when the discs stand in rows, whose gaps an answer's edges are routed along."""

    def __init__(self, centres: np.ndarray, geometry: Geometry, unambiguous: bool, panel: tuple | None,
                 grid: tuple[float, float, float, int] | None = None) -> None:
        self.centres, self.geometry, self.unambiguous, self.panel = centres, geometry, unambiguous, panel
        self.grid = grid

    def to_record(self) -> dict:
        x0, y0, x1, y1 = self.geometry.box
        return {"centres": [[float(x), float(y)] for x, y in self.centres], "radius": self.geometry.radius,
                "margin": self.geometry.margin, "box": [x0, y0, x1, y1], "edges_unambiguous": self.unambiguous,
                "adjacency_panel": self.panel is not None}


def graph_geometry(n: int, box: tuple[float, float, float, float], scale: float) -> Geometry:
    """Disc radius and margin for n vertices: big enough for a 2-digit label of at least
    MIN_FONT px (bold), bigger for small graphs."""
    x0, y0, x1, y1 = box
    roomy = min(x1 - x0, y1 - y0) * 0.9 / max(n, 1) ** 0.5 / 3.2
    radius = round(max(15 * scale, min(24 * scale, roomy)), 2)
    return Geometry(radius=radius, margin=round(max(4.0, 4 * scale), 2), box=box)


def label_size(radius: float, digits: int = 2) -> int:
    """Font size of the vertex labels: a 2-digit bold label fits inside the disc (a 3-digit
    one at a smaller size, never under MIN_FONT)."""
    return max(MIN_FONT, int(radius * 1.05 * (2 / digits if digits > 2 else 1)))


def adjacency_rows(n: int, edges: Iterable[Sequence[int]]) -> list[str]:
    """Each edge once, under its smaller endpoint: "3: 7, 12, 20" is the edges (3, 7), (3, 12), (3, 20)."""
    larger: list[list[int]] = [[] for _ in range(n)]
    for u, v in edges:
        a, b = (u, v) if u < v else (v, u)
        larger[a].append(b)
    return [f"{u}: " + ", ".join(str(v) for v in sorted(vs)) for u, vs in enumerate(larger) if vs]


def _panel_layout(canvas_w: float, rows: list[str], size: int, pad: float) -> tuple[int, float, list[list[str]]]:
    """Columns of rows (long rows wrapped, continuation lines indented, a row never split
    across columns) with the fewest lines in the tallest column (fewer columns on a tie)."""
    best = None
    space = _text_width(" ", size, False)
    indent = 4 * space
    tokens = [row.split(" ") for row in rows]
    widths = [[_text_width(tok, size, False) for tok in toks] for toks in tokens]
    full = []  # each row's width on one line, summed word by word as `_wrapped` does
    for ws in widths:
        width = ws[0]
        for w in ws[1:]:
            width = width + space + w
        full.append(width)
    # most columns first: a count whose bound (every row at least one line) is above the best
    # target so far cannot win, and ties go to fewer columns, so such counts are skipped
    for ncols in range(5, 0, -1):
        if best is not None and -(-len(rows) // ncols) > best[0]:
            continue
        col_w = (canvas_w - 2 * pad) / ncols - size
        blocks = _wrapped(rows, tokens, widths, full, col_w, space, indent)
        if blocks is None:
            continue
        # no column below its longest row's lines (a row is never split): with a shorter target
        # that row's column would run past the height the panel is given
        target = max(math.ceil(sum(map(len, blocks)) / ncols), max(map(len, blocks), default=0))
        while True:
            cols: list[list[str]] = [[]]
            for block in blocks:
                if cols[-1] and len(cols[-1]) + len(block) > target:
                    cols.append([])
                cols[-1].extend(block)
            if len(cols) <= ncols:
                break
            target += 1
        if best is None or target <= best[0]:
            best = (target, col_w + size, cols)
    return best


def _wrapped(rows: list[str], tokens: list[list[str]], widths: list[list[float]], full: list[float],
             col_w: float, space: float, indent: float) -> list[list[str]] | None:
    """Each row's lines within `col_w` (widths add up word by word, as `Canvas.text` lays
    them; continuation lines indented; a row's head never stands alone), or None when a
    word does not fit. A row whose `full` width fits is one line as it is (its partial
    widths only grow towards the full one, so the word loop would not break it)."""
    blocks = []
    for row, toks, ws, whole in zip(rows, tokens, widths, full):
        if whole <= col_w:
            blocks.append([row])
            continue
        block, start, width = [], 0, ws[0]
        for k in range(1, len(toks)):
            grown = width + space + ws[k]
            if grown > col_w and (start > 0 or k > 1):
                if width > col_w:
                    return None
                block.append(("    " if start else "") + " ".join(toks[start:k]))
                start, width = k, indent + ws[k]
            else:
                width = grown
        if width > col_w:
            return None
        block.append(("    " if start else "") + " ".join(toks[start:]))
        blocks.append(block)
    return blocks


def _disc_arrangements(n: int, geo: Geometry, size: int,
                       top: float) -> list[tuple[np.ndarray, Geometry, tuple[float, float, float, int] | None]]:
    """Where a panel picture's discs can go, in order of preference: on a ring (when one
    fits in the width; an answer's marked edges read best as its chords), and in rows in
    id order (more compact: a ring's middle is empty), with the rows' grid."""
    pitch = 2 * geo.radius + geo.margin + 2
    x0, _, x1, _ = geo.box
    out = []
    ring = n * pitch / (2 * math.pi) + geo.radius + 2
    if 2 * ring <= size - top - x0:
        box = (size / 2 - ring, top, size / 2 + ring, top + 2 * ring)
        ring_geo = Geometry(radius=geo.radius, margin=geo.margin, box=box)
        out.append((np.round(circle(n, ring_geo), 2), ring_geo, None))
    per_row = int((x1 - x0) // pitch)
    cell = (x1 - x0) / per_row
    box = (x0, top, x1, top + math.ceil(n / per_row) * cell)
    centres = [(x0 + cell * (i % per_row + 0.5), top + cell * (i // per_row + 0.5)) for i in range(n)]
    out.append((np.round(centres, 2), Geometry(radius=geo.radius, margin=geo.margin, box=box),
                (x0, top, cell, per_row)))
    return out


def graph_canvas(n: int, edges: list[list[int]], size: int, title: str) -> tuple[Canvas, GraphDrawing]:
    """The canvas and vertex placement of a graph picture (edges not drawn yet).

    A layout meeting every invariant in `mmnp.layout` gets a square canvas; a graph too
    dense for one gets its labelled vertices on a ring or in rows, without edge lines, and
    the edge list under them (the panel is then what determines the instance)."""
    scale = size / DEFAULT_SIZE
    top = round(38 * scale)
    box = (8 * scale, top, size - 8 * scale, size - 8 * scale)
    geo = graph_geometry(n, box, scale)
    pos = place(n, edges, geo)
    ok, panel, grid = pos is not None, None, None
    if not ok:
        # 3-digit labels (past 100 vertices, which only the rows below hold) get a wider disc
        geo = Geometry(radius=round((20 if n <= 100 else 22) * scale, 2), margin=geo.margin, box=box)
        rows = adjacency_rows(n, edges)
        # the first arrangement that keeps the list legible at a 512 px long side, else the
        # one that keeps it largest relative to the long side
        best = None
        for pos_, geo_, grid_ in _disc_arrangements(n, geo, size, top):
            panel_, height_ = text_panel(size, rows, geo_.box[3] + 12 * scale)
            at_512 = panel_[1] * 512 / max(size, height_)
            if best is None or at_512 > best[0]:
                best = (at_512, pos_, geo_, grid_, panel_, height_)
            if at_512 >= LIST_FONT_AT_512:
                break
        _, pos, geo, grid, panel, height = best
    else:
        height = size
    canvas = Canvas(size, height, kind="drawing" if ok else "edge_list")
    canvas.text((size / 2, 8 * scale), title, size=max(MIN_FONT + 2, round(18 * scale)), anchor="mt", bold=True)
    return canvas, GraphDrawing(pos, geo, ok, panel, grid)


def draw_graph(
    canvas: Canvas,
    drawing: GraphDrawing,
    edges: Iterable[Sequence[int]],
    *,
    node_fill: Sequence[int] | None = None,
    edge_colour: dict[tuple[int, int], int] | None = None,
    ringed: Iterable[int] = (),
    bold_edges: Iterable[tuple[int, int]] = (),
    notes: Sequence[str] | None = None,
) -> None:
    """Draw an undirected graph at `drawing`'s vertex centres, labels inside opaque discs,
    and its adjacency panel when it has one.

    `edge_colour` maps (min, max) pairs to palette indices; `bold_edges` are drawn thick
    (used to mark violations), `ringed` nodes get a red ring; `notes` are a second line in
    each disc, under its label (an answer's colour, where the fills alone repeat).
    """
    pos = [tuple(p) for p in drawing.centres]
    r_node = drawing.geometry.radius
    scale = canvas.width / DEFAULT_SIZE
    edge_colour = edge_colour or {}
    marked = {(min(u, v), max(u, v)) for u, v in bold_edges}
    bold = sorted(marked)
    thin = max(MIN_STROKE, round(2 * scale))
    # with the edge-list panel only an answer's marked edges are drawn: lines through
    # a crowded ring would suggest edges that are not there
    plain = [key for key in ((u, v) if u < v else (v, u) for u, v in edges)
             if key not in marked and (drawing.panel is None or key in edge_colour)]
    paths = edge_paths(drawing, plain + bold)
    for key, path in zip(plain, paths):
        canvas.line(path, edge_colour.get(key, GREY), thin, joint="curve")
    for key, path in zip(bold, paths[len(plain):]):
        canvas.line(path, edge_colour.get(key, RED), max(4, round(4 * scale)), joint="curve")
    ring = set(ringed)
    for i, p in enumerate(pos):
        fill = node_fill[i] if node_fill is not None else NODE
        if i in ring:
            canvas.circle(p, r_node + 4, fill=None, outline=RED, width=3)
        canvas.circle(p, r_node, fill=fill, outline=BLACK, width=2)
        if notes is None:
            canvas.text(p, str(i), size=label_size(r_node, len(str(i))), anchor="mm", bold=True, bg=fill)
        else:  # two lines of at least MIN_FONT px, each within the disc's chord at its height
            small = max(MIN_FONT, int(r_node * 0.75))
            canvas.text((p[0], p[1] - small / 2), str(i), size=small, anchor="mm", bold=True, bg=fill)
            canvas.text((p[0], p[1] + small / 2), notes[i], size=small, colour=DARK_GREY, anchor="mm", bg=fill)
    if drawing.panel is not None:
        draw_panel(canvas, drawing.panel, "Edges, each once under its smaller end (u: v, w = edges u-v, u-w):")


def edge_paths(drawing: GraphDrawing, pairs: Sequence[tuple[int, int]]) -> list[list[tuple[float, float]]]:
    """The line of each vertex pair, from centre to centre, keeping the drawing's clearance (radius +
    margin) from every vertex it does not touch, so that no line seems to end at a disc it only passes:
    straight where the segment keeps it (every edge of a drawn graph does, so a picture without an
    answer is unchanged), else routed: on a ring in towards its middle and across; in rows along the
    gaps between them (half the margin narrower); elsewhere bent around the discs in its way (up to
    four bends; straight, as before, where none finds a way)."""
    centres = np.asarray(drawing.centres, dtype=float).reshape(-1, 2)
    if not len(pairs):
        return []
    clear = drawing.geometry.radius + drawing.geometry.margin
    blocked = (segment_distances(centres, np.asarray(pairs, dtype=np.intp)) < clear).any(axis=1)
    middle = centres.mean(axis=0)
    spokes = np.hypot(*(centres - middle).T)
    ring = len(centres) > 3 and np.ptp(spokes) < 1.0
    paths = []
    for (u, v), routed in zip(pairs, blocked):
        a, b = tuple(centres[u]), tuple(centres[v])
        if not routed:
            paths.append([a, b])
        elif drawing.grid is not None:
            paths.append(_grid_route(drawing.grid, u, v, a, b))
        elif ring:  # every point of a chord of the inner circle is `clear` from the ring
            inner = max(spokes.mean() - clear, 0.0) / spokes.mean()
            paths.append([a, tuple(middle + (centres[u] - middle) * inner),
                          tuple(middle + (centres[v] - middle) * inner), b])
        else:
            others = np.delete(centres, [u, v], axis=0)
            paths.append(_detour(np.array(a), np.array(b), others, clear, 4) or [a, b])
    return paths


def _grid_route(grid: tuple[float, float, float, int], u: int, v: int, a: tuple[float, float],
                b: tuple[float, float]) -> list[tuple[float, float]]:
    """u to v along the gaps between rows of discs (half a cell from every centre): out of u into the
    gap under its row (over it, in one row), along it, down a gap between columns, along the gap over
    v's row, and into v."""
    x0, y0, cell, per_row = grid
    (ru, _), (rv, _) = divmod(u, per_row), divmod(v, per_row)
    if ru > rv:
        return _grid_route(grid, v, u, b, a)[::-1]
    if ru == rv:
        y = y0 + cell * ru
        return [a, (a[0], y), (b[0], y), b]
    below, above = y0 + cell * (ru + 1), y0 + cell * rv
    if below == above:
        return [a, (a[0], below), (b[0], below), b]
    x = x0 + cell * min(per_row, max(0, round(((a[0] + b[0]) / 2 - x0) / cell)))
    return [a, (a[0], below), (x, below), (x, above), (b[0], above), b]


def _detour(a: np.ndarray, b: np.ndarray, others: np.ndarray, clear: float,
            depth: int) -> list[tuple[float, float]] | None:
    """a to b bent around the discs (`others`' centres) it would pass within `clear` of: through a point
    beside the nearest one, on whichever side keeps clear, and so on up to `depth` bends (None: none)."""
    if not len(others):
        return [tuple(a), tuple(b)]
    ab = b - a
    t = np.clip((others - a) @ ab / max(ab @ ab, 1e-9), 0.0, 1.0)
    gaps = np.hypot(*(others - (a + t[:, None] * ab)).T)
    k = int(np.argmin(gaps))
    if gaps[k] >= clear:
        return [tuple(a), tuple(b)]
    if depth == 0:
        return None
    normal = np.array([-ab[1], ab[0]]) / max(float(np.hypot(*ab)), 1e-9)
    side = 1.0 if (others[k] - a) @ normal <= 0 else -1.0  # first the side of the segment away from it
    for sign in (side, -side):
        via = others[k] + sign * normal * clear * 1.3
        if np.hypot(*(others - via).T).min() < clear:
            continue
        first, second = _detour(a, via, others, clear, depth - 1), _detour(via, b, others, clear, depth - 1)
        if first and second:
            return first + second[1:]
    return None


def text_panel(width: float, rows: list[str], top: float) -> tuple[tuple, int]:
    """Where a list of "head: a, b, c" rows goes under `top`, and the canvas height it
    needs: in up to five columns, at the font (18 px at the default size down to MIN_FONT)
    that is largest relative to the canvas's long side, which is what a client's downscale
    to a fixed long side keeps (a bigger font that makes the canvas taller still can read
    smaller), within MAX_ASPECT; with more rows than that holds, MIN_FONT and a canvas as
    tall as the rows need (the stated fallback for big instances)."""
    scale = width / DEFAULT_SIZE
    best = None
    for font_size in range(max(MIN_FONT, round(18 * scale)), MIN_FONT - 1, -1):
        if best is not None and best[0] >= (True, font_size / width):
            break  # even on a square canvas this font would read smaller
        per, col_w, cols = _panel_layout(width, rows, font_size, 12 * scale)
        line_h = round(font_size * 1.35)
        height = math.ceil(top + 2 * line_h + per * line_h + 10 * scale)
        fits = height <= MAX_ASPECT * width
        key = (True, font_size / max(width, height)) if fits else (False, -font_size)
        if best is None or key > best[0]:
            best = (key, (top, font_size, line_h, col_w, cols), height)
    return best[1], best[2]


def draw_panel(canvas: Canvas, panel: tuple, title: str) -> None:
    """A `text_panel`'s rows under a bold title line."""
    top, font_size, line_h, col_w, cols = panel
    pad = 12 * canvas.width / DEFAULT_SIZE
    canvas.text((pad, top), title, size=font_size, bold=True)
    for c, lines in enumerate(cols):
        for k, line in enumerate(lines):
            canvas.text((pad + c * col_w, top + (k + 1.5) * line_h), line, size=font_size)


def _table_fit(width: float, height: float | None, header: Sequence[str],
               rows: Sequence[Sequence[str]], max_font: int, min_font: int) -> tuple[int, int, int, int, list[float]]:
    """(font, row height, rows per column group, groups, column widths): the largest font
    whose groups fit side by side (with `height` None, one font and the fewest groups)."""
    ncols = len(header)
    cells = [list(header)] + [list(r) for r in rows]
    for font_size in range(max_font, min_font - 1, -1):
        row_h = int(font_size * 1.55)
        col_w = [max(_text_width(c[j], font_size, k == 0) for k, c in enumerate(cells)) + font_size
                 for j in range(ncols)]
        group_w = sum(col_w) + font_size
        if height is None:
            groups = max(1, min(len(rows), int(width // group_w)))
            per_group = math.ceil(len(rows) / groups) if rows else 1
            return font_size, row_h, per_group, groups, col_w
        per_group = max(1, int(height // row_h) - 1)
        groups = math.ceil(len(rows) / per_group) if rows else 1
        if group_w * groups <= width or font_size == min_font:
            return font_size, row_h, per_group, groups, col_w
    raise ValueError("min_font above max_font")


def table_height(width: float, header: Sequence[str], rows: Sequence[Sequence[str]], font_size: int) -> int:
    """The height a `draw_table` at `font_size` needs when its column groups fill `width`."""
    _, row_h, per_group, _, _ = _table_fit(width, None, header, rows, font_size, font_size)
    return (per_group + 1) * row_h + 2


def table_box_height(width: float, height: float, header: Sequence[str], rows: Sequence[Sequence[str]],
                     max_font: int = 18, min_font: int = MIN_FONT) -> float:
    """`height` when a `draw_table` in a width x height box fits at a font of at least
    `min_font`; otherwise the taller height it needs at `min_font` (the canvas grows, the
    text does not shrink)."""
    font_size, _, _, groups, col_w = _table_fit(width, height, header, rows, max_font, min_font)
    if (sum(col_w) + font_size) * groups <= width:
        return height
    return max(height, table_height(width, header, rows, min_font))


def draw_table(
    canvas: Canvas,
    box: tuple[float, float, float, float],
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    row_fill: dict[int, int] | None = None,
    max_font: int = 18,
    min_font: int = MIN_FONT,
) -> None:
    """A table filling `box`, split into side-by-side column groups when rows do not fit.

    The font shrinks to fit but never below `min_font`, so the numbers stay legible."""
    x0, y0, x1, y1 = box
    row_fill = row_fill or {}
    font_size, row_h, per_group, groups, col_w = _table_fit(x1 - x0, y1 - y0, header, rows, max_font, min_font)
    group_w = sum(col_w) + font_size
    for g in range(groups):
        gx = x0 + g * group_w
        chunk = range(g * per_group, min(len(rows), (g + 1) * per_group))
        y = y0
        canvas.rect((gx, y, gx + sum(col_w), y + row_h), fill=LIGHT_GREY)
        _table_row(canvas, gx, y, header, col_w, row_h, font_size, bold=True, bg=LIGHT_GREY)
        for i in chunk:
            y += row_h
            if i in row_fill:
                canvas.rect((gx, y, gx + sum(col_w), y + row_h), fill=row_fill[i])
            _table_row(canvas, gx, y, rows[i], col_w, row_h, font_size, bg=row_fill.get(i, WHITE))
            canvas.line(((gx, y), (gx + sum(col_w), y)), LIGHT_GREY)
        canvas.rect((gx, y0, gx + sum(col_w), y + row_h), outline=DARK_GREY)


def _table_row(canvas: Canvas, x: float, y: float, cells: Sequence[str], col_w: Sequence[float],
               row_h: int, size: int, bold: bool = False, bg: int = WHITE) -> None:
    for cell, w in zip(cells, col_w):
        canvas.text((x + w - size / 2, y + row_h / 2), cell, size=size, anchor="rm", bold=bold, bg=bg)
        x += w
