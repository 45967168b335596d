"""Graph colouring answers: colours by position ([1, 2, 1]) or by vertex ({0: 1, 1: 2});
objective = number of distinct colours."""

from __future__ import annotations

from mmnp.kits.answers import as_mapping

from mmnp.core import Instance, Violation, edge_str, violation
from mmnp.parsing import ParseError, as_int, ints_only, read_list

DIRECTION = "min"  # the objective is minimised
VIOLATION_KINDS = {
    "unknown_vertex": "a colour given for a vertex that does not exist",
    "repeated_vertex": "a vertex given two colours",
    "missing_vertex": "a vertex with no colour",
    "invalid_colour": "a colour that is not a positive integer",
    "conflict": "two adjacent vertices with the same colour",
}


def parse(text: str) -> list:
    """A list of colours (positional), or a list of [vertex, colour] pairs (mapping form)."""
    value = read_list(text)
    if ints_only(value):
        return value
    if all(isinstance(x, list) for x in value):
        if any(len(x) != 2 for x in value):
            raise ParseError("expected 'vertex: colour' pairs or a list of colours")
        return [[as_int(v, "vertex"), as_int(c, "colour")] for v, c in value]
    return [as_int(c, "colour") for c in value]


def check(data: dict, solution: list) -> tuple[float | None, list[Violation]]:
    n = data["n"]
    violations = []
    if solution and isinstance(solution[0], list):
        colour: list[int | None] = [None] * n
        unknown, repeated = [], []
        for v, c in solution:
            if not 0 <= v < n:
                unknown.append(v)
            elif colour[v] is not None:
                repeated.append(v)
            else:
                colour[v] = c
        if unknown:
            violations.append(violation("unknown_vertex", f"not vertex ids (vertices are 0..{n - 1})", unknown))
        if repeated:
            violations.append(violation("repeated_vertex", "vertices given more than one colour", repeated))
    else:
        colour = list(solution[:n]) + [None] * (n - len(solution))
        if len(solution) > n:
            violations.append(Violation("unknown_vertex", f"{len(solution)} colours given for {n} vertices",
                                        tuple(range(n, len(solution)))))
    missing = [v for v in range(n) if colour[v] is None]
    if missing:
        violations.append(violation("missing_vertex", "vertices with no colour", missing))
    invalid = [v for v in range(n) if colour[v] is not None and colour[v] < 1]
    if invalid:
        violations.append(violation("invalid_colour", "vertices whose colour is not a positive integer",
                                    invalid, fmt=lambda v: f"{v} (colour {colour[v]})"))
    conflicts = [(u, v) for u, v in data["edges"] if colour[u] == colour[v] and colour[u] is not None]
    if conflicts:
        violations.append(violation("conflict", "adjacent vertices with the same colour", conflicts,
                                    fmt=lambda e: f"{edge_str(e)} both {colour[e[0]]}"))
    if violations:
        return None, violations
    return len(set(colour)), []


def canonical(data: dict, solution: list) -> tuple[int, ...]:
    """Colours renamed by first appearance, so permuting colour names changes nothing."""
    mapping = as_mapping(solution)
    names: dict[int, int] = {}
    return tuple(names.setdefault(mapping[v], len(names)) for v in sorted(mapping))


def format(solution: list) -> str:
    return str(list(solution))


def wrong_answers(inst: Instance) -> list[tuple[str, str]]:
    """Hand-built wrong answers to `inst`, each with the violation kind it must raise: the conformance
    suite checks that every kind in VIOLATION_KINDS is caught."""
    colours = inst.reference["heuristic"]["solution"]
    n = len(colours)
    pairs = [[v, c] for v, c in enumerate(colours)]
    return [
        (f"Answer: {pairs + [[n, 1]]}", "unknown_vertex"),
        (f"Answer: {pairs + [[0, colours[0]]]}", "repeated_vertex"),
        (f"Answer: {colours[:-1]}", "missing_vertex"),
        (f"Answer: {[0] + colours[1:]}", "invalid_colour"),
        (f"Answer: {[1] * n}", "conflict"),
    ]
