"""Honest failure through the real CLI and a real local server: `complete` only when every
sample has an answer, a non-zero exit when samples failed, fast failure on errors retries
cannot fix, the output-folder lock, and the endpoint options (image delivery: test_delivery.py)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

import mmnp
from fake_openai import FakeOpenAI, oracle
from mmnp.cli import app
from mmnp.evaluation.backend import Request
from mmnp.samplelog import read_samples

TASKS = ["--tasks", "knapsack,tsp", "--difficulty", "easy"]


def _eval(url, data, out, *args):
    return CliRunner().invoke(app, ["eval", "--model", "openai:fake", "--base-url", url, "--data", str(data), *TASKS,
                                    "--output-path", str(out), "--concurrency", "2", "--max-retries", "1",
                                    "--model-args", "backoff=0.01", *args])


@pytest.fixture(scope="module")
def instances(small_dataset):
    return list(mmnp.load_dataset(small_dataset, tasks=["knapsack", "tsp"], difficulties=["easy"]))


def _results(out):
    return json.loads((out / "openai_fake" / "results.json").read_text())


def test_failed_samples_exit_nonzero_unless_allowed(small_dataset, instances, tmp_path):
    poison = instances[3].prompt
    with FakeOpenAI(oracle(instances), lambda n, text: (500, 0.0) if text == poison else None) as server:
        result = _eval(server.url, small_dataset, tmp_path)
        assert result.exit_code == 1, result.output
        assert "1 of 4 samples failed (1x HTTP 500: injected)" in result.output
        assert _results(tmp_path)["complete"] is False and _results(tmp_path)["failed_samples"] == 1
        allowed = _eval(server.url, small_dataset, tmp_path, "--max-fail-rate", "0.25")
        assert allowed.exit_code == 0, allowed.output
        assert "1 of 4 samples failed (allowed by --max-fail-rate)" in allowed.output
        assert _results(tmp_path)["complete"] is False  # allowed is not complete
    with FakeOpenAI(oracle(instances), port=server.port) as server:  # the same endpoint, healed
        assert _eval(server.url, small_dataset, tmp_path).exit_code == 0
    results = _results(tmp_path)
    assert results["complete"] is True and results["failed_samples"] == 0 and results["missing_instances"] == 0


@pytest.mark.parametrize("status, meaning", [(401, "the API key was refused"), (403, "access denied"),
                                             (404, "model or endpoint not found")])
def test_unfixable_errors_stop_the_run_with_the_servers_message(status, meaning, small_dataset, instances, tmp_path):
    with FakeOpenAI(oracle(instances), lambda n, text: (status, 0.0)) as server:
        result = _eval(server.url, small_dataset, tmp_path)
        assert len(server.requests) == 1  # not retried, nothing else sent
    assert result.exit_code == 1
    assert f"HTTP {status} ({meaning}): injected" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "openai_fake" / "samples.jsonl").exists()  # no failure recorded per sample
    assert _results(tmp_path)["complete"] is False and _results(tmp_path)["missing_instances"] == 4
    assert _results(tmp_path)["timing"]["this_run_calls"] == 1  # what was sent, not the 4 planned


def test_a_model_refused_midway_stops_without_recording_refusals(small_dataset, instances, tmp_path):
    with FakeOpenAI(oracle(instances), lambda n, text: (401, 0.0) if n >= 2 else None) as server:
        result = _eval(server.url, small_dataset, tmp_path, "--concurrency", "1")
        assert len(server.requests) == 3
    assert result.exit_code == 1 and "HTTP 401" in result.output
    records = read_samples(tmp_path / "openai_fake" / "samples.jsonl")
    assert len(records) == 2 and not any(r["failed"] for r in records)


@pytest.mark.parametrize("fault, attempts, reason", [
    ((400, 0.0), 1, "HTTP 400: injected"),  # refused: over the context length
    ((500, 0.0), 2, "HTTP 500: injected"),  # the server fails on this prompt, retries or not
    ((200, 3.0), 2, "timed out after 1s"),  # ... or never answers it in time
])
def test_one_failing_prompt_does_not_block_the_others(fault, attempts, reason, small_dataset, instances, tmp_path):
    """A server that fails one prompt whichever run asks it (refused, 5xx or timed out after every retry):
    that sample fails and is retried next run, the others are answered. It is the run's first request,
    sent alone; a 5xx or a timeout there used to stop every run before anything else was sent."""
    failing, asked = instances[0].prompt, []

    def inject(n: int, text: str) -> tuple[int, float] | None:
        if text == failing:
            asked.append(n)
            return fault
        return None

    with FakeOpenAI(oracle(instances), inject) as server:
        for run in range(2):
            result = _eval(server.url, small_dataset, tmp_path, "--timeout", "1")
            assert result.exit_code == 1 and f"1 of 4 samples failed (1x {reason})" in result.output, result.output
            assert _results(tmp_path)["failed_samples"] == 1 and _results(tmp_path)["missing_instances"] == 0
            assert _results(tmp_path)["timing"]["this_run_calls"] == (4 if run == 0 else 1)
        assert len(asked) == 2 * attempts and len(server.requests) == 3 + 2 * attempts  # then only the failed one
    records = read_samples(tmp_path / "openai_fake" / "samples.jsonl")
    assert [r["id"] for r in records if r["failed"]] == [instances[0].id]


@pytest.mark.parametrize("refused", ["one prompt", "one task"])
def test_a_refused_prompt_with_several_samples_does_not_block_the_others(refused, small_dataset, instances,
                                                                          tmp_path):
    """--samples 3 puts a prompt's samples side by side; the canaries are distinct prompts, another task's
    second, so a server that refuses one prompt, or every prompt of the first task (over a small model's
    context length), answers the rest. The canaries used to be that prompt's 3 samples: every run stopped."""
    first = instances[0]
    prompts = {i.prompt for i in instances if i is first or (refused == "one task" and i.task == first.task)}
    with FakeOpenAI(oracle(instances), lambda n, text: (400, 0.0) if text in prompts else None) as server:
        for run in range(2):
            result = _eval(server.url, small_dataset, tmp_path, "--samples", "3")
            failed = 3 * len(prompts)
            assert f"{failed} of 12 samples failed ({failed}x HTTP 400: injected)" in result.output, result.output
            assert _results(tmp_path)["missing_instances"] == 0
            assert _results(tmp_path)["timing"]["this_run_calls"] == (12 if run == 0 else failed)
        second = server.requests[1]["messages"][-1]["content"][-1]["text"]
    assert second not in {i.prompt for i in instances if i.task == first.task}  # the second canary: another task's


