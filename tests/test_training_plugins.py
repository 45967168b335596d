"""Training plug-ins through entry points: an algorithm (group `mmnp.algorithms`) and a reward
(`mmnp.rewards`) from a separate package are named in `mmnp train --help` without being imported,
show their own options with `--algo NAME --help`, train and evaluate through the conformance
suite mmnp's own algorithms pass, and score in verl; a broken one breaks only its own use, with
one line naming it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from training_plugin_site import broken_training_site, toy_training_site
from typer.testing import CliRunner

import mmnp
from mmnp.cli import app
from mmnp.plugins import PluginError

runner = CliRunner()
PLUGIN_MODULES = ("mmnp_toy_algorithm", "mmnp_toy_reward", "mmnp_broken_training")


@pytest.fixture
def sites(tmp_path, monkeypatch) -> tuple[Path, Path]:
    """The working and the broken training plug-ins, on sys.path for this test only. Their modules
    stay imported afterwards, as in a user's process: the registries keep the classes they loaded,
    and a checkpoint pickles the plug-in's config class by its module's name."""
    good, bad = toy_training_site(tmp_path / "good"), broken_training_site(tmp_path / "bad")
    for site in (good, bad):
        monkeypatch.syspath_prepend(str(site))
    return good, bad


def _flat(text: str) -> str:
    return " ".join(text.replace("│", " ").split())


def test_help_names_plug_ins_without_importing_them_or_torch(tmp_path):
    """In a fresh process: `mmnp train --help` lists the plug-in algorithm and rewards (with their
    distribution) from metadata alone: no plug-in module, no torch, no TRL is imported."""
    good, bad = toy_training_site(tmp_path / "good"), broken_training_site(tmp_path / "bad")
    code = ("import json, sys; from typer.testing import CliRunner; from mmnp.cli import app; "
            "r = CliRunner().invoke(app, ['train', '--help'], terminal_width=400); "
            "print(json.dumps([r.exit_code, r.output, sorted(sys.modules)]))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(good), str(bad)])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    exit_code, output, modules = json.loads(done.stdout.splitlines()[-1])
    text = _flat(output)
    assert exit_code == 0, output
    assert "The algorithm: grpo, disa, dmpo, flowrl, progrpo, shaky, toy" in text
    assert "beat (plug-in mmnp-toy-training 0.3)" in text and "shaky_reward (plug-in mmnp-broken-training 0.4)" in text
    assert "quality (the Quality Ratio" in text  # a built-in's description comes from its docstring
    assert "Plug-in algorithms: shaky (plug-in mmnp-broken-training 0.4), toy (plug-in mmnp-toy-training 0.3)" in text
    assert not set(modules) & {*PLUGIN_MODULES, "torch", "trl", "transformers"}


def test_algo_help_shows_the_plug_in_s_own_options(sites):
    shown = runner.invoke(app, ["train", "--algo", "toy", "--help"], terminal_width=300)
    assert shown.exit_code == 0, shown.output
    text = _flat(shown.output)
    assert "Options of --algo toy" in text and "--toy-weight" in text and "Toy: weight of the likelihood term" in text
    assert "DMPO: weight of L_DM" not in text  # another algorithm's option belongs to its own --algo help
    foreign = runner.invoke(app, ["train", "--algo", "toy", "--model", "x", "--dmpo-lambda", "1"])
    assert foreign.exit_code == 2 and "not a setting of --algo toy (its own: --toy-weight)" in _flat(foreign.output)


def test_a_plug_in_reward_scores_in_trl_and_verl_form(sites):
    from mmnp.trainers.rewards import get_reward, record_payload
    from mmnp.trainers.rewards.verl import compute_score, to_verl_row

    task = mmnp.get_task("knapsack")
    inst = task.generate("easy", seed=5)
    good = task.format_answer(inst.reference["heuristic"]["solution"])
    payload = record_payload(inst)
    logged = {}
    beat = get_reward("beat")
    assert beat([None] * 2, [good, "no answer"], [payload] * 2,
                log_extra=lambda column, values: logged.setdefault(column, values)) == [1.0, 0.0]
    assert logged["mmnp/feasible"] == [1.0, 0.0]  # its verdicts reach the trainer's SR/QR metrics
    row = to_verl_row(inst, reward="beat")
    assert compute_score(row["data_source"], good, row["reward_model"]["ground_truth"], row["extra_info"]) == 1.0
    with pytest.raises(PluginError) as caught:
        get_reward("lonely")
    line = str(caught.value)
    assert "\n" not in line and "reward 'lonely' (plug-in mmnp-toy-training 0.3" in line
    assert "is not usable: TypeError: a reward takes (prompts, completions, mmnp_instance, **columns)" in line


def test_a_broken_plug_in_breaks_only_its_own_use(sites):
    for flag, name in (("--algo", "shaky"), ("--reward", "shaky_reward")):
        used = runner.invoke(app, ["train", flag, name, "--model", "x", "--output-dir", "unused"])
        lines = [line for line in used.output.splitlines() if line.strip()]
        assert used.exit_code == 1 and len(lines) == 1, used.output
        assert f"'{name}' (plug-in mmnp-broken-training 0.4" in lines[0] and "RuntimeError" in lines[0]
    helped = runner.invoke(app, ["train", "--algo", "shaky", "--help"], terminal_width=300)
    assert helped.exit_code == 0 and "algorithm 'shaky' (plug-in mmnp-broken-training 0.4" in _flat(helped.output)
    for args in (["train", "--help"], ["train", "--algo", "dmpo", "--help"], ["tasks"]):
        assert runner.invoke(app, args).exit_code == 0, args
    from mmnp.trainers.spec import TrainSpec

    spec = TrainSpec.merged(None, {"model": "x", "algo": "dmpo", "dmpo_lambda": 0.5, "reward": "beat"})
    assert (spec.options, spec.reward) == ({"dmpo_lambda": 0.5}, "beat")


def test_the_conformance_suite_runs_a_plug_in_algorithm_with_no_test_edit(sites, tiny_text, tmp_path):
    """tests/test_algorithm_conformance.py is parametrised over the registry: installed beside
    mmnp, the plug-in gets its own cases, and passes them (here with its plug-in reward)."""
    good, _ = sites
    collected = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                                "-o", "addopts=", str(Path(__file__).parent / "test_algorithm_conformance.py")],
                               capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(good)}, timeout=300)
    assert "test_trains_logs_its_metrics_and_its_checkpoint_evaluates[toy-text]" in collected.stdout, collected.stdout
    from test_algorithm_conformance import train_and_evaluate

    rows = train_and_evaluate("toy", "text", tiny_text, tmp_path)
    assert all("rewards/beat_reward/mean" in r for r in rows)  # trained on the plug-in reward
