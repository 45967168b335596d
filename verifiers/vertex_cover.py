"""Vertex cover answers: a list of vertex ids; objective = the set's size."""

from __future__ import annotations

from mmnp.core import Violation, edge_str, id_check, violation
from mmnp.verifiers.idlist import canonical, format, parser  # noqa: F401 (the verifier protocol)

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
