"""The multi-answer toy (tests/multi_answer.py: two equally best answers A and B, from a start
that favours A 0.55 to 0.15) through the registered trainers, same start, seeds, steps and lr.

- GRPO concentrates: the answer it favoured at the start takes over A + B.
- DMPO as its authors ran it (the default recipe: advantage target, fragments of 4 summed) at
  the paper's lambda 0.3-0.5 keeps A and B at an even split, in every seed.
- DMPO read exactly (`--dmpo-recipe paper`) needs a far larger lambda: its push per
  completion is O(1/G^2) of GRPO's (at 0.5 the A share ends near 0.64-0.85, see the
  benchmark). At lambda 3000 it lands on the Boltzmann target
  softmax(r / alpha) itself (C and D kept), which the authors' near one-hot target does not
  aim for.
- DMPO at lambda 0 ends exactly where GRPO ends (the same numerical path).
benchmarks/multi_answer.py prints the sweeps these thresholds come from (docs/multi_answer.md).
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch", reason="training needs the train extra")
pytest.importorskip("trl", reason="training needs the train extra")

from multi_answer import START, a_share, boltzmann, kl, start_model, train  # noqa: E402

SEEDS = (0, 1, 2)


@pytest.fixture(scope="module")
def start(tiny_text, tmp_path_factory):
    return start_model(tiny_text, tmp_path_factory.mktemp("multi") / "start")


@pytest.fixture(scope="module")
def grpo(start, tmp_path_factory):
    out = tmp_path_factory.mktemp("grpo")
    return {seed: train("grpo", start, out, seed=seed) for seed in SEEDS}


def _split_entropy(q) -> float:
    """Entropy (nats) of the choice between the two equally rewarded answers A and B."""
    a = a_share(q)
    return -(a * math.log(a) + (1 - a) * math.log(1 - a))


def test_grpo_concentrates_on_the_answer_it_favoured(grpo):
    for seed, (q, mass) in grpo.items():
        assert mass > 0.99, "the policy must answer with the letters"
        assert a_share(q) > 0.75, (seed, q)  # from 0.79 at the start: never towards an even split
        assert q[2] + q[3] < 0.02, (seed, q)


@pytest.mark.parametrize("lam", [0.3, 0.5])
def test_dmpo_as_the_authors_ran_it_keeps_an_even_split_at_the_papers_lambda(lam, start, grpo, tmp_path):
    for seed in SEEDS:
        q, mass = train("dmpo", start, tmp_path, seed=seed, dmpo_lambda=lam)  # the default recipe: authors
        assert mass > 0.99
        assert abs(a_share(q) - 0.5) < 0.1, (lam, seed, q)
        assert abs(a_share(q) - 0.5) < abs(a_share(grpo[seed][0]) - 0.5) / 3, (lam, seed, q, grpo[seed][0])


def test_dmpo_read_exactly_reaches_the_boltzmann_target_only_at_a_huge_lambda(start, grpo, tmp_path):
    alpha = 1.0
    target = boltzmann(alpha)
    dmpo, mass = train("dmpo", start, tmp_path, seed=0, dmpo_recipe="paper", dmpo_lambda=3000.0, dmpo_alpha=alpha)
    grpo_q = grpo[0][0]
    assert mass > 0.99
    assert kl(dmpo, target) < 0.05, (dmpo, target)
    assert kl(dmpo, target) < kl(grpo_q, target) / 10
    assert abs(float(dmpo[0] - dmpo[1])) < 0.05, dmpo
    assert _split_entropy(dmpo) > 0.99 * math.log(2) > _split_entropy(torch.tensor(START)), dmpo


def test_dmpo_at_lambda_0_ends_where_grpo_ends(start, grpo, tmp_path):
    q, _ = train("dmpo", start, tmp_path, seed=0, dmpo_lambda=0.0)
    assert torch.equal(q, grpo[0][0])
