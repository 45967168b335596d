"""Read a picture back with Tesseract, each number in its place: every table row must read
as its row (index, then its values), every vertex disc as its own label, every edge-list
row as its row, set cover's element headers in column order and subset labels in row
order; at native size and after a client's downscale to a 512 px long side. Shared by
tests/test_ocr.py and benchmarks/audit_pictures.py.

Tesseract misreads a clearly drawn lone digit now and then (a bold 0 as a symbol, a 0 at
the head of a table as "fe)"), and rarely the same one under another preprocessing, so a
reading that leaves an item unexplained is retried on that item's line or disc only,
binarised and at other sizes; an item counts when one reading has it in its place."""

from __future__ import annotations

import difflib
import io
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from statistics import median

import numpy as np
from PIL import Image, ImageDraw, ImageOps

from mmnp.render import MIN_FONT, adjacency_rows

TESSERACT = shutil.which("tesseract")
LONG_SIDE = 512
_ENV = {**os.environ, "OMP_THREAD_LIMIT": "1"}  # tesseract's threads only contend on a small machine
_LONE_O = re.compile(r"(?<![A-Za-z])[Oo](?![A-Za-z])")  # no picture has the word "O": it is a misread 0
_HEAD = re.compile(r"(\d+):(.*)")  # an edge-list row's head "u:"
ZOOM = 2.0  # text is read at twice its native size: Tesseract wants ~20 px glyphs (enlarging adds no information)
# retries of the lines a reading left unexplained, in order, until none is left
LINE_RETRIES = ({"zoom": 2.0, "threshold": 128}, {"zoom": 3.0}, {"zoom": 2.5, "threshold": 180}, {"zoom": 1.5})
# readings of the vertex discs: a grid of all discs, then of those still unread, then each alone
DISC_GRIDS = ({"px": 40, "threshold": 100}, {"px": 60, "threshold": 128}, {"px": 40, "threshold": None})
DISC_ALONE = ({"px": 45, "threshold": 128}, {"px": 30, "threshold": None}, {"px": 30, "threshold": 128},
              {"px": 60, "threshold": None})


@dataclass(frozen=True)
class Word:
    text: str
    box: tuple[float, float, float, float]  # x0, y0, x1, y1 in the picture region it was read from
    line: tuple[int, ...]  # which line it belongs to (Tesseract's block, paragraph, line; or a re-read strip)

    @property
    def centre(self) -> tuple[float, float]:
        return (self.box[0] + self.box[2]) / 2, (self.box[1] + self.box[3]) / 2


@dataclass
class Readback:
    """What a picture must show, item by item (a table row, a vertex label, an edge-list
    row, a header), each with the numbers it shows, and which items were read in place."""

    items: dict[str, tuple[int, ...]] = field(default_factory=dict)
    found: set[str] = field(default_factory=set)

    @property
    def shown(self) -> int:
        return sum(len(v) for v in self.items.values())

    @property
    def recovered(self) -> int:
        return sum(len(v) for k, v in self.items.items() if k in self.found)

    @property
    def missed(self) -> list[str]:
        return [k for k in self.items if k not in self.found]


def numbers(text: str) -> list[int]:
    """The integers in `text`, a lone letter O read as 0."""
    return [int(x) for x in re.findall(r"\d+", _LONE_O.sub("0", text))]


def downscaled(png: bytes, long_side: int | None) -> Image.Image:
    """The picture as a client sends it: native, or downscaled to `long_side`."""
    img = Image.open(io.BytesIO(png)).convert("RGB")
    if long_side is None:
        return img
    f = long_side / max(img.size)
    return img.resize((round(img.width * f), round(img.height * f)), Image.LANCZOS)


