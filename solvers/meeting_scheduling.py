"""Meeting scheduling: greedy placement from several meeting orders plus 1-for-1
exchanges (a small GRASP, as NP-Bench); CP-SAT over the slot grid for the exact one."""

from __future__ import annotations

import numpy as np

from mmnp.solvers import cpsat
from mmnp.kits.meetings import hhmm, minutes, windows as joined_windows

GRID = 15  # minutes between the random baseline's start times
ORDERS = 6
EXACT_NODES = 20_000  # placements the exact search may try before the GRASP answer stands
EXACT_MEETINGS = 12  # the exact search lists the sets of up to this many schedulable meetings
RUINS_PER_MEETING = 20  # ruin-and-recreate rounds per meeting when the exact search cannot run


def candidate_starts(data: dict) -> list[int]:
    """Every start minute an optimal schedule needs: the day's opening and each availability
    window's start, each plus any sum of meeting durations (within the day).

    Shifting each meeting of a schedule as early as it can go (in start order) keeps it
    feasible, and leaves every meeting starting at the day's opening, at the start of one of
    its attendees' windows, or at the end of an earlier meeting; so an optimum exists with
    all starts in this set, on any minute and not only on a grid."""
    day0, day1 = (minutes(t) for t in data["day"])
    shortest = min((m["duration"] for m in data["meetings"]), default=day1 - day0)
    points = {day0} | {minutes(a) for p in data["people"] for a, _ in p["available"]}
    points = {t for t in points if day0 <= t <= day1 - shortest}
    frontier = sorted(points)
    durations = sorted({m["duration"] for m in data["meetings"]})
    while frontier:
        fresh = {t + d for t in frontier for d in durations if t + d <= day1 - shortest} - points
        points |= fresh
        frontier = sorted(fresh)
    return sorted(points)


def _placements(data: dict) -> list[list[tuple[int, int, int]]]:
    """Per meeting, every (room, start, end) that respects the day, availability and capacity,
    over the start minutes of `candidate_starts`."""
    day0, day1 = (minutes(t) for t in data["day"])
    windows = [joined_windows(p["available"]) for p in data["people"]]
    starts = candidate_starts(data)
    out = []
    for m in data["meetings"]:
        dur, people = m["duration"], m["attendees"]
        ok = [s for s in starts if s + dur <= day1
              and all(any(a <= s and s + dur <= b for a, b in windows[p]) for p in people)]
        rooms = [r for r, room in enumerate(data["rooms"]) if room["capacity"] >= len(people)]
        rooms.sort(key=lambda r: (data["rooms"][r]["capacity"], r))  # smallest adequate room first
        out.append([(r, s, s + dur) for s in ok for r in rooms])
    return out


class _Calendar:
    """Who and which room is busy when: per room and per person, the booked intervals, so a
    placement is checked against the few bookings it shares a resource with."""

    def __init__(self, data: dict, plan: dict[int, tuple[int, int, int]] | None = None) -> None:
        self.attendees = [m["attendees"] for m in data["meetings"]]
        self.plan: dict[int, tuple[int, int, int]] = {}
        self.room: dict[int, dict[int, tuple[int, int]]] = {}
        self.person: dict[int, dict[int, tuple[int, int]]] = {}
        for m, place in (plan or {}).items():
            self.add(m, place)

    def fits(self, m: int, place: tuple[int, int, int]) -> bool:
        return not self.blockers(m, place, limit=1)

    def blockers(self, m: int, place: tuple[int, int, int], limit: int) -> list[int]:
        """The booked meetings (up to `limit`) that meeting m at `place` would clash with."""
        r, s, e = place
        found: list[int] = []
        for other, (s2, e2) in self.room.get(r, {}).items():
            if s < e2 and s2 < e:
                found.append(other)
                if len(found) >= limit:
                    return found
        for p in self.attendees[m]:
            for other, (s2, e2) in self.person.get(p, {}).items():
                if s < e2 and s2 < e and other not in found:
                    found.append(other)
                    if len(found) >= limit:
                        return found
        return found

    def add(self, m: int, place: tuple[int, int, int]) -> None:
        r, s, e = place
        self.plan[m] = place
        self.room.setdefault(r, {})[m] = (s, e)
        for p in self.attendees[m]:
            self.person.setdefault(p, {})[m] = (s, e)

    def remove(self, m: int) -> None:
        r, _, _ = self.plan.pop(m)
        del self.room[r][m]
        for p in self.attendees[m]:
            del self.person[p][m]


def _greedy(order: list[int], options: list, data: dict,
            plan: dict[int, tuple[int, int, int]] | None = None) -> dict[int, tuple[int, int, int]]:
    """`plan` (empty by default) plus each meeting of `order` at its first placement that fits."""
    calendar = _Calendar(data, plan)
    for m in order:
        place = next((p for p in options[m] if calendar.fits(m, p)), None)
        if place is not None:
            calendar.add(m, place)
    return calendar.plan


def _value(plan: dict, data: dict) -> int:
    return sum(len(data["meetings"][m]["attendees"]) for m in plan)


