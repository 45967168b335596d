"""DISA: the importance-sampling estimator on an explicit toy, the stationarity of the
anchored loss at the target, and the whole pipeline (estimate, fit, train) on a tiny model."""

from __future__ import annotations

import csv
import json
import math

import pytest

torch = pytest.importorskip("torch", reason="DISA needs the train extra")

pytest.importorskip("trl", reason="DISA needs the train extra")

from mmnp.trainers.algorithms.disa import disa_loss  # noqa: E402
from mmnp.trainers.disa.estimate import log_z_importance_sampling  # noqa: E402

PI_REF = torch.tensor([0.4, 0.3, 0.15, 0.1, 0.05], dtype=torch.float64)
PROPOSAL = torch.tensor([0.1, 0.15, 0.25, 0.3, 0.2], dtype=torch.float64)  # a teacher favouring good answers
REWARD = torch.tensor([0.0, 0.2, 0.5, 0.8, 1.0], dtype=torch.float64)
BETA = 3.0
LOG_Z = torch.log((PI_REF * torch.exp(BETA * REWARD)).sum()).item()  # analytic


def _bias(n: int, repeats: int = 200_000, seed: int = 0) -> float:
    generator = torch.Generator().manual_seed(seed)
    draws = torch.multinomial(PROPOSAL.expand(repeats, -1), n, replacement=True, generator=generator)
    estimates = log_z_importance_sampling(PI_REF.log()[draws], PROPOSAL.log()[draws], REWARD[draws], BETA)
    return (estimates.mean() - LOG_Z).item()


def test_is_estimator_converges_with_bias_shrinking_like_one_over_n():
    """E[log Z_IS] - log Z ~ -cv^2 / (2N) (delta method; cv the weights' coefficient of variation)."""
    weights = PI_REF / PROPOSAL * torch.exp(BETA * REWARD)
    mean = (PROPOSAL * weights).sum()
    predicted = -((PROPOSAL * (weights - mean) ** 2).sum() / mean**2 / 2).item()  # N * bias, = -0.0221
    biases = {n: _bias(n) for n in (2, 4, 8, 16, 32)}
    # measured N * bias: 2: -0.0228, 4: -0.0219, 8: -0.0211, 16: -0.0225, 32: -0.0233
    assert all(abs(biases[a]) > abs(biases[b]) for a, b in ((2, 4), (4, 8), (8, 16), (16, 32)))
    for n, bias in biases.items():
        assert 0.75 < n * bias / predicted < 1.35, (n, bias)
    assert abs(biases[32]) < 1e-3


def test_exact_anchor_makes_the_target_stationary():
    """With g = log Z, the expected anchored loss under on-policy sampling has zero gradient
    at pi_theta = pi~ = pi_ref exp(beta r) / Z, and a non-zero one elsewhere."""
    target_logits = (PI_REF.log() + BETA * REWARD).clone()

    def grad_at(logits):
        theta = logits.clone().requires_grad_(True)
        logp = torch.log_softmax(theta, -1)
        weight = logp.exp().detach() * len(logp)  # expectation over answers drawn from pi_theta
        loss, _ = disa_loss(torch.full_like(logp, LOG_Z), logp, PI_REF.log(), REWARD, weight, BETA)
        loss.backward()
        return theta.grad

    assert grad_at(target_logits).abs().max().item() < 1e-12
    assert grad_at(target_logits + torch.tensor([0.3, 0, 0, 0, -0.3], dtype=torch.float64)).abs().max().item() > 1e-3
    # a wrong anchor (prompt-only bias) shifts the loss but the target stays stationary in direction:
    # the gradient is a multiple of the constant vector's projection, i.e. zero after softmax centring
    theta = target_logits.clone().requires_grad_(True)
    logp = torch.log_softmax(theta, -1)
    loss, _ = disa_loss(torch.full_like(logp, LOG_Z + 0.5), logp, PI_REF.log(), REWARD, logp.exp().detach() * 5, BETA)
    loss.backward()
    assert theta.grad.abs().max().item() < 1e-12


