"""The training data stream, in one place: instances (from a generated folder or from
seeds, with optional generator overrides), turned into the columns TRL's trainers expect:
a conversational `prompt`, an `image` for vision-language training, `mmnp_instance` for
the reward functions, and for SFT a `completion` holding the best reference answer."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from mmnp.core import Instance
from mmnp.dataset import GenerateSpec, image_loader, instance_id, instance_seed, select_instances
from mmnp.errors import UsageError
from mmnp.registry import get_task, resolve_tasks
from mmnp.trainers.rewards import COLUMN, record_payload


def parse_params(text: str | None) -> dict[str, str]:
    """`n=4,max_weight=20` -> generator overrides (each task checks and converts its own)."""
    out: dict[str, str] = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--params {text!r}: expected key=value pairs separated by commas, e.g. n=4")
        out[key.strip()] = value.strip()
    return out


def training_instances(tasks: str | list[str], difficulties: list[str], count: int, seed: int,
                       data: str | Path | None = None, params: dict[str, Any] | None = None) -> list[Instance]:
    """Instances from a generated folder, or generated from seeds (`count` per task and
    difficulty, generator `params` overriding the difficulty's preset). Pick a seed other
    than the test set's: content hashes reveal any overlap."""
    if not params:
        return select_instances(tasks, difficulties, data=data, count=count, seed=seed).instances
    if data is not None:
        raise UsageError("--params applies to generated instances; drop it or drop --data")
    overrides = generator_overrides(tasks, difficulties, params, count, seed)
    try:
        return [get_task(t).generate(d, instance_seed(seed, i), id=instance_id(t, d, i), **overrides[t])
                for t in overrides for d in dict.fromkeys(difficulties) for i in range(count)]
    except ValueError as e:
        raise _said_as_train(e) from None


def generator_overrides(tasks: str | list[str], difficulties: list[str], params: dict[str, Any],
                        count: int = 1, seed: int = 0) -> dict[str, dict]:
    """Each task's share of `params` ("n=4": every task taking n; "tsp.n=4": TSP's), checked as
    `mmnp generate --param` checks it (a key some task takes, a value within every difficulty's
    sizes: n=5000 would not fit a prompt), with the messages naming train's --params."""
    try:
        spec = GenerateSpec(tasks=tuple(t.name for t in resolve_tasks(tasks)),
                            difficulties=tuple(dict.fromkeys(difficulties)), count=count, seed=seed, images=False,
                            optimal=False, params=dict(params))
    except ValueError as e:
        raise _said_as_train(e) from None
    return {t: spec.overrides(t) for t in spec.tasks}


def _said_as_train(error: ValueError) -> UsageError:
    """generate's own messages name its flag (--param, --count): said as train's."""
    message = str(error)
    return UsageError(message.replace("--param ", "--params ", 1) if message.startswith("--")
                      else f"--params: {message}")


def best_answer(inst: Instance) -> str:
    """The best reference solution of an instance (exact, planted or heuristic) as an answer line."""
    task = get_task(inst.task)
    best = None
    for ref in inst.reference.values():
        if ref and (best is None or task.is_better(ref["objective"], best["objective"])):
            best = ref
    return task.format_answer(best["solution"])


def to_rows(instances: list[Instance], modality: str = "text", system_prompt: str | None = None,
            data: str | Path | None = None, image_size: int = 768, completions: bool = False) -> list[dict]:
    from PIL import Image

    if modality not in ("text", "image"):
        raise UsageError(f"--modality {modality!r}: choose text or image")
    picture = image_loader(data, image_size) if modality == "image" else None  # checked against the dataset
    rows = []
    for inst in instances:
        text = inst.prompt if modality == "text" else inst.image_prompt
        prompt = ([{"role": "system", "content": system_prompt}] if system_prompt else []) + \
            [{"role": "user", "content": text}]
        row = {"prompt": prompt, COLUMN: record_payload(inst), "task": inst.task, "difficulty": inst.difficulty}
        if completions:
            row["completion"] = [{"role": "assistant", "content": best_answer(inst)}]
        if modality == "image":
            row["image"] = Image.open(io.BytesIO(picture(inst))).convert("RGB")
        rows.append(row)
    return rows


def train_dataset(tasks: str | list[str] = "all", difficulties: list[str] = ("easy", "medium"), count: int = 64,
                  seed: int = 1, modality: str = "text", data: str | Path | None = None,
                  system_prompt: str | None = None, image_size: int = 768, params: dict[str, Any] | None = None,
                  completions: bool = False):
    """A `datasets.Dataset` ready for `GRPOTrainer(train_dataset=...)`, or with
    `completions` for `SFTTrainer`."""
    from datasets import Dataset

    instances = training_instances(tasks, list(difficulties), count, seed, data, params)
    return Dataset.from_list(to_rows(instances, modality, system_prompt, data, image_size, completions))
