"""Maximum clique answers: a list of vertex ids; objective = the set's size."""

from __future__ import annotations

from mmnp.core import Instance, Violation, edge_str, id_check, prepared, violation
from mmnp.verifiers.idlist import canonical, format, parser  # noqa: F401 (the verifier protocol)

DIRECTION = "max"  # the objective is maximised
VIOLATION_KINDS = {
    "unknown_vertex": "an id that is not a vertex",
    "repeated_vertex": "a vertex listed more than once",
    "not_adjacent": "two chosen vertices not joined by an edge",
}

parse = parser("vertex")


def check(data: dict, clique: list[int]) -> tuple[float | None, list[Violation]]:
    n = data["n"]
    taken, violations = id_check(clique, n, "vertex", "vertices", "listed")
    members = [v for v in range(n) if taken[v]]
    if len(members) > 1:
        edges = prepared(data["edges"], "pairs", lambda es: {(min(u, v), max(u, v)) for u, v in es})
        apart = [(u, v) for i, u in enumerate(members) for v in members[i + 1 :] if (u, v) not in edges]
        if apart:
            violations.append(violation("not_adjacent", "chosen vertices not joined by an edge", apart, fmt=edge_str))
    if violations:
        return None, violations
    return len(clique), []


def wrong_answers(inst: Instance) -> list[tuple[str, str]]:
    """Hand-built wrong answers to `inst`, each with the violation kind it must raise: the conformance
    suite checks that every kind in VIOLATION_KINDS is caught."""
    clique = inst.reference["heuristic"]["solution"]
    n = inst.data["n"]
    edges = {tuple(e) for e in inst.data["edges"]}
    u, v = next((u, v) for u in range(n) for v in range(u + 1, n) if (u, v) not in edges)
    return [
        (f"Answer: {clique + [n]}", "unknown_vertex"),
        (f"Answer: {clique + [clique[0]]}", "repeated_vertex"),
        (f"Answer: [{u}, {v}]", "not_adjacent"),
    ]
