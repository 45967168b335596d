from __future__ import annotations

import io
import json

import pytest
from PIL import Image
from typer.testing import CliRunner

import mmnp
from mmnp.cli import app

runner = CliRunner()


def test_generate_then_verify_and_show(tmp_path):
    out = tmp_path / "data"
    result = runner.invoke(app, ["generate", "--tasks", "tsp,knapsack", "--difficulty", "easy", "--count", "2",
                                 "--seed", "3", "--out", str(out), "--workers", "1", "--time-limit", "1"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"] == {"tsp": {"easy": 2}, "knapsack": {"easy": 2}}
    inst = next(i for i in mmnp.load_dataset(out) if i.task == "knapsack")
    good = mmnp.get_task("knapsack").format_answer(inst.reference["heuristic"]["solution"])

    result = runner.invoke(app, ["verify", "--data", str(out), "--id", inst.id, "--answer", good, "--json"])
    assert result.exit_code == 0, result.output
    verdict = json.loads(result.stdout)
    assert verdict["feasible"] and verdict["ratio"] == 1.0 and verdict["objective"] == inst.reference_objective

    bad = f"Answer: {list(range(len(inst.data['weights'])))}"
    result = runner.invoke(app, ["verify", "--data", str(out), "--id", inst.id, "--answer", bad])
    assert result.exit_code == 0 and "over_capacity" in result.stdout and "exceeds the capacity" in result.stdout

    answer_file = tmp_path / "answer.txt"
    answer_file.write_text(bad)
    png = tmp_path / "shown.png"
    result = runner.invoke(app, ["show", "--data", str(out), "--id", inst.id, "--answer-file", str(answer_file),
                                 "--out", str(png)])
    assert result.exit_code == 0, result.output
    shown = Image.open(io.BytesIO(png.read_bytes()))
    assert shown.format == "PNG" and shown.height > 768  # picture plus verdict banner
    jpeg = tmp_path / "shown.jpg"  # the suffix names the format the file holds
    assert runner.invoke(app, ["show", "--data", str(out), "--id", inst.id, "--out", str(jpeg)]).exit_code == 0
    assert Image.open(io.BytesIO(jpeg.read_bytes())).format == "JPEG"
    result = runner.invoke(app, ["show", "--data", str(out), "--id", inst.id, "--out", str(tmp_path / "shown.txt")])
    assert result.exit_code == 2 and "Pillow writes no picture format named by '.txt'" in result.output
    assert not (tmp_path / "shown.txt").exists()
    result = runner.invoke(app, ["show", "--data", str(out), "--id", inst.id, "--out", str(tmp_path / "shown.xbm")])
    assert result.exit_code == 2 and "Pillow cannot write this picture as XBM" in result.output  # one bit a pixel


def test_generate_refuses_existing_output_and_bad_input(tmp_path):
    out = tmp_path / "data"
    args = ["generate", "--tasks", "knapsack", "--difficulty", "easy", "--count", "1", "--out", str(out),
            "--no-images", "--no-optimal", "--workers", "1"]
    assert runner.invoke(app, args).exit_code == 0
    result = runner.invoke(app, args[:-4] + ["--seed", "9", "--no-images", "--no-optimal"])
    assert result.exit_code == 2 and "--overwrite" in result.output
    cases = {
        "unknown task 'nope'": ["--tasks", "nope"],
        "unknown difficulty 'brutal'": ["--tasks", "tsp", "--difficulty", "brutal"],
        "expected KEY=VALUE": ["--tasks", "tsp", "--param", "n"],
        "fixes --count": ["--preset", "mm-np-bench-v1", "--count", "3"],
        "unknown preset": ["--preset", "v0"],
    }
    for message, extra in cases.items():
        result = runner.invoke(app, ["generate", "--out", str(tmp_path / "x"), *extra])
        assert result.exit_code == 2, (extra, result.output)
        assert message in result.output, (message, result.output)
        assert "Traceback" not in result.output


def test_tasks_lists_the_registry():
    result = runner.invoke(app, ["tasks", "--json"])
    assert result.exit_code == 0
    rows = json.loads(result.stdout)
    assert [r["name"] for r in rows] == [t.name for t in mmnp.list_tasks()]
    tsp = next(r for r in rows if r["name"] == "tsp")
    assert tsp["category"] == "planning" and tsp["objective"] == "min"
    assert tsp["presets"]["hard"]["n"] == [35, 45]
    assert "missing_city" in tsp["violations"]


def test_verify_errors_are_clear(small_dataset):
    result = runner.invoke(app, ["verify", "--data", str(small_dataset), "--id", "tsp-easy-0000"])
    assert result.exit_code == 2 and "--answer" in result.output
    result = runner.invoke(app, ["verify", "--data", str(small_dataset), "--id", "nope", "--answer", "x"])
    assert result.exit_code == 2 and "no instance 'nope'" in result.output


def test_help_fits_80_columns_and_every_option_is_described():
    import typer.main

    command = typer.main.get_command(app)
    for name in ("generate", "tasks", "verify", "show"):
        sub = command.commands[name]
        options = [p for p in sub.params if p.param_type_name == "option"]  # click's or typer's vendored copy
        assert options, name
        for param in options:
            assert (param.help or "").strip(), (name, param.name)
        result = runner.invoke(app, [name, "--help"], env={"COLUMNS": "80", "TERM": "dumb"}, terminal_width=80)
        assert result.exit_code == 0
        too_wide = [line for line in result.output.splitlines() if len(line) > 80]
        assert not too_wide, (name, too_wide)


def test_tasks_prints_whole_names_when_piped_and_narrow():
    import os
    import subprocess
    import sys

    env = {**os.environ, "COLUMNS": "40"}
    done = subprocess.run([sys.executable, "-m", "mmnp", "tasks"], capture_output=True, text=True, env=env, check=True)
    lines = done.stdout.splitlines()
    assert lines[0].split("\t")[:3] == ["task", "category", "objective"]
    assert [line.split("\t")[0] for line in lines[1:]] == [t.name for t in mmnp.list_tasks()]
    tsp = lines[1].split("\t")
    assert tsp[5] == "n=35-45, grid=100, min_separation=4"


def test_progress_rate_starts_at_the_second_tick():
    from mmnp.cli import Rate

    clock = iter([100.0, 100.0001, 102.0])
    rate = Rate(clock=lambda: next(clock))
    assert rate(1) == ""  # no interval yet: no 800640.5 inst/s
    assert rate(2) == "10000.0 inst/s"  # 1 instance in 0.0001 s, measured from the first tick
    assert rate(5) == "2.0 inst/s"


def test_generate_reports_bad_paths_and_values_in_one_line(tmp_path):
    base = ["generate", "--tasks", "knapsack", "--difficulty", "easy", "--count", "1", "--no-optimal", "--no-images",
            "--workers", "1"]
    a_file = tmp_path / "file"
    a_file.write_text("x")
    cases = [
        (["--out", str(a_file)], 2, "is a file, not a folder"),
        (["--out", str(tmp_path / ("n" * 300))], 1, "File name too long"),
        (["--out", str(a_file / "sub")], 1, "cannot use"),
        (["--out", str(tmp_path / "x"), "--time-limit", "-1"], 2, "--time-limit must be a positive"),
        (["--out", str(tmp_path / "x"), "--param", "n=1000000"], 2, "--param n=1000000 is too large for knapsack"),
    ]
    for extra, code, message in cases:
        result = runner.invoke(app, base + extra)
        assert result.exit_code == code, (extra, result.output)
        assert message in result.output and "Traceback" not in result.output, (extra, result.output)


def test_verify_says_when_the_instance_breaks_the_check(small_dataset, tmp_path):
    """An edge to a vertex that does not exist used to print `infeasible (0 violation(s))`."""
    import shutil

    data = tmp_path / "data"
    shutil.copytree(small_dataset, data)
    shard = data / "vertex_cover" / "easy.jsonl"
    lines = shard.read_text().splitlines()
    record = json.loads(lines[0])
    record["instance"]["edges"][0] = [0, 999]
    lines[0] = json.dumps(record)  # as a JSON tool writes it: other spacing
    shard.write_text("\n".join(lines) + "\n")
    args = ["verify", "--data", str(data), "--id", record["id"], "--answer", "Answer: [1]"]
    result = runner.invoke(app, args)
    assert result.exit_code == 1 and "vertex_cover/easy.jsonl:1: not an instance record as `mmnp generate` writes" \
        in result.output
    result = runner.invoke(app, args + ["--allow-modified"])  # used as edited only while it can be scored: refused
    assert result.exit_code == 1 and "vertex_cover/easy.jsonl:1: vertex_cover-easy-0000: its instance or its " \
        "planted reference is malformed (IndexError)" in " ".join(result.output.split())
    assert "0 violation" not in result.output


BASE_INSTALL = ("import sys\n"
                "for name in ('pyarrow', 'datasets', 'huggingface_hub'):\n"
                "    sys.modules[name] = None  # as on `pip install mmnp` without the hf extra\n"
                "from mmnp.cli import app\n"
                "app()\n")


def test_data_that_is_not_a_dataset_is_one_line(small_dataset, tmp_path):
    """A typo, a file, an unfinished folder, a Hub id that cannot be fetched, an export without the
    hf extra: each one line naming the problem, never a traceback; the Hub is asked only for a Hub id."""
    import os
    import subprocess
    import sys

    pytest.importorskip("pyarrow")
    from mmnp.export import export_dataset

    export = tmp_path / "export"
    export_dataset(small_dataset, export, "parquet")
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "unfinished").mkdir()
    (tmp_path / "unfinished" / ".mmnp-generate.json").write_text("{}")
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}

    def run(data: str, base: bool = False) -> str:
        command = [sys.executable, "-c", BASE_INSTALL] if base else [sys.executable, "-m", "mmnp"]
        done = subprocess.run([*command, "eval", "--model", "solver:heuristic", "--data", data, "--output-path",
                               str(tmp_path / "results")], capture_output=True, text=True, env=env, timeout=300,
                              cwd=tmp_path)
        lines = done.stderr.strip().splitlines()
        assert done.returncode in (1, 2) and len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
        return lines[0]

    assert "--data typo: no such folder" in run("typo") and "hf://owner/name" in run("typo")
    assert "is a file" in run(str(tmp_path / "notes.txt"))
    assert "unfinished generation" in run(str(tmp_path / "unfinished"))
    for hub in ("hf://owner/name", "owner/name"):  # an owner/name that is no folder: the Hub, with the hf extra
        assert "asking the Hub for the dataset owner/name failed" in run(hub)
    assert "no such folder" in run("owner/name", base=True)  # no hf extra: not a Hub id, a typo
    assert "needs the hf extra (no module named 'datasets'): pip install 'mmnp[hf]'" in run(str(export), base=True)
    assert "needs the hf extra" in run("hf://owner/name", base=True)


