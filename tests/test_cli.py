from __future__ import annotations

import io
import json

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
