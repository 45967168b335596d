"""Any reply, any shape: every malformed or hostile server reply becomes a failed sample with
its reason (asked again on the next run), never an abort or a poisoned folder; responses are
capped; the API key never reaches a file or the screen. Through the real CLI and a real server."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

import mmnp
from fake_openai import OUTCOMES, SHAPES, FakeOpenAI, oracle
from mmnp.cli import app
from mmnp.samplelog import read_samples

REASONS = {
    "usage_list": "usage is a list",
    "usage_string": "usage is a str",
    "string_tokens": "usage.prompt_tokens is '12'",
    "nan_tokens": "NaN",
    "content_number": "message.content is a int",
    "content_list": "message.content is a list",
    "no_choices": "no choices[0].message",
    "not_json": "not JSON",
    "non_utf8": "not UTF-8",
    "lone_surrogate": "lone surrogate",
    "deep_json": "nested too deeply",
    "abort": "finish_reason 'abort': the server aborted the reply",
    "finish_error": "finish_reason 'error': the server ended the reply with an error",
    "unknown_finish": "finish_reason 'paused': not a reason mmnp scores",
    "finish_number": "choices[0].finish_reason is a int",
    "tool_call": "finish_reason 'tool_calls' with no text: a tool call, and mmnp offers no tools",
}
TASKS = ["--tasks", "knapsack,tsp", "--difficulty", "easy"]


def _eval(url, data, out, *args, env=None):
    return CliRunner().invoke(app, ["eval", "--model", "openai:fake", "--base-url", url, "--data", str(data), *TASKS,
                                    "--output-path", str(out), "--concurrency", "2", "--max-retries", "1",
                                    "--model-args", "backoff=0.01", *args], env=env)


def _strict_json(path):
    def refuse(name):
        raise AssertionError(f"{path} holds {name}")

    return json.loads(path.read_text(), parse_constant=refuse)


@pytest.fixture(scope="module")
def instances(small_dataset):
    return list(mmnp.load_dataset(small_dataset, tasks=["knapsack", "tsp"], difficulties=["easy"]))


def test_every_shape_is_named(instances):
    assert set(REASONS) == set(SHAPES)


@pytest.mark.parametrize("shape", sorted(REASONS))
def test_malformed_reply_is_a_failed_sample_then_retried(shape, small_dataset, instances, tmp_path):
    victim = instances[1].prompt  # the first request (the canary) is well-formed: the run goes on
    with FakeOpenAI(oracle(instances), shape=lambda n, text: shape if text == victim else None) as server:
        result = _eval(server.url, small_dataset, tmp_path)
    assert result.exit_code == 1, result.output
    assert "1 of 4 samples failed" in result.output and REASONS[shape] in result.output
    log = tmp_path / "openai_fake" / "samples.jsonl"
    records = {r["id"]: r for r in read_samples(log)}
    bad = records[instances[1].id]
    assert bad["failed"] and bad["response"] is None and REASONS[shape] in bad["error"]
    assert bad["prompt_tokens"] is None and not bad["feasible"]
    assert all(not r["failed"] and r["feasible"] for k, r in records.items() if k != instances[1].id)
    log.read_bytes().decode("utf-8")  # the folder stays valid UTF-8 and JSON
    for line in log.read_text().splitlines():
        json.loads(line, parse_constant=lambda c: pytest.fail(f"{c} in samples.jsonl"))
    results = _strict_json(tmp_path / "openai_fake" / "results.json")
    assert results["complete"] is False and results["failed_samples"] == 1

    with FakeOpenAI(oracle(instances), port=server.port) as server:  # healed: only the failed sample is asked again
        again = _eval(server.url, small_dataset, tmp_path)
        assert again.exit_code == 0, again.output
        assert [m["messages"][-1]["content"][-1]["text"] for m in server.requests] == [victim]
    results = _strict_json(tmp_path / "openai_fake" / "results.json")
    assert results["complete"] is True and results["metrics"]["text"]["overall"]["sr"] == 1.0

    rescored = _eval("http://127.0.0.1:9/v1", small_dataset, tmp_path, "--rescore")  # resume data stays readable
    assert rescored.exit_code == 0, rescored.output


def test_a_server_message_is_one_line_and_failures_differing_in_numbers_are_one_kind(small_dataset, instances,
                                                                                     tmp_path):
    """A server's message over several lines, with a terminal's escape codes, reaches the screen and
    samples.jsonl as one line with the codes escaped; the summary counts failures that differ only in
    a number as one kind, and cuts a long reason at a word."""
    said = {inst.prompt: f"error_message:Invalid request.\nThe prompt has {1000 + i} tokens\n\x1b[2Jcleared "
            + "and more words " * 20 for i, inst in enumerate(instances) if i in (1, 3)}
    with FakeOpenAI(oracle(instances), shape=lambda n, text: said.get(text)) as server:
        result = _eval(server.url, small_dataset, tmp_path, "--max-fail-rate", "0")
    assert result.exit_code == 1, result.output
    summary = next(line for line in result.output.splitlines() if "2 of 4 samples failed" in line)
    assert re.search(r"\(2x HTTP 400: Invalid request\. The prompt has 100[13] tokens \\x1b\[2Jcleared and more "
                     r"words( and more words)*( and more)? \.\.\.\); results\.json says complete: false", summary), summary
    assert "\x1b" not in result.output
    errors = [r["error"] for r in read_samples(tmp_path / "openai_fake" / "samples.jsonl") if r["failed"]]
    assert len(errors) == 2 and all("\n" not in e and "\x1b" not in e and "\\x1b[2J" in e for e in errors)


def test_failure_kinds_keep_http_statuses_apart_and_numbers_together():
    from mmnp.evaluation.cli import failure_kind

    assert len({failure_kind(f"HTTP {status}: x") for status in (400, 404, 429, 500, 503)}) == 5
    assert failure_kind("the prompt has 1001 tokens, 2.5 s") == failure_kind("the prompt has 1003 tokens, 0.25 s")


def test_a_run_of_empty_answers_says_so(small_dataset, instances, tmp_path):
    """Empty answers score as wrong, as given; when half or more are empty the run says it is likelier the
    server's doing (the answer kept in reasoning_content) and what to check. A run of answers says nothing."""
    with FakeOpenAI(lambda text, png: "") as server:
        empty = _eval(server.url, small_dataset, tmp_path / "empty")
    assert empty.exit_code == 0, empty.output
    assert "4 of 4 answers are empty (0 stopped at --max-tokens), scored as wrong" in " ".join(empty.output.split())
    with FakeOpenAI(lambda text, png: "") as server:  # every round's answer counts, not each sample's last (4 of 4)
        rounds = _eval(server.url, small_dataset, tmp_path / "rounds", "--rounds", "3")
    assert "12 of 12 answers are empty" in " ".join(rounds.output.split()), rounds.output
    with FakeOpenAI(oracle(instances)) as server:
        answered = _eval(server.url, small_dataset, tmp_path / "answered")
    assert answered.exit_code == 0 and "answers are empty" not in answered.output, answered.output


