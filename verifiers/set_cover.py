"""Set cover answers: a list of subset ids; objective = number of subsets."""

from __future__ import annotations

from mmnp.core import Instance, Violation, id_check, violation
from mmnp.verifiers.idlist import canonical, format, parser  # noqa: F401 (the verifier protocol)

DIRECTION = "min"  # the objective is minimised
VIOLATION_KINDS = {
    "unknown_subset": "an id that is not a subset",
    "repeated_subset": "a subset chosen more than once",
    "uncovered_element": "an element of the universe in none of the chosen subsets",
}

parse = parser("subset")


def check(data: dict, chosen: list[int]) -> tuple[float | None, list[Violation]]:
    subsets = data["subsets"]
    taken, violations = id_check(chosen, len(subsets), "subset", "subsets", "chosen")
    covered = {e for s, t in zip(subsets, taken) if t for e in s}
    if len(covered) < data["universe"]:
        missing = [e for e in range(1, data["universe"] + 1) if e not in covered]
        violations.append(violation("uncovered_element", "elements not covered", missing))
    if violations:
        return None, violations
    return len(chosen), []


def wrong_answers(inst: Instance) -> list[tuple[str, str]]:
    """Hand-built wrong answers to `inst`, each with the violation kind it must raise: the conformance
    suite checks that every kind in VIOLATION_KINDS is caught."""
    chosen = inst.reference["heuristic"]["solution"]
    m = len(inst.data["subsets"])
    return [
        (f"Answer: {chosen + [m]}", "unknown_subset"),
        (f"Answer: {chosen + [chosen[0]]}", "repeated_subset"),
        (f"Answer: {chosen[1:]}", "uncovered_element"),
    ]
