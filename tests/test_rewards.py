"""The verifiers as reward functions (TRL's and verl's signatures); no torch needed."""

from __future__ import annotations

import json

import pytest

import mmnp
from mmnp.trainers.rewards import (COLUMN, feasible_reward, make_shaped_reward, quality_reward, record_payload,
                          shaped_reward)
from mmnp.trainers.rewards.verl import compute_score, to_verl_row


@pytest.fixture(scope="module")
def rows():
    task = mmnp.get_task("knapsack")
    inst = task.generate("medium", seed=4)
    good = task.format_answer(inst.reference["heuristic"]["solution"])
    half = task.format_answer(inst.reference["heuristic"]["solution"][:2])
    bad = f"Answer: {list(range(len(inst.data['weights'])))}"
    return inst, [good, half, bad, "no answer at all"]


def test_shapes(rows):
    inst, completions = rows
    payload = [record_payload(inst)] * 4
    task = mmnp.get_task("knapsack")
    half_ratio = task.quality_ratio(task.verify(inst, completions[1]).objective, inst.reference_objective)
    assert feasible_reward(None, completions, payload) == [1.0, 1.0, 0.0, 0.0]
    assert quality_reward(None, completions, payload) == [1.0, half_ratio, 0.0, 0.0]
    assert 0 < half_ratio < 1
    assert shaped_reward(None, completions, payload) == pytest.approx([1.1, 0.1 + half_ratio, 0.1 - 0.5, -0.5])
    assert make_shaped_reward(0.0, 1.0)(None, completions, payload) == pytest.approx([1.0, half_ratio, -1.0, -1.0])


def test_conversational_completions_and_extra_columns(rows):
    inst, completions = rows
    conversational = [[{"role": "assistant", "content": c}] for c in completions]
    parts = [[{"role": "assistant", "content": [{"type": "text", "text": c}]}] for c in completions]
    payload = [record_payload(inst)] * 4
    expected = quality_reward(None, completions, payload)
    assert quality_reward(None, conversational, payload, task=["knapsack"] * 4, trainer_state=None) == expected
    assert quality_reward(None, parts, payload) == expected
    # `datasets` merges the keys of mixed content parts: an image part then carries "text": None
    merged = [[{"role": "assistant", "content": [{"type": "image", "text": None, "image": None},
                                                 {"type": "text", "text": c, "image": None}]}] for c in completions]
    assert quality_reward(None, merged, payload) == expected


def test_a_wrong_column_is_named(rows):
    with pytest.raises(ValueError, match=f"the {COLUMN} column"):
        quality_reward(None, ["Answer: [1]"], [json.dumps({"id": "x"})])


def test_a_row_for_each_completion_or_one_line(rows):
    """Two completions and one row: zip paired the first and dropped the second's reward (verl's or a
    custom loop would then pair rewards with the wrong completions)."""
    inst, completions = rows
    with pytest.raises(ValueError, match="2 completions for 1 mmnp_instance rows: a reward needs one row per completion"):
        quality_reward(None, completions[:2], [record_payload(inst)])


def _edited(payload: str, edit) -> str:
    record = json.loads(payload)
    edit(record)
    return json.dumps(record)


@pytest.mark.parametrize("edit", [
    lambda r: r.update(reference_objective=1),  # QR 417 for the honest answer
    lambda r: r["instance"].update(capacity=r["instance"]["capacity"] * 10),  # every item fits
    lambda r: r.update(task="subset_sum"),
    lambda r: r.update(best_objective="abc"),
], ids=["reference", "capacity", "task", "best"])
def test_an_edited_row_is_refused_never_scored(rows, edit):
    """The reward column is a claim like a dataset's records: edited after mmnp wrote it, it is
    refused in TRL's and verl's form alike (it scored QR 417, or a raised capacity made every
    item fit), and a row that is no record at all is one line, not a TypeError."""
    inst, completions = rows
    payload = _edited(record_payload(inst), edit)
    with pytest.raises(ValueError, match=f"the {COLUMN} record of 'knapsack-medium-4' was edited after mmnp wrote it"):
        quality_reward(None, completions[:1], [payload])
    truth = _edited(to_verl_row(inst)["reward_model"]["ground_truth"], edit)
    with pytest.raises(ValueError, match="was edited after mmnp wrote it"):
        compute_score("mmnp/knapsack", completions[0], truth)
    for junk in ("[1, 2]", "2", "not json", json.dumps({k: 1 for k in ("task", "instance", "reference_objective")})):
        with pytest.raises(ValueError, match=f"the {COLUMN} column must hold a record"):
            quality_reward(None, completions[:1], [junk])
    with pytest.raises(ValueError, match="data_source 'gsm8k'"):
        compute_score("gsm8k", "2", "2")


def test_a_row_of_another_type_or_shape_is_one_line(rows):
    """A column already decoded into a dict is scored as its JSON; a list, or a row re-digested
    after an edit to types mmnp never writes, was a TypeError from the cache or the ratio."""
    from mmnp.core import reward_digest

    inst, completions = rows
    record = json.loads(record_payload(inst))
    assert quality_reward(None, completions[:2], [record] * 2) == quality_reward(None, completions[:2],
                                                                                 [record_payload(inst)] * 2)
    with pytest.raises(ValueError, match=f"the {COLUMN} column must hold the JSON record mmnp wrote .* got list"):
        quality_reward(None, completions[:1], [[1, 2]])
    for edit in ({"reference_objective": None}, {"reference_objective": 0}, {"task": ["knapsack"]}, {"instance": "x"},
                 {"best_objective": float("inf")}):
        bad = {**record, **edit}
        bad["digest"] = reward_digest(bad)
        with pytest.raises(ValueError, match="is not shaped as mmnp writes it"):
            quality_reward(None, completions[:1], [json.dumps(bad)])


