"""The graph colouring heuristic beyond DSatur + a short TabuCol: PartialCol, a long TabuCol run
and HEA (GPX crossover) reach a planted optimum where the old heuristic (DSatur, then TabuCol
for 500 moves per vertex per colour) stopped two colours above it."""

from __future__ import annotations

import numpy as np

import mmnp


def leighton(n: int, k: int, edges: int, seed: int) -> dict:
    """A Leighton-style graph: a planted k-colouring (classes of n/k), a k-clique across the
    classes (so k colours are optimal), then cliques of 2..k vertices from distinct classes
    until `edges` edges."""
    rng = np.random.default_rng(seed)
    colour = rng.permutation(np.arange(n) % k)
    classes = [np.flatnonzero(colour == c) for c in range(k)]
    clique = [int(rng.choice(members)) for members in classes]
    found = {(min(a, b), max(a, b)) for i, a in enumerate(clique) for b in clique[i + 1:]}
    while len(found) < edges:
        picked = [int(rng.choice(classes[c])) for c in rng.choice(k, size=int(rng.integers(2, k + 1)), replace=False)]
        found |= {(min(a, b), max(a, b)) for i, a in enumerate(picked) for b in picked[i + 1:]}
    return {"n": n, "edges": [list(e) for e in sorted(found)]}


def test_heuristic_reaches_the_planted_colours_on_leighton_graphs():
    # the old heuristic stopped at 12 colours on seed 0 (10 on seeds 1 and 2)
    solver = mmnp.get_task("graph_coloring").solver
    for seed in range(3):
        data = leighton(150, 10, 2500, seed)
        colours = solver.heuristic(data)
        assert all(colours[u] != colours[v] for u, v in data["edges"])
        assert len(set(colours)) == 10, seed


def test_gpx_takes_the_largest_class_of_each_parent_in_turn():
    solver = mmnp.get_task("graph_coloring").solver
    first = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2])  # classes {0,1,2} {3,4} {5,6,7,8}
    second = np.array([0, 0, 1, 1, 1, 1, 2, 2, 0])  # classes {0,1,8} {2,3,4,5} {6,7}
    child = solver.gpx(first, second, 3, None)
    # first's largest {5,6,7,8}; then second's largest left, {2,3,4}; then first's {0,1}
    assert child.tolist() == [2, 2, 1, 1, 1, 0, 0, 0, 0]
    # uncoloured (-1) vertices in the parents are skipped; leftovers stay -1 without an rng
    child = solver.gpx(np.array([0, 0, -1, 1]), np.array([1, 0, 0, -1]), 2, None)
    assert child.tolist() == [0, 0, 1, -1]
    child = solver.gpx(np.array([0, 0, -1, 1]), np.array([1, 0, 0, -1]), 2, np.random.default_rng(0))
    assert child[:3].tolist() == [0, 0, 1] and 0 <= child[3] < 2