def test_a_command_whose_extra_is_missing_says_so_in_one_line_before_it_starts(small_dataset, tmp_path):
    """On the base install, export, tiny-model, sft and DISA import their extra's modules deep in the
    work: each is refused first, in one line naming the missing module and the pip command."""
    import os
    import subprocess
    import sys

    missing = {"hf": ("datasets", "pyarrow", "huggingface_hub"), "train": ("torch", "trl")}
    commands = [("hf", "--format parquet", ["export", "--data", str(small_dataset), "--format", "parquet", "--out",
                                            str(tmp_path / "export")]),
                ("train", "tiny models", ["tiny-model", "--out", str(tmp_path / "tiny")]),
                ("train", "SFT", ["sft", "--model", "m", "--tasks", "knapsack", "--out", str(tmp_path / "sft")]),
                ("train", "DISA's estimate", ["disa", "estimate", "--ref", "m", "--proposal", "m", "--out",
                                              str(tmp_path / "est")]),
                ("train", "training", ["train", "--model", "m", "--output-dir", str(tmp_path / "run")])]
    for extra, what, args in commands:
        hide = "".join(f"sys.modules[{name!r}] = None\n" for name in missing[extra])
        done = subprocess.run([sys.executable, "-c", f"import sys\n{hide}from mmnp.cli import app\napp()\n", *args],
                              capture_output=True, text=True, env={**os.environ, "COLUMNS": "300"}, timeout=300,
                              cwd=tmp_path)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1 and "Traceback" not in done.stderr, (args, done.stderr)
        assert f"{what} needs the {extra} extra (no module named '{missing[extra][0]}'): pip install 'mmnp[{extra}]'" \
            in lines[0], lines
    assert not any((tmp_path / name).exists() for name in ("export", "tiny", "sft", "est", "run"))


