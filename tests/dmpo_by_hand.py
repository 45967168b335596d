"""DMPO's L_DM written out from its definitions, one group and one fragment at a time, for the
tests to hold the trainer's closed-form coefficients against (tests/test_algorithms.py,
tests/test_trainer_behaviour.py)."""

from __future__ import annotations

import torch


def l_dm_by_hand(phi: torch.Tensor, rewards: torch.Tensor, advantages: torch.Tensor, reading) -> torch.Tensor:
    """L_DM of (groups, G) inputs under `reading` (a `mmnp.trainers.algorithms.dmpo.Reading`):
    the paper's mean over groups of (1/G) sum (p - q)^2, or the authors' sum over fragments
    of consecutive members of the mean (p - q)^2 over the fragment; flat units skipped when
    the reading says so."""
    total = phi.new_zeros(())
    for g in range(phi.size(0)):
        members = list(range(phi.size(1)))
        size = phi.size(1) if reading.grouping == "exact" else reading.fragment_size
        for part in [members[k : k + size] for k in range(0, len(members), size)]:
            a = advantages[g, part]
            if reading.flat == "skip" and float(a.max() - a.min()) <= 1e-5:
                continue
            logits = rewards[g, part] / reading.alpha if reading.target == "reward" else a / reading.tau
            p, q = torch.softmax(logits, 0), torch.softmax(phi[g, part], 0)
            total = total + ((p - q) ** 2).sum() / len(part)
    if reading.grouping == "exact":  # the paper's: a mean over the groups (a skipped one counts 0)
        return total / phi.size(0)
    return total  # the authors': the micro-batch losses summed
