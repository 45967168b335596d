"""The transcription forms: exact for the instance itself, field-by-field scores that
drop where (and only where) a reading is wrong, and no text that makes scoring raise."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mmnp
from mmnp.transcribe import score_transcription, tasks, transcribe


def test_every_registered_task_has_a_form():
    assert set(tasks()) == {t.name for t in mmnp.list_tasks()}


@pytest.mark.parametrize("difficulty", ["easy", "hard"])
def test_the_instance_transcribes_exactly_even_inside_prose(task, difficulty):
    data = task.generate(difficulty, seed=3).data
    form = transcribe(task.name, data)
    text = f"I read the picture.\n```json\n{json.dumps(form, indent=1)}\n```\nAnswer: done"
    exact, scores = score_transcription(task.name, data, text)
    assert exact and set(scores.values()) == {1.0}
    # a transcription of another instance of the same task is not exact
    other = transcribe(task.name, task.generate(difficulty, seed=4).data)
    assert not score_transcription(task.name, data, json.dumps(other))[0]


def test_the_transcription_is_read_after_long_reasoning_and_before_braces_that_are_no_json(task):
    """An exact transcription scored 0 when 256 or more `{` followed it (a LaTeX note: \\frac{v}{w}) or
    when the reasoning before it ran past 200,000 characters; replies up to the backend's 1,000,000
    characters are read, and a longer one (no reply mmnp keeps) scores 0."""
    from mmnp.transcribe import MAX_CHARS

    data = task.generate("easy", seed=3).data
    form = json.dumps(transcribe(task.name, data))
    for text in (form + " Ratios: " + "\\frac{v_0}{w_0} " * 200, "think " * 60_000 + form):
        assert score_transcription(task.name, data, text)[0], text[:80]
    assert not score_transcription(task.name, data, "x" * (MAX_CHARS - len(form) + 1) + form)[0]


def _last_list_field(form: dict) -> str:
    return [k for k, v in form.items() if isinstance(v, list) and len(v) > 1 and k != "day"][-1]


def test_one_misread_lowers_only_its_field(task):
    data = task.generate("medium", seed=5).data
    form = transcribe(task.name, data)
    key = _last_list_field(form)
    wrong = json.loads(json.dumps(form))
    wrong[key] = wrong[key][:-1]  # the last row/edge/city missed
    exact, scores = score_transcription(task.name, data, json.dumps(wrong))
    assert not exact
    low = [f for f, v in scores.items() if v < 1.0]
    assert len(low) == 1 and 0.5 < scores[low[0]] < 1.0


def test_graph_edges_read_in_either_direction_and_order():
    data = {"n": 4, "edges": [[0, 1], [1, 2], [2, 3]]}
    text = '{"n": 4, "edges": [[3, 2], [1, 0], [2, 1]]}'
    assert score_transcription("vertex_cover", data, text) == (True, {"n": 1.0, "edges": 1.0})
    exact, scores = score_transcription("vertex_cover", data, '{"n": 5, "edges": [[0, 1], [0, 2]]}')
    assert not exact and scores["n"] == 0.0 and scores["edges"] == pytest.approx(2 * 1 / 5)


def test_no_json_scores_zero(task):
    data = task.generate("easy", seed=0).data
    exact, scores = score_transcription(task.name, data, "I cannot read the image.")
    assert not exact and set(scores.values()) == {0.0}


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.text(max_size=300), st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(
        ["n", "edges", "cities", "items", "capacity", "numbers", "target", "subsets", "universe", "day",
         "people", "rooms", "meetings", "name", "available", "duration", "attendees"]), inner, max_size=5),
    max_leaves=20).map(lambda o: json.dumps(o, allow_nan=True))))
def test_scoring_never_raises(text):
    for task in mmnp.list_tasks():
        data = task.generate("easy", seed=0).data
        exact, scores = score_transcription(task.name, data, text)
        assert isinstance(exact, bool) and all(0.0 <= v <= 1.0 for v in scores.values())
