"""DMPO: GRPO + lambda * L_DM, the group-level forward-KL surrogate (MSE between the
Boltzmann target softmax(r/alpha) and the softmax of length-normalised log-likelihoods).

L_DM couples the G completions of a prompt, but TRL shuffles a generation batch and
splits it across micro-batches and processes. So `on_scored` computes, while each group is
whole, dL_DM/dphi_j for every completion (closed form), and each micro-batch adds the
linear term sum_j coef_j * phi_j(theta): the summed gradient is exactly that of L_DM,
averaged over the groups of the generation batch. This holds when a generation batch is
one optimisation step (TRL's default `steps_per_generation = gradient_accumulation_steps`)
and `num_iterations = 1`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trl import GRPOConfig

from mmnp.trainers.algorithms import dmpo_loss, dmpo_phi_gradient, length_normalised
from mmnp.trainers.grpo import MMNPGRPOTrainer


@dataclass
class DMPOConfig(GRPOConfig):
    dmpo_lambda: float = field(default=0.5, metadata={"help": "Weight of L_DM (the paper: robust in 0.3-0.7)."})
    dmpo_alpha: float = field(default=1.0, metadata={"help": "Boltzmann temperature (the paper: 0.8-1.2)."})


class DMPOTrainer(MMNPGRPOTrainer):
    config_class = DMPOConfig

    def on_scored(self, batch: dict) -> dict:
        old = batch.get("old_per_token_logps")
        if old is None:  # on-policy: the current policy's log-probs are the old ones
            old = batch["old_per_token_logps"] = self.no_grad_logps(self.model, batch)
        local = old.size(0)
        phi = self.accelerator.gather(length_normalised(old, self.completion_mask(batch)))
        g = self.group_size
        rewards = self._rewards.to(phi.device).view(-1, g)
        coef = dmpo_phi_gradient(phi.view(-1, g), rewards, self.args.dmpo_alpha).flatten()
        # summed over every micro-batch and process (DDP averages gradients): mean over groups
        coef = coef * self.accelerator.num_processes / rewards.size(0)
        batch["dmpo_coef"] = self.local_slice(coef, local)
        self.log_metric("dmpo/l_dm", dmpo_loss(phi.view(-1, g), rewards, self.args.dmpo_alpha).item())
        return batch

    def extend_loss(self, loss, inputs, logps):
        phi = length_normalised(logps, self.completion_mask(inputs))
        return loss + self.args.dmpo_lambda * (inputs["dmpo_coef"] * phi).sum()
