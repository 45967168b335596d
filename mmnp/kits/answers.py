"""Answer shapes a task's verifier and its answer overlay (the generator's `render`) read the
same way: a task kit, light enough for the verification hot path (no imports)."""

from __future__ import annotations


def as_mapping(solution: list) -> dict[int, int]:
    """A colouring answer (a colour per vertex, or [vertex, colour] pairs) as vertex -> colour;
    graph_coloring's verifier and its answer overlay read answers the same way."""
    if solution and isinstance(solution[0], list):
        return {v: c for v, c in solution}
    return dict(enumerate(solution))


def halves(solution: list) -> tuple[list[int], list[int] | None]:
    """A bisection answer (one half, or both) as (first half, second half or None);
    min_bisection's verifier and its answer overlay read answers the same way."""
    if len(solution) == 2 and all(isinstance(h, list) for h in solution):
        return solution[0], solution[1]
    return solution, None
