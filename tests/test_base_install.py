"""The base install runs the README's main job and evaluates an endpoint: every module they import is the standard library's,
mmnp's own, or a distribution its `dependencies` pull in. The test venv holds far more (the extras
and what they bring, click among them), so an undeclared import passes every other test and breaks
on a fresh machine: typer 0.29 vendors click and no longer installs it, and `import click` in the CLI
was such a break. Here the main job runs in a process that cannot import anything else."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

from packaging.requirements import Requirement

import mmnp
from fake_openai import FakeOpenAI, oracle

BLOCKER = """
import importlib.abc, importlib.machinery, json, sys, sysconfig
ALLOWED = set(json.loads(sys.argv[1]))
SITE = tuple({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})

class Undeclared(importlib.abc.MetaPathFinder):
    \"\"\"Refuses a top-level module installed in site-packages that no base dependency provides.\"\"\"
    def find_spec(self, name, path, target=None):
        if path is None and name not in ALLOWED:
            spec = importlib.machinery.PathFinder.find_spec(name)
            where = (spec.origin or "") if spec and spec.has_location else next(iter(spec.submodule_search_locations or []), "") if spec else ""
            if where.startswith(SITE):
                raise ModuleNotFoundError(f"No module named {name!r} (not a base dependency)", name=name)
        return None

sys.meta_path.insert(0, Undeclared())
sys.argv = ["mmnp", *sys.argv[2:]]
from mmnp.cli import app
app()
"""


def base_distributions() -> set[str]:
    """mmnp's base dependencies and theirs, recursively (no extras), as normalised names."""
    def name(text: str) -> str:
        return text.lower().replace("_", "-").replace(".", "-")

    found, todo = set(), ["mmnp"]
    while todo:
        dist = todo.pop()
        if dist in found:
            continue
        found.add(dist)
        try:
            requires = importlib.metadata.requires(dist) or []
        except importlib.metadata.PackageNotFoundError:  # an optional one the environment lacks
            continue
        for text in requires:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(name(req.name))
    return found


def base_modules() -> list[str]:
    dists = base_distributions()
    return sorted(top for top, owners in importlib.metadata.packages_distributions().items()
                  if any(o.lower().replace("_", "-").replace(".", "-") in dists for o in owners))


def test_the_main_job_imports_only_the_base_dependencies(tmp_path: Path):
    allowed = json.dumps(base_modules())

    def cli(*args: str) -> str:
        run = subprocess.run([sys.executable, "-c", BLOCKER, allowed, *args], cwd=tmp_path, capture_output=True,
                             text=True, timeout=600)
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


def test_the_blocker_refuses_what_the_base_install_lacks(tmp_path: Path):
    """What makes the test above mean something: an import outside the base set fails in that process
    (pytest, which runs this, comes with the test extra, not with the base install)."""
    code = BLOCKER.replace("from mmnp.cli import app\napp()", "import pytest")
    run = subprocess.run([sys.executable, "-c", code, json.dumps(base_modules())], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode != 0 and "not a base dependency" in run.stderr