def read_words(img: Image.Image, scale: float, psm: int = 6, threshold: int | None = None) -> list[Word]:
    """The words Tesseract reads, with their boxes (its TSV output), the image enlarged by
    `scale` and, with `threshold`, binarised."""
    g = img.convert("L")
    if scale != 1:
        g = g.resize((round(g.width * scale), round(g.height * scale)), Image.LANCZOS)
    if threshold is not None:
        g = g.point(lambda v: 0 if v < threshold else 255)
    buf = io.BytesIO()
    g.save(buf, "PNG")
    cmd = [TESSERACT, "stdin", "stdout", "--psm", str(psm), "tsv"]
    out = subprocess.run(cmd, input=buf.getvalue(), capture_output=True, check=True, env=_ENV).stdout
    words = []
    for row in out.decode().splitlines()[1:]:
        c = row.split("\t")
        if len(c) == 12 and c[0] == "5" and c[11].strip():
            x, y, w, h = (int(v) / scale for v in c[6:10])
            words.append(Word(c[11].strip(), (x, y, x + w, y + h), (int(c[2]), int(c[3]), int(c[4]))))
    return words


def lines(words: list[Word]) -> list[list[Word]]:
    """The words by line, top to bottom, each line left to right."""
    by_line: dict[tuple[int, ...], list[Word]] = {}
    for w in words:
        by_line.setdefault(w.line, []).append(w)
    return sorted((sorted(ws, key=lambda w: w.box[0]) for ws in by_line.values()),
                  key=lambda ws: min(w.box[1] for w in ws))


def text(ws: list[Word]) -> str:
    return " ".join(w.text for w in ws)


# A check reads a region's words: the items it found in place, and the lines it could not
# explain (to read again).
Check = Callable[[list[Word]], tuple[set[str], list[list[Word]]]]


def _read_strips(region: Image.Image, boxes: list[tuple[float, float]], s: float, tag: int,
                 zoom: float, threshold: int | None = None) -> list[Word]:
    """Lines of `region` (their y ranges) cut out, stacked with white between and read in one
    call; each word goes back to its strip (by its box) and keeps its place in the region."""
    pad = [(y1 - y0) * 0.15 for y0, y1 in boxes]
    cuts = [(max(0, round(y0 - p)), min(region.height, round(y1 + p))) for (y0, y1), p in zip(boxes, pad)]
    gap = max(b - a for a, b in cuts)
    stack = Image.new("RGB", (region.width, sum(b - a + gap for a, b in cuts) + gap), "white")
    tops, y = [], gap
    for a, b in cuts:
        stack.paste(region.crop((0, a, region.width, b)), (0, y))
        tops.append(y)
        y += b - a + gap
    words = []
    for w in read_words(stack, zoom / s, threshold=threshold):
        k = max((i for i, t in enumerate(tops) if t - gap / 2 <= w.centre[1]), default=0)
        dy = cuts[k][0] - tops[k]
        words.append(Word(w.text, (w.box[0], w.box[1] + dy, w.box[2], w.box[3] + dy), (-1, tag, k)))
    return words


def _read_region(region: Image.Image, s: float, check: Check, want: set[str],
                 words: list[Word] | None = None) -> set[str]:
    """The items of `want` found in `region` (`s`: its scale from native): one reading (or
    `words`, one made already), then the lines it left unexplained again, under each of
    LINE_RETRIES in turn."""
    if words is None:
        words = read_words(region, ZOOM / s)
    found, redo = check(words)
    for tag, retry in enumerate(LINE_RETRIES):
        if want <= found or not redo:
            break
        # a line's extent: its words' median top and bottom (a word glued to a glyph of the
        # next line would stretch the strip over two lines)
        boxes = [(median(w.box[1] for w in ws), median(w.box[3] for w in ws)) for ws in redo]
        # a strip is read whole: its reading replaces every word in it (a line Tesseract split too)
        words = [w for w in words if not any(y0 <= w.centre[1] <= y1 for y0, y1 in boxes)]
        words += _read_strips(region, boxes, s, tag, **retry)
        more, redo = check(words)
        found |= more
    return found & want


