"""The base install runs the README's main job and evaluates an endpoint: every module they import
is the standard library's, mmnp's own, or a distribution its `dependencies` pull in. The test venv
holds far more (the extras and what they bring, click among them), so an undeclared import passes
every other test and breaks on a fresh machine: typer 0.29 vendors click and no longer installs it,
and `import click` in the CLI was such a break. Here the main job runs in a process that cannot
import anything else, and every import in mmnp's source names a distribution pyproject declares."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import mmnp
from fake_openai import FakeOpenAI, oracle

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("mmnp", "generators", "verifiers", "solvers", "evaluation", "trainers")
UNDECLARED = {  # imported lazily, on purpose in no extra
    "ray": "`mmnp generate --executor ray` on a Ray cluster (docs/datasets.md: pip install ray)",
    "verl": "mmnp.trainers.verl, for verl users, who bring their own verl",
}

BLOCKER = """
import importlib.abc, importlib.machinery, importlib.util, json, sys, sysconfig
ALLOWED = set(json.loads(sys.argv[1])) | {"mmnp"}
PATHS = sysconfig.get_paths()
SITE = tuple({PATHS["purelib"], PATHS["platlib"]})
STDLIB = tuple({PATHS["stdlib"], PATHS["platstdlib"]})

class Refused(ModuleNotFoundError):
    pass

class Undeclared(importlib.abc.MetaPathFinder):  # a top-level module neither the standard library's
    # nor a base dependency's is refused, wherever it is installed
    def find_spec(self, name, path, target=None):
        if path is not None or name in ALLOWED or name in sys.stdlib_module_names:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name)
        where = spec and (spec.origin if spec.has_location else next(iter(spec.submodule_search_locations or []), None))
        if where and not where.startswith(SITE) and where.startswith(STDLIB):  # e.g. _sysconfigdata_*
            return None
        raise Refused(f"No module named {name!r} (not a base dependency)", name=name)

def find_spec(name, package=None, _find=importlib.util.find_spec):  # absent, as on a base install
    try:
        return _find(name, package)
    except Refused:
        return None

importlib.util.find_spec = find_spec
sys.meta_path.insert(0, Undeclared())
sys.argv = ["mmnp", *sys.argv[2:]]
from mmnp.cli import app
app()
"""


def _name(text: str) -> str:
    return text.lower().replace("_", "-").replace(".", "-")


def declared() -> dict[str, list[Requirement]]:
    """pyproject's requirements: "" the base `dependencies`, else each extra's (mmnp[x] expanded)."""
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    groups = {"": [Requirement(t) for t in project["dependencies"]]}
    groups |= {extra: [Requirement(t) for t in texts] for extra, texts in project["optional-dependencies"].items()}
    for extra, reqs in groups.items():
        for req in [r for r in reqs if _name(r.name) == "mmnp"]:
            groups[extra] = [r for r in groups[extra] if r is not req] + [x for e in req.extras for x in groups[e]]
    return groups


def base_distributions() -> set[str]:
    """The base dependencies (read from pyproject, not from build metadata that may be stale) and
    theirs as installed, recursively, without extras: normalised names."""
    found, todo = set(), [_name(r.name) for r in declared()[""]]
    while todo:
        dist = todo.pop()
        if dist in found:
            continue
        found.add(dist)
        try:
            requires = importlib.metadata.requires(dist) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for text in requires:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(_name(req.name))
    return found


def owners() -> dict[str, set[str]]:
    """Top-level module -> the normalised names of the installed distributions that provide it."""
    return {top: {_name(d) for d in dists if d} for top, dists in importlib.metadata.packages_distributions().items()}


def base_modules() -> list[str]:
    dists = base_distributions()
    return sorted(top for top, names in owners().items() if names & dists)


def test_the_main_job_imports_only_the_base_dependencies(tmp_path: Path):
    allowed = json.dumps(base_modules())

    def cli(*args: str) -> str:
        run = subprocess.run([sys.executable, "-s", "-c", BLOCKER, allowed, *args], cwd=tmp_path,
                             capture_output=True, text=True, timeout=600,
                             env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
        assert run.returncode == 0, (args, run.stderr[-3000:])
        return run.stdout

    data, results = tmp_path / "data", tmp_path / "results"
    cli("generate", "--tasks", "all", "--difficulty", "easy", "--count", "1", "--seed", "0", "--out", str(data))
    for baseline in ("heuristic", "parrot"):
        cli("eval", "--model", f"solver:{baseline}", "--data", str(data), "--modality", "both",
            "--output-path", str(results))
    with FakeOpenAI(oracle(list(mmnp.load_dataset(data)))) as server:  # `pip install -e .`: "evaluate endpoints"
        cli("eval", "--model", "openai:fake", "--base-url", server.url, "--data", str(data), "--modality", "both",
            "--output-path", str(results))
    fake = json.loads((results / "openai_fake" / "results.json").read_text())
    assert fake["complete"] is True and fake["failed_samples"] == 0 and fake["missing_instances"] == 0
    cli("leaderboard", str(results), "--format", "html", "--out", str(tmp_path / "leaderboard.html"))
    board = cli("leaderboard", str(results))
    assert "heuristic" in board and "fake" in board
    assert (tmp_path / "leaderboard.html").stat().st_size > 0


def test_the_blocker_refuses_what_the_base_install_lacks():
    """What makes the test above mean something: in that process an import outside the base set
    fails (pytest, which runs this, comes with the test extra) and `find_spec` says it is absent."""
    allowed = json.dumps(base_modules())
    for probe, expected in [("import pytest", "not a base dependency"),
                            ("print(importlib.util.find_spec('pytest'))", "None")]:
        code = BLOCKER.replace("from mmnp.cli import app\napp()", probe)
        run = subprocess.run([sys.executable, "-s", "-c", code, allowed], capture_output=True, text=True, timeout=60)
        assert expected in run.stdout + run.stderr, (probe, run.stderr[-2000:])


def test_every_import_in_the_source_names_a_declared_distribution():
    """Whatever the installed versions bring along: each third-party module that mmnp's source
    imports comes from a distribution pyproject names itself (the base dependencies or an extra),
    so a dependency's own dependency (click, once typer's) is never relied on."""
    named = {_name(r.name) for reqs in declared().values() for r in reqs}
    provided = owners()
    undeclared = {}
    for layer in LAYERS:
        for path in (ROOT / layer).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                modules = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                           [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                           else [])
                for top in {m.partition(".")[0] for m in modules}:
                    if top in sys.stdlib_module_names or top == "mmnp" or top in UNDECLARED:
                        continue
                    if not provided.get(top, {top.replace("_", "-")}) & named:  # not installed: its own name
                        undeclared.setdefault(top, []).append(str(path.relative_to(ROOT)))
    assert not undeclared, f"imports that no pyproject requirement provides: {undeclared}"