@pytest.mark.parametrize("status, attempts", [(400, 1), (500, 2)])
def test_a_server_that_fails_every_prompt_stops_after_a_few(status, attempts, small_dataset, instances, tmp_path):
    with FakeOpenAI(oracle(instances), lambda n, text: (status, 0.0)) as server:
        result = _eval(server.url, small_dataset, tmp_path)
        assert len(server.requests) == 3 * attempts  # the canaries, one after another; nothing else
    assert result.exit_code == 1
    assert re.search(r"the first 3 requests \((\w+-easy-000\d, ){2}\w+-easy-000\d\) each failed after "
                     rf"{attempts} attempt\(s\), so nothing else was sent: HTTP {status}: injected",
                     result.output), result.output
    assert not (tmp_path / "openai_fake" / "samples.jsonl").exists()
    assert _results(tmp_path)["timing"]["this_run_calls"] == 3  # the requests sent, not the 4 planned


def test_a_server_that_is_down_fails_fast(small_dataset, tmp_path):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = _eval(f"http://127.0.0.1:{port}/v1", small_dataset, tmp_path)
    assert result.exit_code == 1
    assert re.search(r"the first request \(\w+-easy-000\d\) failed after 2 attempt\(s\), so nothing else was sent: "
                     r"connection error", result.output), result.output  # unreachable: no other prompt is tried
    assert not (tmp_path / "openai_fake" / "samples.jsonl").exists()


@pytest.mark.parametrize("args, message", [
    (["--base-url", "ftp://example.com/v1"], "expected an http:// or https:// URL"),
    (["--max-retries", "-1"], "--max-retries -1: must be at least 0"),
    (["--concurrency", "0"], "--concurrency 0: must be at least 1"),
    (["--timeout", "0"], "the timeout must be positive"),
    (["--top-p", "0"], "--top-p 0.0: must be in (0, 1]"),
    (["--model-args", "nope=1"], "--model-args nope: the openai backend has no such option"),
    (["--model-args", "concurrency=many"], "expected int"),
    (["--model-args", "image_detail=ultra"], "use low, high or auto"),
    (["--gen-kwargs", "model=x"], "set by mmnp itself"),
    (["--gen-kwargs", "oops"], "expected KEY=VALUE"),
    (["--batch-size", "4"], "--batch-size: the openai backend has no such option"),
])
def test_bad_settings_are_refused_before_any_call(args, message, small_dataset, instances, tmp_path):
    with FakeOpenAI(oracle(instances)) as server:
        result = _eval(server.url, small_dataset, tmp_path, *args)
        assert server.requests == []
    assert result.exit_code == 2 and message in result.output, result.output


