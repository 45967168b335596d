"""benchmarks/bench_published.py reads what `mmnp import` refuses with wider bounds, says which
rows those are, and leaves the import bounds as they were."""

from __future__ import annotations

import json

import benchmark_scripts
import pytest

from mmnp import importers


def test_instances_beyond_the_import_bounds_are_measured_and_counted_apart(tmp_path, monkeypatch, capsys):
    script = benchmark_scripts.load("bench_published")
    files = tmp_path / "files"
    files.mkdir()
    (files / "c5.col").write_text("p edge 5 5\n" + "".join(f"e {i} {i % 5 + 1}\n" for i in range(1, 6)))
    subsets = importers.MAX_SUBSETS + 1  # one column more than `mmnp import` takes
    (files / "wide.txt").write_text(f"3 {subsets}\n" + "1 " * subsets + "\n"
                                    + "".join(f"{subsets} " + " ".join(map(str, range(1, subsets + 1))) + "\n"
                                              for _ in range(3)))
    listed = tmp_path / "published.json"
    listed.write_text(json.dumps({"instances": [
        {"task": "graph_coloring", "name": "c5", "file": "c5.col", "format": "dimacs", "optimum": 3,
         "proven": True, "source": "odd cycle"},
        {"task": "set_cover", "name": "wide", "file": "wide.txt", "format": "orlib", "unit_costs": True,
         "optimum": 1, "proven": True, "source": "one subset holds all"}]}))
    monkeypatch.setattr(script, "LIST", listed)
    bounds = {name: getattr(importers, name) for name in script.WIDER_BOUNDS}

    out = tmp_path / "rows.json"
    assert script.main(["--dir", str(files), "--no-classic", "--json", str(out)]) == 0

    rows = {row["name"]: row for row in json.loads(out.read_text())}
    assert rows["c5"]["importable"] and rows["c5"]["heuristic"] == 3
    assert not rows["wide"]["importable"] and rows["wide"]["heuristic"] == 1 and rows["wide"]["size"].endswith("*")
    assert "1 of them within `mmnp import`'s bounds, 1 of those within 2%" in capsys.readouterr().out
    assert {name: getattr(importers, name) for name in script.WIDER_BOUNDS} == bounds


def test_what_the_classic_set_measured_is_not_listed_as_missing_and_bad_selections_are_refused(tmp_path, capsys):
    """With no files on disk, knapPI_1_200_1000_1 was measured from the shipped classic set and also
    listed under "not on disk"; a mistyped task or a missing --dir printed "0 instances" and exit 0."""
    script = benchmark_scripts.load("bench_published")
    (tmp_path / "empty").mkdir()
    script.main(["--dir", str(tmp_path / "empty"), "--tasks", "knapsack"])
    out = capsys.readouterr().out
    measured = {line.split()[1] for line in out.splitlines() if line.startswith("knapsack ")}
    missing = out.split("not on disk")[1]
    assert "knapPI_1_200_1000_1" in measured and not any(f"knapsack:{name}," in missing + ","
                                                         for name in measured)
    for argv, words in ((["--tasks", "max_cliqe"], "no task named max_cliqe"),
                        (["--dir", str(tmp_path / "nowhere")], "no such folder")):
        with pytest.raises(SystemExit) as stop:
            script.main(argv)
        assert stop.value.code == 2 and words in capsys.readouterr().err


def test_benchmark_scripts_refuse_bad_input_in_one_line(tmp_path):
    """Tracebacks (an IndexError for --count 0) and a "0 pictures compared, 0 differ" pass on
    samples that do not match: each is now one line and a failing exit."""
    import subprocess
    import sys

    run = lambda name, *args: subprocess.run(  # noqa: E731
        [sys.executable, str(benchmark_scripts.BENCHMARKS / f"{name}.py"), *args], capture_output=True, text=True,
        cwd=tmp_path)
    for name, args, words in (("bench_tasks", ["--tasks", "tsp", "--count", "0"], "--count and --repeat must be"),
                              ("bench_tasks", ["--tasks", "nope"], "error: unknown task 'nope'"),
                              ("bench_integrity", ["--data", str(tmp_path / "nowhere")], "is not a folder")):
        done = run(name, *args)
        assert done.returncode in (1, 2) and "Traceback" not in done.stderr and words in done.stderr, done.stderr
    assert run("picture_hashes", "--out", "a.json", "--tasks", "knapsack", "--difficulties", "easy",
               "--count", "1").returncode == 0
    done = run("picture_hashes", "--out", "b.json", "--against", "a.json", "--tasks", "tsp", "--difficulties", "easy",
               "--count", "1")
    assert done.returncode == 1 and "2 pictures are in only one of" in done.stderr, done.stderr
    done = run("picture_hashes", "--out", "c.json", "--against", "missing.json", "--tasks", "tsp", "--count", "1",
               "--difficulties", "easy")
    assert done.returncode == 1 and done.stderr.strip() == "error: cannot use missing.json: No such file or " \
        "directory; check the path", done.stderr
