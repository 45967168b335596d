"""Subset sum answers: a list of indices; feasible when the values sum to the target;
objective = number of chosen numbers."""

from __future__ import annotations

from mmnp.core import Violation, id_check
from mmnp.verifiers.idlist import canonical, format, parser  # noqa: F401 (the verifier protocol)

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
