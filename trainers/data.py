"""Training data in the columns TRL's GRPOTrainer expects: a conversational `prompt`, an
`image` for vision-language training, and `mmnp_instance` for the reward functions."""

from __future__ import annotations

import io
from pathlib import Path

from mmnp.core import Instance
from mmnp.dataset import image_path, select_instances
from mmnp.registry import get_task
from mmnp.rewards import COLUMN, record_payload


def training_instances(tasks: str | list[str], difficulties: list[str], count: int, seed: int,
                       data: str | Path | None = None) -> list[Instance]:
    """Instances from a generated folder, or generated from seeds (`count` per task and
    difficulty). Pick a seed other than the test set's: content hashes reveal any overlap."""
    return select_instances(tasks, difficulties, data=data, count=count, seed=seed).instances


def to_rows(instances: list[Instance], modality: str = "text", system_prompt: str | None = None,
            data: str | Path | None = None, image_size: int = 768) -> list[dict]:
    from PIL import Image

    if modality not in ("text", "image"):
        raise ValueError(f"modality {modality!r}: choose text or image")
    rows = []
    for inst in instances:
        text = inst.prompt if modality == "text" else inst.image_prompt
        prompt = ([{"role": "system", "content": system_prompt}] if system_prompt else []) + \
            [{"role": "user", "content": text}]
        row = {"prompt": prompt, COLUMN: record_payload(inst), "task": inst.task, "difficulty": inst.difficulty}
        if modality == "image":
            png = image_path(data, inst.image).read_bytes() if data and inst.image else get_task(inst.task).render(inst, image_size)
            row["image"] = Image.open(io.BytesIO(png)).convert("RGB")
        rows.append(row)
    return rows


def train_dataset(tasks: str | list[str] = "all", difficulties: list[str] = ("easy", "medium"), count: int = 64,
                  seed: int = 1, modality: str = "text", data: str | Path | None = None,
                  system_prompt: str | None = None, image_size: int = 768):
    """A `datasets.Dataset` ready for `GRPOTrainer(train_dataset=...)`."""
    from datasets import Dataset

    instances = training_instances(tasks, list(difficulties), count, seed, data)
    return Dataset.from_list(to_rows(instances, modality, system_prompt, data, image_size))
