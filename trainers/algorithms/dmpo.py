"""DMPO: GRPO + lambda * L_DM, the group-level forward-KL surrogate (MSE between the
Boltzmann target softmax(r/alpha) and the softmax of length-normalised log-likelihoods).

L_DM couples the G completions of a prompt, but TRL shuffles a generation batch and
splits it across micro-batches and processes. So `on_scored` computes, while each group is
whole, dL_DM/dphi_j for every completion (closed form), and each micro-batch adds the
linear term sum_j coef_j * phi_j(theta): the summed gradient is exactly that of L_DM,
averaged over the groups of the generation batch. This holds when a generation batch is
one optimisation step of fresh samples (`num_iterations = 1`, `steps_per_generation =
gradient_accumulation_steps`, TRL's defaults); other settings are refused unless
`allow_inexact` is set (`group_coupled`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from trl import GRPOConfig

from mmnp.trainers.algorithms import register_algorithm
from mmnp.trainers.base import GroupScores, MMNPTrainer, length_normalised


def boltzmann_target(rewards: torch.Tensor, alpha: float) -> torch.Tensor:
    """p_i = softmax_i(r_i / alpha) over each group: the target, never differentiated."""
    return torch.softmax(rewards.detach() / alpha, dim=-1)


def dmpo_loss(phi: torch.Tensor, rewards: torch.Tensor, alpha: float) -> torch.Tensor:
    """L_DM = (1/G) sum_i (p_i - q_i)^2 with q = softmax(phi) per group; mean over groups."""
    p = boltzmann_target(rewards, alpha)
    q = torch.softmax(phi, dim=-1)
    return ((p - q) ** 2).mean(dim=-1).mean()


def dmpo_phi_gradient(phi: torch.Tensor, rewards: torch.Tensor, alpha: float) -> torch.Tensor:
    """dL_DM/dphi_j of one group's loss, in closed form: (2/G) q_j (d_j - sum_i d_i q_i) with
    d = q - p. Computed while a group is whole, it lets each completion's term be the
    linear `coef_j * phi_j` wherever TRL puts it, with the exact group gradient."""
    p = boltzmann_target(rewards, alpha)
    q = torch.softmax(phi.detach(), dim=-1)
    d = q - p
    return 2.0 / phi.size(-1) * q * (d - (d * q).sum(dim=-1, keepdim=True))


@dataclass
class DMPOConfig(GRPOConfig):
    dmpo_lambda: float = field(default=0.5, metadata={"help": "DMPO: weight of L_DM (the paper: robust in 0.3-0.7)."})
    dmpo_alpha: float = field(default=1.0, metadata={"help": "DMPO: Boltzmann temperature (the paper: 0.8-1.2)."})
    allow_inexact: bool = field(default=False, metadata={
        "help": "DMPO: train with num_iterations > 1 or steps_per_generation != gradient_accumulation_steps, where "
                "the group term's gradient is approximate (warns instead of refusing)."})


@register_algorithm("dmpo")
class DMPOTrainer(MMNPTrainer):
    config_class = DMPOConfig
    display_metrics = ("dmpo/l_dm",)
    group_coupled = True

    def on_scored(self, batch: dict, scores: GroupScores) -> dict:
        old = batch.get("old_per_token_logps")
        if old is None:  # on-policy: the current policy's log-probs are the old ones
            old = batch["old_per_token_logps"] = self.no_grad_logps(self.model, batch)
        local = old.size(0)
        phi = self.accelerator.gather(length_normalised(old, self.completion_mask(batch)))
        rewards = scores.rewards.to(phi.device)
        g = rewards.size(1)
        coef = dmpo_phi_gradient(phi.view(-1, g), rewards, self.args.dmpo_alpha).flatten()
        # summed over every micro-batch and process (DDP averages gradients): mean over groups
        coef = coef * self.accelerator.num_processes / rewards.size(0)
        start = self.accelerator.process_index * local
        batch["dmpo_coef"] = coef[start : start + local]
        self.log_metric("dmpo/l_dm", dmpo_loss(phi.view(-1, g), rewards, self.args.dmpo_alpha).item())
        return batch

    def add_to_loss(self, inputs, logps):
        phi = length_normalised(logps, self.completion_mask(inputs))
        return self.args.dmpo_lambda * (inputs["dmpo_coef"] * phi).sum()
