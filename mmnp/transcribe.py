"""Transcriptions: the instance as a model would read it off the picture, in one fixed JSON
form per task, and a field-by-field score of a model's attempt against the instance.

This is what a perception probe asks for (NPHardEval4V reports recognition beside
reasoning): Recognition Accuracy is the share of exact transcriptions, and the per-field
F1 says which part of the picture was misread. The forms, by task:

- graph_coloring, vertex_cover, max_clique, longest_cycle, min_bisection:
  ``{"n": 12, "edges": [[0, 1], [0, 4], ...]}``; fields ``n`` (right or wrong) and
  ``edges`` (F1 over unordered vertex pairs).
- tsp: ``{"cities": [[x0, y0], [x1, y1], ...]}``, city i at index i; field ``cities``
  (F1 over (id, x, y)).
- knapsack: ``{"capacity": 100, "items": [[weight0, value0], ...]}``, item i at index i;
  fields ``capacity`` and ``items`` (F1 over (id, weight, value)).
- subset_sum: ``{"target": 115, "numbers": [12, 50, ...]}``; fields ``target`` and
  ``numbers`` (F1 over (index, number)).
- set_cover: ``{"universe": 16, "subsets": [[7, 8, 9], ...]}``; fields ``universe`` and
  ``subsets`` (F1 over (subset id, element)).
- meeting_scheduling: ``{"day": ["09:00", "17:00"], "people": [{"name": "Ana",
  "available": [["11:30", "13:30"], ...]}, ...], "rooms": [3, 4, ...] (seats of room j at
  index j), "meetings": [{"duration": 90, "attendees": [0, 2]}, ...]}``; fields ``day``,
  ``names`` (F1 over (person, name)), ``availability`` (F1 over (person, start, end) in
  minutes), ``rooms`` (F1 over (room, seats)) and ``meetings`` (F1 over (meeting,
  duration) and (meeting, attendee)).

`score_transcription` takes the model's whole response and reads the last JSON object in
it; it never raises and never evaluates the text.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable

from mmnp.errors import UsageError

MAX_CHARS = 200_000  # a transcription of the largest instance is under 10,000 characters
_MAX_OBJECTS = 256  # '{' positions tried, from the end


def transcribe(task: str, data: dict) -> dict:
    """The exact transcription of an instance (what a perfect reader of the picture writes)."""
    return _FORMS[_group(task)][0](data)


def score_transcription(task: str, data: dict, text: Any) -> tuple[bool, dict[str, float]]:
    """(exact, per-field F1) of a model's transcription of `data`; every field 0 when no JSON
    object can be read from the text."""
    fields_of = _FORMS[_group(task)][1]
    truth = fields_of(transcribe(task, data))
    got = _last_object(text)
    try:
        read = fields_of(got) if isinstance(got, dict) else {}
    except Exception:  # a malformed transcription scores 0 on the fields it broke
        read = {}
    scores = {name: _f1(items, read.get(name, set())) for name, items in truth.items()}
    return all(v == 1.0 for v in scores.values()), scores


def probe_prompt(task: str) -> str:
    """The perception probe's instruction for the picture of a `task` instance: transcribe it, in
    the task's fixed JSON form (the same for every instance, so it gives nothing away). The form
    is a template whose <...> placeholders are no JSON, so a reply that echoes it reads as no
    transcription and scores 0 on every field, like the task prompts' `Answer:` templates."""
    return ("Do not solve the problem shown in the picture. Transcribe the instance it shows, exactly, as one "
            "JSON object of this form, with the instance's values in place of each <...> and as many entries as "
            f"it has:\n{_PROBE_FORMS[_group(task)]}\nReply with the JSON object only.")


def tasks() -> list[str]:
    """The task names with a transcription form."""
    return sorted(t for group, names in _GROUPS.items() for t in names)


# -- reading ------------------------------------------------------------------------------

def _last_object(text: Any) -> Any:
    """The last outermost JSON object in the text that decodes (not one nested in it), or None."""
    if not isinstance(text, str) or len(text) > MAX_CHARS:
        return None
    decoder = json.JSONDecoder()
    best, best_end = None, -1
    for m in list(re.finditer(r"\{", text))[-_MAX_OBJECTS:]:
        if m.start() < best_end:
            continue  # inside the object already found
        try:
            obj, end = decoder.raw_decode(text, m.start())
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict):
            best, best_end = obj, end
    return best


def _int(x: Any) -> int | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return x
    if isinstance(x, float) and x.is_integer():
        return int(x)
    if isinstance(x, str) and re.fullmatch(r"\s*-?\d{1,12}\s*", x):
        return int(x)
    return None


def _minutes(x: Any) -> int | None:
    m = re.fullmatch(r"\s*(\d{1,2}):(\d{2})\s*", x) if isinstance(x, str) else None
    return int(m.group(1)) * 60 + int(m.group(2)) if m else None


def _list(x: Any) -> list:
    return x if isinstance(x, list) else []


def _scalar(value: Any) -> set:
    v = _int(value)
    return set() if v is None else {v}


def _f1(truth: set, got: set) -> float:
    if not truth and not got:
        return 1.0
    return 2 * len(truth & got) / (len(truth) + len(got))


# -- forms: (transcribe(data) -> dict, fields(transcription) -> {field: set of facts}) ----

def _graph(data: dict) -> dict:
    return {"n": data["n"], "edges": sorted([min(u, v), max(u, v)] for u, v in data["edges"])}


def _graph_fields(t: dict) -> dict[str, set]:
    edges = set()
    for e in _list(t.get("edges")):
        if isinstance(e, list) and len(e) == 2:
            u, v = _int(e[0]), _int(e[1])
            if u is not None and v is not None and u != v:
                edges.add((min(u, v), max(u, v)))
    return {"n": _scalar(t.get("n")), "edges": edges}


