"""The verifiers as reward functions, with TRL's signature, and the reward registry.

    from mmnp.trainers.rewards import quality_reward
    GRPOTrainer(..., reward_funcs=[quality_reward], train_dataset=mmnp.trainers.data.train_dataset(...))

Each takes `(prompts, completions, mmnp_instance, **columns)` and returns one float per
completion. `mmnp_instance` is the dataset column that `mmnp.trainers.data` writes: a
JSON record with the task, the instance data and its reference objectives, so a reward
needs nothing but the row. Completions may be strings or chat messages.

Shapes (`REWARDS`, joined with the `mmnp.rewards` entry points of plug-in packages in
`REGISTRY`: `mmnp train --reward NAME`, `mmnp disa estimate --reward NAME`, verl's
`extra_info["reward"]`):
- `feasible_reward`: 1 if every constraint holds, else 0.
- `quality_reward`: the sample's Quality Ratio (NP-Bench's QR against the heuristic
  reference; above 1 when the heuristic is beaten), 0 when infeasible or unparsed.
- `shaped_reward` (NP-Engine's form): a format bonus for a parsed answer, plus the ratio
  when feasible, minus a penalty when infeasible; `make_shaped_reward` sets the weights.

Given TRL's `log_extra` argument, each also hands back its verdicts (the columns of
`VERDICT_COLUMNS`: feasible, quality ratio, canonical solution or None), so a trainer logs
SR, QR and distinct solutions without verifying any completion a second time; a plug-in
reward built on `score_all` does the same.

Adding a reward: a function with this signature and a line in `REWARDS`, or, from a separate
package, an entry point `NAME = "module:function"` in the group `mmnp.rewards`. Importing
this module stays light (no torch, TRL or OR-Tools): verl's reward workers import it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Callable

from mmnp.core import Verdict, is_objective, reward_digest
from mmnp.errors import UsageError
from mmnp.plugins import Registry, UnknownPluginError
from mmnp.registry import get_task

COLUMN = "mmnp_instance"
VERDICT_COLUMNS = ("mmnp/feasible", "mmnp/qr", "mmnp/solution")


RECORD_KEYS = ("id", "task", "instance", "reference_objective", "best_objective", "digest")


def _record(payload: Any) -> dict:
    """The parsed row (`_parsed`); a row already parsed into a mapping (a reader that decodes JSON
    columns) is taken as its JSON, anything else that is not a string refused in one line."""
    if isinstance(payload, Mapping):
        payload = json.dumps(dict(payload), separators=(",", ":"), default=str)
    if not isinstance(payload, (str, bytes)):
        raise ValueError(f"the {COLUMN} column must hold the JSON record mmnp wrote (a string); got "
                         f"{type(payload).__name__}: rebuild the rows with mmnp")
    return _parsed(payload)


@lru_cache(maxsize=8192)
def _parsed(payload: str | bytes) -> dict:
    """The parsed row, shared by the G completions of a prompt (its string is the key), used only
    as mmnp wrote it: its digest (`mmnp.core.reward_digest`) must match what it scores with, so
    an edited row is refused, never scored (a reference objective edited to 1 scored QR 417)."""
    try:
        record = json.loads(payload)
    except (TypeError, ValueError):
        record = None
    if not isinstance(record, dict) or not set(RECORD_KEYS) <= set(record):
        got = ", ".join(sorted(map(str, record))) if isinstance(record, dict) else type(record).__name__
        raise ValueError(f"the {COLUMN} column must hold a record from mmnp.trainers.data or mmnp export "
                         f"({', '.join(RECORD_KEYS)}); got {got or 'nothing'}: rebuild the rows with mmnp")
    if record["digest"] != reward_digest(record):
        raise ValueError(f"the {COLUMN} record of {str(record['id'])[:80]!r} was edited after mmnp wrote it (its task, "
                         "instance or reference objectives no longer match its digest); rebuild the rows from the "
                         "dataset (mmnp export, mmnp.trainers.data), never edit them")
    if not (isinstance(record["task"], str) and isinstance(record["instance"], dict)
            and all(is_objective(record[key]) for key in ("reference_objective", "best_objective"))
            and record["reference_objective"] > 0):
        raise ValueError(f"the {COLUMN} record of {str(record['id'])[:80]!r} is not shaped as mmnp writes it (task a "
                         "name, instance an object, objectives numbers >= 0, the reference one > 0): rebuild the rows "
                         "with mmnp")
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
            # mixed parts merged by `datasets` carry "text": None on an image part
            return "".join(text for part in content if isinstance(part, dict)
                           and isinstance(text := part.get("text"), str))
        return content if isinstance(content, str) else ""
    return ""


def score(completion: Any, payload: str) -> tuple[Verdict, float]:
    """(verdict, quality ratio) of one completion against its row."""
    record = _record(payload)
    task = get_task(record["task"])
    verdict = task.verify(record, completion_text(completion))
    return verdict, task.quality_ratio(verdict.objective, record["reference_objective"])


def score_all(completions: list, payloads: list[str], log_extra: Callable | None = None) -> list[tuple[Verdict, float]]:
    """(verdict, quality ratio) of each completion, verified once; the verdicts go to TRL's
    `log_extra` when given, so the trainer logs SR, QR and distinct solutions (a plug-in reward
    built on this gets them too)."""
    if len(completions) != len(payloads):  # zip would drop rewards: the caller's loop would pair them wrongly
        raise UsageError(f"{len(completions)} completions for {len(payloads)} mmnp_instance rows: a reward needs "
                         "one row per completion (repeat each prompt's row for each of its completions)")
    out = [score(c, p) for c, p in zip(completions, payloads)]
    if log_extra is not None:
        log_extra(VERDICT_COLUMNS[0], [float(v.feasible) for v, _ in out])
        log_extra(VERDICT_COLUMNS[1], [r for _, r in out])
        log_extra(VERDICT_COLUMNS[2], [_canonical(p, v) if v.feasible else None for (v, _), p in zip(out, payloads)])
    return out


def _canonical(payload: str, verdict: Verdict) -> str:
    """A feasible answer's canonical form, as text (distinct solutions in a group)."""
    record = _record(payload)
    return repr(get_task(record["task"]).verifier.canonical(record["instance"], verdict.solution))


