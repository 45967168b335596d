"""Maximum clique: greedy growth from every vertex plus (1,1)-swap plateau moves (as
NP-Bench's greedy + local search); CP-SAT exact."""

from __future__ import annotations

import numpy as np

from mmnp.generators.graphs import neighbour_masks
from mmnp.solvers import cpsat

PLATEAU_MOVES = 50


def _grow(clique: int, masks: list[int], n: int) -> int:
    """Add vertices adjacent to the whole clique, most connected among the candidates first."""
    cand = ((1 << n) - 1) & ~clique
    for v in range(n):
        if clique >> v & 1:
            cand &= masks[v]
    while cand:
        v = max((u for u in range(n) if cand >> u & 1), key=lambda u: ((masks[u] & cand).bit_count(), -u))
        clique |= 1 << v
        cand &= masks[v]
    return clique


def heuristic(data: dict) -> list[int]:
    n, masks = data["n"], neighbour_masks(data)
    best = 0
    for start in range(n):
        clique = _grow(1 << start, masks, n)
        seen = {clique}
        for _ in range(PLATEAU_MOVES):  # swap out one member for an outsider adjacent to all the others
            members = [v for v in range(n) if clique >> v & 1]
            moved = False
            for out in members:
                rest = clique & ~(1 << out)
                common = ((1 << n) - 1) & ~clique
                for v in members:
                    if v != out:
                        common &= masks[v]
                for v in range(n):
                    if common >> v & 1 and v != out:
                        candidate = _grow(rest | 1 << v, masks, n)
                        if candidate not in seen:
                            seen.add(candidate)
                            clique, moved = candidate, True
                            break
                if moved:
                    break
            if not moved or clique.bit_count() > best.bit_count():
                break
        if clique.bit_count() > best.bit_count():
            best = clique
    return [v for v in range(n) if best >> v & 1]


def optimal(data: dict, time_limit: float, hint: list[int]) -> tuple[list[int], bool]:
    from ortools.sat.python import cp_model

    n, masks = data["n"], neighbour_masks(data)
    model = cp_model.CpModel()
    x = [model.NewBoolVar("") for _ in range(n)]
    for u in range(n):
        for v in range(u + 1, n):
            if not masks[u] >> v & 1:
                model.AddBoolOr([x[u].Not(), x[v].Not()])
    model.Maximize(sum(x))
    cpsat.hint_subset(model, x, hint)
    solver, proven = cpsat.solve(model, time_limit)
    return cpsat.selected(solver, x), proven


def random(data: dict, rng: np.random.Generator) -> list[int]:
    """Random vertices, as many as the planted-size range suggests: usually not a clique."""
    k = max(2, data["n"] // 3)
    return sorted(int(v) for v in rng.choice(data["n"], size=k, replace=False))


def trivial(data: dict) -> list[int]:
    """A single vertex: a clique in every graph, the floor a non-solver reaches."""
    return [0]
