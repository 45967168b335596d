"""The min bisection heuristic's KL pass looks only at vertices within 2 of their half's best
balance and updates only the swapped vertices' neighbours: it must make the same swaps as
the textbook pass over the full pair-gain matrix (first best pair in (a, b) order)."""

from __future__ import annotations

import numpy as np
import pytest

from mmnp.solvers import min_bisection


def textbook_kernighan_lin(w: np.ndarray, side: np.ndarray) -> np.ndarray:
    """Kernighan & Lin (1970) with unit weights: every pass recomputes the whole gain matrix."""
    n = len(w)
    while True:
        d = np.array([sum(w[v, u] if side[u] != side[v] else -w[v, u] for u in range(n)) for v in range(n)])
        locked = np.zeros(n, dtype=bool)
        gains, swaps = [], []
        for _ in range(min(side.sum(), (~side).sum())):
            best, pair = None, None
            for a in range(n):
                for b in range(n):
                    if side[a] and not side[b] and not locked[a] and not locked[b]:
                        gain = d[a] + d[b] - 2 * w[a, b]
                        if best is None or gain > best:
                            best, pair = gain, (a, b)
            a, b = pair
            gains.append(best)
            swaps.append(pair)
            locked[a] = locked[b] = True
            for x in range(n):  # x's balance after a joins B and b joins A
                sign = 1 if side[x] else -1
                d[x] += sign * 2 * (w[a, x] - w[b, x])
        total = np.cumsum(gains)
        if not len(total) or total.max() <= 0:
            return side
        for a, b in swaps[: int(np.argmax(total)) + 1]:
            side[a], side[b] = False, True


@pytest.mark.parametrize("seed", range(12))
def test_pass_makes_the_textbook_swaps(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(6, 26))
    w = np.triu((rng.random((n, n)) < rng.uniform(0.1, 0.6)).astype(np.int64), 1)
    w = w + w.T
    for _ in range(3):
        side = np.zeros(n, dtype=bool)
        side[rng.permutation(n)[: n // 2]] = True
        expected = textbook_kernighan_lin(w, side.copy())
        got = min_bisection.kernighan_lin(w, side.copy())
        assert got.tolist() == expected.tolist()
        cut = int(w[got][:, ~got].sum())
        assert cut <= int(w[side][:, ~side].sum())


def test_pass_reaches_a_swap_local_optimum() -> None:
    """After the passes no single swap lowers the cut (what a no-op pass would miss)."""
    rng = np.random.default_rng(7)
    n = 30
    w = np.triu((rng.random((n, n)) < 0.25).astype(np.int64), 1)
    w = w + w.T
    side = np.zeros(n, dtype=bool)
    side[rng.permutation(n)[: n // 2]] = True
    start_cut = int(w[side][:, ~side].sum())
    side = min_bisection.kernighan_lin(w, side)
    cut = int(w[side][:, ~side].sum())
    assert cut < start_cut
    for a in np.flatnonzero(side):
        for b in np.flatnonzero(~side):
            swapped = side.copy()
            swapped[a], swapped[b] = False, True
            assert int(w[swapped][:, ~swapped].sum()) >= cut
