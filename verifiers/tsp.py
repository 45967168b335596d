"""TSP answers: a tour as city ids; objective = total EUC_2D length."""

from __future__ import annotations

import math

from mmnp.core import Instance, Violation, id_check, violation
from mmnp.parsing import parse_cycle

DIRECTION = "min"  # the objective is minimised
VIOLATION_KINDS = {
    "unknown_city": "an id that is not a city",
    "repeated_city": "a city visited more than once",
    "missing_city": "a city never visited",
}


def parse(text: str) -> list[int]:
    return parse_cycle(text, "city")


def check(data: dict, tour: list[int]) -> tuple[float | None, list[Violation]]:
    coords = data["coords"]
    n = len(coords)
    seen, violations = id_check(tour, n, "city", "cities", "visited")
    if not all(seen):
        violations.append(violation("missing_city", "cities never visited", [c for c in range(n) if not seen[c]]))
    if violations:
        return None, violations
    return tour_length(coords, tour), []


def tour_length(coords: list[list[int]], tour: list[int]) -> int:
    """TSPLIB EUC_2D: each leg's Euclidean length rounded to the nearest integer."""
    prev = coords[tour[-1]]
    total = 0
    for c in tour:
        here = coords[c]
        total += int(math.dist(prev, here) + 0.5)
        prev = here
    return total


def canonical(data: dict, tour: list[int]) -> tuple[int, ...]:
    """The same cycle whatever its start and direction."""
    i = tour.index(min(tour))
    t = tour[i:] + tour[:i]
    return tuple(t if len(t) < 3 or t[1] <= t[-1] else [t[0]] + t[:0:-1])


def format(tour: list[int]) -> str:
    return str(list(tour))


def wrong_answers(inst: Instance) -> list[tuple[str, str]]:
    """Hand-built wrong answers to `inst`, each with the violation kind it must raise: the conformance
    suite checks that every kind in VIOLATION_KINDS is caught."""
    tour = inst.reference["heuristic"]["solution"]
    n = len(tour)
    return [
        (f"Answer: {tour[:-1] + [n]}", "unknown_city"),
        (f"Answer: {tour[:-1] + [tour[1]]}", "repeated_city"),
        (f"Answer: {tour[:-1]}", "missing_city"),
    ]
