from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import mmnp
from fake_openai import FakeOpenAI, oracle
from mmnp.evaluation.backend import Sampling, make_backend
from mmnp.evaluation.metrics import aggregate, instance_metrics, pass_at_k
from mmnp.evaluation.openai_backend import OpenAIBackend
from mmnp.evaluation.runner import EvalConfig, evaluate
from mmnp.dataset import select_instances
from mmnp.samplelog import read_samples


def test_pass_at_k_matches_exact_combinatorics():
    for n in range(1, 13):
        for c in range(n + 1):
            for k in range(1, n + 1):
                exact = 1 - math.comb(n - c, k) / math.comb(n, k)
                assert pass_at_k(n, c, k) == pytest.approx(exact, abs=1e-12)
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)


def _sample(feasible, ratio, canonical=None, failed=False, opt=None):
    return {"feasible": feasible, "ratio": ratio, "opt_ratio": ratio if opt is None else opt, "failed": failed,
            "parsed": feasible, "canonical": canonical}


def test_instance_metrics_by_hand():
    samples = [_sample(True, 0.9, [1, 2], opt=1.0), _sample(True, 0.9, [1, 2], opt=1.0), _sample(True, 0.8, [2, 1]),
               _sample(False, 0.0), _sample(False, 0.0, failed=True)]
    m = instance_metrics(samples)
    assert m["sr_at_1"] == 0.6 and m["qr_at_1"] == pytest.approx(0.52) and m["sr"] == 1.0 and m["qr"] == 0.9
    assert m["distinct"] == 2 and m["fail_rate"] == 0.2 and m["opt_ratio"] == 1.0
    assert m["pass_at_k"]["1"] == pytest.approx(0.6) and m["pass_at_k"]["3"] == 1.0
    assert m["pass_at_k_opt"]["1"] == pytest.approx(0.4)  # 2 of 5 reach the best-known objective


def test_category_and_overall_are_unweighted_means():
    def row(task, sr):
        return {"task": task, "difficulty": "easy", "metrics": instance_metrics([_sample(sr == 1, sr)])}

    rows = [row("vertex_cover", 1.0), row("vertex_cover", 1.0), row("graph_coloring", 0.0), row("tsp", 1.0)]
    agg = aggregate(rows, {"vertex_cover": "graph", "graph_coloring": "graph", "tsp": "planning"})
    assert agg["tasks"]["vertex_cover"]["sr"] == 1.0
    assert agg["categories"]["graph"]["sr"] == 0.5  # mean of its two tasks, not of its three instances
    assert agg["overall"]["sr"] == 0.75  # mean of graph (0.5) and planning (1.0)
    assert agg["macro_over_tasks"]["sr"] == pytest.approx(2 / 3)


def _run(model, data, out, modality="both", samples=2, **options):
    selection = select_instances("all", ["easy", "medium"], data=data)
    instances, loader, dataset = selection.instances, selection.image, selection.identity
    modalities = ("text", "image") if modality == "both" else (modality,)
    backend = options.pop("backend", None) or make_backend(model)
    return evaluate(backend, instances, EvalConfig(model, modalities, samples, Sampling(temperature=0.7)), out,
                    image_loader=loader, dataset=dataset, **options)


def test_solver_baselines(small_dataset, tmp_path):
    heuristic = _run("solver:heuristic", small_dataset, tmp_path)
    for modality in ("text", "image"):
        m = heuristic["metrics"][modality]
        for task, t in m["tasks"].items():
            assert t["sr"] == 1.0 and t["sr_at_1"] == 1.0, task
            assert t["qr"] == 1.0 and t["qr_at_1"] == 1.0, task  # exactly the reference
        assert m["overall"]["fail_rate"] == 0.0 and m["overall"]["distinct"] == 1.0
    random = _run("solver:random", small_dataset, tmp_path)
    for modality in ("text", "image"):
        assert random["metrics"][modality]["overall"]["sr_at_1"] < 1.0
        assert random["metrics"][modality]["overall"]["qr"] < heuristic["metrics"][modality]["overall"]["qr"]
    assert heuristic["dataset"]["benchmark_hash"] == json.loads((small_dataset / "manifest.json").read_text())["benchmark_hash"]
    assert heuristic["mmnp_version"] == mmnp.__version__ and "git_hash" in heuristic


