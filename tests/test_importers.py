"""Importing published instance files (TSPLIB, DIMACS, OR-Library) as mmnp datasets."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mmnp.dataset import load_dataset, read_manifest
from mmnp.errors import DataError, UsageError
from mmnp.importers import import_files, numbering_colours, read_dimacs, read_orlib, read_tsplib
from mmnp.registry import get_task

SQUARE = """NAME : square5
COMMENT : a 3x4 rectangle with a point inside
TYPE : TSP
DIMENSION : 5
EDGE_WEIGHT_TYPE : EUC_2D
NODE_COORD_SECTION
1 0 0
2 3.0 0
3 3 4
4 0 4
5 1 2
EOF
"""


def test_tsplib_reads_euc_2d_and_its_length_is_the_verifiers():
    name, data = read_tsplib(SQUARE, "square5.tsp")
    assert name == "square5"
    assert data["coords"] == [[0, 0], [3, 0], [3, 4], [0, 4], [1, 2]]
    objective, violations = get_task("tsp").verifier.check(data, [0, 1, 2, 3, 4])
    assert not violations and objective == 3 + 4 + 3 + 2 + 2  # legs rounded as TSPLIB's EUC_2D


@pytest.mark.parametrize("metric", ["ATT", "GEO", "CEIL_2D"])
def test_tsplib_refuses_distances_the_verifier_does_not_measure(metric):
    with pytest.raises(DataError, match=f"EDGE_WEIGHT_TYPE {metric}.*EUC_2D"):
        read_tsplib(SQUARE.replace("EUC_2D", metric), "x.tsp")


def test_tsplib_refuses_fractional_coordinates_and_a_wrong_dimension():
    with pytest.raises(DataError, match=r"x.tsp:9: .*not integers"):
        read_tsplib(SQUARE.replace("3 4\n", "3.5 4\n", 1), "x.tsp")
    with pytest.raises(DataError, match="DIMENSION 6 but 5"):
        read_tsplib(SQUARE.replace("DIMENSION : 5", "DIMENSION : 6"), "x.tsp")


def test_tsplib_translates_negative_coordinates_keeping_distances():
    _, data = read_tsplib(SQUARE.replace("1 0 0", "1 -2 -1"), "x.tsp")
    assert min(min(c) for c in data["coords"]) == 0
    assert data["coords"][:3] == [[0, 0], [5, 1], [5, 5]] and data["grid"] == 5


def test_dimacs_edges_are_normalised_on_load():
    text = "c a triangle, written carelessly\np edge 4 5\ne 2 1\ne 1 2\ne 3 2\ne 1 3\ne 4 1\n"
    n, edges = read_dimacs(text, "t.col")
    assert n == 4 and edges == [[0, 1], [0, 2], [0, 3], [1, 2]]
    _, complement = read_dimacs(text, "t.col", complement=True)
    assert complement == [[1, 3], [2, 3]]
    with pytest.raises(DataError, match=r"t.col:3: edge \(1, 9\) names a vertex outside 1..4"):
        read_dimacs("p edge 4 1\n\ne 1 9\n", "t.col")


def test_a_dimacs_edge_count_is_one_of_the_published_conventions_or_the_file_is_refused():
    """Its `e` lines, its distinct edges, or (Johnson's DSJC files) twice those: a file cut short,
    or a loop, would otherwise import as another problem. The bound counts distinct edges, so a
    graph whose header counts each edge twice past 50,000 imports when its edges fit."""
    edges = [(u, v) for u in range(1, 400) for v in range(u + 1, 400) if (u + v) % 3][:30_000]
    body = "".join(f"e {u} {v}\n" for u, v in edges)
    n, read = read_dimacs(f"p edge 400 {2 * len(edges)}\n{body}", "dsjc.col")
    assert (n, len(read)) == (400, 30_000)
    assert len(read_dimacs(f"p edge 400 {2 * len(edges)}\n{body}{body}", "both.col")[1]) == 30_000  # both ways
    with pytest.raises(DataError, match=r"cut.col:1: the 'p' line counts 30,000 edges, the file lists 29,999 "
                                        r"\(29,999 distinct\); is it cut short\?"):
        read_dimacs(f"p edge 400 30000\n{body.rsplit(chr(10), 2)[0]}\n", "cut.col")
    with pytest.raises(DataError, match=r"loop.col:3: edge \(3, 3\) is a loop; .* remove the line"):
        read_dimacs("p edge 4 2\ne 1 2\ne 3 3\n", "loop.col")


def test_orlib_shapes_knapsack_steiner_and_unicost_scp():
    kind, data = read_orlib("3 10\n5 4\n6 5\n3 2\n", "k.txt")
    assert kind == "knapsack" and data == {"capacity": 10, "weights": [4, 5, 2], "values": [5, 6, 3]}
    kind, data = read_orlib("4 2\n1 2 3\n2 3 4\n", "s.txt")  # points 1..4, triples as elements
    assert kind == "set_cover" and data == {"universe": 2, "subsets": [[1], [1, 2], [1, 2], [2]]}
    scp = "3 2\n1 1\n1 1\n2 1 2\n1 2\n"  # 3 rows, 2 columns, unit costs
    kind, data = read_orlib(scp, "c.txt")
    assert kind == "set_cover" and data == {"universe": 3, "subsets": [[1, 2], [2, 3]]}
    weighted = scp.replace("1 1\n1 1", "1 7\n1 1", 1)
    with pytest.raises(DataError, match="c.txt:2: weighted set cover"):
        read_orlib(weighted, "c.txt")
    assert read_orlib(weighted, "c.txt", unit_costs=True) == ("set_cover", data)  # its unicost variant
    # a valid scp file (row i in column i only: optimum 3) whose count of numbers fits the Steiner
    # layout too was read as triples (optimum 1, "proven"): a file that reads both ways is refused
    with pytest.raises(DataError, match=r"d.txt:1: this file reads both as Steiner triple covering .* and as an "
                                        r"OR-Library scp file"):
        read_orlib("3 3\n1 1 1\n1 1\n1 2\n1 3\n", "d.txt")


def test_a_weighted_scp_file_imports_as_its_unicost_variant_with_the_flag_its_refusal_names(tmp_path: Path):
    """The refusal of a weighted file named --unit-costs, which `mmnp import` did not have; with it the
    file imports as its unicost variant, recorded in the arguments and in the command that rebuilds it."""
    from mmnp.export import source_command

    (tmp_path / "w.txt").write_text("3 2\n1 7\n1 1\n2 1 2\n1 2\n")  # 3 rows, 2 columns, costs 7 and 1
    plain = runner.invoke(app, ["import", "orlib", str(tmp_path / "w.txt"), "--out", str(tmp_path / "a"),
                                "--no-images"])
    assert plain.exit_code == 1 and "--unit-costs reads it as its unicost variant" in plain.output, plain.output
    result = runner.invoke(app, ["import", "orlib", str(tmp_path / "w.txt"), "--unit-costs", "--out",
                                 str(tmp_path / "b"), "--no-images", "--time-limit", "2"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["arguments"]["unit_costs"] is True and "--unit-costs" in source_command(manifest)
    record = json.loads((tmp_path / "b" / "set_cover" / "imported.jsonl").read_text().splitlines()[0])
    assert record["instance"]["subsets"] == [[1, 2], [2, 3]] and record["reference"]["optimal"]["objective"] == 2
    for flags, words in ((["--unit-costs"], "--unit-costs reads OR-Library set cover files"),
                         (["--time-limit", "inf"], "--time-limit must be a positive number")):
        refused = runner.invoke(app, ["import", "tsplib", str(tmp_path / "w.txt"), "--out", str(tmp_path / "c"),
                                      *flags])
        assert refused.exit_code == 2 and words in refused.output and not (tmp_path / "c").exists(), refused.output


def test_import_builds_a_dataset_with_published_optima(tmp_path: Path):
    tsp = tmp_path / "square5.tsp"
    tsp.write_text(SQUARE)
    optima = tmp_path / "optima.json"
    optima.write_text(json.dumps({"square5": {"objective": 14, "proven": True, "source": "by hand"}}))
    out = tmp_path / "ds"
    second = tmp_path / "square5b.tsp"
    second.write_text(SQUARE.replace("square5", "square5b"))
    seen: list[tuple[int, int]] = []
    manifest = import_files("tsplib", [tsp, second], out, optima=optima, images=False, time_limit=2.0,
                            progress=lambda done, total: seen.append((done, total)))
    assert manifest["counts"] == {"tsp": {"imported": 2}} and read_manifest(out)["benchmark_hash"]
    assert seen == [(0, 2), (1, 2), (2, 2)]  # `mmnp import`'s bar: each instance as it is built
    inst = next(load_dataset(out))
    assert inst.id == "tsp-imported-0000" and inst.params["name"] == "square5"
    assert inst.reference["published"] == {"objective": 14, "proven": True, "source": "by hand", "name": "square5"}
    assert inst.reference["optimal"]["objective"] == 14 and inst.reference["optimal"]["proven"]
    answer = get_task("tsp").format_answer(inst.reference["heuristic"]["solution"])
    assert get_task("tsp").verify(inst, answer).feasible
    with pytest.raises(UsageError, match="exists and is not empty"):  # never writes over a user's folder
        import_files("tsplib", [tsp], out, images=False)


def test_an_edited_import_is_refused_with_advice_that_works(tmp_path: Path):
    """The refusal said to rerun the import command, which refuses an existing folder: it says to
    move the folder aside first, and doing so repairs the dataset."""
    import shutil

    tsp = tmp_path / "square5.tsp"
    tsp.write_text(SQUARE)
    out = tmp_path / "ds"
    import_files("tsplib", [tsp], out, images=False, time_limit=1.0)
    shard = out / "tsp" / "imported.jsonl"
    shard.write_text(shard.read_text().replace('"name":"square5"', '"name":"square6"'))
    with pytest.raises(DataError, match=rf"move {re.escape(str(out))} aside, then rerun the `mmnp import` command"):
        next(load_dataset(out))
    shutil.move(out, tmp_path / "edited")
    import_files("tsplib", [tsp], out, images=False, time_limit=1.0)
    assert next(load_dataset(out)).params["name"] == "square5"


def test_an_interrupted_import_leaves_no_half_dataset(tmp_path: Path, monkeypatch):
    """A kill after some files were written left PNGs and no manifest: every reader refused the
    folder and a rerun refused it as not empty. The folder now appears whole or not at all."""
    import mmnp.importers as importers

    tsp = tmp_path / "square5.tsp"
    tsp.write_text(SQUARE)
    writes = []

    def dying(path, content):
        if len(writes) == 1:
            raise KeyboardInterrupt
        writes.append(path)
        return atomic_write(path, content)

    from mmnp.files import atomic_write

    monkeypatch.setattr(importers, "atomic_write", dying)
    out = tmp_path / "ds"
    with pytest.raises(KeyboardInterrupt):
        import_files("tsplib", [tsp], out, time_limit=1.0, image_size=320)
    assert writes and not out.exists()
    monkeypatch.undo()
    import_files("tsplib", [tsp], out, time_limit=1.0, image_size=320)  # the same command then works
    assert len(list(load_dataset(out))) == 1
    assert set(tmp_path.iterdir()) == {tsp, out}  # nothing left beside it


def test_an_interrupted_import_resumes_its_finished_instances(tmp_path: Path, monkeypatch):
    """Ctrl-C during `mmnp import classic` lost minutes of exact solves: the instances it built are
    kept beside --out and a rerun builds only the rest, to the bytes of a straight import."""
    import mmnp.importers as importers

    files = []
    for k in range(3):
        path = tmp_path / f"sq{k}.tsp"
        path.write_text(SQUARE.replace("square5", f"sq{k}"))
        files.append(path)
    straight = import_files("tsplib", files, tmp_path / "straight", images=False, time_limit=1.0)
    real, built = importers.build_instance, []

    def stopping(item, *args):
        if len(built) == 2:
            raise KeyboardInterrupt
        built.append(item.name)
        return real(item, *args)

    monkeypatch.setattr(importers, "build_instance", stopping)
    with pytest.raises(KeyboardInterrupt):
        import_files("tsplib", files, tmp_path / "ds", images=False, time_limit=1.0)
    assert not (tmp_path / "ds").exists() and (tmp_path / ".ds.mmnp-import.jsonl").exists()
    built.clear()
    monkeypatch.setattr(importers, "build_instance", lambda item, *args: built.append(item.name) or real(item, *args))
    resumed = import_files("tsplib", files, tmp_path / "ds", images=False, time_limit=1.0)
    assert built == ["sq2"]  # only the unfinished one
    assert resumed["benchmark_hash"] == straight["benchmark_hash"]
    assert resumed["references_hash"] == straight["references_hash"]
    assert not (tmp_path / ".ds.mmnp-import.jsonl").exists()


@pytest.mark.parametrize("edit", ["heuristic", "optimal", "unsolved"])
def test_a_resumed_import_builds_again_what_an_edited_journal_says(tmp_path: Path, monkeypatch, edit):
    """The journal lies beside --out, where anyone can edit it: a worse, still feasible, tour as
    the heuristic's reference would lower the Quality Ratio's reference for every model (a worse
    exact answer would pass as the best known, a heuristic-only record as exactly solved). Each
    such line is built again, so the resumed dataset is the straight import's, to the bytes."""
    import mmnp.importers as importers

    tsp = tmp_path / "sq.tsp"
    tsp.write_text(SQUARE)
    straight = import_files("tsplib", [tsp], tmp_path / "straight", images=False, time_limit=1.0)
    real = importers.build_instance
    monkeypatch.setattr(importers, "write_whole_folder", lambda *a: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):  # killed with its one instance journalled, before the dataset is written
        import_files("tsplib", [tsp], tmp_path / "ds", images=False, time_limit=1.0)
    monkeypatch.undo()
    journal = tmp_path / ".ds.mmnp-import.jsonl"
    entry = json.loads(journal.read_text())
    reference, worse = entry["record"]["reference"], [0, 2, 1, 3, 4]  # a crossing tour, feasible
    worse_length, _ = get_task("tsp").verifier.check(entry["record"]["instance"], worse)
    assert worse_length > reference["heuristic"]["objective"]
    if edit == "unsolved":
        reference["optimal"] = None
    else:
        reference[edit] = {**reference[edit], "solution": worse, "objective": worse_length}
    journal.write_text(json.dumps(entry) + "\n")
    built = []
    monkeypatch.setattr(importers, "build_instance", lambda item, *args: built.append(item.name) or real(item, *args))
    resumed = import_files("tsplib", [tsp], tmp_path / "ds", images=False, time_limit=1.0)
    assert built == ["square5"]  # built again, not taken from the journal
    assert resumed["references_hash"] == straight["references_hash"]
    [inst] = load_dataset(tmp_path / "ds")
    assert inst.reference["heuristic"]["objective"] < worse_length


def test_a_resumed_import_keeps_an_unedited_journal_line_without_solving_again(tmp_path: Path, monkeypatch):
    """The other side of the check above: a line as `build_instance` wrote it is taken (the exact
    solve, the costly part, is not run again)."""
    import mmnp.importers as importers
    from mmnp.task import Task

    tsp = tmp_path / "sq.tsp"
    tsp.write_text(SQUARE)
    inst = importers.build_instance(importers.read_file("tsplib", tsp), 0, "tsplib", True, 1.0)
    spec = importers.ImportSpec("tsplib", (str(tsp),), images=False, time_limit=1.0)
    item = importers.read_file("tsplib", tsp)
    monkeypatch.setattr(Task, "best_known", lambda *a: pytest.fail("the exact solve ran again"))
    record = json.loads(json.dumps(inst.to_record()))  # as the journal holds it
    assert importers._resumed(record, item, 0, "tsplib", spec) == inst
    assert importers._resumed(record, item, 1, "tsplib", spec) is None  # another place: another id


def test_dimacs_import_needs_a_graph_task(tmp_path: Path):
    graph = tmp_path / "g.col"
    graph.write_text("p edge 3 3\ne 1 2\ne 2 3\ne 1 3\n")
    with pytest.raises(UsageError, match="pass --task"):
        import_files("dimacs", [graph], tmp_path / "d1", images=False)
    with pytest.raises(UsageError, match="--task tsp: tsp does not import DIMACS graphs; use one of .*longest_cycle"):
        import_files("dimacs", [graph], tmp_path / "d1", task="tsp", images=False)
    manifest = import_files("dimacs", [graph], tmp_path / "d2", task="longest_cycle", images=False, optimal=False)
    assert manifest["counts"] == {"longest_cycle": {"imported": 1}}


def test_relabel_renumbers_a_graphs_vertices_and_says_so(tmp_path: Path):
    """A Leighton-style file whose numbering colours it (vertex mod 3, as in DIMACS's le450_*):
    `--relabel SEED` imports the same graph under numpy's default_rng(SEED).permutation, which
    the record names, and the numbers no longer give the colouring away."""
    n, k = 30, 3
    edges = sorted({(u, v) for u in range(n) for v in range(u + 1, n) if u % k != v % k and (u * 7 + v * 11) % 5 == 0})
    graph = tmp_path / "le30_3.col"
    graph.write_text(f"p edge {n} {len(edges)}\n" + "".join(f"e {u + 1} {v + 1}\n" for u, v in edges))
    assert all(u % k != v % k for u, v in edges)
    result = runner.invoke(app, ["import", "dimacs", str(graph), "--task", "graph_coloring", "--relabel", "3",
                                 "--no-images", "--no-optimal", "--out", str(tmp_path / "d")])
    assert result.exit_code == 0, result.output
    assert "warning" not in result.output
    (inst,) = load_dataset(tmp_path / "d")
    label = np.random.default_rng(3).permutation(n).tolist()
    assert inst.data["edges"] == sorted(sorted((label[u], label[v])) for u, v in edges)
    assert inst.params == {"name": "le30_3", "file": "le30_3.col", "relabel": 3}
    assert read_manifest(tmp_path / "d")["arguments"]["relabel"] == 3
    assert any(u % k == v % k for u, v in inst.data["edges"])
    notices: list[str] = []
    plain = import_files("dimacs", [graph], tmp_path / "p", task="graph_coloring", images=False, optimal=False,
                         notice=notices.append)
    assert notices == [f"{graph.name}: its vertex numbers colour it with 3 colours (vertex mod 3), as few as its 3-clique "
                       "needs: an optimal answer a model can read off the numbers; import it with --relabel SEED"]
    assert plain["arguments"]["relabel"] is None
    assert next(load_dataset(tmp_path / "p")).data["edges"] == [list(e) for e in edges]
    result = runner.invoke(app, ["import", "dimacs", str(graph), "--task", "graph_coloring", "--no-images",
                                 "--no-optimal", "--out", str(tmp_path / "w")])
    assert result.exit_code == 0 and "le30_3.col: its vertex numbers colour it with 3 colours" in result.output
    assert numbering_colours(n, inst.data["edges"], 10) is None  # renumbered: no rule up to 10 colours
    blocks = [[u, v] for u in range(12) for v in range(u + 1, 12) if u // 4 != v // 4]  # K(4,4,4) numbered by part
    assert numbering_colours(12, blocks, 3) == (3, "blocks of 4 consecutive vertices")
    assert numbering_colours(12, blocks, 2) is None
    with pytest.raises(UsageError, match="--relabel -1: a seed is a whole number >= 0"):
        import_files("dimacs", [graph], tmp_path / "n", task="graph_coloring", images=False, relabel=-1)
    (tmp_path / "square5.tsp").write_text(SQUARE)
    with pytest.raises(UsageError, match="square5.tsp: --relabel renumbers a graph's vertices"):
        import_files("tsplib", [tmp_path / "square5.tsp"], tmp_path / "t", images=False, relabel=1)
    with pytest.raises(UsageError, match="--relabel: `mmnp import classic` ships its set as it is"):
        import_files("classic", [], tmp_path / "c", images=False, relabel=1)


def test_the_numbering_warning_holds_the_numbers_to_the_published_optimum_too(tmp_path: Path):
    """A 5-cycle numbered around: vertex mod 3 colours it with its 3 colours, more than its largest
    clique (2) needs, so only its published optimum shows that the numbers answer optimally."""
    cycle = tmp_path / "c5.col"
    cycle.write_text("p edge 5 5\ne 1 2\ne 2 3\ne 3 4\ne 4 5\ne 5 1\n")
    (tmp_path / "o.json").write_text('{"c5": {"objective": 3, "proven": true}}')
    seen: list[str] = []
    import_files("dimacs", [cycle], tmp_path / "a", task="graph_coloring", images=False, optimal=False,
                 notice=seen.append)
    assert seen == []
    import_files("dimacs", [cycle], tmp_path / "b", task="graph_coloring", images=False, optimal=False,
                 optima=tmp_path / "o.json", notice=seen.append)
    assert seen == ["c5.col: its vertex numbers colour it with 3 colours (vertex mod 3), as few as its published "
                    "optimum: an optimal answer a model can read off the numbers; import it with --relabel SEED"]


# -- bounds, malformed files and published optima, through the real CLI ---------------------

from typer.testing import CliRunner  # noqa: E402

from mmnp.cli import app  # noqa: E402
from mmnp.importers import MAX_EDGES, check_claim, read_file  # noqa: E402

runner = CliRunner()


def _tsplib(n: int, dimension: bool = True, coords=lambda i: (i % 100, i // 100)) -> str:
    head = f"NAME : big\nTYPE : TSP\n{'DIMENSION : %d' % n if dimension else 'COMMENT : no dimension'}\n"
    nodes = "".join(f"{i + 1} {x} {y}\n" for i, (x, y) in enumerate(map(coords, range(n))))
    return head + "EDGE_WEIGHT_TYPE : EUC_2D\nNODE_COORD_SECTION\n" + nodes + "EOF\n"


KNAPSACK_TEN_TO_29 = "2 10\n" + "1" + "0" * 29 + " 3\n5 4\n"
# (format, file name, content, extra CLI arguments, the one line it must print after "error: <file>")
REFUSED = [
    ("dimacs", "huge.col", "p edge 1000000000 1\n", ["--task", "vertex_cover"],
     r":1: vertex count 1000000000 is more than mmnp imports \(at most 1,000\)"),
    ("dimacs", "negative.col", "p edge -5 0\n", ["--task", "max_clique"], r":1: vertex count -5 is outside 2..1,000; a graph task needs 2 vertices or more"),
    ("dimacs", "claims.col", "c many\np edge 10 1000000\n", ["--task", "max_clique"],
     r":2: the 'p' line counts 1,000,000 edges, the file lists 0 \(0 distinct\); is it cut short\?"),
    ("dimacs", "many.col", "p edge 1000 60000\n" + "".join(f"e {u} {v}\n" for u in range(1, 1001)
                                                          for v in range(u + 1, u + 61)), ["--task", "max_clique"],
     r":50002: more than 50,000 edges, more than mmnp imports"),
    ("dimacs", "dense.col", "p edge 400 1\ne 1 2\n", ["--task", "max_clique", "--complement"],
     r":2: the complement has 79,799 edges, more than mmnp imports \(50,000\)"),
    ("dimacs", "twice.col", "p edge 4 1\ne 1 2\np edge 5 0\n", ["--task", "max_clique"], r":3: a second 'p' line"),
    ("dimacs", "letters.col", "p edge 4 1\ne 1 x\n", ["--task", "max_clique"], r":2: vertex 'x' is not an integer"),
    ("dimacs", "nothing.col", "c only comments\nc here\n", ["--task", "max_clique"], r":2: no 'p edge N M' line"),
    ("orlib", "header.txt", "1000000000 0\n", [],
     r":1: point count \(subsets\) 1000000000 is more than mmnp imports \(at most 1,000\)"),
    ("orlib", "kp.txt", KNAPSACK_TEN_TO_29, [],
     r":2: value 1" + "0" * 29 + r" is more than mmnp imports \(at most 1,000,000,000\)"),
    ("orlib", "kp0.txt", "2 10\n5 0\n6 5\n", [], r":2: weight 0 is outside 1..1,000,000,000"),
    ("orlib", "digits.txt", "2 10\n5 " + "9" * 60 + "\n6 5\n", [], r":2: a weight 9{24}\.\.\. has 60 digits"),
    ("orlib", "scp.txt", "3 2\n1 1\n1 1\n0\n1 2\n", [], r":4: row 2's column count 0 is outside 1..2; a row in no column cannot be covered"),
    ("orlib", "scpcut.txt", "3 2\n1 1\n1 1\n2 1 2\n1 7\n", [], r":5: row 3's column 7 is outside 1..2; correct the row"),
    ("tsplib", "big.tsp", _tsplib(20_000), [], r":3: DIMENSION 20000 is more than mmnp imports \(at most 1,000\)"),
    ("tsplib", "nodim.tsp", _tsplib(1_200, dimension=False), [], r":1006: more nodes than mmnp imports"),
    ("tsplib", "far.tsp", SQUARE.replace("2 3.0 0", "2 1e300 0"), [], r":8: coordinate 1e300 makes the cities"),
    ("tsplib", "spread.tsp", SQUARE.replace("3 4\n", "-99998 4\n", 1), [], r":9: coordinate -99998 makes"),
    ("tsplib", "nan.tsp", SQUARE.replace("3 4\n", "nan 4\n", 1), [], r":9: coordinates \(nan, 4\) are not integers"),
    ("tsplib", "dim.tsp", SQUARE.replace("DIMENSION : 5", "DIMENSION : five"), [], r":4: DIMENSION 'five' is not"),
    ("tsplib", "type.tsp", SQUARE.replace("TYPE : TSP", "TYPE :"), [], r":3: TYPE : only symmetric TSP"),
    ("tsplib", "short.tsp", SQUARE.replace("DIMENSION : 5", "DIMENSION : 7"), [], r":4: DIMENSION 7 but 5 nodes"),
]


@pytest.mark.parametrize("fmt, name, content, extra, message", REFUSED, ids=[r[1] for r in REFUSED])
def test_a_file_out_of_bounds_or_malformed_is_one_line_naming_file_and_line(tmp_path: Path, fmt, name, content,
                                                                             extra, message):
    path = tmp_path / name
    path.write_text(content)
    out = tmp_path / "out"
    result = runner.invoke(app, ["import", fmt, str(path), "--out", str(out), "--no-images", *extra])
    assert result.exit_code == 1, result.output
    lines = result.output.rstrip().splitlines()  # a blank line above it (a bar's stop) counts
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    assert re.match(r"error: " + re.escape(str(path)) + message, lines[0]), lines[0]
    assert not out.exists(), "a refused import writes nothing"


def test_allocation_bombs_stay_small_under_a_memory_cap(tmp_path: Path):
    """`mmnp import` itself, in a process capped at 1.5 GB of address space: a 13-byte
    OR-Library header that once asked for 10^9 lists, a DIMACS header of 10^9 vertices and a
    20,000-city TSPLIB file each end in their one line, quickly."""
    bombs = {"orlib": ("h.txt", "1000000000 0\n"), "dimacs": ("g.col", "p edge 1000000000 1\n"),
             "tsplib": ("t.tsp", _tsplib(20_000))}
    capped = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (1536 * 2**20,) * 2); "
              "from mmnp.cli import app; sys.argv[0] = 'mmnp'; app()")
    for fmt, (name, content) in bombs.items():
        (tmp_path / name).write_text(content)
        args = [sys.executable, "-c", capped, "import", fmt, str(tmp_path / name), "--out", str(tmp_path / fmt),
                "--no-images", "--task", "vertex_cover"] if fmt == "dimacs" else \
               [sys.executable, "-c", capped, "import", fmt, str(tmp_path / name), "--out", str(tmp_path / fmt),
                "--no-images"]
        start = time.perf_counter()
        done = subprocess.run(args, capture_output=True, text=True, timeout=120)
        assert done.returncode == 1 and "MemoryError" not in done.stderr, done.stderr[-500:]
        assert done.stderr.strip().startswith(f"error: {tmp_path / name}:"), done.stderr
        assert time.perf_counter() - start < 30


def test_a_file_beyond_the_size_bound_is_refused_unread(tmp_path: Path):
    path = tmp_path / "padded.col"
    with path.open("w") as f:
        f.write("p edge 3 1\ne 1 2\n")
        f.write(("c " + "x" * 1000 + "\n") * 9000)
    with pytest.raises(DataError, match=r"padded.col:1: 9,0\d\d,\d{3} bytes, more than mmnp imports"):
        read_file("dimacs", path, "max_clique")


def test_a_stream_beyond_the_size_bound_is_refused_at_the_bound(tmp_path: Path):
    """A device or a pipe says its size is 0: it was read whole (/dev/zero until memory ran out)."""
    with pytest.raises(DataError, match=r"^/dev/zero:1: more bytes than mmnp imports \(8,388,608\)"):
        read_file("dimacs", Path("/dev/zero"), "max_clique")


@pytest.mark.parametrize("text, said", [
    ("5 10\n10 5\n40 4\n30 6\n50 3\n", "its 10 numbers fit neither a knapsack file, 12 for 5 items, nor a Steiner "
                                         "triple file, 32 for 10 triples"),
    ("2 2\n1 2\n2 1\n1 1\n", "triple 1 repeats a point; a Steiner triple names 3 distinct points"),
])
def test_an_orlib_file_of_no_layout_says_what_each_needed(tmp_path: Path, text: str, said: str):
    """A knapsack file with an item missing was blamed on weighted set cover alone; one whose count fits the
    Steiner layout imported as a set cover with a 'triple' of one point."""
    path = tmp_path / "file.txt"
    path.write_text(text)
    with pytest.raises(DataError, match=re.escape(said)):
        read_file("orlib", path)


_FUZZ = settings(max_examples=150, deadline=None)
_TOKENS = st.sampled_from(["p", "edge", "e", "c", "n", "x", "EOF", "1e300", "nan", "-inf", "1.5", "+7", "-0", "",
                           "NODE_COORD_SECTION", "DIMENSION :", "TYPE : TSP", "EDGE_WEIGHT_TYPE : EUC_2D"])
_NUMBERS = st.one_of(st.integers(-3, 12), st.integers(-10**30, 10**30)).map(str)
_LINES = st.lists(st.lists(st.one_of(_TOKENS, _NUMBERS), max_size=5).map(" ".join), max_size=30).map("\n".join)


def _valid_or_one_line(read, text: str) -> None:
    """The reader returns data within the bounds, or refuses in one line naming file:line."""
    try:
        read(text)
    except DataError as e:
        assert re.match(r"fuzz\.in:\d+: \S", str(e)) and "\n" not in str(e), str(e)


@_FUZZ
@given(text=st.one_of(st.text(max_size=400), _LINES))
def test_fuzzed_dimacs_files(text):
    try:
        n, edges = read_dimacs(text, "fuzz.in")
    except DataError as e:
        assert re.match(r"fuzz\.in:\d+: \S", str(e)) and "\n" not in str(e), str(e)
        return
    assert 2 <= n <= 1000 and len(edges) <= MAX_EDGES
    assert all(0 <= u < v < n for u, v in edges) and edges == sorted(edges)


@_FUZZ
@given(text=st.one_of(st.text(max_size=400), _LINES,
                      st.lists(_NUMBERS, min_size=2, max_size=40).map(" ".join)))
def test_fuzzed_orlib_files(text):
    try:
        kind, data = read_orlib(text, "fuzz.in")
    except DataError as e:
        assert re.match(r"fuzz\.in:\d+: \S", str(e)) and "\n" not in str(e), str(e)
        return
    task = get_task(kind)
    assert task.verifier.check(data, task.solver.trivial(data))[1] == [], "an imported instance has feasible answers"
    numbers = data.get("weights", []) + data.get("values", [])
    assert all(1 <= x <= 10**9 for x in numbers)


_COORD = st.one_of(st.integers(-10, 10), st.integers(-10**6, 10**6), st.sampled_from(["1e300", "nan", "2.5", "x"]))


@_FUZZ
@given(coords=st.lists(st.tuples(_COORD, _COORD), max_size=12), dimension=st.one_of(st.none(), _NUMBERS),
       noise=st.text(max_size=30))
def test_fuzzed_tsplib_files(coords, dimension, noise):
    text = ("NAME : f\nTYPE : TSP\n" + (f"DIMENSION : {dimension}\n" if dimension is not None else "")
            + "EDGE_WEIGHT_TYPE : EUC_2D\nNODE_COORD_SECTION\n"
            + "".join(f"{i + 1} {x} {y}\n" for i, (x, y) in enumerate(coords)) + noise)
    try:
        _, data = read_tsplib(text, "fuzz.in")
    except DataError as e:
        assert re.match(r"fuzz\.in:\d+: \S", str(e)) and "\n" not in str(e), str(e)
        return
    assert 3 <= len(data["coords"]) <= 1000 and 0 <= data["grid"] <= 100_000
    assert all(0 <= x <= data["grid"] and 0 <= y <= data["grid"] for x, y in data["coords"])


@pytest.mark.parametrize("entry, message", [
    ('{"square5": {"objective": "abc"}}', r"'square5': objective \"abc\" is not a number"),
    ('{"square5": {"objective": NaN}}', r"'square5': objective nan is not a whole number"),
    ('{"square5": {"objective": Infinity, "proven": true}}', r"'square5': objective inf is not a whole number"),
    ('{"square5": {"objective": 14.5}}', r"'square5': objective 14.5 is not a whole number"),
    ('{"square5": {"objective": -3}}', r"'square5': objective -3 is not a whole number >= 0"),
    ('{"square5": {"objective": true}}', r"'square5': objective true is not a number"),
    ('{"square5": {"objective": 14, "proven": "yes"}}', r"'square5': proven \"yes\" is not true or false"),
    ('{"square5": {"optimum": 14}}', r"'square5': unknown key 'optimum'"),
    ('{"square5": 14}', r"'square5': expected"),
    ('{"square6": {"objective": 14}}', r"'square6' names none of the imported files"),
    ('{"square5": {"objective": 14}, "square5.tsp": {"objective": 14}}',
     r"'square5.tsp' and 'square5' name one instance; keep one"),
    ('{"square5": {"objective": 14}', r":1: not JSON"),
    ('{"square5": {"objective": 13, "proven": true}}', r"'square5': the claimed optimum 13 is better than 14, which "
                                                       r"the exact solver proved optimal"),
    ('{"square5": {"objective": 15, "proven": true}}', r"'square5': the claimed proven optimum 15 is worse than the "
                                                       r"feasible 14"),
])
def test_published_optima_are_validated(tmp_path: Path, entry: str, message: str):
    """--optima: a number, finite, whole, with a boolean `proven`, naming an imported file, and
    not contradicted by the instance (CP-SAT's proof, a feasible tour), through the real CLI."""
    (tmp_path / "square5.tsp").write_text(SQUARE)
    (tmp_path / "o.json").write_text(entry)
    out = tmp_path / "out"
    result = runner.invoke(app, ["import", "tsplib", str(tmp_path / "square5.tsp"), "--out", str(out),
                                 "--optima", str(tmp_path / "o.json"), "--no-images", "--time-limit", "2"])
    lines = result.output.rstrip().splitlines()  # a refusal after the bar started too: no blank line above it
    assert result.exit_code == 1 and len(lines) == 1, result.output
    assert lines[0].startswith(f"error: --optima {tmp_path / 'o.json'}") and re.search(message, lines[0]), lines[0]
    assert not out.exists()


def test_an_unproven_best_known_value_is_kept_and_a_proven_one_holds_without_the_exact_solver(tmp_path: Path):
    (tmp_path / "square5.tsp").write_text(SQUARE)
    (tmp_path / "o.json").write_text('{"square5.tsp": {"objective": 16, "proven": false, "source": "stale"}}')
    import_files("tsplib", [tmp_path / "square5.tsp"], tmp_path / "a", optima=tmp_path / "o.json", images=False,
                 time_limit=2.0)
    inst = next(load_dataset(tmp_path / "a"))
    assert inst.reference["published"]["objective"] == 16  # kept as claimed, and named stale by its use:
    assert inst.best_objective == 14  # the references' own tour is the best known (a ratio above 1 otherwise)
    verdict = get_task("tsp").verify(inst, "Answer: " + str(inst.reference["optimal"]["solution"]))
    assert get_task("tsp").quality_ratio(verdict.objective, inst.best_objective) == 1.0
    (tmp_path / "o.json").write_text('{"square5": {"objective": 15, "proven": true}}')
    with pytest.raises(DataError, match="claimed proven optimum 15 is worse than the feasible 14"):
        import_files("tsplib", [tmp_path / "square5.tsp"], tmp_path / "b", optima=tmp_path / "o.json",
                     images=False, optimal=False)


def test_a_claim_beyond_cp_sats_proven_bound_is_refused():
    from mmnp.importers import Published

    task = get_task("max_clique")
    item = Published("max_clique", "g", {"n": 3, "edges": [[0, 1]]}, "g.col", optimum=9, claimed_in="o.json")
    with pytest.raises(DataError, match=r"o.json: 'g': the claimed optimum 9 is better than the exact solver's proven bound 4"):
        check_claim(item, task, heuristic=2, found=3, proven=False, bound=4)
    check_claim(replace(item, optimum=4), task, heuristic=2, found=3, proven=False, bound=4)


def test_instances_without_a_ratio_or_a_feasible_answer_are_refused(tmp_path: Path):
    """A reference objective of 0 (no edge to cover) leaves QR undefined; a forest has no cycle."""
    (tmp_path / "empty.col").write_text("p edge 4 0\n")
    (tmp_path / "path.col").write_text("p edge 4 3\ne 1 2\ne 2 3\ne 3 4\n")
    with pytest.raises(DataError, match="empty.col: its reference objective is 0"):
        import_files("dimacs", [tmp_path / "empty.col"], tmp_path / "a", task="vertex_cover", images=False)
    with pytest.raises(DataError, match="path.col: the graph has no cycle"):
        import_files("dimacs", [tmp_path / "path.col"], tmp_path / "b", task="longest_cycle", images=False)


def test_an_import_format_is_one_table_entry(tmp_path: Path, monkeypatch):
    """`mmnp import`'s formats are one table: an entry added there is read by `import_files` (no
    branch elsewhere), and the command's FORMAT help names every entry with its help."""
    import typer.main

    from mmnp import importers
    from mmnp.cli import app as cli_app

    def read_points(text, path, task, complement, unit_costs):
        coords = [[int(v) for v in line.split()] for line in text.splitlines()]
        return importers.Published("tsp", path.stem, {"coords": coords, "grid": 4, "distance": "EUC_2D"}, path.name)

    monkeypatch.setitem(importers.FORMATS, "points", importers.ImportFormat("x y lines (tsp)", read_points))
    (tmp_path / "box.txt").write_text("0 0\n3 0\n3 4\n0 4\n")
    manifest = import_files("points", [tmp_path / "box.txt"], tmp_path / "out", images=False, optimal=False)
    assert manifest["arguments"]["import"] == "points" and manifest["counts"] == {"tsp": {"imported": 1}}
    (inst,) = load_dataset(tmp_path / "out")
    assert inst.data["coords"] == [[0, 0], [3, 0], [3, 4], [0, 4]] and inst.reference_objective == 14
    with pytest.raises(UsageError, match="unknown format 'csv'; choose from tsplib, dimacs, orlib, classic, points"):
        import_files("csv", [tmp_path / "box.txt"], tmp_path / "other")
    monkeypatch.delitem(importers.FORMATS, "points")
    (fmt,) = [p for p in typer.main.get_command(cli_app).commands["import"].params if p.name == "fmt"]
    assert all(f"{name}: {f.help}" in fmt.help for name, f in importers.FORMATS.items())