def test_length_content_filter_and_refusal_are_scored_and_counted(small_dataset, instances, tmp_path):
    """A reply cut at max_tokens, one the provider filtered and a refusal are the model's own outcomes:
    scored as given (never failed, never asked again), each with its reason stored, and counted in
    results.json, so that a too-small --max-tokens can be told from a wrong model."""
    outcome = {instances[1].prompt: "length", instances[2].prompt: "content_filter", instances[3].prompt: "refusal"}
    assert set(outcome.values()) == set(OUTCOMES)
    with FakeOpenAI(oracle(instances), shape=lambda n, text: outcome.get(text)) as server:
        result = _eval(server.url, small_dataset, tmp_path)
        assert result.exit_code == 0, result.output
        again = _eval(server.url, small_dataset, tmp_path)  # nothing to ask again: they are answers
        assert again.exit_code == 0 and len(server.requests) == 4, again.output
    records = {r["id"]: r for r in read_samples(tmp_path / "openai_fake" / "samples.jsonl")}
    assert all(not r["failed"] for r in records.values())
    assert [records[inst.id]["finish_reason"] for inst in instances] == ["stop", "length", "content_filter", "stop"]
    assert records[instances[0].id]["feasible"] and records[instances[0].id]["refusal"] is None
    cut = records[instances[1].id]
    assert 0 < len(cut["response"]) < len(oracle(instances)(instances[1].prompt, None))
    assert records[instances[2].id]["response"] == "" and not records[instances[2].id]["parsed"]
    refused = records[instances[3].id]
    assert refused["response"] == "" and refused["refusal"] == "I can't help with that." and not refused["parsed"]
    results = _strict_json(tmp_path / "openai_fake" / "results.json")
    assert results["complete"] is True and results["failed_samples"] == 0
    assert {k: results["usage"][k] for k in ("length_stops", "content_filter_stops", "refusals")} == {
        "length_stops": 1, "content_filter_stops": 1, "refusals": 1}


