"""Meeting scheduling answers: (meeting, room, start) triples; objective = total attendees
of the scheduled meetings."""

from __future__ import annotations

import re
from functools import lru_cache

from mmnp.core import Instance, Violation, prepared, violation
from mmnp.kits.meetings import hhmm, minutes, windows as joined_windows
from mmnp.parsing import ParseError, as_int, read_answer

DIRECTION = "max"  # the objective is maximised
VIOLATION_KINDS = {
    "unknown_meeting": "an id that is not a meeting",
    "unknown_room": "an id that is not a room",
    "repeated_meeting": "a meeting scheduled more than once",
    "outside_day": "a meeting that starts before the day opens or ends after it closes",
    "unavailable_attendee": "an attendee who is not available for the whole meeting",
    "over_capacity": "a room with fewer seats than the meeting's attendees",
    "room_conflict": "a room holding two meetings at once",
    "attendee_conflict": "an attendee in two meetings at once",
}

_TIME = re.compile(r"(\d{1,2}):(\d{2})")


def _start(x) -> str:
    if isinstance(x, str) and len(x) <= 16:
        return _start_text(x)
    raise ParseError(f"start {str(x)[:20]!r} is not a time of day like '09:30'")  # never a long text's first part


@lru_cache(maxsize=4096)
def _start_text(x: str) -> str:
    match = _TIME.fullmatch(x.strip())
    if match is None or int(match.group(1)) > 23 or int(match.group(2)) > 59:
        raise ParseError(f"start {str(x)[:20]!r} is not a time of day like '09:30'")
    return hhmm(int(match.group(1)) * 60 + int(match.group(2)))


def parse(text: str) -> list[list]:
    """[[meeting, room, "HH:MM"], ...] from tuples/lists, or from dicts with meeting/room/start keys."""
    value = read_answer(text)
    if not isinstance(value, list):
        raise ParseError("expected a list of (meeting, room, start) entries")
    if len(value) == 3 and not any(isinstance(x, list) for x in value):
        value = [value]  # a single entry without the outer list
    schedule = []
    for entry in value:
        if type(entry) is list and len(entry) == 3 and type(entry[0]) is int and type(entry[1]) is int:
            schedule.append([entry[0], entry[1], _start(entry[2])])  # the common, well-formed case
            continue
        if not isinstance(entry, list):
            raise ParseError(f"entry {str(entry)[:30]!r} is not a (meeting, room, start) triple")
        if entry and all(isinstance(kv, list) and len(kv) == 2 for kv in entry):  # a dict entry
            fields = {str(k).lower(): v for k, v in entry}
            if len(fields) < len(entry):  # {"meeting": 0, "meeting": 9}: which one is meant is not for mmnp to pick
                names = [str(k).lower() for k, _ in entry]
                raise ParseError(f"an entry names the key {next(k for k in names if names.count(k) > 1)[:20]!r} twice")
            try:
                entry = [fields["meeting"], fields["room"], fields["start"]]
            except KeyError as missing:
                raise ParseError(f"an entry lacks the key {missing}; use meeting, room and start") from None
        if len(entry) != 3:
            raise ParseError(f"entry {str(entry)[:40]} does not have 3 parts (meeting, room, start)")
        schedule.append([as_int(entry[0], "meeting"), as_int(entry[1], "room"), _start(entry[2])])
    return schedule


def check(data: dict, schedule: list[list]) -> tuple[float | None, list[Violation]]:
    meetings = data["meetings"]
    found, placed = _place(data, schedule)
    found["room_conflict"], found["attendee_conflict"] = _clashes(placed, meetings)
    violations = _violations(data, found)
    if violations:
        return None, violations
    return sum(len(meetings[m]["attendees"]) for m, _, _, _ in placed), []


def _place(data: dict, schedule: list[list]) -> tuple[dict[str, list], list[tuple[int, int, int, int]]]:
    """Each entry's own faults by kind (unknown ids, repeats, outside the day, an attendee away,
    a room too small) and the placed meetings as (meeting, room, start, end)."""
    people, rooms, meetings = data["people"], data["rooms"], data["meetings"]
    day_start, day_end = (minutes(t) for t in data["day"])
    found: dict[str, list] = {kind: [] for kind in ("unknown_meeting", "unknown_room", "repeated_meeting",
                                                    "outside_day", "unavailable_attendee", "over_capacity")}
    placed: list[tuple[int, int, int, int]] = []
    seen: set[int] = set()
    windows = prepared(people, "windows", lambda ps: [joined_windows(p["available"]) for p in ps])
    for m, r, start in schedule:
        if not 0 <= m < len(meetings):
            found["unknown_meeting"].append(m)
            continue
        if not 0 <= r < len(rooms):
            found["unknown_room"].append(r)
            continue
        if m in seen:
            found["repeated_meeting"].append(m)
            continue
        seen.add(m)
        s = minutes(start)
        e = s + meetings[m]["duration"]
        placed.append((m, r, s, e))
        if s < day_start or e > day_end:
            found["outside_day"].append((m, s, e))
        for p in meetings[m]["attendees"]:
            for a, b in windows[p]:
                if a <= s and e <= b:
                    break
            else:
                found["unavailable_attendee"].append((m, p, s, e))
        if len(meetings[m]["attendees"]) > rooms[r]["capacity"]:
            found["over_capacity"].append((m, r))
    return found, placed


