"""Image delivery checked on every image sample, through the real CLI and a real local server:
a server that drops every picture, a pool where one replica drops them, a text-only server that
counts the base64 text, a run resumed after --skip-image-probe, --rounds, and the endpoint as
part of the run's identity."""

from __future__ import annotations

import hashlib
import json

import pytest
from typer.testing import CliRunner

import mmnp
from fake_openai import FakeOpenAI, image_tokens, oracle, replica_pool
from mmnp.cli import app
from mmnp.evaluation.delivery import MEASURE_TOKENS
from mmnp.evaluation.leaderboard import make_leaderboard
from mmnp.samplelog import read_samples

EASY = ["--difficulty", "easy"]


def _eval(url, data, out, *args, tasks="knapsack,tsp"):
    return CliRunner().invoke(app, ["eval", "--model", "openai:fake", "--base-url", url, "--data", str(data),
                                    "--tasks", tasks, *EASY, "--output-path", str(out), "--concurrency", "2",
                                    "--max-retries", "1", "--model-args", "backoff=0.01", "--modality", "image",
                                    *args])


def _results(out):
    return json.loads((out / "openai_fake" / "results.json").read_text())


def _records(out):
    return read_samples(out / "openai_fake" / "samples.jsonl")


def _checks(server):
    """The delivery checks' own requests (a short completion limit) and the samples'."""
    checks = [r for r in server.requests if r["max_tokens"] <= MEASURE_TOKENS]
    return checks, [r for r in server.requests if r["max_tokens"] > MEASURE_TOKENS]


def _png(body) -> bytes | None:
    import base64

    for part in body["messages"][-1]["content"] if isinstance(body["messages"][-1]["content"], list) else []:
        if part["type"] == "image_url":
            return base64.b64decode(part["image_url"]["url"].split(",", 1)[1])
    return None


@pytest.fixture(scope="module")
def instances(small_dataset):
    return list(mmnp.load_dataset(small_dataset, difficulties=["easy"]))


def test_a_server_that_drops_every_picture_is_refused_before_any_sample(small_dataset, instances, tmp_path):
    with FakeOpenAI(oracle(instances), drop_images=True) as server:
        result = _eval(server.url, small_dataset, tmp_path)
        checks, samples = _checks(server)
        assert samples == [] and len(checks) == 11  # the text-only count, then five tries of each encoding
        assert result.exit_code == 1 and "seems to drop images" in result.output and "Traceback" not in result.output
        refused = _results(tmp_path)
        assert refused["image_probe"]["status"] == "failed" and refused["complete"] is False
        assert refused["image_probe"]["encoding"]["image_tokens"] == [0, 0]
        assert refused["missing_instances"] == 4 and refused["metrics"]["image"] == {}

        skipped = _eval(server.url, small_dataset, tmp_path / "s", "--skip-image-probe")
        assert skipped.exit_code == 0, skipped.output
        assert all(r["max_tokens"] > MEASURE_TOKENS for r in server.requests[11:])  # nothing checked
    probe = _results(tmp_path / "s")["image_probe"]
    assert probe["status"] == "unchecked" and probe["samples"] == {"unchecked": 4}
    assert {r["image_check"] for r in _records(tmp_path / "s")} == {"unchecked"}
    md = make_leaderboard([tmp_path / "s" / "openai_fake"])
    assert "openai:fake (image delivery unchecked: 4 of 4 image samples were never checked" in md


def test_a_server_counting_the_base64_text_is_refused(small_dataset, instances, tmp_path):
    """A text-only server that counts the data URL as text grows with the picture's bytes; the
    same pixels re-encoded in more bytes must cost a vision model the same."""
    with FakeOpenAI(oracle(instances), count_base64=True) as server:
        result = _eval(server.url, small_dataset, tmp_path)
        checks, samples = _checks(server)
    assert result.exit_code == 1 and "counts the encoded (base64) text" in result.output
    assert samples == [] and len(checks) == 3
    encoding = _results(tmp_path)["image_probe"]["encoding"]
    small, big = encoding["png_bytes"]
    cost_small, cost_big = encoding["image_tokens"]
    assert big >= 2 * small and cost_big / cost_small == pytest.approx(big / small, rel=0.05)
    assert _png(checks[1]) != _png(checks[2])  # the stored picture and its re-encoding
    from PIL import Image
    import io

    same = [Image.open(io.BytesIO(_png(c))).convert("RGB").tobytes() for c in checks[1:]]
    assert same[0] == same[1]  # the same pixels