def test_stops_and_refusals_are_not_counted_over_records_that_do_not_say(small_dataset, instances, tmp_path):
    """An answer reused from a run before mmnp stored finish_reason and refusal does not say how it
    ended: results.json leaves those counts out rather than print a 0 it did not earn (this one did
    stop at --max-tokens); the other counts, which its record does hold, stay."""
    stopped = instances[1].prompt
    with FakeOpenAI(oracle(instances), shape=lambda n, text: "length" if text == stopped else None) as server:
        assert _eval(server.url, small_dataset, tmp_path).exit_code == 0
        log = tmp_path / "openai_fake" / "samples.jsonl"
        records = read_samples(log)
        for record in records:
            if record["id"] == instances[1].id:  # as an older mmnp wrote it
                del record["finish_reason"], record["refusal"]
        log.write_text("".join(json.dumps(r) + "\n" for r in records))
        again = _eval(server.url, small_dataset, tmp_path)
        assert again.exit_code == 0 and len(server.requests) == 4, again.output  # every sample reused
    usage = _strict_json(tmp_path / "openai_fake" / "results.json")["usage"]
    assert not {"length_stops", "content_filter_stops", "refusals"} & set(usage), usage
    assert usage["failed_calls"] == 0 and usage["prompt_tokens"] > 0


def test_a_50_mb_response_is_cut_at_the_cap(small_dataset, instances, tmp_path):
    with FakeOpenAI(oracle(instances), shape=lambda n, text: "huge:50000000" if n == 2 else None) as server:
        result = _eval(server.url, small_dataset, tmp_path)
    assert result.exit_code == 0, result.output
    records = read_samples(tmp_path / "openai_fake" / "samples.jsonl")
    cut = [r for r in records if r["truncated"]]
    assert len(cut) == 1 and len(cut[0]["response"]) == 1_000_000 and not cut[0]["failed"]
    assert all(len(r["response"]) < 10_000 for r in records if not r["truncated"])
    assert (tmp_path / "openai_fake" / "samples.jsonl").stat().st_size < 2_000_000
    assert _strict_json(tmp_path / "openai_fake" / "results.json")["usage"]["truncated_responses"] == 1


