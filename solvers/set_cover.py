"""Set cover: multi-start greedy (most new elements), redundancy removal and 2-for-1
replacements (NP-Bench: greedy + redundancy removal); CP-SAT exact."""

from __future__ import annotations

import numpy as np

from mmnp.solvers import cpsat


def _masks(data: dict) -> list[int]:
    return [sum(1 << e for e in s) for s in data["subsets"]]


def _prune(chosen: list[int], masks: list[int], full: int) -> list[int]:
    """Drop subsets the others already cover, largest index first."""
    for s in sorted(chosen, reverse=True):
        rest = 0
        for t in chosen:
            if t != s:
                rest |= masks[t]
        if rest == full:
            chosen = [t for t in chosen if t != s]
    return chosen


def _greedy(first: int, masks: list[int], full: int) -> list[int]:
    chosen, covered = [first], masks[first]
    while covered != full:
        s = max(range(len(masks)), key=lambda i: ((masks[i] & ~covered).bit_count(), -i))
        chosen.append(s)
        covered |= masks[s]
    return _prune(chosen, masks, full)


def _two_for_one(chosen: list[int], masks: list[int], full: int) -> list[int]:
    """Replace two chosen subsets by one outside subset while that still covers."""
    improved = True
    while improved:
        improved = False
        for i, a in enumerate(chosen):
            for b in chosen[i + 1 :]:
                rest = 0
                for t in chosen:
                    if t not in (a, b):
                        rest |= masks[t]
                need = full & ~rest
                swap = next((s for s in range(len(masks)) if s not in chosen and masks[s] & need == need), None)
                if swap is not None:
                    chosen = _prune([t for t in chosen if t not in (a, b)] + [swap], masks, full)
                    improved = True
                    break
            if improved:
                break
    return chosen


def heuristic(data: dict) -> list[int]:
    """Greedy started from each subset in turn (a cheap multi-start), each pruned and
    improved by 2-for-1 replacements; the smallest cover wins."""
    masks = _masks(data)
    full = sum(1 << e for e in range(1, data["universe"] + 1))
    best: list[int] | None = None
    for first in range(len(masks)):
        cover = _two_for_one(_greedy(first, masks, full), masks, full)
        if best is None or len(cover) < len(best):
            best = cover
    return sorted(best)


def optimal(data: dict, time_limit: float, hint: list[int]) -> tuple[list[int], bool]:
    from ortools.sat.python import cp_model

    subsets = data["subsets"]
    model = cp_model.CpModel()
    x = [model.NewBoolVar("") for _ in subsets]
    for e in range(1, data["universe"] + 1):
        model.AddBoolOr([x[i] for i, s in enumerate(subsets) if e in s])
    model.Minimize(sum(x))
    cpsat.hint_subset(model, x, hint)
    solver, proven = cpsat.solve(model, time_limit)
    return cpsat.selected(solver, x), proven


def random(data: dict, rng: np.random.Generator) -> list[int]:
    """Each subset taken with probability 1/3: often leaves elements uncovered."""
    return [i for i in range(len(data["subsets"])) if rng.random() < 1 / 3]
