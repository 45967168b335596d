"""ProGRPO: GRPO with the Advantage Re-weighting Mechanism. A correct answer's advantage
moves by alpha * (c(q) - c(o|q)), where c is the exponentiated mean of the lowest 20% of
token log-probabilities (of the prompt, of the answer): over-confident correct answers
gain less, under-explored ones more. The cost: one no-grad forward of the completions
(unless TRL already made one) and one of each distinct prompt. At alpha 0 it is GRPO, to
the bit: nothing it computes enters GRPO's loss except the shifted advantages."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from trl import GRPOConfig

from mmnp.errors import UsageError
from mmnp.trainers.algorithms import register_algorithm
from mmnp.trainers.base import GroupScores, MMNPTrainer


def confidence(token_logps: torch.Tensor, mask: torch.Tensor, fraction: float = 0.2) -> torch.Tensor:
    """c(x) = exp(mean of the lowest `fraction` of x's token log-probabilities), per row."""
    big = torch.finfo(token_logps.dtype).max
    lengths = mask.sum(-1)
    # ceil(n rho) in float64 less a hair: an n rho that is whole (50 x 0.3 = 15) must not round up
    # because 0.3 has no exact binary form (float32 gave 16 at 166 lengths up to 4096)
    k = (lengths.double() * fraction - 1e-9).ceil().clamp(min=1).long()
    ordered = torch.where(mask.bool(), token_logps, torch.full_like(token_logps, big)).sort(dim=-1).values
    take = torch.arange(token_logps.size(-1), device=token_logps.device)[None, :] < k[:, None]
    low_mean = (ordered * take).sum(-1) / k
    return torch.exp(torch.where(lengths > 0, low_mean, torch.zeros_like(low_mean)))


def scored_prompt_mask(prompt_mask: torch.Tensor) -> torch.Tensor:
    """Which of `prompt_logps`' columns (the log-probs of prompt tokens 1..P-1) enter c(q): a
    token whose previous token is real too. A left-padded prompt's first real token is
    predicted from a padding position, and the longest prompt's first token from nothing, so
    neither counts: c(q) of a prompt is the same alone or in any batch."""
    return prompt_mask[:, 1:] * prompt_mask[:, :-1]


def progrpo_advantages(advantages: torch.Tensor, prompt_confidence: torch.Tensor, answer_confidence: torch.Tensor,
                       rewards: torch.Tensor, alpha: float = 0.3) -> torch.Tensor:
    """A~_i = A_i + alpha * (c(q) - c(o_i|q)) for correct answers (reward > 0); a group
    with no correct answer, and every incorrect answer, keeps its plain advantage."""
    correct = rewards > 0
    shift = alpha * (prompt_confidence - answer_confidence)
    return torch.where(correct, advantages + shift, advantages)


@dataclass
class ProGRPOConfig(GRPOConfig):
    progrpo_alpha: float = field(default=0.3, metadata={"help": "ProGRPO: re-weighting strength (the paper: 0.3)."})
    progrpo_fraction: float = field(default=0.2, metadata={"help": "ProGRPO: share of lowest-probability tokens in c(x)."})

    def __post_init__(self):
        super().__post_init__()
        if not 0 < self.progrpo_fraction <= 1:
            raise UsageError(f"--progrpo-fraction {self.progrpo_fraction}: must be in (0, 1] (a share of the tokens)")
        if not math.isfinite(self.progrpo_alpha):
            raise UsageError(f"--progrpo-alpha {self.progrpo_alpha}: must be a finite number")


@register_algorithm("progrpo")
class ProGRPOTrainer(MMNPTrainer):
    config_class = ProGRPOConfig
    display_metrics = ("progrpo/confidence_gap",)

    def prompt_confidence(self, batch: dict, rows: torch.Tensor) -> torch.Tensor:
        """c(q) of the given rows' prompts, over the tokens that have a real previous token."""
        return confidence(self.prompt_logps(self.model, batch, rows), scored_prompt_mask(batch["prompt_mask"][rows]),
                          self.args.progrpo_fraction)

    def on_scored(self, batch: dict, scores: GroupScores) -> dict:
        answer_logps = batch.get("old_per_token_logps")  # TRL's own when it made them; never inserted here,
        if answer_logps is None:  # so GRPO's surrogate takes the same numerical path as plain GRPO's
            answer_logps = self.no_grad_logps(self.model, batch)
        mask = self.completion_mask(batch)
        fraction = self.args.progrpo_fraction
        rows, inverse = self.unique_prompts(batch)  # c(q) once per distinct prompt, not G times
        prompt_conf = self.prompt_confidence(batch, rows)[inverse]
        answer_conf = confidence(answer_logps, mask, fraction)
        rewards = scores.local.to(mask.device)
        batch["advantages"] = progrpo_advantages(batch["advantages"], prompt_conf, answer_conf, rewards,
                                                 self.args.progrpo_alpha)
        correct = rewards > 0
        self.log_metric("progrpo/prompt_confidence", prompt_conf.mean().item())
        self.log_metric("progrpo/answer_confidence", answer_conf.mean().item())
        gap = (prompt_conf - answer_conf)[correct].mean() if correct.any() else torch.tensor(0.0)
        self.log_metric("progrpo/confidence_gap", gap.item())
        return batch