def _read_table(region: Image.Image, s: float, check: Check, want: set[str], header: str,
                titles: set[str]) -> set[str]:
    """A table's items (and the title numbers above it): one reading of the whole region;
    what it misses, from the table alone (below its header line, unless a title number is
    missing: the plot and title lines then need no retries) with its line retries; then from
    each column group alone (Tesseract drops a short group beside a long one). The groups
    are the runs of pixel columns with ink under the header (a white gap parts two groups)."""
    words = read_words(region, ZOOM / s)
    found, _ = check(words)
    if want <= found:
        return found
    heads = [ws for ws in lines(words) if re.search(rf"\b{header}\b", text(ws))]
    top = 0 if not heads or (want - found) & titles else max(0, round(min(w.box[1] for w in heads[0]) - 4 * s))
    table = region.crop((0, top, region.width, region.height))
    below = [Word(w.text, (w.box[0], w.box[1] - top, w.box[2], w.box[3] - top), w.line) for w in words if w.box[1] >= top]
    found |= _read_region(table, s, check, want - found, below)
    ink = np.asarray(table.convert("L")).min(axis=0) < 200
    x = 0
    while x < len(ink) and not want <= found:
        if not ink[x]:
            x += 1
            continue
        x1 = x
        while x1 < len(ink) and ink[x1]:
            x1 += 1
        if x1 - x > 3 * MIN_FONT * s:  # a group, not a stray mark
            pad = round(4 * s)
            group = table.crop((max(0, x - pad), 0, min(table.width, x1 + pad), table.height))
            found |= _read_region(group, s, check, want - found)
        x = x1
    return found


def _unruled(img: Image.Image, s: float) -> Image.Image:
    """`img` with its vertical rules (table borders, plot frames: dark runs taller than two
    lines of text) painted white: Tesseract reads a border beside a number as a 1 or a "|"
    glued to it. No glyph is that tall, so no text is touched."""
    g = np.asarray(img.convert("L")).copy()
    dark = g < 200
    n = max(3, round(2 * MIN_FONT * s))
    c = np.vstack([np.zeros((1, g.shape[1]), int), np.cumsum(dark, axis=0)])
    starts = (c[n:] - c[:-n]) == n  # a run of n dark pixels starts here
    s2 = np.vstack([np.zeros((1, g.shape[1]), int), np.cumsum(starts, axis=0)])
    y = np.arange(g.shape[0])  # a pixel is in a rule when a run started within the n rows above it
    rule = (s2[np.minimum(y + 1, len(s2) - 1)] - s2[np.clip(y + 1 - n, 0, len(s2) - 1)]) > 0
    rule[:, 1:] |= rule[:, :-1]  # and the anti-aliased pixel beside it
    rule[:, :-1] |= rule[:, 1:]
    g[rule] = 255
    return Image.fromarray(g)


def _row_check(rows: dict[str, tuple[int, ...]], titles: dict[str, tuple[str, int]]) -> Check:
    """Table rows read as rows: a line's numbers parsed left to right, a row found where its
    index is followed by its values (column groups share a line); a title number found after
    its word ("capacity: 582"). A line with numbers no row or title explains is read again."""
    by_index = {v[0]: (k, v) for k, v in rows.items()}

    def check(words: list[Word]) -> tuple[set[str], list[list[Word]]]:
        found, redo = set(), []
        for ws in lines(words):
            t = _LONE_O.sub("0", text(ws))
            toks, p, loose = numbers(t), 0, 0
            while p < len(toks):
                name, row = by_index.get(toks[p], (None, ()))
                if row and tuple(toks[p:p + len(row)]) == row:
                    found.add(name)
                    p += len(row)
                else:
                    p, loose = p + 1, loose + 1
            for name, (word, value) in titles.items():
                m = re.search(rf"{word}:?\s*(\d+)", t)
                if m:
                    loose -= 1
                    if int(m[1]) == value:
                        found.add(name)
            if loose > 0:
                redo.append(ws)
        return found, redo

    return check


def _in_order(want: list[int], read: list[int]) -> set[int]:
    """The wanted numbers read in their place in a sequence (a longest common subsequence)."""
    sm = difflib.SequenceMatcher(None, want, read, autojunk=False)
    return {want[b.a + k] for b in sm.get_matching_blocks() for k in range(b.size)}