def test_pipeline_estimate_fit_train(tiny_text, tmp_path):
    pytest.importorskip("trl")
    from typer.testing import CliRunner

    from mmnp.cli import app
    from mmnp.trainers.disa.estimate import EstimateSpec, estimate

    spec = EstimateSpec(ref=str(tiny_text), proposal=str(tiny_text), tasks="knapsack,subset_sum,max_clique",
                        difficulty="easy", prompts=9, samples=4, max_tokens=24, beta=15.0)
    straight = tmp_path / "straight"
    estimate(spec, straight)

    def crash(done, total):
        if done == 4:
            raise KeyboardInterrupt

    resumed = tmp_path / "resumed"
    with pytest.raises(KeyboardInterrupt):
        estimate(spec, resumed, progress=crash)
    estimate(spec, resumed)
    rows = [json.loads(line) for line in (resumed / "labels.jsonl").read_text().splitlines()]
    assert len(rows) == len({r["id"] for r in rows}) == 9
    reference = {json.loads(line)["id"]: json.loads(line)["log_z"] for line in (straight / "labels.jsonl").read_text().splitlines()}
    assert {r["id"]: r["log_z"] for r in rows} == pytest.approx(reference)
    for r in rows:
        assert 1.0 <= r["ess"] <= 4.0 + 1e-9 and math.isfinite(r["log_z"])

    runner = CliRunner()
    result = runner.invoke(app, ["disa", "fit", str(resumed), "--epochs", "200"])
    assert result.exit_code == 0, result.output
    config = json.loads((resumed / "regressor.json").read_text())
    assert math.isfinite(config["held_out_mse"]) and config["n_held_out"] >= 1
    assert (resumed / "calibration.png").read_bytes().startswith(b"\x89PNG")

    args = ["train", "--algo", "disa", "--logz", str(resumed), "--model", str(tiny_text), "--tasks", "knapsack,subset_sum",
            "--difficulty", "easy", "--count", "4", "--max-steps", "2", "--num-generations", "4",
            "--per-device-train-batch-size", "4", "--max-completion-length", "24", "--report-to", "none",
            "--learning-rate", "1e-3", "--output-dir", str(tmp_path / "run")]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    with open(tmp_path / "run" / "metrics.csv") as f:
        logged = [r for r in csv.DictReader(f) if r.get("loss")]
    assert len(logged) == 2
    for r in logged:
        assert math.isfinite(float(r["loss"])) and float(r["grad_norm"]) > 0
        assert math.isfinite(float(r["disa/residual"])) and math.isfinite(float(r["disa/anchor"]))

    result = runner.invoke(app, args[:-2] + ["--output-dir", str(tmp_path / "bad"), "--reward", "feasible"])
    assert result.exit_code == 2 and "--reward quality" in result.output
    result = runner.invoke(app, ["disa", "fit", str(tmp_path / "nothing")])
    assert result.exit_code == 2


def test_vllm_proposals_need_vllm(tiny_text, tmp_path):
    import importlib.util

    from mmnp.trainers.disa.estimate import EstimateSpec, estimate

    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed here")
    spec = EstimateSpec(ref=str(tiny_text), proposal=str(tiny_text), prompts=1, samples=2, engine="vllm")
    with pytest.raises(ValueError, match="vLLM is not installed"):
        estimate(spec, tmp_path)
    with pytest.raises(ValueError, match="--engine 'tgi'"):
        estimate(EstimateSpec(ref="x", proposal="x", engine="tgi"), tmp_path / "other")


@pytest.mark.parametrize("bad, flag", [({"beta": -15.0}, "--beta -15.0"), ({"beta": float("nan")}, "--beta nan"),
                                       ({"beta": float("inf")}, "--beta inf"), ({"max_tokens": 0}, "--max-tokens 0"),
                                       ({"samples": 0}, "--samples 0"), ({"prompts": 0}, "--prompts 0")])
