"""benchmarks/fetch_published.py turns the GitHub copies back into the published files: the
weighted DIMACS copies lose their added `n v w` lines, the knapsack copies their split header
and solution line; what mmnp then reads is the published instance."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import benchmark_scripts

from mmnp.importers import read_file


def _repo(path: Path, files: dict[str, str]) -> str:
    """A git repository at `path` holding `files`; returns its commit."""
    path.mkdir(parents=True)
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git = ["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "files"], check=True)
    return subprocess.run(git + ["rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()


def test_copies_are_turned_back_into_the_published_files(tmp_path, monkeypatch):
    script = benchmark_scripts.load("fetch_published")
    clones = tmp_path / "clones"
    graph = "p edge 4 3\nn 1 2\nn 2 3\ne 1 2\nn 3 4\ne 2 3\ne 3 4\nn 4 5\n"
    dimacs = _repo(clones / "o+dimacs", {"DIMACS/weighted/g4.clq": graph})
    knap = _repo(clones / "o+knap", {"large_scale/kp_3": "3 \n10\n5 4\n6 5\n7 9\n1 1 0\n"})
    listed = tmp_path / "published.json"
    listed.write_text(json.dumps({"instances": [{"file": "g4.clq"}, {"file": "kp_3.txt"}]}))
    monkeypatch.setattr(script, "LIST", listed)
    monkeypatch.setattr(script, "SOURCES", [
        ("o/dimacs", dimacs, "DIMACS/weighted", "", script._dimacs_unweighted),
        ("o/knap", knap, "large_scale", ".txt", script._knapsack)])
    out = tmp_path / "out"
    assert script.main(["--dir", str(out), "--from", str(clones)]) == 0
    assert (out / "g4.clq").read_text() == "p edge 4 3\ne 1 2\ne 2 3\ne 3 4\n"
    assert (out / "kp_3.txt").read_text() == "3 10\n5 4\n6 5\n7 9\n"
    graph_data = read_file("dimacs", out / "g4.clq", "max_clique").data
    assert graph_data["n"] == 4 and sorted(map(sorted, graph_data["edges"])) == [[0, 1], [1, 2], [2, 3]]
    knapsack = read_file("orlib", out / "kp_3.txt", "knapsack").data
    assert knapsack["capacity"] == 10 and knapsack["values"] == [5, 6, 7] and knapsack["weights"] == [4, 5, 9]


def test_a_listed_file_no_source_holds_fails_the_run(tmp_path, monkeypatch, capsys):
    script = benchmark_scripts.load("fetch_published")
    clones = tmp_path / "clones"
    commit = _repo(clones / "o+dimacs", {"DIMACS/weighted/g4.clq": "p edge 2 1\ne 1 2\n"})
    listed = tmp_path / "published.json"
    listed.write_text(json.dumps({"instances": [{"file": "g4.clq"}, {"file": "absent.clq"}]}))
    monkeypatch.setattr(script, "LIST", listed)
    monkeypatch.setattr(script, "SOURCES", [("o/dimacs", commit, "DIMACS/weighted", "", script._dimacs_unweighted)])
    assert script.main(["--dir", str(tmp_path / "out"), "--from", str(clones)]) == 1
    assert "not found: absent.clq" in capsys.readouterr().out
    assert (tmp_path / "out" / "g4.clq").is_file()
