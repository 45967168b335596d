"""Longest cycle answers: vertex ids in cycle order; objective = number of vertices."""

from __future__ import annotations

from mmnp.core import Instance, Violation, edge_str, id_check, prepared, violation
from mmnp.parsing import parse_cycle
from mmnp.verifiers.tsp import canonical as _cycle_canonical

DIRECTION = "max"  # the objective is maximised
VIOLATION_KINDS = {
    "unknown_vertex": "an id that is not a vertex",
    "repeated_vertex": "a vertex visited more than once",
    "too_short": "fewer than 3 vertices",
    "missing_edge": "consecutive vertices (or the last and first) not joined by an edge",
}


def parse(text: str) -> list[int]:
    return parse_cycle(text, "vertex")


def check(data: dict, cycle: list[int]) -> tuple[float | None, list[Violation]]:
    n = data["n"]
    _, violations = id_check(cycle, n, "vertex", "vertices", "visited")
    if len(cycle) < 3:
        violations.append(Violation("too_short", f"a cycle needs at least 3 vertices, got {len(cycle)}", tuple(cycle)))
    elif all(0 <= v < n for v in cycle):
        edges = prepared(data["edges"], "pair codes", lambda es: {min(u, v) * n + max(u, v) for u, v in es})
        missing = [(a, b) for a, b in zip(cycle, cycle[1:] + cycle[:1])
                   if (a * n + b if a < b else b * n + a) not in edges]
        if missing:
            violations.append(violation("missing_edge", "consecutive vertices not joined by an edge", missing,
                                        fmt=edge_str))
    if violations:
        return None, violations
    return len(cycle), []


def canonical(data: dict, cycle: list[int]) -> tuple[int, ...]:
    return _cycle_canonical(data, cycle)


def format(cycle: list[int]) -> str:
    return str(list(cycle))


def wrong_answers(inst: Instance) -> list[tuple[str, str]]:
    """Hand-built wrong answers to `inst`, each with the violation kind it must raise: the conformance
    suite checks that every kind in VIOLATION_KINDS is caught."""
    cycle = inst.reference["heuristic"]["solution"]
    n = inst.data["n"]
    edges = {tuple(e) for e in inst.data["edges"]}
    a = next(v for v in range(1, n) if (0, v) not in edges)  # a non-neighbour of 0
    return [
        (f"Answer: {cycle[:-1] + [n]}", "unknown_vertex"),
        (f"Answer: {cycle + [cycle[1]]}", "repeated_vertex"),
        (f"Answer: {cycle[:2]}", "too_short"),
        (f"Answer: [0, {a}, {cycle[1]}]", "missing_edge"),
    ]
