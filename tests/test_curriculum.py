"""Curricula: the schedules move levels as specified, the stream is seeded and resumable,
the reward wrapper feeds outcomes back, and a real GRPOTrainer run changes a level."""

from __future__ import annotations

import json
import zlib

import pytest

from mmnp.errors import UsageError
from mmnp.registry import get_task
from mmnp.trainers.curriculum import Curriculum, CurriculumSpec, CurriculumStream, curriculum_spec


def adaptive(**kw) -> CurriculumSpec:
    return CurriculumSpec("adaptive", **{"curriculum_window": 10, "curriculum_raise_at": 0.8,
                                         "curriculum_lower_at": 0.3, **kw})


def feed(c: Curriculum, task: str, outcomes: list[bool], level: int | None = None) -> None:
    for ok in outcomes:
        c.record(task, c.levels[task] if level is None else level, ok)


def test_adaptive_raises_once_a_full_window_succeeds():
    c = Curriculum("tsp,knapsack", adaptive(curriculum_start=3))
    feed(c, "tsp", [True] * 6)
    assert c.step(1)["changes"] == [] and c.levels["tsp"] == 3, "6 of a 10-completion window is not enough"
    feed(c, "tsp", [True] * 3 + [False])  # 9 of 10 = 0.9 >= 0.8
    log = c.step(2)
    assert log["changes"] == [{"task": "tsp", "from": 3, "to": 4}]
    assert c.levels == {"tsp": 4, "knapsack": 3}, "only the task that succeeded moves"


def test_adaptive_lowers_when_the_rolling_rate_drops_and_stops_at_level_1():
    c = Curriculum("tsp", adaptive(curriculum_start=2))
    feed(c, "tsp", [False] * 8 + [True] * 2)  # 0.2 <= 0.3
    c.step(1)
    assert c.levels["tsp"] == 1
    feed(c, "tsp", [False] * 20)
    c.step(2)
    assert c.levels["tsp"] == 1


def test_adaptive_stops_at_the_top():
    c = Curriculum("tsp", adaptive(curriculum_start=4, curriculum_top=5))
    for step in range(1, 6):
        feed(c, "tsp", [True] * 10)
        c.step(step)
    assert c.levels["tsp"] == 5


def test_hysteresis_no_flapping_between_the_thresholds():
    """Rates inside the band never move the level; after a move the old evidence is dropped,
    so one bad step right after a raise does not undo it."""
    c = Curriculum("tsp", adaptive(curriculum_start=5))
    for step in range(1, 30):  # alternating 0.5 / 0.6 / 0.7 success: inside (0.3, 0.8)
        feed(c, "tsp", [True] * (5 + step % 3) + [False] * (5 - step % 3))
        c.step(step)
    assert c.levels["tsp"] == 5
    feed(c, "tsp", [True] * 10)
    c.step(30)
    assert c.levels["tsp"] == 6
    feed(c, "tsp", [False] * 5)  # bad, but only half a window at the new level
    c.step(31)
    assert c.levels["tsp"] == 6
    feed(c, "tsp", [False] * 5)
    c.step(32)
    assert c.levels["tsp"] == 5


def test_the_rolling_window_forgets_old_steps():
    """A long good past does not hold up a task that now fails: the rate covers the latest
    steps holding a window's worth of completions."""
    c = Curriculum("tsp", adaptive(curriculum_start=5, curriculum_raise_at=1.0))
    for step in range(1, 6):
        feed(c, "tsp", [True] * 7 + [False] * 3)  # 0.7: stays
        c.step(step)
    feed(c, "tsp", [False] * 10)
    c.step(6)
    assert c.levels["tsp"] == 4


def test_outcomes_from_another_level_are_ignored():
    c = Curriculum("tsp", adaptive(curriculum_start=5))
    feed(c, "tsp", [True] * 10, level=4)  # prompts drawn before a change, scored after it
    c.step(1)
    assert c.levels["tsp"] == 5 and c.rolling_sr("tsp") is None


def test_linear_and_fixed():
    lin = Curriculum("tsp,knapsack", CurriculumSpec("linear", curriculum_start=2, curriculum_top=4, curriculum_every=3))
    levels = []
    for step in range(1, 12):
        feed(lin, "tsp", [False] * 10)  # outcomes do not matter to a linear schedule
        levels.append(lin.step(step)["levels"]["tsp"])
    assert levels == [2, 2, 3, 3, 3, 4, 4, 4, 4, 4, 4]
    fixed = Curriculum("tsp", CurriculumSpec("fixed", curriculum_start=7))
    for step in range(1, 5):
        feed(fixed, "tsp", [True] * 50)
        fixed.step(step)
    assert fixed.levels["tsp"] == 7