def test_openai_backend_retries_concurrency_and_failures(small_dataset, tmp_path):
    instances = list(mmnp.load_dataset(small_dataset))
    poison = instances[2].prompt  # this instance's text requests always fail
    seen: dict[str, int] = {}

    def fault(number: int, text: str):
        seen[text] = seen.get(text, 0) + 1
        if text == poison:
            return 500, 0.0
        if text == instances[1].prompt:
            return 400, 0.0  # not retryable
        if seen[text] == 1 and number % 3 == 0:
            return 429, 0.0
        if seen[text] == 1 and number % 3 == 1:
            return 503, 0.0
        return None

    with FakeOpenAI(oracle(instances), fault, delay=0.02) as server:
        backend = OpenAIBackend("fake", base_url=server.url, concurrency=4, max_retries=3, backoff=0.01)
        results = _run("openai:fake", small_dataset, tmp_path, backend=backend)
        assert server.max_in_flight == 4  # concurrency reached, never exceeded
        assert server.images_seen > 0
    records = [json.loads(line) for line in (tmp_path / "openai_fake" / "samples.jsonl").read_text().splitlines()]
    by_key = {r["key"]: r for r in records}
    assert len(by_key) == len(records) == len(instances) * 2 * 2
    failed = [r for r in records if r["failed"]]
    assert {r["id"] for r in failed} == {instances[2].id, instances[1].id}
    for r in failed:
        assert not r["feasible"] and r["ratio"] == 0.0
        if r["id"] == instances[2].id:
            assert r["error"].startswith("HTTP 500") and r["attempts"] == 4
        else:
            assert r["error"].startswith("HTTP 400") and r["attempts"] == 1
    ok = [r for r in records if not r["failed"]]
    assert all(r["feasible"] and r["ratio"] == 1.0 for r in ok)
    assert any(r["attempts"] > 1 for r in ok)  # 429s and 503s were retried to success
    assert all(r["prompt_tokens"] > 0 and r["completion_tokens"] > 0 for r in ok)
    text = results["metrics"]["text"]["overall"]
    assert 0 < text["fail_rate"] < 1 and text["sr"] < 1

    # The next run asks again for the failed samples only, and the healed server answers them.
    with FakeOpenAI(oracle(instances)) as server:
        backend = OpenAIBackend("fake", base_url=server.url, concurrency=4, backoff=0.01)
        results = _run("openai:fake", small_dataset, tmp_path, backend=backend)
        assert len(server.requests) == len(failed)
    assert results["metrics"]["text"]["overall"]["sr"] == 1.0
    assert results["metrics"]["text"]["overall"]["fail_rate"] == 0.0


def test_openai_timeouts_are_retried(small_dataset, tmp_path):
    instances = list(mmnp.load_dataset(small_dataset, tasks=["knapsack"], difficulties=["easy"]))
    count = {"n": 0}

    def slow_first(number, text):
        count["n"] += 1
        return (200, 0.6) if number == 0 else None

    with FakeOpenAI(oracle(instances), slow_first) as server:
        backend = OpenAIBackend("fake", base_url=server.url, concurrency=1, max_retries=2, timeout=0.3, backoff=0.01)
        out = []
        from mmnp.evaluation.backend import Request

        requests = [Request(inst, "text", 0, inst.prompt) for inst in instances]
        backend.run(requests, Sampling(), lambda r, c: out.append(c))
    assert all(c.error is None for c in out)
    assert max(c.attempts for c in out) == 2


