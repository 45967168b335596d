"""Training plug-in packages for the tests, installed as pip leaves them (`plugin_site.write_distribution`):
an algorithm and a reward from outside mmnp, and a broken one of each."""

from __future__ import annotations

from pathlib import Path

from plugin_site import write_distribution

# GRPO plus a term that raises the mean token log-likelihood of every completion: the shape of
# a real algorithm file (a config with its own option, a hook, its own metric, its self_test).
TOY_ALGORITHM = '''
from dataclasses import dataclass, field

from trl import GRPOConfig

from mmnp.trainers.base import MMNPTrainer, SelfTest, length_normalised


@dataclass
class ToyConfig(GRPOConfig):
    toy_weight: float = field(default=0.5, metadata={"help": "Toy: weight of the likelihood term."})


class ToyTrainer(MMNPTrainer):
    config_class = ToyConfig
    display_metrics = ("toy/likelihood",)
    self_test = SelfTest(modalities=("text",), reward="beat")

    def add_to_loss(self, inputs, logps):
        phi = length_normalised(logps, self.completion_mask(inputs))
        self.log_metric("toy/likelihood", phi.mean().item())
        return -self.args.toy_weight * phi.mean()
'''

# A reward built on mmnp's verification: 1 when the answer is feasible and at least as good as
# the heuristic reference. `score_all` hands the verdicts to the trainer's SR/QR metrics.
BEAT_REWARD = '''
from mmnp.trainers.rewards import score_all


def beat_reward(prompts, completions, mmnp_instance, log_extra=None, **columns):
    """1 when the answer is feasible and at least as good as the heuristic reference, else 0."""
    return [float(v.feasible and ratio >= 1.0) for v, ratio in score_all(completions, mmnp_instance, log_extra)]


def not_a_reward(completion):
    return 1.0
'''

BROKEN = 'raise RuntimeError("this plug-in is broken on purpose")\n'


def toy_training_site(site: Path) -> Path:
    """A working distribution: the algorithm `toy`, the reward `beat`, and `lonely`, a function
    that is no reward (it takes one completion)."""
    return write_distribution(site, "mmnp-toy-training", "0.3", {"mmnp_toy_algorithm": TOY_ALGORITHM,
                                                                  "mmnp_toy_reward": BEAT_REWARD},
                              {"mmnp.algorithms": {"toy": "mmnp_toy_algorithm:ToyTrainer"},
                               "mmnp.rewards": {"beat": "mmnp_toy_reward:beat_reward",
                                                "lonely": "mmnp_toy_reward:not_a_reward"}})


def broken_training_site(site: Path) -> Path:
    """A distribution whose algorithm and reward modules raise on import."""
    return write_distribution(site, "mmnp-broken-training", "0.4", {"mmnp_broken_training": BROKEN},
                              {"mmnp.algorithms": {"shaky": "mmnp_broken_training:Trainer"},
                               "mmnp.rewards": {"shaky_reward": "mmnp_broken_training:reward"}})