def _exchange(plan: dict, options: list, data: dict) -> dict:
    """Unschedule one meeting to place a larger unscheduled one, while that gains: the
    larger meeting takes its first placement blocked by nothing or by that one meeting only,
    the smallest such meeting leaving first."""
    sizes = [len(m["attendees"]) for m in data["meetings"]]
    calendar = _Calendar(data, plan)
    improved = True
    while improved:
        improved = False
        for m in sorted(set(range(len(options))) - set(calendar.plan), key=lambda m: -sizes[m]):
            first: dict[int | None, int] = {}  # blocking meeting (None: nothing) -> first placement index
            for i, place in enumerate(options[m]):
                blockers = calendar.blockers(m, place, limit=2)
                if len(blockers) < 2:
                    first.setdefault(blockers[0] if blockers else None, i)
                    if not blockers:
                        break
            for out in sorted(calendar.plan, key=lambda o: sizes[o]):
                if sizes[out] >= sizes[m]:
                    break
                found = [i for i in (first.get(None), first.get(out)) if i is not None]
                if found:
                    calendar.remove(out)
                    calendar.add(m, options[m][min(found)])
                    improved = True
                    break
            if improved:
                break
    return dict(calendar.plan)


def heuristic(data: dict) -> list[list]:
    """GRASP-style greedy placements from several meeting orders plus exchanges, then the
    exact search (`exact`) for anything better within EXACT_NODES placements tried."""
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
    better = exact(data, options, _value(best, data), EXACT_NODES)
    if better is not None:
        best = better
    elif len([m for m in range(n) if options[m]]) > EXACT_MEETINGS:
        best = _ruin_and_recreate(best, options, data, RUINS_PER_MEETING * n, rng)
    return sorted([m, r, hhmm(s)] for m, (r, s, _) in best.items())


def _ruin_and_recreate(plan: dict, options: list, data: dict, rounds: int, rng: np.random.Generator) -> dict:
    """Large neighbourhood search (Schrimpf et al.'s ruin and recreate): unschedule a quarter of
    the scheduled meetings at random, reschedule the unscheduled ones largest first (ties at
    random) at their first fitting placement, then the exchanges; keep the result when it
    seats at least as many."""
    sizes = [len(m["attendees"]) for m in data["meetings"]]
    best, best_value = plan, _value(plan, data)
    for _ in range(rounds):
        kept = sorted(best)
        drop = set(rng.choice(kept, size=max(1, len(kept) // 4), replace=False).tolist()) if kept else set()
        base = {m: place for m, place in best.items() if m not in drop}
        waiting = [m for m in range(len(options)) if m not in base and options[m]]
        noise = rng.random(len(waiting))
        order = [m for _, _, m in sorted(zip([-sizes[m] for m in waiting], noise, waiting))]
        trial = _exchange(_greedy(order, options, data, base), options, data)
        value = _value(trial, data)
        if value >= best_value:
            best, best_value = trial, value
    return best


def exact(data: dict, options: list, beat: int, nodes: int) -> dict | None:
    """The best schedule worth more than `beat`, or None when there is none (or the search
    ran out of `nodes`). The value of a schedule is that of its set of meetings, so sets are
    tried from the most valuable down, each by a depth-first placement search (the meeting
    with the fewest placements first); a set containing one already found unschedulable is
    skipped. Exact over the candidate starts (`candidate_starts`)."""
    sizes = [len(m["attendees"]) for m in data["meetings"]]
    usable = [m for m in range(len(options)) if options[m]]
    if len(usable) > EXACT_MEETINGS:
        return None
    subsets = []
    for mask in range(1, 1 << len(usable)):
        chosen = [usable[i] for i in range(len(usable)) if mask >> i & 1]
        value = sum(sizes[m] for m in chosen)
        if value > beat:
            subsets.append((-value, mask, chosen))
    subsets.sort()
    failed: list[int] = []
    budget = [nodes]
    for _, mask, chosen in subsets:
        if any(f & mask == f for f in failed):
            continue
        plan = _place_all(sorted(chosen, key=lambda m: (len(options[m]), m)), options, data, budget)
        if budget[0] < 0:
            return None
        if plan is not None:
            return plan
        failed.append(mask)
    return None


def _place_all(order: list[int], options: list, data: dict, budget: list[int]) -> dict | None:
    """A placement for every meeting of `order` with no clash, by depth-first search."""
    calendar = _Calendar(data)

    def place(i: int) -> bool:
        if i == len(order):
            return True
        m = order[i]
        for p in options[m]:
            budget[0] -= 1
            if budget[0] < 0:
                return False
            if calendar.fits(m, p):
                calendar.add(m, p)
                if place(i + 1):
                    return True
                calendar.remove(m)
        return False

    return dict(calendar.plan) if place(0) else None


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
    solver, proven = cpsat.solve(model, time_limit)  # the hint stays out (mmnp.solvers.cpsat)
    if not proven and cpsat.settles(solver, sum(len(data["meetings"][m]["attendees"]) for m, _, _ in hint), False):
        return hint, True
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


def trivial(data: dict) -> list[list]:
    """The empty schedule: breaks no rule, 0 attendees (QR 0), the floor a non-solver reaches."""
    return []
