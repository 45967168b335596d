"""benchmarks/bench_published.py reads what `mmnp import` refuses with wider bounds, says which
rows those are, and leaves the import bounds as they were."""

from __future__ import annotations

import json

import benchmark_scripts

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