def test_a_base64_counting_server_out_of_context_is_refused(small_dataset, instances, tmp_path):
    with FakeOpenAI(oracle(instances), count_base64=True, context=32_000) as server:
        result = _eval(server.url, small_dataset, tmp_path)
        assert _checks(server)[1] == []
    assert result.exit_code == 1 and "re-encoded in" in result.output and "maximum context length" in result.output
    assert _results(tmp_path)["image_probe"]["status"] == "failed"


def test_a_failing_endpoint_is_not_blamed_on_pictures(small_dataset, instances, tmp_path):
    """The check's request without the picture fails (HTTP 500): the endpoint is at fault, so the line says
    so and never advises skipping the check; a request failing only with its picture says that instead."""
    with FakeOpenAI(oracle(instances), lambda n, text: (500, 0.0)) as server:
        result = _eval(server.url, small_dataset, tmp_path / "down")
        assert _checks(server)[1] == []
    assert result.exit_code == 1, result.output
    assert "image probe: its request without the picture (" in result.output and "HTTP 500" in result.output
    assert "--skip-image-probe" not in result.output and "vision model" not in result.output
    assert _results(tmp_path / "down")["image_probe"]["status"] == "failed"
    with FakeOpenAI(oracle(instances), context=400) as server:  # the text fits, the picture's tokens do not
        result = _eval(server.url, small_dataset, tmp_path / "small")
    assert result.exit_code == 1, result.output
    assert ("the request with the picture failed where the same request without it was answered: HTTP 400: "
            "maximum context length is 400 tokens") in " ".join(result.output.split())


def test_a_vision_server_passes_and_each_sample_records_its_picture_cost(small_dataset, instances, tmp_path):
    with FakeOpenAI(oracle(instances)) as server:
        result = _eval(server.url, small_dataset, tmp_path, "--modality", "both", tasks="all")
        assert result.exit_code == 0, result.output
        checks, samples = _checks(server)
    results = _results(tmp_path)
    probe = results["image_probe"]
    tasks = len(mmnp.list_tasks())
    # one text-only request per task (image prompts are shared by a task's instances) and the encoding pair
    assert len(checks) == tasks + 2 == results["timing"]["this_run_check_requests"]
    assert len({json.dumps(c["messages"]) for c in checks if _png(c) is None}) == tasks
    assert probe["status"] == "passed" and probe["samples"] == {"passed": 2 * tasks}
    assert probe["encoding"]["image_tokens"][0] == probe["encoding"]["image_tokens"][1]
    by_id = {inst.id: inst for inst in instances}
    for r in _records(tmp_path):
        if r["modality"] == "image":
            png = mmnp.get_task(r["task"]).render(by_id[r["id"]])
            assert r["image_check"] == "passed" and r["image_tokens"] == image_tokens(png)
            assert r["prompt_tokens"] == r["text_only_tokens"] + r["image_tokens"]
        else:
            assert "image_check" not in r


def test_a_pool_with_one_dropping_replica_fails_exactly_its_samples(small_dataset, instances, tmp_path):
    """One of three replicas ignores pictures: the samples it answered (and only those) fail,
    with their reason; reruns ask only them again until every sample was seen by a vision replica."""
    with FakeOpenAI(oracle(instances), drop_images=replica_pool(3, 2)) as server:
        first = _eval(server.url, small_dataset, tmp_path, "--probe", "transcribe", tasks="all")
        assert first.exit_code == 1, first.output
        dropped = {hashlib.sha256(_png(server.requests[n])).hexdigest() for n in server.dropped
                   if server.requests[n]["max_tokens"] > MEASURE_TOKENS}
        by_picture = {hashlib.sha256(mmnp.get_task(i.task).render(i)).hexdigest(): i.id for i in instances}
        records = _records(tmp_path)
        failed = {r["key"] for r in records if r["failed"]}
        assert failed and {k.split("|")[0] for k in failed} == {by_picture[d] for d in dropped}
        for r in records:
            assert r["image_check"] == ("failed" if r["failed"] else "passed"), r["key"]
            if r["failed"]:
                assert r["image_tokens"] == 0 and r["error"].startswith("image not delivered")
        results = _results(tmp_path)
        assert results["complete"] is False and results["failed_samples"] == len(failed)
        assert results["image_probe"]["status"] == "failed"
        assert results["image_probe"]["samples"]["failed"] == len(failed)
        for _ in range(10):  # each rerun asks only the failed samples again
            before = len(server.requests)
            again = _eval(server.url, small_dataset, tmp_path, "--probe", "transcribe", tasks="all")
            asked = [r for r in server.requests[before:] if r["max_tokens"] > MEASURE_TOKENS]
            assert len(asked) == len(failed)
            failed = {r["key"] for r in _records(tmp_path) if r["failed"]}
            if again.exit_code == 0:
                break
    assert not failed and _results(tmp_path)["image_probe"]["status"] == "passed"


