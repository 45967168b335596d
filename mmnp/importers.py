"""Published instances in: TSPLIB, DIMACS and OR-Library files as mmnp datasets, and the
`classic` set of well-known instances with published optima shipped in mmnp/data/classic.

    mmnp import tsplib berlin52.tsp eil51.tsp --out D
    mmnp import dimacs myciel5.col --task graph_coloring --out D
    mmnp import orlib scpcyc06.txt f2_l-d_kp_20_878 --out D
    mmnp import classic --out D

The dataset has the layout `mmnp generate` writes (`manifest.json`, `<task>/<shard>.jsonl`,
pictures), so `mmnp eval` and `mmnp show` read it as any other. Each record's reference holds
the heuristic's and the exact solver's answers as usual, and, where a published optimum is
known, `reference["published"] = {"objective", "proven", "source", "name"}`; the exact
solver's `proven` is true when CP-SAT proved it or it reaches a proven published optimum.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from mmnp.core import Instance, content_hash
from mmnp.dataset import MANIFEST, atomic_write, build_manifest, instance_id
from mmnp.errors import DataError, UsageError
from mmnp.registry import get_task
from mmnp.task import DEFAULT_TIME_LIMIT

FORMATS = ("tsplib", "dimacs", "orlib", "classic")
GRAPH_TASKS = ("graph_coloring", "max_clique", "vertex_cover", "min_bisection", "longest_cycle")
CLASSIC_META = "classic.json"


@dataclass(frozen=True)
class Published:
    """One instance read from a file: its task, name and data, and its published optimum."""

    task: str
    name: str
    data: dict
    file: str
    optimum: float | None = None
    proven: bool = False
    source: str | None = None


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

    def to_json(self) -> dict:
        return {"import": self.format, "files": list(self.files), "task": self.task, "complement": self.complement,
                "images": self.images, "optimal": self.optimal, "image_size": self.image_size,
                "time_limit": self.time_limit}


# -- readers ------------------------------------------------------------------------------

def _numbers(tokens: list[str], where: str) -> list[int]:
    try:
        return [int(t) for t in tokens]
    except ValueError:
        bad = next(t for t in tokens if not re.fullmatch(r"[+-]?\d+", t))
        raise DataError(f"{where}: {bad!r} is not an integer; is this the right format?") from None


def read_tsplib(text: str, where: str) -> tuple[str, dict]:
    """A TSPLIB EUC_2D file -> (NAME, tsp data). Refuses other distance types: mmnp's tsp
    verifier measures TSPLIB EUC_2D lengths, so an ATT or GEO optimum would not apply."""
    header: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines) and lines[i].strip().upper() not in ("NODE_COORD_SECTION", "EOF"):
        key, sep, value = lines[i].partition(":")
        if sep:
            header[key.strip().upper()] = value.strip()
        elif lines[i].strip():
            raise DataError(f"{where}:{i + 1}: {lines[i].strip()[:40]!r} is not a 'KEY : value' header line; "
                            "is this a TSPLIB .tsp file?")
        i += 1
    kind = header.get("TYPE", "TSP").split()[0].upper()
    if kind != "TSP":
        raise DataError(f"{where}: TYPE {kind}: only symmetric TSP files (TYPE : TSP) can be imported")
    metric = header.get("EDGE_WEIGHT_TYPE", "").upper()
    if metric != "EUC_2D":
        raise DataError(f"{where}: EDGE_WEIGHT_TYPE {metric or 'missing'}: mmnp's tsp measures TSPLIB EUC_2D "
                        "(rounded Euclidean) lengths, so this file's optimum would not apply; "
                        "only EUC_2D files can be imported")
    if i >= len(lines):
        raise DataError(f"{where}: no NODE_COORD_SECTION")
    coords: list[list[int]] = []
    for j, line in enumerate(lines[i + 1:], start=i + 2):
        parts = line.split()
        if not parts or parts[0].upper() == "EOF":
            break
        if len(parts) != 3:
            raise DataError(f"{where}:{j}: expected 'id x y', got {line.strip()[:40]!r}")
        try:
            ident, x, y = int(parts[0]), float(parts[1]), float(parts[2])
        except ValueError:
            raise DataError(f"{where}:{j}: expected 'id x y' numbers, got {line.strip()[:40]!r}") from None
        if ident != len(coords) + 1:
            raise DataError(f"{where}:{j}: node {ident} out of order (expected {len(coords) + 1})")
        if not (x.is_integer() and y.is_integer()):
            raise DataError(f"{where}:{j}: coordinates ({parts[1]}, {parts[2]}) are not integers; mmnp's tsp "
                            "prompt states integer coordinates, so this file cannot be imported as it is")
        coords.append([int(x), int(y)])
    n = int(header.get("DIMENSION", len(coords)))
    if n != len(coords) or n < 3:
        raise DataError(f"{where}: DIMENSION {n} but {len(coords)} nodes read")
    low = min(min(c) for c in coords)
    if low < 0:  # the picture's grid starts at 0; translating keeps every distance
        coords = [[x - low, y - low] for x, y in coords]
    grid = max(max(c) for c in coords)
    return header.get("NAME", Path(where).stem), {"coords": coords, "grid": grid, "distance": "EUC_2D"}


def read_dimacs(text: str, where: str, complement: bool = False) -> tuple[int, list[list[int]]]:
    """A DIMACS graph (.col/.clq: `p edge n m`, `e u v`) -> (n, edges), edges normalised:
    0-based, smaller id first, no loops or repeats, sorted. `complement`: the complement graph
    (a clique file's maximum clique is its complement's largest independent set)."""
    n, edges = None, set()
    for j, line in enumerate(text.splitlines(), start=1):
        parts = line.split()
        if not parts or parts[0] == "c":
            continue
        if parts[0] == "p":
            if len(parts) < 3:
                raise DataError(f"{where}:{j}: expected 'p edge N M'")
            n = _numbers(parts[2:3], f"{where}:{j}")[0]
        elif parts[0] == "e":
            if n is None:
                raise DataError(f"{where}:{j}: an edge before the 'p edge N M' line")
            if len(parts) != 3:
                raise DataError(f"{where}:{j}: expected 'e U V'")
            u, v = _numbers(parts[1:], f"{where}:{j}")
            if not (1 <= u <= n and 1 <= v <= n):
                raise DataError(f"{where}:{j}: edge ({u}, {v}) names a vertex outside 1..{n}")
            if u != v:
                edges.add((min(u, v) - 1, max(u, v) - 1))
        elif parts[0] not in ("n", "x"):  # vertex weights and extensions carry nothing for mmnp
            raise DataError(f"{where}:{j}: unknown line {line.strip()[:40]!r}; is this a DIMACS graph file?")
    if n is None:
        raise DataError(f"{where}: no 'p edge N M' line; is this a DIMACS graph file?")
    if complement:
        edges = {(u, v) for u in range(n) for v in range(u + 1, n)} - edges
    return n, [list(e) for e in sorted(edges)]


def read_orlib(text: str, where: str, unit_costs: bool = False) -> tuple[str, dict]:
    """An OR-Library style file -> (task, data), the kind told by its shape:
    knapsack (`n capacity`, then n lines `value weight`), Steiner triple covering
    (`n m`, then m lines of 3 points) or unicost set cover (OR-Library scp: `m n`, n costs,
    then per row its column count and columns). Elements are the rows (triples).
    `unit_costs`: read a weighted scp file as its unicost variant (costs ignored)."""
    tokens = text.split()
    nums = _numbers(tokens, where)
    if len(nums) < 2:
        raise DataError(f"{where}: too short for an OR-Library file")
    a, b = nums[0], nums[1]
    if len(nums) == 2 + 2 * a:
        values, weights = nums[2::2], nums[3::2]
        if min(weights + values) < 1:
            raise DataError(f"{where}: knapsack weights and values must be positive integers")
        return "knapsack", {"capacity": b, "weights": weights, "values": values}
    if len(nums) == 2 + 3 * b:
        points, triples = a, [nums[2 + 3 * k: 5 + 3 * k] for k in range(b)]
        if any(not 1 <= p <= points for t in triples for p in t):
            raise DataError(f"{where}: a triple names a point outside 1..{points}")
        subsets = [[] for _ in range(points)]
        for row, triple in enumerate(triples, start=1):
            for p in sorted(set(triple)):
                subsets[p - 1].append(row)
        return "set_cover", {"universe": b, "subsets": subsets}
    rows, cols = a, b
    if len(nums) < 2 + cols:
        raise DataError(f"{where}: not a knapsack, Steiner triple or OR-Library set cover file (too few numbers)")
    if not unit_costs and any(c != 1 for c in nums[2:2 + cols]):
        raise DataError(f"{where}: weighted set cover (costs other than 1): mmnp's set_cover counts subsets, "
                        "so only unicost files can be imported")
    subsets = [[] for _ in range(cols)]
    k = 2 + cols
    for row in range(1, rows + 1):
        if k >= len(nums):
            raise DataError(f"{where}: ends at row {row} of {rows}")
        count, members = nums[k], nums[k + 1: k + 1 + nums[k]]
        if len(members) != count or any(not 1 <= c <= cols for c in members):
            raise DataError(f"{where}: row {row} lists columns outside 1..{cols} or is cut short")
        for c in sorted(set(members)):
            subsets[c - 1].append(row)
        k += 1 + count
    if k != len(nums):
        raise DataError(f"{where}: {len(nums) - k} numbers after the last row; is this an OR-Library scp file?")
    return "set_cover", {"universe": rows, "subsets": subsets}


def read_file(fmt: str, path: Path, task: str | None = None, complement: bool = False,
              unit_costs: bool = False) -> Published:
    """One file of format `fmt` as a Published instance (no optimum attached)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise DataError(f"{path}: cannot read it ({e.strerror})") from None
    where = str(path)
    if fmt == "tsplib":
        if task not in (None, "tsp"):
            raise UsageError(f"--task {task}: TSPLIB files import as tsp")
        name, data = read_tsplib(text, where)
        return Published("tsp", name, data, path.name)
    if fmt == "dimacs":
        if task not in GRAPH_TASKS:
            raise UsageError(f"{where}: a DIMACS graph serves several tasks; pass --task, one of {', '.join(GRAPH_TASKS)}")
        n, edges = read_dimacs(text, where, complement)
        if task == "longest_cycle" and not edges:
            raise DataError(f"{where}: a graph without edges has no cycle")
        return Published(task, path.stem + ("-complement" if complement else ""), {"n": n, "edges": edges}, path.name)
    if fmt == "orlib":
        kind, data = read_orlib(text, where, unit_costs)
        if task not in (None, kind):
            raise UsageError(f"--task {task}: {where} is a {kind} file")
        return Published(kind, path.stem, data, path.name)
    raise UsageError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")


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
        out.append(replace(item, name=entry["name"], optimum=entry["optimum"], proven=entry["proven"],
                           source=entry["source"]))
    return out


