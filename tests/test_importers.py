"""Importing published instance files (TSPLIB, DIMACS, OR-Library) as mmnp datasets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmnp.dataset import load_dataset, read_manifest
from mmnp.errors import DataError, UsageError
from mmnp.importers import import_files, read_dimacs, read_orlib, read_tsplib
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
    assert data["coords"][0] == [0, 1] and data["coords"][1] == [5, 2]


def test_dimacs_edges_are_normalised_on_load():
    text = "c a triangle, written carelessly\np edge 4 6\ne 2 1\ne 1 2\ne 3 3\ne 3 2\ne 1 3\ne 4 1\n"
    n, edges = read_dimacs(text, "t.col")
    assert n == 4 and edges == [[0, 1], [0, 2], [0, 3], [1, 2]]
    _, complement = read_dimacs(text, "t.col", complement=True)
    assert complement == [[1, 3], [2, 3]]
    with pytest.raises(DataError, match=r"t.col:3: edge \(1, 9\) names a vertex outside 1..4"):
        read_dimacs("p edge 4 1\n\ne 1 9\n", "t.col")


def test_orlib_shapes_knapsack_steiner_and_unicost_scp():
    kind, data = read_orlib("3 10\n5 4\n6 5\n3 2\n", "k.txt")
    assert kind == "knapsack" and data == {"capacity": 10, "weights": [4, 5, 2], "values": [5, 6, 3]}
    kind, data = read_orlib("4 2\n1 2 3\n2 3 4\n", "s.txt")  # points 1..4, triples as elements
    assert kind == "set_cover" and data == {"universe": 2, "subsets": [[1], [1, 2], [1, 2], [2]]}
    scp = "3 2\n1 1\n1 1\n2 1 2\n1 2\n"  # 3 rows, 2 columns, unit costs
    kind, data = read_orlib(scp, "c.txt")
    assert kind == "set_cover" and data == {"universe": 3, "subsets": [[1, 2], [2, 3]]}
    with pytest.raises(DataError, match="weighted set cover"):
        read_orlib(scp.replace("1 1\n1 1", "1 7\n1 1", 1), "c.txt")


def test_import_builds_a_dataset_with_published_optima(tmp_path: Path):
    tsp = tmp_path / "square5.tsp"
    tsp.write_text(SQUARE)
    optima = tmp_path / "optima.json"
    optima.write_text(json.dumps({"square5": {"objective": 14, "proven": True, "source": "by hand"}}))
    out = tmp_path / "ds"
    manifest = import_files("tsplib", [tsp], out, optima=optima, images=False, time_limit=2.0)
    assert manifest["counts"] == {"tsp": {"imported": 1}} and read_manifest(out)["benchmark_hash"]
    inst = next(load_dataset(out))
    assert inst.id == "tsp-imported-0000" and inst.params["name"] == "square5"
    assert inst.reference["published"] == {"objective": 14, "proven": True, "source": "by hand", "name": "square5"}
    assert inst.reference["optimal"]["objective"] == 14 and inst.reference["optimal"]["proven"]
    answer = get_task("tsp").format_answer(inst.reference["heuristic"]["solution"])
    assert get_task("tsp").verify(inst, answer).feasible
    with pytest.raises(UsageError, match="not an empty folder"):  # never writes over a user's folder
        import_files("tsplib", [tsp], out, images=False)


def test_dimacs_import_needs_a_graph_task(tmp_path: Path):
    graph = tmp_path / "g.col"
    graph.write_text("p edge 3 3\ne 1 2\ne 2 3\ne 1 3\n")
    with pytest.raises(UsageError, match="pass --task"):
        import_files("dimacs", [graph], tmp_path / "d1", images=False)
    manifest = import_files("dimacs", [graph], tmp_path / "d2", task="longest_cycle", images=False, optimal=False)
    assert manifest["counts"] == {"longest_cycle": {"imported": 1}}