def _clashes(placed: list[tuple[int, int, int, int]], meetings: list[dict]) -> tuple[list, list]:
    """Overlapping placed meetings that share a room, or an attendee (sorts `placed` by start)."""
    room_clash, person_clash = [], []
    placed.sort(key=lambda x: x[2])
    for i, (m1, r1, s1, e1) in enumerate(placed):
        for m2, r2, s2, e2 in placed[i + 1 :]:
            if s2 >= e1:
                break  # sorted by start: no later meeting overlaps this one
            if s1 < e2:
                overlap = (max(s1, s2), min(e1, e2))
                if r1 == r2:
                    room_clash.append((r1, m1, m2, *overlap))
                for p in set(meetings[m1]["attendees"]) & set(meetings[m2]["attendees"]):
                    person_clash.append((p, m1, m2, *overlap))
    return room_clash, person_clash


def _violations(data: dict, found: dict[str, list]) -> list[Violation]:
    """The violations, in VIOLATION_KINDS order, of the kinds `found` holds offenders of."""
    if not any(found.values()):
        return []  # a feasible schedule: no messages to word
    people, rooms, meetings = data["people"], data["rooms"], data["meetings"]
    name = lambda p: people[p]["name"]  # noqa: E731
    span = lambda s, e: f"{hhmm(s)}-{hhmm(e)}"  # noqa: E731
    described = (
        ("unknown_meeting", f"not meeting ids (meetings are 0..{len(meetings) - 1})", str),
        ("unknown_room", f"not room ids (rooms are 0..{len(rooms) - 1})", str),
        ("repeated_meeting", "meetings scheduled more than once", str),
        ("outside_day", f"meetings outside the day {data['day'][0]}-{data['day'][1]}",
         lambda x: f"meeting {x[0]} at {span(x[1], x[2])}"),
        ("unavailable_attendee", "attendees not available for their meeting",
         lambda x: f"{name(x[1])} for meeting {x[0]} at {span(x[2], x[3])}"),
        ("over_capacity", "rooms too small for their meeting",
         lambda x: f"meeting {x[0]} has {len(meetings[x[0]]['attendees'])} attendees, "
                   f"room {x[1]} seats {rooms[x[1]]['capacity']}"),
        ("room_conflict", "rooms booked twice at once",
         lambda x: f"room {x[0]} holds meetings {x[1]} and {x[2]} at {span(x[3], x[4])}"),
        ("attendee_conflict", "attendees double-booked",
         lambda x: f"{name(x[0])} in meetings {x[1]} and {x[2]} at {span(x[3], x[4])}"),
    )
    return [violation(kind, what, found[kind], fmt=fmt) for kind, what, fmt in described if found[kind]]


def canonical(data: dict, schedule: list[list]) -> tuple[tuple, ...]:
    return tuple(sorted((m, r, minutes(s)) for m, r, s in schedule))


def format(schedule: list[list]) -> str:
    return "[" + ", ".join(f'({m}, {r}, "{s}")' for m, r, s in sorted(schedule)) + "]"


def wrong_answers(inst: Instance) -> list[tuple[str, str]]:
    """Hand-built wrong answers to `inst`, each with the violation kind it must raise: the conformance
    suite checks that every kind in VIOLATION_KINDS is caught. A kind this instance cannot show is
    left out (over_capacity when every meeting fits the smallest room, unavailable_attendee when
    no attendee's window closes before the day ends, attendee_conflict when no two meetings
    share anyone): the suite checks each kind over several instances."""
    data = inst.data
    meetings, rooms, people = data["meetings"], data["rooms"], data["people"]
    day0, day1 = (minutes(t) for t in data["day"])
    fmt = lambda entries: "Answer: [" + ", ".join(f'({m}, {r}, "{hhmm(s)}")' for m, r, s in entries) + "]"  # noqa: E731
    windows = lambda p: joined_windows(people[p]["available"])  # noqa: E731

    def free_start(m: int) -> int:
        """A start on the half hour when all of m's attendees are free, else the day's opening."""
        dur = meetings[m]["duration"]
        return next((s for s in range(day0, day1 - dur + 1, 30)
                     if all(any(a <= s and s + dur <= b for a, b in windows(p)) for p in meetings[m]["attendees"])),
                    day0)

    big = max(range(len(rooms)), key=lambda r: rooms[r]["capacity"])
    small = min(range(len(rooms)), key=lambda r: rooms[r]["capacity"])
    other = next((r for r in range(len(rooms)) if r != big), big)
    m0, _, start = inst.reference["planted"]["solution"][0]  # a meeting, and a start that fits it
    s0 = minutes(start)
    m1 = next(m for m in range(len(meetings)) if m != m0)
    cases = [
        (fmt([(len(meetings), big, s0)]), "unknown_meeting"),
        (fmt([(m0, len(rooms), s0)]), "unknown_room"),
        (fmt([(m0, big, s0), (m0, big, s0)]), "repeated_meeting"),
        (fmt([(m0, big, day1 - meetings[m0]["duration"] + 30)]), "outside_day"),
    ]
    # a meeting starting right when one of its attendees' windows closes
    late = next(((m, b) for m in range(len(meetings)) for p in meetings[m]["attendees"]
                 for _, b in windows(p) if b < day1), None)
    if late is not None:
        cases.append((fmt([(late[0], big, late[1])]), "unavailable_attendee"))
    crowded = next((m for m in range(len(meetings)) if len(meetings[m]["attendees"]) > rooms[small]["capacity"]), None)
    if crowded is not None:
        cases.append((fmt([(crowded, small, free_start(crowded))]), "over_capacity"))
    cases.append((fmt([(m0, big, s0), (m1, big, s0)]), "room_conflict"))
    shared = next(((a, b) for a in range(len(meetings)) for b in range(a + 1, len(meetings))
                   if set(meetings[a]["attendees"]) & set(meetings[b]["attendees"])), None)
    if shared is not None:
        a, b = shared
        cases.append((fmt([(a, big, free_start(a)), (b, other, free_start(a))]), "attendee_conflict"))
    return cases