# -- datasets -----------------------------------------------------------------------------

def build_instance(item: Published, index: int, shard: str, optimal: bool = True,
                   time_limit: float = DEFAULT_TIME_LIMIT) -> Instance:
    """The instance record for `item`: prompts, heuristic and (when `optimal`) exact references,
    and the published optimum where known."""
    task = get_task(item.task)
    data = item.data
    heuristic = task._reference(data, task.solver.heuristic(data))
    reference: dict[str, Any] = {"heuristic": heuristic, "optimal": None}
    if optimal:
        solution, proven = task.solver.optimal(data, time_limit, heuristic["solution"])
        found = task._reference(data, solution)
        if task.is_better(heuristic["objective"], found["objective"]):
            found = heuristic
        if item.proven and item.optimum is not None and found["objective"] == item.optimum:
            proven = True  # the published proof covers this instance as stated
        reference["optimal"] = {**found, "proven": proven}
    if item.optimum is not None:
        reference["published"] = {"objective": item.optimum, "proven": item.proven, "source": item.source,
                                  "name": item.name}
    return Instance(id=instance_id(item.task, shard, index), task=item.task, difficulty=shard, seed=index,
                    params={"name": item.name, "file": item.file}, data=data, hash=content_hash(item.task, data),
                    prompt=task.generator.prompt(data), image_prompt=task.generator.IMAGE_PROMPT,
                    reference=reference)


