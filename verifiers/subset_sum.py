"""Subset sum answers: a list of indices; feasible when the values sum to the target;
objective = number of chosen numbers."""

from __future__ import annotations

from mmnp.core import Instance, Violation, id_check
from mmnp.verifiers.idlist import canonical, format, parser  # noqa: F401 (the verifier protocol)

DIRECTION = "max"  # the objective is maximised
VIOLATION_KINDS = {
    "unknown_index": "an index that is not a number's",
    "repeated_index": "an index chosen more than once",
    "wrong_sum": "the chosen numbers do not sum to the target",
}

parse = parser("index")


def check(data: dict, chosen: list[int]) -> tuple[float | None, list[Violation]]:
    numbers = data["numbers"]
    taken, violations = id_check(chosen, len(numbers), "index", "indices", "chosen")
    total = sum(x for x, t in zip(numbers, taken) if t)
    if total != data["target"]:
        violations.append(Violation("wrong_sum", f"the chosen numbers sum to {total}, not the target {data['target']}",
                                    (total, data["target"])))
    if violations:
        return None, violations
    return len(chosen), []


def wrong_answers(inst: Instance) -> list[tuple[str, str]]:
    """Hand-built wrong answers to `inst`, each with the violation kind it must raise: the conformance
    suite checks that every kind in VIOLATION_KINDS is caught."""
    chosen = inst.reference["heuristic"]["solution"]
    n = len(inst.data["numbers"])
    return [
        (f"Answer: {chosen + [n]}", "unknown_index"),
        (f"Answer: {chosen + [chosen[0]]}", "repeated_index"),
        (f"Answer: {chosen[1:]}", "wrong_sum"),
    ]