def _set_cover(data: dict, img: Image.Image, s: float, rb: Readback) -> None:
    """The element numbers over the columns, left to right, and the row labels "subset i",
    top to bottom: read from the whole picture, then (what is missing) from the label column
    and the header strip alone, which the grid's squares do not crowd; both are found from
    the first reading's "element" word (right-aligned with the labels, level with the header)."""
    u, m = data["universe"], len(data["subsets"])
    elements = {f"element {e}": (e,) for e in range(1, u + 1)}
    subsets = {f"subset {i}": (i,) for i in range(m)}
    rb.items.update(elements)
    rb.items.update(subsets)

    def labels(words: list[Word]) -> tuple[set[str], list[list[Word]]]:
        ls = lines(words)
        ids = []
        for ws in ls:
            mt = re.match(r"subset\s*(\d+)", _LONE_O.sub("0", text(ws)))
            ids.append(int(mt[1]) if mt else None)
        found = {f"subset {i}" for i in _in_order(list(range(m)), [i for i in ids if i is not None])}
        return found, [ws for ws, i in zip(ls, ids) if f"subset {i}" not in found]

    def header(words: list[Word]) -> tuple[set[str], list[list[Word]]]:
        read = [n for w in sorted(words, key=lambda w: w.centre[0]) for n in numbers(w.text)]
        found = {f"element {e}" for e in _in_order(list(range(1, u + 1)), read)}
        return found, [ws for ws in lines(words) if not all(w.text.isdigit() for w in ws)]

    words = read_words(img, ZOOM / s)
    anchor = [w for w in words if w.text == "element"]
    rb.found |= labels(words)[0]
    if not anchor:
        return
    (_, y0, x1, y1), title = anchor[0].box, lines(words)[0]
    rb.found |= header([w for w in words if w.box[0] > x1 and y0 - 30 * s < w.centre[1] < y1 + 2 * s])[0]
    if not set(subsets) <= rb.found:
        rb.found |= _read_region(img.crop((0, round(y1), round(x1 + 3 * s), img.height)), s, labels, set(subsets))
    if not set(elements) <= rb.found:
        top = max(w.box[3] for w in title) + 2 * s
        rb.found |= _read_region(img.crop((round(x1 + 3 * s), round(top), img.width, round(y1 + s))), s,
                                 header, set(elements))


def _meeting_labels(data: dict) -> tuple[dict[str, tuple[int, ...]], Check]:
    """The availability rows "Ana (0)" and the rooms "Room 0 (2 seats)", each on a line."""
    items, patterns = {}, {}
    for i, p in enumerate(data["people"]):
        items[f"person {i}"] = (i,)
        patterns[f"person {i}"] = re.compile(rf"{re.escape(p['name'])}\s*\(\s*{i}\s*\)")
    for j, r in enumerate(data["rooms"]):
        items[f"room {j}"] = (j, r["capacity"])
        patterns[f"room {j}"] = re.compile(rf"Room\s*{j}\s*\(\s*{r['capacity']}\s*seat")

    def check(words: list[Word]) -> tuple[set[str], list[list[Word]]]:
        found, redo = set(), []
        for ws in lines(words):
            t = _LONE_O.sub("0", text(ws))
            hits = {k for k, pat in patterns.items() if pat.search(t)}
            found |= hits
            if not hits:
                redo.append(ws)
        return found, redo

    return items, check


