"""Independent set answers: a list of vertex ids; objective = the set's size."""

from __future__ import annotations

from mmnp.core import Instance, Violation, edge_str, id_check, violation
from mmnp.verifiers.idlist import canonical, format, parser  # noqa: F401 (the verifier protocol)

DIRECTION = "max"
VIOLATION_KINDS = {
    "unknown_vertex": "an id that is not a vertex",
    "repeated_vertex": "a vertex listed more than once",
    "adjacent": "two chosen vertices joined by an edge",
}

parse = parser("vertex")


def check(data: dict, chosen: list[int]) -> tuple[float | None, list[Violation]]:
    taken, violations = id_check(chosen, data["n"], "vertex", "vertices", "listed")
    joined = [(u, v) for u, v in data["edges"] if taken[u] and taken[v]]
    if joined:
        violations.append(violation("adjacent", "chosen vertices joined by an edge", joined, fmt=edge_str))
    if violations:
        return None, violations
    return len(chosen), []


def wrong_answers(inst: Instance) -> list[tuple[str, str]]:
    """A wrong answer per violation kind (the conformance suite checks each is caught)."""
    chosen = inst.reference["heuristic"]["solution"]
    u, v = inst.data["edges"][0]
    return [
        (f"Answer: {chosen + [inst.data['n']]}", "unknown_vertex"),
        (f"Answer: {chosen + [chosen[0]]}", "repeated_vertex"),
        (f"Answer: [{u}, {v}]", "adjacent"),
    ]