# -- mmnp train: settings checked before anything loads, resuming only the same run -------------------

@pytest.fixture(scope="module")
def cold_model(tmp_path_factory):
    """A tiny text model with no warm start (seconds to build): enough to train a step."""
    pytest.importorskip("trl", reason="training needs the train extra")
    from mmnp.trainers.tiny_model import write_tiny_model

    return write_tiny_model(tmp_path_factory.mktemp("cold") / "text", warm_steps=0)


def _train(model, out, *extra: str, steps: int = 1, count: int = 2):
    args = ["train", "--model", str(model), "--tasks", "knapsack", "--difficulty", "easy", "--count", str(count),
            "--params", "n=4", "--num-generations", "2", "--per-device-train-batch-size", "2",
            "--max-completion-length", "4", "--report-to", "none", "--max-steps", str(steps), "--output-dir",
            str(out), *extra]
    return runner.invoke(app, args)


def _loss_steps(out) -> list[int]:
    import csv

    with open(out / "metrics.csv", newline="") as f:
        return [int(float(r["step"])) for r in csv.DictReader(f) if r.get("loss")]


def _step_rows(out) -> list[dict]:
    """metrics.csv's rows of the training steps (those with a loss)."""
    import csv

    with open(out / "metrics.csv", newline="") as f:
        return [{k: v for k, v in r.items() if v} for r in csv.DictReader(f) if r.get("loss")]


