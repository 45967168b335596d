"""`mmnp train` end to end on tiny local models: every algorithm, text and vision-language,
a few steps each, then `mmnp eval` scores the checkpoint."""

from __future__ import annotations

import csv
import json
import math

import pytest

pytest.importorskip("trl", reason="training needs the train extra")

from typer.testing import CliRunner  # noqa: E402

from mmnp.cli import app  # noqa: E402

ALGORITHM_METRICS = {"grpo": None, "dmpo": "dmpo/l_dm", "progrpo": "progrpo/confidence_gap", "flowrl": "flowrl/log_z"}


def _train(model, out, algo, modality, steps=3):
    args = ["train", "--model", str(model), "--algo", algo, "--modality", modality,
            "--tasks", "knapsack,subset_sum,max_clique", "--difficulty", "easy", "--count", "4", "--max-steps",
            str(steps), "--num-generations", "4", "--per-device-train-batch-size", "4", "--max-completion-length",
            "24", "--learning-rate", "1e-3", "--reward", "shaped", "--report-to", "none", "--save-steps", "1000",
            "--output-dir", str(out), "--image-size", "224"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    with open(out / "metrics.csv") as f:
        return [row for row in csv.DictReader(f) if row.get("loss")]


@pytest.mark.parametrize("modality", ["text", "image"])
@pytest.mark.parametrize("algo", list(ALGORITHM_METRICS))
def test_train_then_eval(algo, modality, tiny_text, tiny_vlm, tmp_path):
    model = tiny_text if modality == "text" else tiny_vlm
    rows = _train(model, tmp_path / "run", algo, modality)
    assert len(rows) == 3
    assert all(math.isfinite(float(r["loss"])) for r in rows)
    assert any(float(r["grad_norm"]) > 0 for r in rows), "the policy must receive a gradient"
    assert all(0 <= float(r["mmnp/sr"]) <= 1 and float(r["mmnp/qr"]) >= 0 for r in rows)
    assert all(0 <= float(r["mmnp/distinct_feasible"]) <= 4 for r in rows)
    if ALGORITHM_METRICS[algo]:
        assert all(math.isfinite(float(r[ALGORITHM_METRICS[algo]])) for r in rows)
    saved = json.loads((tmp_path / "run" / "mmnp_train.json").read_text())
    assert saved["algo"] == algo

    result = CliRunner().invoke(app, ["eval", "--model", f"hf:{tmp_path / 'run'}", "--tasks", "knapsack",
                                      "--difficulty", "easy", "--count", "2", "--modality", modality,
                                      "--max-tokens", "16", "--output-path", str(tmp_path / "eval")])
    assert result.exit_code == 0, result.output
    results = json.loads(next((tmp_path / "eval").glob("*/results.json")).read_text())
    assert results["metrics"][modality]["overall"]["fail_rate"] == 0.0


def test_image_training_needs_a_vision_model(tiny_text, tmp_path):
    result = CliRunner().invoke(app, ["train", "--model", str(tiny_text), "--modality", "image", "--output-dir",
                                      str(tmp_path), "--report-to", "none"])
    assert result.exit_code == 2 and "no vision tower" in result.output
