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
    assert Image.open(io.BytesIO(png.read_bytes())).height > 768  # picture plus verdict banner


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
    import click
    import typer.main

    command = typer.main.get_command(app)
    for name in ("generate", "tasks", "verify", "show"):
        sub = command.commands[name]
        for param in sub.params:
            if isinstance(param, click.Option):
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
    result = runner.invoke(app, args + ["--allow-modified"])
    assert result.exit_code == 1 and "verifier failed on this instance (IndexError" in result.output
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
    assert "needs the hf extra: pip install 'mmnp[hf]'" in run(str(export), base=True)
    assert "needs the hf extra" in run("hf://owner/name", base=True)