def test_a_run_resumed_after_skip_image_probe_never_says_passed(small_dataset, instances, tmp_path):
    with FakeOpenAI(oracle(instances), drop_images=True) as server:
        part = _eval(server.url, small_dataset, tmp_path, "--skip-image-probe", "--limit", "1")
        assert part.exit_code == 0, part.output
        server.drop_images = False  # the same endpoint, now with a vision model behind it
        rest = _eval(server.url, small_dataset, tmp_path)
        assert rest.exit_code == 0, rest.output
    probe = _results(tmp_path)["image_probe"]
    assert probe["status"] == "unchecked" and probe["samples"] == {"passed": 2, "unchecked": 2}
    assert "2 of 4 image samples were never checked" in probe["detail"]
    board = make_leaderboard([tmp_path / "openai_fake"])
    assert "(image delivery unchecked: 2 of 4" in board and "| passed |" not in board


def test_rounds_check_every_round_against_its_own_text(small_dataset, instances, tmp_path):
    """Later rounds carry earlier turns: each is compared with the same turns without the picture,
    and a replica that drops pictures only in later rounds is caught there."""
    holder: list[FakeOpenAI] = []

    def later_rounds(number):
        return len(holder[0].requests[number]["messages"]) > 1

    with FakeOpenAI(lambda text, png: "Answer: []", drop_images=later_rounds) as server:
        holder.append(server)
        result = _eval(server.url, small_dataset, tmp_path, "--rounds", "2", tasks="vertex_cover")
        checks, samples = _checks(server)
    assert result.exit_code == 1
    # round 1: one text-only request and the encoding pair; round 2: one per sample (its own history)
    assert len(checks) == 1 + 2 + 2
    records = _records(tmp_path)
    assert all(r["round"] == 2 and r["failed"] and r["error"].startswith("image not delivered") for r in records)
    assert all(r["per_round"][0]["feasible"] is False for r in records)  # round 1's verdict is kept


@pytest.mark.parametrize("skip", [[], ["--skip-image-probe"]])
def test_in_process_backends_need_no_check(skip, small_dataset, tmp_path):
    result = CliRunner().invoke(app, ["eval", "--model", "solver:heuristic", "--data", str(small_dataset),
                                      "--tasks", "knapsack", *EASY, "--modality", "image", "--output-path",
                                      str(tmp_path), *skip])
    assert result.exit_code == 0, result.output
    probe = json.loads((tmp_path / "solver_heuristic" / "results.json").read_text())["image_probe"]
    assert probe["status"] == "not_applicable" and "in-process" in probe["detail"]
    assert {r["image_check"] for r in read_samples(tmp_path / "solver_heuristic" / "samples.jsonl")} == \
        {"not_applicable"}


def test_the_endpoint_is_part_of_the_run_identity(small_dataset, instances, tmp_path):
    with FakeOpenAI(oracle(instances)) as first, FakeOpenAI(oracle(instances)) as other:
        assert _eval(first.url, small_dataset, tmp_path, "--modality", "text").exit_code == 0
        moved = _eval(other.url, small_dataset, tmp_path, "--modality", "text", "--samples", "2")
        assert moved.exit_code == 2 and "different settings (endpoint:" in moved.output
        assert other.requests == []
        run = tmp_path / "openai_fake" / "run.json"
        identity = json.loads(run.read_text())
        assert identity["endpoint"] == {"base_url": first.url, "model": "fake"}
        del identity["endpoint"]  # a folder written before mmnp recorded the endpoint resumes
        run.write_text(json.dumps(identity))
        grown = _eval(other.url, small_dataset, tmp_path, "--modality", "text", "--samples", "2")
        assert grown.exit_code == 0, grown.output
        assert json.loads(run.read_text())["endpoint"]["base_url"] == other.url
    assert _results(tmp_path)["config"]["endpoint"] == {"base_url": other.url, "model": "fake"}
