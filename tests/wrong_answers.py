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


def _longest_cycle(inst: Instance) -> list[tuple[str, str]]:
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


WRONG_ANSWERS["longest_cycle"] = _longest_cycle


def _max_clique(inst: Instance) -> list[tuple[str, str]]:
    clique = inst.reference["heuristic"]["solution"]
    n = inst.data["n"]
    edges = {tuple(e) for e in inst.data["edges"]}
    u, v = next((u, v) for u in range(n) for v in range(u + 1, n) if (u, v) not in edges)
    return [
        (f"Answer: {clique + [n]}", "unknown_vertex"),
        (f"Answer: {clique + [clique[0]]}", "repeated_vertex"),
        (f"Answer: [{u}, {v}]", "not_adjacent"),
    ]


WRONG_ANSWERS["max_clique"] = _max_clique


def _set_cover(inst: Instance) -> list[tuple[str, str]]:
    chosen = inst.reference["heuristic"]["solution"]
    m = len(inst.data["subsets"])
    return [
        (f"Answer: {chosen + [m]}", "unknown_subset"),
        (f"Answer: {chosen + [chosen[0]]}", "repeated_subset"),
        (f"Answer: {chosen[1:]}", "uncovered_element"),
    ]


WRONG_ANSWERS["set_cover"] = _set_cover


def _subset_sum(inst: Instance) -> list[tuple[str, str]]:
    chosen = inst.reference["heuristic"]["solution"]
    n = len(inst.data["numbers"])
    return [
        (f"Answer: {chosen + [n]}", "unknown_index"),
        (f"Answer: {chosen + [chosen[0]]}", "repeated_index"),
        (f"Answer: {chosen[1:]}", "wrong_sum"),
    ]


WRONG_ANSWERS["subset_sum"] = _subset_sum


def _min_bisection(inst: Instance) -> list[tuple[str, str]]:
    half = inst.reference["heuristic"]["solution"]
    n = inst.data["n"]
    other = [v for v in range(n) if v not in half]
    return [
        (f"Answer: {half[:-1] + [n]}", "unknown_vertex"),
        (f"Answer: {[half, other + [half[0]]]}", "repeated_vertex"),
        (f"Answer: {[half, other[:-1]]}", "missing_vertex"),
        (f"Answer: {half[:-2]}", "unbalanced"),
    ]


WRONG_ANSWERS["min_bisection"] = _min_bisection


def _meeting_scheduling(inst: Instance) -> list[tuple[str, str]]:
    """Built from the instance so each answer breaks the rule it is named for."""
    from mmnp.verifiers.meeting_scheduling import hhmm, minutes

    data = inst.data
    meetings, rooms, people = data["meetings"], data["rooms"], data["people"]
    day0, day1 = (minutes(t) for t in data["day"])
    fmt = lambda entries: "Answer: [" + ", ".join(f'({m}, {r}, "{hhmm(s)}")' for m, r, s in entries) + "]"  # noqa: E731
    windows = lambda p: [(minutes(a), minutes(b)) for a, b in people[p]["available"]]  # noqa: E731

    def free_start(m: int) -> int:
        dur = meetings[m]["duration"]
        return next(s for s in range(day0, day1 - dur + 1, 30)
                    if all(any(a <= s and s + dur <= b for a, b in windows(p)) for p in meetings[m]["attendees"]))

    big = max(range(len(rooms)), key=lambda r: rooms[r]["capacity"])
    small = min(range(len(rooms)), key=lambda r: rooms[r]["capacity"])
    other = next(r for r in range(len(rooms)) if r != big)
    m0 = inst.reference["planted"]["solution"][0][0]  # a meeting that can be placed
    s0 = free_start(m0)
    m1 = next(m for m in range(len(meetings)) if m != m0)
    # a meeting starting right when one of its attendees' windows closes
    late = next((m, b) for m in range(len(meetings)) for p in meetings[m]["attendees"]
                for _, b in windows(p) if b < day1)
    crowded = next(m for m in range(len(meetings)) if len(meetings[m]["attendees"]) > rooms[small]["capacity"])
    a, b = next((a, b) for a in range(len(meetings)) for b in range(a + 1, len(meetings))
                if set(meetings[a]["attendees"]) & set(meetings[b]["attendees"]))
    return [
        (fmt([(len(meetings), big, s0)]), "unknown_meeting"),
        (fmt([(m0, len(rooms), s0)]), "unknown_room"),
        (fmt([(m0, big, s0), (m0, big, s0)]), "repeated_meeting"),
        (fmt([(m0, big, day1 - meetings[m0]["duration"] + 30)]), "outside_day"),
        (fmt([late[:1] + (big, late[1])]), "unavailable_attendee"),
        (fmt([(crowded, small, free_start(crowded))]), "over_capacity"),
        (fmt([(m0, big, s0), (m1, big, s0)]), "room_conflict"),
        (fmt([(a, big, free_start(a)), (b, other, free_start(a))]), "attendee_conflict"),
    ]


WRONG_ANSWERS["meeting_scheduling"] = _meeting_scheduling
