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

Given TRL's `log_extra` argument, each also hands back its verdicts (the columns of
`VERDICT_COLUMNS`: feasible, quality ratio, canonical solution or None), so a trainer logs
SR, QR and distinct solutions without verifying any completion a second time.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Callable

from mmnp.core import Verdict
from mmnp.registry import get_task

COLUMN = "mmnp_instance"
VERDICT_COLUMNS = ("mmnp/feasible", "mmnp/qr", "mmnp/solution")


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
    return json.dumps(inst.to_reward_record(), separators=(",", ":"))


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


def _scores(completions: list, payloads: list[str], log_extra: Callable | None) -> list[tuple[Verdict, float]]:
    """Verify each completion once; hand the verdicts to TRL's `log_extra` when given."""
    out = [score(c, p) for c, p in zip(completions, payloads)]
    if log_extra is not None:
        log_extra(VERDICT_COLUMNS[0], [float(v.feasible) for v, _ in out])
        log_extra(VERDICT_COLUMNS[1], [r for _, r in out])
        log_extra(VERDICT_COLUMNS[2], [repr(get_task(_record(p)["task"]).verifier.canonical(v.solution))
                                       if v.feasible else None for (v, _), p in zip(out, payloads)])
    return out


def feasible_reward(prompts: list, completions: list, mmnp_instance: list[str], log_extra: Callable | None = None,
                    **columns: Any) -> list[float]:
    return [1.0 if v.feasible else 0.0 for v, _ in _scores(completions, mmnp_instance, log_extra)]


def quality_reward(prompts: list, completions: list, mmnp_instance: list[str], log_extra: Callable | None = None,
                   **columns: Any) -> list[float]:
    return [r for _, r in _scores(completions, mmnp_instance, log_extra)]


def make_shaped_reward(format_bonus: float = 0.1, infeasible_penalty: float = 0.5) -> Callable[..., list[float]]:
    """format_bonus * [parsed] + (ratio if feasible else -infeasible_penalty)."""

    def shaped_reward(prompts: list, completions: list, mmnp_instance: list[str], log_extra: Callable | None = None,
                      **columns: Any) -> list[float]:
        return [format_bonus * v.parsed + (r if v.feasible else -infeasible_penalty)
                for v, r in _scores(completions, mmnp_instance, log_extra)]

    shaped_reward.__name__ = "shaped_reward"
    return shaped_reward


shaped_reward = make_shaped_reward()

REWARDS: dict[str, Callable[..., list[float]]] = {
    "quality": quality_reward,
    "feasible": feasible_reward,
    "shaped": shaped_reward,
}

__all__ = ["COLUMN", "REWARDS", "VERDICT_COLUMNS", "feasible_reward", "make_shaped_reward", "quality_reward", "record_payload",
           "score", "shaped_reward"]
