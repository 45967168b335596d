"""A graph's automorphisms, searched for as nauty does at heart (colour refinement, then
individualising one vertex at a time), within a budget of refinements: so that a heuristic
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
class a single cell: queen16_16's 8 symmetries take ~40 refinements (~0.1 CPU s) in any
numbering. A random graph's first refinement is already discrete (only the identity); a graph
with many symmetries or none that refinement can see (a regular graph) stops at the budget.
"""

from __future__ import annotations

import numpy as np

REFINEMENTS = 400  # colour refinements the search may spend (each a matrix product over the vertices)
LIMIT = 64  # automorphisms listed at most


def refine(adjacency: np.ndarray, colours: np.ndarray) -> np.ndarray:
    """The coarsest equitable refinement of `colours` (0..c-1), colours named canonically: by
    the sorted (colour, neighbours of each colour) rows."""
    while True:
        counts = adjacency @ np.eye(int(colours.max()) + 1, dtype=np.float32)[colours]
        _, named = np.unique(np.column_stack([colours, counts]), axis=0, return_inverse=True)
        named = named.ravel()
        if named.max() == colours.max():
            return named
        colours = named


def automorphisms(n: int, edges: np.ndarray, limit: int = LIMIT, budget: int = REFINEMENTS) -> list[np.ndarray]:
    """Up to `limit` automorphisms other than the identity (each an array: vertex -> image),
    found within `budget` refinements, in a fixed order (the same list for the same numbering)."""
    if n < 2 or not len(edges):
        return []
    adjacency = np.zeros((n, n), dtype=np.float32)
    adjacency[edges[:, 0], edges[:, 1]] = adjacency[edges[:, 1], edges[:, 0]] = 1
    found: list[np.ndarray] = []
    left = [budget]

    def individualised(colours: np.ndarray, v: int) -> np.ndarray:
        marked = colours * 2
        marked[v] += 1  # its own colour, named the same on both sides
        left[0] -= 1
        return refine(adjacency, marked)

    def extend(mine: np.ndarray, theirs: np.ndarray) -> None:
        sizes = np.bincount(mine)
        if sizes.max() == 1:
            image = np.empty(n, dtype=np.int64)
            image[np.argsort(mine)] = np.argsort(theirs)  # the vertex of the same colour
            if (image != np.arange(n)).any() and (adjacency[np.ix_(image, image)] == adjacency).all():
                found.append(image)
            return
        cell = int(np.flatnonzero(sizes > 1)[0])
        v = int(np.flatnonzero(mine == cell)[0])
        split = individualised(mine, v)
        for w in np.flatnonzero(theirs == cell):
            if len(found) >= limit or left[0] <= 0:
                return
            other = individualised(theirs, int(w))
            if np.array_equal(np.bincount(split), np.bincount(other)):
                extend(split, other)

    start = refine(adjacency, np.zeros(n, dtype=np.int64))
    extend(start, start)
    return found


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
    """The involution of `group` that fixes the fewest vertices (the first such), or None: a
    board's half turn, which fixes at most its centre."""
    if not group:
        return None
    everyone = np.arange(len(group[0]))
    involutions = [g for g in group if (g[g] == everyone).all()]
    return min(involutions, key=lambda g: int((g == everyone).sum()), default=None)