def test_openai_needs_a_key_for_remote_endpoints(monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY", raising=False)
    with pytest.raises(ValueError, match="NO_SUCH_KEY"):
        OpenAIBackend("gpt", base_url="https://api.example.com/v1", api_key_env="NO_SUCH_KEY")
    OpenAIBackend("local", base_url="http://localhost:8000/v1", api_key_env="NO_SUCH_KEY")


def _results_without_timing(path: Path) -> dict:
    results = json.loads(path.read_text())
    for name in ("timing", "timestamp", "environment"):
        results.pop(name)
    assert results.pop("image_probe")["status"] == "passed"
    results["dataset"].pop("path", None)
    return results


def test_resume_after_kill_loses_and_duplicates_nothing(small_dataset, tmp_path):
    instances = list(mmnp.load_dataset(small_dataset))
    with FakeOpenAI(oracle(instances), delay=0.03) as server:
        base = [sys.executable, "-m", "mmnp", "eval", "--model", "openai:fake", "--base-url", server.url,
                "--data", str(small_dataset), "--modality", "both", "--samples", "2", "--concurrency", "2",
                "--temperature", "0.7"]
        subprocess.run(base + ["--output-path", str(tmp_path / "straight")], check=True, capture_output=True)
        log = tmp_path / "killed" / "openai_fake" / "samples.jsonl"
        proc = subprocess.Popen(base + ["--output-path", str(tmp_path / "killed")], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.time() + 60
        while time.time() < deadline and (not log.exists() or log.read_text().count("\n") < 12):
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        with open(log, "a") as f:
            f.write('{"key": "torn by the crash')  # what a kill mid-write leaves
        lines_before = log.read_text().count("\n")
        assert 12 <= lines_before < len(instances) * 4
        requests_before = len(server.requests)
        subprocess.run(base + ["--output-path", str(tmp_path / "killed")], check=True, capture_output=True)
        asked = [r for r in server.requests[requests_before:] if r["max_tokens"] > 16]  # not the image probe's
        assert len(asked) == len(instances) * 4 - lines_before
    keys = [json.loads(line)["key"] for line in log.read_text().splitlines()]
    assert len(keys) == len(set(keys)) == len(instances) * 4
    straight = _results_without_timing(tmp_path / "straight" / "openai_fake" / "results.json")
    resumed = _results_without_timing(tmp_path / "killed" / "openai_fake" / "results.json")
    assert resumed == straight


def test_rescore_recomputes_without_model_calls(small_dataset, tmp_path):
    first = _run("solver:heuristic", small_dataset, tmp_path, modality="text", samples=1)
    log = tmp_path / "solver_heuristic" / "samples.jsonl"
    records = [json.loads(line) for line in log.read_text().splitlines()]
    for r in records:  # as if an older, buggier verifier had judged them
        r.update(feasible=False, ratio=0.0, objective=None)
    log.write_text("".join(json.dumps(r) + "\n" for r in records))

    class NoCalls:
        name = "none"

        def run(self, *args):
            raise AssertionError("rescoring must not call the model")

    again = _run("solver:heuristic", small_dataset, tmp_path, modality="text", samples=1, backend=NoCalls(),
                 rescore=True)
    assert again["metrics"] == first["metrics"]


def test_changed_settings_are_refused(small_dataset, tmp_path):
    _run("solver:heuristic", small_dataset, tmp_path, modality="text", samples=1)
    selection = select_instances("all", ["easy"], data=small_dataset)
    instances, loader, dataset = selection.instances, selection.image, selection.identity
    with pytest.raises(ValueError, match="different settings.*temperature"):
        evaluate(make_backend("solver:heuristic"), instances,
                 EvalConfig("solver:heuristic", ("text",), 1, Sampling(temperature=0.0)), tmp_path,
                 image_loader=loader)


def test_cli_eval_on_the_fly_and_errors(tmp_path):
    from typer.testing import CliRunner

    from mmnp.cli import app

    runner = CliRunner()
    result = runner.invoke(app, ["eval", "--model", "solver:heuristic", "--tasks", "knapsack,tsp", "--difficulty",
                                 "easy", "--count", "2", "--output-path", str(tmp_path)])
    assert result.exit_code == 0, result.output
    results = json.loads((tmp_path / "solver_heuristic" / "results.json").read_text())
    assert results["metrics"]["text"]["overall"]["instances"] == 4  # 2 tasks x 2 instances
    assert set(results["metrics"]["text"]["tasks"]) == {"knapsack", "tsp"}
    for args, message in [(["--model", "gpt4"], "expected NAME:TARGET"), (["--model", "foo:bar"], "unknown backend"),
                          (["--model", "solver:x", "--modality", "audio"], "choose text, image or both"),
                          (["--model", "openai:gpt", "--base-url", "https://api.example.com/v1", "--api-key-env",
                            "MMNP_NO_KEY"], "MMNP_NO_KEY")]:
        result = runner.invoke(app, ["eval", "--tasks", "knapsack", "--count", "1", "--output-path",
                                     str(tmp_path / "e"), *args])
        assert result.exit_code == 2 and message in result.output, (args, result.output)


def test_a_different_dataset_is_refused(small_dataset, tmp_path):
    _run("solver:heuristic", small_dataset, tmp_path, modality="text", samples=1)
    selection = select_instances("knapsack", ["easy"], count=2, seed=7)
    instances, loader, dataset = selection.instances, selection.image, selection.identity
    with pytest.raises(ValueError, match="different settings.*benchmark"):
        evaluate(make_backend("solver:heuristic"), instances,
                 EvalConfig("solver:heuristic", ("text",), 1, Sampling(temperature=0.7)), tmp_path,
                 image_loader=loader, dataset=dataset)


def test_an_unknown_solver_is_refused_before_anything_is_written(tmp_path):
    from typer.testing import CliRunner

    from mmnp.cli import app

    result = CliRunner().invoke(app, ["eval", "--model", "solver:nope", "--tasks", "knapsack", "--count", "1",
                                      "--output-path", str(tmp_path / "results")])
    assert result.exit_code == 2 and "solver:nope: no such solver" in result.output
    assert not (tmp_path / "results").exists()  # no run folder the leaderboard would call unfinished


class _Counting:
    """solver:heuristic, counting the samples it is asked for."""

    def __init__(self) -> None:
        self.inner = make_backend("solver:heuristic")
        self.name, self.calls = self.inner.name, 0

    def run(self, requests, sampling, emit):
        self.calls += len(requests)
        self.inner.run(requests, sampling, emit)


def test_stored_samples_are_reused_only_for_their_own_messages(tmp_path):
    """Samples stored for other instances under the same ids (run.json deleted, as its error line
    advises when it is damaged) are asked again, never scored as this dataset's."""
    config = EvalConfig("solver:heuristic", ("text",), 1, Sampling(temperature=0.7))
    first = select_instances(["knapsack", "tsp"], ["easy"], count=2, seed=0)
    evaluate(make_backend("solver:heuristic"), first.instances, config, tmp_path, image_loader=first.image,
             dataset=first.identity)
    (tmp_path / "solver_heuristic" / "run.json").unlink()
    other = select_instances(["knapsack", "tsp"], ["easy"], count=2, seed=7)
    backend, notices = _Counting(), []
    evaluate(backend, other.instances, config, tmp_path, image_loader=other.image, dataset=other.identity,
             notice=notices.append)
    assert backend.calls == 4 and notices and notices[0].startswith("4 stored sample(s)")
    by_id = {inst.id: inst for inst in other.instances}
    for r in read_samples(tmp_path / "solver_heuristic" / "samples.jsonl"):
        assert mmnp.get_task(r["task"]).verify(by_id[r["id"]], r["response"]).feasible
    backend = _Counting()  # a rerun of the same run reuses every sample
    evaluate(backend, other.instances, config, tmp_path, image_loader=other.image, dataset=other.identity)
    assert backend.calls == 0


@pytest.mark.parametrize("edit, named", [({"ratio": 5.0}, "records ratio 5.0, but its answer is verified to 1.0"),
                                         ({"feasible": "yes"}, "records feasible 'yes', but"),
                                         ({"objective": 1e308}, "records objective 1e+308, but"),
                                         ({"ratio": None}, "records ratio None, but")])
def test_an_edited_stored_verdict_is_refused_until_rescored(tmp_path, edit, named):
    selection = select_instances(["knapsack", "tsp"], ["easy"], count=2, seed=0)
    config = EvalConfig("solver:heuristic", ("text",), 2, Sampling(temperature=0.7))

    def run(**options):
        return evaluate(make_backend("solver:heuristic"), selection.instances, config, tmp_path,
                        image_loader=selection.image, dataset=selection.identity, **options)

    straight = run()
    log = tmp_path / "solver_heuristic" / "samples.jsonl"
    lines = log.read_text().splitlines()
    lines[1] = json.dumps({**json.loads(lines[1]), **edit})
    log.write_text("\n".join(lines) + "\n")
    with pytest.raises(mmnp.errors.DataError, match=re.escape(f"{log}: sample ") + ".*" + re.escape(named)):
        run()
    assert run(rescore=True)["metrics"] == straight["metrics"]
    assert run()["metrics"] == straight["metrics"]


@pytest.mark.parametrize("edit, named", [({"finish_reason": 5}, "its finish_reason is '5'"),
                                         ({"refusal": ["no"]}, "its refusal is \"['no']\"")])
def test_stored_finish_reasons_are_checked_and_older_records_load(tmp_path, edit, named):
    """Records carry how the model stopped (`finish_reason`, `refusal`): a wrong type is one line naming
    the sample; records written before mmnp stored them (no such fields) are reused as they are."""
    selection = select_instances(["knapsack"], ["easy"], count=2, seed=0)
    config = EvalConfig("solver:heuristic", ("text",), 1, Sampling(temperature=0.7))

    def run(backend=None):
        return evaluate(backend or make_backend("solver:heuristic"), selection.instances, config, tmp_path,
                        image_loader=selection.image, dataset=selection.identity)

    straight = run()
    log = tmp_path / "solver_heuristic" / "samples.jsonl"
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert all(r["finish_reason"] is None and r["refusal"] is None for r in records)  # a solver does not say
    older = [{k: v for k, v in r.items() if k not in ("finish_reason", "refusal")} for r in records]
    log.write_text("".join(json.dumps(r) + "\n" for r in older))
    backend = _Counting()
    assert run(backend)["metrics"] == straight["metrics"] and backend.calls == 0
    log.write_text("".join(json.dumps({**r, **edit} if i == 1 else r) + "\n" for i, r in enumerate(records)))
    with pytest.raises(mmnp.errors.DataError, match=re.escape(f"{log}: sample {records[1]['key']} is not a record "
                                                              f"as `mmnp eval` writes it (TypeError: {named}")):
        run()


def test_the_dtype_shapes_a_sample_for_hf_and_vllm():
    """fp32 and bf16 answers differ: a local model's dtype is checked on resume and recorded in config.model_args."""
    from mmnp.evaluation.backend import backend_class, option_docs, sample_options

    for name in ("hf", "vllm"):  # their modules import neither torch nor vLLM
        cls = backend_class(name)
        assert {d.name: d.sample for d in option_docs(cls)}["dtype"] is True, name
        assert sample_options(cls.Options(dtype="bfloat16")) == {"dtype": "bfloat16"}


def test_vllm_is_imported_only_when_used():
    """The base install never needs vLLM; asking for it without it says what to install."""
    import importlib.util

    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed here")
    with pytest.raises(ValueError, match=r"pip install 'mmnp\[vllm\]'"):
        make_backend("vllm:/models/x")


def test_image_scores_are_split_by_picture_kind(tmp_path):
    """A reader that sees drawings but cannot read edge lists: the image total averages both,
    the kinds keep them apart (overall, per task, and in the level that mixes them), the same
    from a dataset's records as from instances generated on the fly (drawn again to tell)."""
    import hashlib

    from typer.testing import CliRunner

    from mmnp.cli import app
    from mmnp.dataset import GenerateSpec, generate_dataset

    data = tmp_path / "data"
    generate_dataset(data, GenerateSpec(tasks=("max_clique", "knapsack"), difficulties=("easy", "medium"), count=6,
                                        seed=0, optimal=False))
    instances = list(mmnp.load_dataset(data))
    kind = {inst.id: inst.picture["kind"] for inst in instances}
    for inst in instances:  # each record says the kind its picture was drawn as
        assert kind[inst.id] == mmnp.get_task(inst.task).picture(inst)[1]["kind"]
    cell = [kind[i.id] for i in instances if i.task == "max_clique" and i.difficulty == "medium"]
    assert {"drawing", "edge_list"} <= set(cell)  # this level mixes them
    by_picture = {hashlib.sha256(mmnp.get_task(i.task).render(i)).hexdigest(): i for i in instances}

    def reader(text, png):
        inst = by_picture.get(hashlib.sha256(png).hexdigest()) if png else None
        if inst is None or kind[inst.id] == "edge_list":
            return "I cannot read that."
        return mmnp.get_task(inst.task).format_answer(inst.reference["heuristic"]["solution"])

    runs = {}
    with FakeOpenAI(reader) as server:
        for source, args in (("data", ["--data", str(data)]), ("fly", ["--count", "6", "--seed", "0"])):
            result = CliRunner().invoke(app, ["eval", "--model", "openai:fake", "--base-url", server.url, *args,
                                              "--tasks", "max_clique,knapsack", "--difficulty", "easy,medium",
                                              "--modality", "image", "--output-path", str(tmp_path / source)])
            assert result.exit_code == 0, result.output
            runs[source] = json.loads((tmp_path / source / "openai_fake" / "results.json").read_text())
    image = runs["data"]["metrics"]["image"]
    kinds = image["picture_kinds"]
    assert set(kinds) == {"drawing", "edge_list", "table"}
    assert kinds["drawing"]["overall"]["sr"] == 1.0 and kinds["edge_list"]["overall"]["sr"] == 0.0
    assert kinds["table"]["tasks"]["knapsack"]["sr"] == 1.0 and "max_clique" not in kinds["table"]["tasks"]
    medium = image["task_difficulty"]["max_clique/medium"]["sr"]
    assert medium == pytest.approx(cell.count("drawing") / len(cell))
    assert kinds["drawing"]["task_difficulty"]["max_clique/medium"]["instances"] == cell.count("drawing")
    assert kinds["edge_list"]["task_difficulty"]["max_clique/medium"]["instances"] == cell.count("edge_list")
    assert runs["fly"]["metrics"]["image"]["picture_kinds"] == kinds  # no record needed to tell the kind
    samples = read_samples(tmp_path / "data" / "openai_fake" / "samples.jsonl")
    assert {r["id"]: r["picture_kind"] for r in samples} == kind
