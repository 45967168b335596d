"""An 11th task added as a new contributor would, from outside mmnp: independent set's three files
(tests/plugin_task/, built on mmnp's graph kit) and one `mmnp.tasks` entry point, with no mmnp
file edited. The conformance suite holds it to everything it holds the built-ins to, and the
commands (tasks, generate, eval, import, the harness task folders) see it; a broken task plug-in
breaks only its own use, in one line naming it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml
from plugin_site import LAYERS, task_site

TESTS = Path(__file__).parent
TOOLS = Path(sys.executable).parent


def _env(site: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(site), "COLUMNS": "200", **extra}


def _mmnp(args: list[str], site: Path, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(TOOLS / "mmnp"), *args], capture_output=True, text=True, env=_env(site), cwd=cwd,
                          timeout=300)


def test_the_plug_in_is_three_files_and_one_entry_point(tmp_path):
    site = task_site(tmp_path / "site")
    files = sorted(str(p.relative_to(site)) for p in site.rglob("*") if p.is_file() and ".dist-info" not in str(p))
    assert files == [f"mmnp_independent_set/{layer}/independent_set.py" for layer in sorted(LAYERS)]
    assert (next(site.glob("*.dist-info")) / "entry_points.txt").read_text().split() == [
        "[mmnp.tasks]", "independent_set", "=", "mmnp_independent_set"]


def test_the_conformance_suite_holds_the_11th_task_to_all_of_it(tmp_path):
    """The task-parametrised suites (protocol, ladder, big pictures, transcription, pictures) run on
    the plug-in task alone, selected by MMNP_TEST_TASKS, and pass."""
    site = task_site(tmp_path / "site")
    suites = ["test_conformance.py", "test_levels.py", "test_big_pictures.py", "test_transcribe.py", "test_pictures.py"]
    done = subprocess.run([sys.executable, "-m", "pytest", *(str(TESTS / s) for s in suites), "-q", "-p",
                           "no:cacheprovider", "-k", "independent_set", "-o", "addopts="],
                          capture_output=True, text=True, env=_env(site, MMNP_TEST_TASKS="independent_set"),
                          timeout=900, cwd=tmp_path)
    summary = done.stdout.strip().splitlines()[-1]
    assert done.returncode == 0 and "failed" not in summary, done.stdout[-4000:]
    assert int(summary.split(" passed")[0].split()[-1]) >= 60, summary  # every per-task check ran on it


def test_the_commands_see_the_11th_task(tmp_path):
    site = task_site(tmp_path / "site")
    listed = _mmnp(["tasks", "--json"], site, tmp_path)
    assert listed.returncode == 0, listed.stderr
    rows = {r["name"]: r for r in json.loads(listed.stdout)}
    assert list(rows)[-1] == "independent_set" and rows["independent_set"]["category"] == "graph"

    data = tmp_path / "data"
    made = _mmnp(["generate", "--tasks", "independent_set,tsp", "--difficulty", "easy,L6", "--count", "2", "--out",
                  str(data), "--workers", "1", "--time-limit", "0.5"], site, tmp_path)
    assert made.returncode == 0, made.stderr
    manifest = json.loads((data / "manifest.json").read_text())
    assert manifest["counts"]["independent_set"] == {"easy": 2, "L6": 2}
    assert manifest["task_versions"]["independent_set"] == 1
    assert len(list((data / "independent_set" / "images").glob("*.png"))) == 4

    scored = _mmnp(["eval", "--model", "solver:heuristic", "--data", str(data), "--tasks", "independent_set",
                    "--difficulty", "easy,L6", "--output-path", str(tmp_path / "runs")], site, tmp_path)
    assert scored.returncode == 0, scored.stderr
    results = json.loads(next((tmp_path / "runs").rglob("results.json")).read_text())
    assert "independent_set" in json.dumps(results["metrics"])

    for package, group in (("mmnp.lm_eval_tasks", "mmnp_text"), ("mmnp.lmms_eval_tasks", "mmnp_image")):
        folder = subprocess.run([sys.executable, "-m", package], capture_output=True, text=True, env=_env(site),
                                check=True, cwd=tmp_path).stdout.strip()
        assert f"{group}_independent_set" in yaml.safe_load((Path(folder) / f"{group}.yaml").read_text())["task"]
        assert (Path(folder) / f"{group}_independent_set.yaml").is_file()


def test_a_dimacs_graph_imports_as_the_11th_task(tmp_path, monkeypatch):
    """The import formats a task takes are declared by the task (IMPORTS): the plug-in reads DIMACS."""
    from mmnp.importers import import_files, tasks_reading

    monkeypatch.syspath_prepend(str(task_site(tmp_path / "site")))
    assert "independent_set" in tasks_reading("dimacs") and "independent_set" not in tasks_reading("tsplib")
    graph = tmp_path / "pentagon.col"
    graph.write_text("p edge 5 5\ne 1 2\ne 2 3\ne 3 4\ne 4 5\ne 5 1\n")
    manifest = import_files("dimacs", [graph], tmp_path / "out", task="independent_set", images=False)
    record = json.loads((tmp_path / "out" / "independent_set" / "imported.jsonl").read_text().splitlines()[0])
    assert record["reference"]["optimal"]["objective"] == 2 and manifest["counts"]["independent_set"]


def test_a_broken_task_plug_in_breaks_only_its_own_use(tmp_path):
    broken = task_site(tmp_path / "site", broken={"generators": "raise ImportError('no such kit')\n"})
    listed = _mmnp(["tasks"], broken, tmp_path)
    assert listed.returncode == 0 and "tsp" in listed.stdout and "independent_set" not in listed.stdout
    assert "task 'independent_set' (plug-in mmnp-independent-set 0.1" in listed.stderr
    used = _mmnp(["generate", "--tasks", "independent_set", "--count", "1", "--out", str(tmp_path / "d")],
                 broken, tmp_path)
    assert used.returncode != 0 and used.stderr.count("\n") == 1, used.stderr
    assert "mmnp-independent-set" in used.stderr and "mmnp_independent_set.generators.independent_set" in used.stderr
    lacking = task_site(tmp_path / "lacking", broken={"verifiers": "DIRECTION = 'max'\n"})
    used = _mmnp(["generate", "--tasks", "independent_set", "--count", "1", "--out", str(tmp_path / "d")],
                 lacking, tmp_path)
    assert "lacks VIOLATION_KINDS, parse, check, canonical, format" in used.stderr and used.stderr.count("\n") == 1
    other = _mmnp(["generate", "--tasks", "tsp", "--count", "1", "--out", str(tmp_path / "t"), "--workers", "1",
                   "--no-optimal"], broken, tmp_path)
    assert other.returncode == 0, other.stderr


def test_a_built_in_task_loads_without_reading_entry_points():
    """The reward workers' hot path: get_task of a built-in name reads no installed metadata."""
    code = ("import mmnp.registry as r; r.get_task('tsp'); r.get_task('tsp'); "
            "print(r.TASKS._scan is None)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "True"


def test_a_task_without_the_optional_transcription_form_is_evaluated_and_only_the_probe_refused(tmp_path):
    """TRANSCRIPTION is optional, yet every `mmnp eval` of a task without one failed ("no transcription
    form"), text included: the probe's prompt was built for every request. Now only `--probe
    transcribe` needs it, refused in one line before any call."""
    source = (TESTS / "plugin_task" / "mmnp_independent_set" / "generators" / "independent_set.py").read_text()
    kept = [line for line in source.splitlines(keepends=True) if not line.startswith("TRANSCRIPTION")]
    assert len(kept) == len(source.splitlines()) - 1
    site = task_site(tmp_path / "site", broken={"generators": "".join(kept)})
    data = tmp_path / "data"
    made = _mmnp(["generate", "--tasks", "independent_set", "--difficulty", "easy", "--count", "2", "--out", str(data),
                  "--workers", "1", "--no-optimal"], site, tmp_path)
    assert made.returncode == 0, made.stderr
    scored = _mmnp(["eval", "--model", "solver:heuristic", "--data", str(data), "--modality", "both",
                    "--output-path", str(tmp_path / "runs")], site, tmp_path)
    assert scored.returncode == 0, scored.stderr
    probed = _mmnp(["eval", "--model", "solver:heuristic", "--data", str(data), "--probe", "transcribe",
                    "--output-path", str(tmp_path / "probe")], site, tmp_path)
    assert probed.returncode == 2 and "no transcription form for task 'independent_set'" in probed.stderr, probed.stderr
    assert not list((tmp_path / "probe").rglob("samples.jsonl"))