def test_estimate_settings_out_of_range_are_one_line_before_any_model_loads(bad, flag, tmp_path):
    from mmnp.errors import UsageError
    from mmnp.trainers.disa.estimate import EstimateSpec, estimate

    EstimateSpec(ref="x", proposal="x", beta=0.0).validate()  # beta 0: the reference itself, a valid target
    with pytest.raises(UsageError) as caught:
        estimate(EstimateSpec(ref=str(tmp_path / "no-such-model"), proposal="x", **bad), tmp_path / "out")
    assert str(caught.value).startswith(flag) and "\n" not in str(caught.value)
    assert not (tmp_path / "out").exists(), "refused before anything is written or loaded"


def _anchor_config(folder, estimate: dict):
    """An anchor folder's regressor.json, all the reference check reads."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "regressor.json").write_text(json.dumps({"estimate": estimate}))
    return folder


def test_disa_trains_only_the_reference_model_its_anchor_was_estimated_with(tmp_path, monkeypatch):
    """The same folder by any path (relative, absolute, through a link) passes; another folder,
    or a hub id where a folder was used, is one line naming the reference; hub ids by name."""
    from mmnp.errors import UsageError
    from mmnp.trainers.algorithms.disa import check_reference

    ref = tmp_path / "models" / "ref"
    ref.mkdir(parents=True)
    other = tmp_path / "models" / "other"
    other.mkdir()
    (tmp_path / "link").symlink_to(ref)
    anchor = _anchor_config(tmp_path / "logz", {"ref": str(ref)})
    monkeypatch.chdir(tmp_path)
    for same in (str(ref), "models/ref", "./models/../models/ref", "link", str(tmp_path / "link") + "/"):
        check_reference(same, str(anchor))
    for wrong in (str(other), "models/other", "Qwen/Qwen2.5-0.5B"):
        with pytest.raises(UsageError) as caught:
            check_reference(wrong, str(anchor))
        message = str(caught.value)
        assert "\n" not in message and str(ref) in message and wrong in message, message
    hub = _anchor_config(tmp_path / "hub", {"ref": "org/model"})
    check_reference("org/model", str(hub))
    for wrong in ("org/other", str(ref)):
        with pytest.raises(UsageError, match="org/model"):
            check_reference(wrong, str(hub))
    with pytest.raises(UsageError, match="mmnp disa fit"):
        check_reference(str(ref), str(tmp_path / "unfitted"))
    unnamed = _anchor_config(tmp_path / "unnamed", {"reward": "quality"})  # not from `mmnp disa estimate`
    with pytest.raises(UsageError, match="names no reference model"):
        check_reference(str(other), str(unnamed))


def test_estimate_records_its_reference_folder_so_a_relative_path_still_names_it(tmp_path, monkeypatch):
    """`--ref` given relative to where `disa estimate` ran: estimate.json keeps the folder it
    resolved to, and training from elsewhere, by an absolute path, is checked against it."""
    from mmnp.errors import UsageError
    from mmnp.trainers.algorithms.disa import check_reference
    from mmnp.trainers.disa.estimate import EstimateSpec, estimate
    from mmnp.trainers.tiny_model import write_tiny_model

    model = write_tiny_model(tmp_path / "work" / "tiny", warm_steps=0)
    monkeypatch.chdir(tmp_path / "work")
    estimate(EstimateSpec(ref="tiny", proposal="tiny", tasks="knapsack", difficulty="easy", prompts=1, samples=1,
                          max_tokens=2), tmp_path / "logz")
    recorded = json.loads((tmp_path / "logz" / "estimate.json").read_text())
    assert recorded["ref"] == "tiny" and recorded["ref_path"] == str(model.resolve())
    estimate(EstimateSpec(ref="tiny", proposal="tiny", tasks="knapsack", difficulty="easy", prompts=1, samples=1,
                          max_tokens=2), tmp_path / "logz")  # the record does not stop it resuming
    anchor = _anchor_config(tmp_path / "anchor", recorded)
    monkeypatch.chdir(tmp_path)  # "tiny" names nothing here
    check_reference(str(model), str(anchor))
    estimate(EstimateSpec(ref=str(model), proposal=str(model), tasks="knapsack", difficulty="easy", prompts=1,
                          samples=1, max_tokens=2), tmp_path / "logz")  # the same models by another path: resumes
    with pytest.raises(UsageError):
        check_reference(str(tmp_path), str(anchor))
    (tmp_path / "elsewhere").mkdir()  # "./tiny" here is another model: the labels would mix two references
    write_tiny_model(tmp_path / "elsewhere" / "tiny", seed=3, warm_steps=0)
    monkeypatch.chdir(tmp_path / "elsewhere")
    with pytest.raises(UsageError, match="holds an estimate with other settings.*ref_weights"):
        estimate(EstimateSpec(ref="tiny", proposal="tiny", tasks="knapsack", difficulty="easy", prompts=1, samples=1,
                              max_tokens=2), tmp_path / "logz")
    with pytest.raises(UsageError, match=f"estimated with the reference model '{model.resolve()}'"):
        check_reference("tiny", str(anchor))
    copy = tmp_path / "copy"  # the reference's very files elsewhere: the same model
    __import__("shutil").copytree(model, copy)
    check_reference(str(copy), str(anchor))
    (model / "model.safetensors").write_bytes((copy.parent / "elsewhere" / "tiny" / "model.safetensors").read_bytes())
    with pytest.raises(UsageError, match="its files have changed since"):
        check_reference(str(model), str(anchor))


def test_disa_trains_from_its_reference_by_any_path_and_refuses_another_model(tiny_text_cold, tmp_path):
    """Through `mmnp train`, with an anchor estimated and fitted on one tiny model: another model
    (same architecture, other weights) is one line naming the reference, exit 2; the reference
    itself, through a link, trains."""
    from typer.testing import CliRunner

    from mmnp.cli import app
    from mmnp.trainers.disa.anchor import fit
    from mmnp.trainers.disa.estimate import EstimateSpec, estimate
    from mmnp.trainers.tiny_model import write_tiny_model

    logz = tmp_path / "logz"
    estimate(EstimateSpec(ref=str(tiny_text_cold), proposal=str(tiny_text_cold), tasks="knapsack", difficulty="easy",
                          prompts=6, samples=2, max_tokens=4), logz)
    fit(logz, epochs=20)
    other = write_tiny_model(tmp_path / "other", seed=1, warm_steps=0)
    (tmp_path / "link").symlink_to(tiny_text_cold)

    def train(model, out):
        return CliRunner().invoke(app, [
            "train", "--algo", "disa", "--logz", str(logz), "--model", str(model), "--tasks", "knapsack",
            "--difficulty", "easy", "--count", "2", "--params", "n=4", "--max-steps", "1", "--num-generations", "2",
            "--per-device-train-batch-size", "2", "--max-completion-length", "4", "--report-to", "none",
            "--output-dir", str(tmp_path / out)])

    refused = train(other, "refused")
    lines = [line for line in refused.output.splitlines() if line.strip()]
    assert refused.exit_code == 2 and len(lines) == 1, refused.output
    assert str(tiny_text_cold) in lines[0] and str(other) in lines[0], lines[0]
    trained = train(tmp_path / "link", "trained")
    assert trained.exit_code == 0, trained.output


def test_an_anchor_is_used_only_on_the_tasks_it_was_estimated_on(tiny_text_cold, tmp_path):
    """An anchor estimated on knapsack, trained on subset_sum: its one-hot column was constant in the fit, its
    std clamped to 1e-6, so g(q) came out near -13,000 for labels in [0, 1] and the loss near 1e8, with
    exit 0. Now `mmnp train` refuses in one line, and the fit leaves constant features unscaled."""
    from typer.testing import CliRunner

    from mmnp.cli import app
    from mmnp.trainers.disa.anchor import Anchor, fit
    from mmnp.trainers.disa.estimate import EstimateSpec, estimate

    logz = tmp_path / "logz"
    estimate(EstimateSpec(ref=str(tiny_text_cold), proposal=str(tiny_text_cold), tasks="knapsack", difficulty="easy",
                          prompts=6, samples=2, max_tokens=4), logz)
    fit(logz, epochs=20)
    model, config = Anchor.load(str(logz), "cpu")
    rows = [json.loads(line) for line in (logz / "labels.jsonl").read_text().splitlines()]
    seen = torch.tensor([rows[0]["features"] + rows[0]["size"]])
    unseen = seen.clone()
    hidden, tasks = len(rows[0]["features"]), config["size_tasks"]
    unseen[0, hidden + tasks.index("knapsack")], unseen[0, hidden + tasks.index("subset_sum")] = 0.0, 1.0
    with torch.no_grad():
        assert abs(float(model(unseen)) - float(model(seen))) < 10  # was ~13,000

    def train(*args: str) -> str:
        result = CliRunner().invoke(app, [
            "train", "--algo", "disa", "--logz", str(logz), "--model", str(tiny_text_cold), "--difficulty", "easy",
            "--count", "2", "--max-steps", "1", "--num-generations", "2", "--per-device-train-batch-size", "2",
            "--report-to", "none", "--output-dir", str(tmp_path / "run"), *args])
        assert result.exit_code == 2, result.output
        return " ".join(result.output.split())

    assert f"--logz {logz} was estimated on knapsack, not subset_sum: its anchor would extrapolate there" in train(
        "--tasks", "subset_sum", "--max-completion-length", "4")
    # the prompts' features and the completions' length are the estimate's too
    assert "train without --system-prompt" in train("--tasks", "knapsack", "--max-completion-length", "4",
                                                    "--system-prompt", "Be brief.")
    assert "train with --max-completion-length 4" in train("--tasks", "knapsack", "--max-completion-length", "8")


@pytest.fixture(scope="module")
def tiny_text_cold(tmp_path_factory):
    from mmnp.trainers.tiny_model import write_tiny_model

    return write_tiny_model(tmp_path_factory.mktemp("cold") / "text", warm_steps=0)


def test_a_separate_teacher_is_scored_on_the_tokens_it_sampled(tiny_text, tmp_path):
    """A teacher loaded apart from the reference (here: the same weights in another folder) gives the
    labels of the reference sampling itself: log pi_ref is of the sampled ids, with no EOS added to a
    completion cut at --max-tokens. With another vocabulary the text is re-tokenized, EOS only where
    the teacher ended."""
    import shutil

    from transformers import AutoTokenizer

    from mmnp.trainers.disa.estimate import EstimateSpec, estimate, for_reference

    teacher = tmp_path / "teacher"
    shutil.copytree(tiny_text, teacher)
    settings = dict(tasks="knapsack", difficulty="easy", prompts=2, samples=4, max_tokens=6, beta=15.0)

    def labels(proposal: str, out: str) -> dict:
        estimate(EstimateSpec(ref=str(tiny_text), proposal=proposal, **settings), tmp_path / out, device="cpu")
        return {r["id"]: r["log_z"] for r in map(json.loads, (tmp_path / out / "labels.jsonl").read_text().splitlines())}

    itself = labels(str(tiny_text), "itself")
    assert labels(str(teacher), "teacher") == pytest.approx(itself, abs=1e-4)

    tok = AutoTokenizer.from_pretrained(tiny_text)
    eos = tok.eos_token_id
    ids = tok("Answer: [1, 2]", add_special_tokens=False)["input_ids"]
    assert for_reference(ids, tok, tok) == ids  # cut at --max-tokens: no EOS that was never sampled
    assert for_reference(ids + [eos], tok, tok) == ids + [eos]
    no_eos = AutoTokenizer.from_pretrained(tiny_text)
    no_eos.eos_token = None  # a reference with no end-of-sequence token: nothing to append
    assert for_reference(ids + [eos], tok, no_eos) == ids
