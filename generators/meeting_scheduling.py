"""Meeting scheduling: people with availability, rooms with capacities, meetings with
attendees and durations; a planted conflict-free schedule for most of the meetings."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mmnp.core import Violation
from mmnp.kits.meetings import hhmm, minutes
from mmnp.prompting import answer_instructions
from mmnp.render import (BLACK, DARK_GREY, DEFAULT_SIZE, GREEN, GREY, LIGHT_GREY, MIN_FONT, RED, Canvas,
                         class_colour, draw_table, table_height, text_width)
from mmnp.transcribe import Form, as_int, as_list, as_minutes

CATEGORY = "schedule"  # how `mmnp tasks` and the leaderboard group it (mmnp.core.CATEGORIES)
VERSION = 2  # bump when this task's instances, prompts or picture change (manifests record it). 2: answer templates, picture kinds

NAMES = ["Ana", "Ben", "Cai", "Dev", "Eva", "Fay", "Gus", "Hal", "Ivy", "Jon", "Kim", "Lea"]
SLOT = 30  # minutes: durations, availability and planted starts are multiples of it


@dataclass(frozen=True)
class Config:
    meetings: tuple[int, int] | int = (5, 6)
    people: tuple[int, int] | int = (4, 6)
    rooms: tuple[int, int] | int = (4, 5)
    day_start: str = "09:00"
    day_end: str = "17:00"
    availability: float | tuple[float, float] = (0.35, 0.6)  # share of the day each person is available


PRESETS = {
    "easy": Config(meetings=(4, 5), people=(3, 5), rooms=(3, 4)),
    "medium": Config(meetings=(5, 6), people=(4, 6), rooms=(4, 5)),
    "hard": Config(meetings=(6, 7), people=(5, 7), rooms=(5, 6)),
}
# past bench: more meetings than the rooms can hold and people available most of the day,
# so that many schedules nearly tie and CP-SAT must search
LEVELS = (  # L1..L10 (`mmnp.levels`): a preset name, or the Config fields that differ from its defaults
    {"meetings": (3, 4), "people": (3, 4), "rooms": (2, 3)}, "easy", "medium", "hard",
    {"meetings": (7, 9), "people": (6, 8), "rooms": (5, 6)},
    {"meetings": (9, 11), "people": (7, 9), "rooms": (4, 5), "availability": (0.6, 0.8)},
    {"meetings": (11, 14), "people": (8, 10), "rooms": (4, 5), "availability": (0.65, 0.85)},
    {"meetings": (14, 17), "people": (9, 11), "rooms": (3, 4), "availability": (0.7, 0.9)},
    {"meetings": (17, 21), "people": (10, 12), "rooms": (3, 4), "availability": (0.7, 0.9)},
    {"meetings": (21, 25), "people": (11, 12), "rooms": (3, 4), "availability": (0.75, 0.9)},
)

FORMAT = answer_instructions(
    'Give the schedule as a list of (meeting id, room id, "HH:MM" start time) entries; leave out meetings you '
    "do not schedule.",
    '[(<meeting id>, <room id>, "<HH:MM>"), (<meeting id>, <room id>, "<HH:MM>"), ...]',
)
RULES = (
    "Schedule as many attendees as possible (the score is the total number of attendees of the scheduled "
    "meetings). Every scheduled meeting must lie within the working day and within the availability of each "
    "of its attendees, in a room with at least as many seats as attendees; no room and no person may be in two "
    "meetings at the same time; each meeting is scheduled at most once. A meeting may end exactly when "
    "another starts."
)
IMAGE_PROMPT = (
    "The image shows each person's availability over the working day (green bars on a 30-minute grid: every "
    "window starts and ends on a grid line, hours labelled HH:MM and half hours :30), the rooms with their "
    "capacities, and the meetings with their durations and attendees. " + RULES + "\n" + FORMAT
)


def generate(params: dict, rng: np.random.Generator) -> tuple[dict, list[list]]:
    n_meet, n_people, n_rooms = params["meetings"], min(params["people"], len(NAMES)), params["rooms"]
    day = (minutes(params["day_start"]), minutes(params["day_end"]))
    slots = (day[1] - day[0]) // SLOT
    if slots < 1:
        raise ValueError(f"meeting_scheduling day {params['day_start']}-{params['day_end']}: expected day_end at "
                         f"least {SLOT} minutes after day_start")
    if day[0] % SLOT or day[1] % SLOT:  # windows are whole slots from day_start: on the picture's grid lines
        raise ValueError(f"meeting_scheduling day {params['day_start']}-{params['day_end']}: expected both on the "
                         f"hour or the half hour (the picture's {SLOT}-minute grid, on which every window lies)")
    if not 0 <= params["availability"] <= 1:
        raise ValueError(f"meeting_scheduling availability={params['availability']:g}: it is the share of the day "
                         "each person is available, expected 0 to 1")
    meetings = []
    for _ in range(n_meet):
        size = int(rng.integers(2, min(n_people, 4) + 1))
        attendees = sorted(int(p) for p in rng.choice(n_people, size=size, replace=False))
        meetings.append({"duration": SLOT * int(rng.integers(1, 5)), "attendees": attendees})
    biggest = max(len(m["attendees"]) for m in meetings)
    capacities = [int(c) for c in rng.integers(2, n_people + 1, size=n_rooms)]
    capacities[int(rng.integers(n_rooms))] = max(biggest, capacities[0])
    rooms = [{"name": f"Room {j}", "capacity": c} for j, c in enumerate(capacities)]

    busy_room = np.zeros((n_rooms, slots), dtype=bool)
    busy_person = np.zeros((n_people, slots), dtype=bool)
    planted = []
    for m in (int(i) for i in rng.permutation(n_meet)):
        length = meetings[m]["duration"] // SLOT
        options = _free_starts(busy_room, busy_person[meetings[m]["attendees"]].any(axis=0), length,
                               [r for r in range(n_rooms) if capacities[r] >= len(meetings[m]["attendees"])])
        if options:
            r, s = options[int(rng.integers(len(options)))]
            busy_room[r, s:s + length] = True
            busy_person[meetings[m]["attendees"], s:s + length] = True
            planted.append([m, r, hhmm(day[0] + s * SLOT)])

    people = []
    for p in range(n_people):  # the planted meetings' slots, plus random windows up to a share of the day
        available = busy_person[p].copy()
        target = params["availability"] * slots
        for _ in range(100 * slots):  # bounded: the last slots of a whole day may take long to draw
            if available.sum() >= target:
                break
            start, length = int(rng.integers(slots)), int(rng.integers(2, 7))
            available[start:start + length] = True
        people.append({"name": NAMES[p], "available": _windows(available, day[0])})
    data = {"day": [params["day_start"], params["day_end"]], "people": people, "rooms": rooms, "meetings": meetings}
    return data, sorted(planted)


def _free_starts(busy_room: np.ndarray, busy_people: np.ndarray, length: int, rooms: list[int]) -> list[tuple[int, int]]:
    """Every (room, first slot) where the room and the people are free for `length` slots,
    rooms in the given order and slots ascending (one windowed sum, not a slice per start)."""
    busy = busy_room[rooms] | busy_people[None, :]
    counts = np.concatenate([np.zeros((len(rooms), 1), dtype=np.int64), np.cumsum(busy, axis=1)], axis=1)
    free = (counts[:, length:] - counts[:, :-length]) == 0
    return [(rooms[i], int(s)) for i, s in zip(*np.nonzero(free))]


def _windows(available: np.ndarray, day_start: int) -> list[list[str]]:
    windows, start = [], None
    for s, ok in enumerate(list(available) + [False]):
        if ok and start is None:
            start = s
        elif not ok and start is not None:
            windows.append([hhmm(day_start + start * SLOT), hhmm(day_start + s * SLOT)])
            start = None
    return windows


def prompt(data: dict) -> str:
    people = "\n".join(f"{p['name']} (person {i}): available " + ", ".join(f"{a}-{b}" for a, b in p["available"])
                       for i, p in enumerate(data["people"]))
    rooms = "\n".join(f"Room {j}: {r['capacity']} seats" for j, r in enumerate(data["rooms"]))
    names = [p["name"] for p in data["people"]]
    meetings = "\n".join(f"Meeting {i}: {m['duration']} minutes, attendees "
                         + ", ".join(names[a] for a in m["attendees"]) + f" ({len(m['attendees'])} people)"
                         for i, m in enumerate(data["meetings"]))
    return (
        f"Plan meetings in a working day from {data['day'][0]} to {data['day'][1]}.\n\n"
        f"People and their availability:\n{people}\n\nRooms:\n{rooms}\n\nMeetings:\n{meetings}\n\n"
        f"{RULES}\n\n" + FORMAT
    )


def render(data: dict, size: int, solution=None, violations: tuple[Violation, ...] = ()) -> Canvas:
    """Availability timelines per person on a ticked 30-minute grid (every window starts
    and ends on a labelled tick), a Gantt row per room (the answer's bookings, when given),
    and the meetings table, on a square canvas."""
    people, rooms, meetings = data["people"], data["rooms"], data["meetings"]
    s = size / DEFAULT_SIZE
    font = max(MIN_FONT, round(16 * s))
    labels = [f"Room {j} ({r['capacity']} seats)" for j, r in enumerate(rooms)]
    labels += [f"{p['name']} ({i})" for i, p in enumerate(people)]
    left = 8 * s + max(text_width(label, font) for label in labels) + 10 * s
    row, height, table_header, table_rows = _rows(data, size, s, font)
    canvas = Canvas(size, height, kind="chart")
    canvas.text((size / 2, 8 * s), f"Meeting scheduling: working day {data['day'][0]}-{data['day'][1]}",
                size=max(MIN_FONT + 2, round(19 * s)), anchor="mt", bold=True)
    chart = _Chart(canvas, s, left, size - 24 * s, *(minutes(t) for t in data["day"]), row, font,
                   max(MIN_FONT, round(15 * s)), meetings, _bad_meetings(violations))
    bookings = [(m, r, minutes(s)) for m, r, s in solution or ()
                if 0 <= m < len(meetings) and 0 <= r < len(rooms)]
    y = _availability(chart, people, bookings, 40 * s)
    y = _room_rows(chart, rooms, bookings, y, solution is not None)
    canvas.text((8 * s, y), "Meetings", size=font + 1, bold=True)
    table_top = y + font + 8 * s
    draw_table(canvas, (8 * s, table_top, size - 8 * s, height - 6 * s), table_header, table_rows,
               max_font=font + 2, min_font=MIN_FONT)
    # where the time axis and the table are, so anyone can check the picture: a time t is at
    # x = left + (t - day start) / (day length) * (right - left)
    canvas.layout = {"time_axis": [round(left, 2), round(chart.right, 2)], "table_top": round(table_top, 2)}
    return canvas


def _rows(data: dict, size: int, s: float, font: int) -> tuple[int, int, list[str], list[list[str]]]:
    """The row height and canvas height (taller than square when the rows would squeeze the font),
    and the meetings table's header and rows."""
    people, rooms, meetings = data["people"], data["rooms"], data["meetings"]
    lines = len(people) + len(rooms) + len(meetings) + 1
    row = min(round(34 * s), int((size - 190 * s) / lines))
    names = [p["name"] for p in people]
    table_header = ["meeting", "duration", "people", "attendees"]
    table_rows = [[str(i), f"{m['duration']} min", str(len(m["attendees"])),
                   ", ".join(names[a] for a in m["attendees"])] for i, m in enumerate(meetings)]
    height = size
    if row < font + 8 * s:  # too many rows for a square at this font: a taller canvas, not smaller text
        row = math.ceil(font + 8 * s)
        table_top = 40 * s + 2 * (font + 30 * s) + row * (len(people) + len(rooms)) + 20 * s + font + 8 * s
        height = math.ceil(table_top + table_height(size - 16 * s, table_header, table_rows, MIN_FONT) + 6 * s)
    return row, height, table_header, table_rows


def _bad_meetings(violations: tuple[Violation, ...]) -> set[int]:
    """The meetings an answer's violations name (their bookings are outlined red)."""
    bad = {x[0] for v in violations for x in v.where if isinstance(x, tuple)
           and v.kind in ("outside_day", "unavailable_attendee", "over_capacity")}
    return bad | {m for v in violations if v.kind in ("room_conflict", "attendee_conflict")
                  for x in v.where for m in x[1:3]}


@dataclass
class _Chart:
    """The timeline's geometry (where a time falls, row height, fonts) and what it draws on."""

    canvas: Canvas
    s: float
    left: float
    right: float
    day0: int
    day1: int
    row: int
    font: int
    tick_font: int
    meetings: list[dict]
    bad: set[int]

    def x(self, t: int) -> float:
        return self.left + (t - self.day0) / (self.day1 - self.day0) * (self.right - self.left)

    def axis(self, y: float, height: float) -> None:
        """The 30-minute grid: a line per tick, hours labelled "HH:MM", half hours ":30"."""
        s, canvas = self.s, self.canvas
        for t in range(self.day0 + (-self.day0) % SLOT, self.day1 + 1, SLOT):
            hour = t % 60 == 0
            canvas.line(((self.x(t), y - 4 * s), (self.x(t), y + height)), GREY if hour else LIGHT_GREY)
            label = hhmm(t) if hour else f":{t % 60:02d}"
            canvas.text((self.x(t), y - 5 * s), label, size=self.tick_font if hour else self.tick_font - 2,
                        colour=BLACK if hour else DARK_GREY, anchor="mb")

    def booking(self, m: int, start: int, y: float) -> None:
        """Meeting m's bar from `start`, kept on the time axis (never over the row labels or off the
        canvas): a part outside the day is cut, and each cut side carries a black arrowhead pointing
        out of the day; a booking wholly outside is a stub at the edge it lies beyond."""
        end = start + self.meetings[m]["duration"]
        cut_left, cut_right = start < self.day0, end > self.day1
        x0, x1 = self.x(max(start, self.day0)), self.x(min(end, self.day1))
        head = (self.row - 6) / 3  # the arrowhead's width: slender, so a short bar keeps its label
        stub = self.canvas.text_width(f"M{m}", self.font, bold=True) + 2 * head + 8 * self.s
        if x1 - x0 < stub and (end <= self.day0 or start >= self.day1):
            x0, x1 = (self.left, self.left + stub) if end <= self.day0 else (self.right - stub, self.right)
        bad = m in self.bad
        top, bottom, mid = y + 3, y + self.row - 3, y + self.row / 2
        self.canvas.rect((x0 + 1, top, x1 - 1, bottom), fill=class_colour(m), outline=RED if bad else BLACK,
                         width=3 if bad else 2)
        if cut_left:
            self.canvas.polygon(((x0 + 1, mid), (x0 + 1 + head, top), (x0 + 1 + head, bottom)), BLACK)
        if cut_right:
            self.canvas.polygon(((x1 - 1, mid), (x1 - 1 - head, top), (x1 - 1 - head, bottom)), BLACK)
        centre = (x0 + cut_left * head + x1 - cut_right * head) / 2
        self.canvas.text((centre, mid), f"M{m}", size=self.font, anchor="mm", bold=True, bg=class_colour(m))


def _availability(chart: _Chart, people: list[dict], bookings: list[tuple[int, int, int]], y: float) -> float:
    """Each person's available windows (green), with the bookings they attend; returns the next y."""
    s, row, canvas = chart.s, chart.row, chart.canvas
    canvas.text((8 * s, y), f"Availability (green; {SLOT}-minute grid)", size=chart.font + 1, bold=True)
    y += chart.font + 30 * s
    chart.axis(y, row * len(people))
    for i, p in enumerate(people):
        canvas.text((chart.left - 8 * s, y + row / 2), f"{p['name']} ({i})", size=chart.font, anchor="rm")
        canvas.rect((chart.left, y + row / 2 - 1, chart.right, y + row / 2 + 1), fill=LIGHT_GREY)
        for a, b in p["available"]:
            canvas.rect((chart.x(minutes(a)), y + 5 * s, chart.x(minutes(b)), y + row - 5 * s), fill=GREEN,
                        outline=BLACK)
        for m, _, start in bookings:
            if i in chart.meetings[m]["attendees"]:
                chart.booking(m, start, y)
        y += row
    return y + 10 * s


def _room_rows(chart: _Chart, rooms: list[dict], bookings: list[tuple[int, int, int]], y: float,
               answered: bool) -> float:
    """A Gantt row per room with the answer's bookings in it; returns the next y."""
    s, row, canvas = chart.s, chart.row, chart.canvas
    canvas.text((8 * s, y), "Rooms" + (" (the answer's bookings)" if answered else ""), size=chart.font + 1,
                bold=True)
    y += chart.font + 30 * s
    chart.axis(y, row * len(rooms))
    for j, r in enumerate(rooms):
        canvas.text((chart.left - 8 * s, y + row / 2), f"Room {j} ({r['capacity']} seats)", size=chart.font,
                    anchor="rm")
        canvas.rect((chart.left, y + 2, chart.right, y + row - 2), outline=GREY)
        for m, room, start in bookings:
            if room == j:
                chart.booking(m, start, y)
        y += row
    return y + 10 * s


# -- transcription (the perception probe, `mmnp.transcribe`): fields day, names (F1 over (person,
# name)), availability (F1 over (person, start, end) in minutes), rooms (F1 over (room, seats)) and
# meetings (F1 over (meeting, duration) and (meeting, attendee))

def _transcription(data: dict) -> dict:
    return {"day": list(data["day"]),
            "people": [{"name": p["name"], "available": [list(w) for w in p["available"]]} for p in data["people"]],
            "rooms": [r["capacity"] for r in data["rooms"]],
            "meetings": [{"duration": m["duration"], "attendees": list(m["attendees"])} for m in data["meetings"]]}


def _transcription_facts(t: dict) -> dict[str, set]:
    day = as_list(t.get("day"))
    day_key = {tuple(map(as_minutes, day))} if len(day) == 2 and None not in map(as_minutes, day) else set()
    names, windows = set(), set()
    for i, p in enumerate(as_list(t.get("people"))):
        if not isinstance(p, dict):
            continue
        if isinstance(p.get("name"), str):
            names.add((i, p["name"].strip()))
        for w in as_list(p.get("available")):
            if isinstance(w, list) and len(w) == 2 and None not in (a := (as_minutes(w[0]), as_minutes(w[1]))):
                windows.add((i, *a))
    rooms = {(j, c) for j, c in enumerate(map(as_int, as_list(t.get("rooms")))) if c is not None}
    meetings = set()
    for i, m in enumerate(as_list(t.get("meetings"))):
        if isinstance(m, dict):
            if (d := as_int(m.get("duration"))) is not None:
                meetings.add((i, "duration", d))
            meetings |= {(i, "attendee", a) for a in map(as_int, as_list(m.get("attendees"))) if a is not None}
    return {"day": day_key, "names": names, "availability": windows, "rooms": rooms, "meetings": meetings}


TRANSCRIPTION = Form(
    _transcription, _transcription_facts,
    '{"day": ["<HH:MM>", "<HH:MM>"], "people": [{"name": "<name>", "available": '
    '[["<HH:MM>", "<HH:MM>"], ...]}, ...], "rooms": [<seats of room 0>, ...], "meetings": '
    '[{"duration": <minutes>, "attendees": [<person index>, ...]}, ...]}  (person i at index '
    'i with every availability interval as [start, end]; the day\'s start and end; '
    'attendees: person indices)')
