"""Generation: parallel, resumable instance by instance, byte-identical at any worker count, and
spread beyond one machine (`--shard K/N` parts and `merge_parts`, or a Ray cluster).

While a run is unfinished its folder holds

    OUT/.lock                    the run's lock (pid, host, start); a second run on the folder is refused
    OUT/.mmnp-generate.json      what it makes: arguments, its part K/N, the task and OR-Tools versions
    OUT/.mmnp-generate.log       one line per finished instance: "<PNG SHA-256 or -> <record line>"
    OUT/<task>/images/<id>.png   written before its instance's log line

so a killed run keeps every finished instance, references included, and the next run computes
only the others. When all are done the shards are written from the log in index order, then
manifest.json, and the log goes. Each instance is a pure function of (task, difficulty, seed,
arguments), which is why a straight run, a resumed one, merged parts and a Ray run give the
same bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import signal
import sys
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, NamedTuple

from mmnp.core import canonical_json
from mmnp.errors import DataError, UsageError
from mmnp.files import FolderLock, atomic_write, check_writable_inside, inside, remove_temporaries
from mmnp.integrity import (
    MANIFEST,
    NO_IMAGE,
    SEED_STRIDE,
    Digest,
    build_manifest,
    derive_hashes,
    digest_line,
    image_name,
    instance_id,
    instance_seed,
    is_name,
    lines_of,
    ortools_version,
    parse_instance_id,
    parse_line,
    record_line,
    task_versions,
    validate_manifest,
)
from mmnp.registry import get_task
from mmnp.render import check_image_size
from mmnp.task import DEFAULT_TIME_LIMIT

IN_PROGRESS = ".mmnp-generate.json"  # the arguments, part and versions of an unfinished generation
LOG = ".mmnp-generate.log"  # its finished instances
EXECUTORS = ("process", "ray")
PARAM_HEADROOM = 10  # a --param may reach this many times the largest preset value of its field

Progress = Callable[[int, int], None]
Notify = Callable[[str], None]


@dataclass(frozen=True)
class GenerateSpec:
    """Everything that determines a dataset's content (and nothing that does not, such as
    the worker count, the executor or the output folder)."""

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
        check_image_size(self.image_size)
        for flag, names, example in (("--tasks", self.tasks, "all, or tsp,knapsack"),
                                     ("--difficulty", self.difficulties, "easy,medium, or L1-L10")):
            if not names:
                raise UsageError(f"{flag} names nothing: give at least one, e.g. {example}")
        for kind, names in (("task", self.tasks), ("difficulty", self.difficulties)):
            if twice := sorted({name for name in names if names.count(name) > 1}):
                raise UsageError(f"{kind} {', '.join(twice)} given twice; name each once")
        for name in (*self.tasks, *self.difficulties):
            if not is_name(name):
                raise UsageError(f"{name!r} is not a task or difficulty name (lower-case letters, digits, _)")
        for key in self.params:
            if not any(self._takes(t, key) for t in self.tasks):
                raise UsageError(f"parameter {key!r} belongs to none of the tasks {', '.join(self.tasks)}")
        for name in self.tasks:
            for difficulty in self.difficulties:  # fail here, not in a worker, on a bad name or value
                config = get_task(name).config(difficulty, **self.overrides(name))
                self._check_size(name, config)

    @classmethod
    def from_json(cls, arguments: dict) -> GenerateSpec:
        """The spec a manifest's or a part's `arguments` describe."""
        try:
            return cls(**{**arguments, "tasks": tuple(arguments["tasks"]),
                          "difficulties": tuple(arguments["difficulties"])})
        except (KeyError, TypeError) as e:
            raise DataError(f"arguments {arguments!r} are not those of `mmnp generate` ({e})") from None

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
        """The parameters `task` takes: a task's own (`tsp.n=25`) over one for every task (`n=25`),
        whichever order they were given in (a manifest lists them sorted)."""
        plain = {key: value for key, value in self.params.items() if "." not in key and self._takes(task, key)}
        own = {key.rpartition(".")[2]: value for key, value in self.params.items() if key.rpartition(".")[0] == task}
        return {**plain, **own}

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


def parse_part(text: str) -> tuple[int, int]:
    """`--shard K/N` -> (K, N): part K (1-based) of N."""
    k, sep, n = text.partition("/")
    try:
        part = (int(k), int(n)) if sep else None
    except ValueError:
        part = None
    if part is None or not 1 <= part[0] <= part[1]:
        raise UsageError(f"--shard {text!r}: give K/N with 1 <= K <= N, e.g. --shard 3/8 (part 3 of 8)")
    return part


def jobs_of(spec: GenerateSpec, part: tuple[int, int] | None = None) -> list[tuple]:
    """The instances of a run in generation order; part K of N takes every N-th from the K-th
    (so each part gets its share of every task and difficulty, for any N)."""
    every = [(t, d, i) for t, d in spec.shards() for i in range(spec.count)]
    if part is not None:
        every = every[part[0] - 1::part[1]]
    return [(t, d, i, instance_seed(spec.seed, i), spec.overrides(t), spec.images, spec.optimal,
             spec.image_size, spec.time_limit) for t, d, i in every]


def _job_id(job: tuple) -> str:
    return instance_id(job[0], job[1], job[2])


def _build(job: tuple) -> tuple[str, bytes, bytes | None]:
    """One instance: its id, record line and PNG bytes. A pure function of `job` (runs in workers)."""
    name, difficulty, index, seed, overrides, images, optimal, size, time_limit = job
    task = get_task(name)
    id = instance_id(name, difficulty, index)
    given = ", ".join(f"--param {key}={value}" for key, value in overrides.items())
    try:
        inst = task.generate(difficulty, seed, id=id, optimal=optimal, time_limit=time_limit, **overrides)
    except ValueError as e:  # a generator refusing its parameters (e.g. too many cities for the grid)
        raise UsageError(f"{id}{f' (with {given})' if given else ''}: {e}") from None
    except Exception as e:  # a preset's values are tested; a --param's may be outside what the generator handles
        if not overrides:
            raise
        raise UsageError(f"{id}: the {name} generator cannot make an instance with {given} "
                         f"({type(e).__name__}: {e}); choose values nearer its presets (`mmnp tasks --levels`)") from e
    objectives = [ref["objective"] for ref in inst.reference.values() if ref]
    if overrides and 0 in objectives:  # as `mmnp import` refuses it: no answer can score
        raise UsageError(f"{id}: with {given} its reference objective is 0 (e.g. a graph without edges), so the "
                         "Quality Ratio is undefined; choose values whose instances have answers scoring above 0")
    png = None
    if images:
        png, picture = task.picture(inst, size)
        inst = replace(inst, image=image_name(inst.id), picture=picture)
    return id, record_line(inst), png


# -- running the jobs ---------------------------------------------------------------------------

def _worker_init(parent: int) -> None:
    """Pool workers die with the generating process (even on kill -9) and leave Ctrl-C to it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _run(jobs: list[tuple], workers: int, executor: str, ray_address: str | None,
         ) -> Iterator[tuple[str, bytes, bytes | None]]:
    """Results as they finish (their order does not matter: shards are written by index)."""
    if executor == "ray":
        yield from _run_ray(jobs, workers, ray_address)
        return
    if workers <= 1 or len(jobs) < 2:
        yield from map(_build, jobs)
        return
    import multiprocessing

    pool = multiprocessing.Pool(min(workers, len(jobs)), initializer=_worker_init, initargs=(os.getpid(),))
    try:
        yield from pool.imap_unordered(_build, jobs, chunksize=max(1, min(4, len(jobs) // (8 * workers))))
        pool.close()
    finally:
        pool.terminate()
        pool.join()


def _run_ray(jobs: list[tuple], workers: int, address: str | None) -> Iterator[tuple[str, bytes, bytes | None]]:
    """The same jobs on a Ray cluster (`address`, else RAY_ADDRESS, else a local Ray started here),
    through Ray's drop-in `multiprocessing.Pool`; workers = 0 uses every CPU of the cluster."""
    try:
        import ray
        from ray.util.multiprocessing import Pool
    except ImportError:
        raise UsageError("--executor ray needs Ray: pip install 'ray[default]>=2.9' (with mmnp, on every machine "
                         "of the cluster)") from None
    started_here = not ray.is_initialized()
    pool = Pool(processes=workers or None, ray_address=address)
    try:
        yield from pool.imap_unordered(_build, jobs, chunksize=1)
    finally:
        pool.terminate()
        if started_here:
            ray.shutdown()


# -- the state of an unfinished run ----------------------------------------------------------------

def _state_for(spec: GenerateSpec, part: tuple[int, int] | None) -> dict:
    from mmnp import __version__

    return {"arguments": spec.to_json(), "part": list(part) if part else None,
            "task_versions": task_versions(spec.tasks), "ortools_version": ortools_version() if spec.optimal else None,
            "mmnp_version": __version__}


def _read_state(out: Path) -> dict | None:
    """The unfinished run's state, None when there is none; refuses a file that is not ours."""
    path = out / IN_PROGRESS
    if not path.exists() and not path.is_symlink():
        return None
    try:
        if path.is_symlink():
            raise ValueError("a link")
        state = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(state, dict) or not {"arguments", "part", "task_versions", "ortools_version"} <= set(state) \
                or not isinstance(state["arguments"], dict) or not isinstance(state["task_versions"], dict) \
                or not (state["part"] is None or (isinstance(state["part"], list) and len(state["part"]) == 2)):
            raise ValueError("not the state mmnp generate writes")
    except (OSError, ValueError) as e:
        raise DataError(f"{path}: not the state of an unfinished `mmnp generate` run ({e}); it may come from an "
                        "older mmnp: delete the folder, or choose another --out") from None
    return state


def _read_log(folder: Path, jobs: list[tuple], images: bool, repair: bool = True,
              ) -> tuple[dict[str, tuple[bytes, str]], list[str]]:
    """(the finished instances a run's log holds for `jobs`: {id: (record line, PNG SHA-256 or -)},
    why each other line cannot be kept: one located message a line). A torn last line (a kill
    mid-write) is cut silently (`repair`: from the file too, so the next line starts whole); a line
    that does not belong to these jobs, whose picture is missing or differs, or whose record is not
    what its job makes (`Task.mismatch`: an edited part must not reach a merged dataset) is left
    out, and stays in the file until the run goes on (`generate_dataset` writes it again): a run refused here (another
    mmnp's versions) loses nothing that the mmnp which started it could resume from."""
    path = folder / LOG
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}, []
    wanted = {_job_id(job): job for job in jobs}
    finished, problems = {}, []
    entries = raw.split(b"\n")
    for number, entry in enumerate(entries[:-1], 1):
        where = f"{path}:{number}"
        try:
            id, kept = _logged(folder, entry, where, wanted, images)
        except DataError as e:
            problems.append(str(e))
            continue
        finished[id] = kept
    if repair and entries[-1]:  # through the file itself, never a link (as `_Log` appends)
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW)
        try:
            os.ftruncate(fd, len(raw) - len(entries[-1]))
        finally:
            os.close(fd)
    return finished, problems


def _log_entry(line: bytes, png: str) -> bytes:
    """One line of the log: the picture's SHA-256 (or -), then the record line."""
    return png.encode() + b" " + line + b"\n"


def _write_log(folder: Path, entries: Iterable[tuple[bytes, str]]) -> None:
    """The log holding exactly `entries` ((record line, PNG SHA-256 or -) pairs), written whole."""
    atomic_write(folder / LOG, b"".join(_log_entry(line, png) for line, png in entries))


def _logged(folder: Path, entry: bytes, where: str, wanted: dict[str, tuple], images: bool,
            ) -> tuple[str, tuple[bytes, str]]:
    """One log line checked against its job: (id, (record line, PNG SHA-256 or -)), else a
    DataError naming the line, or the picture file when that is what is wrong."""
    png, _, line = entry.partition(b" ")
    digest = digest_line(line, where)
    job = wanted.get(digest.id)
    inst = parse_line(line, digest)
    png_text = png.decode(errors="replace")
    if job is None or digest.seed != job[3] or (inst.image is not None) != images:
        raise DataError(f"{where}: {digest.id} is not one of this run's instances")
    if images:
        picture = folder / image_name(digest.id)
        try:
            same = hashlib.sha256(picture.read_bytes()).hexdigest() == png_text
        except OSError as e:
            raise DataError(f"{picture}: {'missing' if isinstance(e, FileNotFoundError) else e.strerror}") from None
        if not same:
            raise DataError(f"{picture}: the picture of {digest.id} differs from the one {where} lists")
    elif png_text != NO_IMAGE:
        raise DataError(f"{where}: a picture where the run makes none")
    if line != record_line(inst):  # what is written is the raw line: a member added or repeated
        raise DataError(f"{where}: {digest.id}: not the line `mmnp generate` writes for its record")
    problem = get_task(job[0]).mismatch(inst, job[4], job[6], (png_text, job[7]) if images else None)
    if problem:
        raise DataError(f"{where}: {digest.id}: {problem}")
    return digest.id, (line, png_text)


class _Log:
    """The run's log, appended one whole line per `os.write` (a kill leaves at most a torn last line)."""

    def __init__(self, folder: Path) -> None:
        self.fd = os.open(folder / LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)

    def add(self, line: bytes, png: str) -> None:
        os.write(self.fd, _log_entry(line, png))

    def close(self) -> None:
        os.fsync(self.fd)
        os.close(self.fd)


def _execute(out: Path, jobs: list[tuple], finished: dict[str, tuple[bytes, str]], replaceable: frozenset[str], *,
             workers: int, executor: str, ray_address: str | None, progress: Progress | None) -> None:
    """Generate every job not in `finished`, logging each as it completes (picture first, never over
    a file of someone else's: `replaceable` are the pictures mmnp's manifest or log list)."""
    todo = [job for job in jobs if _job_id(job) not in finished]
    if progress:
        progress(len(jobs) - len(todo), len(jobs))
    if not todo:
        return
    log = _Log(out)
    results = _run(todo, workers, executor, ray_address)
    try:
        for id, line, png in results:
            digest = NO_IMAGE
            if png is not None:
                _refuse_foreign_picture(out, id, png, replaceable)
                atomic_write(out / image_name(id), png)
                digest = hashlib.sha256(png).hexdigest()
            log.add(line, digest)
            finished[id] = (line, digest)
            if progress:
                progress(len(finished), len(jobs))
    finally:
        results.close()  # stops and reaps the worker pool at once, also on Ctrl-C
        log.close()


def _finish(out: Path, spec: GenerateSpec, state: dict, finished: dict[str, tuple[bytes, str]]) -> dict:
    """Shards from the log in index order, then the manifest; the log and state go last."""
    for task, difficulty in spec.shards():
        lines = [finished[instance_id(task, difficulty, i)][0] for i in range(spec.count)]
        atomic_write(check_writable_inside(out, f"{task}/{difficulty}.jsonl"), b"\n".join(lines) + b"\n")
    manifest = build_manifest(out, spec, spec.shards(), ortools=state["ortools_version"],
                              versions=state["task_versions"])
    atomic_write(out / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    (out / LOG).unlink(missing_ok=True)
    (out / IN_PROGRESS).unlink()
    return manifest


def _refuse_changed_versions(state: dict, spec: GenerateSpec, remaining: list[tuple], folder: Path) -> None:
    """Finishing a run with other task or OR-Tools versions than it started with would mix two
    kinds of instance or reference in one dataset."""
    now = _state_for(spec, None)
    changed = sorted({job[0] for job in remaining if state["task_versions"].get(job[0]) != now["task_versions"][job[0]]})
    if changed:
        then = ", ".join(f"{t} {state['task_versions'].get(t)}" for t in changed)
        here = ", ".join(f"{t} {now['task_versions'][t]}" for t in changed)
        raise DataError(f"{folder} was started with other task versions ({then}; this mmnp has {here}); finish it "
                        "with the mmnp that started it, or start again with --overwrite")
    if spec.optimal and remaining and state["ortools_version"] != now["ortools_version"]:
        raise DataError(f"{folder} was started with OR-Tools {state['ortools_version']}, this is "
                        f"{now['ortools_version']}; exact references differ between versions: finish it with "
                        "the same OR-Tools, or start again with --overwrite")


# -- one run ------------------------------------------------------------------------------------

def generate_dataset(
    out: str | Path,
    spec: GenerateSpec,
    *,
    workers: int = 1,
    overwrite: bool = False,
    progress: Progress | None = None,
    notify: Notify | None = None,
    part: tuple[int, int] | None = None,
    executor: str = "process",
    ray_address: str | None = None,
) -> dict:
    """Write the dataset described by `spec` to `out` and return its manifest (for a `part`
    K of N: write that part's instances for `merge_parts`, and return {"part", "instances",
    "arguments"}).

    Rerunning the same spec into the folder of an interrupted run finishes it, keeping every
    instance already finished; on a finished folder it checks every record and picture and
    regenerates only the damaged instances (telling `notify` what was wrong), else leaves it as
    it is. `overwrite` removes only the files the folder's own mmnp manifest or log lists and
    that still hold what it says. Two runs on one folder are refused (the folder's lock)."""
    out = Path(out)
    if executor not in EXECUTORS:
        raise UsageError(f"--executor {executor!r}: choose one of {', '.join(EXECUTORS)}")
    _refuse_foreign(out)
    with FolderLock(out, option="--out", remove=True):
        _remove_stale_temporaries(out, spec)
        state = _read_state(out)
        beside = _read_json(out / MANIFEST) if state is not None and not (out / LOG).exists() else None
        if part is None and isinstance(beside, dict) and beside.get("arguments") == state["arguments"]:
            # a state beside its dataset's manifest and no log: the run stopped after `_finish` removed
            # the log, or a repair before `_start` wrote it; the folder is a finished dataset, checked as one
            (out / IN_PROGRESS).unlink()
            state = None
        if overwrite:  # everything checked before anything is deleted
            removable, kept = _generated_files(out, state)
            _refuse_foreign_files(out, spec, part, None, ours=removable)
            _remove_generated(out, removable, kept, notify)
            state = None
        wanted = _state_for(spec, part)
        manifest, salvaged = _existing(out, spec, part, state, wanted, notify)  # another run's folder: refused
        if manifest is not None and salvaged is None:
            return manifest  # finished and intact
        _refuse_foreign_files(out, spec, part, state)
        replaceable = _listed_paths(out)  # before a dropped line leaves the log: its picture is still mmnp's
        jobs = jobs_of(spec, part)
        fresh = state is None and salvaged is None
        if state is None:
            state = _start(out, wanted, manifest, salvaged)
        finished, dropped = _read_log(out, jobs, spec.images)
        remaining = [job for job in jobs if _job_id(job) not in finished]
        _refuse_changed_versions(state, spec, remaining, out)
        if dropped:  # once the run goes on: what it left out is not reported again by the next run
            made = {image_name(id) for id in finished}  # the dropped ones' pictures stay mmnp's to write over
            state = {**state, "remade": sorted(p for p in replaceable if p.endswith(".png") and p not in made)}
            atomic_write(out / IN_PROGRESS, json.dumps(state, indent=1))
            _write_log(out, finished.values())
            if notify:
                notify(f"{len(dropped)} finished instance(s) in {out} cannot be kept (the first: {dropped[0]}); "
                       "generating them again")
        if finished and remaining and salvaged is None and notify:
            notify(f"resuming: {len(finished)} of {len(jobs)} instances already finished")
        try:
            _execute(out, jobs, finished, replaceable, workers=workers, executor=executor, ray_address=ray_address,
                     progress=progress)
        except UsageError:  # refused before anything was made: no state is left behind to resume
            if fresh and not finished:
                (out / LOG).unlink(missing_ok=True)
                (out / IN_PROGRESS).unlink()
            raise
        if part is not None:
            return {"part": list(part), "instances": len(jobs), "arguments": spec.to_json()}
        return _finish(out, spec, state, finished)


def _existing(out: Path, spec: GenerateSpec, part: tuple[int, int] | None, state: dict | None, wanted: dict,
              notify: Notify | None) -> tuple[dict | None, dict[str, tuple[bytes, str]] | None]:
    """What `out` already holds for this run: (its finished manifest, the instances to keep of it:
    None when it is intact); (None, None) for an unfinished run of this spec, or nothing. Refuses
    an unfinished or finished run of another dataset or part."""
    if state is not None:
        if (state["arguments"], state["part"]) != (wanted["arguments"], wanted["part"]):
            raise UsageError(f"{out} holds an unfinished generation of a different "
                             f"{'part or ' if part or state['part'] else ''}dataset; rerun its own command to "
                             "finish it, pass --overwrite to replace it, or choose another --out")
        return None, None
    if not (out / MANIFEST).exists():
        return None, None
    manifest = _read_json(out / MANIFEST)
    if part is not None:
        raise UsageError(f"{out} holds a finished dataset; a part (--shard) is written to a folder of its own")
    if not isinstance(manifest, dict):
        raise UsageError(f"{out / MANIFEST} is damaged (not a JSON object), and as it alone says which files are "
                         f"mmnp's, nothing in {out} is used or replaced: restore it from a copy, or choose an empty --out")
    if manifest.get("arguments") != spec.to_json():
        raise UsageError(f"{out} is not empty and holds a different dataset; pass --overwrite "
                         "to replace it, or choose another --out")
    return manifest, _salvage(out, manifest, spec, notify)


def _start(out: Path, wanted: dict, manifest: dict | None, salvaged: dict[str, tuple[bytes, str]] | None) -> dict:
    """Begin a run in `out`: its state and its log (holding the `salvaged` instances); the state."""
    state = wanted
    if salvaged:  # the kept instances' versions: finishing with others would mix two kinds
        state = {**wanted, "task_versions": manifest["task_versions"],
                 "ortools_version": manifest["ortools_version"]}
    atomic_write(out / IN_PROGRESS, json.dumps(state, indent=1))
    _write_log(out, (salvaged or {}).values())
    return state


@dataclass(frozen=True)
class Audit:
    """What `mmnp audit` makes again: the dataset (checked against its manifest), its arguments and
    the jobs of the instances chosen."""

    dataset: Any  # mmnp.dataset.Dataset
    spec: GenerateSpec
    jobs: list[tuple]


def plan_audit(data: str | Path, sample: int | None = None, *, seed: int = 0) -> Audit:
    """The audit of `sample` instances of a generated dataset (chosen at random by `seed`; None:
    every one), refused before any work where it cannot be decisive: not a finished dataset (a
    --shard part: merge first), an imported one (no seed makes its instances), or one made with
    another mmnp, OR-Tools, task or picture version than this (its instances may differ for that alone)."""
    from random import Random

    from mmnp import __version__
    from mmnp.dataset import open_dataset
    from mmnp.task import PICTURE_VERSION

    data = Path(data)
    if not data.is_dir():
        raise UsageError(f"{data} is not a folder; `mmnp audit` takes a dataset folder written by `mmnp generate` "
                         "or `mmnp merge`")
    try:
        state = None if (data / MANIFEST).exists() else _read_state(data)
    except DataError:
        raise DataError(f"{data / IN_PROGRESS}: damaged, and {data} has no {MANIFEST}: not a dataset to audit; "
                        "audit the folder of a finished `mmnp generate` or `mmnp merge`") from None
    if state is not None:
        raise UsageError(f"{data} is {'a --shard part' if state.get('part') else 'an unfinished generation'}: "
                         + ("merge its parts (`mmnp merge PARTS... --out DIR`), then audit DIR" if state.get("part")
                            else "finish it (rerun its `mmnp generate` command), then audit it"))
    dataset = open_dataset(data)  # the content against its manifest first: an edit there is refused now
    manifest, where = dataset.manifest, data / MANIFEST
    arguments = manifest["arguments"]
    if "import" in arguments:
        raise UsageError(f"{where}: an imported dataset (`mmnp import {arguments['import']}`), whose instances are "
                         "not made from a seed; import its files again and compare the two manifests' hashes")
    spec = GenerateSpec.from_json(arguments)
    made_with = {"mmnp": manifest.get("mmnp_version"), "OR-Tools": manifest.get("ortools_version"),
                 "pictures": manifest.get("picture_version"), **manifest["task_versions"]}
    here = {"mmnp": __version__, "OR-Tools": ortools_version() if spec.optimal or made_with["OR-Tools"] else None,
            "pictures": PICTURE_VERSION, **task_versions(manifest["task_versions"])}
    if not spec.images:
        made_with.pop("pictures"), here.pop("pictures")
    if differ := [name for name in made_with if made_with[name] != here[name]]:
        said = lambda versions: ", ".join(f"{n} {versions[n] or 'none'}" for n in differ)  # noqa: E731
        raise UsageError(f"{where}: made with {said(made_with)}, this is {said(here)}: its instances may differ for "
                         "that alone; audit it where the versions it was made with are installed")
    jobs = jobs_of(spec)
    if sample is not None and sample < len(jobs):
        jobs = [jobs[i] for i in sorted(Random(seed).sample(range(len(jobs)), sample))]
    return Audit(dataset, spec, jobs)


def run_audit(audit: Audit, workers: int = 1, progress: Callable[[int, int], None] | None = None,
              ) -> tuple[list[str], list[str]]:
    """Make the audit's instances again in full, the exact solve included, and compare each with its
    record line, its picture file and the picture digest the manifest lists, byte for byte: (the ids
    made again, one line per instance that differs, naming what differs). A resumed run or a merge
    checks kept instances cheaply and takes what only CP-SAT could say again as written (an exact
    answer's proof, its bound, the solver's work: `Task.mismatch`); this is the check of those, for
    data made elsewhere (parts from other machines, a download), short of generating it all again."""
    dataset = audit.dataset
    stored = dataset.record_lines()
    made, problems = [], []
    for id, line, png in _run(audit.jobs, workers, "process", None):
        made.append(id)
        found = _audit_difference(stored.get(id), line)
        if png is not None:
            picture = dataset.path / image_name(id)
            try:
                found += [] if dataset.picture(id) == png else [f"its picture file {picture}"]
            except DataError:
                found.append(f"its picture file {picture} (unreadable, or not the one the manifest lists)")
        if found:
            problems.append(f"{id}: {'; '.join(found)}")
        if progress is not None:
            progress(len(made), len(audit.jobs))
    return sorted(made), sorted(problems)


def audit_dataset(data: str | Path, sample: int | None = None, *, seed: int = 0, workers: int = 1,
                  progress: Callable[[int, int], None] | None = None) -> tuple[list[str], list[str]]:
    """`plan_audit` then `run_audit`: (the ids made again, one line per instance that differs)."""
    return run_audit(plan_audit(data, sample, seed=seed), workers, progress)


def _audit_difference(stored: bytes | None, made: bytes) -> list[str]:
    """What differs between a stored record line and the one made again, member by member, down to
    the field (`its reference's optimal's proven (stored false, made again true)`); a member absent
    differs from one that is null, and 1 from true."""
    if stored is None:
        return ["not in the dataset"]
    if stored == made:
        return []
    out = _differences("its", json.loads(stored), json.loads(made), depth=3)
    return out or ["its record's spelling"]


_ABSENT = object()


def _differences(name: str, was: Any, now: Any, depth: int) -> list[str]:
    """`name` and each of its fields, `depth` levels down, whose stored and made values differ."""
    if was is not _ABSENT and now is not _ABSENT and canonical_json(was) == canonical_json(now):
        return []
    if depth and isinstance(was, dict) and isinstance(now, dict):
        return [line for key in dict.fromkeys([*now, *was])
                for line in _differences(f"{name} {key}" if name == "its" else f"{name}'s {key}",
                                         was.get(key, _ABSENT), now.get(key, _ABSENT), depth - 1)]
    shown = lambda value: "absent" if value is _ABSENT else _cut(json.dumps(value, ensure_ascii=False))  # noqa: E731
    return [f"{name} (stored {shown(was)}, made again {shown(now)})"]


def _cut(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else f"{text[:limit]}..."


def merge_parts(out: str | Path, parts: list[str | Path], *, notify: Notify | None = None,
                progress: Progress | None = None) -> dict:
    """One dataset from the finished parts 1..N of a `--shard K/N` generation: the same bytes and
    hashes as one run. Every part is checked (its instances are those its K/N names, its pictures
    match its log) and must be complete; the parts' folders are locked while they are read."""
    out = Path(out)
    folders = [Path(p) for p in parts]
    if not folders:
        raise UsageError("give the part folders to merge: mmnp merge PART... --out OUT")
    seen: dict[Path, Path] = {}
    for folder in folders:  # before any lock: a folder given twice is not "in use by another run"
        if (real := folder.resolve()) in seen:
            raise UsageError(f"{folder} is given twice (as {seen[real]} too); give each part's folder once")
        seen[real] = folder
    with ExitStack() as locks:
        states = []
        for folder in folders:
            if not folder.is_dir():
                raise DataError(f"{folder}: no such folder (a part written by `mmnp generate --shard K/N`)")
            locks.enter_context(FolderLock(folder, option="--out", remove=True))
            state = _read_state(folder)
            if state is None or not state["part"]:
                raise DataError(f"{folder}: not a part of a generation (it has no {IN_PROGRESS} with a --shard K/N)")
            states.append(state)
        first = states[0]
        given = _all_parts(folders, states)
        n = first["part"][1]
        try:
            spec = GenerateSpec.from_json(first["arguments"])
        except UsageError as e:
            raise DataError(f"{folders[0]}: its parts were generated with arguments this mmnp refuses ({e}); "
                            "merge them with the mmnp that made them, or generate them again") from None
        finished: dict[str, tuple[bytes, str]] = {}
        sources: dict[str, Path] = {}
        for k, folder in sorted(given.items()):
            jobs = jobs_of(spec, (k, n))
            found, dropped = _read_log(folder, jobs, spec.images, repair=False)
            if len(found) < len(jobs):
                _refuse_incomplete(folder, (k, n), first["arguments"], len(found), len(jobs), dropped)
            if dropped and notify:
                notify(f"{folder}: {len(dropped)} line(s) of its log left out (the first: {dropped[0]}); every "
                       f"instance of part {k}/{n} is there without them")
            finished.update(found)
            sources.update({id: folder for id in found})
        _refuse_foreign(out)
        with FolderLock(out, option="--out", remove=True):
            _remove_stale_temporaries(out, spec)
            state = {**first, "part": None}
            if _read_state(out) != state and any(entry.name != FolderLock.NAME for entry in out.iterdir()):
                raise UsageError(f"--out {out} is not empty; merge into a new folder")
            atomic_write(out / IN_PROGRESS, json.dumps(state, indent=1))  # a killed merge is rerun
            ordered = [_job_id(job) for job in jobs_of(spec)]
            for done, id in enumerate(ordered, 1):
                if finished[id][1] != NO_IMAGE:
                    atomic_write(check_writable_inside(out, image_name(id)), (sources[id] / image_name(id)).read_bytes())
                if progress:
                    progress(done, len(ordered))
            _write_log(out, (finished[id] for id in ordered))  # now an unfinished run `generate` could finish
            return _finish(out, spec, state, finished)


def _refuse_incomplete(folder: Path, part: tuple[int, int], arguments: dict, found: int, total: int,
                       dropped: list[str]) -> None:
    """A part merge cannot take whole: unfinished, or with instances it cannot keep (`dropped`,
    from `_read_log`). Either way the part's own command, rerun into its folder, makes exactly
    the instances it lacks (a merge only reads its parts), so that is the one next step."""
    from mmnp.export import source_command

    k, n = part
    command = source_command({"arguments": arguments}, shlex.quote(str(folder)), part)
    if not dropped:
        raise DataError(f"{folder}: part {k}/{n} is unfinished ({found} of {total} instances); finish it with "
                        f"`{command}`, then merge")
    more = f" (and {len(dropped) - 1} more)" if len(dropped) > 1 else ""
    raise DataError(f"{folder}: part {k}/{n} is damaged, {found} of {total} instances intact: {dropped[0]}{more}; "
                    f"repair it with `{command}` (it makes only those instances again), then merge")


def _all_parts(folders: list[Path], states: list[dict]) -> dict[int, Path]:
    """Each part K's folder, when the folders hold every part 1..N of one generation, once each."""
    first = states[0]
    for folder, state in zip(folders, states):
        for key in ("arguments", "task_versions", "ortools_version"):
            if state[key] != first[key]:
                raise DataError(f"{folder}: its {key} differ from {folders[0]}'s; these parts are not of "
                                "one generation")
        if state["part"][1] != first["part"][1]:
            raise DataError(f"{folder} is part {state['part'][0]}/{state['part'][1]}, {folders[0]} is part "
                            f"{first['part'][0]}/{first['part'][1]}: parts of different splits")
    n = first["part"][1]
    given: dict[int, Path] = {}
    for folder, state in zip(folders, states):
        k = state["part"][0]
        if k in given:
            raise UsageError(f"part {k}/{n} is given twice ({given[k]} and {folder})")
        given[k] = folder
    if missing := [f"{k}/{n}" for k in range(1, n + 1) if k not in given]:
        raise UsageError(f"missing part(s) {', '.join(missing)}: generate them with --shard, then merge all {n}")
    return given


# -- a finished folder: damage, containment ------------------------------------------------------

def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


DERIVED = ("format_version", "counts", "total", "benchmark_hash", "references_hash", "records")  # a manifest's
#   members that its records determine (versions and arguments say how they were made)


def _salvage(out: Path, manifest: dict, spec: GenerateSpec, notify: Notify | None,
             ) -> dict[str, tuple[bytes, str]] | None:
    """None when the finished dataset in `out` is intact (every record and picture as its
    manifest lists them, and the manifest consistent); else its intact instances, to be kept
    while the damaged ones are generated again. Damage is blamed on its shard, and only there;
    where only pictures' digests and their entries disagree and the files give the manifest's two
    hashes, the entries are what was edited (no instance is made again; its pictures are still
    drawn again and compared when kept)."""
    say = notify or (lambda message: None)
    try:
        validate_manifest(manifest, str(out / MANIFEST))
    except DataError as e:
        say(f"damaged: {e}; regenerating every instance")
        return {}
    # the records block is what the shards are checked against; the members derived from it (the
    # hashes among them) are compared with what the records make at the end, and written again
    checked = {(task, difficulty): _salvage_shard(out, f"{task}/{difficulty}.jsonl", manifest["records"], spec)
               for task, difficulty in spec.shards()}
    found = [record for _, records, _ in checked.values() for record in records]
    differences = [manifest_side for _, _, differ in checked.values() for _, _, manifest_side in differ]
    pngs = {r.digest.id: r.png for r in found}
    confirmed = derive_hashes([r.digest for r in found], lambda d: pngs[d.id]) == \
        (manifest["benchmark_hash"], manifest["references_hash"])
    if differences and None not in differences and confirmed and not any(p for p, _, _ in checked.values()):
        more = f" (and {len(differences) - 1} more)" if len(differences) > 1 else ""
        say(f"damaged: {out / MANIFEST}: {differences[0]}{more}; the shards and pictures are intact (they give its "
            "benchmark_hash and references_hash): writing it again")
        return {r.digest.id: (r.line, r.png) for r in found}
    kept: dict[str, tuple[bytes, str]] = {}
    intact = True
    for (task, difficulty), (problem, records, differ) in checked.items():
        wrong = {id for id, _, _ in differ}
        kept.update((r.digest.id, (r.line, r.png)) for r in records if r.digest.id not in wrong)
        if problem := problem or next((file_side for _, file_side, _ in differ), None):
            intact = False
            say(f"damaged: {problem}; regenerating {spec.count - len(records) + len(wrong)} instance(s) of "
                f"{task}/{difficulty}")
    if intact:  # every record and picture as listed: the rest of the manifest must be what they make
        made = build_manifest(out, spec, spec.shards(), ortools=manifest["ortools_version"],
                              versions=manifest["task_versions"])
        if changed := [key for key in DERIVED if manifest.get(key) != made[key]]:
            say(f"damaged: {out / MANIFEST}: its {', '.join(changed)} differ from what its records make; writing it "
                "again")
            intact = False
    return None if intact else kept


class _OnDisk(NamedTuple):
    """A record intact on disk (it belongs where it lies, was made with the run's settings, its
    picture is there): its line, digests and picture's SHA-256 (or -), whatever the manifest lists."""

    line: bytes
    digest: Digest
    png: str


def _salvage_shard(out: Path, rel: str, records: dict[str, list[str]], spec: GenerateSpec,
                   ) -> tuple[str | None, list[_OnDisk], list[tuple[str, str, str]]]:
    """(the first damage found in one shard or its pictures, its records intact on disk, and for
    each of those that its manifest entry (in `records`) does not match: (id, the difference
    named at the file, named at the manifest's field))."""
    file = out / rel
    rows = {text.split(" ", 1)[0]: text.split(" ")[1:] for text in records.get(rel, [])}
    try:
        raw = file.read_bytes()
    except OSError as e:
        return f"{file}: {'missing' if isinstance(e, FileNotFoundError) else e.strerror}", [], []
    found: dict[str, _OnDisk] = {}
    differ: list[tuple[str, str, str]] = []
    problem = None
    task, difficulty = rel[:-len(".jsonl")].split("/")
    lines = raw.split(b"\n")
    for number, line in enumerate(lines[:-1] if not lines[-1] else lines, 1):
        where = f"{file}:{number}"
        try:
            digest = digest_line(line, where)
            if (digest.task, digest.difficulty) != (task, difficulty) or digest.id in found \
                    or digest.index >= spec.count or digest.seed != instance_seed(spec.seed, digest.index):
                raise DataError(f"{where}: {digest.id} does not belong there")
            inst = parse_line(line, digest)
            if wrong := get_task(task).settings_mismatch(inst, spec.overrides(task), spec.optimal,
                                                        spec.image_size if spec.images else None, spec.time_limit):
                raise DataError(f"{where}: {digest.id} was not made with the settings {MANIFEST} names: {wrong}")
            png = NO_IMAGE
            if inst.image is not None:
                picture = out / image_name(digest.id)
                try:
                    png = hashlib.sha256(picture.read_bytes()).hexdigest()
                except OSError:
                    raise DataError(f"{picture}: missing (the record of {digest.id} names it)") from None
        except DataError as e:
            problem = problem or str(e)
            continue
        found[digest.id] = _OnDisk(line, digest, png)
        if (difference := _entry_difference(rows.get(digest.id), digest, png, where, out)) is not None:
            differ.append((digest.id, *difference))
    if not problem and (len(found) != spec.count or not raw.endswith(b"\n")):
        problem = f"{file}: holds {len(found)} records, the dataset has {spec.count}"
    return problem, list(found.values()), differ


def _entry_difference(entry: list[str] | None, digest: Digest, png: str, where: str, out: Path,
                      ) -> tuple[str, str | None] | None:
    """How a record intact on disk differs from its manifest entry (record, reference and PNG
    digests): (named at the file, as `mmnp generate` would make it again; named at the manifest's
    field where the entry alone may be wrong, else None); None when it does not differ. Only a PNG
    digest may be the entry's fault alone: a kept instance's picture is drawn again and compared
    (`Task.mismatch`), whereas a record's or reference's digest is all that vouches for what only
    CP-SAT could say again (proof, bound, work), which recomputed hashes would not."""
    if entry is None:
        return f"{where}: {digest.id} is not in {MANIFEST}", None
    actual = [digest.record, digest.reference, png]
    at = next((i for i in range(3) if entry[i] != actual[i]), None)
    if at is None:
        return None
    picture = out / image_name(digest.id)
    if at < 2:
        return f"{where}: {('record', 'the reference of')[at]} {digest.id} differs from the one generated", None
    return (f"{picture}: the picture of {digest.id} differs from the one generated",
            f"its records entry for {digest.id} has the PNG digest {entry[at][:12]}..., {picture} gives "
            f"{actual[at][:12]}...")


def _refuse_foreign(out: Path) -> None:
    """Before taking a folder's lock: refuse a file, and a folder of someone else's files
    (nothing of mmnp's there: no manifest, no unfinished run)."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file, not a folder; choose a folder")
    if not out.is_dir():
        return
    entries = {entry.name for entry in out.iterdir()}
    if entries - {FolderLock.NAME} and not entries & {MANIFEST, IN_PROGRESS, LOG}:
        raise UsageError(f"{out} holds files that `mmnp generate` did not write; refusing to use or delete "
                         "them, choose an empty --out")


def _refuse_foreign_files(out: Path, spec: GenerateSpec, part: tuple[int, int] | None, state: dict | None,
                          ours: set[str] | None = None) -> None:
    """Nothing of someone else's may lie where this run will write (mmnp replaces only its own
    files), and no link may take a write outside the folder. `ours`: the files --overwrite is
    about to delete (checked before it deletes any)."""
    for task in spec.tasks:
        check_writable_inside(out, f"{task}/images")
    if ours is None and (out / MANIFEST).exists():
        return  # its own dataset, checked or repaired (`_existing` reads its manifest)
    if ours is None and state is not None:
        # this run resumed (`_existing` refused another's): a shard is its own only when it holds only its
        # log's lines (a run killed while finishing wrote it); a picture is checked as it is written
        # (`_refuse_foreign_picture`)
        logged: dict[str, Callable[[bytes], bool]] = {}
        _listed_by_log(out, state, logged)
        for rel in dict.fromkeys(f"{job[0]}/{job[1]}.jsonl" for job in jobs_of(spec, part)):
            path = out / rel
            if (path.exists() or path.is_symlink()) and (path.is_symlink() or not path.is_file()
                                                         or not logged[rel](path.read_bytes())):
                raise UsageError(f"{path} exists and is not a file mmnp wrote here; mmnp never replaces files it did "
                                 "not write: move it away, then rerun the same command to finish")
        return
    for job in jobs_of(spec, part):
        id = _job_id(job)
        for rel in (f"{job[0]}/{job[1]}.jsonl", image_name(id)):
            if rel in (ours or ()):
                continue
            if (out / rel).exists() or (out / rel).is_symlink():
                raise UsageError(f"{out / rel} exists and is not listed by an mmnp manifest here; mmnp never "
                                 "replaces files it did not write: move it away, or choose another --out")


def _remove_stale_temporaries(out: Path, spec: GenerateSpec) -> None:
    """The temporaries of files generation writes, under the lock (so their writers are gone)."""
    remove_temporaries(out, lambda name: name in (MANIFEST, IN_PROGRESS, LOG))
    manifest = _read_json(out / MANIFEST)
    tasks = set(spec.tasks) | set((manifest or {}).get("counts", {}) if isinstance(manifest, dict) else {})
    for task in filter(is_name, tasks):
        remove_temporaries(out / task, lambda name: name.endswith(".jsonl"))
        remove_temporaries(out / task / "images", lambda name: name.endswith(".png"))


def _generated_files(out: Path, state: dict | None) -> tuple[set[str], list[str]]:
    """What --overwrite may delete: (the files this folder's own generation wrote, the listed
    files it must keep, named). A file is deleted only when the folder's mmnp manifest (or
    unfinished run's log) lists it, it is a plain file reached without a link, and it still holds
    what was listed (shards record by record, pictures by SHA-256)."""
    listed: dict[str, Callable[[bytes], bool]] = {}
    genuine = _listed_by_manifest(out, listed)
    if state is not None:
        genuine = True
        _listed_by_log(out, state, listed)
    if not genuine:
        if any(entry.name != FolderLock.NAME for entry in out.iterdir()):
            raise UsageError(f"{out}: its {MANIFEST} is not one `mmnp generate` wrote, so nothing there is known to be "
                             "mmnp's; refusing to delete anything: choose an empty --out")
        return set(), []
    removable, kept = set(), []
    for rel, matches in listed.items():
        path = inside(out, rel)
        if path is None or not path.exists():
            if path is None:
                kept.append(f"{out / rel} (reached through a link)")
            continue
        if path.is_file() and matches(path.read_bytes()):
            removable.add(rel)
        else:
            kept.append(f"{path} (not what the manifest lists)")
    return removable, kept


def _remove_generated(out: Path, removable: set[str], kept: list[str], notify: Notify | None) -> None:
    """--overwrite: delete `removable` (`_generated_files`) and its emptied folders, and the run's
    own state files; name what stays."""
    for rel in removable:
        (out / rel).unlink()
    for rel in sorted({str(Path(r).parent) for r in removable}, key=len, reverse=True):
        folder = inside(out, rel)
        if folder is not None and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
    for name in (LOG, IN_PROGRESS, MANIFEST):
        if (out / name).is_file() and not (out / name).is_symlink():
            (out / name).unlink()
    if kept and notify:
        notify(f"--overwrite kept {len(kept)} file(s) mmnp cannot tell are its own: {'; '.join(kept[:3])}"
               + (" ..." if len(kept) > 3 else ""))


def _listed_paths(out: Path) -> frozenset[str]:
    """The files the folder's own manifest or unfinished run's log lists, whatever they now hold:
    mmnp's, which a repair writes over (an edited picture is made again)."""
    listed: dict[str, Callable[[bytes], bool]] = {}
    _listed_by_manifest(out, listed)
    state = _read_json(out / IN_PROGRESS)
    if isinstance(state, dict) and isinstance(state.get("arguments"), dict):
        _listed_by_log(out, state, listed)
        remade = state.get("remade")  # pictures of lines an interrupted repair left out of the log
        listed.update((rel, bool) for rel in (remade if isinstance(remade, list) else []) if isinstance(rel, str))
    return frozenset(listed)


def _refuse_foreign_picture(out: Path, id: str, png: bytes, replaceable: frozenset[str]) -> None:
    """A picture is written where there is none, where the folder's manifest or log lists one (a
    repair replaces it), or over the same bytes (a run killed between a picture and its log line
    left it); never over anything else, which is not mmnp's to replace."""
    rel = image_name(id)
    path = out / rel
    if rel in replaceable or not (path.exists() or path.is_symlink()):
        return
    if path.is_file() and not path.is_symlink() and path.read_bytes() == png:
        return
    raise UsageError(f"{path} exists and is not a picture mmnp wrote here; mmnp never replaces files it did not "
                     "write: move it away, then rerun the same command to finish")


def _listed_by_manifest(out: Path, listed: dict[str, Callable[[bytes], bool]]) -> bool:
    """Add what the folder's manifest lists (of any format mmnp wrote) to `listed`, each with the
    check that a file still holds it; whether the manifest is one mmnp wrote."""
    manifest_file = out / MANIFEST
    if not manifest_file.is_file() or manifest_file.is_symlink():
        return False
    manifest = _read_json(manifest_file)
    try:
        validate_manifest(manifest, str(manifest_file))
    except DataError:
        return _listed_by_format2(manifest, listed)
    for rel, rows in manifest["records"].items():
        listed[rel] = _shard_matches(set(rows), rel)
        for text in rows:
            id, png = text.split(" ")[0], text.split(" ")[3]
            if png != NO_IMAGE:
                listed[image_name(id)] = _png_matches(png)
    return True


def _listed_by_log(out: Path, state: dict, listed: dict[str, Callable[[bytes], bool]]) -> None:
    """Add what an unfinished run wrote to `listed`: the pictures its log names, and the shards
    (holding only logged lines) that a run killed while finishing wrote."""
    log = out / LOG
    logged: set[bytes] = set()
    if log.is_file() and not log.is_symlink():
        for entry in log.read_bytes().split(b"\n"):
            png, _, line = entry.partition(b" ")
            try:
                digest = digest_line(line, str(log))
            except DataError:
                continue
            logged.add(line)
            if png != NO_IMAGE.encode():
                listed[image_name(digest.id)] = _png_matches(png.decode())
    arguments = state["arguments"]
    for task in filter(is_name, arguments.get("tasks", [])):
        for difficulty in filter(is_name, arguments.get("difficulties", [])):
            listed.setdefault(f"{task}/{difficulty}.jsonl",
                              lambda raw: raw.endswith(b"\n") and set(raw[:-1].split(b"\n")) <= logged)


def _shard_matches(rows: set[str], rel: str) -> Callable[[bytes], bool]:
    def matches(raw: bytes) -> bool:
        try:
            return {f"{d.id} {d.record} {d.reference}" for _, d in lines_of(raw, rel)} == \
                {text.rsplit(" ", 1)[0] for text in rows}
        except DataError:
            return False
    return matches


def _png_matches(digest: str) -> Callable[[bytes], bool]:
    return lambda raw: hashlib.sha256(raw).hexdigest()[:len(digest)] == digest and len(digest) >= 32


def _listed_by_format2(manifest: Any, listed: dict[str, Callable[[bytes], bool]]) -> bool:
    """A manifest written by mmnp before format 3 (`records`: "id line-sha256 reference-sha256
    png-sha256", 32 hex each): what it lists, so --overwrite can replace an old dataset."""
    if not isinstance(manifest, dict) or manifest.get("format_version") != 2 \
            or not isinstance(manifest.get("records"), dict):
        return False
    for rel, rows in manifest["records"].items():
        if not isinstance(rows, list) or not all(isinstance(r, str) and len(r.split(" ")) == 4 for r in rows):
            return False
        try:
            task, difficulty, _ = parse_instance_id(rows[0].split(" ")[0]) if rows else (None, None, 0)
        except UsageError:
            return False
        if rows and rel != f"{task}/{difficulty}.jsonl":
            return False
        lines = [r.split(" ")[1] for r in rows]
        listed[rel] = lambda raw, lines=lines: [hashlib.sha256(line).hexdigest()[:32]
                                                 for line in raw.split(b"\n")[:-1]] == lines
        for text in rows:
            id, png = text.split(" ")[0], text.split(" ")[3]
            if png != NO_IMAGE:
                try:
                    listed[image_name(id)] = _png_matches(png)
                except UsageError:
                    return False
    return True
