"""Datasets on disk: generation (parallel, resumable, byte-identical at any worker count),
integrity checks, loading, and the instance id.

    OUT/manifest.json                 version, arguments, counts, hashes, one digest line per record
    OUT/<task>/<difficulty>.jsonl     one instance record a line
    OUT/<task>/images/<id>.png        its picture

Every reader goes through `open_dataset`, which checks each shard against the manifest (its
SHA-256 and its instance count) before anything is used, and refuses a dataset that differs,
naming the file, the line and what differs, unless the caller allows modified data on purpose;
then the dataset's identity says `modified: true` and carries a hash of the actual data.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import sys
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Iterable, Iterator

from mmnp.core import Instance, canonical_json, content_hash
from mmnp.errors import DataError, UsageError
from mmnp.registry import get_task, resolve_tasks
from mmnp.task import DEFAULT_TIME_LIMIT

FORMAT_VERSION = 2  # 2: references_hash, ortools_version and a digest line per record
MANIFEST = "manifest.json"
IN_PROGRESS = ".mmnp-generate.json"  # the arguments of an unfinished generation, for resuming
SEED_STRIDE = 1_000_000  # instance i of a run with --seed s has seed s * SEED_STRIDE + i
PARAM_HEADROOM = 10  # a --param may reach this many times the largest preset value of its field
_TEMP = re.compile(r"^\..+\.tmp(\d+)$")  # what `atomic_write` leaves behind when killed mid-write
_NAME = re.compile(r"^[a-z0-9_]+$|^L[0-9]+$")  # task and difficulty names (ladder levels L1..): safe as path parts
_ID = re.compile(r"^(?P<task>[a-z0-9_]+)-(?P<difficulty>[a-z0-9_]+|L[0-9]+)-(?P<index>\d{4,})$")


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


class UnknownInstanceError(UsageError, KeyError):
    """An id that is not in the dataset (a KeyError too, for library callers)."""

    def __str__(self) -> str:
        return str(self.args[0])


# -- generation ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class GenerateSpec:
    """Everything that determines a dataset's content (and nothing that does not, such as
    the worker count or the output folder)."""

    tasks: tuple[str, ...]
    difficulties: tuple[str, ...]
    count: int
    seed: int
    images: bool = True
    optimal: bool = True
    image_size: int = 768
    time_limit: float = DEFAULT_TIME_LIMIT
    params: dict[str, Any] = field(default_factory=dict)  # "n=25" (every task having n) or "tsp.n=25"

    def __post_init__(self) -> None:
        if not 1 <= self.count < SEED_STRIDE:
            raise UsageError(f"--count must be between 1 and {SEED_STRIDE - 1}, got {self.count}")
        if not 0 <= self.seed < 2**63 // SEED_STRIDE:
            raise UsageError(f"--seed must be between 0 and {2**63 // SEED_STRIDE - 1}, got {self.seed}")
        if not 0 < self.time_limit <= 86400:
            raise UsageError(f"--time-limit must be a positive number of deterministic seconds, got {self.time_limit}")
        if not 64 <= self.image_size <= 8192:
            raise UsageError(f"--image-size must be between 64 and 8192 pixels, got {self.image_size}")
        for name in (*self.tasks, *self.difficulties):
            if not _NAME.match(name):
                raise UsageError(f"{name!r} is not a task or difficulty name (lower-case letters, digits, _)")
        for key in self.params:
            if not any(self._takes(t, key) for t in self.tasks):
                raise UsageError(f"parameter {key!r} belongs to none of the tasks {', '.join(self.tasks)}")
        for name in self.tasks:
            for difficulty in self.difficulties:  # fail here, not in a worker, on a bad name or value
                config = get_task(name).config(difficulty, **self.overrides(name))
                self._check_size(name, config)

    def _check_size(self, task: str, config: Any) -> None:
        """Refuse a --param far beyond every preset (n=1000000 would run out of memory, not fail);
        a field whose size costs no memory (how large the numbers are) states its own `limit`."""
        presets = get_task(task).presets.values()
        limits = {f.name: f.metadata.get("limit") for f in fields(config)}
        for key in self.overrides(task):
            value = _top(getattr(config, key))
            if limits[key] is not None:
                if value > limits[key]:
                    raise UsageError(f"--param {key}={_num(value)} is too large for {task}: at most {limits[key]:_}")
                continue
            ceiling = max((_top(getattr(p, key)) for p in presets), default=0)
            if ceiling > 0 and value > PARAM_HEADROOM * ceiling:
                raise UsageError(f"--param {key}={_num(value)} is too large for {task}: at most "
                                 f"{_num(PARAM_HEADROOM * ceiling)} ({PARAM_HEADROOM} x its largest preset value)")

    def _takes(self, task: str, key: str) -> bool:
        scope, _, param = key.rpartition(".")
        return scope == task or (not scope and param in get_task(task).generator.Config.__dataclass_fields__)

    def overrides(self, task: str) -> dict[str, Any]:
        return {key.rpartition(".")[2]: value for key, value in self.params.items() if self._takes(task, key)}

    def shards(self) -> list[tuple[str, str]]:
        return [(t, d) for t in self.tasks for d in self.difficulties]

    def to_json(self) -> dict:
        return json.loads(json.dumps(asdict(self)))


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _top(value: Any) -> float:
    """The largest number in a config value (a scalar or a (lo, hi) range); 0 for anything else."""
    values = value if isinstance(value, tuple) else (value,)
    return max((float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)), default=0.0)


# The canonical test sets every leaderboard shares. Their benchmark hashes are in the README;
# a dataset is called by a preset's name only when its arguments and hashes equal the preset's.
PRESETS: dict[str, dict[str, Any]] = {
    "mm-np-bench-v1": {"tasks": "all", "difficulties": ("easy", "medium", "hard"), "count": 34, "seed": 2026,
                       "benchmark_hash": "c7187f83da02726244bfe1880c7b0d18d3572cdcb66b295c1e5c4c6ed8d57d85"},
    # picture version 2 (see README): new instances, so results on it are never mixed with v1's
    "mm-np-bench-v2": {"tasks": "all", "difficulties": ("easy", "medium", "hard"), "count": 34, "seed": 2027,
                       "benchmark_hash": "acc2d26fb995068525943310b5380c2f7e84d5983bb9521f91ff483178e30a0e"},
}


def preset_spec(name: str, *, images: bool = True, optimal: bool = True) -> GenerateSpec:
    """The GenerateSpec of a canonical release (the release itself has images and exact references)."""
    if name not in PRESETS:
        raise UsageError(f"unknown preset {name!r}; available: {', '.join(PRESETS)}")
    fixed = PRESETS[name]
    return GenerateSpec(tasks=tuple(t.name for t in resolve_tasks(fixed["tasks"])),
                        difficulties=tuple(fixed["difficulties"]), count=fixed["count"], seed=fixed["seed"],
                        images=images, optimal=optimal)


def atomic_write(path: Path, data: bytes | str) -> None:
    """Write via a temporary file and rename, so a crash never leaves a half-written file
    (a kill may leave the temporary `.NAME.tmpPID`, which `clean_temporaries` removes)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def clean_temporaries(folder: Path, depth: int = 3) -> list[Path]:
    """Remove the temporary files of killed writers (their process is gone) under `folder`."""
    removed = []
    if not folder.is_dir():
        return removed
    for entry in folder.iterdir():
        if entry.is_dir() and not entry.is_symlink() and depth > 1:
            removed += clean_temporaries(entry, depth - 1)
        elif (m := _TEMP.match(entry.name)) and entry.is_file() and not _alive(int(m[1])):
            entry.unlink(missing_ok=True)
            removed.append(entry)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # ours, but not being written now: left by an earlier call that was stopped
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def _build(job: tuple) -> tuple[str, bytes | None]:
    """One instance: its JSONL line and PNG bytes. A pure function of `job` (runs in workers)."""
    name, difficulty, index, seed, overrides, images, optimal, size, time_limit = job
    task = get_task(name)
    id = instance_id(name, difficulty, index)
    try:
        inst = task.generate(difficulty, seed, id=id, optimal=optimal, time_limit=time_limit, **overrides)
    except ValueError as e:  # a generator refusing its parameters (e.g. too many cities for the grid)
        raise UsageError(f"{id}: {e}") from None
    png = None
    if images:
        png, picture = task.picture(inst, size)
        inst = replace(inst, image=f"{name}/images/{inst.id}.png", picture=picture)
    return json.dumps(inst.to_record(), ensure_ascii=False, separators=(",", ":")), png