def test_the_api_key_is_redacted_everywhere(small_dataset, instances, tmp_path):
    key = "sk-test-0123456789abcdef"
    leaky = {instances[2].prompt: "echo_key"}  # a server that echoes the Authorization header in an error

    def answer(text, png):  # and one that repeats the key in a completion
        return oracle(instances)(text, png) + (f"\nyour key is {key}" if text == instances[3].prompt else "")

    with FakeOpenAI(answer, shape=lambda n, text: leaky.get(text)) as server:
        result = _eval(server.url, small_dataset, tmp_path, "--api-key-env", "MMNP_TEST_KEY",
                       env={"MMNP_TEST_KEY": key})
        assert server.requests and all(key not in json.dumps(r) for r in server.requests)
    assert result.exit_code == 1 and key not in result.output and "[REDACTED]" in result.output
    folder = tmp_path / "openai_fake"
    for path in folder.iterdir():
        assert key not in path.read_text(errors="replace"), path
    records = {r["id"]: r for r in read_samples(folder / "samples.jsonl")}
    assert records[instances[2].id]["error"] == "HTTP 400: bad request with Bearer [REDACTED]"
    assert records[instances[3].id]["response"].endswith("your key is [REDACTED]")
    assert records[instances[3].id]["feasible"]  # the answer itself is untouched


KEY = "sk-SECRET1-0123456789abcdef"


def _fragments(key: str, size: int = 6) -> set[str]:
    """Every piece of the key long enough to betray it, in either letter case."""
    return {key[i:i + size].lower() for i in range(len(key) - size + 1)}


def _leaks(text: str, key: str = KEY) -> list[str]:
    lowered = text.lower()
    return [f for f in _fragments(key) if f in lowered]


@pytest.mark.parametrize("shape, where", [
    ("content_key_at:999990", "response"),  # the key straddles the 1,000,000-character cap
    ("echo_key_at:285", "error"),  # ... the 300-character excerpt of an error message
    ("echo_key_upper", "error"),  # echoed in capitals
    ("echo_key_escaped", "error"),  # echoed as JSON \\u escapes
])
def test_a_key_is_redacted_before_anything_is_cut(shape, where, small_dataset, instances, tmp_path):
    victim = instances[2].prompt
    with FakeOpenAI(oracle(instances), shape=lambda n, text: shape if text == victim else None) as server:
        _eval(server.url, small_dataset, tmp_path, "--api-key-env", "MMNP_TEST_KEY", env={"MMNP_TEST_KEY": KEY})
    folder = tmp_path / "openai_fake"
    record = {r["id"]: r for r in read_samples(folder / "samples.jsonl")}[instances[2].id]
    assert "[REDA" in (record[where] or ""), record[where] and record[where][-400:]
    if where == "response":
        assert record["truncated"] and len(record["response"]) == 1_000_000
    page = tmp_path / "board.html"
    board = CliRunner().invoke(app, ["leaderboard", str(folder), "--format", "html", "--out", str(page),
                                     "--include-incomplete"])
    assert board.exit_code == 0, board.output
    for path in [*folder.iterdir(), page]:
        assert not _leaks(path.read_text(errors="replace")), path


def test_a_key_with_white_space_around_it_is_sent_and_redacted_stripped(small_dataset, instances, tmp_path):
    victim = instances[2].prompt
    with FakeOpenAI(oracle(instances), shape=lambda n, text: "echo_key" if text == victim else None) as server:
        _eval(server.url, small_dataset, tmp_path, "--api-key-env", "MMNP_TEST_KEY",
              env={"MMNP_TEST_KEY": f"  {KEY} \n"})
    records = {r["id"]: r for r in read_samples(tmp_path / "openai_fake" / "samples.jsonl")}
    assert records[instances[2].id]["error"] == "HTTP 400: bad request with Bearer [REDACTED]"
    assert not _leaks((tmp_path / "openai_fake" / "samples.jsonl").read_text())


@pytest.mark.parametrize("key", [f"{KEY[:10]}\n{KEY[10:]}", f"{KEY[:8]}\x7f{KEY[8:]}", f"{KEY[:5]}\t{KEY[5:]}"])
def test_a_key_with_a_control_character_is_one_clear_error(key, small_dataset, instances, tmp_path):
    with FakeOpenAI(oracle(instances)) as server:
        result = _eval(server.url, small_dataset, tmp_path, "--api-key-env", "MMNP_TEST_KEY",
                       env={"MMNP_TEST_KEY": key})
        assert server.requests == []
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "the API key in $MMNP_TEST_KEY holds a control character" in result.output
    assert not _leaks(result.output)
