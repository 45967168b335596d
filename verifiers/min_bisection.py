"""Minimum bisection answers: one half as vertex ids (or both halves as two lists);
objective = number of edges between the halves."""

from __future__ import annotations

from mmnp.generators.answers import halves

from mmnp.core import Violation, violation
from mmnp.parsing import ParseError, as_int, read_answer

VIOLATION_KINDS = {
    "unknown_vertex": "an id that is not a vertex",
    "repeated_vertex": "a vertex listed more than once (in one half or in both)",
    "missing_vertex": "a vertex in neither half (when both halves are given)",
    "unbalanced": "half sizes that differ by more than one",
}


def parse(text: str) -> list:
    """A flat list (one half) or a list of two lists (both halves)."""
    value = read_answer(text)
    if not isinstance(value, list):
        value = [value]
    if all(type(x) is int for x in value):
        return value
    if len(value) == 2 and all(isinstance(h, list) for h in value):
        return [[as_int(v, "vertex") for v in h] for h in value]
    if any(isinstance(x, list) for x in value):
        raise ParseError("expected one half as a list of vertex ids, or two halves as two lists")
    return [as_int(v, "vertex") for v in value]


def check(data: dict, solution: list) -> tuple[float | None, list[Violation]]:
    n = data["n"]
    first, second = halves(solution)
    side = [-1] * n
    unknown, repeated = [], []
    for label, half in ((0, first), (1, second or [])):
        for v in half:
            if not 0 <= v < n:
                unknown.append(v)
            elif side[v] >= 0:
                repeated.append(v)
            else:
                side[v] = label
    violations = []
    if unknown:
        violations.append(violation("unknown_vertex", f"not vertex ids (vertices are 0..{n - 1})", unknown))
    if repeated:
        violations.append(violation("repeated_vertex", "vertices listed more than once", repeated))
    if second is None:
        side = [s if s == 0 else 1 for s in side]
    else:
        missing = [v for v in range(n) if side[v] < 0]
        if missing:
            violations.append(violation("missing_vertex", "vertices in neither half", missing))
    size_a = side.count(0)
    size_b = side.count(1)
    if abs(size_a - size_b) > 1:
        violations.append(Violation("unbalanced", f"the halves have {size_a} and {size_b} vertices; "
                                    f"with {n} vertices they must have {n // 2} and {n - n // 2}", (size_a, size_b)))
    if violations:
        return None, violations
    return sum(1 for u, v in data["edges"] if side[u] != side[v]), []


def canonical(solution: list) -> tuple[int, ...]:
    """The half that holds the smallest vertex id, sorted: the same split however written."""
    first, second = halves(solution)
    if second is None:
        return tuple(sorted(first)) if 0 in first else ("complement", *sorted(first))
    return tuple(sorted(first if min(first + second) in first else second))


def format(solution: list) -> str:
    first, _ = halves(solution)
    return str(sorted(first))