def _panel(data: dict, layout: dict, img: Image.Image, s: float, rb: Readback) -> None:
    """The edge list under the discs: each row "u: v, w" read whole, in its column; the
    lines of a row read wrong are read again."""
    want = {}
    for row in adjacency_rows(data["n"], data["edges"]):
        u, rest = row.split(":")
        want[int(u)] = (int(u), *map(int, rest.split(",")))
    rb.items.update({f"edges of {u}": v for u, v in want.items()})

    def check(words: list[Word]) -> tuple[set[str], list[list[Word]]]:
        found, wrong = set(), set()
        for head, nums, ws in _panel_rows(words, 14 * s):
            if want.get(head) == (head, *nums):
                found.add(f"edges of {head}")
            else:
                wrong |= {id(w) for w in ws}
        return found, [ws for ws in lines(words) if any(id(w) in wrong for w in ws)]

    panel = img.crop((0, round(layout["box"][3] * s), img.width, img.height))
    items = {f"edges of {u}" for u in want}
    rb.found |= _read_region(panel, s, check, items)
    if items - rb.found:
        # Tesseract can glue a line's last number to the next column's head ("39-17:"), so
        # the row is lost whatever the preprocessing: then each column is read on its own
        starts = _column_starts(read_words(panel, ZOOM / s), 14 * s) + [panel.width + 14 * s]
        for x0, x1 in zip(starts, starts[1:]):
            column = panel.crop((max(0, round(x0 - 14 * s)), 0, round(x1 - 4 * s), panel.height))
            rb.found |= _read_region(column, s, check, items - rb.found)


def _column_starts(words: list[Word], font_px: float) -> list[float]:
    """Where the edge list's columns start: the left edges of the heads "u:" cluster."""
    heads = sorted(w.box[0] for w in words if _HEAD.match(_LONE_O.sub("0", w.text)))
    starts: list[float] = []
    for x in heads:
        if not starts or x - starts[-1] > 3 * font_px:
            starts.append(x)
    return starts


def _panel_rows(words: list[Word], font_px: float) -> list[tuple[int, list[int], list[Word]]]:
    """The edge list's rows as read (head, numbers, words): the heads "u:" start the
    columns (`_column_starts`), each word goes to the column it starts in, a column is read
    top to bottom, a row runs from its head to the next."""
    starts = _column_starts(words, font_px)
    cols: list[list[Word]] = [[] for _ in starts]
    for w in words:
        c = sum(1 for x in starts if w.box[0] >= x - font_px)
        if c:
            cols[c - 1].append(w)
    rows: list[tuple[int, list[int], list[Word]]] = []
    for col in cols:
        row = None  # what precedes a column's first head (the panel's title) is no row's
        for ws in lines(col):
            for w in ws:
                t = _LONE_O.sub("0", w.text)
                m = _HEAD.match(t)
                if m:
                    row = (int(m[1]), numbers(m[2]), [w])
                    rows.append(row)
                elif row:
                    row[1].extend(numbers(t))
                    row[2].append(w)
    return rows


def _disc_crops(img: Image.Image, layout: dict, s: float) -> list[Image.Image]:
    """Each vertex disc's inside, from the stored centres: the outline and what lies above
    and below the label masked off (white), so only the label is left."""
    r = (layout["radius"] - 2.5) * s
    cell = round(2 * r)
    mask = Image.new("L", (cell, cell), 0)
    draw = ImageDraw.Draw(mask)
    draw.ellipse((0, 0, cell - 1, cell - 1), fill=255)
    band = 0.6 * layout["radius"] * s  # the label is at most ~0.4 radius above and below the centre
    draw.rectangle((0, 0, cell, cell / 2 - band), fill=0)
    draw.rectangle((0, cell / 2 + band, cell, cell), fill=0)
    crops = []
    for x, y in layout["centres"]:
        x0, y0 = round(x * s - r), round(y * s - r)
        c = Image.new("RGB", (cell, cell), "white")
        c.paste(img.crop((x0, y0, x0 + cell, y0 + cell)), (0, 0), mask)
        crops.append(c)
    return crops


