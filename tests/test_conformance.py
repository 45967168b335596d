"""The protocol every registered task must satisfy. Parametrised over the registry (built-ins and
`mmnp.tasks` plug-ins; `MMNP_TEST_TASKS=a,b` narrows it), so a new task is held to all of it by
its three files and its one line. What is per task comes from the task's own modules: the
wrong answers each verifier declares (`wrong_answers`), the ladder, the transcription form."""

from __future__ import annotations

import functools
import io
import json
import os
import re
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

import mmnp
from conftest import TASK_NAMES
from mmnp.core import CATEGORIES, Instance, Verdict

DIFFICULTIES = ("easy", "medium", "hard")


def test_registry_metadata(task):
    assert task.category in CATEGORIES
    assert task.direction in ("min", "max")
    assert set(task.presets) == set(DIFFICULTIES)
    assert task.verifier.VIOLATION_KINDS, "a verifier must declare the rules it checks"


def test_generation_is_deterministic_across_processes(task):
    """Same (task, difficulty, seed) -> the same record and PNG bytes in a fresh interpreter
    with a different hash seed."""
    code = (
        "import hashlib, json, mmnp\n"
        f"t = mmnp.get_task({task.name!r})\n"
        "out = []\n"
        "for d in ('easy', 'medium', 'hard'):\n"
        "    inst = t.generate(d, seed=11)\n"
        "    out.append([inst.to_record(), hashlib.sha256(t.render(inst)).hexdigest()])\n"
        "print(json.dumps(out))\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    child = json.loads(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                      text=True, check=True).stdout)
    import hashlib

    here = []
    for d in DIFFICULTIES:
        inst = task.generate(d, seed=11)
        here.append([inst.to_record(), hashlib.sha256(task.render(inst)).hexdigest()])
    assert json.loads(json.dumps(here)) == child


def test_different_seeds_give_different_instances(task):
    hashes = {task.generate("medium", seed=s).hash for s in range(8)}
    assert len(hashes) == 8


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_references_are_feasible_and_optimal_is_not_worse(task, difficulty):
    for seed in range(3):
        inst = task.generate(difficulty, seed=seed, optimal=True, time_limit=1.0)
        refs = {k: v for k, v in inst.reference.items() if v is not None}
        for name, ref in refs.items():
            verdict = task.check(inst, ref["solution"])
            assert verdict.feasible, f"{name} reference infeasible: {verdict.summary()}"
            assert verdict.objective == ref["objective"]
            assert ref["objective"] > 0, "reference objectives are never 0 (ratios must be defined)"
        heuristic, optimal = refs["heuristic"]["objective"], refs["optimal"]["objective"]
        assert not task.is_better(heuristic, optimal)
        assert isinstance(refs["optimal"]["proven"], bool)
        if "planted" in refs:
            assert not task.is_better(refs["planted"]["objective"], optimal)


def test_reference_answer_text_round_trips(task):
    inst = task.generate("medium", seed=5)
    ref = inst.reference["heuristic"]
    verdict = task.verify(inst, "Some reasoning first.\n" + task.format_answer(ref["solution"]))
    assert verdict.parsed and verdict.feasible and not verdict.violations
    assert verdict.objective == ref["objective"]
    assert task.quality_ratio(verdict.objective, inst.reference_objective) == 1.0


def test_verify_accepts_the_jsonl_record(task):
    inst = task.generate("easy", seed=2)
    record = json.loads(json.dumps(inst.to_record()))
    answer = task.format_answer(inst.reference["heuristic"]["solution"])
    assert task.verify(record, answer).to_dict() == task.verify(inst, answer).to_dict()
    assert Instance.from_record(record) == inst


def test_every_violation_kind_is_detected(task):
    assert callable(getattr(task.verifier, "wrong_answers", None)), \
        f"verifiers/{task.name}.py must declare wrong_answers(instance): a wrong answer per violation kind"
    # on every instance (a kind the instance cannot show may be left out), every kind over the sample
    shown = set()
    for difficulty in ("easy", "medium", "hard"):
        for seed in range(4):
            inst = task.generate(difficulty, seed=seed)
            cases = task.verifier.wrong_answers(inst)
            assert cases, f"no wrong answers for {difficulty} seed {seed}"
            for text, kind in cases:
                verdict = task.verify(inst, text)
                assert verdict.parsed, verdict.error
                assert not verdict.feasible and verdict.objective is None
                assert kind in verdict.kinds, f"{text!r} should violate {kind}, got {verdict.kinds}"
                assert all(v.kind in task.verifier.VIOLATION_KINDS for v in verdict.violations)
                assert all(v.message for v in verdict.violations)
                assert task.quality_ratio(verdict.objective, inst.reference_objective) == 0.0
                shown.add(kind)
    assert shown == set(task.verifier.VIOLATION_KINDS)


def _variants(value: str) -> list[str]:
    tupled = value.replace("[", "(").replace("]", ")")
    return [
        f"Answer: {value}",
        f"**Answer:** {value}",
        f"**Answer**: {value}",
        f"answer:   {value}  ",
        f"Answer:\n```json\n{value}\n```",
        f"Answer: `{value}`",
        f"Answer: {tupled}",
        f"Answer: {value}.",
        f"Reasoning...\nAnswer: [99999]\nWait, let me fix that.\nAnswer: {value}",
        f"Answer: {value}\n\nThis uses the fewest resources I could find.",
        f"Final Answer: the solution is {value}",
        f"Answer: $\\boxed{{{value}}}$",
    ]


def test_tolerated_answer_formats(task):
    inst = task.generate("medium", seed=6)
    solution = inst.reference["heuristic"]["solution"]
    value = task.verifier.format(solution)
    for text in _variants(value):
        verdict = task.verify(inst, text)
        assert verdict.feasible, f"{text!r}: {verdict.summary()}"
        assert verdict.objective == inst.reference_objective
        assert task.verifier.canonical(inst.data, verdict.solution) == task.verifier.canonical(inst.data, solution)


def test_unparseable_answers_are_reported_not_raised(task):
    inst = task.generate("easy", seed=1)
    for text in ["", "I don't know.", "Answer:", "Answer: [1, 2", "Answer: [1, [2, [3]]]", "Answer: banana",
                 "Answer: [1.5, 2]", "Answer: [" + "9" * 5000 + "]", "Answer: " + "[" * 50000, None, 42]:
        verdict = task.verify(inst, text)
        assert isinstance(verdict, Verdict)
        if not verdict.parsed:
            assert verdict.error and "internal" not in verdict.error
        else:
            assert not verdict.feasible


# -- fuzzing: no exception, bounded time (hypothesis' deadline), on random and hostile text --

_numbers = st.one_of(st.integers(-10**30, 10**30), st.floats(allow_nan=True), st.just(10**4000))
_json_like = st.recursive(
    st.one_of(_numbers, st.text(max_size=5), st.booleans(), st.none()),
    lambda children: st.one_of(st.lists(children, max_size=8), st.dictionaries(st.text(max_size=3), children, max_size=4)),
    max_leaves=40,
)


def _as_text(value) -> str:
    try:
        return json.dumps(value)
    except (ValueError, OverflowError):
        return str(value)


FUZZ = settings(max_examples=60, deadline=1000,  # ms per example: bounded time
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])  # `task` is immutable


