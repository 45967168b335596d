"""ProGRPO: GRPO with the Advantage Re-weighting Mechanism. A correct answer's advantage
moves by alpha * (c(q) - c(o|q)), where c is the exponentiated mean of the lowest 20% of
token log-probabilities (of the prompt, of the answer): over-confident correct answers
gain less, under-explored ones more. The cost: one no-grad forward of the completions
(unless TRL already made one) and one of each distinct prompt."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from trl import GRPOConfig

from mmnp.trainers.algorithms import confidence, progrpo_advantages
from mmnp.trainers.grpo import MMNPGRPOTrainer


@dataclass
class ProGRPOConfig(GRPOConfig):
    progrpo_alpha: float = field(default=0.3, metadata={"help": "Re-weighting strength (the paper's ablation: 0.3)."})
    progrpo_fraction: float = field(default=0.2, metadata={"help": "Share of lowest-probability tokens in c(x)."})


class ProGRPOTrainer(MMNPGRPOTrainer):
    config_class = ProGRPOConfig

    def on_scored(self, batch: dict) -> dict:
        answer_logps = batch.get("old_per_token_logps")
        if answer_logps is None:
            answer_logps = batch["old_per_token_logps"] = self.no_grad_logps(self.model, batch)
        mask = self.completion_mask(batch)
        fraction = self.args.progrpo_fraction
        rows, inverse = self.unique_prompts(batch)  # c(q) once per distinct prompt, not G times
        prompt_conf = confidence(self.prompt_logps(self.model, batch, rows), batch["prompt_mask"][rows, 1:],
                                 fraction)[inverse]
        answer_conf = confidence(answer_logps, mask, fraction)
        local = mask.size(0)
        rewards = self.local_slice(self._rewards.to(mask.device), local)
        batch["advantages"] = progrpo_advantages(batch["advantages"], prompt_conf, answer_conf, rewards,
                                                 self.args.progrpo_alpha)
        correct = rewards > 0
        self.log_metric("progrpo/prompt_confidence", prompt_conf.mean().item())
        self.log_metric("progrpo/answer_confidence", answer_conf.mean().item())
        gap = (prompt_conf - answer_conf)[correct].mean() if correct.any() else torch.tensor(0.0)
        self.log_metric("progrpo/confidence_gap", gap.item())
        return batch
