"""`mmnp eval --probe transcribe` (perception probe) and `mmnp eval --rounds K` (verifier
feedback turns), through the real CLI, the solver baselines and the fake OpenAI server."""

from __future__ import annotations

import hashlib
import json
import re

from typer.testing import CliRunner

import mmnp
from fake_openai import FakeOpenAI, oracle
from mmnp.cli import app
from mmnp.evaluation.backend import Completion, Request, Sampling
from mmnp.evaluation.runner import feedback, round_record, score
from mmnp.evaluation.solver_backend import MAX_DAMAGE, SolverBackend
from mmnp.dataset import select_instances
from mmnp.samplelog import read_samples, sample_key
from mmnp.transcribe import tasks as transcribed_tasks
from mmnp.transcribe import transcribe

runner = CliRunner()


def _eval(out, *args):
    result = runner.invoke(app, ["eval", "--difficulty", "easy", "--output-path", str(out), *args])
    return result


def _results(folder):
    return json.loads((folder / "results.json").read_text())


def test_probe_bounds_transcribe_exact_random_low_and_leaderboard(tmp_path):
    for model in ("solver:transcribe", "solver:random"):
        result = _eval(tmp_path, "--model", model, "--count", "2", "--modality", "both", "--probe", "transcribe")
        assert result.exit_code == 0, result.output
    exact = _results(tmp_path / "solver_transcribe")["metrics"]["probe"]
    assert set(exact["tasks"]) == set(transcribed_tasks())
    for block in [exact["overall"], *exact["tasks"].values()]:
        assert block["recognition_accuracy"] == 1.0 and block["field_f1"] == 1.0
    assert exact["overall"]["instances"] == 2 * len(transcribed_tasks())
    garbled = _results(tmp_path / "solver_random")["metrics"]["probe"]["overall"]
    assert garbled["recognition_accuracy"] == 0.0 and garbled["field_f1"] < 0.5

    records = read_samples(tmp_path / "solver_transcribe" / "samples.jsonl")
    probes = [r for r in records if r["modality"] == "probe"]
    assert len(probes) == 2 * len(transcribed_tasks())
    for r in probes:
        assert r["key"] == sample_key(r["id"], "probe", 0) and r["exact"] is True
    # a resumed run asks nothing again
    result = _eval(tmp_path, "--model", "solver:transcribe", "--count", "2", "--modality", "both", "--probe",
                   "transcribe")
    assert result.exit_code == 0, result.output
    assert _results(tmp_path / "solver_transcribe")["timing"]["this_run_calls"] == 0

    board = runner.invoke(app, ["leaderboard", str(tmp_path)])
    assert board.exit_code == 0, board.output
    lines = board.output.splitlines()
    header = next(i for i, line in enumerate(lines) if "| recognition |" in line)
    columns = [c.strip() for c in lines[header].split("|")]
    assert columns.index("text SR") < columns.index("image SR") < columns.index("recognition")
    rows = {(cells[columns.index("model")], cells[columns.index("task")]): cells[columns.index("recognition")]
            for cells in ([c.strip() for c in line.split("|")] for line in lines[header + 2:] if line.startswith("|"))}
    assert rows["solver:transcribe", "overall"] == "100.0" and rows["solver:random", "overall"] == "0.0"


