"""Vertex cover: complement of an independent set grown greedily and improved by
(1,2)-swaps (Andrade-Resende-Werneck), then NuMVC-style edge-weighting local search;
CP-SAT exact."""

from __future__ import annotations

import numpy as np

from mmnp.generators.graphs import neighbour_masks
from mmnp.solvers import cpsat

STEPS = 4000  # swaps of the local search, fewer on large graphs
WORK = 4_000_000  # edge visits the local search may make (bounds its time on large graphs)
PATIENCE = 1500  # swaps without a smaller cover before the search stops (at most 1 per vertex)


def independent_set(masks: list[int]) -> int:
    """A maximal independent set (as a bit mask) improved by (1,2)-swaps until none applies."""
    n = len(masks)
    free = (1 << n) - 1
    chosen = 0
    while free:  # greedy: the free vertex with fewest free neighbours
        v = min((u for u in range(n) if free >> u & 1), key=lambda u: ((masks[u] & free).bit_count(), u))
        chosen |= 1 << v
        free &= ~(masks[v] | 1 << v)
    improved = True
    while improved:
        improved = False
        for v in range(n):
            if not chosen >> v & 1:
                continue
            # outside vertices whose only chosen neighbour is v
            tight = [u for u in range(n) if masks[v] >> u & 1 and not chosen >> u & 1
                     and (masks[u] & chosen) == 1 << v]
            pair = next(((a, b) for i, a in enumerate(tight) for b in tight[i + 1:] if not masks[a] >> b & 1), None)
            if pair is None:
                continue
            chosen = (chosen & ~(1 << v)) | 1 << pair[0] | 1 << pair[1]
            for u in range(n):  # re-maximise
                if not chosen >> u & 1 and not masks[u] & chosen:
                    chosen |= 1 << u
            improved = True
    return chosen


def heuristic(data: dict) -> list[int]:
    n = data["n"]
    chosen = independent_set(neighbour_masks(data))
    cover = np.array([not chosen >> v & 1 for v in range(n)], dtype=bool)
    edges = np.asarray(data["edges"], dtype=np.int64).reshape(-1, 2)
    if len(edges):
        cover = local_search(n, edges, cover, min(STEPS, WORK // (len(edges) + n)))
    return [int(v) for v in np.flatnonzero(cover)]


def local_search(n: int, edges: np.ndarray, cover: np.ndarray, steps: int) -> np.ndarray:
    """NuMVC (Cai et al. 2013), simplified: on each cover found, drop the vertex whose removal
    uncovers the least edge weight; else swap the cover vertex with the best score out and an
    endpoint of a random uncovered edge in (configuration checking: a vertex may re-enter only
    after a neighbour changed), and add weight to the edges left uncovered."""
    u, v = edges[:, 0], edges[:, 1]
    rng = np.random.default_rng(0)
    weight = np.ones(len(edges), dtype=np.int64)
    changed = np.ones(n, dtype=bool)  # configuration checking
    age = np.zeros(n, dtype=np.int64)
    cover = cover.copy()
    best = cover.copy()
    since = 0
    patience = min(PATIENCE, n)

    def scores() -> tuple[np.ndarray, np.ndarray]:
        hits = cover[u].astype(np.int64) + cover[v]
        gain = np.bincount(u, weight * (hits == 0), n) + np.bincount(v, weight * (hits == 0), n)
        loss = np.bincount(u, weight * ((hits == 1) & cover[u]), n) + np.bincount(v, weight * ((hits == 1) & cover[v]), n)
        return gain - loss, hits

    incident = [np.flatnonzero((u == x) | (v == x)) for x in range(n)]
    neighbours = [np.concatenate([v[u == x], u[v == x]]) for x in range(n)]

    def outside_score(x: int) -> int:
        """`scores()[0][x]` for a vertex outside the cover: the weight of its uncovered edges."""
        at = incident[x]
        return int(weight[at][~(cover[u[at]] | cover[v[at]])].sum())

    def flip(x: int, step: int) -> None:
        cover[x] = not cover[x]
        age[x] = step
        changed[neighbours[x]] = True

    for step in range(1, steps + 1):
        score, hits = scores()
        since += 1
        if (hits > 0).all():
            best, since = cover.copy(), 0
            inside = np.flatnonzero(cover)
            flip(int(inside[np.argmax(score[inside])]), step)
            continue
        if since > patience:
            break
        inside = np.flatnonzero(cover)
        key = score[inside] * (steps + 1) - age[inside]  # highest score, then the oldest
        out = int(inside[np.argmax(key)])
        flip(out, step)
        changed[out] = False
        a, b = edges[rng.choice(np.flatnonzero(hits == 0))]  # both outside the cover
        pick = [x for x in (int(a), int(b)) if changed[x]] or [int(a), int(b)]
        flip(max(pick, key=lambda x: (outside_score(x), -age[x])), step)
        weight[~(cover[u] | cover[v])] += 1
    return best


def optimal(data: dict, time_limit: float, hint: list[int]) -> tuple[list[int], bool]:
    from ortools.sat.python import cp_model

    n = data["n"]
    model = cp_model.CpModel()
    x = [model.NewBoolVar("") for _ in range(n)]
    for u, v in data["edges"]:
        model.AddBoolOr([x[u], x[v]])
    model.Minimize(sum(x))
    cpsat.hint_subset(model, x, hint)
    solver, proven = cpsat.solve(model, time_limit)
    return cpsat.selected(solver, x), proven


def random(data: dict, rng: np.random.Generator) -> list[int]:
    """Each vertex kept with probability 1/2: usually leaves edges uncovered."""
    return [v for v in range(data["n"]) if rng.random() < 0.5]


def trivial(data: dict) -> list[int]:
    """Every vertex: covers every edge of every graph, the floor a non-solver reaches."""
    return list(range(data["n"]))
