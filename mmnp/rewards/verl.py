"""verl's custom reward function: point `custom_reward_function.path` at this file and
`custom_reward_function.name` at `compute_score`.

Rows built with `to_verl_row` carry the record as `reward_model.ground_truth`, so verl
passes it back here. `extra_info["reward"]` picks the shape (quality, feasible, shaped).
"""

from __future__ import annotations

from typing import Any

from mmnp.rewards import REWARDS, record_payload


def compute_score(data_source: str, solution_str: str, ground_truth: str, extra_info: dict | None = None) -> float:
    shape = (extra_info or {}).get("reward", "quality")
    if shape not in REWARDS:
        raise ValueError(f"extra_info['reward'] = {shape!r}; choose one of {', '.join(REWARDS)}")
    return REWARDS[shape]([None], [solution_str], [ground_truth])[0]


def to_verl_row(inst, modality: str = "text", reward: str = "quality") -> dict[str, Any]:
    """A verl RL dataset row (parquet-ready) for an Instance."""
    text = inst.prompt if modality == "text" else "<image>" + inst.image_prompt
    return {
        "data_source": f"mmnp/{inst.task}",
        "prompt": [{"role": "user", "content": text}],
        "ability": "combinatorial-optimisation",
        "reward_model": {"style": "rule", "ground_truth": record_payload(inst)},
        "extra_info": {"id": inst.id, "difficulty": inst.difficulty, "reward": reward},
    }