def _column(out, name: str) -> list[str]:
    import csv

    with open(out / "metrics.csv", newline="") as f:
        return [r[name] for r in csv.DictReader(f)]


def _one_line(result) -> str:
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1, result.output
    return lines[0]


def test_train_resumes_only_a_checkpoint_of_the_same_run(cold_model, tmp_path):
    """Another algorithm, option or model in the folder of a run with checkpoints: one line naming
    the folder, what differs and what to do, exit 2. The same run (its model by another path, more
    steps) resumes, training only the missing step."""
    out = tmp_path / "run"
    first = _train(cold_model, out)
    assert first.exit_code == 0, first.output
    for extra, words in ((["--algo", "dmpo"], ["algo 'grpo' -> 'dmpo'"]),
                         (["--beta", "0.1"], ["beta 0.0 -> 0.1"]),
                         (["--algo", "progrpo", "--progrpo-alpha", "0.3"], ["algo", "progrpo_alpha"]),
                         (["--seed", "7"], ["seed 1 -> 7"])):
        line = _one_line(_train(cold_model, out, *extra, steps=2))
        assert str(out) in line and "--output-dir" in line and all(w in line for w in words), line
    elsewhere = tmp_path / "copy"
    (elsewhere).mkdir()
    for f in cold_model.iterdir():
        (elsewhere / f.name).write_bytes(f.read_bytes())
    line = _one_line(_train(elsewhere, out, steps=2))  # equal files, another folder: another model
    assert "model" in line and str(elsewhere) in line, line
    link = tmp_path / "link"
    link.symlink_to(cold_model)
    again = _train(link, out, "--save-steps", "5", steps=2)  # how often it saves may change
    assert again.exit_code == 0, again.output
    assert _loss_steps(out) == [1, 2]
    assert all(step.isdigit() for step in _column(out, "step")), "steps stay integers through a resume"
    assert json.loads((out / "mmnp_run.json").read_text())["algo"] == "grpo"