@functools.lru_cache(maxsize=None)
def _instance(name: str, difficulty: str, seed: int) -> Instance:
    return mmnp.get_task(name).generate(difficulty, seed=seed)


@FUZZ
@given(text=st.text(max_size=2000))
def test_fuzz_random_text(task, text):
    assert isinstance(task.verify(_instance(task.name, "easy", 0), text), Verdict)


@FUZZ
@given(value=_json_like, prefix=st.text(max_size=50))
def test_fuzz_structured_answers(task, value, prefix):
    inst = _instance(task.name, "easy", 0)
    verdict = task.verify(inst, f"{prefix}\nAnswer: {_as_text(value)}")
    assert isinstance(verdict, Verdict)
    if verdict.feasible:
        assert task.check(inst, verdict.solution).feasible


@FUZZ
@given(ids=st.lists(st.integers(-5, 60), max_size=80), style=st.sampled_from(["json", "arrows", "tuple", "map"]))
def test_fuzz_id_lists(task, ids, style):
    """Plausible-looking answers (right shape, arbitrary ids): the verdict is consistent with check()."""
    inst = _instance(task.name, "medium", 3)
    if style == "arrows":
        text = "Answer: " + " -> ".join(map(str, ids))
    elif style == "tuple":
        text = f"Answer: {tuple(ids)}"
    elif style == "map":
        text = "Answer: {" + ", ".join(f"{i}: {abs(j) + 1}" for i, j in enumerate(ids)) + "}"
    else:
        text = f"Answer: {ids}"
    verdict = task.verify(inst, text)
    if verdict.parsed:
        again = task.check(inst, verdict.solution)
        assert (again.feasible, again.objective) == (verdict.feasible, verdict.objective)


