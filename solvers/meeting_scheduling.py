"""Meeting scheduling: greedy placement from several meeting orders plus 1-for-1
exchanges (a small GRASP, as NP-Bench); CP-SAT over the slot grid for the exact one."""

from __future__ import annotations

import numpy as np

from mmnp.solvers import cpsat
from mmnp.generators.meetings import hhmm, minutes

GRID = 15  # minutes between candidate start times
ORDERS = 6


def _placements(data: dict) -> list[list[tuple[int, int, int]]]:
    """Per meeting, every (room, start, end) that respects the day, availability and capacity."""
    day0, day1 = (minutes(t) for t in data["day"])
    windows = [[(minutes(a), minutes(b)) for a, b in p["available"]] for p in data["people"]]
    out = []
    for m in data["meetings"]:
        dur, people = m["duration"], m["attendees"]
        starts = [s for s in range(day0, day1 - dur + 1, GRID)
                  if all(any(a <= s and s + dur <= b for a, b in windows[p]) for p in people)]
        rooms = [r for r, room in enumerate(data["rooms"]) if room["capacity"] >= len(people)]
        rooms.sort(key=lambda r: (data["rooms"][r]["capacity"], r))  # smallest adequate room first
        out.append([(r, s, s + dur) for s in starts for r in rooms])
    return out


def _fits(m: int, place: tuple[int, int, int], plan: dict[int, tuple[int, int, int]], data: dict) -> bool:
    r, s, e = place
    people = set(data["meetings"][m]["attendees"])
    for other, (r2, s2, e2) in plan.items():
        if s < e2 and s2 < e and (r == r2 or people & set(data["meetings"][other]["attendees"])):
            return False
    return True


def _greedy(order: list[int], options: list, data: dict) -> dict[int, tuple[int, int, int]]:
    plan: dict[int, tuple[int, int, int]] = {}
    for m in order:
        place = next((p for p in options[m] if _fits(m, p, plan, data)), None)
        if place is not None:
            plan[m] = place
    return plan


def _value(plan: dict, data: dict) -> int:
    return sum(len(data["meetings"][m]["attendees"]) for m in plan)


def _exchange(plan: dict, options: list, data: dict) -> dict:
    """Unschedule one meeting to place a larger unscheduled one, while that gains."""
    sizes = [len(m["attendees"]) for m in data["meetings"]]
    improved = True
    while improved:
        improved = False
        for m in sorted(set(range(len(options))) - set(plan), key=lambda m: -sizes[m]):
            for out in sorted(plan, key=lambda o: sizes[o]):
                if sizes[out] >= sizes[m]:
                    break
                trial = {k: v for k, v in plan.items() if k != out}
                place = next((p for p in options[m] if _fits(m, p, trial, data)), None)
                if place is not None:
                    trial[m] = place
                    plan, improved = trial, True
                    break
            if improved:
                break
    return plan


def heuristic(data: dict) -> list[list]:
    options = _placements(data)
    sizes = [len(m["attendees"]) for m in data["meetings"]]
    durations = [m["duration"] for m in data["meetings"]]
    n = len(options)
    orders = [sorted(range(n), key=lambda m: (-sizes[m], durations[m], m)),
              sorted(range(n), key=lambda m: (len(options[m]), -sizes[m], m))]
    rng = np.random.default_rng(0)
    orders += [[int(m) for m in rng.permutation(n)] for _ in range(ORDERS - len(orders))]
    best: dict = {}
    for order in orders:
        plan = _exchange(_greedy(order, options, data), options, data)
        if _value(plan, data) > _value(best, data):
            best = plan
    return sorted([m, r, hhmm(s)] for m, (r, s, _) in best.items())


def optimal(data: dict, time_limit: float, hint: list[list]) -> tuple[list[list], bool]:
    """A boolean per feasible placement; per room and per person, overlapping placements
    exclude each other (no-overlap over optional intervals)."""
    from ortools.sat.python import cp_model

    options = _placements(data)
    model = cp_model.CpModel()
    chosen: dict[tuple[int, int, int], cp_model.IntVar] = {}
    by_room: dict[int, list] = {}
    by_person: dict[int, list] = {}
    for m, places in enumerate(options):
        lits = []
        for r, s, e in places:
            lit = model.NewBoolVar("")
            chosen[m, r, s] = lit
            lits.append(lit)
            interval = model.NewOptionalFixedSizeIntervalVar(s, e - s, lit, "")
            by_room.setdefault(r, []).append(interval)
            for p in data["meetings"][m]["attendees"]:
                by_person.setdefault(p, []).append(interval)
        model.AddAtMostOne(lits)
    for intervals in list(by_room.values()) + list(by_person.values()):
        model.AddNoOverlap(intervals)
    model.Maximize(sum(len(data["meetings"][m]["attendees"]) * lit for (m, _, _), lit in chosen.items()))
    hinted = {(m, r, minutes(s)) for m, r, s in hint}
    for key, lit in chosen.items():
        model.AddHint(lit, key in hinted)
    solver, proven = cpsat.solve(model, time_limit)
    return sorted([m, r, hhmm(s)] for (m, r, s), lit in chosen.items() if solver.Value(lit)), proven


def random(data: dict, rng: np.random.Generator) -> list[list]:
    """Most meetings in a random room at a random grid time: usually some conflict."""
    day0, day1 = (minutes(t) for t in data["day"])
    out = []
    for m, meeting in enumerate(data["meetings"]):
        if rng.random() < 0.7:
            start = day0 + GRID * int(rng.integers(0, (day1 - day0 - meeting["duration"]) // GRID + 1))
            out.append([m, int(rng.integers(len(data["rooms"]))), hhmm(start)])
    return out
