"""Read a picture back with Tesseract: which of the numbers a picture must show can OCR
find, at native size and after a client's downscale to a 512 px long side. Shared by
tests/test_ocr.py and benchmarks/audit_pictures.py."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
from collections import Counter

from PIL import Image, ImageDraw

from mmnp.render import MAX_ASPECT, adjacency_rows

TESSERACT = shutil.which("tesseract")
LONG_SIDE = 512


def shown_numbers(task: str, data: dict, picture: dict) -> Counter:
    """Every number the picture must show as text: table cells, vertex labels, edge-list rows."""
    nums: list[int] = []
    if "edges" in data:
        nums += range(data["n"])
        if picture["layout"]["adjacency_panel"]:
            nums += [int(x) for row in adjacency_rows(data["n"], data["edges"]) for x in re.findall(r"\d+", row)]
    elif task == "tsp":  # the table (the plot's labels are for finding a city, the table for its value)
        nums += [v for i, (x, y) in enumerate(data["coords"]) for v in (i, x, y)]
    elif task == "knapsack":
        nums += [data["capacity"]] + [v for i, wv in enumerate(zip(data["weights"], data["values"])) for v in (i, *wv)]
    elif task == "subset_sum":
        nums += [data["target"]] + [v for i, x in enumerate(data["numbers"]) for v in (i, x)]
    elif task == "set_cover":
        nums += list(range(1, data["universe"] + 1)) + list(range(len(data["subsets"])))
    elif task == "meeting_scheduling":
        nums += list(range(len(data["people"])))
        nums += [v for j, r in enumerate(data["rooms"]) for v in (j, r["capacity"])]
        nums += [v for i, m in enumerate(data["meetings"]) for v in (i, m["duration"], len(m["attendees"]))]
    return Counter(nums)


def downscaled(png: bytes, long_side: int | None) -> Image.Image:
    """The picture as a client sends it: native, or downscaled to `long_side`."""
    img = Image.open(io.BytesIO(png)).convert("RGB")
    if long_side is None:
        return img
    f = long_side / max(img.size)
    return img.resize((round(img.width * f), round(img.height * f)), Image.LANCZOS)


def read_numbers(img: Image.Image, sparse: bool = False, scale: float | None = None) -> list[int]:
    """The integers Tesseract reads, in reading order. The image is first enlarged (by
    `scale`, or to ~2x the default size: Tesseract wants ~20 px glyphs; enlarging adds no
    information); a picture taller than MAX_ASPECT by its width, so its text is enlarged as
    much as a square picture's. `sparse`: scattered numbers, read as sparse text. A lone
    letter O is read as the digit 0 (no picture has the word "O"; Tesseract often takes a
    lone 0 for it)."""
    f = scale or 1536 / (img.width if img.height > MAX_ASPECT * img.width else max(img.size))
    big = img.resize((round(img.width * f), round(img.height * f)), Image.LANCZOS)
    buf = io.BytesIO()
    big.save(buf, "PNG")
    out = subprocess.run([TESSERACT, "stdin", "stdout", "--psm", "11" if sparse else "6"],
                         input=buf.getvalue(), capture_output=True, check=True).stdout.decode()
    out = re.sub(r"(?<![A-Za-z])[Oo](?![A-Za-z])", "0", out)
    return [int(x) for x in re.findall(r"\d+", out)]


def vertex_labels(img: Image.Image, layout: dict, scale: float) -> Counter:
    """The labels read from inside each vertex disc: the discs (found from the stored
    layout) copied into a grid, ten a row, each ~60 px across, and read twice, as sparse
    text and, binarised and spaced wider, as a block (Tesseract misses a few lone digits
    either way, rarely the same ones); a label counts when either reading has it."""
    r = (layout["radius"] - 2.5) * scale  # inside the disc's outline
    cell = round(2 * r)
    n = len(layout["centres"])
    disc = Image.new("L", (cell, cell), 0)
    ImageDraw.Draw(disc).ellipse((0, 0, cell - 1, cell - 1), fill=255)
    reads = Counter()
    for gap, binarise in ((2, False), (3, True)):
        grid = Image.new("RGB", (10 * cell * gap, (n // 10 + 1) * cell * gap), "white")
        for i, (x, y) in enumerate(layout["centres"]):
            x0, y0 = round(x * scale - r), round(y * scale - r)
            crop = img.crop((x0, y0, x0 + cell, y0 + cell))
            grid.paste(crop, ((i % 10) * cell * gap + cell // 2, (i // 10) * cell * gap + cell // 2), disc)
        if binarise:
            grid = grid.convert("L").resize((grid.width * 60 // cell, grid.height * 60 // cell), Image.LANCZOS)
            grid = grid.point(lambda v: 0 if v < 128 else 255)
            reads |= Counter(read_numbers(grid, scale=1.0))
        else:
            reads |= Counter(read_numbers(grid, sparse=True, scale=60 / cell))
    return reads


def recovered(task: str, data: dict, png: bytes, picture: dict, long_side: int | None) -> tuple[int, int]:
    """(numbers found, numbers shown): found counts each shown number at most as often as shown."""
    img = downscaled(png, long_side)
    if "edges" not in data:
        want = shown_numbers(task, data, picture)
        read = Counter(read_numbers(img))
        if task == "meeting_scheduling":  # also read region by region: the row labels, then the table
            scale = img.width / picture["width"]
            left, top = round(picture["layout"]["time_axis"][0] * scale), round(picture["layout"]["table_top"] * scale)
            read |= (Counter(read_numbers(img.crop((0, 0, left, top))))
                     + Counter(read_numbers(img.crop((0, top, img.width, img.height)))))
        return sum((want & read).values()), sum(want.values())
    layout = picture["layout"]
    scale = img.width / picture["width"]
    found = sum((Counter(range(data["n"])) & vertex_labels(img, layout, scale)).values())
    total = data["n"]
    if layout["adjacency_panel"]:
        want = Counter(int(x) for row in adjacency_rows(data["n"], data["edges"]) for x in re.findall(r"\d+", row))
        panel = img.crop((0, round(layout["box"][3] * scale), img.width, img.height))
        found += sum((want & Counter(read_numbers(panel))).values())
        total += sum(want.values())
    return found, total