_HOSTILE = [
    "Answer: " + "[" * 200_000 + "]" * 200_000,
    "Answer: [" + ",".join(["1"] * 300_000) + "]",
    "Answer: " + "9" * 1_000_000,
    "answer answer answer:" * 50_000,
    ("Answer: [0, 1]\n" * 70_000),
    "Answer: " + "é漢🙂\u202e\x00" * 200_000,
    "Answer: [" + "\"" * 500_000 + "]",
    "Answer: " + " -> ".join(["7"] * 150_000),
    "x" * 1_000_000 + "Answer: [1, 2, 3]",
    "Answer: {" + ", ".join(f"{i}: {i}" for i in range(100_000)) + "}",
]


@pytest.mark.parametrize("text", _HOSTILE, ids=range(len(_HOSTILE)))
def test_megabyte_hostile_inputs(task, text):
    import time

    inst = task.generate("medium", seed=0)
    start = time.perf_counter()
    verdict = task.verify(inst, text)
    elapsed = time.perf_counter() - start
    assert isinstance(verdict, Verdict)
    assert elapsed < 1.0, f"{len(text)} characters took {elapsed:.2f}s: verification must stay bounded"


# -- images -------------------------------------------------------------------------------

@pytest.mark.parametrize("size", [768, 480])
def test_images_are_valid_pngs_of_the_configured_size(task, size):
    inst = task.generate("hard", seed=1)
    png = task.render(inst, size)
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    img = Image.open(io.BytesIO(png))
    img.verify()
    img = Image.open(io.BytesIO(png))
    # the size is the width; a graph with an edge-list panel is taller: at most 1.5x from the
    # default size up, more below it (the panel's font keeps its floor)
    assert img.format == "PNG" and img.width == size and size * 0.5 <= img.height <= (1.5 if size >= 768 else 2.5) * size
    assert len(img.getcolors(1 << 16)) >= 3, "the picture should not be blank"


def test_overlay_marks_an_answer(task):
    inst = task.generate("medium", seed=2)
    plain = Image.open(io.BytesIO(task.render(inst)))
    wrong_text, _ = task.verifier.wrong_answers(inst)[-1]
    right = Image.open(io.BytesIO(task.render(inst, answer=task.format_answer(inst.reference["heuristic"]["solution"]))))
    wrong = Image.open(io.BytesIO(task.render(inst, answer=wrong_text)))
    assert right.width == plain.width and right.height > plain.height  # the verdict banner
    assert right.convert("RGB").crop((0, 0, *plain.size)).tobytes() != plain.convert("RGB").tobytes()
    banner = lambda im: im.convert("RGB").getpixel((im.width - 2, im.height - 3))  # noqa: E731
    assert banner(right)[1] > banner(right)[0]  # green
    assert banner(wrong)[0] > banner(wrong)[1]  # red


# -- pictures: what the record says, and the drawing's invariants --------------------------

GRAPH_TASKS = [t.name for t in map(mmnp.get_task, TASK_NAMES) if "edges" in t.generate("easy", seed=0).data]