def _grid_reads(crops: list[Image.Image], px: int, threshold: int | None, per_row: int = 10) -> list[str]:
    """Crops pasted into a grid, a cell apart, read in one call as sparse text; each word goes
    to the cell its centre lies in (its TSV box), so a read is attributed to its crop."""
    cell = crops[0].width
    pitch = 2 * cell
    grid = Image.new("RGB", (per_row * pitch, (len(crops) + per_row - 1) // per_row * pitch), "white")
    for i, c in enumerate(crops):
        grid.paste(c, ((i % per_row) * pitch + cell // 2, (i // per_row) * pitch + cell // 2))
    reads = [""] * len(crops)
    for w in sorted(read_words(grid, px / cell, psm=11, threshold=threshold), key=lambda w: w.box[0]):
        i = int(w.centre[1] // pitch) * per_row + int(w.centre[0] // pitch)
        if 0 <= i < len(crops):
            reads[i] += w.text
    return reads


def _vertex_labels(n: int, layout: dict, img: Image.Image, s: float, rb: Readback) -> None:
    """Disc i must read as i: the discs in grids (DISC_GRIDS), then each disc still unread
    alone (DISC_ALONE)."""
    crops = _disc_crops(img, layout, s)
    names = [f"vertex {i}" for i in range(n)]
    rb.items.update({name: (i,) for i, name in enumerate(names)})
    for grid in DISC_GRIDS:
        todo = [i for i in range(n) if names[i] not in rb.found]
        if not todo:
            return
        reads = _grid_reads([crops[i] for i in todo], **grid)
        rb.found |= {names[i] for i, t in zip(todo, reads) if numbers(t) == [i]}
    for i in range(n):
        # alone, with a margin of white (Tesseract reads a lone glyph at a crop's edge badly),
        # as one character or one word (psm 10 / 8)
        crop = ImageOps.expand(crops[i], border=crops[i].width // 2, fill="white")
        for alone in DISC_ALONE:
            if names[i] in rb.found:
                break
            if numbers(text(read_words(crop, alone["px"] / crops[i].width, psm=10 if i < 10 else 8,
                                       threshold=alone["threshold"]))) == [i]:
                rb.found.add(names[i])


def read_back(task: str, data: dict, png: bytes, picture: dict, long_side: int | None) -> Readback:
    """Which of the picture's items Tesseract reads in place, at native size (`long_side`
    None) or downscaled to `long_side`."""
    img = downscaled(png, long_side)
    s = img.width / picture["width"]
    rb = Readback()
    if "edges" in data:
        _vertex_labels(data["n"], picture["layout"], img, s, rb)
        if picture["layout"]["adjacency_panel"]:
            _panel(data, picture["layout"], img, s, rb)
        return rb
    img = _unruled(img, s)
    if task == "set_cover":
        _set_cover(data, img, s, rb)
        return rb
    titles: dict[str, tuple[str, int]] = {}
    if task == "tsp":
        rows = {f"row {i}": (i, x, y) for i, (x, y) in enumerate(data["coords"])}
    elif task == "knapsack":
        rows = {f"row {i}": (i, w, v) for i, (w, v) in enumerate(zip(data["weights"], data["values"]))}
        titles = {"capacity": ("capacity", data["capacity"])}
    elif task == "subset_sum":
        rows = {f"row {i}": (i, x) for i, x in enumerate(data["numbers"])}
        titles = {"target": ("target", data["target"])}
    elif task == "meeting_scheduling":
        rows = {f"meeting {i}": (i, m["duration"], len(m["attendees"])) for i, m in enumerate(data["meetings"])}
    else:
        raise ValueError(f"no read-back for {task}")
    rb.items.update({k: (v[1],) for k, v in titles.items()})
    rb.items.update(rows)
    if task == "meeting_scheduling":  # region by region: the row labels (left of the time axis), the table
        layout = picture["layout"]
        left, top = round(layout["time_axis"][0] * s), round(layout["table_top"] * s)
        items, check = _meeting_labels(data)
        rb.items.update(items)
        rb.found |= _read_region(img.crop((0, 0, left, top)), s, check, set(items))
        img = img.crop((0, top, img.width, img.height))
    header = {"tsp": "city", "knapsack": "item", "subset_sum": "index", "meeting_scheduling": "meeting"}[task]
    rb.found |= _read_table(img, s, _row_check(rows, titles), set(rows) | set(titles), header, set(titles))
    return rb