def test_probe_one_wrong_edge_from_an_endpoint(tmp_path):
    instances = select_instances("vertex_cover", ["easy"], count=1).instances
    inst = instances[0]
    task = mmnp.get_task(inst.task)
    truth = transcribe(inst.task, inst.data)
    edges = {tuple(e) for e in truth["edges"]}
    missing = next((a, b) for a in range(truth["n"]) for b in range(a + 1, truth["n"]) if (a, b) not in edges)
    wrong = {"n": truth["n"], "edges": [list(missing), *truth["edges"][1:]]}
    picture = hashlib.sha256(task.render(inst)).hexdigest()
    answer = oracle(instances)

    def reply(text, png):
        if png is not None and "Transcribe" in text:
            assert hashlib.sha256(png).hexdigest() == picture
            return "Here it is:\n" + json.dumps(wrong)
        return answer(text, png)

    with FakeOpenAI(reply) as server:
        result = _eval(tmp_path, "--model", "openai:fake", "--base-url", server.url, "--tasks", "vertex_cover",
                       "--count", "1", "--modality", "image", "--probe", "transcribe")
    assert result.exit_code == 0, result.output
    record = next(r for r in read_samples(tmp_path / "openai_fake" / "samples.jsonl") if r["modality"] == "probe")
    assert record["exact"] is False
    assert record["field_f1"]["n"] == 1.0 and 0.5 < record["field_f1"]["edges"] < 1.0
    probe = _results(tmp_path / "openai_fake")["metrics"]["probe"]["overall"]
    assert probe["recognition_accuracy"] == 0.0 and probe["field_f1"] < 1.0
    # the image modality itself was answered right: the probe is a separate sample
    assert _results(tmp_path / "openai_fake")["metrics"]["image"]["overall"]["sr"] == 1.0


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_rounds_repair_rises_with_feedback_naming_the_violation(tmp_path):
    """solver:repair fixes one violation a round: nothing is feasible at round 1, SR@r climbs
    round by round to 1 at round MAX_DAMAGE + 1, and some samples need more than two rounds."""
    result = _eval(tmp_path, "--model", "solver:repair", "--count", "3", "--rounds", str(MAX_DAMAGE + 1))
    assert result.exit_code == 0, result.output
    rounds = _results(tmp_path / "solver_repair")["metrics"]["text"]["overall"]["rounds"]
    sr = [rounds[str(r)]["sr"] for r in range(1, MAX_DAMAGE + 2)]
    assert sr[0] == 0.0 and sr[-1] == 1.0 and sr == sorted(sr) and 0.0 < sr[1] < sr[2] < 1.0, sr
    per_task = _results(tmp_path / "solver_repair")["metrics"]["text"]["tasks"]
    assert all("rounds" in block for block in per_task.values())
    records = _lines(tmp_path / "solver_repair" / "samples.jsonl")
    first_feasible = {r["key"]: r["round"] for r in records if r["feasible"] and r["round"] == len(r["per_round"])
                      and not any(p["feasible"] for p in r["per_round"][:-1])}
    assert len(first_feasible) == 3 * len(per_task) and max(first_feasible.values()) > 2
    infeasible = [r for r in records if not r["feasible"]]
    for r in infeasible:
        assert r["feedback"].startswith("Your answer is not feasible") or "could not be read" in r["feedback"]
        for v in r["violations"][:10]:
            assert v["message"] in r["feedback"]
    board = runner.invoke(app, ["leaderboard", str(tmp_path / "solver_repair")])
    assert board.exit_code == 0, board.output
    lines = board.output.splitlines()
    header = next(i for i, line in enumerate(lines) if "| SR round 1 |" in line)
    columns = [c.strip() for c in lines[header].split("|")]
    cells = [c.strip() for c in lines[header + 2].split("|")]
    assert float(cells[columns.index("SR round 1")]) < float(cells[columns.index("SR round 4")]) == 100.0
    # solver:random ignores feedback: no round improves on its first answer
    result = _eval(tmp_path, "--model", "solver:random", "--count", "2", "--rounds", "3")
    rounds = _results(tmp_path / "solver_random")["metrics"]["text"]["overall"]["rounds"]
    assert rounds["1"]["sr"] == rounds["3"]["sr"]


def _repair_answer(inst, history=(), sample=0):
    out = []
    SolverBackend("repair").run([Request(inst, "text", sample, inst.prompt, history=tuple(history))], Sampling(),
                                lambda request, completion: out.append(completion.text))
    return out[0]


def _named(messages):
    return "Your answer is not feasible. The verifier found:\n" + "\n".join(f"- {m}" for m in messages) + "\nFix it."


