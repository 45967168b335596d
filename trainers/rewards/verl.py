"""verl's custom reward function and dataset rows.

In a verl config (see examples/verl/):

    reward:
      custom_reward_function:
        path: pkg://mmnp.trainers.rewards.verl
        name: compute_score

Rows built with `to_verl_row` (or `mmnp export --format verl`) carry the record as
`reward_model.ground_truth`, so verl passes it back here; `extra_info["reward"]` picks the
reward by its registry name (quality, feasible, shaped, or a plug-in's installed beside verl).
"""

from __future__ import annotations

from typing import Any

from mmnp.errors import UsageError
from mmnp.trainers.rewards import get_reward, record_payload


def compute_score(data_source: str, solution_str: str, ground_truth: str, extra_info: dict | None = None,
                  **kwargs: Any) -> float:
    """One response's reward. `**kwargs` takes what verl adds (its `reward_kwargs`, a
    reward-model score, the tokenizer's extras), none of which mmnp's verifiers need."""
    if not str(data_source).startswith("mmnp/"):
        raise ValueError(f"compute_score got a row of data_source {str(data_source)[:80]!r}; mmnp's reward scores "
                         "mmnp rows (data_source mmnp/<task>): route other data sources to their own reward")
    shape = (extra_info or {}).get("reward", "quality")
    return get_reward(shape, "extra_info['reward'] =")([None], [solution_str], [ground_truth])[0]


def to_verl_row(inst, modality: str = "text", reward: str = "quality", png: bytes | None = None,
                index: int = 0, split: str = "train") -> dict[str, Any]:
    """A verl RL dataset row (parquet-ready) for an Instance.

    Image rows put `<image>` before the image prompt and the PNG in `images` as
    [{"bytes": ...}], the form verl's RLHFDataset decodes; without it a vision-language run
    would train on a prompt that holds no instance data, so `png` is required there."""
    if modality not in ("text", "image"):
        raise UsageError(f"modality {modality!r}: choose text or image")
    get_reward(reward, "reward")  # an unknown or broken reward is refused here, not in verl's workers
    row: dict[str, Any] = {
        "data_source": f"mmnp/{inst.task}",
        "prompt": [{"role": "user", "content": inst.prompt if modality == "text" else "<image>" + inst.image_prompt}],
        "ability": "combinatorial-optimisation",
        "reward_model": {"style": "rule", "ground_truth": record_payload(inst)},
        "extra_info": {"index": index, "split": split, "id": inst.id, "task": inst.task,
                       "difficulty": inst.difficulty, "reward": reward},
    }
    if modality == "image":
        if not png:
            raise UsageError(f"{inst.id}: an image row needs the instance's PNG bytes (png=...)")
        row["images"] = [{"bytes": png}]
    return row
