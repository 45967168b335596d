"""Datasets on disk, read: the integrity check every reader goes through, and the one instance
selection evaluation and training share.

    OUT/manifest.json                 versions, arguments, counts, the two hashes, one digest line per record
    OUT/<task>/<difficulty>.jsonl     one instance record a line
    OUT/<task>/images/<id>.png        its picture

`open_dataset` re-derives the dataset's identity from its records (`mmnp.integrity`) and refuses
a dataset whose manifest claims something else, naming the file, the line and what differs,
unless the caller allows modified data on purpose: then the identity says `modified: true` and
carries the hashes of what is actually there (pictures included). Generation lives in
`mmnp.generation`, the hashes in `mmnp.integrity`, the releases in `mmnp.releases`, file
utilities in `mmnp.files`; their public names are importable from here too.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Iterable, Iterator

from mmnp.core import Instance, is_objective
from mmnp.errors import DataError, UsageError
from mmnp.files import atomic_write
from mmnp.generation import IN_PROGRESS, LOG, GenerateSpec, audit_dataset, generate_dataset, merge_parts, parse_part
from mmnp.integrity import (
    FORMAT_VERSION,
    MANIFEST,
    NO_IMAGE,
    SEED_STRIDE,
    Digest,
    build_manifest,
    check_content,
    derive_hashes,
    digest_line,
    image_name,
    instance_id,
    instance_seed,
    lines_of,
    parse_instance_id,
    parse_line,
    record_line,
    validate_manifest,
)
from mmnp.registry import get_task, resolve_tasks
from mmnp.releases import PRESETS, preset_spec, release_of

_HUB = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


class UnknownInstanceError(UsageError, KeyError):
    """An id that is not in the dataset (a KeyError too, for library callers)."""

    def __str__(self) -> str:
        return str(self.args[0])


# -- reading and checking -----------------------------------------------------------------------

def read_manifest(path: str | Path) -> dict:
    """A dataset folder's manifest, refused unless it is a whole format-3 mmnp manifest."""
    path = Path(path)
    file = path / MANIFEST
    if not path.is_dir():
        raise DataError(f"{path} is not a folder; --data takes a dataset folder written by `mmnp generate`")
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        hint = (" (an unfinished generation, or a --shard part, is there: rerun the same `mmnp generate` command "
                "to finish it; parts: `mmnp merge` them)" if (path / IN_PROGRESS).exists() else "")
        raise DataError(f"{path} has no readable {MANIFEST}; "
                        f"is it a dataset written by `mmnp generate`?{hint}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(f"{file}: cannot be read ({e})") from None
    try:
        manifest = json.loads(text)
    except json.JSONDecodeError as e:
        raise DataError(f"{file}:{e.lineno}: not valid JSON ({e.msg}, column {e.colno}): the manifest is damaged, "
                        "and as it alone says which files are mmnp's, nothing repairs it in place: restore it from a "
                        "copy, or make the dataset again in an empty folder (the `mmnp generate` command that made it, "
                        "with another --out)") from None
    return validate_manifest(manifest, str(file))


def image_path(root: str | Path, image: str) -> Path:
    """Where a record's `image` lies; refused unless it is a relative path inside the dataset folder."""
    root = Path(root)
    rel = PurePosixPath(image)
    if rel.is_absolute() or ".." in rel.parts or "\\" in image or not rel.parts or ":" in rel.parts[0]:
        raise DataError(f"image path {image!r} is not a path inside the dataset folder {root}; refusing to read it")
    path = root / rel
    resolved, base = path.resolve(), root.resolve()
    if not resolved.is_relative_to(base):
        raise DataError(f"image path {image!r} leads outside the dataset folder {root} (through a link); "
                        "refusing to read it")
    return path


def shard_order(manifest: dict) -> list[tuple[str, str]]:
    """The shards in generation order (a generated dataset's arguments), else as the counts list them."""
    arguments = manifest["arguments"]
    listed = [(t, d) for t, ds in manifest["counts"].items() for d in ds]
    if {"tasks", "difficulties"} <= set(arguments):
        ordered = [(t, d) for t in arguments["tasks"] for d in arguments["difficulties"]]
        if set(ordered) == set(listed):
            return ordered
    return listed


@dataclass
class Dataset:
    """A dataset folder checked against its manifest, with its identity derived from its content.

    `problems` lists every difference from the manifest's claims (empty for an intact dataset;
    only non-empty when opened with `allow_modified`). `identity()` is what results.json records."""

    path: Path
    manifest: dict
    allow_modified: bool = False
    problems: list[str] = field(default_factory=list)
    hashes: tuple[str, str] = ("", "")
    _lines: dict[tuple[str, str], list[tuple[bytes, Digest]]] = field(default_factory=dict, repr=False)
    _pngs: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def modified(self) -> bool:
        return bool(self.problems)

    def shards(self) -> list[tuple[str, str]]:
        return [shard for shard in shard_order(self.manifest) if shard in self._lines]

    def instances(self, tasks: Iterable[str] | None = None, difficulties: Iterable[str] | None = None,
                  ) -> Iterator[Instance]:
        """Instances shard by shard in generation order, filtered by task and difficulty."""
        tasks, difficulties = (set(tasks) if tasks else None), (set(difficulties) if difficulties else None)
        for task, difficulty in self.shards():
            if (tasks and task not in tasks) or (difficulties and difficulty not in difficulties):
                continue
            for line, digest in self._lines[task, difficulty]:
                yield self._instance(line, digest)

    def _instance(self, line: bytes, digest: Digest) -> Instance:
        inst = parse_line(line, digest)
        if self.allow_modified:
            _check_edited(inst, digest.where)
        elif problem := get_task(inst.task).reference_mismatch(inst):  # the hashes were recomputed over an edit
            raise DataError(f"{digest.where}: {inst.id}: {problem}: the record was edited and its manifest's hashes "
                            f"recomputed to match; {_rebuild(self.manifest, self.path)}")
        elif problem := _claim_mismatch(inst, self.manifest["arguments"]):  # what no hash covers: the arguments
            raise DataError(f"{self.path / MANIFEST}: its arguments say {problem}: the manifest was edited; make the "
                            "dataset again: the `mmnp generate` command that made it, with --overwrite")
        if not self.allow_modified and (inst.image is None) != (self._pngs.get(inst.id, NO_IMAGE) == NO_IMAGE):
            raise DataError(f"{digest.where}: record {inst.id} {'names' if inst.image else 'has no'} picture, "
                            f"{MANIFEST} lists {'none' if inst.image else 'one'}")
        return inst

    def image(self, inst: Instance) -> bytes:
        """The instance's PNG, read from inside the folder and checked against its digest."""
        if inst.image is None:
            raise DataError(f"{self.path}: {inst.id} has no picture (the dataset was generated with --no-images)")
        return self.picture(inst.id)

    def picture(self, id: str) -> bytes:
        """Instance `id`'s PNG file, read from inside the folder and checked against the digest the
        manifest lists."""
        path = image_path(self.path, image_name(id))
        try:
            png = path.read_bytes()
        except OSError as e:
            raise DataError(f"{path}: cannot read the image of {id} ({e.strerror or e}); "
                            f"{_remedy(self.manifest, self.path)}") from None
        if hashlib.sha256(png).hexdigest() != self._pngs.get(id):
            raise DataError(f"{path}: the image of {id} differs from the one the dataset lists; "
                            f"{_remedy(self.manifest, self.path)}")
        return png

    def record_lines(self) -> dict[str, bytes]:
        """Each record's line as it lies on disk, by id (what an audit compares byte for byte)."""
        return {digest.id: line for shard in self.shards() for line, digest in self._lines[shard]}

    def find(self, id: str) -> Instance:
        """The instance with `id`."""
        for task, difficulty in self.shards():
            for line, digest in self._lines[task, difficulty]:
                if digest.id == id:
                    return self._instance(line, digest)
        example = instance_id(*self.shards()[0], 0) if self.shards() else "tsp-easy-0000"
        raise UnknownInstanceError(f"no instance {id!r} in {self.path}; ids look like {example}")

    def identity(self) -> dict:
        """{path, benchmark_hash, references_hash, preset, modified, content_hash} for results.json:
        the hashes derived from the content, the release name only when they are the release's."""
        bench, refs = self.hashes
        return {"path": str(self.path.absolute()), "benchmark_hash": bench, "references_hash": refs,
                "preset": release_of(bench, refs), "modified": self.modified, "content_hash": bench}


def open_dataset(path: str | Path, *, allow_modified: bool = False) -> Dataset:
    """Read a dataset folder and check it: every record's digests, ids, shards and the manifest's
    claims (the hashes among them) against what the records derive.

    A difference is refused with a DataError naming the file, the line and what differs, unless
    `allow_modified`: then the dataset opens with its `problems` listed and its pictures' actual
    digests in its hashes, so `identity()` marks it modified with the hashes of what is there.
    A malformed record, an id twice or a record in another shard is refused either way."""
    path = Path(path)
    manifest = read_manifest(path)
    dataset = Dataset(path, manifest, allow_modified)
    shards: dict[tuple[str, str], list[Digest] | None] = {}
    for task, difficulty in shard_order(manifest):
        file = path / task / f"{difficulty}.jsonl"
        try:
            raw = file.read_bytes()
        except FileNotFoundError:
            shards[task, difficulty] = None
            continue
        except OSError as e:
            raise DataError(f"{file}: cannot be read ({e.strerror or e})") from None
        try:
            dataset._lines[task, difficulty] = lines_of(raw, file, lenient=allow_modified)
        except DataError as e:  # a damaged line no flag makes usable: repairing is the one way on
            raise DataError(f"{e}; {_rebuild(manifest, path)}") from None
        shards[task, difficulty] = [digest for _, digest in dataset._lines[task, difficulty]]
    for rel, rows in manifest["records"].items():
        dataset._pngs.update((text.split(" ")[0], text.split(" ")[3]) for text in rows)
    actual = _actual_pictures(dataset) if allow_modified else None
    problems, dataset.hashes = check_content(manifest, shards, lambda t, d: str(path / t / f"{d}.jsonl"),
                                             actual.__getitem__ if actual is not None else None, str(path / MANIFEST))
    if problems and not allow_modified:
        more = f" (and {len(problems) - 1} more differences)" if len(problems) > 1 else ""
        raise DataError(f"{problems[0]}{more}. The dataset differs from its manifest: "
                        f"{_remedy(manifest, path, _arguments_edited(manifest, shards))}")
    dataset.problems = problems
    if actual is not None:
        dataset._pngs.update((d.id, png) for d, png in actual.items())
    return dataset


def _arguments_edited(manifest: dict, shards: dict[tuple[str, str], list[Digest] | None]) -> bool:
    """Whether the manifest's arguments are what its content contradicts: its counts and its shards
    agree with each other but not with the arguments' shards, --count or --seed (an edit of the
    arguments, which the command that made the dataset no longer matches)."""
    arguments = manifest["arguments"]
    if not {"tasks", "difficulties", "count", "seed"} <= set(arguments) or None in shards.values():
        return False  # imported, or a shard missing: not an edit of the arguments alone
    held = {pair: len(digests) for pair, digests in shards.items()}
    claimed = {(task, difficulty): n for task, per in manifest["counts"].items() for difficulty, n in per.items()}
    if claimed != held:
        return False  # the counts or the shards are what differs: a plain rerun repairs them
    named = {(task, difficulty) for task in arguments["tasks"] for difficulty in arguments["difficulties"]}
    digests = [d for shard in shards.values() for d in shard]
    return set(held) != named or any(n != arguments["count"] for n in held.values()) or bool(digests) and all(
        d.seed != instance_seed(arguments["seed"], d.index) for d in digests)


def _remedy(manifest: dict, path: Path, arguments_differ: bool = False) -> str:
    """What to do about a dataset that differs from its manifest: make it again the way it was
    made, or use the edit on purpose where a command takes the flag."""
    return (f"{_rebuild(manifest, path, arguments_differ)}, or, with `mmnp eval`, `verify` or `show`, pass "
            "--allow-modified to use the edited data on purpose (results are then marked modified)")


def _rebuild(manifest: dict, path: Path, arguments_differ: bool = False) -> str:
    """How a damaged dataset is made again the way it was made: generate repairs its folder in
    place (only the damaged instances), import writes only a new folder. Where the manifest's own
    arguments are what the content contradicts, the command that made it no longer matches them
    and takes the folder for another dataset: it is made again with --overwrite."""
    if "import" in manifest["arguments"]:
        return f"move {path} aside, then rerun the `mmnp import` command that made it (it writes only a new folder)"
    if arguments_differ:
        return ("rerun the `mmnp generate` command that made it with --overwrite (its manifest's arguments are "
                "what differs, so without it the command takes the folder for another dataset)")
    return "rerun the `mmnp generate` command that made it to repair it"


def _claim_mismatch(inst: Instance, arguments: dict) -> str | None:
    """What of a generated dataset's arguments a record contradicts (an exact reference exactly when
    `optimal`, a picture exactly when `images`), or None: `mmnp audit` makes instances again by them."""
    if "import" in arguments:
        return None
    has = {"optimal": inst.reference.get("optimal") is not None, "images": inst.image is not None}
    for name, what in (("optimal", "an exact reference"), ("images", "a picture")):
        if name in arguments and has[name] != arguments[name]:
            return f"{name}={arguments[name]}, and {inst.id} {'has' if has[name] else 'lacks'} {what}"
    return None


def _check_edited(inst: Instance, where: str) -> None:
    """An edited record (--allow-modified) is used as edited (its results marked modified) only
    while mmnp can score against it: every recorded objective a number, and the task's check runs
    on its data and its recorded solutions. Else one line here, not a traceback mid-run."""
    task = get_task(inst.task)
    reference = inst.reference if isinstance(inst.reference, dict) else {}
    fix = "undo the edit, or keep the record's shape as `mmnp generate` writes it"
    for source in ("heuristic", "planted", "optimal", "published"):
        made = reference.get(source)
        if made is None and source != "heuristic":
            continue
        if not isinstance(made, dict) or not is_objective(made.get("objective")):
            raise DataError(f"{where}: {inst.id}: its {source} reference has no objective (a number >= 0); {fix}")
        if source == "heuristic" and not made["objective"] > 0:  # the Quality Ratio's reference: 0 scores 0 silently
            raise DataError(f"{where}: {inst.id}: its heuristic reference objective is 0, which no Quality Ratio can be "
                            f"taken against (mmnp never makes one); {fix}")
        if source == "published":
            continue
        try:
            task.verifier.check(inst.data, made["solution"])
        except Exception as e:  # noqa: BLE001 - edited data: any shape may come
            raise DataError(f"{where}: {inst.id}: its instance or its {source} reference is malformed "
                            f"({type(e).__name__}); {fix}") from None


def _actual_pictures(dataset: Dataset) -> dict[Digest, str]:
    """{record: SHA-256 of the picture file there, "-" for a record without one, "missing"}."""
    pictures = {}
    for task, difficulty in dataset._lines:
        for line, digest in dataset._lines[task, difficulty]:
            try:
                inst = parse_line(line, digest)
            except DataError as e:  # kept by --allow-modified, yet no instance: repairing is the one way on
                raise DataError(f"{e}; {_rebuild(dataset.manifest, dataset.path)}") from None
            if inst.image is None:
                pictures[digest] = NO_IMAGE
                continue
            try:
                pictures[digest] = hashlib.sha256(image_path(dataset.path, image_name(digest.id)).read_bytes()).hexdigest()
            except OSError:
                pictures[digest] = "missing"
    return pictures


def dataset_identity(path: str | Path, *, allow_modified: bool = False) -> dict:
    """The dataset block of results.json: {path, benchmark_hash, references_hash, preset,
    modified, content_hash}; refuses a modified dataset unless `allow_modified`."""
    return open_dataset(path, allow_modified=allow_modified).identity()


def load_dataset(path: str | Path, tasks: list[str] | None = None, difficulties: list[str] | None = None,
                 *, allow_modified: bool = False) -> Iterator[Instance]:
    """Instances of a generated dataset, shard by shard in generation order, after checking
    the dataset against its manifest (the check runs at this call, not at the first item)."""
    return open_dataset(path, allow_modified=allow_modified).instances(tasks, difficulties)


def find_instance(path: str | Path, instance_id: str, *, allow_modified: bool = False) -> Instance:
    """The instance with `instance_id` in a checked dataset."""
    return open_dataset(path, allow_modified=allow_modified).find(instance_id)


def preset_of(manifest: dict) -> str | None:
    """The release a manifest names by its hashes (its content's, once `open_dataset` checked it)."""
    return release_of(manifest.get("benchmark_hash", ""), manifest.get("references_hash", ""))


# -- where --data points ------------------------------------------------------------------------

def locate_data(data: str | Path) -> tuple[str, str]:
    """("folder" | "export" | "hub", where) for a --data value, or one line saying what it is not.
    The Hub is asked only for an explicit `hf://owner/name`, or for an `owner/name` that is no
    local path when the hf extra is installed."""
    text = str(data)
    if text.startswith(("hf://", "hf:/")):
        repo = text.split(":", 1)[1].lstrip("/")
        if not _HUB.match(repo):
            raise UsageError(f"--data {text}: a Hub dataset is hf://owner/name")
        return "hub", repo
    path = Path(text)
    if path.is_dir():
        if (path / MANIFEST).exists():
            return "folder", text
        if (path / IN_PROGRESS).exists():
            raise DataError(f"{path} holds an unfinished generation (or a --shard part); rerun its `mmnp generate` "
                            "command to finish it (parts: `mmnp merge`)")
        if any(path.rglob("*.parquet")):
            return "export", text
        raise DataError(f"{path} is neither a dataset (no {MANIFEST}) nor an export (no parquet files); --data takes "
                        "a folder from `mmnp generate` or `mmnp export`")
    if path.is_file():
        if path.suffix == ".parquet":
            return "export", text
        raise DataError(f"--data {path} is a file; it takes a folder from `mmnp generate` or `mmnp export` "
                        "(or a Hub dataset, hf://owner/name)")
    if _HUB.match(text) and importlib.util.find_spec("huggingface_hub") is not None:
        return "hub", text
    raise DataError(f"--data {text}: no such folder; give a folder from `mmnp generate` or `mmnp export`, "
                    "or a Hub dataset as hf://owner/name")


# -- one instance selection for evaluation and training -----------------------------------------

@dataclass
class Selection:
    """The instances a run uses, where they came from, and how to get their pictures."""

    instances: list[Instance]
    identity: dict  # results.json's dataset block
    dataset: Any = None  # a Dataset or an Export: what serves the pictures
    image_size: int = 768

    def image(self, inst: Instance) -> bytes:
        """The instance's PNG: the dataset's (checked) file, or rendered when there is none."""
        if self.dataset is not None and inst.image:
            return self.dataset.image(inst)
        return draw(inst, self.image_size, edited=getattr(self.dataset, "allow_modified", False),
                    source=getattr(self.dataset, "path", None), whole=True)


def draw(inst: Instance, size: int, answer: str | None = None, *, edited: bool = False,
         source: str | Path | None = None, whole: bool = False) -> bytes:
    """`Task.render`, for data that may have been edited on purpose (`edited`: opened with
    --allow-modified, whose check runs the verifier, not the drawing): an instance that cannot be
    drawn is then one line naming it, not a traceback."""
    try:
        return get_task(inst.task).render(inst, size, answer=answer, whole=whole)
    except UsageError:
        raise  # a size that cuts the picture: its own line
    except Exception as e:  # noqa: BLE001 - edited data: any shape may come (a zero grid, a huge n)
        if not edited:
            raise
        raise DataError(f"{source}: {inst.id}: its edited instance cannot be drawn ({type(e).__name__}); undo the "
                        "edit, or keep the record's shape as `mmnp generate` writes it") from None


def select_instances(tasks: str | list[str], difficulties: list[str], *, data: str | Path | None = None,
                     count: int = 10, seed: int = 0, limit: int | None = None, allow_modified: bool = False,
                     image_size: int = 768) -> Selection:
    """The instances of a run: from a dataset folder or an export (at most `limit` per task and
    difficulty), or generated from seeds (`count` per task and difficulty, capped by `limit`),
    without exact references. Used by evaluation, training and the lm-eval tasks, so all read
    data the same way."""
    names = [t.name for t in resolve_tasks(tasks)]
    difficulties = list(dict.fromkeys(difficulties))  # easy,easy is easy once, as a task named twice is
    if data is not None:
        source = open_data(data, allow_modified=allow_modified)
        found = source.instances(names, difficulties) if isinstance(source, Dataset) else source.instances
        held = {t: set(levels) for t, levels in source.manifest["counts"].items()} if isinstance(source, Dataset) \
            else None  # an export's instances are all read: what they hold is counted on the way
        instances = _first(found, names, difficulties, limit, data, held)
        identity = source.identity()
        total = sum(sum(counts.values()) for counts in source.manifest["counts"].values())
        if len(instances) < total:  # a part of the dataset: its scores are not the whole benchmark's
            identity["selection"] = {"instances": len(instances), "of": total, "tasks": names,
                                     "difficulties": difficulties, "limit": limit}
        return Selection(instances, identity, source, image_size)
    n = count if limit is None else min(count, limit)
    instances = [get_task(t).generate(d, instance_seed(seed, i), id=instance_id(t, d, i))
                 for t in names for d in difficulties for i in range(n)]
    bench, refs = derive_hashes((digest_line(record_line(i), i.id) for i in instances), lambda d: NO_IMAGE)
    identity = {"path": None, "benchmark_hash": bench, "references_hash": refs, "preset": None, "modified": False,
                "content_hash": bench,
                "generated": {"tasks": names, "difficulties": difficulties, "count": n, "seed": seed}}
    return Selection(instances, identity, None, image_size)


def image_loader(data: str | Path | None, image_size: int = 768) -> Callable[[Instance], bytes]:
    """What serves an instance's picture for `data` (checked against the dataset's digests), or
    renders it for generated instances."""
    if data is None:
        return lambda inst: get_task(inst.task).render(inst, image_size, whole=True)
    return Selection([], {}, open_data(data), image_size).image


def open_data(data: str | Path, *, allow_modified: bool = False) -> Any:
    """What --data names, read and checked: a dataset folder (`Dataset`), or an export or Hub
    dataset (`mmnp.export.Export`); both give `identity()` and their instances."""
    kind, where = locate_data(data)
    if kind == "folder":
        return open_dataset(where, allow_modified=allow_modified)
    from mmnp.export import load_export

    return load_export(where if kind == "export" else f"hf://{where}")


def _first(instances: Iterable[Instance], names: list[str], difficulties: list[str], limit: int | None,
           data: str | Path, held: dict[str, set[str]] | None = None) -> list[Instance]:
    """The instances of the asked tasks and difficulties, at most `limit` per (task, difficulty);
    `held`: the data's difficulties by task (None: counted from `instances`), named when none match."""
    chosen, per_shard, seen = [], {}, {}
    for inst in instances:
        seen.setdefault(inst.task, set()).add(inst.difficulty)
        if inst.task in names and inst.difficulty in difficulties:
            shard = (inst.task, inst.difficulty)
            per_shard[shard] = per_shard.get(shard, 0) + 1
            if limit is None or per_shard[shard] <= limit:
                chosen.append(inst)
    if not chosen:  # an import's `imported` or `classic` difficulty is no default's: say what is there
        by_levels: dict[str, list[str]] = {}
        for task, levels in sorted((held or seen).items()):
            by_levels.setdefault(",".join(sorted(levels)), []).append(task)
        there = "; ".join(f"{','.join(tasks)} at {levels}" for levels, tasks in by_levels.items())
        raise UsageError(f"{data} holds no instances of tasks {','.join(names)} at {','.join(difficulties)}; it "
                         f"holds {there}: pass --tasks and --difficulty among those")
    return chosen


__all__ = [
    "FORMAT_VERSION", "IN_PROGRESS", "LOG", "MANIFEST", "PRESETS", "SEED_STRIDE", "Dataset", "GenerateSpec",
    "Selection", "UnknownInstanceError", "atomic_write", "build_manifest", "dataset_identity",
    "find_instance", "generate_dataset", "image_loader", "image_path", "instance_id", "instance_seed",
    "load_dataset", "locate_data", "merge_parts", "open_data", "open_dataset", "parse_instance_id", "parse_part", "preset_of",
    "preset_spec", "read_manifest", "select_instances",
]