def import_dataset(out: str | Path, items: list[Published], spec: ImportSpec, shard: str) -> dict:
    """Write `items` as a dataset in `out` (which must be new or empty); returns its manifest."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"--out {out} exists and is not an empty folder; choose a new one")
    by_task: dict[str, list[str]] = {}
    for item in items:
        lines = by_task.setdefault(item.task, [])
        inst = build_instance(item, len(lines), shard, spec.optimal, spec.time_limit)
        if spec.images:
            task = get_task(item.task)
            png, picture = task.picture(inst, spec.image_size)
            atomic_write(out / item.task / "images" / f"{inst.id}.png", png)
            inst = replace(inst, image=f"{item.task}/images/{inst.id}.png", picture=picture)
        lines.append(json.dumps(inst.to_record(), ensure_ascii=False, separators=(",", ":")))
    for task, lines in by_task.items():
        atomic_write(out / task / f"{shard}.jsonl", "\n".join(lines) + "\n")
    manifest = build_manifest(out, spec, [(task, shard) for task in by_task])
    atomic_write(out / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


def load_optima(path: Path | None) -> dict[str, dict]:
    """--optima FILE: {name: {"objective": x, "proven": bool, "source": "..."}}."""
    if path is None:
        return {}
    try:
        table = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise DataError(f"--optima {path}: not a readable JSON file ({e})") from None
    if not isinstance(table, dict) or not all(isinstance(v, dict) and "objective" in v for v in table.values()):
        raise DataError(f"--optima {path}: expected {{name: {{\"objective\": x, \"proven\": true, \"source\": \"...\"}}}}")
    return table


def import_files(fmt: str, files: list[Path], out: Path, task: str | None = None, complement: bool = False,
                 optima: Path | None = None, images: bool = True, optimal: bool = True,
                 image_size: int = 768, time_limit: float = DEFAULT_TIME_LIMIT) -> dict:
    """What `mmnp import` does: read, attach optima, write the dataset; returns the manifest."""
    if fmt == "classic":
        if files:
            raise UsageError("`mmnp import classic` takes no files: it imports the shipped classic set")
        items, shard = classic_instances(), "classic"
        names = [f"{i.file}:{i.task}" for i in items]
    else:
        if not files:
            raise UsageError(f"`mmnp import {fmt}` needs at least one file")
        known = load_optima(optima)
        items = []
        for path in files:
            item = read_file(fmt, path, task, complement)
            entry = known.get(item.name) or known.get(path.name)
            if entry is not None:
                item = replace(item, optimum=entry["objective"], proven=bool(entry.get("proven", False)),
                               source=entry.get("source"))
            items.append(item)
        shard, names = "imported", [p.name for p in files]
    spec = ImportSpec(fmt, tuple(names), task, complement, images, optimal, image_size, time_limit)
    return import_dataset(out, items, spec, shard)


def import_command(
    fmt: Annotated[str, typer.Argument(help="tsplib | dimacs | orlib | classic (the shipped set)")],
    out: Annotated[Path, typer.Option("--out", "-o", help="new dataset folder")],
    files: Annotated[Optional[list[Path]], typer.Argument(help="instance files (none for classic)")] = None,
    task: Annotated[Optional[str], typer.Option(help="task for DIMACS graphs: " + ", ".join(GRAPH_TASKS))] = None,
    complement: Annotated[bool, typer.Option(help="DIMACS: import the complement graph")] = False,
    optima: Annotated[Optional[Path], typer.Option(help='JSON {name: {"objective", "proven", "source"}}')] = None,
    images: Annotated[bool, typer.Option(help="render pictures")] = True,
    optimal: Annotated[bool, typer.Option(help="run the exact solver too")] = True,
    image_size: Annotated[int, typer.Option(help="picture size in pixels")] = 768,
    time_limit: Annotated[float, typer.Option(help="deterministic CP-SAT seconds per instance")] = DEFAULT_TIME_LIMIT,
) -> None:
    """Import published instances (TSPLIB, DIMACS, OR-Library, or the shipped classic set) as a dataset."""
    from mmnp.clikit import console, out_console, user_errors

    @user_errors
    def run() -> None:
        if fmt not in FORMATS:
            raise UsageError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
        manifest = import_files(fmt, files or [], out, task, complement, optima, images, optimal, image_size, time_limit)
        counts = ", ".join(f"{t}: {sum(c.values())}" for t, c in manifest["counts"].items())
        console.print(f"imported {manifest['total']} instance(s) into {out} ({counts})")
        out_console.print(manifest["benchmark_hash"])

    run()
