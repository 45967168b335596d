"""Datasets on disk: generation (parallel, resumable, byte-identical at any worker count)
and loading.

    OUT/manifest.json                 version, arguments, counts, hashes
    OUT/<task>/<difficulty>.jsonl     one instance record a line
    OUT/<task>/images/<id>.png        its picture
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterator

from mmnp.core import Instance
from mmnp.registry import get_task
from mmnp.task import DEFAULT_TIME_LIMIT

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
IN_PROGRESS = ".mmnp-generate.json"  # the arguments of an unfinished generation, for resuming
SEED_STRIDE = 1_000_000  # instance i of a run with --seed s has seed s * SEED_STRIDE + i


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
            raise ValueError(f"--count must be between 1 and {SEED_STRIDE - 1}, got {self.count}")
        for key in self.params:
            if not any(self._takes(t, key) for t in self.tasks):
                raise ValueError(f"parameter {key!r} belongs to none of the tasks {', '.join(self.tasks)}")
        for name in self.tasks:
            for difficulty in self.difficulties:  # fail here, not in a worker, on a bad name or value
                get_task(name).config(difficulty, **self.overrides(name))

    def _takes(self, task: str, key: str) -> bool:
        scope, _, param = key.rpartition(".")
        return scope == task or (not scope and param in get_task(task).generator.Config.__dataclass_fields__)

    def overrides(self, task: str) -> dict[str, Any]:
        return {key.rpartition(".")[2]: value for key, value in self.params.items() if self._takes(task, key)}

    def to_json(self) -> dict:
        return json.loads(json.dumps(asdict(self)))


# The canonical test set every leaderboard shares. Its benchmark_hash is in the README.
PRESETS: dict[str, dict[str, Any]] = {
    "mm-np-bench-v1": {"tasks": "all", "difficulties": ("easy", "medium", "hard"), "count": 34, "seed": 2026},
    # picture version 2 (see README): new instances, so results on it are never mixed with v1's
    "mm-np-bench-v2": {"tasks": "all", "difficulties": ("easy", "medium", "hard"), "count": 34, "seed": 2027},
}


def instance_seed(base_seed: int, index: int) -> int:
    return base_seed * SEED_STRIDE + index


def instance_id(task: str, difficulty: str, index: int) -> str:
    return f"{task}-{difficulty}-{index:04d}"


def atomic_write(path: Path, data: bytes | str) -> None:
    """Write via a temporary file and rename, so a crash never leaves a half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with open(tmp, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _build(job: tuple) -> tuple[str, bytes | None]:
    """One instance: its JSONL line and PNG bytes. A pure function of `job` (runs in workers)."""
    name, difficulty, index, seed, overrides, images, optimal, size, time_limit = job
    task = get_task(name)
    inst = task.generate(difficulty, seed, id=instance_id(name, difficulty, index), optimal=optimal,
                         time_limit=time_limit, **overrides)
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
) -> dict:
    """Write the dataset described by `spec` to `out` and return its manifest.

    Rerunning the same spec into the folder of an interrupted run finishes it, keeping the
    shards already written; a finished folder with the same spec is left as it is.
    """
    out = Path(out)
    state = out / IN_PROGRESS
    if out.exists() and any(out.iterdir()):
        previous = _read_json(state) or (_read_json(out / MANIFEST) or {}).get("arguments")
        if overwrite:
            if previous is None:
                raise FileExistsError(f"{out} holds files that `mmnp generate` did not write; "
                                      "refusing to delete them, choose an empty --out")
            shutil.rmtree(out)
        elif previous != spec.to_json():
            raise FileExistsError(f"{out} is not empty and holds a different dataset; pass --overwrite "
                                  "to replace it, or choose another --out")
        elif not state.exists():
            return json.loads((out / MANIFEST).read_text())  # already complete
    atomic_write(state, json.dumps(spec.to_json(), indent=1))

    shards = [(t, d) for t in spec.tasks for d in spec.difficulties]
    todo = [s for s in shards if not (out / s[0] / f"{s[1]}.jsonl").exists()]
    jobs = [(t, d, i, instance_seed(spec.seed, i), spec.overrides(t), spec.images, spec.optimal,
             spec.image_size, spec.time_limit) for t, d in todo for i in range(spec.count)]
    done = 0
    results = _run(jobs, workers)
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

    manifest = build_manifest(out, spec, shards)
    atomic_write(out / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    state.unlink()
    return manifest


def _run(jobs: list[tuple], workers: int) -> Iterator[tuple[str, bytes | None]]:
    """Results in job order, whatever the worker count (so the bytes never depend on it)."""
    if workers <= 1 or len(jobs) < 2:
        yield from map(_build, jobs)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(_build, jobs, chunksize=max(1, min(16, len(jobs) // (8 * workers))))


def build_manifest(out: Path, spec: GenerateSpec, shards: list[tuple[str, str]]) -> dict:
    from mmnp import __version__

    counts: dict[str, dict[str, int]] = {}
    files: dict[str, str] = {}
    bench = hashlib.sha256()
    for task, difficulty in shards:
        path = out / task / f"{difficulty}.jsonl"
        raw = path.read_bytes()
        files[f"{task}/{difficulty}.jsonl"] = hashlib.sha256(raw).hexdigest()
        images = hashlib.sha256()
        n = 0
        for line in raw.decode().splitlines():
            record = json.loads(line)
            bench.update(f"{record['id']}:{record['hash']}\n".encode())
            if record.get("image"):
                images.update(hashlib.sha256((out / record["image"]).read_bytes()).digest())
            n += 1
        if spec.images:
            files[f"{task}/images/{difficulty}-*.png"] = images.hexdigest()
        counts.setdefault(task, {})[difficulty] = n
    return {
        "format_version": FORMAT_VERSION,
        "mmnp_version": __version__,
        "arguments": spec.to_json(),
        "counts": counts,
        "total": sum(sum(c.values()) for c in counts.values()),
        # over (id, instance hash) pairs only: independent of image and solver library versions
        "benchmark_hash": bench.hexdigest(),
        "files": files,
    }


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def read_manifest(path: str | Path) -> dict:
    path = Path(path)
    manifest = _read_json(path / MANIFEST)
    if manifest is None:
        hint = (" (an unfinished generation is there: rerun the same `mmnp generate` command to finish it)"
                if (path / IN_PROGRESS).exists() else "")
        raise FileNotFoundError(f"{path} has no readable {MANIFEST}; is it a dataset written by `mmnp generate`?{hint}")
    return manifest


def load_dataset(path: str | Path, tasks: list[str] | None = None,
                 difficulties: list[str] | None = None) -> Iterator[Instance]:
    """Instances of a generated dataset, shard by shard in manifest order."""
    path = Path(path)
    for task, by_difficulty in read_manifest(path)["counts"].items():
        if tasks and task not in tasks:
            continue
        for difficulty in by_difficulty:
            if difficulties and difficulty not in difficulties:
                continue
            with open(path / task / f"{difficulty}.jsonl", encoding="utf-8") as f:
                for line in f:
                    if line.strip():
                        yield Instance.from_record(json.loads(line))


def find_instance(path: str | Path, instance_id: str) -> Instance:
    """The instance with `instance_id`, looking first in the shard its id names."""
    path = Path(path)
    manifest = read_manifest(path)
    guess = instance_id.split("-")
    order = sorted(((t, d) for t, ds in manifest["counts"].items() for d in ds),
                   key=lambda s: s != tuple(guess[:2]))
    for task, difficulty in order:
        for inst in load_dataset(path, [task], [difficulty]):
            if inst.id == instance_id:
                return inst
    raise KeyError(f"no instance {instance_id!r} in {path}; ids look like "
                   f"{instance_id_example(manifest)}")


def instance_id_example(manifest: dict) -> str:
    task, ds = next(iter(manifest["counts"].items()))
    return instance_id(task, next(iter(ds)), 0)