def test_repair_fixes_the_violation_the_feedback_names_and_nothing_without_it(task):
    """Every task: the round-1 answer is infeasible; feedback that names no violation changes
    nothing; each real feedback removes one damage until the heuristic's answer is back; and
    the violation removed is the one named (naming another removes another)."""
    inst = task.generate("medium", 1)
    targeted = False
    for sample in range(6):
        first = _repair_answer(inst, sample=sample)
        messages = [v.message for v in task.verify(inst, first).violations]
        assert messages, "round 1 must be infeasible"
        assert _repair_answer(inst, [(first, "Your answer is not feasible. Fix it.")], sample) == first
        history, answer = [], first
        for _ in range(MAX_DAMAGE):
            verdict = task.verify(inst, answer)
            if verdict.feasible:
                break
            record = score(inst, "text", sample, Completion(answer))
            history.append((answer, feedback(record)))
            answer = _repair_answer(inst, history, sample)
            assert answer != history[-1][0]
        assert task.verify(inst, answer).objective == inst.reference["heuristic"]["objective"]
        last, first_named = (_repair_answer(inst, [(first, _named([m]))], sample) for m in (messages[-1], messages[0]))
        assert messages[-1] not in [v.message for v in task.verify(inst, last).violations]
        assert messages[0] not in [v.message for v in task.verify(inst, first_named).violations]
        targeted |= last != first_named
    assert targeted, "naming a different violation never led to a different fix"


def test_feedback_on_a_feasible_answer_does_not_reveal_the_reference_objective():
    inst = select_instances("knapsack", ["medium"], count=1).instances[0]
    worse = inst.reference["heuristic"]["solution"][1:]
    request = Request(inst, "text", 0, inst.prompt)
    record = round_record(score(inst, "text", 0, Completion("Answer: " + json.dumps(worse))), request, 3)
    assert record["feasible"] and record["ratio"] < 1
    said = record["feedback"]
    assert "does not reach the reference solution" in said and str(record["objective"]) in said
    assert re.findall(r"\d+", said) == [str(record["objective"])], said


def test_rounds_multi_turn_over_openai_and_resume_at_the_next_round(tmp_path):
    instances = select_instances("vertex_cover", ["easy"], count=2).instances
    answers = {inst.prompt: "Answer: " + json.dumps(inst.reference["heuristic"]["solution"]) for inst in instances}
    fake: list[FakeOpenAI] = []
    broken = [True]

    def reply(text, png):
        messages = fake[0].requests[-1]["messages"]  # concurrency 1: the request being answered
        first = messages[0]["content"][-1]["text"]
        if len(messages) == 1:
            return "Answer: []"  # round 1: covers nothing
        return answers[first]

    def fault(number, text):
        return (401, 0.0) if broken[0] and text.startswith("Your answer") else None

    args = ["--model", "openai:fake", "--tasks", "vertex_cover", "--count", "2", "--rounds", "3",
            "--concurrency", "1", "--max-retries", "0"]
    with FakeOpenAI(reply, fault) as server:
        fake.append(server)
        stopped = _eval(tmp_path, "--base-url", server.url, *args)
        assert stopped.exit_code == 1, stopped.output
        assert all(len(body["messages"]) == 1 for body in server.requests[:2])
    folder = tmp_path / "openai_fake"
    assert {r["round"] for r in read_samples(folder / "samples.jsonl")} == {1}
    stopped_at_one = _results(folder)  # both samples owe round 2: not complete (it said complete, SR@1..3 equal)
    assert stopped_at_one["complete"] is False and stopped_at_one["missing_instances"] == 2
    assert runner.invoke(app, ["leaderboard", str(folder)]).exit_code == 1  # left out: incomplete

    broken[0] = False
    fake.clear()
    with FakeOpenAI(reply, fault, port=server.port) as server:  # the same endpoint, restarted
        fake.append(server)
        resumed = _eval(tmp_path, "--base-url", server.url, *args)
        assert resumed.exit_code == 0, resumed.output
        assert server.requests and all(len(body["messages"]) >= 3 for body in server.requests)  # no round 1 again
        second = server.requests[0]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert second[1]["content"] == "Answer: []"
    records = read_samples(folder / "samples.jsonl")
    for r in records:
        assert r["round"] >= 2 and r["feasible"] and r["per_round"][0]["feasible"] is False
    round_one = [r for r in _lines(folder / "samples.jsonl") if r["round"] == 1]
    assert any(v["message"] in second[2]["content"] for r in round_one for v in r["violations"])
    rounds = _results(folder)["metrics"]["text"]["overall"]["rounds"]
    assert rounds["1"]["sr"] == 0.0 and rounds["2"]["sr"] == 1.0 == rounds["3"]["sr"]


