"""`mmnp train` end to end on tiny local models: resuming, curricula, SFT then RL, settings
checked before anything loads. Every algorithm's train-then-evaluate run is in
test_algorithm_conformance.py, parametrised over the algorithm registry."""

from __future__ import annotations

import csv
import json
import math

import pytest

pytest.importorskip("trl", reason="training needs the train extra")

from typer.testing import CliRunner  # noqa: E402

from mmnp.cli import app  # noqa: E402

def _train(model, out, algo, modality, steps=3):
    args = ["train", "--model", str(model), "--algo", algo, "--modality", modality,
            "--tasks", "knapsack,subset_sum,max_clique", "--difficulty", "easy", "--count", "4", "--max-steps",
            str(steps), "--num-generations", "4", "--per-device-train-batch-size", "4", "--max-completion-length",
            "24", "--learning-rate", "1e-3", "--reward", "shaped", "--report-to", "none", "--save-steps", "1000",
            "--output-dir", str(out), "--image-size", "512"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    with open(out / "metrics.csv") as f:
        return [row for row in csv.DictReader(f) if row.get("loss")]


def test_image_training_needs_a_vision_model(tiny_text, tmp_path):
    result = CliRunner().invoke(app, ["train", "--model", str(tiny_text), "--modality", "image", "--output-dir",
                                      str(tmp_path), "--report-to", "none"])
    assert result.exit_code == 2 and "no vision tower" in result.output


def test_cached_completion_logps_match_a_full_forward(tiny_text):
    """The prompt-cached pass that exact group terms use equals a plain forward of each
    (left-padded prompt, right-padded completion) sequence."""
    import torch
    from transformers import AutoModelForCausalLM

    from mmnp.trainers.base import cached_completion_logps, unique_rows

    model = AutoModelForCausalLM.from_pretrained(tiny_text).eval()
    torch.manual_seed(0)
    pad = 0
    prompts = [[5, 6, 7, 8, 9], [11, 12, 13]]
    rows = [0, 0, 1, 1, 1]  # groups of 2 and 3 completions
    completions = [[20, 21, 22, 23], [24, 25], [26, 27, 28], [29], [30, 31, 32, 33]]
    width_p, width_c = max(map(len, prompts)), max(map(len, completions))
    prompt_ids = torch.tensor([[pad] * (width_p - len(prompts[r])) + prompts[r] for r in rows])
    prompt_mask = (torch.arange(width_p)[None] >= torch.tensor([width_p - len(prompts[r]) for r in rows])[:, None]).long()
    completion_ids = torch.tensor([c + [pad] * (width_c - len(c)) for c in completions])
    completion_mask = (torch.arange(width_c)[None] < torch.tensor([len(c) for c in completions])[:, None]).long()
    first, inverse = unique_rows(prompt_ids)
    assert len(first) == 2 and torch.equal(prompt_ids[first][inverse], prompt_ids)
    cached = cached_completion_logps(model, prompt_ids, prompt_mask, completion_ids, completion_mask, 0.7, chunk=2)
    with torch.no_grad():
        ids = torch.cat([prompt_ids, completion_ids], 1)
        logits = model(input_ids=ids, attention_mask=torch.cat([prompt_mask, completion_mask], 1)).logits.float()
    full = torch.log_softmax(logits[:, width_p - 1 : -1] / 0.7, -1).gather(-1, completion_ids[..., None]).squeeze(-1)
    assert torch.allclose(cached, full * completion_mask, atol=1e-5)
    # Gradient checkpointing in train mode turns the KV cache off (found on a GPU run): same values
    model.gradient_checkpointing_enable()
    model.train()
    model.config.use_cache = False
    uncached = cached_completion_logps(model, prompt_ids, prompt_mask, completion_ids, completion_mask, 0.7, chunk=2)
    assert torch.allclose(uncached, full * completion_mask, atol=1e-5)


def test_an_interrupted_run_resumes_from_its_checkpoint(tiny_text, tmp_path):
    """Run 2 of 4 steps (checkpointing every step), then the same settings with 4 steps: it
    continues from step 2 instead of starting over, the log-Z head included, and the
    metrics log keeps the first run's rows."""
    from transformers import TrainerCallback

    from mmnp.trainers.spec import TrainSpec
    from mmnp.trainers.train import build_trainer, train

    class CountSteps(TrainerCallback):
        def __init__(self):
            self.steps = []

        def on_step_end(self, args, state, control, **kwargs):
            self.steps.append(state.global_step)

    def run(max_steps):
        spec = TrainSpec(model=str(tiny_text), algo="flowrl", tasks="knapsack", difficulty="easy", count=4,
                         num_generations=4, per_device_train_batch_size=4, max_completion_length=16,
                         report_to="none", save_steps=1, output_dir=str(tmp_path), max_steps=max_steps)
        trainer = build_trainer(spec)
        counter = CountSteps()
        trainer.add_callback(counter)
        train(trainer, spec)
        return counter.steps

    assert run(2) == [1, 2]
    assert (tmp_path / "checkpoint-2" / "logz_head.pt").exists()
    assert run(4) == [3, 4]  # only the missing steps
    with open(tmp_path / "metrics.csv") as f:
        steps = [int(float(r["step"])) for r in csv.DictReader(f) if r.get("loss")]
    assert steps == [1, 2, 3, 4]


def test_train_with_an_adaptive_curriculum_moves_levels_and_logs_them(tiny_text, tmp_path):
    """`mmnp train --curriculum adaptive`: prompts are drawn level by level, and a task the model
    fails (no completion is feasible at L2 after 4 completions, and 0 <= lower_at) moves down a
    level, in curriculum.jsonl and in metrics.csv's curriculum columns."""
    out = tmp_path / "run"
    result = CliRunner().invoke(app, [
        "train", "--model", str(tiny_text), "--algo", "grpo", "--tasks", "max_clique", "--curriculum", "adaptive",
        "--curriculum-start", "2", "--curriculum-window", "4", "--curriculum-raise-at", "1.0",
        "--curriculum-lower-at", "0.99", "--max-steps", "2", "--num-generations", "4",
        "--per-device-train-batch-size", "4", "--max-completion-length", "16", "--report-to", "none",
        "--save-steps", "1000", "--output-dir", str(out)])
    assert result.exit_code == 0, result.output
    steps = [json.loads(line) for line in (out / "curriculum.jsonl").read_text().splitlines()]
    assert steps[0]["changes"] == [{"task": "max_clique", "from": 2, "to": 1}]
    with open(out / "metrics.csv") as f:
        assert [float(r["curriculum/max_clique_level"]) for r in csv.DictReader(f) if r.get("loss")][-1] == 1.0
    bad = CliRunner().invoke(app, ["train", "--model", str(tiny_text), "--curriculum", "sideways",
                                   "--output-dir", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "--curriculum 'sideways'" in bad.output


def test_sft_raises_the_likelihood_of_reference_answers_then_rl_continues_from_it(tiny_text, tmp_path):
    """`mmnp sft` distils the reference solutions: the answers it was trained on become more
    likely than under the starting model; `mmnp train --model DIR` then starts from the result."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from mmnp.trainers.data import best_answer, training_instances

    out = tmp_path / "sft"
    result = CliRunner().invoke(app, ["sft", "--model", str(tiny_text), "--tasks", "knapsack", "--difficulty", "easy",
                                      "--count", "4", "--max-steps", "20", "--learning-rate", "1e-3", "--out", str(out)])
    assert result.exit_code == 0, result.output
    tokenizer = AutoTokenizer.from_pretrained(tiny_text)

    def answer_logp(path) -> float:
        model = AutoModelForCausalLM.from_pretrained(path).eval()
        total = 0.0
        for inst in training_instances("knapsack", ["easy"], 4, 1):
            prompt = tokenizer.apply_chat_template([{"role": "user", "content": inst.prompt}],
                                                   add_generation_prompt=True, tokenize=False)
            p = tokenizer(prompt, add_special_tokens=False)["input_ids"]
            a = tokenizer(best_answer(inst), add_special_tokens=False)["input_ids"]
            with torch.no_grad():
                logits = model(torch.tensor([p + a])).logits[0, len(p) - 1 : -1].float()
            total += torch.log_softmax(logits, -1).gather(-1, torch.tensor(a)[:, None]).sum().item()
        return total

    assert answer_logp(out) > answer_logp(tiny_text) + 1.0
    rows = _train(out, tmp_path / "rl", "grpo", "text", steps=1)
    assert rows and math.isfinite(float(rows[-1]["loss"]))


def test_config_values_are_typed_and_checked_before_anything_loads(tmp_path):
    """`--config` YAML is read as YAML 1.1 (`1e-6` is a string there): each value becomes its
    setting's type, and a value of the wrong type or out of range is one line naming the file
    and the key, exit 2, before the model (here a folder that does not exist) is touched."""
    from mmnp.trainers.spec import TrainSpec

    good = tmp_path / "good.yaml"
    good.write_text("model: m\nalgo: dmpo\nlearning_rate: 1e-6\nmax_steps: '12'\ndmpo_lambda: 5e-1\nbf16: false\n")
    spec = TrainSpec.merged(good, {})
    assert (spec.learning_rate, spec.max_steps, spec.options, spec.bf16) == (1e-6, 12, {"dmpo_lambda": 0.5}, False)
    missing = tmp_path / "no-such-model"
    for body, words in (("max_steps: abc", ["max_steps", "integer", "'abc'"]),
                        ("num_generations: 0", ["--num-generations 0", "at least 2"]),
                        ("learning_rate: fast", ["learning_rate", "number"]),
                        ("max_steps: 2.5", ["max_steps", "integer"]),
                        ("tasks: [tsp, knapsack]", ["tasks", "text"]),
                        ("algo: dmpo\ndmpo_lambda: much", ["dmpo_lambda", "number"]),
                        ("algo: disa", ["--algo disa needs --logz DIR from `mmnp disa fit`"]),
                        ("algo: flowrl\nbeta: 0.04", ["--beta 0.04: flowrl replaces GRPO's loss", "leave --beta at 0"])):
        config = tmp_path / "bad.yaml"
        config.write_text(f"model: {missing}\n{body}\n")
        result = CliRunner().invoke(app, ["train", "--config", str(config)])
        assert result.exit_code == 2, (body, result.output)
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert len(lines) == 1 and all(w in lines[0] for w in words), (body, result.output)
        assert "no-such-model" not in result.output, "the model must not be touched"


def test_tiny_model_and_sft_never_write_into_a_users_folder(tiny_text, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "config.json").write_text('{"mine": true}')
    made = CliRunner().invoke(app, ["tiny-model", "--out", str(mine), "--warm-steps", "0"])
    assert made.exit_code == 2 and "exists and is not empty" in made.output, made.output
    tuned = CliRunner().invoke(app, ["sft", "--model", str(tiny_text), "--out", str(mine), "--tasks", "knapsack",
                                     "--difficulty", "easy", "--count", "2", "--max-steps", "1"])
    assert tuned.exit_code == 2 and "exists and is not empty" in tuned.output, tuned.output
    assert [p.name for p in tmp_path.iterdir()] == ["mine"]  # no staging folder left beside it
    assert [p.name for p in mine.iterdir()] == ["config.json"] and (mine / "config.json").read_text() == '{"mine": true}'
    (tmp_path / "empty").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "empty")  # a link cannot be replaced by the finished folder
    tuned = CliRunner().invoke(app, ["sft", "--model", str(tiny_text), "--out", str(tmp_path / "link"), "--tasks",
                                     "knapsack", "--difficulty", "easy", "--count", "2", "--max-steps", "1"])
    assert tuned.exit_code == 2 and "is a link or a mount point" in tuned.output, tuned.output
    made = CliRunner().invoke(app, ["tiny-model", "--out", str(tmp_path / "new"), "--warm-steps", "0"])
    assert made.exit_code == 0 and (tmp_path / "new" / "model.safetensors").is_file(), made.output


def test_metrics_csv_rows_are_the_checkpoints_record_and_only_agreeing_rows_add_to_it():
    """A resumed or finished run's rows: the checkpoint's logs. A row of metrics.csv adds its other
    columns (a curriculum level an older checkpoint did not record) only where it has every number
    the record has; the file's summary row at the last step stays only if every row agreed."""
    from mmnp.trainers.train import _from_record

    record = [{"loss": 0.5, "reward": 1.0, "epoch": 0.5, "step": 1}, {"loss": float("nan"), "reward": 2, "step": 2}]
    written = [{"step": 1, "loss": 0.5, "reward": 1.0, "epoch": 0.5, "curriculum/tsp_level": 3.0},
               {"step": 2, "loss": float("nan"), "reward": 2.0, "curriculum/tsp_level": 4.0},
               {"step": 2, "train_runtime": 9.0, "train_loss": 0.25}]
    rows = _from_record(record, 2, written, finished=True)
    assert [r.get("curriculum/tsp_level") for r in rows] == [3.0, 4.0, None]
    assert rows[2] == {"step": 2, "train_runtime": 9.0, "train_loss": 0.25}
    assert len(_from_record(record, 2, written, finished=False)) == 2  # a resumed run logs its summary anew
    assert len(_from_record(record, 1, written, finished=False)) == 1  # the steps after the checkpoint are redone
    edited = [dict(written[0], loss=123.0), *written[1:]]
    rows = _from_record(record, 2, edited, finished=True)
    assert rows[0] == record[0] and "curriculum/tsp_level" not in rows[0]  # the record's numbers, not the file's
    assert len(rows) == 2  # a file that disagrees anywhere keeps no row the record lacks
    assert _from_record(record, 2, [], finished=True) == [record[0], {"loss": record[1]["loss"], "reward": 2, "step": 2}]
    added = [dict(written[0], **{"mmnp/sr": 1.0}), *written[1:]]  # a column the record lacks, not the curriculum's
    assert "mmnp/sr" not in _from_record(record, 2, added, finished=True)[0]


def test_metrics_csv_is_never_left_half_written(tmp_path, monkeypatch):
    """A kill while metrics.csv is rewritten (each log rewrites it) leaves the previous rows, not a
    truncated file."""
    from types import SimpleNamespace

    from mmnp.trainers.train import MetricsLog

    log = MetricsLog(str(tmp_path))
    state = SimpleNamespace(is_world_process_zero=True, global_step=0)
    for step in (1, 2, 3):
        state.global_step = step
        log.on_log(None, state, None, logs={"loss": 0.5 * step, "reward": float(step)})
    before = (tmp_path / "metrics.csv").read_text()

    def killed(self, rows):
        raise KeyboardInterrupt

    monkeypatch.setattr(csv.DictWriter, "writerows", killed)
    state.global_step = 4
    with pytest.raises(KeyboardInterrupt):
        log.on_log(None, state, None, logs={"loss": 2.0, "reward": 4.0})
    assert (tmp_path / "metrics.csv").read_text() == before
    with open(tmp_path / "metrics.csv", newline="") as f:
        assert [int(r["step"]) for r in csv.DictReader(f)] == [1, 2, 3]


def test_a_resumed_curriculum_continues_at_its_checkpoints_levels(tiny_text, tmp_path):
    """A linear curriculum climbs a level a step; stopped after step 2 (its checkpoint at level 3)
    and extended to 3 steps, the resumed run's step 3 moves 3 -> 4, not from the start level."""
    out = tmp_path / "run"

    def train(steps: int):
        result = CliRunner().invoke(app, [
            "train", "--model", str(tiny_text), "--algo", "grpo", "--tasks", "knapsack", "--curriculum", "linear",
            "--curriculum-start", "1", "--curriculum-every", "1", "--max-steps", str(steps), "--num-generations", "2",
            "--per-device-train-batch-size", "2", "--max-completion-length", "4", "--report-to", "none",
            "--save-steps", "2", "--output-dir", str(out)])
        assert result.exit_code == 0, result.output
        return [json.loads(line) for line in (out / "curriculum.jsonl").read_text().splitlines()]

    assert [s["levels"]["knapsack"] for s in train(2)] == [2, 3]
    steps = train(3)
    assert [s["levels"]["knapsack"] for s in steps] == [2, 3, 4]
    assert steps[-1]["changes"] == [{"task": "knapsack", "from": 3, "to": 4}]
    with open(out / "metrics.csv") as f:  # the resumed rows are the checkpoint's record, curriculum columns too
        assert [float(r["curriculum/knapsack_level"]) for r in csv.DictReader(f) if r.get("loss")] == [2, 3, 4]


def test_generated_training_data_keeps_generates_size_limits():
    """`mmnp train --params n=5000` generated knapsacks that `mmnp generate` refuses (at most 600 items:
    a prompt must fit); a key applies to the tasks that take it, as in generate."""
    from mmnp.errors import UsageError
    from mmnp.trainers.data import training_instances

    with pytest.raises(UsageError, match=r"^--params n=5000 is too large for knapsack"):
        training_instances("knapsack", ["easy"], 1, seed=5, params={"n": "5000"})
    with pytest.raises(UsageError, match=r"^--count must be between 1"):
        training_instances("knapsack", ["easy"], 0, seed=5, params={"n": "5"})
    with pytest.raises(UsageError, match="belongs to none of the tasks"):
        training_instances("knapsack", ["easy"], 1, seed=5, params={"colours": "3"})
    mixed = training_instances("knapsack,tsp", ["easy"], 1, seed=5, params={"knapsack.n": "4"})
    assert [len(i.data["weights"]) for i in mixed if i.task == "knapsack"] == [4]
    for params in ({"n": "4"}, None):  # a difficulty named twice is one difficulty, with --params or without
        assert [i.id for i in training_instances("knapsack", ["easy", "easy"], 2, seed=5, params=params)] == \
            ["knapsack-easy-0000", "knapsack-easy-0001"]


def test_a_curriculum_applies_params_on_every_level_and_refuses_what_it_cannot_use(tiny_text, tmp_path):
    """`--params n=4` with a curriculum made L2's full-size knapsacks (15 items) and was recorded as
    applied; `--difficulty`/`--count` with a curriculum, and `--curriculum-*` without one, did
    nothing. Now the overrides sit on top of every level, and the rest is one line, exit 2."""
    from mmnp.trainers.spec import TrainSpec
    from mmnp.trainers.train import build_trainer

    base = {"model": str(tiny_text), "tasks": "knapsack", "max_steps": 1, "num_generations": 2,
            "per_device_train_batch_size": 2, "output_dir": str(tmp_path / "run"), "report_to": "none",
            "curriculum": "fixed", "curriculum_start": 2}
    rows = iter(build_trainer(TrainSpec.merged(None, {**base, "params": "n=4"})).train_dataset)
    first = [next(rows) for _ in range(3)]
    assert [(r["difficulty"], len(json.loads(r["mmnp_instance"])["instance"]["weights"])) for r in first] == \
        [("L2", 4)] * 3
    plain = json.loads(next(iter(build_trainer(TrainSpec.merged(None, base)).train_dataset))["mmnp_instance"])
    assert len(plain["instance"]["weights"]) > 4
    for flags, words in ((["--curriculum", "fixed", "--difficulty", "hard"], "drop --difficulty"),
                         (["--curriculum", "fixed", "--count", "5"], "drop --count"),
                         (["--curriculum", "fixed", "--params", "n=5000"], "--params n=5000 is too large"),
                         (["--curriculum-start", "7"], "--curriculum-start is a curriculum setting"),
                         (["--curriculum-every", "5"], "add --curriculum fixed, linear or adaptive")):
        result = CliRunner().invoke(app, ["train", "--model", str(tmp_path / "no-such-model"), "--tasks", "knapsack",
                                          "--output-dir", str(tmp_path / "x"), "--report-to", "none", *flags])
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert result.exit_code == 2 and len(lines) == 1 and words in lines[0], (flags, result.output)


def test_a_curriculum_recorded_before_params_reached_its_levels_resumes_as_it_drew(tiny_text, tmp_path):
    """Its record holds --difficulty/--count (which never shaped a curriculum) and --params (which its
    levels did not use then): resumed as it drew, without --params and with either of those flags
    dropped, and refused with --params, which would change the rest of its data."""
    from types import SimpleNamespace

    from mmnp.errors import UsageError
    from mmnp.trainers.spec import TrainSpec
    from mmnp.trainers.train import LEVEL_PARAMS, RUN_RECORD, check_resumable, run_record

    settings = {"model": str(tiny_text), "tasks": "knapsack", "curriculum": "fixed", "curriculum_start": 2,
                "output_dir": str(tmp_path), "report_to": "none", "num_generations": 2,
                "per_device_train_batch_size": 2}
    config = SimpleNamespace(steps_per_generation=1)
    plain = TrainSpec.merged(None, settings)
    record = run_record(plain, config)
    assert record[LEVEL_PARAMS] is True and "difficulty" not in record and "count" not in record
    (tmp_path / "checkpoint-1").mkdir()
    old = {**{k: v for k, v in record.items() if k != LEVEL_PARAMS}, "difficulty": "hard", "count": 5, "params": "n=4"}
    (tmp_path / RUN_RECORD).write_text(json.dumps(old))
    check_resumable(plain, config)
    with_params = TrainSpec.merged(None, {**settings, "params": "n=4"})
    with pytest.raises(UsageError, match=r"params None -> 'n=4'"):
        check_resumable(with_params, config)
    (tmp_path / RUN_RECORD).write_text(json.dumps(run_record(with_params, config)))  # a run of this mmnp
    check_resumable(with_params, config)
    with pytest.raises(UsageError, match=r"params 'n=4' -> None"):
        check_resumable(plain, config)