@pytest.mark.parametrize("bad, words", [
    ({"curriculum": "cosine"}, "choose one of fixed, linear, adaptive"),
    ({"curriculum_start": 0}, "start"),
    ({"curriculum_start": 6, "curriculum_top": 5}, "start"),
    ({"curriculum_raise_at": 0.3, "curriculum_lower_at": 0.3}, "lower < raise"),
    ({"curriculum_window": 0}, "at least 1"),
])
def test_bad_settings_are_refused(bad, words):
    with pytest.raises(UsageError, match=words):
        Curriculum("tsp", CurriculumSpec(**bad))


def test_curriculum_spec_from_train_settings():
    from types import SimpleNamespace

    values = {f: getattr(CurriculumSpec(), f) for f in CurriculumSpec.__dataclass_fields__}
    assert curriculum_spec(SimpleNamespace(**{**values, "curriculum": None})) is None
    spec = curriculum_spec(SimpleNamespace(**{**values, "curriculum": "linear", "curriculum_every": 7}))
    assert spec == CurriculumSpec("linear", curriculum_every=7)
    with pytest.raises(UsageError, match="--curriculum-window"):
        curriculum_spec(SimpleNamespace(**{**values, "curriculum": "adaptive", "curriculum_window": 0}))


def test_stream_is_seeded_and_follows_the_levels():
    a = Curriculum("knapsack,subset_sum", adaptive(curriculum_window=2), seed=4)
    b = Curriculum("knapsack,subset_sum", adaptive(curriculum_window=2), seed=4)
    rows_a, rows_b = iter(CurriculumStream(a)), iter(CurriculumStream(b))
    first = [next(rows_a) for _ in range(4)]
    assert [r["mmnp_instance"] for r in first] == [next(rows_b)["mmnp_instance"] for _ in range(4)]
    assert [r["task"] for r in first] == ["knapsack", "subset_sum"] * 2 and {r["level"] for r in first} == {1}
    other = Curriculum("knapsack,subset_sum", adaptive(), seed=5)
    assert next(iter(CurriculumStream(other)))["mmnp_instance"] != first[0]["mmnp_instance"]
    feed(a, "knapsack", [True, True])
    a.step(1)
    later = [next(rows_a) for _ in range(2)]
    assert [(r["task"], r["level"], r["difficulty"]) for r in later] == [("knapsack", 2, "L2"), ("subset_sum", 1, "L1")]
    record = json.loads(later[0]["mmnp_instance"])
    lo, hi = get_task("knapsack").config("L2").n
    assert lo <= len(record["instance"]["weights"]) <= hi
    # drawn items keep their level: iterating again from the start gives the same rows
    again = iter(CurriculumStream(a))
    assert [next(again)["mmnp_instance"] for _ in range(6)] == [r["mmnp_instance"] for r in first + later]


def _policy(row: dict) -> bool:
    """A stand-in model: succeeds on a fixed pseudo-random share of instances that falls with level."""
    return zlib.crc32(row["mmnp_instance"].encode()) % 100 < 95 - 20 * (row["level"] - 1)


def _run(curriculum: Curriculum, steps: range, batch: int, skip: int = 0) -> list:
    """Steps of a training loop: draw `batch` rows, score them, apply the schedule. Like the
    Trainer on resume, iteration restarts at item 0 and skips the items already trained on."""
    rows = iter(CurriculumStream(curriculum))
    for _ in range(skip):
        next(rows)
    trace = []
    for step in steps:
        drawn = [next(rows) for _ in range(batch)]
        for row in drawn:
            curriculum.record(row["task"], row["level"], _policy(row))
        trace.append(([(r["task"], r["level"], json.loads(r["mmnp_instance"])["id"]) for r in drawn],
                      curriculum.step(step)))
    return trace


def test_resume_equals_a_straight_run():
    spec = adaptive(curriculum_window=4, curriculum_raise_at=0.75, curriculum_lower_at=0.25)
    straight = _run(Curriculum("knapsack,subset_sum", spec, seed=2), range(1, 13), batch=4)
    assert len({lv for _, log in straight for lv in log["levels"].values()}) >= 3, "the run should move levels"

    first = Curriculum("knapsack,subset_sum", spec, seed=2)
    head = _run(first, range(1, 7), batch=4)
    saved = json.loads(json.dumps(first.state_dict()))  # as the checkpoint stores it
    resumed = Curriculum("knapsack,subset_sum", spec, seed=2)
    resumed.load_state_dict(saved)
    tail = _run(resumed, range(7, 13), batch=4, skip=6 * 4)
    assert head + tail == straight