def feasible_reward(prompts: list, completions: list, mmnp_instance: list[str], log_extra: Callable | None = None,
                    **columns: Any) -> list[float]:
    """1 if every constraint holds, else 0."""
    return [1.0 if v.feasible else 0.0 for v, _ in score_all(completions, mmnp_instance, log_extra)]


def quality_reward(prompts: list, completions: list, mmnp_instance: list[str], log_extra: Callable | None = None,
                   **columns: Any) -> list[float]:
    """The Quality Ratio against the heuristic reference (above 1 when it is beaten), 0 if infeasible."""
    return [r for _, r in score_all(completions, mmnp_instance, log_extra)]


def make_shaped_reward(format_bonus: float = 0.1, infeasible_penalty: float = 0.5) -> Callable[..., list[float]]:
    """format_bonus * [parsed] + (ratio if feasible else -infeasible_penalty)."""

    def shaped_reward(prompts: list, completions: list, mmnp_instance: list[str], log_extra: Callable | None = None,
                      **columns: Any) -> list[float]:
        """A format bonus for a parsed answer, plus the QR when feasible, minus a penalty when not."""
        return [format_bonus * v.parsed + (r if v.feasible else -infeasible_penalty)
                for v, r in score_all(completions, mmnp_instance, log_extra)]

    shaped_reward.__name__ = "shaped_reward"
    return shaped_reward


shaped_reward = make_shaped_reward()

REWARDS: dict[str, Callable[..., list[float]] | str] = {  # name -> function, or a lazy "module:function"
    "quality": quality_reward,
    "feasible": feasible_reward,
    "shaped": shaped_reward,
}


def _check_reward(name: str, fn: Any) -> None:
    """What TRL (keywords and dataset columns) and verl (three positional lists) call a reward with."""
    import inspect

    if not callable(fn) or isinstance(fn, type):
        raise TypeError(f"expected a reward function, got {type(fn).__name__}")
    try:
        signature = inspect.signature(fn)
        signature.bind([], [], [])  # verl's compute_score
        signature.bind(prompts=[], completions=[], mmnp_instance=[])  # TRL: by keyword
    except (TypeError, ValueError):
        raise TypeError("a reward takes (prompts, completions, mmnp_instance, **columns) and returns one float "
                        "per completion") from None
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values()):
        raise TypeError("a reward must take **columns: TRL passes every dataset column and its own extras")


REGISTRY: Registry[Callable[..., list[float]]] = Registry("mmnp.rewards", REWARDS, kind="reward", check=_check_reward)


def reward_names() -> list[str]:
    """Every reward's name (built-in, registered, plug-in) without importing any plug-in."""
    return REGISTRY.names()


def get_reward(name: str, where: str = "--reward") -> Callable[..., list[float]]:
    """The reward function `name`, imported on first use (a built-in's reads no plug-in
    metadata: verl calls this per response); an unknown name is a UsageError naming `where`
    and the choices, a broken plug-in a `PluginError` line naming it."""
    try:
        return REGISTRY.load(name)
    except UnknownPluginError:
        raise UsageError(f"{where} {name!r}: choose one of {', '.join(reward_names())}") from None


def describe_rewards() -> str:
    """One clause per reward for help texts: a built-in's docstring, a plug-in's origin (not imported),
    and why an entry point is not offered (a name clash)."""
    clauses = []
    for name, entry in REGISTRY.entries().items():
        doc = getattr(entry.target, "__doc__", None) if not isinstance(entry.target, str) else None
        what = doc.strip().splitlines()[0].rstrip(".") if doc else entry.origin
        clauses.append(f"{name} ({what[:1].lower() + what[1:]})")
    return "; ".join(clauses + [f"not offered: {problem}" for problem in REGISTRY.problems()])


__all__ = ["COLUMN", "REGISTRY", "REWARDS", "VERDICT_COLUMNS", "describe_rewards", "feasible_reward", "get_reward",
           "make_shaped_reward", "quality_reward", "record_payload", "reward_names", "score", "score_all", "shaped_reward"]