def test_a_reward_trl_cannot_call_by_keyword_is_refused():
    """TRL calls rewards with keywords (prompts=, completions=, mmnp_instance=): a third positional
    parameter by another name passed verl's positional check and failed at the first step."""
    from mmnp.trainers.rewards import _check_reward

    def records_reward(prompts, completions, records, **columns):
        return [0.0] * len(completions)

    with pytest.raises(TypeError, match=r"a reward takes \(prompts, completions, mmnp_instance"):
        _check_reward("mine", records_reward)
    _check_reward("fine", quality_reward)


def test_verl_compute_score(rows):
    inst, completions = rows
    row = to_verl_row(inst)
    truth = row["reward_model"]["ground_truth"]
    assert row["data_source"] == "mmnp/knapsack" and row["prompt"][0]["content"] == inst.prompt
    assert compute_score("mmnp/knapsack", completions[0], truth) == 1.0
    assert compute_score("mmnp/knapsack", completions[2], truth, {"reward": "shaped"}) == pytest.approx(-0.4)
    assert compute_score("mmnp/knapsack", completions[1], truth, {"reward": "feasible"}) == 1.0
    with pytest.raises(ValueError, match="choose one of"):
        compute_score("mmnp/knapsack", completions[0], truth, {"reward": "vibes"})


def test_train_spec_merges_defaults_yaml_and_flags(tmp_path):
    pytest.importorskip("trl", reason="algorithm options need the train extra")
    from mmnp.trainers.spec import TrainSpec

    config = tmp_path / "train.yaml"
    config.write_text("algo: dmpo\nmodel: /models/x\ndmpo-lambda: 0.3\nmax_steps: 50\n")
    spec = TrainSpec.merged(config, {"max_steps": 7, "learning_rate": None})
    assert (spec.algo, spec.model, spec.options, spec.max_steps, spec.learning_rate) == \
        ("dmpo", "/models/x", {"dmpo_lambda": 0.3}, 7, 1e-6)
    assert TrainSpec.merged(config, {"dmpo_lambda": 0.6}).options == {"dmpo_lambda": 0.6}  # the flag wins
    with pytest.raises(ValueError, match="--dmpo-lambda is not a setting of --algo grpo"):
        TrainSpec.merged(None, {"model": "x", "algo": "grpo", "dmpo_lambda": 0.3})
    config.write_text("algo: dmpo\nmodel: x\nlambda: 3\n")
    with pytest.raises(ValueError, match="unknown setting 'lambda'"):
        TrainSpec.merged(config, {})
    with pytest.raises(ValueError, match="--algo 'ppo'"):
        TrainSpec.merged(None, {"model": "x", "algo": "ppo"})
    with pytest.raises(ValueError, match="--model is required"):
        TrainSpec.merged(None, {})


def test_every_algorithm_setting_is_a_flag():
    """Each field an algorithm's config adds to TRL's is generated into `mmnp train --algo NAME`'s
    flags, including those the old hand-written spec could not reach; another algorithm's flag is
    refused in one line naming the algorithm's own."""
    pytest.importorskip("trl", reason="algorithm options need the train extra")
    from typer.testing import CliRunner

    from mmnp.cli import app
    from mmnp.trainers.algorithms import algorithm_names, option_flags, own_options

    seen = set()
    for algo in algorithm_names():
        flags = option_flags(algo)
        assert list(flags) == [f.name for f in own_options(algo)]
        shown = " ".join(CliRunner().invoke(app, ["train", "--algo", algo, "--help"], terminal_width=300).output.split())
        assert all(f"--{name.replace('_', '-')}" in shown for name in flags), algo
        seen |= set(flags)
    assert {"logz_hidden", "logz_learning_rate", "disa_w_max", "allow_inexact"} <= seen
    result = CliRunner().invoke(app, ["train", "--algo", "grpo", "--model", "x", "--logz-hidden", "8"], terminal_width=300)
    assert result.exit_code == 2 and "not a setting of --algo grpo (its own: none)" in " ".join(result.output.replace("│", " ").split())


def test_rewards_hand_their_verdicts_to_log_extra():
    """One verification per completion serves the reward and the trainer's SR/QR/distinct."""
    from mmnp.trainers.rewards import VERDICT_COLUMNS, quality_reward

    inst = mmnp.get_task("knapsack").generate("easy", seed=3)
    good = mmnp.get_task("knapsack").format_answer(inst.reference["heuristic"]["solution"])
    logged = {}
    rewards = quality_reward(None, [good, "no answer"], [record_payload(inst)] * 2,
                             log_extra=lambda column, values: logged.setdefault(column, values))
    assert set(logged) == set(VERDICT_COLUMNS)
    assert logged["mmnp/feasible"] == [1.0, 0.0] and logged["mmnp/qr"] == rewards
    assert logged["mmnp/solution"][0] is not None and logged["mmnp/solution"][1] is None