def test_a_checkpoint_of_another_run_is_refused():
    saved = Curriculum("tsp", adaptive(), seed=2).state_dict()
    with pytest.raises(UsageError, match="differs"):
        Curriculum("tsp", adaptive(), seed=3).load_state_dict(saved)


def test_wrap_reward_counts_feasible_completions_per_task_and_level():
    from mmnp.trainers.rewards import quality_reward

    c = Curriculum("knapsack,subset_sum", adaptive(curriculum_start=2))
    row = CurriculumStream(c).row(0)
    name, level, seed = c.item(0)
    task = get_task(name)
    good = task.format_answer(task.generate(f"L{level}", seed).reference["heuristic"]["solution"])
    reward = c.wrap_reward(quality_reward)
    completions = [good, "no idea", "Answer: [0, 0, 0]"]
    payloads = [row["mmnp_instance"]] * 3
    values = reward([row["prompt"]] * 3, completions, payloads, level=[2, 2, 2], task=["knapsack"] * 3)
    assert values == quality_reward([row["prompt"]] * 3, completions, payloads)
    assert values[0] == 1.0 and reward.__name__ == "quality_reward"
    assert c.pending() == [1, 3, 0, 0]


def test_callback_state_round_trip_as_transformers_restores_it():
    """transformers rebuilds an ExportableState callback as type(cb)(**args) and sets its
    attributes: that must restore the live curriculum the new run built."""
    pytest.importorskip("transformers")
    from mmnp.trainers.curriculum_callback import CurriculumCallback

    c = Curriculum("tsp", adaptive(), name="roundtrip")
    feed(c, "tsp", [True] * 10)
    c.step(1)
    state = json.loads(json.dumps(CurriculumCallback(c).state()))
    fresh = Curriculum("tsp", adaptive(), name="roundtrip")
    restored = CurriculumCallback(**state["args"])
    for key, value in state["attributes"].items():
        setattr(restored, key, value)
    assert restored.curriculum is fresh and fresh.levels == {"tsp": 2} and fresh.step_done == 1


def test_grpo_trainer_run_changes_a_level(tiny_text, tmp_path):
    """A real GRPOTrainer run on the tiny model: the thresholds leave no rate unmoved
    (0.5 / 0.49 with groups of 4), so the levels change after the first step and later
    prompts come from the new levels; logged per step and saved with the checkpoint."""
    pytest.importorskip("trl")
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from mmnp.trainers.curriculum_callback import CurriculumCallback
    from mmnp.trainers.rewards import shaped_reward

    spec = CurriculumSpec("adaptive", curriculum_start=3, curriculum_window=4, curriculum_raise_at=0.5,
                          curriculum_lower_at=0.49)
    curriculum = Curriculum("knapsack,subset_sum", spec, seed=7, name="grpo-test")
    seen: list[tuple[int, str, int]] = []
    reward = curriculum.wrap_reward(shaped_reward)

    def spy(prompts, completions, mmnp_instance, **columns):
        seen.extend((curriculum.step_done, t, lv) for t, lv in zip(columns["task"], columns["level"]))
        return reward(prompts, completions, mmnp_instance, **columns)

    config = GRPOConfig(output_dir=str(tmp_path), max_steps=3, num_generations=4, per_device_train_batch_size=8,
                        max_completion_length=16, learning_rate=1e-3, report_to="none", save_steps=2,
                        logging_steps=1, shuffle_dataset=False, use_cpu=True, seed=7)
    trainer = GRPOTrainer(model=str(tiny_text), reward_funcs=[spy], args=config,
                          train_dataset=curriculum.iterable_dataset(),
                          processing_class=AutoTokenizer.from_pretrained(tiny_text, padding_side="left"),
                          callbacks=[CurriculumCallback(curriculum)])
    trainer.train()

    log = [json.loads(line) for line in (tmp_path / "curriculum.jsonl").read_text().splitlines()]
    assert [entry["step"] for entry in log] == [1, 2, 3]
    assert {t: lv for t, lv in log[0]["levels"].items()} != {"knapsack": 3, "subset_sum": 3}
    assert {c["task"] for c in log[0]["changes"]} == {"knapsack", "subset_sum"}
    # Accelerate prefetches one batch, so step 2's prompts were drawn before step 1 ended;
    # their outcomes, at the old level, are not counted, and step 3's come from the new levels
    assert log[1]["changes"] == []
    assert {t: lv for done, t, lv in seen if done == 2} == log[0]["levels"]
    saved = json.loads((tmp_path / "checkpoint-2" / "trainer_state.json").read_text())["stateful_callbacks"]
    assert saved["CurriculumCallback"]["attributes"]["curriculum_state"]["levels"] == log[1]["levels"]
