"""Registry-driven conformance for backends: every registered backend (built-in, registered in code,
or a plug-in installed beside mmnp) is run through the same checks, as tasks are by
test_conformance.py. What a backend needs to run here comes from its own `self_test`
(`mmnp.evaluation.backend.SelfTest`): a backend is never left out in silence; one that cannot run
on this machine is skipped with the reason it declares, one that declares nothing fails.

- its options are documented (every --model-args option has help and a default, and takes its
  default's text through --model-args);
- it builds from --model-args and answers each request exactly once (the Request it was given);
- a resumed `mmnp eval` asks nothing twice: a grown run asks only for the new samples, a finished
  one asks nothing.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from collections import Counter

import pytest
from fake_openai import FakeOpenAI, oracle
from typer.testing import CliRunner

from mmnp.cli import app
from mmnp.dataset import select_instances
from mmnp.evaluation.backend import (Completion, Request, Sampling, SelfTest, backend_class, backend_names,
                                     build_options, make_backend, option_docs, parse_kwargs)
from mmnp.samplelog import SAMPLES

NAMES = backend_names()  # read at collection: a newly registered or installed backend gets its own tests
TASKS, DIFFICULTY = "knapsack,tsp", "easy"
MAX_TOKENS = 24  # enough for the built-in baselines' answers; keeps model backends quick on a CPU

runner = CliRunner()


def _self_test(name: str) -> SelfTest:
    declared = getattr(backend_class(name), "self_test", None)
    if not isinstance(declared, SelfTest):
        pytest.fail(f"backend {name!r} declares no `self_test = SelfTest(...)`: how this suite runs it on a CPU "
                    "machine without network, or why it cannot (see mmnp.evaluation.backend.SelfTest)")
    if declared.skip:
        pytest.skip(f"{name}: {declared.skip}")
    for need in declared.requires:
        if need == "cuda":
            torch = pytest.importorskip("torch", reason=f"{name} needs a GPU (torch is not installed)")
            if not torch.cuda.is_available():
                pytest.skip(f"{name} needs a CUDA GPU; this machine has none")
        elif importlib.util.find_spec(need) is None:
            pytest.skip(f"{name} needs the {need} package, which is not installed")
    return declared


@pytest.fixture
def runnable(request) -> tuple[str, str, str]:
    """(name, target, --model-args text) of the backend under test, with the suite's stand-ins
    (a tiny local model, a fake OpenAI-compatible server) filled in where its `self_test` asks."""
    name = request.param
    declared = _self_test(name)
    text = ",".join(f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in declared.model_args.items())
    stand_ins = {}
    if "{tiny_text_model}" in declared.target + text:
        stand_ins["tiny_text_model"] = str(request.getfixturevalue("tiny_text"))
    if "{openai_base_url}" in declared.target + text:
        instances = select_instances(TASKS, [DIFFICULTY], count=4).instances
        server = FakeOpenAI(oracle(instances)).__enter__()
        request.addfinalizer(server.__exit__)
        stand_ins["openai_base_url"] = server.url
    return name, declared.target.format(**stand_ins), text.format(**stand_ins)


@pytest.mark.parametrize("name", NAMES)
def test_options_are_documented(name):
    cls = backend_class(name)
    docs = option_docs(cls)
    assert [d.name for d in docs] == [f.name for f in dataclasses.fields(cls.Options)]
    for d in docs:
        assert d.help.strip(), f"{name}: --model-args {d.name} has no help (declare it with option(default, help))"
        assert not d.required, f"{name}: --model-args {d.name} has no default; `--model {name}:...` alone must build"
        given = "none" if d.default is None else d.default if isinstance(d.default, str) else json.dumps(d.default)
        built = build_options(name, parse_kwargs(f"{d.name}={given}", "--model-args"))
        assert getattr(built, d.name) == d.default, f"{name}: --model-args {d.name}={given} does not round-trip"
    assert build_options(name, {}) == cls.Options()


@pytest.mark.parametrize("runnable", NAMES, indirect=True)
def test_builds_from_model_args_and_answers_each_request_once(runnable):
    name, target, model_args = runnable
    backend = make_backend(f"{name}:{target}", parse_kwargs(model_args, "--model-args"))
    instances = select_instances(TASKS, [DIFFICULTY], count=2).instances
    requests = [Request(inst, "text", k, inst.prompt) for inst in instances for k in range(2)]
    answered: list[tuple[Request, Completion]] = []
    backend.run(requests, Sampling(max_tokens=MAX_TOKENS), lambda r, c: answered.append((r, c)))
    assert Counter(r.key for r, _ in answered) == Counter(r.key for r in requests)  # each once, none other
    given = {id(r) for r in requests}
    for request, completion in answered:
        assert id(request) in given and isinstance(completion, Completion)
        assert completion.error is None and isinstance(completion.text, str), (request.key, completion.error)


@pytest.mark.parametrize("runnable", NAMES, indirect=True)
def test_a_resumed_run_asks_nothing_twice(runnable, tmp_path):
    name, target, model_args = runnable
    model = f"{name}:{target}"

    def run(limit: int) -> list[str]:
        args = ["eval", "--model", model, "--model-args", model_args, "--tasks", TASKS, "--difficulty", DIFFICULTY,
                "--count", "4", "--limit", str(limit), "--samples", "2", "--max-tokens", str(MAX_TOKENS),
                "--output-path", str(tmp_path)]
        done = runner.invoke(app, args)
        assert done.exit_code == 0, done.output
        log = next(tmp_path.glob(f"*/{SAMPLES}"))
        return [json.loads(line)["key"] for line in log.read_text().splitlines()]  # every line, not the latest

    first = run(2)
    assert len(first) == 2 * 2 * 2  # tasks x instances x samples
    grown = run(4)
    assert grown[:len(first)] == first and len(grown) == 2 * len(first)  # only the new instances were asked
    assert Counter(grown).most_common(1)[0][1] == 1  # no sample answered twice
    assert run(4) == grown  # a finished run asks nothing
    results = json.loads(next(tmp_path.glob("*/results.json")).read_text())
    assert results["complete"] is True and results["total_samples"] == len(grown)
