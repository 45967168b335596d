"""Hand-built wrong answers per task, each paired with the violation kind it must raise.

The conformance suite requires an entry here for every registered task, covering every
kind in its verifier's VIOLATION_KINDS: a new task is not done until its verifier is
shown to catch each rule it claims to check.
"""

from __future__ import annotations

from typing import Callable

from mmnp.core import Instance


def _tsp(inst: Instance) -> list[tuple[str, str]]:
    tour = inst.reference["heuristic"]["solution"]
    n = len(tour)
    return [
        (f"Answer: {tour[:-1] + [n]}", "unknown_city"),
        (f"Answer: {tour[:-1] + [tour[1]]}", "repeated_city"),
        (f"Answer: {tour[:-1]}", "missing_city"),
    ]


def _graph_coloring(inst: Instance) -> list[tuple[str, str]]:
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


def _vertex_cover(inst: Instance) -> list[tuple[str, str]]:
    cover = inst.reference["heuristic"]["solution"]
    return [
        (f"Answer: {cover + [inst.data['n']]}", "unknown_vertex"),
        (f"Answer: {cover + [cover[0]]}", "repeated_vertex"),
        ("Answer: []", "uncovered_edge"),
    ]


def _knapsack(inst: Instance) -> list[tuple[str, str]]:
    items = inst.reference["heuristic"]["solution"]
    n = len(inst.data["weights"])
    return [
        (f"Answer: {items + [n]}", "unknown_item"),
        (f"Answer: {items + [items[0]]}", "repeated_item"),
        (f"Answer: {list(range(n))}", "over_capacity"),
    ]


WRONG_ANSWERS: dict[str, Callable[[Instance], list[tuple[str, str]]]] = {
    "tsp": _tsp,
    "graph_coloring": _graph_coloring,
    "vertex_cover": _vertex_cover,
    "knapsack": _knapsack,
}
