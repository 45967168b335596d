"""Registry-driven conformance for training algorithms: every registered algorithm (a file of
trainers/algorithms/, or a plug-in installed beside mmnp in the group `mmnp.algorithms`) is held
to the same checks, as tasks are by test_conformance.py and backends by test_backends.py. How it
runs on a CPU comes from its trainer's `self_test` (`mmnp.trainers.base.SelfTest`): the
modalities it trains on, its reward, and what it needs prepared (DISA: an anchor).

Per algorithm and modality, `mmnp train` on the tiny model for two steps, then:
- it trains: every step logs a finite loss, the policy receives a gradient, the saved weights
  differ from the starting model's;
- it logs its metrics: mmnp's (SR, QR, distinct feasible solutions per group, in range) and its
  own (`display_metrics`, finite at every step: a plain GRPO logs none of them);
- its checkpoint evaluates: `mmnp eval --model hf:DIR` scores it with no failed request.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

pytest.importorskip("trl", reason="training needs the train extra")

from typer.testing import CliRunner  # noqa: E402

from mmnp.cli import app  # noqa: E402
from mmnp.trainers.algorithms import algorithm_names, get_algorithm  # noqa: E402
from mmnp.trainers.base import SelfTest  # noqa: E402

NAMES = algorithm_names()  # read at collection: a new file or an installed plug-in gets its own tests
STEPS, GENERATIONS = 2, 4


def train_and_evaluate(name: str, modality: str, model: Path, folder: Path) -> list[dict]:
    """Train `name` for STEPS steps as its `self_test` says, check the run and its checkpoint, and
    return metrics.csv's step rows (a plug-in's own tests may look further)."""
    trainer_class = get_algorithm(name)
    declared = getattr(trainer_class, "self_test", None)
    assert isinstance(declared, SelfTest), f"{name}: `self_test` must be a mmnp.trainers.base.SelfTest"
    if declared.skip:
        pytest.skip(f"{name}: {declared.skip}")
    if modality not in declared.modalities:
        pytest.skip(f"{name} trains on {', '.join(declared.modalities)} only (its self_test)")
    options = declared.prepare(model, folder / "prepared") if declared.prepare else {}
    out = folder / "run"
    args = ["train", "--model", str(model), "--algo", name, "--modality", modality, "--tasks",
            "knapsack,subset_sum,max_clique", "--difficulty", "easy", "--count", "4", "--max-steps", str(STEPS),
            "--num-generations", str(GENERATIONS), "--per-device-train-batch-size", str(GENERATIONS),
            "--max-completion-length", "24", "--learning-rate", "1e-3", "--reward", declared.reward,
            "--report-to", "none", "--save-steps", "1000", "--output-dir", str(out), "--image-size", "512"]
    args += [a for key, value in options.items() for a in (f"--{key.replace('_', '-')}", str(value))]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    with open(out / "metrics.csv") as f:
        rows = [row for row in csv.DictReader(f) if row.get("loss")]
    assert len(rows) == STEPS
    _check_trained(rows, model, out)
    for row in rows:
        assert 0 <= float(row["mmnp/sr"]) <= 1 and float(row["mmnp/qr"]) >= 0
        assert 0 <= float(row["mmnp/distinct_feasible"]) <= GENERATIONS
        for metric in trainer_class.display_metrics:
            assert math.isfinite(float(row.get(metric) or "nan")), f"{name} did not log {metric} at step {row['step']}"
    assert json.loads((out / "mmnp_train.json").read_text())["algo"] == name
    _check_evaluates(out, modality, folder / "eval")
    return rows


def _check_trained(rows: list[dict], start: Path, out: Path) -> None:
    from safetensors.torch import load_file

    assert all(math.isfinite(float(r["loss"])) for r in rows)
    assert any(float(r["grad_norm"]) > 0 for r in rows), "the policy must receive a gradient"
    before, after = load_file(next(start.glob("*.safetensors"))), load_file(out / "model.safetensors")
    assert any(not after[k].equal(before[k]) for k in before if k in after), "the saved weights are the start's"


def _check_evaluates(checkpoint: Path, modality: str, out: Path) -> None:
    result = CliRunner().invoke(app, ["eval", "--model", f"hf:{checkpoint}", "--tasks", "knapsack", "--difficulty",
                                      "easy", "--count", "2", "--modality", modality, "--max-tokens", "16",
                                      "--output-path", str(out)])
    assert result.exit_code == 0, result.output
    metrics = json.loads(next(out.glob("*/results.json")).read_text())["metrics"][modality]["overall"]
    assert metrics["fail_rate"] == 0.0 and metrics["instances"] == 2


@pytest.mark.parametrize("modality", ["text", "image"])
@pytest.mark.parametrize("name", NAMES)
def test_trains_logs_its_metrics_and_its_checkpoint_evaluates(name, modality, request, tmp_path):
    model = request.getfixturevalue("tiny_text" if modality == "text" else "tiny_vlm")
    train_and_evaluate(name, modality, model, tmp_path)