def test_a_model_or_dataset_rebuilt_under_the_same_path_is_another_run(cold_model, tmp_path):
    """The run record holds the model's files and the dataset's hashes, not only their paths."""
    import shutil

    from mmnp.trainers.tiny_model import write_tiny_model

    model, data = tmp_path / "model", tmp_path / "data"
    shutil.copytree(cold_model, model)
    generate = ["generate", "--tasks", "knapsack", "--difficulty", "easy", "--count", "2", "--param", "n=4",
                "--no-optimal", "--no-images", "--out", str(data)]
    on_data = ["train", "--model", str(model), "--data", str(data), "--num-generations", "2",
               "--per-device-train-batch-size", "2", "--max-completion-length", "4", "--report-to", "none",
               "--output-dir", str(tmp_path / "a")]
    assert runner.invoke(app, [*generate, "--seed", "11"]).exit_code == 0
    trained = runner.invoke(app, [*on_data, "--max-steps", "1"])
    assert trained.exit_code == 0, trained.output
    assert runner.invoke(app, [*generate, "--seed", "12", "--overwrite"]).exit_code == 0
    line = _one_line(runner.invoke(app, [*on_data, "--max-steps", "2"]))
    assert "data_content" in line and str(tmp_path / "a") in line, line
    assert _train(model, tmp_path / "b").exit_code == 0
    write_tiny_model(tmp_path / "other", seed=7)
    shutil.copy(tmp_path / "other" / "model.safetensors", model / "model.safetensors")
    line = _one_line(_train(model, tmp_path / "b", steps=2))
    assert "model_files" in line, line


def test_a_resumed_run_logs_its_checkpoints_numbers_not_an_edited_metrics_csv(cold_model, tmp_path):
    """metrics.csv is rewritten on each log and can be edited between runs: a resumed run's rows
    before its checkpoint come from the checkpoint's own record, so an edited loss and a row
    appended by hand are gone, and the steps the weights have keep their logged numbers."""
    out = tmp_path / "run"
    assert _train(cold_model, out, "--save-steps", "2", "--logging-steps", "1", steps=2).exit_code == 0
    logged = _step_rows(out)
    text = (out / "metrics.csv").read_text().splitlines()
    header = text[0].split(",")
    edited = [line.split(",") for line in text[1:]]
    for row in edited:
        if row[header.index("loss")]:
            row[header.index("loss")] = "123.0"
    forged = dict.fromkeys(header, "")
    forged.update(step="7", loss="0.5", reward="1.0")
    (out / "metrics.csv").write_text("\n".join([",".join(header), *map(",".join, edited),
                                                 ",".join(forged[k] for k in header)]) + "\n")
    assert _train(cold_model, out, "--save-steps", "2", "--logging-steps", "1", steps=3).exit_code == 0
    assert _loss_steps(out) == [1, 2, 3]
    assert _step_rows(out)[:2] == logged
    assert "123.0" not in (out / "metrics.csv").read_text()


def test_a_finished_run_rerun_with_fewer_steps_keeps_only_their_rows(cold_model, tmp_path):
    import shutil

    out = tmp_path / "run"
    assert _train(cold_model, out, "--save-steps", "2", "--logging-steps", "1", steps=3).exit_code == 0
    assert _loss_steps(out) == [1, 2, 3]
    shutil.rmtree(out / "checkpoint-3")  # as if killed after logging step 3, before its checkpoint
    again = _train(cold_model, out, "--save-steps", "2", "--logging-steps", "1", steps=2)
    assert again.exit_code == 0, again.output
    assert _loss_steps(out) == [1, 2]  # the weights are checkpoint-2's: step 3's row is not theirs


