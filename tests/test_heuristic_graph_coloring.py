"""The graph colouring heuristic beyond DSatur + a short TabuCol: PartialCol, a long TabuCol run
and HEA (GPX crossover) reach a planted optimum where the old heuristic (DSatur, then TabuCol
for 500 moves per vertex per colour) stopped two colours above it."""

from __future__ import annotations

import numpy as np
import pytest

import mmnp
from mmnp.solvers import graph_coloring


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


def numpy_tabucol(nbrs: list[np.ndarray], k: int, start: np.ndarray, steps: int,
                  rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """TabuCol as mmnp ran it before the compiled moves (one numpy pass over the conflicting
    vertices' gain matrix a move): the moves the compiled kernel must make."""
    n = len(nbrs)
    col = start.copy()
    gamma = np.zeros((n, k), dtype=np.int64)
    for v in np.flatnonzero(col >= 0).tolist():
        gamma[nbrs[v], col[v]] += 1
    for v in np.flatnonzero(col < 0).tolist():
        col[v] = c = int(np.argmin(gamma[v]))
        gamma[nbrs[v], c] += 1
    rows = np.arange(n)
    conflicts = int(gamma[rows, col].sum()) // 2
    best, kept = conflicts, col.copy()
    tabu = np.zeros((n, k), dtype=np.int64)
    draws = rng.integers(0, 10, size=steps + 1).tolist()
    ties = rng.random(steps + 1).tolist()
    blocked = n * n + 1
    for it in range(1, steps + 1):
        if conflicts == 0:
            break
        bad = np.flatnonzero(gamma[rows, col] > 0)
        own = gamma[bad, col[bad]]
        delta = gamma[bad] - own[:, None]
        delta[np.arange(len(bad)), col[bad]] = blocked
        delta[(tabu[bad] >= it) & (conflicts + delta >= best)] = blocked
        low = delta.min()
        if low >= blocked:
            continue
        options = np.flatnonzero(delta.ravel() == low)
        at = int(options[int(ties[it] * len(options))])
        v, c = int(bad[at // k]), at % k
        old = int(col[v])
        col[v] = c
        gamma[nbrs[v], old] -= 1
        gamma[nbrs[v], c] += 1
        conflicts += int(low)
        if conflicts < best:
            best = conflicts
            kept[:] = col
        tabu[v, old] = it + int(0.6 * len(bad)) + draws[it]
    return kept, best


@pytest.mark.parametrize("seed", range(40))
def test_compiled_tabucol_makes_the_numpy_loops_moves(seed: int) -> None:
    """Same graph, start, budget and random stream: the same colouring and conflict count (a
    kernel that ordered its options, drew its ties or kept its tabu list otherwise would drift
    within a few moves; the references of every generated instance depend on these moves)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 60))
    upper = np.triu(rng.random((n, n)) < rng.uniform(0.1, 0.7), 1)
    nbrs = [np.flatnonzero(row) for row in upper | upper.T]
    k = int(rng.integers(2, 8))
    start = rng.integers(-1, k, n).astype(np.int64)
    steps = int(rng.integers(1, 3000))
    given = start.copy()
    expected = numpy_tabucol(nbrs, k, start, steps, np.random.default_rng(seed))
    got = graph_coloring.tabucol(nbrs, k, start, steps, np.random.default_rng(seed))
    assert got[1] == expected[1]
    assert got[0].tolist() == expected[0].tolist()
    assert start.tolist() == given.tolist()  # HEA reuses its starts: not changed in place


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


def queen(size: int, columns: int | None = None) -> dict:
    """The size x size (or size x columns) queen graph of the DIMACS set (cells row by row; an
    edge between two cells in one row, column or diagonal)."""
    cells = [(r, c) for r in range(size) for c in range(columns or size)]
    edges = [[a, b] for a in range(len(cells)) for b in range(a + 1, len(cells))
             if cells[a][0] == cells[b][0] or cells[a][1] == cells[b][1]
             or abs(cells[a][0] - cells[b][0]) == abs(cells[a][1] - cells[b][1])]
    return {"n": len(cells), "edges": edges}


@pytest.mark.parametrize("size", [
    11,  # TabuCol, PartialCol and HEA stop at 12 (6-9 conflicts left at 11); the exact cover of
    #      the cells by disjoint 11-queens solutions finds 11
    13,  # local search stops at 14; over all 73,712 13-queens solutions Algorithm X finds no
    #      cover in 50,000 nodes (13 CPU s), over the 22,532 classes and pairs the half turn
    #      leaves it finds one in ~27,000
    16,  # local search stops at 18 (bench_published); a colouring both mirrors map onto
    #      themselves, searched for on the quarter board, has 16
])
def test_heuristic_colours_the_queen_board_with_as_many_colours_as_a_row(size: int):
    data = queen(size)
    colours = mmnp.get_task("graph_coloring").solver.heuristic(data)
    assert all(colours[u] != colours[v] for u, v in data["edges"])
    assert len(set(colours)) == size and max(colours) == size


def test_automorphisms_are_found_whatever_the_numbering_within_the_budget():
    from mmnp.solvers import symmetry

    data = renumbered(queen(16), 1)
    edges = np.array(data["edges"])
    group = symmetry.automorphisms(256, edges)
    adjacency = np.zeros((256, 256), dtype=bool)
    adjacency[edges[:, 0], edges[:, 1]] = adjacency[edges[:, 1], edges[:, 0]] = True
    # the board's 8 symmetries less the identity, each keeping every edge, closed under composition
    assert len(group) == 7 and len({g.tobytes() for g in group}) == 7
    assert all((adjacency[np.ix_(g, g)] == adjacency).all() for g in group)
    assert {g[h].tobytes() for g in group for h in group} <= {g.tobytes() for g in group} | {np.arange(256).tobytes()}
    # a random graph has none; an asymmetric one has none; a path has its reversal; the Petersen
    # graph's 119 stop at the limit, and a budget of 5 finds none of them
    rng = np.random.default_rng(0)
    random_pairs = np.array([[u, v] for u in range(60) for v in range(u + 1, 60) if rng.random() < 0.3])
    assert symmetry.automorphisms(60, random_pairs) == []
    assert symmetry.automorphisms(6, np.array([[0, 1], [1, 2], [2, 3], [3, 4], [2, 5], [5, 3]])) == []
    assert [g.tolist() for g in symmetry.automorphisms(4, np.array([[0, 1], [1, 2], [2, 3]]))] == [[3, 2, 1, 0]]
    petersen = np.array([[i, (i + 1) % 5] for i in range(5)] + [[i, i + 5] for i in range(5)]
                        + [[5 + i, 5 + (i + 2) % 5] for i in range(5)])
    assert len(symmetry.automorphisms(10, petersen)) == symmetry.LIMIT
    assert symmetry.automorphisms(10, petersen, work=5) == []


def test_automorphisms_are_the_whole_group_on_small_graphs_and_only_maps_that_keep_every_edge():
    """Against every permutation of up to 8 vertices, on graphs refinement cannot split (regular:
    there a map it proposes can break edges, and only the edge check stops it) and on others."""
    import itertools

    import networkx as nx

    from mmnp.solvers import symmetry

    graphs = [nx.random_regular_graph(degree, 7, seed=seed) for degree in (2, 4) for seed in range(3)]
    graphs += [nx.random_regular_graph(3, 8, seed=seed) for seed in range(5)]  # 2 and 4 lure a broken map
    graphs += [nx.gnp_random_graph(7, 0.4, seed=seed) for seed in range(4)] + [nx.cycle_graph(7)]
    for graph in graphs:
        n, edges = graph.number_of_nodes(), np.array(list(graph.edges()))
        if not len(edges):
            continue
        adjacency = nx.to_numpy_array(graph, nodelist=range(n), dtype=bool)
        every = np.array(list(itertools.permutations(range(n))))
        keeps = (adjacency[every[:, :, None], every[:, None, :]] == adjacency).all(axis=(1, 2))
        expected = {p.tobytes() for p in every[keeps]} - {np.arange(n).tobytes()}
        found = symmetry.automorphisms(n, edges, limit=10_000)
        assert {g.astype(every.dtype).tobytes() for g in found} == expected and len(found) == len(expected)


def test_free_klein_and_involution_pick_a_boards_mirrors_and_half_turn():
    from mmnp.solvers import symmetry

    sixteen, thirteen = (symmetry.automorphisms(size * size, np.array(queen(size)["edges"])) for size in (16, 13))
    a, b = symmetry.free_klein(sixteen)
    everyone = np.arange(256)
    assert (a[a] == everyone).all() and (b[b] == everyone).all() and (a[b] == b[a]).all()
    assert (a != everyone).all() and (b != everyone).all() and (a[b] != everyone).all()
    # an odd board's mirrors fix its middle column, and its half turn the centre: no free pair;
    # the involution fixing fewest cells is the half turn, v -> n - 1 - v on the board's numbering
    assert symmetry.free_klein(thirteen) is None
    assert symmetry.involution(thirteen).tolist() == list(range(168, -1, -1))
    assert symmetry.free_klein([]) is None and symmetry.involution([]) is None


def test_quarter_turn_picks_a_square_boards_quarter_turn():
    from mmnp.solvers import symmetry

    for size in (13, 16):
        turn = symmetry.quarter_turn(symmetry.automorphisms(size * size, np.array(queen(size)["edges"])))
        everyone = np.arange(size * size)
        row, column = np.divmod(everyone, size)
        assert turn.tolist() in ((column * size + size - 1 - row).tolist(), ((size - 1 - column) * size + row).tolist())
        assert turn[turn].tolist() == list(range(size * size - 1, -1, -1))  # twice round: the half turn
        assert int((turn == everyone).sum()) == size % 2  # an odd board's centre stays
    # a 10 x 12 board's symmetries are the mirrors and the half turn, all of order 2
    assert symmetry.quarter_turn(symmetry.automorphisms(120, np.array(queen(10, 12)["edges"]))) is None
    assert symmetry.quarter_turn([]) is None


def test_mirrored_colouring_is_proper_and_each_mirror_permutes_its_colour_classes(monkeypatch):
    from mmnp.solvers import symmetry

    solver = mmnp.get_task("graph_coloring").solver
    for rows, columns, seed in ((16, 16, None), (16, 16, 2), (12, 12, None), (10, 12, None)):
        data = queen(rows, columns) if seed is None else renumbered(queen(rows, columns), seed)
        edges = np.array(data["edges"])
        k = 12 if rows == 10 else rows
        colouring = solver.mirrored_colouring(data["n"], edges, k, symmetry.automorphisms(data["n"], edges))
        assert colouring is not None and (colouring[edges[:, 0]] != colouring[edges[:, 1]]).all()
        assert colouring.max() < k
        if seed is None:  # each mirror maps each colour class onto one colour class
            board = colouring.reshape(rows, columns)
            for image in (board[:, ::-1], board[::-1, :]):
                assert len(set(zip(board.ravel().tolist(), image.ravel().tolist()))) == k
    # queen8_8 needs 9 colours: no 8-colouring, mirrored or not, so None rather than a wrong one;
    # an odd board (its mirrors fix a column) and a colour count not a multiple of 4 get None too
    for size, k in ((8, 8), (13, 12), (10, 10)):
        edges = np.array(queen(size)["edges"])
        assert solver.mirrored_colouring(size * size, edges, k, symmetry.automorphisms(size * size, edges)) is None
    # random graphs closed under both mirrors of small grids, edges either way round, on short
    # searches that often end with conflicts: what comes back is proper (each edge is a
    # constraint at both of its ends)
    monkeypatch.setattr(solver, "MIRRORED_STARTS", 1)
    monkeypatch.setattr(solver, "MIRRORED_MOVES_PER_CELL", 100)
    rng, found = np.random.default_rng(0), 0
    for rows, columns in [(2, 4), (4, 6), (2, 6), (4, 4)] * 5:
        n = rows * columns
        r, c = np.divmod(np.arange(n), columns)
        images = (np.arange(n), r * columns + columns - 1 - c, (rows - 1 - r) * columns + c,
                  (rows - 1 - r) * columns + columns - 1 - c)
        picked = rng.integers(0, n, size=(n, 2))
        picked = picked[picked[:, 0] != picked[:, 1]]
        edges = np.concatenate([image[picked] for image in images])
        for k in (4, 8):
            colouring = solver.mirrored_colouring(n, edges, k, [images[1], images[2], images[3]])
            if colouring is not None:
                found += 1
                assert (colouring[edges[:, 0]] != colouring[edges[:, 1]]).all() and colouring.max() < k
    assert found >= 20
    # with every vertex its own neighbour no colouring exists, whatever the symmetries
    looped = np.array([[0, 1], [2, 3], [0, 0], [1, 1], [2, 2], [3, 3]])
    mirrors = [np.array([1, 0, 3, 2]), np.array([2, 3, 0, 1]), np.array([3, 2, 1, 0])]
    assert solver.mirrored_colouring(4, looped, 4, mirrors) is None
    assert solver.mirrored_colouring(4, looped[:2], 4, mirrors) is not None


def renumbered(data: dict, seed: int) -> dict:
    label = np.random.default_rng(seed).permutation(data["n"])
    return {"n": data["n"], "edges": sorted(sorted((int(label[u]), int(label[v]))) for u, v in data["edges"])}


def test_heuristic_colours_queen11_11_with_11_colours_however_its_cells_are_numbered():
    """Renumbered at random, queen11_11 ended at 12: on labelling 4 the greedy split into
    11-cliques finds none (the covering split finds its rows or columns) and listing its 2,680
    solutions takes over 200,000 nodes; on labelling 7 Algorithm X needs 20,000-100,000 nodes,
    where on the board's order it takes ~150."""
    for seed in (4, 7):
        data = renumbered(queen(11), seed)
        colours = mmnp.get_task("graph_coloring").solver.heuristic(data)
        assert all(colours[u] != colours[v] for u, v in data["edges"])
        assert len(set(colours)) == 11, seed


def test_heuristic_colours_queen13_13_with_13_colours_however_its_cells_are_numbered():
    """Renumbered at random (labelling 1; 4, 5, 6 and 7 alike), queen13_13 ended at 14: the
    cover that the half turn maps onto itself (22,532 options) took more than its 50,000 nodes,
    as Algorithm X follows the numbering. The cover that the quarter turn maps onto itself is
    found among 3,432 options in under 1,000 nodes, whatever the numbering."""
    data = renumbered(queen(13), 1)
    colours = mmnp.get_task("graph_coloring").solver.heuristic(data)
    assert all(colours[u] != colours[v] for u, v in data["edges"])
    assert len(set(colours)) == 13


def test_heuristic_colours_queen12_12_and_queen16_16_with_12_and_16_colours_however_numbered():
    """Their mirrors, found by colour refinement rather than read from the numbering: renumbered
    at random they ended at 13 and 18 when the mirrors were read from the board's order."""
    for size in (12, 16):
        data = renumbered(queen(size), 1)
        colours = mmnp.get_task("graph_coloring").solver.heuristic(data)
        assert all(colours[u] != colours[v] for u, v in data["edges"])
        assert len(set(colours)) == size, size


def test_linked_order_puts_each_row_of_a_renumbered_board_next_to_one_before_it():
    from mmnp.kits.graphs import neighbour_masks

    solver = mmnp.get_task("graph_coloring").solver
    label = np.random.default_rng(3).permutation(169)
    data = {"n": 169, "edges": [[int(label[u]), int(label[v])] for u, v in queen(13)["edges"]]}
    masks = neighbour_masks(data)
    parts = solver.covering_partition(masks, 13, 20_000)
    row_of = {int(label[cell]): cell // 13 for cell in range(169)}
    column_of = {int(label[cell]): cell % 13 for cell in range(169)}
    line = row_of if len({row_of[v] for v in parts[0]}) == 1 else column_of  # rows, or columns
    lines = [line[part[0]] for part in solver.linked_order(parts, masks)]
    assert lines[0] == line[parts[0][0]] and sorted(lines) == list(range(13))
    assert all(max(lines[:i]) - min(lines[:i]) == i - 1 for i in range(1, 14))  # an unbroken run
    assert [line[part[0]] for part in parts] != lines  # the split's own order was not


def test_covering_partition_splits_a_renumbered_queen_graph_where_the_greedy_split_does_not():
    from mmnp.kits.graphs import neighbour_masks

    solver = mmnp.get_task("graph_coloring").solver
    masks = neighbour_masks(renumbered(queen(11), 4))
    assert solver.clique_partition(masks, 11, solver.PARTITION_NODES) is None
    parts = solver.covering_partition(masks, 11, solver.PARTITION_NODES)
    assert sorted(v for part in parts for v in part) == list(range(121)) and len(parts) == 11
    assert all(masks[u] >> v & 1 for part in parts for u in part for v in part if u != v)
    assert solver.covering_partition(masks, 11, 50) is None  # past its node budget
    assert solver.covering_partition(neighbour_masks(renumbered(queen(6), 1)), 7, 1_000) is None  # no 7-clique

def test_turned_cover_is_a_colouring_the_half_turn_maps_onto_itself():
    from mmnp.kits.graphs import neighbour_masks
    from mmnp.solvers import symmetry

    solver = mmnp.get_task("graph_coloring").solver
    for size in (5, 7):
        data = queen(size)
        masks = neighbour_masks(data)
        image = symmetry.involution(symmetry.automorphisms(size * size, np.array(data["edges"]))).tolist()
        assert image == list(range(size * size - 1, -1, -1))  # the half turn
        classes = solver.transversals(solver.clique_partition(masks, size, 1_000), masks, 100_000)
        chosen = solver.turned_cover(classes, image, (1 << size * size) - 1, 1_000)
        assert chosen is not None and len(chosen) == size
        assert sum(chosen) == (1 << size * size) - 1 and all(a & b == 0 for a in chosen for b in chosen if a is not b)
        assert all(not masks[u] >> v & 1 for c in chosen for u in solver._members(c) for v in solver._members(c))
        turned = {sum(1 << image[v] for v in solver._members(c)) for c in chosen}
        assert turned == set(chosen), size  # the reversal permutes the colour classes
    # sets on 0..5 closed under v -> 5 - v whose only covers ({0,1} {2,4} {3,5} and its image)
    # the reversal does not map onto themselves: an exact cover exists, a turned one does not
    flip = [5, 4, 3, 2, 1, 0]
    sets = [0b000011, 0b110000, 0b010100, 0b001010, 0b101000, 0b000101]
    assert solver.exact_cover(sets, 0b111111, 100) is not None
    assert solver.turned_cover(sets, flip, 0b111111, 100) is None
    # with {0,5} (which it fixes) added, {0,5} {2,4} {1,3} is the one it maps onto itself
    assert sorted(solver.turned_cover(sets + [0b100001], flip, 0b111111, 100)) == [0b001010, 0b010100, 0b100001]
    # queen6_6 needs 7 colours: no 6 classes cover it, turned or not
    six = neighbour_masks(queen(6))
    classes = solver.transversals(solver.clique_partition(six, 6, 1_000), six, 100_000)
    turn = symmetry.involution(symmetry.automorphisms(36, np.array(queen(6)["edges"]))).tolist()
    assert solver.turned_cover(classes, turn, (1 << 36) - 1, 1_000) is None


def test_turned_cover_under_a_quarter_turn_takes_whole_orbits_of_four():
    from mmnp.kits.graphs import neighbour_masks
    from mmnp.solvers import symmetry

    solver = mmnp.get_task("graph_coloring").solver
    data = queen(5)
    masks = neighbour_masks(data)
    turn = symmetry.quarter_turn(symmetry.automorphisms(25, np.array(data["edges"])))
    classes = solver.transversals(solver.clique_partition(masks, 5, 1_000), masks, 100_000)
    chosen = solver.turned_cover(classes, turn.tolist(), (1 << 25) - 1, 2)
    assert chosen is not None and len(chosen) == 5 and sum(chosen) == (1 << 25) - 1
    assert all(not masks[u] >> v & 1 for c in chosen for u in solver._members(c) for v in solver._members(c))
    turned = [sum(1 << int(turn[v]) for v in solver._members(c)) for c in chosen]
    assert set(turned) == set(chosen)  # the quarter turn permutes the colour classes ...
    assert sum(t == c for t, c in zip(turned, chosen)) == 1  # ... fixing one (the centre's), turning four
    assert solver.exact_cover(classes, (1 << 25) - 1, 2) is None  # two options of the plain search do not
    # on 0..5 under v -> v + 2 (mod 6), of order 3: the three images of {0, 1} cover it, one option
    # (pairing a set with its image would give sets of 4, which cover nothing of 6)
    third = [(v + 2) % 6 for v in range(6)]
    assert sorted(solver.turned_cover([0b11, 0b1100, 0b110000], third, 63, 10)) == [0b11, 0b1100, 0b110000]
    # on 0..7 under v -> v + 2 (mod 8): the four images of {0, 1} cover it ({1, 2}'s orbit has the
    # same union, one option); each {v, v + 2} meets its own image {v + 2, v + 4}, so no orbit of
    # theirs is an option, though four of them ({0, 2} {4, 6} {1, 3} {5, 7}) are an exact cover
    shift = [(v + 2) % 8 for v in range(8)]
    pairs = [1 << v | 1 << (v + 1) % 8 for v in range(8)]
    assert sorted(solver.turned_cover(pairs, shift, 255, 10)) == [3, 12, 48, 192]
    apart = [1 << v | 1 << (v + 2) % 8 for v in range(8)]
    assert solver.exact_cover(apart, 255, 100) is not None and solver.turned_cover(apart, shift, 255, 100) is None


def test_clique_cover_colouring_finds_the_queens_colouring_and_none_where_there_is_none():
    from mmnp.kits.graphs import neighbour_masks

    solver = mmnp.get_task("graph_coloring").solver
    five = queen(5)  # 5 colours suffice (5 is coprime to 6): 5 disjoint 5-queens solutions
    colouring = solver.clique_cover_colouring(neighbour_masks(five), 5, [])
    assert colouring is not None and sorted(set(colouring.tolist())) == [0, 1, 2, 3, 4]
    assert all(colouring[u] != colouring[v] for u, v in five["edges"])
    # queen6_6 needs 7: its rows split it into 6-cliques, but its four 6-queens solutions
    # cannot cover the 36 cells, so the search ends with None rather than a wrong colouring
    assert solver.clique_cover_colouring(neighbour_masks(queen(6)), 6, []) is None
    # the Petersen graph splits into 5 edges (2-cliques) but is not bipartite
    petersen = [[i, (i + 1) % 5] for i in range(5)] + [[i, i + 5] for i in range(5)] \
        + [[5 + i, 5 + (i + 2) % 5] for i in range(5)]
    assert solver.clique_cover_colouring(neighbour_masks({"n": 10, "edges": petersen}), 2, []) is None


def test_transversals_are_every_independent_choice_of_one_vertex_per_part():
    import itertools

    solver = mmnp.get_task("graph_coloring").solver
    rng = np.random.default_rng(3)
    parts = [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]]
    edges = {(a, b) for part in parts for a in part for b in part if a < b}
    edges |= {(int(a), int(b)) for a, b in rng.integers(0, 12, size=(20, 2)) if a < b}
    masks = [0] * 12
    for a, b in edges:
        masks[a] |= 1 << b
        masks[b] |= 1 << a
    expected = sorted(sum(1 << v for v in pick) for pick in itertools.product(*parts)
                      if not any((min(a, b), max(a, b)) in edges for a, b in itertools.combinations(pick, 2)))
    assert 0 < len(expected) < 81
    assert sorted(solver.transversals(parts, masks, 10_000)) == expected
    assert solver.transversals(parts, masks, 3) is None  # past its node budget: no partial list


def test_exact_cover_returns_disjoint_sets_covering_everything_or_none():
    solver = mmnp.get_task("graph_coloring").solver
    # Knuth's example (Dancing Links, 2000): only B, D and F partition the 7 elements (bits 0..6)
    sets = [0b1001001, 0b0001001, 0b1011000, 0b0110100, 0b1100110, 0b1000010]  # A B C D E F
    assert sorted(solver.exact_cover(sets, 0b1111111, 100)) == [1, 3, 5]
    assert solver.exact_cover(sets[:4], 0b1111111, 100) is None
    assert solver.exact_cover(sets, 0b1111111, 1) is None  # budget spent before the last set
    # a dead end below a chosen set: the search takes set 0 back before it tries set 2
    assert solver.exact_cover([0b1001, 0b10100, 0b110011, 0b100110, 0b1100], 0b111111, 100) == [2, 4]


def test_clique_partition_splits_into_cliques_or_says_it_cannot():
    from mmnp.kits.graphs import neighbour_masks

    solver = mmnp.get_task("graph_coloring").solver
    masks = neighbour_masks(queen(6))
    parts = solver.clique_partition(masks, 6, 1_000)
    assert sorted(v for part in parts for v in part) == list(range(36))
    assert all(masks[u] >> v & 1 for part in parts for u in part for v in part if u != v)
    assert solver.clique_partition(masks, 6, 3) is None  # past its node budget
    assert solver.clique_partition(masks, 7, 1_000) is None  # no 7-clique at all
    # a star: once the centre is paired with its first leaf, the other leaves have no partner
    assert solver.clique_partition(neighbour_masks({"n": 4, "edges": [[0, 1], [0, 2], [0, 3]]}), 2, 100) is None


def test_fewer_colours_tries_a_random_start_of_its_own_stream_before_hea(monkeypatch):
    """When the runs from the (k+1)-colouring fail, TabuCol runs from a random k-colouring (where
    no k-colouring is near the first start: le450_25c at 26) drawn from a stream seeded by k, so
    the HEA stages after it get the generator as they got it before that run was added."""
    data = leighton(60, 6, 500, 0)
    nbrs = [np.asarray(sorted(a), dtype=np.intp) for a in graph_coloring._adjacency(data)]
    colouring = np.arange(data["n"]) % 7  # 7 colours: fewer_colours looks for 6
    starts, handed = [], []

    def failing_search(nbrs, k, start, steps, rng):
        starts.append(start.copy())
        return start, 1

    def hybrid(nbrs, colouring, steps, rng, partial):
        handed.append(rng.bit_generator.state)
        return None

    monkeypatch.setattr(graph_coloring, "tabucol", failing_search)
    monkeypatch.setattr(graph_coloring, "partialcol", failing_search)
    monkeypatch.setattr(graph_coloring, "long_partialcol", failing_search)
    monkeypatch.setattr(graph_coloring, "hybrid", hybrid)
    rng = np.random.default_rng(5)
    before = rng.bit_generator.state
    assert graph_coloring.fewer_colours(nbrs, colouring, rng) is None
    assert len(starts) == 5 and all((s < 0).any() for s in starts[:3])  # the first three: a class uncoloured
    fresh = np.random.default_rng(6)  # the last two: random colourings of that stream (the searches drew nothing)
    assert np.array_equal(starts[3], fresh.integers(0, 6, data["n"]))
    assert np.array_equal(starts[4], fresh.integers(0, 6, data["n"]))
    assert handed == [before, before]


def test_long_partialcol_returns_a_proper_partial_colouring_and_its_uncoloured_count():
    data = leighton(60, 6, 500, 1)
    nbrs = [np.asarray(sorted(a), dtype=np.intp) for a in graph_coloring._adjacency(data)]
    start = np.random.default_rng(0).integers(0, 6, data["n"])
    given = start.copy()
    for k, steps in ((6, 20_000), (5, 2_000), (6, 0)):  # reachable; not (a 6-clique); no moves at all
        kept, count = graph_coloring.long_partialcol(nbrs, k, np.minimum(start, k - 1), steps, np.random.default_rng(1))
        assert count == int((kept < 0).sum()) and kept.max() < k
        assert all(kept[u] < 0 or kept[u] != kept[v] for u, v in data["edges"]), (k, steps)
        assert (count == 0) == (k == 6 and steps > 0), (k, steps, count)
    assert np.array_equal(start, given)  # not changed in place
    # no moves: the start made proper by uncolouring each vertex that shares its colour with a
    # lower-numbered neighbour still coloured
    expected = start.copy()
    for v in range(data["n"]):
        if any(u < v and expected[u] == expected[v] for u in nbrs[v]):
            expected[v] = -1
    kept, count = graph_coloring.long_partialcol(nbrs, 6, start, 0, np.random.default_rng(1))
    assert np.array_equal(kept, expected) and count == int((expected < 0).sum())


def python_partialcol(nbrs: list[np.ndarray], k: int, start: np.ndarray, steps: int, rng: np.random.Generator,
                      per_uncoloured: float) -> tuple[np.ndarray, int]:
    """PartialCol with the paper's tabu rule, written plainly (every count recomputed each move,
    the uncoloured vertices a Python list): what `long_partialcol`'s compiled moves must equal."""
    draws = rng.integers(0, 10, size=steps + 1, dtype=np.int8)
    ties = rng.random(steps + 1, dtype=np.float32)
    col = [int(c) for c in start]
    for v in range(len(col)):
        if col[v] >= 0 and any(u < v and col[u] == col[v] for u in nbrs[v]):
            col[v] = -1
    out = [v for v in range(len(col)) if col[v] < 0]
    best, kept, tabu = len(out), list(col), {}
    for it in range(1, steps + 1):
        if not out:
            break
        costs = {(i, c): sum(col[u] == c for u in nbrs[v]) - 1 for i, v in enumerate(out) for c in range(k)}
        allowed = [(i, c) for (i, c), change in costs.items()
                   if tabu.get((out[i], c), 0) < it or len(out) + change < best]  # tabu, unless it beats the best
        if allowed:
            low = min(costs[o] for o in allowed)
            i, c = [o for o in allowed if costs[o] == low][int(float(ties[it]) * sum(costs[o] == low for o in allowed))]
        else:  # every move tabu: a random one
            i, c = divmod(int(float(ties[it]) * len(out) * k), k)
        v = out[i]
        out[i] = out[-1]
        out.pop()
        col[v] = c
        tenure = int(per_uncoloured * len(out)) + int(draws[it])
        for u in nbrs[v]:
            if col[u] == c:  # uncoloured, and may not take c back within the tenure
                col[u] = -1
                out.append(int(u))
                tabu[(int(u), c)] = it + tenure
        if len(out) < best:
            best, kept = len(out), list(col)
    return np.asarray(kept), best


@pytest.mark.parametrize("seed", range(6))
def test_long_partialcol_makes_the_plain_python_moves(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(8, 30)), int(rng.integers(2, 6))
    edges = [[u, v] for u in range(n) for v in range(u + 1, n) if rng.random() < 0.35]
    nbrs = [np.asarray(sorted(a), dtype=np.intp) for a in graph_coloring._adjacency({"n": n, "edges": edges})]
    start = rng.integers(-1, k, n)
    for per_uncoloured in (0.0, 0.6, 1.5, 6.0):  # a long tenure makes every move tabu at times
        expected = python_partialcol(nbrs, k, start, 300, np.random.default_rng(seed), per_uncoloured)
        got = graph_coloring.long_partialcol(nbrs, k, start, 300, np.random.default_rng(seed), per_uncoloured)
        assert got[0].tolist() == expected[0].tolist() and got[1] == expected[1], (seed, per_uncoloured)
    with pytest.raises(ValueError, match="5 colours, a start with colours 0..5"):  # colour 5 is the sixth
        graph_coloring.long_partialcol(nbrs, 5, np.arange(n) % 6, 10, rng)


def test_long_partialcols_tenure_reaches_15_colours_on_le450_15c_from_every_start():
    """At the stage's tenure, 1.5 x |uncoloured| + 0-9, PartialCol reaches le450_15c's 15 colours
    from 8 random colourings of 8 in 2 million moves, renumbered or not; at the authors' 0.6, 3
    and 4 of 8 (le450_15d: 8 and 1 of 8)."""
    from mmnp.importers import classic_dir, read_file

    data = read_file("dimacs", classic_dir() / "le450_15c.col", "graph_coloring").data
    n = data["n"]
    label = np.random.default_rng(1).permutation(n)
    edges = [[int(label[u]), int(label[v])] for u, v in data["edges"]]
    nbrs = [np.asarray(sorted(a), dtype=np.intp) for a in graph_coloring._adjacency({"n": n, "edges": edges})]
    for seed in range(100, 108):
        rng = np.random.default_rng(seed)
        kept, count = graph_coloring.long_partialcol(nbrs, 15, rng.integers(0, 15, n), 2_000_000, rng)
        assert count == 0 and all(kept[u] != kept[v] for u, v in edges), seed

def test_heuristic_colours_le450_15c_with_15_colours_however_its_vertices_are_numbered():
    """le450_15c's 15 colours came from the file's own numbering: relabelled at random, the
    stages before the long-tenure PartialCol ended at 16 on labellings 1 and 2 (and 4 of 0-4)."""
    from mmnp.importers import classic_dir, read_file

    data = read_file("dimacs", classic_dir() / "le450_15c.col", "graph_coloring").data  # the file's numbering
    n = data["n"]
    for seed in (1, 2):
        label = np.random.default_rng(seed).permutation(n)
        edges = sorted(sorted((int(label[u]), int(label[v]))) for u, v in data["edges"])
        colours = graph_coloring.heuristic({"n": n, "edges": [list(e) for e in edges]})
        assert all(colours[u] != colours[v] for u, v in edges)
        assert len(set(colours)) == 15, seed


def geometric(n: int, radius: float, seed: int) -> dict:
    """A random geometric graph (as the DIMACS r and DSJR graphs): n points in the unit square,
    an edge between two closer than `radius`."""
    points = np.random.default_rng(seed).random((n, 2))
    close = np.linalg.norm(points[:, None] - points[None], axis=2) < radius
    return {"n": n, "edges": [[int(u), int(v)] for u, v in zip(*np.nonzero(np.triu(close, 1)))]}


def test_cp_sat_colours_with_the_cliques_size_where_local_search_stops_just_above_it(monkeypatch):
    """Where local search stops a colour or two above the clique, CP-SAT with the clique's colours
    fixed looks for a colouring with the clique's size (r250.5: 65, where the local search ends
    at 67). With local search made to find nothing, DSatur's 11 colours on this geometric graph
    become its clique's 10; with the stage off (CLIQUE_GAP 0) they stay 11. Where no colouring
    with the clique's size exists (the second graph: DSatur 10, clique 9) nothing changes. The LP
    dive after it is off here (it would take the 11 to 10 on its own: the next tests)."""
    monkeypatch.setattr(graph_coloring, "fewer_colours", lambda *args: None)
    monkeypatch.setattr(graph_coloring, "price_and_dive", lambda *args: None)
    data = geometric(60, 0.3, 0)
    assert len(graph_coloring.large_clique(data)) == 10
    assert max(graph_coloring.dsatur(graph_coloring._adjacency(data))) == 11
    colours = graph_coloring.heuristic(data)
    assert all(colours[u] != colours[v] for u, v in data["edges"]) and len(set(colours)) == 10
    hopeless = geometric(60, 0.3, 8)
    assert len(set(graph_coloring.heuristic(hopeless))) == 10 == len(graph_coloring.large_clique(hopeless)) + 1
    monkeypatch.setattr(graph_coloring, "CLIQUE_GAP", 0)
    assert len(set(graph_coloring.heuristic(data))) == 11


def test_cp_sat_takes_a_geometric_graph_from_local_searchs_stop_to_its_clique(monkeypatch):
    """On this random geometric graph (150 points, radius 0.4: 3,721 edges, a 30-clique) the local
    search stages stop at 31 colours and CP-SAT with the clique fixed finds 30, the optimum; on
    two renumberings of it too (the LP dive after it off, which would also find the 30)."""
    monkeypatch.setattr(graph_coloring, "price_and_dive", lambda *args: None)
    data = geometric(150, 0.4, 18)
    colours = graph_coloring.heuristic(data)
    assert all(colours[u] != colours[v] for u, v in data["edges"])
    assert len(set(colours)) == len(graph_coloring.large_clique(data)) == 30
    for seed in (1, 2):
        renumbered_data = renumbered(data, seed)
        assert len(set(graph_coloring.heuristic(renumbered_data))) == 30
    monkeypatch.setattr(graph_coloring, "CLIQUE_GAP", 0)
    assert len(set(graph_coloring.heuristic(data))) == 31


def test_canonical_order_follows_the_graph_not_its_numbering():
    """Colour refinement names the vertices alike in any numbering: on a graph whose refinement
    is discrete (a random graph, G(80, 0.3)), the order of the renumbered graph is the order of
    the original, renumbered. An order by vertex number (or by degree, which ties) is not."""
    from mmnp.solvers import symmetry

    rng = np.random.default_rng(1)
    data = {"n": 80, "edges": [[u, v] for u in range(80) for v in range(u + 1, 80) if rng.random() < 0.3]}
    edges = np.asarray(data["edges"]).reshape(-1, 2)
    order = symmetry.canonical_order(data["n"], edges)
    assert sorted(order.tolist()) == list(range(data["n"])) and (order != np.arange(data["n"])).any()
    for seed in (1, 2):
        label = np.random.default_rng(seed).permutation(data["n"])
        other = symmetry.canonical_order(data["n"], np.asarray(renumbered(data, seed)["edges"]).reshape(-1, 2))
        assert (label[order] == other).all()


def test_the_cp_sat_stages_model_is_the_same_however_the_graph_is_numbered(monkeypatch):
    """`fixed_clique_colouring` lays its model down in `canonical_order`: on a graph whose
    refinement is discrete, the renumbered graph (with its clique renumbered) gives the very same
    CP-SAT model, so CP-SAT's search and answer are the same; laid down by vertex number it
    differs."""
    from mmnp.solvers import cpsat

    rng = np.random.default_rng(1)
    data = {"n": 80, "edges": [[u, v] for u in range(80) for v in range(u + 1, 80) if rng.random() < 0.3]}
    clique = graph_coloring.large_clique(data)
    label = np.random.default_rng(1).permutation(data["n"])
    other, other_clique = renumbered(data, 1), [int(label[v]) for v in clique]
    models = []

    def recorded(model, time_limit):
        models.append(str(model.Proto()))
        raise cpsat.NoSolution("recorded")

    monkeypatch.setattr(cpsat, "solve", recorded)
    assert graph_coloring.fixed_clique_colouring(data, clique, 1.0) is None
    assert graph_coloring.fixed_clique_colouring(other, other_clique, 1.0) is None
    assert models[0] == models[1]
    by_number = [str(graph_coloring._colouring_model(graph, members, len(members), minimise=False)[0].Proto())
                 for graph, members in ((data, clique), (other, other_clique))]
    assert by_number[0] != by_number[1]


def test_the_lp_dive_takes_geometric_graphs_from_dsaturs_colours_to_their_cliques():
    """Mehrotra & Trick's LP over independent sets, priced and dived (`price_and_dive`), from
    DSatur's colouring alone: on these random geometric graphs (DSJR500.5: 122 colours, r1000.5:
    234, the optima, where local search ends at 125 and 242) DSatur's 11, 32 and 27 colours become
    the cliques' 10, 30 and 25, each colouring proper."""
    for args, dsatur_colours, clique in (((60, 0.3, 0), 11, 10), ((150, 0.4, 18), 32, 30), ((200, 0.3, 2), 27, 25)):
        data = geometric(*args)
        adj = graph_coloring._adjacency(data)
        start = np.asarray(graph_coloring.dsatur(adj)) - 1
        assert start.max() + 1 == dsatur_colours and len(graph_coloring.large_clique(data)) == clique
        fewer = graph_coloring.price_and_dive(adj, start, clique)
        assert fewer is not None and fewer.max() + 1 == clique == len(set(fewer.tolist()))
        assert all(fewer[u] != fewer[v] for u, v in data["edges"])


def test_the_lp_dive_gives_up_where_it_cannot_use_fewer_colours(monkeypatch):
    """Where the colouring given is optimal the dive returns None, never a worse or improper
    colouring: a geometric graph whose 10 colours are the optimum (its LP's bound rounds up to
    10), and C5 and the Groetzsch graph (3 and 4 colours, fractional chromatic numbers 5/2 and
    29/10), also with the clique test off, so that the dive runs until its bound stops it."""
    import networkx as nx

    groetzsch = nx.mycielski_graph(4)
    for data in ({"n": 5, "edges": [[i, (i + 1) % 5] for i in range(5)]}, geometric(60, 0.3, 8),
                 {"n": 11, "edges": [list(edge) for edge in groetzsch.edges]}):
        adj = graph_coloring._adjacency(data)
        start = np.asarray(graph_coloring.dsatur(adj)) - 1
        clique = len(graph_coloring.large_clique(data))
        assert graph_coloring.price_and_dive(adj, start, clique) is None
        with monkeypatch.context() as patched:
            patched.setattr(graph_coloring, "CLIQUE_SLACK", 10.0)
            assert graph_coloring.price_and_dive(adj, start, clique) is None


def test_the_lp_dive_gives_up_where_its_first_lp_is_far_from_integral(monkeypatch):
    """The first LP's bound (Farley's) more than CLIQUE_SLACK above the clique, or not settled
    within ROOT_SOLVES solves (le450_25c's takes 73, DSJC500.5's 310, where the dive finds
    nothing), and the dive stops: on G(120, 0.5) (DSatur 21 colours, a 9-clique) after 10 pricing
    rounds, where with the clique test off it dives on for 120 (to 18 colours); on the geometric
    graph whose dive reaches its clique's 30 colours, allowed fewer solves than its first LP
    needs, or fewer pricing scans (DIVE_SCANS) than it spends, it returns None."""
    rounds = []
    pricing = graph_coloring._price

    def counted(*args):
        rounds.append(1)
        return pricing(*args)

    monkeypatch.setattr(graph_coloring, "_price", counted)
    rng = np.random.default_rng(3)
    data = {"n": 120, "edges": [[u, v] for u in range(120) for v in range(u + 1, 120) if rng.random() < 0.5]}
    adj = graph_coloring._adjacency(data)
    start = np.asarray(graph_coloring.dsatur(adj)) - 1
    clique = len(graph_coloring.large_clique(data))
    assert graph_coloring.price_and_dive(adj, start, clique) is None
    given_up_after = len(rounds)
    with monkeypatch.context() as patched:
        patched.setattr(graph_coloring, "CLIQUE_SLACK", 10.0)
        dived = graph_coloring.price_and_dive(adj, start, clique)
    assert dived is not None and dived.max() < start.max() and len(rounds) > 5 * given_up_after
    data = geometric(150, 0.4, 18)
    adj = graph_coloring._adjacency(data)
    start = np.asarray(graph_coloring.dsatur(adj)) - 1
    assert graph_coloring.price_and_dive(adj, start, 30).max() + 1 == 30
    with monkeypatch.context() as patched:
        patched.setattr(graph_coloring, "ROOT_SOLVES", 2)
        assert graph_coloring.price_and_dive(adj, start, 30) is None
    monkeypatch.setattr(graph_coloring, "DIVE_SCANS", 150 * 150)  # less than one pricing round
    assert graph_coloring.price_and_dive(adj, start, 30) is None


def test_the_lp_dive_runs_where_local_search_stops_above_the_clique(monkeypatch):
    """Wiring: the dive runs where the colours stay more than CLIQUE_GAP above the clique (the
    CP-SAT stage takes the nearer ones). With local search made to find nothing and CLIQUE_GAP 0,
    DSatur's 11 colours on a geometric graph become its clique's 10 through the dive, and stay 11
    without it."""
    monkeypatch.setattr(graph_coloring, "fewer_colours", lambda *args: None)
    monkeypatch.setattr(graph_coloring, "CLIQUE_GAP", 0)
    data = geometric(60, 0.3, 0)
    colours = graph_coloring.heuristic(data)
    assert all(colours[u] != colours[v] for u, v in data["edges"]) and len(set(colours)) == 10
    monkeypatch.setattr(graph_coloring, "price_and_dive", lambda *args: None)
    assert len(set(graph_coloring.heuristic(data))) == 11


def test_compiled_pricing_finds_the_plain_python_columns():
    """`_price` compiled and as plain Python give the same columns, in the same order, for the
    same duals (random duals on a random graph, some vertices gone)."""
    rng = np.random.default_rng(4)
    adjacent = np.triu(rng.random((70, 70)) < 0.2, 1)
    adjacent |= adjacent.T
    for seed in range(3):
        draws = np.random.default_rng(seed)
        duals = np.round(draws.random(70) * 0.4, 3)
        alive = draws.random(70) < 0.9
        duals[~alive] = 0
        seeds = np.argsort(-duals, kind="stable")
        found = graph_coloring._price(adjacent, duals, alive, seeds, 10**12)
        plain = graph_coloring._price.py_func(adjacent, duals, alive, seeds, 10**12)
        assert len(found[1]) > 2 and (found[0] == plain[0]).all() and (found[1] == plain[1]).all()
        assert found[2] == plain[2] > 0