def _empty_then_the_reference(task: str, fake: list[FakeOpenAI]):
    """A reply function: `Answer: []` in round 1, the heuristic's answer in later rounds (the server
    answering is `fake[-1]`, at concurrency 1)."""
    instances = select_instances(task, ["easy"], count=2).instances
    answers = {inst.prompt: "Answer: " + json.dumps(inst.reference["heuristic"]["solution"]) for inst in instances}

    def reply(text, png):
        messages = fake[-1].requests[-1]["messages"]
        return "Answer: []" if len(messages) == 1 else answers[messages[0]["content"][-1]["text"]]

    return reply


def test_rounds_a_failed_round_is_retried_at_that_round(tmp_path):
    fake: list[FakeOpenAI] = []
    reply = _empty_then_the_reference("vertex_cover", fake)

    args = ["--model", "openai:fake", "--tasks", "vertex_cover", "--count", "2", "--rounds", "3",
            "--concurrency", "1", "--max-retries", "0"]
    with FakeOpenAI(reply, lambda number, text: (500, 0.0) if number == 3 else None) as server:
        fake.append(server)
        first = _eval(tmp_path, "--base-url", server.url, *args)
        assert first.exit_code == 1, first.output  # one sample's round 2 failed
    folder = tmp_path / "openai_fake"
    failed = [r for r in read_samples(folder / "samples.jsonl") if r["failed"]]
    assert len(failed) == 1 and failed[0]["round"] == 2 and failed[0]["per_round"][0]["feasible"] is False
    with FakeOpenAI(reply, port=server.port) as server:  # the same endpoint, restarted
        fake.append(server)
        again = _eval(tmp_path, "--base-url", server.url, *args)
        assert again.exit_code == 0, again.output
        assert len(server.requests) == 1 and len(server.requests[0]["messages"]) == 3
    assert [server.requests[0]["messages"][1]["content"], server.requests[0]["messages"][2]["content"]] == \
        failed[0]["history"][0]  # the same turns the failed call sent
    rounds = _results(folder)["metrics"]["text"]["overall"]["rounds"]
    assert rounds["1"]["sr"] == 0.0 and rounds["2"]["sr"] == 1.0


def test_rounds_from_a_failed_round_on_count_the_failure_as_the_groups_own_sr_does(tmp_path):
    """Round 1 feasible (an empty knapsack, objective 0, so feedback asks for more), then one sample's
    round 2 fails: its group's SR counts the failed call as infeasible, and so does round 2's, which
    carried round 1's answer forward (SR 100 beside 50)."""
    fake: list[FakeOpenAI] = []
    reply = _empty_then_the_reference("knapsack", fake)

    with FakeOpenAI(reply, lambda number, text: (500, 0.0) if number == 3 else None) as server:
        fake.append(server)
        _eval(tmp_path, "--base-url", server.url, "--model", "openai:fake", "--tasks", "knapsack", "--count", "2",
              "--rounds", "2", "--concurrency", "1", "--max-retries", "0", "--max-fail-rate", "1")
    overall = _results(tmp_path / "openai_fake")["metrics"]["text"]["overall"]
    assert overall["rounds"]["1"]["sr"] == 1.0
    assert overall["sr"] == 0.5 == overall["rounds"]["2"]["sr"]


def test_rounds_are_bounded_before_any_work():
    """--rounds 30000 built 30,000 figures in every group (10.7 MB of results.json, 2 columns each in the
    tables) though every sample stopped at round 2."""
    result = _eval("unused", "--model", "solver:repair", "--tasks", "knapsack", "--count", "1", "--rounds", "33")
    assert result.exit_code == 2 and "--rounds" in result.output and "between 1 and 32" in result.output, \
        result.output


def test_every_backend_sends_the_earlier_rounds_as_turns():
    from mmnp.evaluation.backend import Request
    from mmnp.evaluation.hf_backend import HFBackend

    inst = select_instances("knapsack", ["easy"], count=1).instances[0]
    request = Request(inst, "text", 0, inst.prompt, history=(("Answer: [0]", "Your answer is not feasible."),))
    roles = [(m["role"], m["content"] if isinstance(m["content"], str) else m["content"][-1]["text"])
             for m in request.openai_messages()]
    assert roles == [("user", inst.prompt), ("assistant", "Answer: [0]"), ("user", "Your answer is not feasible.")]
    hf = HFBackend.__new__(HFBackend)
    hf.vision, hf.name = False, "hf:tiny"
    assert [m["role"] for m in hf._chat(request)] == ["user", "assistant", "user"]
    assert hf._chat(request)[1:] == request.openai_messages()[1:]
    assert request.round == 2 and request.messages_sha256() != Request(inst, "text", 0, inst.prompt).messages_sha256()


