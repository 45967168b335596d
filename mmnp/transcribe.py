"""Transcriptions: the instance as a model would read it off the picture, in one fixed JSON
form per task, and a field-by-field score of a model's attempt against the instance.

This is what a perception probe asks for (NPHardEval4V reports recognition beside
reasoning): Recognition Accuracy is the share of exact transcriptions, and the per-field
F1 says which part of the picture was misread.

Each task declares its form in its generator module: `TRANSCRIPTION = Form(write, facts, template)`
(the graph tasks share `mmnp.kits.graphs.GRAPH_TRANSCRIPTION`), where `write(data)` is the exact
transcription, `facts(transcription)` its fields as sets of facts (the per-field F1 compares
them), and `template` the JSON form the probe shows, with <...> placeholders. This module holds
the machinery and the tolerant readers (`as_int`, `as_minutes`, ...) the forms are built from.

`score_transcription` takes the model's whole response and reads the last JSON object in
it; it never raises and never evaluates the text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable

from mmnp.errors import UsageError

MAX_CHARS = 1_000_000  # the longest reply mmnp keeps (the OpenAI backend's max_response_chars)
_MAX_OBJECTS = 256  # object starts tried, from the end
_OBJECT_START = re.compile(r'\{\s*["}]')  # where a JSON object can start: not LaTeX's \frac{a}{b} nor code's {x}


@dataclass(frozen=True)
class Form:
    """A task's transcription form (its generator module's `TRANSCRIPTION`)."""

    write: Callable[[dict], dict]  # instance data -> the exact transcription
    facts: Callable[[dict], dict[str, set]]  # a transcription -> {field: set of facts}; never raises on junk
    template: str  # the form as the probe shows it, <...> placeholders for the values


def form(task: str) -> Form:
    """The transcription form `task` declares (`UsageError` when it declares none)."""
    from mmnp.registry import get_task

    declared = getattr(get_task(task).generator, "TRANSCRIPTION", None)
    if not isinstance(declared, Form):
        raise UsageError(f"no transcription form for task {task!r}; forms exist for {', '.join(tasks())}")
    return declared


def transcribe(task: str, data: dict) -> dict:
    """The exact transcription of an instance (what a perfect reader of the picture writes)."""
    return form(task).write(data)


def score_transcription(task: str, data: dict, text: Any) -> tuple[bool, dict[str, float]]:
    """(exact, per-field F1) of a model's transcription of `data`; every field 0 when no JSON
    object can be read from the text."""
    fields_of = form(task).facts
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
            f"it has:\n{form(task).template}\nReply with the JSON object only.")


def tasks() -> list[str]:
    """The task names with a transcription form."""
    from mmnp.registry import list_tasks

    return sorted(t.name for t in list_tasks() if isinstance(getattr(t.generator, "TRANSCRIPTION", None), Form))


# -- reading ------------------------------------------------------------------------------

def _last_object(text: Any) -> Any:
    """The last outermost JSON object in the text that decodes (not one nested in it), or None."""
    if not isinstance(text, str) or len(text) > MAX_CHARS:
        return None
    decoder = json.JSONDecoder()
    best, best_end = None, -1
    text = text[:text.rfind("}") + 1]  # an object ends with '}': nothing after the last one can be in it
    for m in list(_OBJECT_START.finditer(text))[-_MAX_OBJECTS:]:
        if m.start() < best_end:
            continue  # inside the object already found
        try:
            obj, end = decoder.raw_decode(text, m.start())
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict):
            best, best_end = obj, end
    return best


def as_int(x: Any) -> int | None:
    """An integer read tolerantly (7, 7.0, "7"); None for anything else."""
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return x
    if isinstance(x, float) and x.is_integer():
        return int(x)
    if isinstance(x, str) and re.fullmatch(r"\s*-?\d{1,12}\s*", x):
        return int(x)
    return None


def as_minutes(x: Any) -> int | None:
    """Minutes since midnight of an "HH:MM" text; None for anything else."""
    m = re.fullmatch(r"\s*(\d{1,2}):(\d{2})\s*", x) if isinstance(x, str) else None
    return int(m.group(1)) * 60 + int(m.group(2)) if m else None


def as_list(x: Any) -> list:
    """The list itself, or [] for anything else."""
    return x if isinstance(x, list) else []


def scalar(value: Any) -> set:
    """A one-fact field: {the integer}, or the empty set."""
    v = as_int(value)
    return set() if v is None else {v}


def _f1(truth: set, got: set) -> float:
    if not truth and not got:
        return 1.0
    return 2 * len(truth & got) / (len(truth) + len(got))


def indexed_tuples(rows: Any, width: int) -> set:
    """(row index, *integers) facts of the rows of `width` integers."""
    out = set()
    for i, row in enumerate(as_list(rows)):
        if isinstance(row, list) and len(row) == width:
            vals = tuple(as_int(x) for x in row)
            if None not in vals:
                out.add((i, *vals))
    return out