def generate_dataset(
    out: str | Path,
    spec: GenerateSpec,
    *,
    workers: int = 1,
    overwrite: bool = False,
    progress: Callable[[int, int], None] | None = None,
    notify: Callable[[str], None] | None = None,
) -> dict:
    """Write the dataset described by `spec` to `out` and return its manifest.

    Rerunning the same spec into the folder of an interrupted run finishes it, keeping the
    shards already written; on a finished folder it checks every shard and image and
    regenerates the damaged shards (telling `notify` what was wrong), else leaves it as it is.
    `overwrite` removes only the files a previous generation wrote (as its manifest lists them).
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file, not a folder; choose a folder")
    clean_temporaries(out)
    state = out / IN_PROGRESS
    if out.exists() and any(out.iterdir()):
        previous = _read_json(state) or (_read_json(out / MANIFEST) or {}).get("arguments")
        if overwrite:
            if previous is None:
                raise UsageError(f"{out} holds files that `mmnp generate` did not write; "
                                "refusing to delete them, choose an empty --out")
            _remove_generated(out, previous)
        elif previous != spec.to_json():
            raise UsageError(f"{out} is not empty and holds a different dataset; pass --overwrite "
                            "to replace it, or choose another --out")
        elif not state.exists():
            damage = _damage(out)
            if not damage:
                return read_manifest(out)
            for (task, difficulty), problem in damage.items():
                if notify:
                    notify(f"damaged: {problem}; regenerating {task}/{difficulty}")
                (out / task / f"{difficulty}.jsonl").unlink(missing_ok=True)
    atomic_write(state, json.dumps(spec.to_json(), indent=1))

    shards = spec.shards()
    todo = [s for s in shards if not (out / s[0] / f"{s[1]}.jsonl").exists()]
    jobs = [(t, d, i, instance_seed(spec.seed, i), spec.overrides(t), spec.images, spec.optimal,
             spec.image_size, spec.time_limit) for t, d in todo for i in range(spec.count)]
    done = 0
    results = _run(jobs, workers)
    try:
        for task, difficulty in todo:
            lines = []
            for _ in range(spec.count):
                line, png = next(results)
                if png is not None:
                    record_id = json.loads(line)["id"]
                    atomic_write(out / task / "images" / f"{record_id}.png", png)
                lines.append(line)
                done += 1
                if progress:
                    progress(done, len(jobs))
            atomic_write(out / task / f"{difficulty}.jsonl", "\n".join(lines) + "\n")
    finally:
        results.close()  # stops and reaps the worker pool at once, also on Ctrl-C

    manifest = build_manifest(out, spec, shards)
    atomic_write(out / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    state.unlink()
    return manifest


def _remove_generated(out: Path, arguments: dict) -> None:
    """Delete what a generation with `arguments` wrote (shards, images, manifest), nothing else."""
    tasks, difficulties = arguments.get("tasks", []), arguments.get("difficulties", [])
    count = int(arguments.get("count", 0))
    for task in tasks:
        if not _NAME.match(str(task)):
            continue
        for difficulty in difficulties:
            if not _NAME.match(str(difficulty)):
                continue
            (out / task / f"{difficulty}.jsonl").unlink(missing_ok=True)
            for i in range(count):
                (out / task / "images" / f"{instance_id(task, difficulty, i)}.png").unlink(missing_ok=True)
        for folder in (out / task / "images", out / task):
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
    (out / MANIFEST).unlink(missing_ok=True)
    (out / IN_PROGRESS).unlink(missing_ok=True)


def _worker_init(parent: int) -> None:
    """Pool workers die with the generating process (even on kill -9) and leave Ctrl-C to it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _run(jobs: list[tuple], workers: int) -> Iterator[tuple[str, bytes | None]]:
    """Results in job order, whatever the worker count (so the bytes never depend on it)."""
    if workers <= 1 or len(jobs) < 2:
        yield from map(_build, jobs)
        return
    import multiprocessing

    pool = multiprocessing.Pool(min(workers, len(jobs)), initializer=_worker_init, initargs=(os.getpid(),))
    try:
        yield from pool.imap(_build, jobs, chunksize=max(1, min(16, len(jobs) // (8 * workers))))
        pool.close()
    finally:
        pool.terminate()
        pool.join()


def _reference_digest(reference: Any) -> str:
    return hashlib.sha256(canonical_json(reference).encode()).hexdigest()


def build_manifest(out: Path, spec: GenerateSpec, shards: list[tuple[str, str]]) -> dict:
    from mmnp import __version__

    counts: dict[str, dict[str, int]] = {}
    files: dict[str, str] = {}
    records: dict[str, list[str]] = {}
    bench, refs = hashlib.sha256(), hashlib.sha256()
    for task, difficulty in shards:
        rel = f"{task}/{difficulty}.jsonl"
        raw = (out / rel).read_bytes()
        files[rel] = hashlib.sha256(raw).hexdigest()
        images = hashlib.sha256()
        rows = []
        for line in raw.splitlines():
            record = json.loads(line)
            bench.update(f"{record['id']}:{record['hash']}\n".encode())
            ref = _reference_digest(record["reference"])
            refs.update(f"{record['id']}:{ref}\n".encode())
            png = "-"
            if record.get("image"):
                digest = hashlib.sha256((out / record["image"]).read_bytes())
                images.update(digest.digest())
                png = digest.hexdigest()[:32]
            rows.append(f"{record['id']} {hashlib.sha256(line).hexdigest()[:32]} {ref[:32]} {png}")
        if spec.images:
            files[f"{task}/images/{difficulty}-*.png"] = images.hexdigest()
        records[rel] = rows
        counts.setdefault(task, {})[difficulty] = len(rows)
    manifest = {
        "format_version": FORMAT_VERSION,
        "mmnp_version": __version__,
        "arguments": spec.to_json(),
        "counts": counts,
        "total": sum(sum(c.values()) for c in counts.values()),
        # over (id, instance hash) pairs only: independent of image and solver library versions
        "benchmark_hash": bench.hexdigest(),
        # over (id, reference digest) pairs: a pure function of the instances and the solver version
        "references_hash": refs.hexdigest(),
        "ortools_version": _ortools_version() if spec.optimal else None,
        "files": files,
        "records": records,  # per record: "id line-sha256 reference-sha256 png-sha256" (first 32 hex)
    }
    return manifest


def _ortools_version() -> str:
    from mmnp.solvers.cpsat import ortools_version

    return ortools_version()


# -- reading and checking -----------------------------------------------------------------------

def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def read_manifest(path: str | Path) -> dict:
    path = Path(path)
    file = path / MANIFEST
    if not path.is_dir():
        raise DataError(f"{path} is not a folder; --data takes a dataset folder written by `mmnp generate`")
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        hint = (" (an unfinished generation is there: rerun the same `mmnp generate` command to finish it)"
                if (path / IN_PROGRESS).exists() else "")
        raise DataError(f"{path} has no readable {MANIFEST}; "
                        f"is it a dataset written by `mmnp generate`?{hint}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(f"{file}: cannot be read ({e})") from None
    try:
        manifest = json.loads(text)
    except json.JSONDecodeError as e:
        raise DataError(f"{file}:{e.lineno}: not valid JSON ({e.msg}, column {e.colno}); "
                        "regenerate the dataset with `mmnp generate`") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("counts"), dict) \
            or not isinstance(manifest.get("files"), dict) or "benchmark_hash" not in manifest:
        raise DataError(f"{file}: not an mmnp manifest (it lacks counts, files or benchmark_hash)")
    for task, by_difficulty in manifest["counts"].items():
        if not _NAME.match(task) or not isinstance(by_difficulty, dict) \
                or not all(_NAME.match(d) and isinstance(n, int) for d, n in by_difficulty.items()):
            raise DataError(f"{file}: counts entry {task!r} is not a task name with per-difficulty counts")
    return manifest


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


def _instance(record: Any, where: str) -> Instance:
    """An Instance from a parsed record line, or a DataError naming `where` (file:line)."""
    if not isinstance(record, dict):
        raise DataError(f"{where}: not an instance record (a JSON object)")
    try:
        inst = Instance.from_record(record)
    except ValueError as e:
        raise DataError(f"{where}: {e}") from None
    if inst.image is not None and not isinstance(inst.image, str):
        raise DataError(f"{where}: its image field is not a path")
    return inst


def _lines(raw: bytes, file: Path) -> Iterator[tuple[int, dict]]:
    for number, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise DataError(f"{file}:{number}: not valid JSON ({getattr(e, 'msg', e)})") from None


@dataclass
class Dataset:
    """A dataset folder whose shards were checked against its manifest.

    `problems` lists every difference found (empty for an intact dataset; only non-empty when
    opened with `allow_modified`). `identity()` is what results.json records."""

    path: Path
    manifest: dict
    allow_modified: bool = False
    problems: list[str] = field(default_factory=list)
    _raw: dict[tuple[str, str], bytes] = field(default_factory=dict, repr=False)
    _identity: dict | None = field(default=None, repr=False)

    @property
    def modified(self) -> bool:
        return bool(self.problems)

    def shards(self) -> list[tuple[str, str]]:
        return [(t, d) for t, ds in self.manifest["counts"].items() for d in ds]

    def instances(self, tasks: Iterable[str] | None = None, difficulties: Iterable[str] | None = None,
                  ) -> Iterator[Instance]:
        """Instances shard by shard in manifest order, filtered by task and difficulty."""
        tasks, difficulties = (set(tasks) if tasks else None), (set(difficulties) if difficulties else None)
        for task, difficulty in self.shards():
            if (tasks and task not in tasks) or (difficulties and difficulty not in difficulties):
                continue
            file = self.path / task / f"{difficulty}.jsonl"
            for number, record in _lines(self._raw[task, difficulty], file):
                inst = _instance(record, f"{file}:{number}")
                if inst.image is not None:
                    image_path(self.path, inst.image)  # refuse an escaping path before anyone reads it
                yield inst

    def image(self, inst: Instance) -> bytes:
        """The instance's PNG, read from inside the folder and checked against the manifest."""
        path = image_path(self.path, inst.image)
        try:
            png = path.read_bytes()
        except OSError as e:
            raise DataError(f"{path}: cannot read the image of {inst.id} ({e.strerror or e})") from None
        expected = self._digests().get(inst.id, (None, None, None))[2]
        if not self.allow_modified and expected and hashlib.sha256(png).hexdigest()[:len(expected)] != expected:
            raise DataError(f"{path}: the image of {inst.id} differs from the one manifest.json records; "
                            "regenerate it (rerun `mmnp generate`) or pass --allow-modified")
        return png

    def find(self, id: str) -> Instance:
        """The instance with `id`, looking first in the shard its id names."""
        try:
            guess = parse_instance_id(id)[:2]
        except UsageError:
            guess = None
        for task, difficulty in sorted(self.shards(), key=lambda s: s != guess):
            for inst in self.instances([task], [difficulty]):
                if inst.id == id:
                    return inst
        example = instance_id(*self.shards()[0], 0) if self.shards() else "tsp-easy-0000"
        raise UnknownInstanceError(f"no instance {id!r} in {self.path}; ids look like {example}")

    def _digests(self) -> dict[str, tuple[str, ...]]:
        return {row.split()[0]: tuple(row.split()[1:]) for rows in self.manifest.get("records", {}).values()
                for row in rows}

    def identity(self) -> dict:
        """{path, benchmark_hash, references_hash, preset, modified, content_hash} for results.json."""
        if self._identity is None:
            self._identity = _identity(self)
        return self._identity


def open_dataset(path: str | Path, *, allow_modified: bool = False) -> Dataset:
    """Read a dataset's manifest and check every shard against it (SHA-256 and instance count).

    A difference is refused with a DataError naming the file, the line and what differs, unless
    `allow_modified`: then the dataset opens with its `problems` listed and, with them, images
    checked too, so `identity()` marks it modified with a hash of what is actually there."""
    path = Path(path)
    manifest = read_manifest(path)
    dataset = Dataset(path, manifest, allow_modified)
    for task, difficulty in dataset.shards():
        rel = f"{task}/{difficulty}.jsonl"
        file = path / rel
        try:
            raw = file.read_bytes()
        except FileNotFoundError:
            raw, problem = b"", f"{file}: missing (manifest.json lists it)"
        except OSError as e:
            raise DataError(f"{file}: cannot be read ({e.strerror or e})") from None
        else:
            problem = None
            if hashlib.sha256(raw).hexdigest() != manifest["files"].get(rel):
                problem = _explain(path, task, difficulty, raw, manifest)
            elif (found := raw.count(b"\n")) != manifest["counts"][task][difficulty]:
                problem = f"{file}: holds {found} records, manifest.json says {manifest['counts'][task][difficulty]}"
        dataset._raw[task, difficulty] = raw
        if problem:
            dataset.problems.append(problem)
    if allow_modified:
        dataset.problems += _image_problems(dataset)
    elif dataset.problems:
        more = f" (and {len(dataset.problems) - 1} more differences)" if len(dataset.problems) > 1 else ""
        raise DataError(f"{dataset.problems[0]}{more}. The dataset differs from its manifest: rerun the "
                        "`mmnp generate` command that made it to repair it, or pass --allow-modified to use "
                        "the edited data on purpose (results are then marked modified)")
    return dataset


def _explain(root: Path, task: str, difficulty: str, raw: bytes, manifest: dict) -> str:
    """Why a shard's bytes differ from the manifest's: the first line that tells, and what differs."""
    rel = f"{task}/{difficulty}.jsonl"
    file = root / rel
    expected = [row.split() for row in manifest.get("records", {}).get(rel, [])]
    lines = raw.splitlines()
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            return f"{file}:{number}: not valid JSON ({getattr(e, 'msg', e)})"
        if not isinstance(record, dict) or "id" not in record:
            return f"{file}:{number}: not an instance record"
        want = instance_id(task, difficulty, number - 1)
        if record["id"] != want:
            return (f"{file}:{number}: holds {record['id']!r} where {want!r} belongs "
                    "(a record was removed, added or moved)")
        if isinstance(record.get("instance"), dict) and record.get("hash") != content_hash(task, record["instance"]):
            return f"{file}:{number}: the instance data of {want} was edited (its content hash no longer matches)"
        if number <= len(expected) and hashlib.sha256(line).hexdigest()[:32] != expected[number - 1][1]:
            if _reference_digest(record.get("reference"))[:32] != expected[number - 1][2]:
                return f"{file}:{number}: the reference of {want} differs from the one generated"
            return (f"{file}:{number}: record {want} differs from the one generated "
                    "(a field other than instance and reference)")
    count = manifest["counts"][task][difficulty]
    if len(lines) != count:
        return f"{file}: holds {len(lines)} records, manifest.json says {count} (line {min(len(lines), count) + 1})"
    return f"{file}: its SHA-256 differs from manifest.json's (blank lines or line endings changed)"


def _image_problems(dataset: Dataset) -> list[str]:
    problems = []
    digests = dataset._digests()
    for inst in dataset.instances():
        expected = digests.get(inst.id, (None, None, "-"))[2]
        if inst.image is None or expected in (None, "-"):
            continue
        path = image_path(dataset.path, inst.image)
        try:
            same = hashlib.sha256(path.read_bytes()).hexdigest()[:len(expected)] == expected
        except OSError:
            problems.append(f"{path}: missing (the record of {inst.id} names it)")
            continue
        if not same:
            problems.append(f"{path}: the image of {inst.id} differs from the one generated")
    return problems


def _damage(out: Path) -> dict[tuple[str, str], str]:
    """Every damaged shard of a finished dataset (its records or its images), with the first reason."""
    try:
        dataset = open_dataset(out, allow_modified=True)
    except DataError as e:
        manifest = _read_json(out / MANIFEST) or {}
        shards = [(t, d) for t, ds in manifest.get("counts", {}).items() for d in ds]
        return {s: str(e) for s in shards}
    damage: dict[tuple[str, str], str] = {}
    for problem in dataset.problems:
        rel = Path(problem.split(":", 1)[0]).relative_to(out)
        task = rel.parts[0]
        if rel.suffix == ".jsonl":
            damage.setdefault((task, rel.stem), problem)
        else:  # an image: its name is the instance id
            damage.setdefault(parse_instance_id(rel.stem)[:2], problem)
    return damage


def _identity(dataset: Dataset) -> dict:
    manifest = dataset.manifest
    if not dataset.modified:
        bench, refs = manifest["benchmark_hash"], manifest.get("references_hash")
        content = bench
    else:  # recomputed over what is there; the manifest's canonical hashes are never reported
        b, r, c = hashlib.sha256(), hashlib.sha256(), hashlib.sha256()
        for inst in dataset.instances():
            b.update(f"{inst.id}:{inst.hash}\n".encode())
            r.update(f"{inst.id}:{_reference_digest(inst.reference)}\n".encode())
            c.update(canonical_json(inst.to_record()).encode() + b"\n")
            if inst.image:
                try:
                    c.update(hashlib.sha256(image_path(dataset.path, inst.image).read_bytes()).digest())
                except OSError:
                    c.update(b"missing image\n")
        bench, refs, content = b.hexdigest(), r.hexdigest(), "modified-" + c.hexdigest()
    return {"path": str(dataset.path), "benchmark_hash": bench, "references_hash": refs,
            "preset": None if dataset.modified else preset_of(manifest), "modified": dataset.modified,
            "content_hash": content}


def preset_of(manifest: dict) -> str | None:
    """The canonical release a manifest's data equals, else None: the same arguments and
    benchmark hash and, where the release's references are recorded for the manifest's
    OR-Tools version, the same references hash."""
    arguments = manifest.get("arguments") or {}
    for name, fixed in PRESETS.items():
        known = fixed.get("references_hash", {}).get(manifest.get("ortools_version"))
        if preset_spec(name).to_json() == arguments and manifest.get("benchmark_hash") == fixed["benchmark_hash"] \
                and known in (None, manifest.get("references_hash")):
            return name
    return None


def dataset_identity(path: str | Path, *, allow_modified: bool = False) -> dict:
    """The dataset block of results.json: {path, benchmark_hash, references_hash, preset,
    modified, content_hash}; refuses a modified dataset unless `allow_modified`."""
    return open_dataset(path, allow_modified=allow_modified).identity()


def load_dataset(path: str | Path, tasks: list[str] | None = None, difficulties: list[str] | None = None,
                 *, allow_modified: bool = False) -> Iterator[Instance]:
    """Instances of a generated dataset, shard by shard in manifest order, after checking
    the dataset against its manifest (the check runs at this call, not at the first item)."""
    return open_dataset(path, allow_modified=allow_modified).instances(tasks, difficulties)


def find_instance(path: str | Path, instance_id: str, *, allow_modified: bool = False) -> Instance:
    """The instance with `instance_id` in a checked dataset."""
    return open_dataset(path, allow_modified=allow_modified).find(instance_id)


# -- one instance selection for evaluation and training -----------------------------------------

@dataclass
class Selection:
    """The instances a run uses, where they came from, and how to get their pictures."""

    instances: list[Instance]
    identity: dict  # results.json's dataset block
    dataset: Dataset | None = None
    image_size: int = 768

    def image(self, inst: Instance) -> bytes:
        """The instance's PNG: the dataset's (checked) file, or rendered when there is none."""
        if self.dataset is not None and inst.image:
            return self.dataset.image(inst)
        return get_task(inst.task).render(inst, self.image_size)


def select_instances(tasks: str | list[str], difficulties: list[str], *, data: str | Path | None = None,
                     count: int = 10, seed: int = 0, limit: int | None = None, allow_modified: bool = False,
                     image_size: int = 768) -> Selection:
    """The instances of a run: from a dataset folder (at most `limit` per task and difficulty),
    or generated from seeds (`count` per task and difficulty, capped by `limit`), without exact
    references. Used by both evaluation and training, so both read data the same way."""
    names = [t.name for t in resolve_tasks(tasks)]
    difficulties = list(difficulties)
    if data is not None and not (Path(data) / MANIFEST).exists():  # an `mmnp export` folder or a Hub id
        return _select_export(data, names, difficulties, limit, image_size)
    if data is not None:
        dataset = open_dataset(data, allow_modified=allow_modified)
        instances = _first(dataset.instances(names, difficulties), names, difficulties, limit, data)
        return Selection(instances, dataset.identity(), dataset, image_size)
    n = count if limit is None else min(count, limit)
    instances = [get_task(t).generate(d, instance_seed(seed, i), id=instance_id(t, d, i))
                 for t in names for d in difficulties for i in range(n)]
    bench = hashlib.sha256("".join(f"{i.id}:{i.hash}\n" for i in instances).encode()).hexdigest()
    refs = hashlib.sha256("".join(f"{i.id}:{_reference_digest(i.reference)}\n" for i in instances).encode()).hexdigest()
    identity = {"path": None, "benchmark_hash": bench, "references_hash": refs, "preset": None, "modified": False,
                "content_hash": bench,
                "generated": {"tasks": names, "difficulties": difficulties, "count": n, "seed": seed}}
    return Selection(instances, identity, None, image_size)


def _first(instances: Iterable[Instance], names: list[str], difficulties: list[str], limit: int | None,
           data: str | Path) -> list[Instance]:
    """The instances of the asked tasks and difficulties, at most `limit` per (task, difficulty)."""
    chosen, per_shard = [], {}
    for inst in instances:
        if inst.task in names and inst.difficulty in difficulties:
            shard = (inst.task, inst.difficulty)
            per_shard[shard] = per_shard.get(shard, 0) + 1
            if limit is None or per_shard[shard] <= limit:
                chosen.append(inst)
    if not chosen:
        raise UsageError(f"{data} holds no instances of tasks {','.join(names)} at {','.join(difficulties)}")
    return chosen


def _select_export(data: str | Path, names: list[str], difficulties: list[str], limit: int | None,
                   image_size: int) -> Selection:
    """The selection from an `mmnp export` (checked row by row against the source manifest by
    `load_export`), with the source dataset's identity, so results compare with the folder's."""
    from mmnp.export import load_export

    export = load_export(data)
    instances = _first(export.instances, names, difficulties, limit, data)
    manifest = export.manifest
    refs = hashlib.sha256("".join(f"{i.id}:{_reference_digest(i.reference)}\n"
                                  for i in export.instances).encode()).hexdigest()
    if manifest.get("references_hash") not in (None, refs):
        raise DataError(f"{data}: the exported references do not match the source manifest's references_hash "
                        f"({refs[:16]} != {manifest['references_hash'][:16]}); export the dataset again")
    identity = {"path": str(data), "benchmark_hash": export.benchmark_hash, "references_hash": refs,
                "preset": preset_of(manifest), "modified": False, "content_hash": export.benchmark_hash}
    return _ExportSelection(instances, identity, None, image_size, export)


@dataclass
class _ExportSelection(Selection):
    export: Any = None

    def image(self, inst: Instance) -> bytes:
        return self.export.image_bytes(inst)
