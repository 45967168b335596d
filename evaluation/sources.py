"""Where evaluated instances come from: a generated dataset, or generation on the fly."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Callable

from mmnp.core import Instance
from mmnp.dataset import MANIFEST, instance_id, instance_seed, load_dataset, read_manifest
from mmnp.errors import DataError
from mmnp.registry import get_task, resolve_tasks


def dataset_identity(path: str | Path, manifest: dict) -> dict:
    """results.json's `dataset` block for a dataset folder. A stand-in with the contract's fields
    for `mmnp.dataset.dataset_identity` (the integrity check), which replaces it on merge."""
    return {"path": str(path), "benchmark_hash": manifest["benchmark_hash"],
            "references_hash": manifest.get("references_hash"), "preset": None, "modified": False,
            "content_hash": manifest["benchmark_hash"]}


def load_instances(data: Path | None, tasks: str, difficulties: list[str], count: int, seed: int,
                   limit: int | None, need_images: bool) -> tuple[list[Instance], Callable[[Instance], bytes], dict]:
    """(instances, image loader, dataset description for results.json)."""
    names = [t.name for t in resolve_tasks(tasks)]
    if data is not None:
        manifest = read_manifest(data)
        instances, per_shard = [], {}
        for inst in load_dataset(data, names, difficulties):
            shard = (inst.task, inst.difficulty)
            per_shard[shard] = per_shard.get(shard, 0) + 1
            if limit is None or per_shard[shard] <= limit:
                instances.append(inst)
        if not instances:
            raise ValueError(f"{data} holds no instances of tasks {','.join(names)} at {','.join(difficulties)}")

        root = Path(data).resolve()

        def image_loader(inst: Instance) -> bytes:
            if not inst.image:
                return get_task(inst.task).render(inst)  # a dataset made with --no-images
            path = (root / inst.image).resolve()
            if not path.is_relative_to(root):  # never read (and upload) a file outside the dataset
                raise DataError(f"{data}: instance {inst.id} has image {inst.image!r}, outside the dataset "
                                "folder; regenerate the dataset")
            try:
                return path.read_bytes()
            except OSError as e:
                raise DataError(f"{path}: cannot read instance {inst.id}'s image ({e.strerror}); regenerate the "
                                "dataset or evaluate --modality text") from None

        description = {**dataset_identity(data, manifest),
                       "manifest_sha256": hashlib.sha256((Path(data) / MANIFEST).read_bytes()).hexdigest()}
        return instances, image_loader, description
    n = count if limit is None else min(count, limit)
    instances = [get_task(t).generate(d, instance_seed(seed, i), id=instance_id(t, d, i))
                 for t in names for d in difficulties for i in range(n)]
    bench = hashlib.sha256("".join(f"{i.id}:{i.hash}\n" for i in instances).encode()).hexdigest()
    description = {"path": None, "benchmark_hash": bench, "references_hash": None, "preset": None, "modified": False,
                   "content_hash": bench,
                   "generated": {"tasks": names, "difficulties": difficulties, "count": n, "seed": seed}}
    return instances, lambda inst: get_task(inst.task).render(inst), description
