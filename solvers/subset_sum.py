"""Subset sum: exact DP over sums keeping the most numbers per sum (NP-Bench's reference)
where its table fits, else a short CP-SAT run; CP-SAT exact."""

from __future__ import annotations

import numpy as np

from mmnp.solvers import cpsat


DP_CELLS = 20_000_000  # the DP's n x (target + 1) choice table, one byte a cell
RESTARTS = 200  # random refills tried by the large-instance search


def heuristic(data: dict) -> list[int]:
    """The exact DP when its table fits in DP_CELLS, else `exchange_search` (bounded memory)."""
    if len(data["numbers"]) * (data["target"] + 1) > DP_CELLS:
        return exchange_search(data)
    return dp(data)


def exchange_search(data: dict) -> list[int]:
    """Greedy fills (smallest numbers first, then random orders) closed to the exact target by
    one exchange of up to two numbers in for up to two out, found by hashing pair sums.
    O(n^2) per restart; raises when no restart closes the gap (CP-SAT is slower still there)."""
    v = np.asarray(data["numbers"], dtype=np.int64)
    target = int(data["target"])
    rng = np.random.default_rng(0)
    order = np.argsort(v, kind="stable")
    for _ in range(RESTARTS):
        chosen = np.zeros(len(v), dtype=bool)
        total = 0
        for i in order:
            if total + v[i] <= target:
                chosen[i] = True
                total += int(v[i])
        fixed = _close_gap(v, chosen, target - total)
        if fixed is not None:
            return sorted(int(i) for i in np.flatnonzero(fixed))
        order = rng.permutation(len(v))
    raise RuntimeError(f"subset_sum: no subset summing to {target} found among {len(v)} numbers "
                       f"(the exact DP needs {len(v) * (target + 1)} cells, over DP_CELLS)")


def _close_gap(v: np.ndarray, chosen: np.ndarray, gap: int) -> np.ndarray | None:
    """`chosen` with up to two numbers added and up to two removed so the sum grows by `gap`."""
    if gap == 0:
        return chosen
    inside, outside = np.flatnonzero(chosen), np.flatnonzero(~chosen)

    def groups(idx: np.ndarray) -> dict[int, tuple[int, ...]]:
        """Sum -> one group of at most two of `idx` with that sum (the empty group too)."""
        out: dict[int, tuple[int, ...]] = {0: ()}
        for a in idx[:400]:
            out.setdefault(int(v[a]), (int(a),))
        small = idx[:400]
        for k, a in enumerate(small):
            for b in small[k + 1:]:
                out.setdefault(int(v[a] + v[b]), (int(a), int(b)))
        return out

    added, removed = groups(outside), groups(inside)
    for total_out, out_group in removed.items():
        in_group = added.get(total_out + gap)
        if in_group is not None:
            fixed = chosen.copy()
            fixed[list(in_group)] = True
            fixed[list(out_group)] = False
            return fixed
    return None


def dp(data: dict) -> list[int]:
    """most[s] = the largest count of numbers summing to s; vectorised over s."""
    numbers, target = data["numbers"], data["target"]
    most = np.full(target + 1, -1, dtype=np.int64)
    most[0] = 0
    take = np.zeros((len(numbers), target + 1), dtype=bool)
    for i, x in enumerate(numbers):
        if x > target:
            continue
        candidate = np.where(most[: target + 1 - x] >= 0, most[: target + 1 - x] + 1, -1)
        improves = candidate > most[x:]
        take[i, x:] = improves
        most[x:] = np.where(improves, candidate, most[x:])
    chosen, s = [], target
    for i in range(len(numbers) - 1, -1, -1):
        if take[i, s]:
            chosen.append(i)
            s -= numbers[i]
    return sorted(chosen)


def optimal(data: dict, time_limit: float, hint: list[int]) -> tuple[list[int], bool]:
    from ortools.sat.python import cp_model

    numbers = data["numbers"]
    model = cp_model.CpModel()
    x = [model.NewBoolVar("") for _ in numbers]
    model.Add(sum(v * xi for v, xi in zip(numbers, x)) == data["target"])
    model.Maximize(sum(x))
    cpsat.hint_subset(model, x, hint)
    solver, proven = cpsat.solve(model, time_limit)
    return cpsat.selected(solver, x), proven


def random(data: dict, rng: np.random.Generator) -> list[int]:
    """Each number taken with probability 1/2: rarely hits the target."""
    return [i for i in range(len(data["numbers"])) if rng.random() < 0.5]
