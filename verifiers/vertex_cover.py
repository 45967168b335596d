"""Vertex cover answers: a list of vertex ids; objective = the set's size."""

from __future__ import annotations

from mmnp.core import Instance, Violation, edge_str, id_check, violation
from mmnp.verifiers.idlist import canonical, format, parser  # noqa: F401 (the verifier protocol)

DIRECTION = "min"  # the objective is minimised
VIOLATION_KINDS = {
    "unknown_vertex": "an id that is not a vertex",
    "repeated_vertex": "a vertex listed more than once",
    "uncovered_edge": "an edge with neither endpoint in the set",
}

parse = parser("vertex")


def check(data: dict, cover: list[int]) -> tuple[float | None, list[Violation]]:
    chosen, violations = id_check(cover, data["n"], "vertex", "vertices", "listed")
    uncovered = [(u, v) for u, v in data["edges"] if not (chosen[u] or chosen[v])]
    if uncovered:
        violations.append(violation("uncovered_edge", "edges not covered", uncovered, fmt=edge_str))
    if violations:
        return None, violations
    return len(cover), []


def wrong_answers(inst: Instance) -> list[tuple[str, str]]:
    """Hand-built wrong answers to `inst`, each with the violation kind it must raise: the conformance
    suite checks that every kind in VIOLATION_KINDS is caught."""
    cover = inst.reference["heuristic"]["solution"]
    return [
        (f"Answer: {cover + [inst.data['n']]}", "unknown_vertex"),
        (f"Answer: {cover + [cover[0]]}", "repeated_vertex"),
        ("Answer: []", "uncovered_edge"),
    ]