def _tsp(data: dict) -> dict:
    return {"cities": [list(c) for c in data["coords"]]}


def _tsp_fields(t: dict) -> dict[str, set]:
    return {"cities": _indexed_tuples(t.get("cities"), 2)}


def _indexed_tuples(rows: Any, width: int) -> set:
    out = set()
    for i, row in enumerate(_list(rows)):
        if isinstance(row, list) and len(row) == width:
            vals = tuple(_int(x) for x in row)
            if None not in vals:
                out.add((i, *vals))
    return out


def _knapsack(data: dict) -> dict:
    return {"capacity": data["capacity"], "items": [[w, v] for w, v in zip(data["weights"], data["values"])]}


def _knapsack_fields(t: dict) -> dict[str, set]:
    return {"capacity": _scalar(t.get("capacity")), "items": _indexed_tuples(t.get("items"), 2)}


def _subset_sum(data: dict) -> dict:
    return {"target": data["target"], "numbers": list(data["numbers"])}


def _subset_sum_fields(t: dict) -> dict[str, set]:
    numbers = {(i, v) for i, v in enumerate(map(_int, _list(t.get("numbers")))) if v is not None}
    return {"target": _scalar(t.get("target")), "numbers": numbers}


def _set_cover(data: dict) -> dict:
    return {"universe": data["universe"], "subsets": [sorted(s) for s in data["subsets"]]}


def _set_cover_fields(t: dict) -> dict[str, set]:
    members = {(i, v) for i, s in enumerate(_list(t.get("subsets"))) for v in map(_int, _list(s)) if v is not None}
    return {"universe": _scalar(t.get("universe")), "subsets": members}


def _meeting(data: dict) -> dict:
    return {"day": list(data["day"]),
            "people": [{"name": p["name"], "available": [list(w) for w in p["available"]]} for p in data["people"]],
            "rooms": [r["capacity"] for r in data["rooms"]],
            "meetings": [{"duration": m["duration"], "attendees": list(m["attendees"])} for m in data["meetings"]]}


def _meeting_fields(t: dict) -> dict[str, set]:
    day = _list(t.get("day"))
    day_key = {tuple(map(_minutes, day))} if len(day) == 2 and None not in map(_minutes, day) else set()
    names, windows = set(), set()
    for i, p in enumerate(_list(t.get("people"))):
        if not isinstance(p, dict):
            continue
        if isinstance(p.get("name"), str):
            names.add((i, p["name"].strip()))
        for w in _list(p.get("available")):
            if isinstance(w, list) and len(w) == 2 and None not in (a := (_minutes(w[0]), _minutes(w[1]))):
                windows.add((i, *a))
    rooms = {(j, c) for j, c in enumerate(map(_int, _list(t.get("rooms")))) if c is not None}
    meetings = set()
    for i, m in enumerate(_list(t.get("meetings"))):
        if isinstance(m, dict):
            if (d := _int(m.get("duration"))) is not None:
                meetings.add((i, "duration", d))
            meetings |= {(i, "attendee", a) for a in map(_int, _list(m.get("attendees"))) if a is not None}
    return {"day": day_key, "names": names, "availability": windows, "rooms": rooms, "meetings": meetings}


_GROUPS: dict[str, tuple[str, ...]] = {
    "graph": ("graph_coloring", "vertex_cover", "max_clique", "longest_cycle", "min_bisection"),
    "tsp": ("tsp",), "knapsack": ("knapsack",), "subset_sum": ("subset_sum",), "set_cover": ("set_cover",),
    "meeting_scheduling": ("meeting_scheduling",),
}
_PROBE_FORMS = {
    "graph": '{"n": <number of vertices>, "edges": [[<smaller vertex>, <larger vertex>], ...]}  (vertices numbered '
             '0..n-1; each edge once)',
    "tsp": '{"cities": [[<x of city 0>, <y of city 0>], [<x of city 1>, <y of city 1>], ...]}',
    "knapsack": '{"capacity": <capacity>, "items": [[<weight of item 0>, <value of item 0>], [<weight of item 1>, '
                '<value of item 1>], ...]}',
    "subset_sum": '{"target": <target>, "numbers": [<number 0>, <number 1>, ...]}  (the numbers in the order shown)',
    "set_cover": '{"universe": <number of elements>, "subsets": [[<element of subset 0>, ...], [<element of subset '
                 '1>, ...], ...]}',
    "meeting_scheduling": '{"day": ["<HH:MM>", "<HH:MM>"], "people": [{"name": "<name>", "available": '
                          '[["<HH:MM>", "<HH:MM>"], ...]}, ...], "rooms": [<seats of room 0>, ...], "meetings": '
                          '[{"duration": <minutes>, "attendees": [<person index>, ...]}, ...]}  (person i at index '
                          'i with every availability interval as [start, end]; the day\'s start and end; '
                          'attendees: person indices)',
}
_FORMS: dict[str, tuple[Callable[[dict], dict], Callable[[dict], dict[str, set]]]] = {
    "graph": (_graph, _graph_fields), "tsp": (_tsp, _tsp_fields), "knapsack": (_knapsack, _knapsack_fields),
    "subset_sum": (_subset_sum, _subset_sum_fields), "set_cover": (_set_cover, _set_cover_fields),
    "meeting_scheduling": (_meeting, _meeting_fields),
}


def _group(task: str) -> str:
    for group, names in _GROUPS.items():
        if task in names:
            return group
    raise UsageError(f"no transcription form for task {task!r}; forms exist for {', '.join(tasks())}")
