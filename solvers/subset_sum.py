"""Subset sum: exact DP over sums keeping the most numbers per sum (NP-Bench's reference)
where its table fits, else an exact meet-in-the-middle search over the subsets of each half
(few numbers, large values), else an exchange search; CP-SAT exact."""

from __future__ import annotations

import numpy as np

from mmnp.solvers import cpsat


DP_CELLS = 20_000_000  # the DP's n x (target + 1) choice table, one byte a cell
MITM_MAX = 40  # meet in the middle lists 2^(n/2) subset sums per half: 2^20 at most
RESTARTS = 200  # random refills tried by the large-instance search


def heuristic(data: dict) -> list[int]:
    """The exact DP when its table fits in DP_CELLS, else the exact `meet_in_the_middle` for
    up to MITM_MAX numbers, else `exchange_search` (all bounded in memory)."""
    if len(data["numbers"]) * (data["target"] + 1) <= DP_CELLS:
        return dp(data)
    if len(data["numbers"]) <= MITM_MAX:
        return meet_in_the_middle(data)
    return exchange_search(data)


def _subset_sums(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sum and size of every subset of `values`; entry i is the subset whose bit j is set
    when values[j] is in it."""
    sums, sizes = np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int8)
    for x in values:
        sums, sizes = np.concatenate([sums, sums + x]), np.concatenate([sizes, sizes + 1])
    return sums, sizes


def meet_in_the_middle(data: dict) -> list[int]:
    """Exact (Horowitz-Sahni): every subset sum of each half; for each sum of the first half,
    the largest subset of the second with the rest of the target. O(2^(n/2) n) time and memory,
    whatever the numbers' size."""
    v = np.asarray(data["numbers"], dtype=np.int64)
    target, half = int(data["target"]), len(v) // 2
    left_sums, left_sizes = _subset_sums(v[:half])
    right_sums, right_sizes = _subset_sums(v[half:])
    # per distinct right-half sum, its largest subset (sorted by sum, then size descending)
    order = np.lexsort((-right_sizes, right_sums))
    right_sums, right_sizes, right_ids = right_sums[order], right_sizes[order], order
    first = np.flatnonzero(np.r_[True, right_sums[1:] != right_sums[:-1]])
    right_sums, right_sizes, right_ids = right_sums[first], right_sizes[first], right_ids[first]
    need = target - left_sums
    at = np.minimum(np.searchsorted(right_sums, need), len(right_sums) - 1)
    hit = right_sums[at] == need
    if not hit.any():
        raise RuntimeError(f"subset_sum: no subset of the {len(v)} numbers sums to {target}")
    total = np.where(hit, left_sizes.astype(np.int64) + right_sizes[at], -1)
    best = int(np.argmax(total))
    mask_left, mask_right = best, int(right_ids[at[best]])
    return [j for j in range(half) if mask_left >> j & 1] + [half + j for j in range(len(v) - half) if mask_right >> j & 1]


def exchange_search(data: dict) -> list[int]:
    """Greedy fills (smallest numbers first, then random orders) closed to the exact target by
    one exchange of up to two numbers in for up to two out, found by hashing pair sums.
    O(n^2) per restart; raises ValueError when no restart closes the gap (CP-SAT is slower still there)."""
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
    # a ValueError: generation reports it as parameters it cannot serve (one line), not a crash
    raise ValueError(f"subset_sum: the heuristic found no subset summing to {target} among {len(v)} numbers (the "
                     f"exact DP would need {len(v) * (target + 1)} cells, over {DP_CELLS}, and the exact meet in "
                     f"the middle takes at most {MITM_MAX} numbers): use fewer or smaller numbers")


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
    solver, proven = cpsat.solve(model, time_limit)  # the hint stays out (mmnp.solvers.cpsat)
    if not proven and cpsat.settles(solver, len(hint), minimize=False):
        return hint, True
    return cpsat.selected(solver, x), proven


def random(data: dict, rng: np.random.Generator) -> list[int]:
    """Each number taken with probability 1/2: rarely hits the target."""
    return [i for i in range(len(data["numbers"])) if rng.random() < 0.5]


def trivial(data: dict) -> list[int]:
    """The fewest numbers that hit the target, the least any feasible answer earns: hitting the
    target exactly already takes a search, so the floor is its least rewarded answer. Exact
    meet in the middle (each half's subset sums; per sum its smallest subset); beyond 40
    numbers (2^20 sums a half), the heuristic's answer."""
    v = np.asarray(data["numbers"], dtype=np.int64)
    if len(v) > 40:
        return heuristic(data)
    half = len(v) // 2

    def sums(part: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        total, size = np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64)
        for x in part:
            total, size = np.concatenate([total, total + x]), np.concatenate([size, size + 1])
        return total, size

    left, left_size = sums(v[:half])
    right, right_size = sums(v[half:])
    order = np.lexsort((right_size, right))  # by sum, the smallest subset first
    keep = order[np.r_[True, right[order][1:] != right[order][:-1]]]
    at = np.minimum(np.searchsorted(right[keep], data["target"] - left), len(keep) - 1)
    hit = right[keep][at] == data["target"] - left
    if not hit.any():
        return []
    count = np.where(hit, left_size + right_size[keep][at], len(v) + 1)
    i = int(np.argmin(count))
    mask_left, mask_right = i, int(keep[at[i]])
    return [j for j in range(half) if mask_left >> j & 1] + [half + j for j in range(len(v) - half) if mask_right >> j & 1]
