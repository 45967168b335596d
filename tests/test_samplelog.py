"""mmnp.samplelog: the sample key, the torn-line-safe append-only log, read_samples, the folder
lock; and the backend registry that keeps backends' dependencies out of `import mmnp`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass

import pytest

from mmnp.errors import DataError, UsageError
from mmnp.evaluation import backend as backends
from mmnp.evaluation.backend import Completion, build_options, make_backend, option, parse_kwargs
from mmnp.samplelog import FolderLock, JsonlLog, SampleLog, read_samples, sample_key


def _rec(key, failed=False, **extra):
    return {"key": key, "failed": failed, **extra}


def test_latest_line_wins_and_a_torn_line_is_cut(tmp_path):
    path = tmp_path / "samples.jsonl"
    log = SampleLog(path)
    log.append(_rec("a|text|0", failed=True))
    log.append(_rec("b|text|0"))
    log.append(_rec("a|text|0", response="ok"))
    log.close()
    with open(path, "ab") as f:
        f.write(b'{"key": "c|text|0", "fai')  # a kill mid-write
    assert {r["key"]: r.get("response") for r in read_samples(path)} == {"a|text|0": "ok", "b|text|0": None}
    assert path.read_bytes().endswith(b"fai")  # reading never modifies the file
    again = SampleLog(path)
    assert again.done("a|text|0") and again.done("b|text|0") and not again.done("c|text|0")
    assert path.read_bytes().endswith(b"}\n")  # resuming cuts the torn line before appending
    again.append(_rec("c|text|0"))
    again.close()
    assert [json.loads(line)["key"] for line in path.read_text().splitlines()] == ["a|text|0", "b|text|0",
                                                                                  "a|text|0", "c|text|0"]


def test_damage_inside_the_log_names_file_and_line(tmp_path):
    path = tmp_path / "samples.jsonl"
    path.write_text('{"key": "a|text|0", "failed": false}\nnot json\n{"key": "b|text|0"}\n')
    with pytest.raises(DataError, match=r"samples.jsonl, line 2: not a JSON record"):
        SampleLog(path)
    path.write_text('{"key": "a|text|0"}\n[1, 2]\n')
    with pytest.raises(DataError, match=r"line 2: a record without its key"):
        read_samples(path)


def test_counts_an_older_mmnp_stored_as_given_are_dropped(tmp_path):
    path = tmp_path / "samples.jsonl"
    path.write_text(json.dumps(_rec("a|text|0", prompt_tokens="12", completion_tokens=7)) + "\n")
    (record,) = read_samples(path)
    assert record["prompt_tokens"] is None and record["completion_tokens"] == 7


def test_unstorable_records_are_refused_not_written(tmp_path):
    log = JsonlLog(tmp_path / "x.jsonl")
    with pytest.raises(ValueError):
        log.append(_rec("a", n=float("nan")))
    with pytest.raises(UnicodeEncodeError):
        log.append(_rec("a", text="\ud800"))
    log.close()
    assert not (tmp_path / "x.jsonl").exists() or (tmp_path / "x.jsonl").read_bytes() == b""


def test_the_key_has_one_spelling():
    assert sample_key("tsp-easy-0001", "image", 2) == "tsp-easy-0001|image|2"


def test_a_held_folder_names_its_holder_and_frees_on_release(tmp_path):
    with FolderLock(tmp_path):
        with pytest.raises(DataError, match=rf"in use by another run \(pid {os.getpid()} on .+, started 20"):
            with FolderLock(tmp_path):
                pass
    with FolderLock(tmp_path):  # released: taken again
        pass


def test_parse_kwargs_values():
    assert parse_kwargs('a=1,b=0.5,c=true,d=none,e=low,f=[1, 2],g={"x": "y,z"}', "--x") == {
        "a": 1, "b": 0.5, "c": True, "d": None, "e": "low", "f": [1, 2], "g": {"x": "y,z"}}
    assert parse_kwargs(None, "--x") == {}
    with pytest.raises(UsageError, match="KEY=VALUE"):
        parse_kwargs("1x=2", "--x")


def test_a_backend_is_one_class_and_one_registration():
    """A plug-in backend registered by name gets its Options from --model-args, and runs."""

    @dataclass(frozen=True)
    class EchoOptions:
        prefix: str = option("Answer:", "what to say")
        repeat: int = option(1, "how often", sample=True)

    class Echo:
        Options = EchoOptions

        def __init__(self, target, options):
            self.name, self.options = f"echo:{target}", options

        def run(self, requests, sampling, emit):
            for r in requests:
                emit(r, Completion(self.options.prefix * self.options.repeat))

    backends.register_backend("echo", Echo)
    try:
        made = make_backend("echo:x", {"prefix": "A", "repeat": 3})
        assert made.options == EchoOptions("A", 3) and made.name == "echo:x"
        with pytest.raises(UsageError, match="no such option; its options are prefix, repeat"):
            build_options("echo", {"colour": 1})
        with pytest.raises(UsageError, match="expected int"):
            build_options("echo", {"repeat": "x"})
        assert backends.sample_options(made.options) == {"repeat": 3}
    finally:
        del backends.BACKENDS["echo"]


def test_backends_dependencies_stay_out_of_import():
    code = ("import sys, mmnp, mmnp.cli, mmnp.evaluation.backend, mmnp.evaluation.models, mmnp.samplelog; "
            "print([m for m in ('aiohttp', 'torch', 'transformers', 'vllm', 'asyncio') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_reply_no_log_can_hold_becomes_a_failed_sample(tmp_path):
    """Whatever an in-process backend returns (lone surrogates, NaN counts), samples.jsonl stays valid."""
    from mmnp.evaluation.backend import Sampling
    from mmnp.evaluation.runner import EvalConfig, evaluate
    from mmnp.dataset import select_instances

    class Hostile:
        name = "hostile"

        def run(self, requests, sampling, emit):
            emit(requests[0], Completion("\ud800"))
            emit(requests[1], Completion("fine", prompt_tokens=float("nan")))

    selection = select_instances("knapsack", ["easy"], count=2)
    instances, loader, dataset = selection.instances, selection.image, selection.identity
    results = evaluate(Hostile(), instances, EvalConfig("hostile", ("text",), 1, Sampling()), tmp_path,
                       image_loader=loader, dataset=dataset)
    records = read_samples(tmp_path / "hostile" / "samples.jsonl")
    assert len(records) == 2 and all(r["failed"] and r["error"].startswith("unstorable reply") for r in records)
    assert results["failed_samples"] == 2 and results["complete"] is False