def test_unwritable_output_is_one_line(small_dataset, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    result = CliRunner().invoke(app, ["eval", "--model", "solver:heuristic", "--data", str(small_dataset), *TASKS,
                                      "--output-path", str(blocker)])
    assert result.exit_code == 1 and "is a file, not a folder" in result.output
    long_name = "solver:" + "h" * 300
    result = CliRunner().invoke(app, ["eval", "--model", long_name, "--data", str(small_dataset), *TASKS,
                                      "--output-path", str(tmp_path / "o")])
    assert result.exit_code == 2 and "no such solver" in result.output  # an unknown solver, not an OSError
    assert not (tmp_path / "o").exists()  # refused before any folder is made
    from mmnp.evaluation.runner import model_dir_name

    assert len(model_dir_name(long_name)) <= 100 and model_dir_name(long_name) != model_dir_name(long_name + "h")


def test_a_folder_in_use_is_refused_naming_the_run(small_dataset, instances, tmp_path):
    with FakeOpenAI(oracle(instances), delay=0.5) as server:
        cmd = [sys.executable, "-m", "mmnp", "eval", "--model", "openai:fake", "--base-url", server.url, "--data",
               str(small_dataset), *TASKS, "--output-path", str(tmp_path), "--concurrency", "1"]
        first = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.time() + 60
            while time.time() < deadline and not server.requests:
                time.sleep(0.05)
            second = _eval(server.url, small_dataset, tmp_path)
            assert second.exit_code == 1
            assert f"in use by another run (pid {first.pid} on " in second.output and "started 20" in second.output
        finally:
            os.kill(first.pid, signal.SIGKILL)
            first.wait()
        (tmp_path / "openai_fake" / ".results.json.tmp999").write_text("{")  # an atomic write cut by the kill
        server.delay = 0.0
        third = _eval(server.url, small_dataset, tmp_path)  # the dead run's lock is taken over
        assert third.exit_code == 0, third.output
    keys = [json.loads(line)["key"] for line in (tmp_path / "openai_fake" / "samples.jsonl").read_text().splitlines()]
    assert len(keys) == len(set(keys)) == 4
    assert not list((tmp_path / "openai_fake").glob(".*.tmp*"))


def test_model_args_and_gen_kwargs_reach_the_request(small_dataset, instances, tmp_path):
    with FakeOpenAI(oracle(instances)) as server:
        result = _eval(server.url, small_dataset, tmp_path, "--modality", "image", "--limit", "1", "--model-args",
                       "image_detail=low,token_field=max_completion_tokens", "--gen-kwargs",
                       'reasoning_effort=low,temperature=none,metadata={"a": 1, "b": [1, 2]}', "--max-tokens", "99")
        assert result.exit_code == 0, result.output
        body = server.requests[-1]
    assert body["max_completion_tokens"] == 99 and "max_tokens" not in body and "temperature" not in body
    assert body["reasoning_effort"] == "low" and body["metadata"] == {"a": 1, "b": [1, 2]}
    assert body["messages"][-1]["content"][0]["image_url"]["detail"] == "low"
    config = _results(tmp_path)["config"]
    assert config["model_args"] == {"image_detail": "low", "token_field": "max_completion_tokens"}
    assert config["sampling"]["extra"]["reasoning_effort"] == "low"
    # changing a sample-defining option on the same folder is refused; transport options are not
    assert _eval(server.url, small_dataset, tmp_path, "--modality", "image", "--limit", "1").exit_code == 2


def test_samples_store_the_hash_of_the_messages_sent(small_dataset, instances, tmp_path):
    with FakeOpenAI(oracle(instances)) as server:
        result = _eval(server.url, small_dataset, tmp_path, "--system-prompt", "Be brief.")
        assert result.exit_code == 0, result.output
        sent = {m["messages"][-1]["content"][-1]["text"]: m["messages"] for m in server.requests}
    by_id = {inst.id: inst for inst in instances}
    for record in read_samples(tmp_path / "openai_fake" / "samples.jsonl"):
        messages = sent[by_id[record["id"]].prompt]
        raw = json.dumps(messages, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert record["messages_sha256"] == hashlib.sha256(raw.encode()).hexdigest()
        rebuilt = Request(by_id[record["id"]], "text", 0, by_id[record["id"]].prompt, None, "Be brief.")
        assert rebuilt.messages_sha256() == record["messages_sha256"]  # the template rebuilds them
    results = _results(tmp_path)
    assert results["timestamp"].endswith("Z") and results["environment"]["packages"]["mmnp"] == mmnp.__version__
    assert results["environment"]["python"].count(".") == 2 and isinstance(results["environment"]["gpu"], list)


def test_eval_help_lists_backends_and_fits_80_columns():
    result = CliRunner().invoke(app, ["eval", "--help"], env={"COLUMNS": "80"}, terminal_width=80)
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= 80 and "…" not in result.output
    assert "solver, openai, hf, vllm" in " ".join(result.output.split())  # names only: no backend imported
    for backend, option in (("openai", "image_detail"), ("hf", "batch_size"), ("vllm", "gpu_memory_utilization"),
                            ("solver", "time_limit")):
        assert option not in result.output
        # one backend's options: `--model NAME: --help` (that backend alone is imported)
        one = CliRunner().invoke(app, ["eval", "--model", f"{backend}:", "--help"], env={"COLUMNS": "80"},
                                 terminal_width=80)
        assert one.exit_code == 0 and max(len(line) for line in one.output.splitlines()) <= 80
        assert any(line.strip().startswith(f"{backend}:") for line in one.output.splitlines()), one.output
        assert option in one.output
    for flag in ("--temperature", "--top-p", "--max-tokens", "--model-args", "--gen-kwargs", "--max-fail-rate"):
        row = next(line for line in lines if f" {flag} " in line)
        metavar_and_help = row.split(flag, 1)[1].strip(" │").split(None, 1)
        assert len(metavar_and_help) == 2 and not metavar_and_help[1].startswith("["), row  # a description, not
        # only the default, follows the type