def test_rescore_keeps_probe_and_round_records(tmp_path):
    assert _eval(tmp_path, "--model", "solver:repair", "--tasks", "knapsack,vertex_cover", "--count", "2",
                 "--rounds", "2", "--probe", "transcribe").exit_code == 0
    folder = tmp_path / "solver_repair"
    before = {r["key"]: r for r in read_samples(folder / "samples.jsonl")}
    results = _results(folder)
    result = _eval(tmp_path, "--model", "solver:repair", "--tasks", "knapsack,vertex_cover", "--count", "2",
                   "--rounds", "2", "--probe", "transcribe", "--rescore")
    assert result.exit_code == 0, result.output
    after = {r["key"]: r for r in read_samples(folder / "samples.jsonl")}
    assert after == before
    assert _results(folder)["metrics"] == results["metrics"]


REPAIR = ["--model", "solver:repair", "--tasks", "knapsack,vertex_cover", "--count", "2", "--rounds", "4"]


def _edit_log(folder, edit):
    path = folder / "samples.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(edit(r) or r) + "\n" for r in records))


def test_edited_round_scores_are_refused_and_rescore_rebuilds_them(tmp_path):
    """Every round's score is what its answer earns: an edited `per_round` (here: every round made
    feasible) is refused on a plain run, and --rescore verifies each round's answer again rather
    than keeping the stored scores (after which a plain run reuses everything)."""
    assert _eval(tmp_path, *REPAIR).exit_code == 0
    folder = tmp_path / "solver_repair"
    straight = _results(folder)["metrics"]
    assert straight["text"]["overall"]["rounds"]["1"]["sr"] == 0.0

    def all_feasible(r):
        for scores in r.get("per_round") or ():
            scores.update(feasible=True, ratio=1.0, opt_ratio=1.0)

    _edit_log(folder, all_feasible)
    refused = _eval(tmp_path, *REPAIR)
    assert refused.exit_code == 1 and "records per_round" in refused.output and "--rescore" in refused.output
    assert _eval(tmp_path, *REPAIR, "--rescore").exit_code == 0
    assert _results(folder)["metrics"] == straight
    again = _eval(tmp_path, *REPAIR)
    assert again.exit_code == 0, again.output
    assert _results(folder)["metrics"] == straight and _results(folder)["timing"]["this_run_calls"] == 0


def test_a_failed_records_earlier_rounds_and_fields_are_checked_too(tmp_path):
    assert _eval(tmp_path, *REPAIR).exit_code == 0
    folder = tmp_path / "solver_repair"
    path = folder / "samples.jsonl"
    later = next(json.loads(line) for line in path.read_text().splitlines() if json.loads(line)["round"] >= 2)
    retried = {**later, "failed": True, "error": "HTTP 500", "response": None, "feasible": False, "objective": None,
               "ratio": 0.0, "opt_ratio": 0.0, "canonical": None, "parsed": False, "violations": [],
               "parse_error": None, "per_round": [{**s, "feasible": True, "ratio": 1.0} for s in later["per_round"][:-1]]}
    with path.open("a") as f:  # a failed retry whose earlier rounds were edited to feasible
        f.write(json.dumps(retried) + "\n")
    refused = _eval(tmp_path, *REPAIR)
    assert refused.exit_code == 1 and f"sample {later['key']} records per_round" in refused.output
    log = path.read_text()
    for field, value in (("latency_s", "fast"), ("failed", "no"), ("id", "knapsack-easy-0099")):
        for rescore in ((), ("--rescore",)):  # never scored as something else by --rescore either
            path.write_text(log)
            _edit_log(folder, lambda r: r.update({field: value}) if r["key"] == later["key"] else None)
            odd = _eval(tmp_path, *REPAIR, *rescore)
            errors = [line for line in odd.output.splitlines() if line.startswith("error:")]
            assert odd.exit_code == 1 and "Traceback" not in odd.output and len(errors) == 1, odd.output
            assert f"sample {later['key']} is not a record as `mmnp eval` writes it" in errors[0]