@pytest.mark.parametrize("count", [2, 4])
def test_rerunning_a_finished_run_keeps_its_metrics_and_weights(cold_model, tmp_path, count):
    """A run whose last checkpoint reached --max-steps trains nothing more: metrics.csv keeps
    every step's row and the saved weights are the run's own. With 2 prompts (one a step) the
    checkpoint closes the data's epoch, and transformers trains nothing, but its end-of-training
    log dropped the last step's rows; with 4 it is mid-epoch, and transformers trains one step
    past --max-steps."""
    out = tmp_path / "run"
    assert _train(cold_model, out, steps=2, count=count).exit_code == 0
    weights = (out / "model.safetensors").read_bytes()
    rows = (out / "metrics.csv").read_text()
    again = _train(cold_model, out, steps=2, count=count)
    assert again.exit_code == 0, again.output
    assert _loss_steps(out) == [1, 2]
    assert (out / "metrics.csv").read_text() == rows  # its end-of-training summary row included
    assert (out / "model.safetensors").read_bytes() == weights
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-2"]  # no step past --max-steps


def test_train_loss_type_and_group_divisibility_are_one_line_before_the_model(tmp_path):
    pytest.importorskip("trl", reason="training needs the train extra")
    from mmnp.trainers.spec import LOSS_TYPES

    missing = str(tmp_path / "no-such-model")
    line = _one_line(_train(missing, tmp_path / "a", "--loss-type", "foo"))
    assert "--loss-type 'foo'" in line and all(t in line for t in LOSS_TYPES) and "no-such-model" not in line
    line = _one_line(runner.invoke(app, ["train", "--model", missing, "--num-generations", "3",
                                         "--per-device-train-batch-size", "8", "--output-dir", str(tmp_path / "b")]))
    assert "--num-generations 3" in line and "8" in line and "no-such-model" not in line, line
    line = _one_line(runner.invoke(app, ["train", "--model", missing, "--algo", "progrpo", "--progrpo-fraction", "2",
                                         "--output-dir", str(tmp_path / "c")]))
    assert "--progrpo-fraction 2.0: must be in (0, 1]" in line and "no-such-model" not in line, line


@pytest.mark.parametrize("batch, steps, accumulation, generations", [
    (8, None, 1, 8), (8, None, 1, 3), (8, None, 1, 4), (2, 2, 1, 4), (2, None, 2, 4), (2, None, 3, 4), (6, None, 1, 4),
    (4, 3, 1, 6), (3, None, 1, 2)])
def test_train_group_divisibility_is_trls_rule(batch, steps, accumulation, generations, tmp_path):
    """validate() refuses exactly the batch settings TRL's GRPOConfig refuses."""
    pytest.importorskip("trl", reason="training needs the train extra")
    from trl import GRPOConfig

    from mmnp.errors import UsageError
    from mmnp.trainers.spec import TrainSpec

    settings = dict(per_device_train_batch_size=batch, steps_per_generation=steps,
                    gradient_accumulation_steps=accumulation, num_generations=generations)
    try:
        GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none", **settings)
        trl_accepts = True
    except ValueError as e:
        assert "num_generations" in str(e)
        trl_accepts = False
    spec = TrainSpec(model="m", **settings)
    if trl_accepts:
        spec.validate()
    else:
        with pytest.raises(UsageError, match=f"--num-generations {generations}"):
            spec.validate()


def test_loss_types_are_those_trl_names():
    """TRL keeps its loss types in GRPOConfig.loss_type's help only; mmnp's list must match it."""
    pytest.importorskip("trl", reason="training needs the train extra")
    import dataclasses
    import re

    from trl import GRPOConfig

    from mmnp.trainers.spec import LOSS_TYPES

    help_text = next(f for f in dataclasses.fields(GRPOConfig) if f.name == "loss_type").metadata["help"]
    named = re.search(r"Supported values are (.*?)\. ", help_text).group(1)
    assert set(re.findall(r"'(\w+)'", named)) == set(LOSS_TYPES)
