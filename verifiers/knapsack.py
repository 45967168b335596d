"""Knapsack answers: a list of item ids; objective = total value."""

from __future__ import annotations

from mmnp.core import Violation, violation
from mmnp.parsing import parse_int_list

VIOLATION_KINDS = {
    "unknown_item": "an id that is not an item",
    "repeated_item": "an item chosen more than once",
    "over_capacity": "total weight above the capacity",
}


def parse(text: str) -> list[int]:
    return parse_int_list(text, "item")


def check(data: dict, items: list[int]) -> tuple[float | None, list[Violation]]:
    weights, values = data["weights"], data["values"]
    n = len(weights)
    taken = [False] * n
    unknown, repeated = [], []
    weight = value = 0
    for i in items:
        if not 0 <= i < n:
            unknown.append(i)
        elif taken[i]:
            repeated.append(i)
        else:
            taken[i] = True
            weight += weights[i]
            value += values[i]
    violations = []
    if unknown:
        violations.append(violation("unknown_item", f"not item ids (items are 0..{n - 1})", unknown))
    if repeated:
        violations.append(violation("repeated_item", "items chosen more than once", repeated))
    if weight > data["capacity"]:
        violations.append(Violation("over_capacity", f"total weight {weight} exceeds the capacity {data['capacity']}",
                                    (weight, data["capacity"])))
    if violations:
        return None, violations
    return value, []


def canonical(items: list[int]) -> tuple[int, ...]:
    return tuple(sorted(items))


def format(items: list[int]) -> str:
    return str(sorted(items))
