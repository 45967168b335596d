"""The verifiers as reward functions, with TRL's signature.

    from mmnp.rewards import quality_reward
    GRPOTrainer(..., reward_funcs=[quality_reward], train_dataset=mmnp.trainers.data.train_dataset(...))

Each takes `(prompts, completions, mmnp_instance, **columns)` and returns one float per
completion. `mmnp_instance` is the dataset column that `mmnp.trainers.data` writes: a
JSON record with the task, the instance data and its reference objectives, so a reward
needs nothing but the row. Completions may be strings or chat messages.

Shapes:
- `feasible_reward`: 1 if every constraint holds, else 0.
- `quality_reward`: the sample's Quality Ratio (NP-Bench's QR against the heuristic
  reference; above 1 when the heuristic is beaten), 0 when infeasible or unparsed.
- `shaped_reward` (NP-Engine's form): a format bonus for a parsed answer, plus the ratio
  when feasible, minus a penalty when infeasible; `make_shaped_reward` sets the weights.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Callable

from mmnp.core import Verdict
from mmnp.registry import get_task

COLUMN = "mmnp_instance"


@lru_cache(maxsize=8192)
def _record(payload: str) -> dict:
    """The parsed row, shared by the G completions of a prompt (its string is the key)."""
    record = json.loads(payload)
    if not {"task", "instance", "reference_objective"} <= set(record):
        raise ValueError(f"the {COLUMN} column must hold a record from mmnp.trainers.data (task, instance, "
                         "reference_objective); got keys " + ", ".join(sorted(record)))
    return record


def record_payload(inst) -> str:
    """The `mmnp_instance` column value for an Instance."""
    return json.dumps({"id": inst.id, "task": inst.task, "instance": inst.data,
                       "reference_objective": inst.reference_objective, "best_objective": inst.best_objective},
                      separators=(",", ":"))


def completion_text(completion: Any) -> str:
    """A completion as text: TRL passes strings, or message lists for conversational data."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion:
        content = completion[-1].get("content", "") if isinstance(completion[-1], dict) else ""
        if isinstance(content, list):
            return "".join(part.get("text", "") for part in content if isinstance(part, dict))
        return content if isinstance(content, str) else ""
    return ""


def score(completion: Any, payload: str) -> tuple[Verdict, float]:
    """(verdict, quality ratio) of one completion against its row."""
    record = _record(payload)
    task = get_task(record["task"])
    verdict = task.verify(record, completion_text(completion))
    return verdict, task.quality_ratio(verdict.objective, record["reference_objective"])


def feasible_reward(prompts: list, completions: list, mmnp_instance: list[str], **columns: Any) -> list[float]:
    return [1.0 if score(c, p)[0].feasible else 0.0 for c, p in zip(completions, mmnp_instance)]


def quality_reward(prompts: list, completions: list, mmnp_instance: list[str], **columns: Any) -> list[float]:
    return [score(c, p)[1] for c, p in zip(completions, mmnp_instance)]


def make_shaped_reward(format_bonus: float = 0.1, infeasible_penalty: float = 0.5) -> Callable[..., list[float]]:
    """format_bonus * [parsed] + (ratio if feasible else -infeasible_penalty)."""

    def shaped_reward(prompts: list, completions: list, mmnp_instance: list[str], **columns: Any) -> list[float]:
        out = []
        for c, p in zip(completions, mmnp_instance):
            verdict, ratio = score(c, p)
            out.append(format_bonus * verdict.parsed + (ratio if verdict.feasible else -infeasible_penalty))
        return out

    shaped_reward.__name__ = "shaped_reward"
    return shaped_reward


shaped_reward = make_shaped_reward()

REWARDS: dict[str, Callable[..., list[float]]] = {
    "quality": quality_reward,
    "feasible": feasible_reward,
    "shaped": shaped_reward,
}

__all__ = ["COLUMN", "REWARDS", "feasible_reward", "make_shaped_reward", "quality_reward", "record_payload",
           "score", "shaped_reward"]
