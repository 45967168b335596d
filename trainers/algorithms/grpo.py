"""GRPO: TRL's GRPOTrainer as it is (group-normalised advantages, clipped surrogate,
optional KL), with mmnp's metrics. The baseline every other algorithm extends."""

from __future__ import annotations

from dataclasses import dataclass

from trl import GRPOConfig

from mmnp.trainers.algorithms import register_algorithm
from mmnp.trainers.base import MMNPTrainer


@dataclass
class GRPOAlgoConfig(GRPOConfig):
    """GRPO adds no settings to TRL's."""


@register_algorithm("grpo")
class MMNPGRPOTrainer(MMNPTrainer):
    config_class = GRPOAlgoConfig
