"""Knapsack answers: a list of item ids; objective = total value."""

from __future__ import annotations

from mmnp.core import Instance, Violation, id_check
from mmnp.verifiers.idlist import canonical, format, parser  # noqa: F401 (the verifier protocol)

DIRECTION = "max"  # the objective is maximised
VIOLATION_KINDS = {
    "unknown_item": "an id that is not an item",
    "repeated_item": "an item chosen more than once",
    "over_capacity": "total weight above the capacity",
}

parse = parser("item")


def check(data: dict, items: list[int]) -> tuple[float | None, list[Violation]]:
    weights, values = data["weights"], data["values"]
    taken, violations = id_check(items, len(weights), "item", "items", "chosen")
    weight = sum(w for w, t in zip(weights, taken) if t)
    if weight > data["capacity"]:
        violations.append(Violation("over_capacity", f"total weight {weight} exceeds the capacity {data['capacity']}",
                                    (weight, data["capacity"])))
    if violations:
        return None, violations
    return sum(v for v, t in zip(values, taken) if t), []


def wrong_answers(inst: Instance) -> list[tuple[str, str]]:
    """Hand-built wrong answers to `inst`, each with the violation kind it must raise: the conformance
    suite checks that every kind in VIOLATION_KINDS is caught."""
    items = inst.reference["heuristic"]["solution"]
    n = len(inst.data["weights"])
    return [
        (f"Answer: {items + [n]}", "unknown_item"),
        (f"Answer: {items + [items[0]]}", "repeated_item"),
        (f"Answer: {list(range(n))}", "over_capacity"),
    ]