def test_picture_record_describes_the_png(task):
    inst = task.generate("medium", seed=3)
    png, info = task.picture(inst)
    img = Image.open(io.BytesIO(png))
    assert (info["width"], info["height"]) == img.size and info["version"] >= 2
    assert png == task.render(inst)
    if task.name in GRAPH_TASKS:
        layout = info["layout"]
        assert len(layout["centres"]) == inst.data["n"] and layout["radius"] >= 15


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6))
def test_graph_pictures_keep_their_invariants(task, difficulty, seed):
    """From the layout stored with the picture: no two discs overlap and all lie in the
    drawing; a drawing that claims unambiguous edges has no edge passing within the margin
    of a vertex it does not touch and no two edges at a vertex closer than MIN_ANGLE;
    otherwise the picture carries the edge-list panel."""
    import numpy as np

    from mmnp.layout import Geometry, faults

    if task.name not in GRAPH_TASKS:
        pytest.skip("not a graph task")
    inst = task.generate(difficulty, seed=seed)
    layout = task.picture(inst)[1]["layout"]
    geo = Geometry(layout["radius"], layout["margin"], tuple(layout["box"]))
    found = faults(np.array(layout["centres"]), np.array(inst.data["edges"]).reshape(-1, 2), geo)
    assert found["overlap"] == 0 and found["outside"] == 0
    if layout["edges_unambiguous"]:
        assert found == {"clearance": 0, "overlap": 0, "angle": 0, "outside": 0}
    else:
        assert layout["adjacency_panel"]


def test_prompts_end_with_the_answer_template_in_order(task):
    """Text and image prompts: the task, the format, the final-line rule, then the `Answer:`
    template last, with <...> placeholders in the task's own bracketing, and no other `Answer:`."""
    inst = task.generate("easy", seed=0)
    for text in (inst.prompt, inst.image_prompt):
        lines = text.rstrip().splitlines()
        assert lines[-1].startswith("Answer: [") and "<" in lines[-1] and lines[-1].endswith("]")
        assert "You may reason step by step first. End your response with one final line" in lines[-2]
        assert lines[-2].rstrip().endswith(":") and "in place of each <...>" in lines[-2]
        assert text.lower().count("answer:") == 1, "the template must be the prompt's only `Answer:`"
        assert text.index("Give ") < text.index("You may reason") < text.rindex("Answer: ")
        filled = re.sub(r"<[^<>]*>", "1", lines[-1]).replace(", ...", "").replace('"1"', '"09:00"')
        assert task.verify(inst, filled).parsed, f"the template must be the task's own format once filled: {filled}"


LEVELS = DIFFICULTIES + tuple(f"L{k}" for k in range(1, 11))


def _echoes(prompt: str) -> list[str]:
    """What a model that copies its prompt may answer: the whole prompt, every tail of it from a
    line on, and every line alone (the last `Answer:` line is what the parser reads)."""
    lines = prompt.splitlines()
    return [prompt] + ["\n".join(lines[k:]) for k in range(1, len(lines))] + lines


@pytest.mark.parametrize("difficulty", LEVELS)
def test_a_parrot_scores_nothing(task, difficulty):
    """Echoing the prompt, whole or in part, is never a feasible answer: text and image prompts
    of every preset and level (the probe's and the classic set's are held in test_floors.py)."""
    for seed in range(2):
        inst = task.generate(difficulty, seed=seed)
        for prompt in (inst.prompt, inst.image_prompt):
            for echo in _echoes(prompt):
                verdict = task.verify(inst, echo)
                assert not verdict.feasible, f"{inst.id}: copying {echo[-80:]!r} scores {verdict.objective}"


@pytest.mark.parametrize("difficulty", LEVELS)
def test_trivial_answer_is_a_feasible_floor(task, difficulty):
    """`solver.trivial`: feasible on every instance, never better than the heuristic, and earning
    the QR its objective earns (0 for the empty knapsack and schedule)."""
    for seed in range(2):
        inst = task.generate(difficulty, seed=seed)
        verdict = task.verify(inst, task.format_answer(task.solver.trivial(inst.data)))
        assert verdict.feasible, f"{inst.id}: {verdict.summary()}"
        heuristic = inst.reference["heuristic"]["objective"]
        assert not task.is_better(verdict.objective, heuristic)
        assert 0 <= task.quality_ratio(verdict.objective, heuristic) <= 1
