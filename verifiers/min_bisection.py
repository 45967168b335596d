"""Minimum bisection answers: one half as vertex ids (or both halves as two lists);
objective = number of edges between the halves."""

from __future__ import annotations

from mmnp.core import Instance, Violation
from mmnp.verifiers.idlist import (  # noqa: F401 (canonical, format: the verifier protocol)
    split_canonical as canonical, split_check, split_format as format, split_parser,
)

DIRECTION = "min"  # the objective is minimised
VIOLATION_KINDS = {
    "unknown_vertex": "an id that is not a vertex",
    "repeated_vertex": "a vertex listed more than once (in one half or in both)",
    "missing_vertex": "a vertex in neither half (when both halves are given)",
    "unbalanced": "half sizes that differ by more than one",
}

parse = split_parser("vertex")


def check(data: dict, solution: list) -> tuple[float | None, list[Violation]]:
    n = data["n"]
    in_first, (size_a, size_b), violations = split_check(solution, n, "vertex", "vertices")
    if abs(size_a - size_b) > 1:
        violations.append(Violation("unbalanced", f"the halves have {size_a} and {size_b} vertices; "
                                    f"with {n} vertices they must have {n // 2} and {n - n // 2}", (size_a, size_b)))
    if violations:
        return None, violations
    return sum(1 for u, v in data["edges"] if in_first[u] != in_first[v]), []


def wrong_answers(inst: Instance) -> list[tuple[str, str]]:
    """Hand-built wrong answers to `inst`, each with the violation kind it must raise: the conformance
    suite checks that every kind in VIOLATION_KINDS is caught."""
    half = inst.reference["heuristic"]["solution"]
    n = inst.data["n"]
    other = [v for v in range(n) if v not in half]
    return [
        (f"Answer: {half[:-1] + [n]}", "unknown_vertex"),
        (f"Answer: {[half, other + [half[0]]]}", "repeated_vertex"),
        (f"Answer: {[half, other[:-1]]}", "missing_vertex"),
        (f"Answer: {half[:-2]}", "unbalanced"),
    ]
