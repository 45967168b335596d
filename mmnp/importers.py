"""Published instances in: TSPLIB, DIMACS and OR-Library files as mmnp datasets, and the
`classic` set of well-known instances with published optima shipped in mmnp/data/classic.

    mmnp import tsplib berlin52.tsp eil51.tsp --out D
    mmnp import dimacs myciel5.col --task graph_coloring --out D
    mmnp import orlib scpcyc06.txt f2_l-d_kp_20_878 --out D
    mmnp import classic --out D

The dataset has the layout `mmnp generate` writes (`manifest.json`, `<task>/<shard>.jsonl`,
pictures), so `mmnp eval` and `mmnp show` read it as any other. `--relabel SEED` renumbers a
graph's vertices (`relabelled`): a file's numbering can hand over the answer (Leighton's le450
graphs are coloured by vertex mod k), and an import of such a colouring file without it warns. Each record's reference holds
the heuristic's and the exact solver's answers as usual, and, where a published optimum is
known, `reference["published"] = {"objective", "proven", "source", "name"}`; the exact
solver's `proven` is true when the exact solver proved it or it reaches a proven published optimum.

Bounds (the MAX_* constants below, checked before anything is allocated for them): files up to
8 MiB; graphs up to 1,000 vertices and 50,000 edges (a complement too); TSPLIB up to 1,000
cities with integer coordinates within +-100,000 and each axis spanning at most 100,000;
knapsack up to 1,000 items with weights and values 1..10^9; set cover up to 10,000 elements,
1,000 subsets and 50,000 memberships. A file outside them, or malformed, is refused in one
line naming `file:line` and what to do; a published optimum (`--optima`, classic.json) that is
no whole number, or that the instance's own solutions contradict, is refused too.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any, Callable

import numpy as np

from mmnp.core import Instance, canonical_json, content_hash
from mmnp.dataset import MANIFEST, atomic_write, build_manifest, instance_id
from mmnp.errors import DataError, UsageError
from mmnp.files import check_new_folder, write_whole_folder
from mmnp.generators.knapsack import MAX_NUMBER  # knapsack weights and values (capacity: MAX_ITEMS times it)
from mmnp.registry import get_task
from mmnp.render import check_image_size
from mmnp.task import DEFAULT_TIME_LIMIT, Task

CLASSIC_META = "classic.json"

# What mmnp imports at most, checked before anything is allocated for it. A prompt must stay
# readable (a 1,000-vertex graph with 50,000 edges already needs a long context), every answer must fit
# the parser's MAX_VALUE_CHARS, pictures must render in seconds (the tsp grid draws a line every
# 50 units), and every number must stay inside CP-SAT's 64-bit integers.
MAX_FILE_BYTES = 8 * 2**20
MAX_VERTICES = 1_000  # DIMACS graphs (and their complements)
MAX_EDGES = 50_000
MAX_CITIES = 1_000  # TSPLIB
MAX_COORDINATE = 100_000  # TSPLIB: |x|, |y| and the span of each axis (the picture's grid)
MAX_ITEMS = 1_000  # OR-Library knapsack
MAX_ELEMENTS = 10_000  # set cover: the universe (OR-Library scp rows, Steiner triples)
MAX_SUBSETS = 1_000  # set cover: the subsets (scp columns, Steiner points)
MAX_MEMBERSHIPS = 50_000  # set cover: (subset, element) pairs in all


@dataclass(frozen=True)
class Published:
    """One instance read from a file: its task, name and data, and its published optimum
    (`claimed_in`: where that claim was read, for the messages that refuse it)."""

    task: str
    name: str
    data: dict
    file: str
    optimum: float | None = None
    proven: bool = False
    source: str | None = None
    claimed_in: str | None = None
    relabel: int | None = None  # the seed of the permutation that renumbered a graph's vertices (`relabelled`)


@dataclass(frozen=True)
class ImportSpec:
    """What an import was asked (stored as the manifest's `arguments`)."""

    format: str
    files: tuple[str, ...]
    task: str | None = None
    complement: bool = False
    images: bool = True
    optimal: bool = True
    image_size: int = 768
    time_limit: float = DEFAULT_TIME_LIMIT
    relabel: int | None = None
    unit_costs: bool = False

    def to_json(self) -> dict:
        """Recorded as the manifest's arguments; `unit_costs` only when set, so imports made before
        it existed keep their arguments."""
        return {"import": self.format, "files": list(self.files), "task": self.task, "complement": self.complement,
                "images": self.images, "optimal": self.optimal, "image_size": self.image_size,
                "time_limit": self.time_limit, "relabel": self.relabel,
                **({"unit_costs": True} if self.unit_costs else {})}


# -- readers ------------------------------------------------------------------------------

_INTEGER = re.compile(r"[+-]?\d{1,40}")  # cheap to convert; the range checks then say what fits


def _int(token: str, where: str, what: str) -> int:
    """`token` as an integer, or one line naming the place (`where` is `file:line`)."""
    if not _INTEGER.fullmatch(token):
        if token.lstrip("+-").isdigit():
            raise DataError(f"{where}: {what} {token[:24]}... has {len(token)} digits, far more than mmnp imports")
        raise DataError(f"{where}: {what} {token[:24]!r} is not an integer; is this the right format?")
    return int(token)


def _bounded(value: int, low: int, high: int, where: str, what: str, fix: str, bound: bool = True) -> int:
    """`value` when low <= value <= high, else one line: above an mmnp bound (`bound`), that
    bound; otherwise the range and `fix`."""
    if value > high and bound:
        raise DataError(f"{where}: {what} {value} is more than mmnp imports (at most {high:,}); a larger instance "
                        "would not fit a prompt or a picture")
    if not low <= value <= high:
        raise DataError(f"{where}: {what} {value} is outside {low}..{high:,}; {fix}")
    return value


def _lines(text: str):
    """(line number, whitespace-split fields) of each line, lazily."""
    for j, line in enumerate(text.splitlines(), start=1):
        yield j, line.split()


def read_tsplib(text: str, where: str) -> tuple[str, dict]:
    """A TSPLIB EUC_2D file -> (NAME, tsp data). Refuses other distance types: mmnp's tsp
    verifier measures TSPLIB EUC_2D lengths, so an ATT or GEO optimum would not apply. At most
    MAX_CITIES cities with integer coordinates within MAX_COORDINATE (also the span of each axis)."""
    lines = text.splitlines()
    header, i = _tsplib_header(lines, where)
    kind, at = header.get("TYPE", ("TSP", 1))
    if kind.upper().split()[:1] != ["TSP"]:
        raise DataError(f"{where}:{at}: TYPE {kind[:20]}: only symmetric TSP files (TYPE : TSP) can be imported")
    metric, at = header.get("EDGE_WEIGHT_TYPE", ("", i + 1))
    if metric.upper() != "EUC_2D":
        raise DataError(f"{where}:{at}: EDGE_WEIGHT_TYPE {metric[:20] or 'missing'}: mmnp's tsp measures TSPLIB "
                        "EUC_2D (rounded Euclidean) lengths, so this file's optimum would not apply; only EUC_2D "
                        "files can be imported")
    declared = None
    if "DIMENSION" in header:
        value, at = header["DIMENSION"]
        declared = _bounded(_int(value, f"{where}:{at}", "DIMENSION"), 3, MAX_CITIES, f"{where}:{at}",
                            "DIMENSION", "a tour needs 3 cities or more")
    if i >= len(lines) or lines[i].strip().upper() != "NODE_COORD_SECTION":
        raise DataError(f"{where}:{min(i + 1, len(lines)) or 1}: no NODE_COORD_SECTION before the end of the "
                        "header; only files with node coordinates can be imported")
    coords, j, low = _tsplib_nodes(lines, i, declared, where)
    if declared is None and len(coords) < 3:
        raise DataError(f"{where}:{j}: {len(coords)} nodes read; a tour needs at least 3")
    if declared is not None and declared != len(coords):
        raise DataError(f"{where}:{header['DIMENSION'][1]}: DIMENSION {declared} but {len(coords)} nodes read "
                        f"(to line {j}); correct DIMENSION or the node list")
    if min(low) < 0:  # the picture's grid starts at 0: move each axis there (distances stay), within the span bound
        coords = [[x - min(low[0], 0), y - min(low[1], 0)] for x, y in coords]
    grid = max(max(c) for c in coords)
    return header.get("NAME", (Path(where).stem, 0))[0], {"coords": coords, "grid": grid, "distance": "EUC_2D"}


def _tsplib_header(lines: list[str], where: str) -> tuple[dict[str, tuple[str, int]], int]:
    """A TSPLIB file's 'KEY : value' header as {KEY: (value, line)}, and the index of the line
    that ends it (NODE_COORD_SECTION or EOF; len(lines) when none does)."""
    header: dict[str, tuple[str, int]] = {}
    i = 0
    while i < len(lines) and lines[i].strip().upper() not in ("NODE_COORD_SECTION", "EOF"):
        key, sep, value = lines[i].partition(":")
        if sep:
            header[key.strip().upper()] = (value.strip(), i + 1)
        elif lines[i].strip():
            raise DataError(f"{where}:{i + 1}: {lines[i].strip()[:40]!r} is not a 'KEY : value' header line; "
                            "is this a TSPLIB .tsp file?")
        i += 1
    return header, i


def _tsplib_nodes(lines: list[str], i: int, declared: int | None, where: str,
                  ) -> tuple[list[list[int]], int, list[int]]:
    """The integer coordinates of the NODE_COORD_SECTION at line index `i`, the number of the
    last line read, and each axis's lowest coordinate (bounds checked on the way)."""
    coords: list[list[int]] = []
    low, high = [MAX_COORDINATE + 1] * 2, [-MAX_COORDINATE - 1] * 2
    j = i + 1
    for j, line in enumerate(lines[i + 1:], start=i + 2):
        parts = line.split()
        if not parts or parts[0].upper() == "EOF":
            break
        if len(parts) != 3:
            raise DataError(f"{where}:{j}: expected 'id x y', got {line.strip()[:40]!r}")
        ident = _int(parts[0], f"{where}:{j}", "node id")
        if ident != len(coords) + 1:
            raise DataError(f"{where}:{j}: node {ident} out of order (expected {len(coords) + 1}); nodes must be "
                            "numbered 1, 2, 3, ... in order")
        if len(coords) == (declared or MAX_CITIES):
            raise DataError(f"{where}:{j}: more nodes than " + (f"DIMENSION {declared}" if declared else
                            f"mmnp imports (at most {MAX_CITIES:,} cities)") + "; check the file")
        try:
            xy = [float(parts[1]), float(parts[2])]
        except ValueError:
            raise DataError(f"{where}:{j}: expected 'id x y' numbers, got {line.strip()[:40]!r}") from None
        if not all(math.isfinite(v) and v.is_integer() for v in xy):
            raise DataError(f"{where}:{j}: coordinates ({parts[1][:20]}, {parts[2][:20]}) are not integers; mmnp's "
                            "tsp prompt states integer coordinates, so this file cannot be imported as it is")
        for axis, v in enumerate(xy):
            low[axis], high[axis] = min(low[axis], int(v)), max(high[axis], int(v))
            if abs(v) > MAX_COORDINATE or high[axis] - low[axis] > MAX_COORDINATE:
                raise DataError(f"{where}:{j}: coordinate {parts[1 + axis][:20]} makes the cities span more than "
                                f"mmnp imports (coordinates and their spread at most {MAX_COORDINATE:,}); scale the "
                                "instance down")
        coords.append([int(xy[0]), int(xy[1])])
    return coords, j, low


def read_dimacs(text: str, where: str, complement: bool = False) -> tuple[int, list[list[int]]]:
    """A DIMACS graph (.col/.clq: `p edge n m`, `e u v`) -> (n, edges), edges normalised:
    0-based, smaller id first, no repeats, sorted. `complement`: the complement graph (a clique
    file's maximum clique is its complement's largest independent set). At most MAX_VERTICES
    vertices and MAX_EDGES distinct edges, the complement's included. A loop is refused (it would
    change the problem: no colouring, a vertex forced into every cover), and so is an edge count
    `m` that is neither the file's 'e' lines nor its distinct edges once or twice (Johnson's DSJC
    files count each edge twice): a file cut short would otherwise import as another graph."""
    n, edges, last = None, set(), 0
    declared, listed, header = None, 0, ""
    for j, parts in _lines(text):
        last = j
        if not parts or parts[0] == "c":
            continue
        at = f"{where}:{j}"
        if parts[0] == "p":
            if n is not None:
                raise DataError(f"{at}: a second 'p' line; a DIMACS file has one 'p edge N M' line")
            if len(parts) < 3:
                raise DataError(f"{at}: expected 'p edge N M'")
            n = _bounded(_int(parts[2], at, "vertex count"), 2, MAX_VERTICES, at, "vertex count",
                         "a graph task needs 2 vertices or more")
            if len(parts) > 3:  # checked against the edges read (which MAX_EDGES bounds) at the end
                declared, header = _int(parts[3], at, "edge count"), at
        elif parts[0] == "e":
            if n is None:
                raise DataError(f"{at}: an edge before the 'p edge N M' line")
            if len(parts) != 3:
                raise DataError(f"{at}: expected 'e U V'")
            u, v = _int(parts[1], at, "vertex"), _int(parts[2], at, "vertex")
            if not (1 <= u <= n and 1 <= v <= n):
                raise DataError(f"{at}: edge ({u}, {v}) names a vertex outside 1..{n}")
            if u == v:
                raise DataError(f"{at}: edge ({u}, {v}) is a loop; mmnp's graph tasks take simple graphs (a loop "
                                "leaves no colouring and forces its vertex into every cover): remove the line")
            listed += 1
            edges.add((min(u, v) - 1, max(u, v) - 1))
            if len(edges) > MAX_EDGES:
                raise DataError(f"{at}: more than {MAX_EDGES:,} edges, more than mmnp imports; a larger graph "
                                "would not fit a prompt")
        elif parts[0] not in ("n", "x"):  # vertex weights and extensions carry nothing for mmnp
            raise DataError(f"{at}: unknown line {' '.join(parts)[:40]!r}; is this a DIMACS graph file?")
    if n is None:
        raise DataError(f"{where}:{last or 1}: no 'p edge N M' line before the end; is this a DIMACS graph file?")
    if declared is not None and declared not in (listed, len(edges), 2 * len(edges)):
        raise DataError(f"{header}: the 'p' line counts {declared:,} edges, the file lists {listed:,} ({len(edges):,} "
                        "distinct); is it cut short? correct the 'p' line or use the whole file")
    if complement:
        count = n * (n - 1) // 2 - len(edges)
        if count > MAX_EDGES:
            raise DataError(f"{where}:{last}: the complement has {count:,} edges, more than mmnp imports "
                            f"({MAX_EDGES:,}); import the graph itself, or a smaller one")
        edges = {(u, v) for u in range(n) for v in range(u + 1, n)} - edges
    return n, [list(e) for e in sorted(edges)]


class _Numbers:
    """An OR-Library file's integers in order, each with its line, read lazily (`take`)."""

    def __init__(self, text: str, where: str) -> None:
        self.where, self.count = where, sum(1 for _ in re.finditer(r"\S+", text))
        self._tokens = ((j, token) for j, parts in _lines(text) for token in parts)
        self.line = 1

    def take(self, what: str) -> int:
        for self.line, token in self._tokens:
            return _int(token, f"{self.where}:{self.line}", what)
        raise DataError(f"{self.where}:{self.line}: the file ends where {what} should be; is it cut short?")

    def at(self) -> str:
        return f"{self.where}:{self.line}"

    def left(self) -> bool:
        """Whether numbers are left (the next one is consumed, and `at` names its line)."""
        for self.line, _ in self._tokens:
            return True
        return False


def read_orlib(text: str, where: str, unit_costs: bool = False) -> tuple[str, dict]:
    """An OR-Library style file -> (task, data), the kind told by its count of numbers:
    knapsack (`n capacity`, then n lines `value weight`), Steiner triple covering
    (`n m`, then m lines of 3 points) or unicost set cover (OR-Library scp: `m n`, n costs,
    then per row its column count and columns). Elements are the rows (triples).
    `unit_costs`: read a weighted scp file as its unicost variant (costs ignored)."""
    nums = _Numbers(text, where)
    if nums.count < 2:
        raise DataError(f"{where}:1: too short for an OR-Library file (two numbers at least)")
    a, b = nums.take("the first header number"), nums.take("the second header number")
    head = nums.at()
    if nums.count == 2 + 2 * a:
        _bounded(a, 1, MAX_ITEMS, head, "item count", "correct the header")
        capacity = _bounded(b, 1, MAX_ITEMS * MAX_NUMBER, head, "capacity", "correct the header")
        values, weights = [], []
        for _ in range(a):
            values.append(_bounded(nums.take("a value"), 1, MAX_NUMBER, nums.at(), "value",
                                   "knapsack values are positive integers within CP-SAT's range"))
            weights.append(_bounded(nums.take("a weight"), 1, MAX_NUMBER, nums.at(), "weight",
                                    "knapsack weights are positive integers within CP-SAT's range"))
        return "knapsack", {"capacity": capacity, "weights": weights, "values": values}
    if nums.count == 2 + 3 * b:
        if _reads_as_scp(text, where, unit_costs):
            raise DataError(f"{head}: this file reads both as Steiner triple covering ({a} points, {b} triples) and "
                            "as an OR-Library scp file (its count of numbers fits both layouts), so mmnp cannot tell "
                            "which it is; nothing was imported")
        points = _bounded(a, 1, MAX_SUBSETS, head, "point count (subsets)", "correct the header")
        _bounded(b, 1, MAX_ELEMENTS, head, "triple count (elements)", "correct the header")
        subsets: list[list[int]] = [[] for _ in range(points)]
        for row in range(1, b + 1):
            triple = {_bounded(nums.take("a point"), 1, points, nums.at(), "point",
                               "correct the triple", bound=False) for _ in range(3)}
            if len(triple) < 3:
                raise DataError(f"{nums.at()}: triple {row} repeats a point; a Steiner triple names 3 distinct points: "
                                "correct the triple (or the header's counts, if the file is another layout)")
            for p in sorted(triple):
                subsets[p - 1].append(row)
        return "set_cover", {"universe": b, "subsets": subsets}
    try:
        return _read_scp(nums, a, b, head, unit_costs)
    except DataError as e:  # the layout was guessed from the count: say what the others needed
        raise DataError(f"{e} (read as an scp file, the layout its count of numbers allows: its {nums.count:,} numbers "
                        f"fit neither a knapsack file, "
                        f"{2 + 2 * a:,} for {a:,} items, nor a Steiner triple file, {2 + 3 * b:,} for {b:,} triples)"
                        ) from None


def _reads_as_scp(text: str, where: str, unit_costs: bool) -> bool:
    """Whether the whole file is a valid OR-Library scp file too."""
    nums = _Numbers(text, where)
    try:
        a, b = nums.take("the first header number"), nums.take("the second header number")
        _read_scp(nums, a, b, nums.at(), unit_costs)
    except DataError:
        return False
    return True


def _read_scp(nums: _Numbers, a: int, b: int, head: str, unit_costs: bool) -> tuple[str, dict]:
    """The rest of an OR-Library scp file after its header `a b` (rows, columns)."""
    rows = _bounded(a, 1, MAX_ELEMENTS, head, "row count (elements)",
                    "is this a knapsack, Steiner triple or scp file?")
    cols = _bounded(b, 1, MAX_SUBSETS, head, "column count (subsets)",
                    "is this a knapsack, Steiner triple or scp file?")
    for _ in range(cols):
        if nums.take("a column cost") != 1 and not unit_costs:
            raise DataError(f"{nums.at()}: weighted set cover (costs other than 1): mmnp's set_cover counts subsets, "
                            "so only unicost files can be imported (--unit-costs reads it as its unicost variant)")
    subsets = [[] for _ in range(cols)]
    if nums.count - 2 - cols - rows > MAX_MEMBERSHIPS:
        raise DataError(f"{head}: the rows list more than {MAX_MEMBERSHIPS:,} memberships, more than mmnp imports; "
                        "a larger instance would not fit a prompt")
    for row in range(1, rows + 1):
        count = _bounded(nums.take(f"row {row}'s column count"), 1, cols, nums.at(), f"row {row}'s column count",
                         "a row in no column cannot be covered", bound=False)
        for c in sorted({_bounded(nums.take(f"a column of row {row}"), 1, cols, nums.at(), f"row {row}'s column",
                                  "correct the row", bound=False) for _ in range(count)}):
            subsets[c - 1].append(row)
    if nums.left():
        raise DataError(f"{nums.at()}: numbers after the last row; is this an OR-Library scp file?")
    return "set_cover", {"universe": rows, "subsets": subsets}


def accepts(task: str, fmt: str) -> bool:
    """Whether `task`'s generator module lists `fmt` in its `IMPORTS` (the formats whose data it takes)."""
    return fmt in getattr(get_task(task).generator, "IMPORTS", ())


def tasks_reading(fmt: str) -> list[str]:
    """The tasks that accept `fmt`, in registry order (a task plug-in that does not load is left out)."""
    from mmnp.plugins import PluginError
    from mmnp.registry import task_names

    out = []
    for name in task_names():
        try:
            if accepts(name, fmt):
                out.append(name)
        except PluginError:
            continue  # its own use says why
    return out


def read_file(fmt: str, path: Path, task: str | None = None, complement: bool = False,
              unit_costs: bool = False) -> Published:
    """One file of format `fmt` as a Published instance (no optimum attached)."""
    read = FORMATS[fmt].read if fmt in FORMATS else None
    if read is None:
        raise UsageError(f"unknown format {fmt!r}; choose from {', '.join(n for n, f in FORMATS.items() if f.read)}")
    try:
        with path.open("rb") as f:  # read up to the bound, whatever the file says its size is (a pipe, a device)
            raw = f.read(MAX_FILE_BYTES + 1)
        if len(raw) > MAX_FILE_BYTES:
            size = path.stat().st_size  # 0 for a pipe or a device, which are cut at the bound
            shown = f"{size:,} bytes, more" if size > MAX_FILE_BYTES else "more bytes"
            raise DataError(f"{path}:1: {shown} than mmnp imports ({MAX_FILE_BYTES:,}); an instance "
                            "within mmnp's bounds takes far less")
        text = raw.decode("utf-8", errors="replace")
    except OSError as e:
        raise DataError(f"{path}: cannot read it ({e.strerror or e}); check the path") from None
    return read(text, path, task, complement, unit_costs)


def _tsplib_file(text: str, path: Path, task: str | None, complement: bool, unit_costs: bool) -> Published:
    if task is not None and not accepts(task, "tsplib"):
        raise UsageError(f"--task {task}: TSPLIB files import as one of {', '.join(tasks_reading('tsplib'))}")
    name, data = read_tsplib(text, str(path))
    return Published(task or "tsp", name, data, path.name)


def _dimacs_file(text: str, path: Path, task: str | None, complement: bool, unit_costs: bool) -> Published:
    where = str(path)
    if task is None:
        raise UsageError(f"{where}: a DIMACS graph serves several tasks; pass --task, one of "
                         f"{', '.join(tasks_reading('dimacs'))}")
    if not accepts(task, "dimacs"):
        raise UsageError(f"--task {task}: {task} does not import DIMACS graphs; use one of "
                         f"{', '.join(tasks_reading('dimacs'))}")
    n, edges = read_dimacs(text, where, complement)
    return Published(task, path.stem + ("-complement" if complement else ""), {"n": n, "edges": edges}, path.name)


def relabelled(item: Published, seed: int) -> Published:
    """`item`'s graph with vertex v renumbered label[v], label = numpy's default_rng(seed).permutation(n)
    (edges normalised as `read_dimacs` leaves them). A file's numbering can give its generator's
    planted answer away: in every Leighton graph of the DIMACS set (le450_*), vertex v (0- or
    1-based) mod k is a k-colouring, the optimum; relabelled, the instance is the same up to
    isomorphism (the same optimum) and the numbers say nothing."""
    if set(item.data) != {"n", "edges"}:
        raise UsageError(f"{item.file}: --relabel renumbers a graph's vertices, and a {item.task} instance read from "
                         "it is no graph; import graphs (DIMACS) with it")
    label = np.random.default_rng(seed).permutation(item.data["n"]).tolist()
    edges = sorted(sorted((label[u], label[v])) for u, v in item.data["edges"])
    return replace(item, data={"n": item.data["n"], "edges": [list(e) for e in edges]}, relabel=seed)


def numbering_colours(n: int, edges: list[list[int]], limit: int) -> tuple[int, str] | None:
    """The fewest colours, at most `limit`, with which the vertex numbers alone colour the graph
    properly, by residue (v mod k) or by consecutive blocks (v // ceil(n / k)), and the rule; None
    if neither does within `limit`."""
    if not edges:
        return None
    u, v = np.asarray(edges, dtype=np.int64).T
    for k in range(2, limit + 1):
        if not np.any(u % k == v % k):
            return k, f"vertex mod {k}"
        size = -(-n // k)
        if not np.any(u // size == v // size):
            return k, f"blocks of {size} consecutive vertices"
    return None


def _numbering_notice(item: Published) -> str | None:
    """A line for a colouring instance whose vertex numbers colour it with as few colours as a
    clique in it has, or as its published optimum (`--optima`): an optimal answer read off the
    numbers (every Leighton graph, le450_*)."""
    if item.task != "graph_coloring":
        return None
    clique = len(get_task(item.task).solver.large_clique(item.data))
    bound, why = max((clique, f"its {clique}-clique needs"), (int(item.optimum or 0), "its published optimum"))
    found = numbering_colours(item.data["n"], item.data["edges"], bound)
    if found is None:
        return None
    return (f"{item.file}: its vertex numbers colour it with {found[0]} colours ({found[1]}), as few as {why}: an "
            "optimal answer a model can read off the numbers; import it with --relabel SEED")


def _orlib_file(text: str, path: Path, task: str | None, complement: bool, unit_costs: bool) -> Published:
    where = str(path)
    kind, data = read_orlib(text, where, unit_costs)
    if task not in (None, kind):
        raise UsageError(f"--task {task}: {where} is a {kind} file")
    return Published(kind, path.stem, data, path.name)


# -- published optima ---------------------------------------------------------------------

_CLAIM_KEYS = {"objective", "proven", "source"}


def read_claim(entry: Any, where: str) -> tuple[float, bool, str | None]:
    """A published optimum `{"objective", "proven", "source"}` as (objective, proven, source):
    the objective a finite whole number >= 0 (every mmnp objective is one), `proven` a JSON
    boolean, `source` a text; anything else is one line naming `where` (file: entry)."""
    if not isinstance(entry, dict):
        raise DataError(f"{where}: expected {{\"objective\": x, \"proven\": true, \"source\": \"...\"}}, "
                        f"got {json.dumps(entry)[:40]}")
    unknown = set(entry) - _CLAIM_KEYS
    if unknown or "objective" not in entry:
        raise DataError(f"{where}: " + (f"unknown key {sorted(unknown)[0]!r}" if unknown else "no 'objective'")
                        + f"; an entry has the keys {', '.join(sorted(_CLAIM_KEYS))} ('objective' required)")
    objective = entry["objective"]
    if isinstance(objective, bool) or not isinstance(objective, (int, float)):
        raise DataError(f"{where}: objective {json.dumps(objective)[:40]} is not a number; write the published "
                        "optimum as a JSON number")
    if not (math.isfinite(objective) and float(objective).is_integer() and objective >= 0):
        raise DataError(f"{where}: objective {objective} is not a whole number >= 0, as every mmnp objective "
                        "(tour length, count, total value) is; correct it")
    proven = entry.get("proven", False)
    if not isinstance(proven, bool):
        raise DataError(f"{where}: proven {json.dumps(proven)[:40]} is not true or false; write a JSON boolean")
    source = entry.get("source")
    if source is not None and not isinstance(source, str):
        raise DataError(f"{where}: source {json.dumps(source)[:40]} is not a text; write where the optimum is "
                        "published")
    return int(objective), proven, source


def load_optima(path: Path | None) -> dict[str, tuple[float, bool, str | None]]:
    """--optima FILE: {name: {"objective": x, "proven": bool, "source": "..."}}, each entry
    checked by `read_claim`."""
    if path is None:
        return {}
    try:
        table = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(f"--optima {path}: cannot read it ({e}); check the path") from None
    except ValueError as e:
        raise DataError(f"--optima {path}:{getattr(e, 'lineno', 1)}: not JSON ({e}); write "
                        "{name: {\"objective\": x, \"proven\": true, \"source\": \"...\"}}") from None
    if not isinstance(table, dict):
        raise DataError(f"--optima {path}: expected {{name: {{\"objective\": x, \"proven\": true, \"source\": "
                        '"..."}}')
    return {name: read_claim(entry, f"--optima {path}: {name!r}") for name, entry in table.items()}


def check_claim(item: Published, task: Task, heuristic: float, found: float, proven: bool,
                bound: float | None) -> None:
    """Refuse a published optimum that the instance's own solutions contradict: a proven one
    worse than a feasible solution found (the heuristic's, the exact solver's), or any better
    than an optimum the exact solver proved or than its proven bound. A wrong claim would otherwise
    make every model's optimality figures false."""
    claim, where = item.optimum, f"{item.claimed_in or item.file}: {item.name!r}"
    best = found if task.is_better(found, heuristic) else heuristic
    if item.proven and task.is_better(best, claim):
        raise DataError(f"{where}: the claimed proven optimum {claim} is worse than the feasible {best} the "
                        f"reference solvers found for {item.file}; correct the value, or drop it")
    if proven and task.is_better(claim, found):
        raise DataError(f"{where}: the claimed optimum {claim} is better than {found}, which the exact solver proved optimal "
                        f"for {item.file}; correct the value, or check that the file is the published one")
    if bound is not None and task.is_better(claim, bound):
        raise DataError(f"{where}: the claimed optimum {claim} is better than the exact solver's proven bound {bound} for "
                        f"{item.file}; correct the value, or check that the file is the published one")


# -- the classic set ----------------------------------------------------------------------

def classic_dir() -> Path:
    return Path(str(resources.files("mmnp") / "data" / "classic"))


def classic_instances() -> list[Published]:
    """The shipped classic set: every entry of classic.json read from its file."""
    folder = classic_dir()
    meta = json.loads((folder / CLASSIC_META).read_text())
    out = []
    for entry in meta["instances"]:
        item = read_file(entry["format"], folder / entry["file"], entry["task"], entry.get("complement", False),
                         entry.get("unit_costs", False))
        if "relabel" in entry:  # the file's numbering gives the planted answer away (`relabelled`)
            item = relabelled(item, entry["relabel"])
        where = f"{folder / CLASSIC_META}: {entry['name']!r}"
        claim = {"objective": entry.get("optimum"), "proven": entry.get("proven", False), "source": entry.get("source")}
        optimum, proven, source = read_claim(claim, where)
        out.append(replace(item, name=entry["name"], optimum=optimum, proven=proven, source=source,
                           claimed_in=str(folder / CLASSIC_META)))
    return out


# -- the formats --------------------------------------------------------------------------

FileReader = Callable[[str, Path, str | None, bool, bool], Published]  # (text, path, task, complement, unit_costs)


@dataclass(frozen=True)
class ImportFormat:
    """One `mmnp import FORMAT`: its help, and either the reader of one of its files or, for a set
    mmnp ships, the function that reads the whole set (`shipped`; its dataset's shard is its name)."""

    help: str
    read: FileReader | None = None
    shipped: Callable[[], list[Published]] | None = None


FORMATS: dict[str, ImportFormat] = {  # `mmnp import FORMAT`: its choices and help come from here
    "tsplib": ImportFormat("TSPLIB EUC_2D .tsp files (tsp)", _tsplib_file),
    "dimacs": ImportFormat("DIMACS .col/.clq graphs (a graph task: --task)", _dimacs_file),
    "orlib": ImportFormat("OR-Library knapsack, Steiner triple and unicost scp files", _orlib_file),
    "classic": ImportFormat("the shipped classic set (no files)", shipped=classic_instances),
}


# -- datasets -----------------------------------------------------------------------------

def build_instance(item: Published, index: int, shard: str, optimal: bool = True,
                   time_limit: float = DEFAULT_TIME_LIMIT) -> Instance:
    """The instance record for `item`: prompts, heuristic and (when `optimal`) exact references,
    and the published optimum where known, refused when the instance contradicts it
    (`check_claim`) or when it leaves the Quality Ratio undefined (a reference objective of 0)."""
    task = get_task(item.task)
    heuristic = _heuristic_reference(item, task)
    if not optimal:
        return _assemble(item, index, shard, task, heuristic, None, False, None)
    best, _ = task.best_known(item.data, heuristic, time_limit)
    found = {"objective": best["objective"], "solution": best["solution"]}
    return _assemble(item, index, shard, task, heuristic, found, best["proven"], best.get("bound"))


def _heuristic_reference(item: Published, task: Task) -> dict:
    """The heuristic's reference for `item` (deterministic), refused where no answer is feasible
    or where it leaves the Quality Ratio undefined."""
    data = item.data
    if task.name == "longest_cycle" and not task.solver.trivial(data):
        raise DataError(f"{item.file}: the graph has no cycle, so no longest_cycle answer is feasible; import a "
                        "graph with a cycle")
    heuristic = task._reference(data, task.solver.heuristic(data))
    if heuristic["objective"] == 0:
        raise DataError(f"{item.file}: its reference objective is 0 (e.g. a graph without edges), so the Quality "
                        "Ratio is undefined; import an instance whose answers score above 0")
    return heuristic


def _assemble(item: Published, index: int, shard: str, task: Task, heuristic: dict, found: dict | None,
              proven: bool, bound: float | None) -> Instance:
    """The record from its references: `found` the exact solve's answer (None: no exact
    reference), `proven` and `bound` what the solve said of it; the published claim is checked
    against them and, where proven and met, makes the answer proven."""
    data = item.data
    reference: dict[str, Any] = {"heuristic": heuristic, "optimal": None}
    if item.optimum is not None:
        check_claim(item, task, heuristic["objective"], (found or heuristic)["objective"], proven, bound)
    if found is not None:
        if item.proven and item.optimum is not None and found["objective"] == item.optimum:
            proven = True  # the published proof covers this instance as stated
        reference["optimal"] = {**found, "proven": proven}
    if item.optimum is not None:
        reference["published"] = {"objective": item.optimum, "proven": item.proven, "source": item.source,
                                  "name": item.name}
    params = {"name": item.name, "file": item.file} | ({} if item.relabel is None else {"relabel": item.relabel})
    return Instance(id=instance_id(item.task, shard, index), task=item.task, difficulty=shard, seed=index,
                    params=params, data=data, hash=content_hash(item.task, data),
                    prompt=task.generator.prompt(data), image_prompt=task.generator.IMAGE_PROMPT,
                    reference=reference)


def import_dataset(out: str | Path, items: list[Published], spec: ImportSpec, shard: str,
                   progress: Callable[[int, int], None] | None = None) -> dict:
    """Write `items` as a dataset in `out` (which must be new or empty); returns its manifest.
    Every instance is built (and checked) before anything is written, and the folder appears
    whole or not at all (`write_whole_folder`): a refused instance or a kill leaves no
    half-written dataset that every later import and reader would refuse. `progress(done, total)`
    follows the instances built (the exact solves: minutes for the classic set)."""
    out = Path(out)
    check_new_folder(out)
    journal = out.absolute().parent / f".{out.name}.mmnp-import.jsonl"
    done = _read_journal(journal)
    by_task: dict[str, list[Instance]] = {}
    for index, item in enumerate(items):
        if progress is not None:
            progress(index, len(items))
        built = by_task.setdefault(item.task, [])
        key = _item_key(item, len(built), shard, spec)
        inst = _resumed(done.get(key), item, len(built), shard, spec)
        if inst is None:
            inst = build_instance(item, len(built), shard, spec.optimal, spec.time_limit)
            with open(journal, "a", encoding="utf-8") as log:  # an interrupted import resumes from here
                log.write(json.dumps({"key": key, "record": inst.to_record()}, separators=(",", ":")) + "\n")
        built.append(inst)
    if progress is not None:
        progress(len(items), len(items))

    def write(folder: Path) -> dict:
        for task, instances in by_task.items():
            lines = []
            for inst in instances:
                if spec.images:
                    png, picture = get_task(task).picture(inst, spec.image_size)
                    atomic_write(folder / task / "images" / f"{inst.id}.png", png)
                    inst = replace(inst, image=f"{task}/images/{inst.id}.png", picture=picture)
                lines.append(json.dumps(inst.to_record(), ensure_ascii=False, separators=(",", ":")))
            atomic_write(folder / task / f"{shard}.jsonl", "\n".join(lines) + "\n")
        manifest = build_manifest(folder, spec, [(task, shard) for task in by_task])
        atomic_write(folder / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        return manifest

    manifest = write_whole_folder(out, write)
    journal.unlink(missing_ok=True)
    return manifest


def _item_key(item: Published, index: int, shard: str, spec: ImportSpec) -> str:
    """What an instance's record is made from: its data and claim, its place, the exact solve's
    settings and the versions that compute its references."""
    from mmnp.integrity import ortools_version

    made = [item.task, item.name, item.file, content_hash(item.task, item.data), item.optimum, item.proven,
            item.source, index, shard, spec.optimal, spec.time_limit, get_task(item.task).version,
            ortools_version() if spec.optimal else None]
    return hashlib.sha256(json.dumps(made, sort_keys=True).encode()).hexdigest()


def _read_journal(journal: Path) -> dict[str, dict]:
    """The records an interrupted import of the same --out finished (a torn last line is skipped)."""
    done = {}
    try:
        lines = journal.read_text(encoding="utf-8").splitlines()
    except OSError:
        return done
    for line in lines:
        try:
            entry = json.loads(line)
            done[entry["key"]] = entry["record"]
        except (ValueError, TypeError, KeyError):
            continue
    return done


def _resumed(record: dict | None, item: Published, index: int, shard: str, spec: ImportSpec) -> Instance | None:
    """A journal's record of `item`, when it is the record `build_instance` makes (else the
    instance is built again): everything in it is made again (the heuristic's reference
    included: deterministic, and a worse one planted in the journal would inflate every Quality
    Ratio) but the exact solve, whose answer must verify to its objective and be no worse than the
    heuristic's. Its proof is taken as the journal says (only CP-SAT could say it again), as a
    resumed `generate` takes its exact references (`Task.mismatch`)."""
    if record is None:
        return None
    try:
        inst = Instance.from_record(record)
        if inst.hash != content_hash(item.task, item.data) or inst.data != item.data:
            return None  # another instance: cheap to tell before the heuristic runs
        task, found, proven = get_task(item.task), None, False
        if spec.optimal:
            solved = inst.reference["optimal"]
            if set(solved) != {"objective", "solution", "proven"} or not isinstance(solved["proven"], bool):
                return None
            found, proven = task._reference(item.data, solved["solution"]), solved["proven"]
        heuristic = _heuristic_reference(item, task)
        if found is not None and task.is_better(heuristic["objective"], found["objective"]):
            return None
        made = _assemble(item, index, shard, task, heuristic, found, proven, None)
    except Exception:  # noqa: BLE001 - a damaged or edited journal line is built again, never trusted
        return None
    return made if canonical_json(made.to_record()) == canonical_json(record) else None


def import_files(fmt: str, files: list[Path], out: Path, task: str | None = None, complement: bool = False,
                 optima: Path | None = None, images: bool = True, optimal: bool = True,
                 image_size: int = 768, time_limit: float = DEFAULT_TIME_LIMIT, relabel: int | None = None,
                 notice: Callable[[str], None] | None = None, progress: Callable[[int, int], None] | None = None,
                 unit_costs: bool = False) -> dict:
    """What `mmnp import` does: read, attach optima, renumber graphs' vertices (`relabel`: a seed),
    write the dataset; returns the manifest. `notice` takes a line for each colouring instance
    whose vertex numbers already colour it (`numbering_colours`) when it is not renumbered;
    `progress(done, total)` follows the instances built; `unit_costs` reads weighted OR-Library
    set cover files as their unicost variants (as the unicost literature does)."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    if relabel is not None and relabel < 0:
        raise UsageError(f"--relabel {relabel}: a seed is a whole number >= 0")
    if not 0 < time_limit <= 86400:  # as `mmnp generate` refuses it (inf would also be no JSON in the manifest)
        raise UsageError(f"--time-limit must be a positive number of deterministic seconds, at most 86400, "
                         f"got {time_limit}")
    if unit_costs and fmt != "orlib":
        raise UsageError(f"--unit-costs reads OR-Library set cover files; `mmnp import {fmt}` has no costs to drop")
    if FORMATS[fmt].shipped is not None:
        if files:
            raise UsageError(f"`mmnp import {fmt}` takes no files: it imports the shipped {fmt} set")
        if relabel is not None:
            raise UsageError(f"--relabel: `mmnp import {fmt}` ships its set as it is (the classic set already "
                             "renumbers the graphs whose numbering gives an answer away); drop --relabel")
        items, shard = FORMATS[fmt].shipped(), fmt
        names = [f"{i.file}:{i.task}" for i in items]
    else:
        if not files:
            raise UsageError(f"`mmnp import {fmt}` needs at least one file")
        known = load_optima(optima)
        items = [read_file(fmt, path, task, complement, unit_costs) for path in files]
        if relabel is not None:
            items = [relabelled(item, relabel) for item in items]
        used = set()
        for k, (path, item) in enumerate(zip(files, items)):
            if item.name != path.name and {item.name, path.name} <= set(known):
                raise DataError(f"--optima {optima}: {path.name!r} and {item.name!r} name one instance; keep one "
                                "of the two entries")
            name = item.name if item.name in known else path.name
            if name in known:
                used.add(name)
                objective, proven, source = known[name]
                items[k] = replace(item, optimum=objective, proven=proven, source=source, claimed_in=f"--optima {optima}")
        if set(known) - used:
            unused = sorted(set(known) - used)[0]
            raise DataError(f"--optima {optima}: {unused!r} names none of the imported files; an entry is named by "
                            f"the instance's name or its file name ({', '.join(i.name for i in items)[:200]})")
        if relabel is None and notice is not None:
            for line in filter(None, map(_numbering_notice, items)):
                notice(line)
        shard, names = "imported", [p.name for p in files]
    spec = ImportSpec(fmt, tuple(names), task, complement, images, optimal, check_image_size(image_size), time_limit,
                      relabel, unit_costs)
    return import_dataset(out, items, spec, shard, progress)
