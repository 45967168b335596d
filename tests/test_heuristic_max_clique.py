"""The max-clique local search on cliques hidden the way Brockington and Culberson hide them
(the DIMACS brock family): the planted clique's vertices have fewer neighbours than the rest,
so a search drawn to frequent vertices settles on the random graph's own smaller cliques."""

import numpy as np

from mmnp.solvers import max_clique

N, DENSITY, HIDDEN, FEWER = 300, 0.75, 24, 30


def hidden_clique(seed: int) -> list[int]:
    """G(N, DENSITY) with a HIDDEN-clique whose vertices have FEWER neighbours than the average
    vertex (their edges to the rest are drawn sparser); the random part's largest cliques have
    22-23 vertices."""
    rng = np.random.default_rng(seed)
    planted = np.zeros(N, dtype=bool)
    planted[rng.choice(N, size=HIDDEN, replace=False)] = True
    outward = (DENSITY * (N - 1) - (HIDDEN - 1) - FEWER) / (N - HIDDEN)
    chance = np.where(planted[:, None] & planted[None, :], 1.0,
                      np.where(planted[:, None] | planted[None, :], outward, DENSITY))
    edges = np.triu(rng.random((N, N)) < chance, 1)
    edges |= edges.T
    return [int("".join("1" if b else "0" for b in row[::-1]), 2) for row in edges]


def is_clique(masks: list[int], vertices: list[int]) -> bool:
    return all(masks[u] >> v & 1 for u in vertices for v in vertices if u != v)


def test_the_local_search_finds_hidden_cliques_in_a_few_thousand_steps():
    """The run at penalty delay 16 (DLS-MC's setting for brock400) finds each planted clique
    within 30,000 steps in all; DLS-MC at a single small delay (the earlier heuristic: pd 2,
    random restarts) stops at 23 on each of these seeds, even given 200,000 steps."""
    for seed in (1, 2, 3):
        masks = hidden_clique(seed)
        found = max_clique.local_search(N, masks, [], 30_000, HIDDEN)
        assert len(found) == HIDDEN and is_clique(masks, found)
        assert max_clique.local_search(N, masks, [], 30_000, HIDDEN) == found  # deterministic


def test_the_local_search_stops_at_its_step_budget_or_patience(monkeypatch):
    """With a target no clique reaches, the search returns after `steps` moves in all runs
    together (each run stops at its first dead end past its share), or after `patience` moves
    without a larger clique, with the largest clique met."""
    masks = hidden_clique(1)
    last_step = {}
    runner = max_clique._dls_mc

    def counted(n, masks, start, delay, seed, target):
        for best, step in runner(n, masks, start, delay, seed, target):
            last_step[delay] = step
            yield best, step

    monkeypatch.setattr(max_clique, "_dls_mc", counted)
    found = max_clique.local_search(N, masks, [], 20_000, N)
    assert len(found) == HIDDEN and is_clique(masks, found)
    assert len(last_step) == len(max_clique.PENALTY_DELAYS)
    assert 20_000 <= sum(last_step.values()) <= 20_000 + 3 * N
    last_step.clear()
    found = max_clique.local_search(N, masks, [], 20_000, N, patience=1_000)
    assert is_clique(masks, found)
    assert 1_000 <= sum(last_step.values()) < 10_000
