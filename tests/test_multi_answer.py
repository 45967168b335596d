"""GRPO concentrates, DMPO keeps the Boltzmann shape: the multi-answer toy (tests/multi_answer.py,
two equally best answers) through the registered trainers, same start, seed, steps and lr.

Why lambda = 3000 and not the paper's 0.5: L_DM is an MSE between two softmaxes over the G = 8
completions of a group, so its gradient per completion is O(1/G^2) of GRPO's (advantages of
order 1), and it vanishes with q_i as an answer dies out while GRPO's push does not. At
lambda 0.5 and 100 DMPO loses C and D here, at 1000 most of D (benchmarks/multi_answer.py
prints the sweep; docs/study_cpu.md has the figures); 3000 holds the shape. Alpha is the
default 1."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch", reason="training needs the train extra")
pytest.importorskip("trl", reason="training needs the train extra")

from multi_answer import START, boltzmann, kl, start_model, train  # noqa: E402

ALPHA = 1.0
LAMBDA = 3000.0


def _split_entropy(q) -> float:
    """Entropy (nats) of the choice between the two equally rewarded answers A and B."""
    a = float(q[0] / (q[0] + q[1]))
    return -(a * math.log(a) + (1 - a) * math.log(1 - a))


def test_grpo_concentrates_and_dmpo_keeps_the_boltzmann_shape(tiny_text, tmp_path):
    start = start_model(tiny_text, tmp_path / "start")
    target = boltzmann(ALPHA)
    grpo, grpo_mass = train("grpo", start, tmp_path / "grpo", seed=0)
    dmpo, dmpo_mass = train("dmpo", start, tmp_path / "dmpo", seed=0, dmpo_lambda=LAMBDA, dmpo_alpha=ALPHA)
    assert grpo_mass > 0.99 and dmpo_mass > 0.99, "the policies must answer with the letters"
    start_split = _split_entropy(torch.tensor(START))

    # GRPO: the lower-reward answers die out and the answer it favoured at the start takes over
    assert grpo[2] + grpo[3] < 0.02, grpo
    assert grpo[0] > 0.75, grpo
    assert _split_entropy(grpo) < start_split, (grpo, START)
    assert kl(grpo, target) > 0.4, grpo

    # DMPO: at softmax(r / alpha), with A and B equal, from the same lopsided start
    assert kl(dmpo, target) < 0.05, (dmpo, target)
    assert kl(dmpo, target) < kl(grpo, target) / 10
    assert abs(float(dmpo[0] - dmpo[1])) < 0.05, dmpo
    assert _split_entropy(dmpo) > 0.99 * math.log(2), dmpo
