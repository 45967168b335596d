"""The two floors of every leaderboard: `solver:parrot` (a model that answers with its own
prompt) scores nothing, and `solver:trivial` (each task's simplest feasible answer) scores
SR 1 with the QR that feasibility alone earns; the perception probe's instruction and the
classic set's prompts are held to the same. Presets and levels: tests/test_conformance.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mmnp
from mmnp.core import Instance
from mmnp.dataset import load_dataset
from mmnp.importers import classic_instances
from mmnp.levels import TOP
from mmnp.transcribe import probe_prompt, score_transcription, tasks as probe_tasks

LEVELS = ("easy", "medium", "hard", *(f"L{k}" for k in range(1, TOP + 1)))


def _echoes(prompt: str) -> list[str]:
    lines = prompt.splitlines()
    return [prompt] + ["\n".join(lines[k:]) for k in range(1, len(lines))] + lines


@pytest.mark.parametrize("name", probe_tasks())
def test_echoing_the_probe_instruction_transcribes_nothing(name):
    """The probe's JSON form is a template (<...> is no JSON): an echo, whole or any line of it,
    reads as no transcription, so every field scores 0 on every preset and level."""
    task = mmnp.get_task(name)
    prompt = probe_prompt(name)
    for difficulty in LEVELS:
        inst = task.generate(difficulty, seed=1)
        for echo in _echoes(prompt):
            exact, fields = score_transcription(name, inst.data, echo)
            assert not exact and set(fields.values()) == {0.0}, (inst.id, echo[:60], fields)


def test_classic_instances_give_a_parrot_nothing_and_trivial_everything():
    """Every shipped classic instance, text and image prompt: no echo is feasible, and the
    task's trivial answer is."""
    items = classic_instances()
    assert {item.task for item in items} >= {"tsp", "graph_coloring", "knapsack", "set_cover", "max_clique"}
    for item in items:
        task = mmnp.get_task(item.task)
        record = {"instance": item.data}
        for prompt in (task.generator.prompt(item.data), task.generator.IMAGE_PROMPT):
            for echo in _echoes(prompt):
                assert not task.verify(record, echo).feasible, (item.name, echo[-80:])
        verdict = task.verify(record, task.format_answer(task.solver.trivial(item.data)))
        assert verdict.feasible, (item.name, verdict.summary())


@settings(max_examples=60, deadline=None)
@given(n=st.integers(3, 14), p=st.floats(0.1, 0.9), seed=st.integers(0, 10**6))
def test_trivial_cycle_is_a_shortest_cycle(n, p, seed):
    """longest_cycle's floor is a girth cycle (networkx's girth), and empty only without cycles."""
    graph = nx.gnp_random_graph(n, p, seed=seed)
    data = {"n": n, "edges": sorted([min(e), max(e)] for e in graph.edges)}
    cycle = mmnp.get_task("longest_cycle").solver.trivial(data)
    girth = nx.girth(graph)
    if girth == float("inf"):
        assert cycle == []
    else:
        assert len(cycle) == girth
        assert mmnp.get_task("longest_cycle").verifier.check(data, cycle)[1] == []


@settings(max_examples=60, deadline=None)
@given(numbers=st.lists(st.integers(1, 60), min_size=1, max_size=12), picks=st.data())
def test_trivial_subset_sum_uses_the_fewest_numbers(numbers, picks):
    """subset_sum's floor hits the target with as few numbers as any subset does (brute force)."""
    from itertools import combinations

    chosen = picks.draw(st.lists(st.sampled_from(range(len(numbers))), min_size=1, unique=True))
    data = {"numbers": numbers, "target": sum(numbers[i] for i in chosen)}
    answer = mmnp.get_task("subset_sum").solver.trivial(data)
    fewest = min(k for k in range(1, len(numbers) + 1)
                 if any(sum(numbers[i] for i in c) == data["target"] for c in combinations(range(len(numbers)), k)))
    assert sum(numbers[i] for i in answer) == data["target"] and len(set(answer)) == len(answer) == fewest


def _eval(model: str, data: Path, out: Path) -> dict:
    subprocess.run([sys.executable, "-m", "mmnp", "eval", "--model", f"solver:{model}", "--data", str(data),
                    "--modality", "both", "--probe", "transcribe", "--output-path", str(out)],
                   check=True, capture_output=True, text=True)
    return json.loads((out / f"solver_{model}" / "results.json").read_text())


def test_floors_through_eval_and_the_leaderboard(small_dataset: Path, tmp_path: Path):
    """The real CLI on a generated dataset: the parrot's every response is its own prompt and
    scores SR 0, QR 0 and a probe F1 of 0 on every task and modality; trivial scores SR 1 on
    every task with the QR its answers earn against each instance's reference; the
    leaderboard shows both rows."""
    out = tmp_path / "results"
    parrot, trivial = _eval("parrot", small_dataset, out), _eval("trivial", small_dataset, out)
    instances = {inst.id: inst for inst in load_dataset(small_dataset)}
    for line in (out / "solver_parrot" / "samples.jsonl").read_text().splitlines():
        sample = json.loads(line)
        inst = instances[sample["id"]]
        asked = {"text": inst.prompt, "image": inst.image_prompt, "probe": probe_prompt(inst.task)}[sample["modality"]]
        assert sample["response"] == asked and not sample.get("feasible")
    assert parrot["complete"] and trivial["complete"]
    assert parrot["metrics"]["probe"]["overall"] == {"field_f1": 0.0, "instances": len(instances),
                                                     "recognition_accuracy": 0.0}
    for modality in ("text", "image"):
        for name, row in parrot["metrics"][modality]["tasks"].items():
            assert (row["sr"], row["qr"], row["parse_rate"]) == (0.0, 0.0, 0.0), (name, modality)
        for name, row in trivial["metrics"][modality]["tasks"].items():
            task = mmnp.get_task(name)
            ratios = [task.quality_ratio(task.verify(i, task.format_answer(task.solver.trivial(i.data))).objective,
                                         i.reference_objective) for i in instances.values() if i.task == name]
            assert row["sr"] == 1.0 and row["qr"] == pytest.approx(sum(ratios) / len(ratios)), (name, modality)
    board = subprocess.run([sys.executable, "-m", "mmnp", "leaderboard", str(out), "--format", "csv"],
                           check=True, capture_output=True, text=True).stdout
    assert "solver:parrot" in board and "solver:trivial" in board


def test_parrot_answers_only_with_its_prompt():
    """solver:parrot's reply is the request's text, whatever the instance: no solution leaks in."""
    from mmnp.evaluation.backend import Request, Sampling
    from mmnp.evaluation.solver_backend import SolverBackend

    inst: Instance = mmnp.get_task("knapsack").generate("easy", seed=3)
    got = []
    SolverBackend("parrot").run([Request(inst, "text", 0, "just this")], Sampling(), lambda r, c: got.append(c.text))
    assert got == ["just this"]
