"""A graph's automorphisms, searched for as nauty does at heart (colour refinement, then
individualising one vertex at a time), within a budget of work: so that a heuristic
which uses a symmetry (graph colouring's mirrored and turned searches) finds it however the
graph's vertices are numbered.

Colour refinement (1-dimensional Weisfeiler-Leman) splits the vertices by colour and by how
many neighbours of each colour they have until no class splits; the colours are named by
sorting those counts, so two numberings of one graph get the same names. An automorphism maps
each class onto itself, and fixing one vertex (a colour of its own) and refining again splits
the classes further: matching the left side's first vertex of its first non-singleton class to
each vertex of that class on the right, depth first, until every class is one vertex, lists
the whole group (each leaf whose map keeps every edge is one automorphism). On a queen board
the first refinement leaves classes of 4 or 8 cells and one individualisation more makes every
class a single cell: queen16_16's 8 symmetries take ~0.02 CPU s in any numbering. A random
graph's first refinement is already discrete (only the identity); a graph with many
symmetries, or one where refinement splits slowly (a long cycle: one class more a round), stops
at the budget, which counts the work of every refinement round, not the refinements.
"""

from __future__ import annotations

import numpy as np

WORK = 20_000_000  # the search's budget: a refinement round costs 2 per edge and ROUND_PER_VERTEX per vertex
#   (queen16_16's whole search 0.8 million, queen31_31's 5 million; at most ~0.6 CPU s at 1,000 vertices)
ROUND_PER_VERTEX = 32  # (naming the new colours sorts the vertices: at 1,000 vertices a round costs about as
#   much as visiting 32,000 neighbours)
LIMIT = 64  # automorphisms listed at most
MAX_DEPTH = 100  # vertices individualised along one branch at most (a queen board needs 2)


class _Refiner:
    """Colour refinement on one graph, each round charged to a shared budget. A vertex's new
    colour is named by its colour and two sums of fixed random 31-bit weights over its
    neighbours' colours: below 2^53, so exact in any order and both sides of the search name
    alike. Two different multisets of colours that sum alike would only merge two classes, which
    loses automorphisms but never makes a wrong one (each is checked edge by edge)."""

    def __init__(self, n: int, edges: np.ndarray, work: int):
        pairs = np.unique(np.sort(edges, axis=1), axis=0)  # each edge once, either way round
        self.n, self.left = n, work
        self.tails = np.concatenate([pairs[:, 0], pairs[:, 1]])
        self.heads = np.concatenate([pairs[:, 1], pairs[:, 0]])
        self.weights = np.random.default_rng(0).integers(1, 2**31, size=(2, 2 * n + 2)).astype(np.float64)

    def refine(self, colours: np.ndarray) -> np.ndarray | None:
        """The coarsest equitable refinement of `colours` (0..c-1), colours named canonically, or
        None once the budget is spent."""
        colours = np.unique(colours, return_inverse=True)[1].ravel()  # 0..c-1 in the same order
        while True:
            self.left -= len(self.tails) + ROUND_PER_VERTEX * self.n
            if self.left < 0:
                return None
            sums = [np.bincount(self.tails, weights=weight[colours[self.heads]], minlength=self.n)
                    for weight in self.weights]
            _, named = np.unique(np.column_stack([colours, *sums]).astype(np.int64), axis=0, return_inverse=True)
            named = named.ravel()
            if named.max() == colours.max():
                return named
            colours = named


def automorphisms(n: int, edges: np.ndarray, limit: int = LIMIT, work: int = WORK) -> list[np.ndarray]:
    """Up to `limit` automorphisms other than the identity (each an array: vertex -> image),
    found within `work` (see WORK), in a fixed order (the same list for the same numbering)."""
    if n < 2 or not len(edges):
        return []
    refiner = _Refiner(n, edges, work)
    low, high = refiner.tails[: len(refiner.tails) // 2], refiner.heads[: len(refiner.tails) // 2]
    present = low * n + high  # sorted (np.unique above), low <= high
    found: list[np.ndarray] = []

    def individualised(colours: np.ndarray, v: int) -> np.ndarray | None:
        marked = colours * 2
        marked[v] += 1  # its own colour, named the same on both sides
        return refiner.refine(marked)

    def keeps_every_edge(image: np.ndarray) -> bool:
        a, b = image[low], image[high]
        return np.array_equal(np.sort(np.minimum(a, b) * n + np.maximum(a, b)), present)

    def extend(mine: np.ndarray, theirs: np.ndarray, depth: int) -> None:
        if depth > MAX_DEPTH:  # one vertex split off a level (a star's leaves): not a symmetry worth the stack
            return
        sizes = np.bincount(mine)
        if sizes.max() == 1:
            image = np.empty(n, dtype=np.int64)
            image[np.argsort(mine)] = np.argsort(theirs)  # the vertex of the same colour
            if (image != np.arange(n)).any() and keeps_every_edge(image):
                found.append(image)
            return
        cell = int(np.flatnonzero(sizes > 1)[0])
        split = individualised(mine, int(np.flatnonzero(mine == cell)[0]))
        for w in np.flatnonzero(theirs == cell):
            if split is None or len(found) >= limit:
                return
            other = individualised(theirs, int(w))
            if other is None:
                return
            if np.array_equal(np.bincount(split), np.bincount(other)):
                extend(split, other, depth + 1)

    start = refiner.refine(np.zeros(n, dtype=np.int64))
    if start is not None:
        extend(start, start, 0)
    return found


def canonical_order(n: int, edges: np.ndarray, work: int = WORK) -> np.ndarray:
    """The vertices ordered by their colour after colour refinement (named alike in any
    numbering), ties by number; the numbering's own order where the budget runs out. A model
    built in this order is the same model however the graph is numbered, up to the ties (none on
    a random graph, whose refinement is discrete), so a search that follows the order it is given
    (CP-SAT's) ends alike."""
    colours = _Refiner(n, edges, work).refine(np.zeros(n, dtype=np.int64)) if n and len(edges) else None
    return np.arange(n) if colours is None else np.lexsort((np.arange(n), colours))


def free_klein(group: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray] | None:
    """Two commuting involutions of `group` that, with their product, move every vertex (the
    mirrors of a board with even sides), or None."""
    everyone = np.arange(len(group[0])) if group else None
    free = [g for g in group if (g[g] == everyone).all() and (g != everyone).all()]
    for i, a in enumerate(free):
        for b in free[i + 1:]:
            if (a[b] == b[a]).all() and (a[b] != everyone).all():
                return a, b
    return None


def involution(group: list[np.ndarray]) -> np.ndarray | None:
    """The involution of `group` that fixes the fewest vertices (the first such), or None: an odd
    board's half turn, which fixes only its centre (on an even board a mirror or the half turn,
    none of which fixes a cell)."""
    return _fewest_fixed(group, 2)


def quarter_turn(group: list[np.ndarray]) -> np.ndarray | None:
    """The automorphism of order 4 in `group` that fixes the fewest vertices (the first such), or
    None: a square board's quarter turn."""
    return _fewest_fixed(group, 4)


def _fewest_fixed(group: list[np.ndarray], order: int) -> np.ndarray | None:
    """The element of `group` whose order is exactly `order` fixing the fewest vertices, or None."""
    if not group:
        return None
    everyone = np.arange(len(group[0]))

    def order_of(g: np.ndarray) -> int:
        power, k = g, 1
        while not (power == everyone).all() and k <= order:
            power, k = g[power], k + 1
        return k

    of_order = [g for g in group if order_of(g) == order]
    return min(of_order, key=lambda g: int((g == everyone).sum()), default=None)
