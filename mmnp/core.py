"""Core records: what an instance is and what a verifier says about an answer."""

from __future__ import annotations

import hashlib
import json
import math
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, TypeVar

T = TypeVar("T")
_PREPARED: OrderedDict[tuple[int, str], tuple[Any, Any]] = OrderedDict()
_PREPARED_SIZE = 1024

DIFFICULTIES: tuple[str, ...] = ("easy", "medium", "hard")
CATEGORIES: tuple[str, ...] = ("planning", "graph", "selection", "partition", "schedule")


def canonical_json(obj: Any) -> str:
    """The one JSON spelling used for hashes and files: sorted keys, no spaces."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def content_hash(task: str, data: dict) -> str:
    """Hash of an instance's canonical data, to find duplicates and train/test overlap."""
    return hashlib.sha256(canonical_json({"task": task, "instance": data}).encode()).hexdigest()[:16]


def prepared(source: Any, name: str, build: Callable[[Any], T]) -> T:
    """`build(source)`, remembered while the same object is verified again.

    Verifiers run G times per prompt in RL loops on the same record; this keeps a derived
    lookup structure (an edge set, parsed time windows) across those calls. Keyed by the
    object's identity and checked with `is`, so an equal-but-new object is rebuilt, and
    bounded (least recently used out)."""
    key = (id(source), name)
    hit = _PREPARED.get(key)
    if hit is not None and hit[0] is source:
        _PREPARED.move_to_end(key)
        return hit[1]
    value = build(source)
    _PREPARED[key] = (source, value)
    if len(_PREPARED) > _PREPARED_SIZE:
        _PREPARED.popitem(last=False)
    return value


WHERE_STORED = 100


def is_objective(value: Any) -> bool:
    """A value as a task computes an objective: every task's is a finite number >= 0 (an edited record
    or reward row may hold anything)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def reward_digest(record: Mapping[str, Any]) -> str:
    """The digest a reward record carries of what it scores with (id, task, instance, reference
    objectives): a row edited after mmnp wrote it (a raised capacity, a reference objective of 1)
    no longer matches it, and the reward refuses it instead of scoring against it."""
    scored = [record["id"], record["task"], record["instance"], record["reference_objective"], record["best_objective"]]
    return hashlib.sha256(json.dumps(scored, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule, with the elements involved so a renderer can mark them."""

    kind: str
    message: str
    where: tuple = ()

    def to_dict(self) -> dict:
        """As a sample log stores it: `where` holds the first WHERE_STORED elements (the message
        counts them all), so an answer naming every pair of a 1,000-vertex graph stays a short
        record, not megabytes per sample; the in-memory `where` (what a picture marks) stays whole."""
        return {"kind": self.kind, "message": self.message, "where": json.loads(json.dumps(self.where[:WHERE_STORED]))}


def violation(kind: str, what: str, items: list, fmt=str, limit: int = 8) -> Violation:
    """One violation naming its offending elements (the first `limit` in the message, all in `where`)."""
    shown = ", ".join(fmt(x) for x in items[:limit])
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return Violation(kind, f"{what}: {shown}{more}", tuple(items))


def id_check(ids: list[int], n: int, noun: str, plural: str, doing: str) -> tuple[list[bool], list[Violation]]:
    """Which of 0..n-1 the ids name, and the violations for ids out of range or repeated
    (kinds `unknown_<noun>`, `repeated_<noun>`): how every id-list answer's check begins."""
    taken = [False] * n
    unknown, repeated = [], []
    for i in ids:
        if not 0 <= i < n:
            unknown.append(i)
        elif taken[i]:
            repeated.append(i)
        else:
            taken[i] = True
    violations = []
    if unknown:
        violations.append(violation(f"unknown_{noun}", f"not {noun} ids ({plural} are 0..{n - 1})", unknown))
    if repeated:
        violations.append(violation(f"repeated_{noun}", f"{plural} {doing} more than once", repeated))
    return taken, violations


def edge_str(edge: tuple[int, int]) -> str:
    return f"({edge[0]}, {edge[1]})"


