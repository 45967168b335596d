"""A dataset's identity, derived from its content: instance ids, the record line, the two hashes,
the manifest, and the one check every reader runs (dataset folder and export alike).

A record line is what `mmnp generate` writes, one JSON object whose last two members are the
solver-dependent ones:

    {"id":..,"task":..,"difficulty":..,"seed":..,"params":..,"instance":..,"hash":..,"prompt":..,
     "image":..,"picture":..,"image_prompt":..,"level":..  |  ,"reference":..,"hardness":..}
     `------------------------ the record part -----------'    `------ the reference part ------'

The line is split (as bytes, before the last top-level `,"reference":`) into the part a model
sees and the part it is scored against, and each part is hashed as it lies on disk:

- `benchmark_hash` = SHA-256 over every record, in (task, difficulty, index) order, of
  "id R PNG" with R the record part's SHA-256 (first 32 hex digits) and PNG the picture's
  SHA-256: the instance, its content hash, seed and parameters, both prompts, the picture record
  (size, layout) and the picture's bytes (the digest manifest.json's `records` lists, which each
  image is checked against whenever it is read).
- `references_hash` = SHA-256 over the same order of "id F" with F the reference part's
  SHA-256 (32 hex): heuristic, exact, planted and published references and the exact solver's
  work (`hardness`).

Every byte of every record and every picture is covered by exactly one of the two. The picture
record (size, version, graph layout) belongs to the benchmark hash with the picture: it is made
with it from the instance, the answer overlay draws on its layout, and results broken down by
picture kind read it, so an edited one would move scores between kinds unnoticed. Readers
re-derive both from the records they read (tens of ms for the canonical 1,020 instances, see
`benchmarks/bench_integrity.py`) and refuse a manifest whose claims differ; a release name is
given only when the derived hashes equal the ones `mmnp.releases` records for it.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Callable, Iterable

from mmnp.core import Instance
from mmnp.errors import DataError, UsageError

FORMAT_VERSION = 3  # 3: hashes derived from each line's record and reference parts; PNG digests in `records`, required
MANIFEST = "manifest.json"
SEED_STRIDE = 1_000_000  # instance i of a run with --seed s has seed s * SEED_STRIDE + i
NO_IMAGE = "-"
_NAME = re.compile(r"^[a-z0-9_]+$|^L[0-9]+$")  # task and difficulty names (ladder levels L1..): safe as path parts
_ID = re.compile(r"^(?P<task>[a-z0-9_]+)-(?P<difficulty>[a-z0-9_]+|L[0-9]+)-(?P<index>\d{4,})$")
_HEAD = re.compile(rb'^\{"id":"(?P<id>(?P<id_task>[a-z0-9_]+)-(?P<id_difficulty>[a-z0-9_]+|L[0-9]+)-(?P<index>\d{4,}))",'
                   rb'"task":"(?P<task>[^"\\]+)","difficulty":"(?P<difficulty>[^"\\]+)","seed":(?P<seed>\d+),')
_SPLIT = b',"reference":'
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_ROW = re.compile(r"^(?P<id>(?P<task>[a-z0-9_]+)-(?P<difficulty>[a-z0-9_]+|L[0-9]+)-\d{4,}) "
                  r"(?P<record>[0-9a-f]{32}) (?P<reference>[0-9a-f]{32}) (?P<png>[0-9a-f]{64}|-)$")


# -- instance ids -------------------------------------------------------------------------------

def instance_seed(base_seed: int, index: int) -> int:
    return base_seed * SEED_STRIDE + index


def instance_id(task: str, difficulty: str, index: int) -> str:
    """The id of instance `index` of a (task, difficulty) shard; `parse_instance_id` inverts it."""
    return f"{task}-{difficulty}-{index:04d}"


def parse_instance_id(value: str) -> tuple[str, str, int]:
    """(task, difficulty, index) of an id written by `instance_id`."""
    match = _ID.match(value)
    if match is None:
        raise UsageError(f"{value!r} is not an instance id; ids look like tsp-medium-0003 (task-difficulty-index)")
    return match["task"], match["difficulty"], int(match["index"])


def is_name(value: Any) -> bool:
    """A task or difficulty name: safe as a path part."""
    return isinstance(value, str) and bool(_NAME.match(value))


def image_name(id: str) -> str:
    """Where a record's picture lies in its dataset: fixed by its id, so a record cannot name another's."""
    task = parse_instance_id(id)[0]
    return f"{task}/images/{id}.png"


def ortools_version() -> str | None:
    """The installed OR-Tools (exact references depend on it); read without importing it."""
    try:
        return version("ortools")
    except PackageNotFoundError:
        return None


# -- record lines -------------------------------------------------------------------------------

def record_line(inst: Instance) -> bytes:
    """The one spelling of a record on disk (and what an export's rows are read back into)."""
    return json.dumps(inst.to_record(), ensure_ascii=False, separators=(",", ":")).encode()


@dataclass(frozen=True, slots=True)
class Digest:
    """One record as the check sees it: where it is, its id fields and its two parts' SHA-256s
    (the first 32 hex digits: what manifest.json lists and the dataset's hashes are made of)."""

    where: str
    id: str
    task: str
    difficulty: str
    index: int
    seed: int
    record: str
    reference: str

    def order(self) -> tuple[str, str, int]:
        return self.task, self.difficulty, self.index


def digest_line(line: bytes, where: str) -> Digest:
    """Split a record line into its two parts and hash them; refuses a line that is not a record
    as `mmnp generate` writes it (whatever --allow-modified says: its parts would be ambiguous)."""
    head = _HEAD.match(line)
    split = line.rfind(_SPLIT)
    if head is None or split < head.end():
        if not line.strip():
            raise DataError(f"{where}: a blank line; a shard holds one record a line and nothing else")
        try:
            json.loads(line)
        except (ValueError, UnicodeDecodeError) as e:
            raise DataError(f"{where}: not valid JSON ({getattr(e, 'msg', e)})") from None
        raise DataError(f"{where}: not an instance record as `mmnp generate` writes it "
                        "(id, task, difficulty and seed first, reference and hardness last)")
    if head["id_task"] != head["task"] or head["id_difficulty"] != head["difficulty"]:
        raise DataError(f"{where}: record {head['id'].decode()} says task {head['task'].decode()!r}, difficulty "
                        f"{head['difficulty'].decode()!r}: its id names another task or difficulty")
    id, task, difficulty, index = head["id"].decode(), head["id_task"].decode(), head["id_difficulty"].decode(), \
        int(head["index"])
    return Digest(where, id, task, difficulty, index, int(head["seed"]),
                  hashlib.sha256(line[:split]).hexdigest()[:32], hashlib.sha256(line[split:]).hexdigest()[:32])


def parse_line(line: bytes, digest: Digest) -> Instance:
    """The Instance of a line `digest_line` accepted. Each part is parsed alone, so a member
    repeated across the split (the later one would win in a whole-line parse) cannot show a model
    something the record part's hash does not cover."""
    split = line.rfind(_SPLIT)
    try:
        record = json.loads(line[:split] + b"}")
        tail = json.loads(b"{" + line[split + 1:])
    except (ValueError, UnicodeDecodeError) as e:
        raise DataError(f"{digest.where}: not valid JSON ({getattr(e, 'msg', e)})") from None
    if not isinstance(tail, dict) or set(tail) != {"reference", "hardness"} or "reference" in record \
            or "hardness" in record:
        raise DataError(f"{digest.where}: not an instance record as `mmnp generate` writes it "
                        "(reference and hardness must be its last members, once each)")
    if [record.get(k) for k in ("id", "task", "difficulty", "seed")] != \
            [digest.id, digest.task, digest.difficulty, digest.seed]:
        raise DataError(f"{digest.where}: record {digest.id} names its id, task, difficulty or seed twice")
    try:
        inst = Instance.from_record({**record, **tail})
    except ValueError as e:
        raise DataError(f"{digest.where}: {e}") from None
    if inst.image is not None and inst.image != image_name(inst.id):
        raise DataError(f"{digest.where}: record {inst.id} names the picture {inst.image!r}; its own is "
                        f"{image_name(inst.id)!r} (pictures are found by id, never by another record's path)")
    return inst


def lines_of(raw: bytes, file: Path | str, *, lenient: bool = False) -> list[tuple[bytes, Digest]]:
    """A shard's lines with their digests; its bytes must be record lines each ending in a newline.
    `lenient` (--allow-modified) also takes a record a JSON tool rewrote (other spacing or member
    order): it is used, and hashed, in the spelling `mmnp generate` writes."""
    if raw and not raw.endswith(b"\n") and not lenient:
        raise DataError(f"{file}: its last line has no newline (cut short, or edited by hand)")
    lines = raw.split(b"\n")
    out = []
    for number, line in enumerate(lines[:-1] if not lines[-1] else lines, 1):
        where = f"{file}:{number}"
        try:
            out.append((line, digest_line(line, where)))
        except DataError:
            if not lenient:
                raise
            line = _respelled(line, where)
            out.append((line, digest_line(line, where)))
    return out


def _respelled(line: bytes, where: str) -> bytes:
    """A record line that is valid JSON, in generate's spelling (a repeated member: the last one)."""
    try:
        record = json.loads(line)
    except (ValueError, UnicodeDecodeError) as e:
        if not line.strip():
            raise DataError(f"{where}: a blank line; a shard holds one record a line and nothing else") from None
        raise DataError(f"{where}: not valid JSON ({getattr(e, 'msg', e)})") from None
    if not isinstance(record, dict):
        raise DataError(f"{where}: not an instance record (a JSON object)")
    try:
        return record_line(Instance.from_record(record))
    except ValueError as e:
        raise DataError(f"{where}: {e}") from None


# -- the hashes ---------------------------------------------------------------------------------

def derive_hashes(digests: Iterable[Digest], png: Callable[[Digest], str]) -> tuple[str, str]:
    """(benchmark_hash, references_hash) of records, in (task, difficulty, index) order whatever
    order they were read in, with `png(digest)` the SHA-256 of its picture (or "-")."""
    ordered = sorted(digests, key=Digest.order)
    bench = hashlib.sha256("".join(f"{d.id} {d.record} {png(d)}\n" for d in ordered).encode())
    refs = hashlib.sha256("".join(f"{d.id} {d.reference}\n" for d in ordered).encode())
    return bench.hexdigest(), refs.hexdigest()


def row(digest: Digest, png: str) -> str:
    """manifest.json's line for a record: id, record-part and reference-part digests, PNG SHA-256 (or -).
    The manifest's two hashes are derived from these lines alone (`derive_hashes`)."""
    return f"{digest.id} {digest.record} {digest.reference} {png}"


# -- the manifest -------------------------------------------------------------------------------

def task_versions(names: Iterable[str]) -> dict[str, Any]:
    from mmnp.registry import get_task

    return {name: get_task(name).version for name in names}


def build_manifest(out: Path, spec: Any, shards: list[tuple[str, str]], *,
                   ortools: str | None | bool = True, versions: dict[str, Any] | None = None) -> dict:
    """The manifest of the shards written in `out` (their PNGs included), from the files
    themselves. `spec.to_json()` becomes its `arguments`; `ortools` is the OR-Tools version the
    exact references were made with (True: the installed one, when `spec.optimal`)."""
    from mmnp import __version__
    from mmnp.task import PICTURE_VERSION

    counts: dict[str, dict[str, int]] = {}
    records: dict[str, list[str]] = {}
    digests, pngs = [], {}
    for task, difficulty in shards:
        rel = f"{task}/{difficulty}.jsonl"
        rows = []
        for line, digest in lines_of((out / rel).read_bytes(), out / rel):
            png = NO_IMAGE
            if parse_line(line, digest).image is not None:
                png = hashlib.sha256((out / image_name(digest.id)).read_bytes()).hexdigest()
            pngs[digest.id] = png
            digests.append(digest)
            rows.append(row(digest, png))
        records[rel] = rows
        counts.setdefault(task, {})[difficulty] = len(rows)
    bench, refs = derive_hashes(digests, lambda d: pngs[d.id])
    if ortools is True:
        ortools = ortools_version() if spec.optimal else None
    return {
        "format_version": FORMAT_VERSION,
        "mmnp_version": __version__,
        "ortools_version": ortools or None,
        "arguments": spec.to_json(),
        "task_versions": versions if versions is not None else task_versions(counts),
        "picture_version": PICTURE_VERSION,
        "counts": counts,
        "total": len(digests),
        "benchmark_hash": bench,
        "references_hash": refs,
        "records": records,
    }



def validate_manifest(manifest: Any, where: str) -> dict:
    """`manifest` when it has every part a format-3 manifest has (a missing `records` block is
    refused here, never skipped), else a DataError naming `where`."""
    if isinstance(manifest, dict) and manifest.get("format_version") in (1, 2):
        raise DataError(f"{where}: written by an older mmnp (manifest format {manifest['format_version']}, whose hashes "
                        "are not derived from the content); rebuild the dataset: rerun the `mmnp generate` command "
                        "that made it, in the same folder")
    number = manifest.get("format_version") if isinstance(manifest, dict) else None
    if type(number) is int and number > FORMAT_VERSION:
        raise DataError(f"{where}: manifest format {number}, from a newer mmnp (this mmnp reads format "
                        f"{FORMAT_VERSION}); upgrade mmnp to read it, or make the dataset again with this one: rerun "
                        "the `mmnp generate` command that made it, in the same folder")
    if number != FORMAT_VERSION:
        raise DataError(f"{where}: not an mmnp dataset manifest (its format_version is {number!r}, this mmnp reads "
                        f"format {FORMAT_VERSION}); is it a dataset written by `mmnp generate`?")
    for key, kind in (("arguments", dict), ("counts", dict), ("records", dict), ("task_versions", dict),
                      ("total", int), ("benchmark_hash", str), ("references_hash", str)):
        if not isinstance(manifest.get(key), kind):
            raise DataError(f"{where}: its {key!r} is missing or not a {kind.__name__}; "
                            "the manifest was edited or damaged: rerun the `mmnp generate` command that made it")
    for key in ("benchmark_hash", "references_hash"):
        if not _HEX64.match(manifest[key]):
            raise DataError(f"{where}: its {key} is not a SHA-256 (64 hex digits)")
    for task, by_difficulty in manifest["counts"].items():
        if not is_name(task) or not isinstance(by_difficulty, dict) \
                or not all(is_name(d) and type(n) is int and n >= 0 for d, n in by_difficulty.items()):
            raise DataError(f"{where}: counts entry {task!r} is not a task name with per-difficulty counts")
        for difficulty in by_difficulty:
            rows = manifest["records"].get(f"{task}/{difficulty}.jsonl")
            if not isinstance(rows, list):
                raise DataError(f"{where}: its records block lacks {task}/{difficulty}.jsonl; every record's "
                                "digests must be listed")
            for text in rows:
                match = _ROW.match(text) if isinstance(text, str) else None
                if match is None:
                    raise DataError(f"{where}: a line of its records block is not 'id record reference png': {text!r}")
                if (match["task"], match["difficulty"]) != (task, difficulty):
                    raise DataError(f"{where}: its records block lists {match['id']!r} under {task}/{difficulty}.jsonl")
    if set(manifest["records"]) != {f"{t}/{d}.jsonl" for t, ds in manifest["counts"].items() for d in ds}:
        raise DataError(f"{where}: its records block lists other shards than its counts")
    return manifest


def check_content(manifest: dict, shards: dict[tuple[str, str], list[Digest] | None],
                  shard_where: Callable[[str, str], str], actual_png: Callable[[Digest], str] | None = None,
                  manifest_where: str = MANIFEST) -> tuple[list[str], tuple[str, str]]:
    """The one check of what a reader read against what its manifest claims, for dataset folders
    and exports alike. `shards` maps each (task, difficulty) the manifest lists to its records'
    digests (None: the shard is missing); `actual_png(digest)` is a record's PNG SHA-256 when the
    reader has the bytes at hand (an export, --allow-modified), else the manifest's digest stands
    and the picture is checked against it when read.

    Raises DataError for what no flag makes usable (an id twice, a record in another task's or
    difficulty's shard); returns the differences from the claims (empty: the dataset is what its
    manifest says) and (benchmark_hash, references_hash) derived from the content; a difference in
    the manifest itself is named at `manifest_where` (its path)."""
    _refuse_misplaced(shards)
    problems: list[str] = []
    arguments = manifest["arguments"]
    generated = {"tasks", "difficulties", "count", "seed"} <= set(arguments)
    if generated and {(t, d) for t in arguments["tasks"] for d in arguments["difficulties"]} != set(shards):
        problems.append(f"{manifest_where}: its arguments name other shards than its counts")
    if set(manifest["task_versions"]) != {task for task, _ in shards}:
        problems.append(f"{manifest_where}: its task_versions name other tasks than its counts")
    claimed_png: dict[str, str] = {}
    for (task, difficulty), found in shards.items():
        rows = {}
        for text in manifest["records"][f"{task}/{difficulty}.jsonl"]:  # valid: `validate_manifest`
            id, record, reference, png = text.split(" ")
            rows[id] = (record, reference, png)
            claimed_png[id] = png
        problems += _shard_problems(manifest, (task, difficulty), rows, found, shard_where(task, difficulty),
                                    actual_png, manifest_where)
    digests = [d for found in shards.values() for d in found or ()]
    png = actual_png or (lambda d: claimed_png.get(d.id, NO_IMAGE))
    bench, refs = derive_hashes(digests, png)
    if manifest["total"] != len(digests) and not any(shard is None for shard in shards.values()):
        problems.append(f"{manifest_where}: its total is {manifest['total']}, the shards hold {len(digests)}")
    for name, derived in (("benchmark_hash", bench), ("references_hash", refs)):
        if manifest[name] != derived and not problems:  # a record difference explains it better
            problems.append(f"{manifest_where}: its {name} {manifest[name][:12]}... is not the content's {derived[:12]}... "
                            "(the manifest was edited)")
    return problems, (bench, refs)


def _refuse_misplaced(shards: dict[tuple[str, str], list[Digest] | None]) -> None:
    """What no flag makes usable: a record in another task's or difficulty's shard, an id twice."""
    seen: dict[str, str] = {}
    for (task, difficulty), found in shards.items():
        for digest in found or ():
            if (digest.task, digest.difficulty) != (task, difficulty):
                raise DataError(f"{digest.where}: record {digest.id} belongs to {digest.task}/{digest.difficulty}, "
                                f"not to the {task}/{difficulty} shard (a record was moved)")
            if digest.id in seen:
                raise DataError(f"{digest.where}: {digest.id} is there a second time (first at {seen[digest.id]}); "
                                "ids must be unique")
            seen[digest.id] = digest.where


def _shard_problems(manifest: dict, shard: tuple[str, str], rows: dict[str, tuple[str, str, str]],
                    found: list[Digest] | None, where: str, actual_png: Callable[[Digest], str] | None,
                    manifest_where: str) -> list[str]:
    """How one shard's records (None: the file is missing) differ from the manifest's `rows`
    (id -> record, reference and PNG digests) and counts (named at `manifest_where`: a count is
    the manifest's claim, and an edited one is the manifest's fault)."""
    if found is None:
        return [f"{where}: missing ({MANIFEST} lists it)"]
    arguments = manifest["arguments"]
    generated = {"tasks", "difficulties", "count", "seed"} <= set(arguments)
    problems = []
    rows = dict(rows)
    for digest in found:
        expected = rows.pop(digest.id, None)
        if expected is None:
            problems.append(f"{digest.where}: {digest.id} is not in {MANIFEST} (a record was added or renamed)")
        elif digest.reference != expected[1]:
            problems.append(f"{digest.where}: the reference of {digest.id} differs from the one generated")
        elif digest.record != expected[0]:
            problems.append(f"{digest.where}: record {digest.id} differs from the one generated "
                            "(its instance, prompts or picture record)")
        elif actual_png is not None and actual_png(digest) != expected[2]:
            problems.append(f"{digest.where}: the picture of {digest.id} differs from the one generated")
        if generated and digest.seed != instance_seed(arguments["seed"], digest.index):
            problems.append(f"{digest.where}: {digest.id} has seed {digest.seed}; {MANIFEST}'s arguments "
                            f"(seed {arguments['seed']}) give {instance_seed(arguments['seed'], digest.index)}")
    for missing in rows:
        problems.append(f"{where}: {missing} is missing (a record was removed)")
    task, difficulty = shard
    claimed = manifest["counts"][task][difficulty]
    said = f"{manifest_where}: its counts say {claimed} {task} {difficulty} instances"
    if len(found) != claimed:
        problems.append(f"{said}, {where} holds {len(found)}")
    elif generated and claimed != arguments["count"]:
        problems.append(f"{said}, its arguments say --count {arguments['count']}")
    return problems
