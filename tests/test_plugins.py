"""Plug-ins through entry points (`mmnp.plugins`): listed without importing anything, loaded on
use, a broken one failing only its own use with one line naming it; and, for backends, the
whole path a separate package takes: `mmnp backends`, `mmnp eval`, help, the conformance suite."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from plugin_site import broken_site, reference_site, write_distribution
from typer.testing import CliRunner

from mmnp.cli import app
from mmnp.errors import UsageError
from mmnp.plugins import GROUPS, PluginError, Registry, UnknownPluginError
from mmnp.samplelog import read_samples

runner = CliRunner()
TOOLS = Path(sys.executable).parent


@pytest.fixture
def sites(tmp_path, monkeypatch) -> tuple[Path, Path]:
    """The working and the broken plug-in distributions, on sys.path for this test only."""
    good, bad = reference_site(tmp_path / "good"), broken_site(tmp_path / "bad")
    for site in (good, bad):
        monkeypatch.syspath_prepend(str(site))
    yield good, bad
    for name in ("mmnp_reference_plugin", "mmnp_broken_plugin"):
        sys.modules.pop(name, None)


def _write_toys(site: Path) -> Path:
    """One distribution with an entry point in each group, each module recording its import."""
    modules = {f"toy_{g.split('.')[1]}": "import builtins\nbuiltins.TOYS_IMPORTED = getattr(builtins, 'TOYS_IMPORTED', "
               f"[]) + ['{g}']\nTHING = {{'group': '{g}'}}\n" for g in GROUPS}
    return write_distribution(site, "mmnp-toys", "1.2", modules,
                              {g: {"toy": f"toy_{g.split('.')[1]}:THING"} for g in GROUPS})


@pytest.mark.parametrize("group", GROUPS)
def test_each_group_lists_its_plug_ins_without_importing_them(group, tmp_path, monkeypatch):
    import builtins

    monkeypatch.syspath_prepend(str(_write_toys(tmp_path)))
    monkeypatch.setattr(builtins, "TOYS_IMPORTED", [], raising=False)
    registry = Registry(group, {"own": "json:dumps"}, kind="thing")
    assert registry.names() == ["own", "toy"]
    entry = registry.entries()["toy"]
    assert (entry.distribution, entry.version, entry.origin) == ("mmnp-toys", "1.2", "plug-in mmnp-toys 1.2")
    assert builtins.TOYS_IMPORTED == []  # listing read metadata only
    assert registry.load("toy") == {"group": group} and builtins.TOYS_IMPORTED == [group]
    assert registry.load("toy") is registry.load("toy") and builtins.TOYS_IMPORTED == [group]  # imported once
    assert registry.load("own") is json.dumps and "json" in registry.entries()["own"].where


def test_a_broken_plug_in_fails_alone_with_one_line_naming_it(sites):
    registry = Registry("mmnp.backends", {"own": "json:dumps"}, kind="backend")
    with pytest.raises(PluginError) as caught:
        registry.load("broken")
    line = str(caught.value)
    assert "\n" not in line
    for part in ("backend 'broken'", "plug-in mmnp-broken-plugin 0.2", "group mmnp.backends",
                 "RuntimeError: this plug-in is broken on purpose", "fix or uninstall mmnp-broken-plugin"):
        assert part in line, line
    assert registry.load("own") is json.dumps and registry.load("reference").__name__ == "ReferenceBackend"


def test_check_refuses_what_the_group_cannot_use(sites):
    def must_be_a_function(name, obj):
        if not callable(obj) or isinstance(obj, type):
            raise TypeError(f"{name} is not a function")

    registry = Registry("mmnp.backends", {}, kind="backend", check=must_be_a_function)
    with pytest.raises(PluginError, match=r"backend 'reference' \(plug-in mmnp-reference-plugin 0.1.*is not usable: "
                                          r"TypeError: reference is not a function"):
        registry.load("reference")


def test_clashes_are_reported_and_never_silently_resolved(tmp_path, monkeypatch):
    target = {"dup": "json:loads", "own": "json:loads", "bad name!": "json:loads"}
    monkeypatch.syspath_prepend(str(write_distribution(tmp_path / "a", "dist-a", "1", {}, {"mmnp.tasks": target})))
    monkeypatch.syspath_prepend(str(write_distribution(tmp_path / "b", "dist-b", "1", {}, {"mmnp.tasks": {
        "dup": "json:dumps"}})))
    registry = Registry("mmnp.tasks", {"own": "json:dumps"}, kind="task")
    assert registry.names() == ["own"]
    assert registry.load("own") is __import__("json").dumps  # mmnp's own name wins over the plug-in's
    problems = registry.problems()
    assert any("'dup' (group mmnp.tasks) is offered by dist-a (json:loads) and dist-b (json:dumps)" in p
               for p in problems), problems
    assert any("'own'" in p and "mmnp's own task" in p for p in problems)
    assert any("'bad name!'" in p and "ignored" in p for p in problems)
    with pytest.raises(PluginError, match="uninstall all but one"):
        registry.load("dup")
    with pytest.raises(UnknownPluginError, match="unknown task 'nope'; use one of own") as caught:
        registry.load("nope")
    assert isinstance(caught.value, (UsageError, KeyError))


def test_a_task_or_reward_shadowed_by_a_built_in_is_reported_where_it_would_be_listed(tmp_path, monkeypatch,
                                                                                     capsys):
    """`mmnp tasks` and `--reward`'s help list what loads; a plug-in named like a built-in is never
    chosen, and the listing says why it is missing instead of dropping it in silence."""
    from mmnp.registry import list_tasks
    from mmnp.trainers.rewards import describe_rewards

    monkeypatch.syspath_prepend(str(write_distribution(tmp_path / "site", "mmnp-shadowing", "2.0", {}, {
        "mmnp.tasks": {"tsp": "json"}, "mmnp.rewards": {"quality": "json:loads"}})))
    assert [task.name for task in list_tasks()][0] == "tsp"
    said = capsys.readouterr().err
    assert "not offered: task 'tsp' (plug-in mmnp-shadowing 2.0" in said and "mmnp's own task 'tsp'" in said
    list_tasks()
    assert capsys.readouterr().err == ""  # said once a process
    assert "not offered: reward 'quality' (plug-in mmnp-shadowing 2.0" in describe_rewards()


def test_registration_in_code_is_seen_at_once():
    table = {"a": "json:dumps"}
    registry = Registry("mmnp.rewards", table, kind="reward")
    table["b"] = len
    assert registry.names()[:2] == ["a", "b"] and registry.load("b") is len
    table["b"] = "json:loads"  # registered again: the new target is loaded
    assert registry.load("b") is __import__("json").loads


def test_a_plug_in_backend_is_listed_documented_and_evaluated(sites, tmp_path):
    listing = runner.invoke(app, ["backends"])
    assert listing.exit_code == 0, listing.output
    rows = {line.split("\t")[0]: line.split("\t")[1:] for line in listing.stdout.splitlines()}
    assert rows["reference"] == ["plug-in mmnp-reference-plugin 0.1", "mmnp_reference_plugin:ReferenceBackend"]
    assert rows["solver"][0] == "built-in" and rows["broken"][0] == "plug-in mmnp-broken-plugin 0.2"
    assert "mmnp_reference_plugin" not in sys.modules  # listed, not imported

    shown = runner.invoke(app, ["backends", "reference", "--json"])
    options = {o["name"]: o for o in json.loads(shown.stdout)["options"]}
    assert options["repeat"]["type"] == "int" and options["note"]["help"] == "a line written before every answer"

    out = tmp_path / "runs"
    done = runner.invoke(app, ["eval", "--model", "reference:any", "--model-args", "note=hello,repeat=2",
                               "--tasks", "knapsack,tsp", "--difficulty", "easy", "--count", "2",
                               "--output-path", str(out)])
    assert done.exit_code == 0, done.output
    results = json.loads((out / "reference_any" / "results.json").read_text())
    assert results["metrics"]["text"]["overall"]["sr"] == 1.0 and results["complete"] is True
    records = read_samples(out / "reference_any" / "samples.jsonl")
    assert len(records) == 4 and all(r["response"].startswith("hello\n") for r in records)
    with pytest.raises(UsageError, match="expected int"):  # --model-args are typed by the plug-in's own Options
        from mmnp.evaluation.backend import build_options
        build_options("reference", {"repeat": "twice"})


def test_a_broken_plug_in_breaks_only_its_own_use(sites, tmp_path):
    used = runner.invoke(app, ["eval", "--model", "broken:x", "--tasks", "knapsack", "--count", "1",
                               "--output-path", str(tmp_path)])
    assert used.exit_code == 1
    errors = [line for line in used.output.splitlines() if line.strip()]
    assert len(errors) == 1 and "mmnp-broken-plugin" in errors[0] and "RuntimeError" in errors[0], used.output
    helped = runner.invoke(app, ["eval", "--model", "broken:", "--help"], terminal_width=200)
    assert helped.exit_code == 0 and "broken: backend 'broken' (plug-in mmnp-broken-plugin" in " ".join(
        helped.output.split())
    for args in (["tasks"], ["backends"], ["backends", "solver"], ["eval", "--help"],
                 ["eval", "--model", "solver:heuristic", "--tasks", "knapsack", "--count", "1", "--output-path",
                  str(tmp_path)]):
        assert runner.invoke(app, args).exit_code == 0, args
    assert runner.invoke(app, ["backends", "broken"]).exit_code == 1


def test_a_broken_built_in_backend_breaks_only_its_own_use(monkeypatch, tmp_path):
    from mmnp.evaluation import backend

    monkeypatch.setitem(backend.BACKENDS, "fragile", "mmnp.evaluation.no_such_backend:Backend")
    used = runner.invoke(app, ["eval", "--model", "fragile:x", "--tasks", "knapsack", "--count", "1",
                               "--output-path", str(tmp_path)])
    assert used.exit_code == 1 and "backend 'fragile' (built-in" in used.output
    assert "ModuleNotFoundError" in used.output and len(used.output.strip().splitlines()) == 1, used.output
    listed = runner.invoke(app, ["backends"])
    assert listed.exit_code == 0 and "fragile\tbuilt-in" in listed.stdout


def _mmnp(args: list[str], pythonpath: list[Path]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, pythonpath)), "COLUMNS": "200"}
    return subprocess.run([str(TOOLS / "mmnp"), *args], capture_output=True, text=True, env=env, timeout=120)


def test_the_installed_command_survives_a_broken_plug_in(tmp_path):
    """In a fresh process, as a user runs it: nothing about a broken plug-in is touched by
    `mmnp tasks`, and `--model broken:...` fails in one line."""
    bad = broken_site(tmp_path / "bad")
    listed = _mmnp(["tasks"], [bad])
    assert listed.returncode == 0 and "knapsack" in listed.stdout, listed.stderr
    used = _mmnp(["eval", "--model", "broken:x", "--tasks", "knapsack", "--count", "1", "--output-path",
                  str(tmp_path / "out")], [bad])
    assert used.returncode == 1 and used.stderr.count("\n") == 1 and "mmnp-broken-plugin" in used.stderr, used.stderr


def test_import_mmnp_cli_imports_no_backend(tmp_path):
    code = ("import json, sys, mmnp.cli; print(json.dumps(sorted(m for m in sys.modules if m.endswith('_backend') "
            "or m.startswith('mmnp_') or m == 'mmnp.evaluation.backend')))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(reference_site(tmp_path / "good")),
                                                        str(broken_site(tmp_path / "bad"))])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert json.loads(done.stdout) == []


def test_the_conformance_suite_picks_up_a_plug_in_with_no_test_edit(tmp_path):
    """tests/test_backends.py runs every registered backend: a plug-in installed beside mmnp is run
    (and passes), and one that cannot run here is skipped with the reason it declares."""
    good = reference_site(tmp_path / "good")
    env = {**os.environ, "PYTHONPATH": str(good)}
    done = subprocess.run([sys.executable, "-m", "pytest", str(Path(__file__).parent / "test_backends.py"), "-q",
                           "-rs", "-p", "no:cacheprovider", "-k", "reference or tpu", "-o", "addopts="],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
    summary = done.stdout.splitlines()[-1]
    assert "passed" in summary and "failed" not in summary, done.stdout[-3000:]
    assert "tpu: needs a TPU pod" in done.stdout
    passed = int(summary.split(" passed")[0].split()[-1])
    assert passed >= 3  # documented options, answers each request once, resumes: all ran for `reference`