@dataclass(slots=True)
class Verdict:
    """What a verifier says about one answer: parsed, feasible, objective, and why not."""

    parsed: bool
    feasible: bool = False
    objective: float | None = None
    violations: list[Violation] = field(default_factory=list)
    solution: Any = None
    error: str | None = None

    @property
    def kinds(self) -> set[str]:
        return {v.kind for v in self.violations}

    def to_dict(self) -> dict:
        return {
            "parsed": self.parsed,
            "feasible": self.feasible,
            "objective": self.objective,
            "violations": [v.to_dict() for v in self.violations],
            "solution": self.solution,
            "error": self.error,
        }

    def summary(self) -> str:
        if not self.parsed:
            return f"unparsed: {self.error}"
        if self.error:  # parsed, but the check itself failed: no verdict on feasibility
            return f"not checked: {self.error}"
        if self.feasible:
            return f"feasible, objective {self.objective:g}"
        return f"infeasible ({len(self.violations)} violation(s)): " + "; ".join(v.message for v in self.violations)


@dataclass(frozen=True)
class Instance:
    """One generated problem with both renderings' texts and its reference solutions.

    `reference` = {"heuristic": {"objective", "solution"},
                   "optimal": {"objective", "solution", "proven"} or None}.
    `image` is the PNG's path relative to the dataset folder (None when not rendered);
    `picture` describes it (`mmnp.task.Task.picture`): size, and for graphs the vertex
    placement, so the drawing's invariants can be re-checked from the record.
    """

    id: str
    task: str
    difficulty: str
    seed: int
    params: dict
    data: dict
    hash: str
    prompt: str
    image_prompt: str
    reference: dict
    image: str | None = None
    picture: dict | None = None
    level: int | None = None  # the ladder level (mmnp.levels) of its difficulty
    hardness: dict | None = None  # heuristic gap and exact-solver work, when the exact solver ran

    def to_record(self) -> dict:
        return {
            "id": self.id,
            "task": self.task,
            "difficulty": self.difficulty,
            "seed": self.seed,
            "params": self.params,
            "instance": self.data,
            "hash": self.hash,
            "prompt": self.prompt,
            "image": self.image,
            "picture": self.picture,
            "image_prompt": self.image_prompt,
            "level": self.level,
            # the solver-dependent members last: the references hash covers them, the benchmark hash the rest
            "reference": self.reference,
            "hardness": self.hardness,
        }

    def to_reward_record(self) -> dict:
        """What a reward function needs and nothing more: the data and the reference objectives
        (the `mmnp_instance` column of training data; no prompt, picture or solutions)."""
        record = {"id": self.id, "task": self.task, "instance": self.data,
                  "reference_objective": self.reference_objective, "best_objective": self.best_objective}
        return {**record, "digest": reward_digest(record)}

    @classmethod
    def from_record(cls, record: dict) -> Instance:
        try:
            return cls(
                id=record["id"],
                task=record["task"],
                difficulty=record["difficulty"],
                seed=record["seed"],
                params=record["params"],
                data=record["instance"],
                hash=record["hash"],
                prompt=record["prompt"],
                image_prompt=record["image_prompt"],
                reference=record["reference"],
                image=record.get("image"),
                picture=record.get("picture"),
                level=record.get("level"),
                hardness=record.get("hardness"),
            )
        except KeyError as missing:
            raise ValueError(f"instance record lacks the field {missing}; was it written by `mmnp generate`?") from None

    @property
    def reference_objective(self) -> float:
        """The Quality Ratio's reference: the heuristic's objective."""
        return self.reference["heuristic"]["objective"]

    @property
    def best_objective(self) -> float:
        """The best-known objective: the best of a published value (imported instances), the exact
        solver's when it ran, and the heuristic's. A published value is a claim: an unproven one
        that the references' own feasible answers beat is stale, and would put ratios above 1."""
        from mmnp.registry import get_task

        task = get_task(self.task)
        best = self.reference_objective
        for source in ("optimal", "published"):
            if self.reference.get(source) and not task.is_better(best, self.reference[source]["objective"]):
                best = self.reference[source]["objective"]
        return best
