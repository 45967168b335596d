"""Subset sum answers: a list of indices; feasible when the values sum to the target;
objective = number of chosen numbers."""

from __future__ import annotations

from mmnp.core import Violation, violation
from mmnp.parsing import parse_int_list

VIOLATION_KINDS = {
    "unknown_index": "an index that is not a number's",
    "repeated_index": "an index chosen more than once",
    "wrong_sum": "the chosen numbers do not sum to the target",
}


def parse(text: str) -> list[int]:
    return parse_int_list(text, "index")


def check(data: dict, chosen: list[int]) -> tuple[float | None, list[Violation]]:
    numbers = data["numbers"]
    n = len(numbers)
    taken = [False] * n
    unknown, repeated = [], []
    total = 0
    for i in chosen:
        if not 0 <= i < n:
            unknown.append(i)
        elif taken[i]:
            repeated.append(i)
        else:
            taken[i] = True
            total += numbers[i]
    violations = []
    if unknown:
        violations.append(violation("unknown_index", f"not indices (numbers are 0..{n - 1})", unknown))
    if repeated:
        violations.append(violation("repeated_index", "indices chosen more than once", repeated))
    if total != data["target"]:
        violations.append(Violation("wrong_sum", f"the chosen numbers sum to {total}, not the target {data['target']}",
                                    (total, data["target"])))
    if violations:
        return None, violations
    return len(chosen), []


def canonical(chosen: list[int]) -> tuple[int, ...]:
    return tuple(sorted(chosen))


def format(chosen: list[int]) -> str:
    return str(sorted(chosen))
