"""DMPO: GRPO + lambda * L_DM, a group-level forward-KL surrogate (the MSE between a target
softmax over a group's completions and the softmax of their length-normalised
log-likelihoods phi), in the two readings that exist:

- `paper`: the paper's formulas read exactly. Target p = softmax(r / alpha) over the whole
  group of G; L_DM = (1/G) sum_i (p_i - q_i)^2, averaged over the groups of a step. Its
  push on a completion is O(1/G^2) of GRPO's, so lambda 0.3-0.7 barely acts.
- `authors`: the authors' verl recipe (verl-recipe pull request #105, dmpo/dmpo_core_algos.py
  `_compute_dmpo_distribution_loss`, its README's default mode `grpo_dmpo`). Target p =
  softmax(A / tau) over GRPO's group-normalised advantage A, tau = 1/15; the loss is taken
  per micro-batch over the group members that share it, mean (p - q)^2 over them, and the
  micro-batch losses SUMMED per device while GRPO's term is a mean. mmnp makes the fragment
  an explicit setting (`dmpo_fragment_size` consecutive members of a group) instead of
  whatever fits on a GPU. `dmpo_flat skip` is the recipe's `grpo_dmpo_zero` (its config and
  run script), which skips fragments whose advantages are all equal.

Both are `dmpo_target` (reward | advantage) x `dmpo_grouping` (exact | fragments) x
`dmpo_flat` (keep | skip); `dmpo_recipe` picks a bundle, and any of the three given
explicitly overrides it.

Whichever reading, L_DM couples completions that TRL shuffles and splits across
micro-batches and processes. So `on_scored` computes, while each group is whole,
dL_DM/dphi_j of every completion (closed form, from a no-grad pass of phi kept in its own
key, so GRPO's own numerical path is untouched), and each micro-batch adds the linear term
lambda * sum_j coef_j * phi_j(theta): the summed gradient is exactly that of L_DM. This
holds when a generation batch is one optimisation step of fresh samples (`num_iterations =
1`, `steps_per_generation = gradient_accumulation_steps`, TRL's defaults); other settings
are refused unless `allow_inexact` is set (`group_coupled`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from trl import GRPOConfig

from mmnp.errors import UsageError
from mmnp.trainers.algorithms import register_algorithm
from mmnp.trainers.base import GroupScores, MMNPTrainer, length_normalised

TARGETS = ("reward", "advantage")
GROUPINGS = ("exact", "fragments")
FLAT = ("keep", "skip")
RECIPES = {
    "paper": {"dmpo_target": "reward", "dmpo_grouping": "exact", "dmpo_flat": "keep"},
    "authors": {"dmpo_target": "advantage", "dmpo_grouping": "fragments", "dmpo_flat": "keep"},
}
FLAT_TOLERANCE = 1e-5  # the authors' test for a fragment without signal: max(A) - min(A) <= this


def boltzmann_target(rewards: torch.Tensor, alpha: float) -> torch.Tensor:
    """p_i = softmax_i(r_i / alpha) over each group: the paper's target, never differentiated."""
    return torch.softmax(rewards.detach() / alpha, dim=-1)


def dmpo_loss(phi: torch.Tensor, rewards: torch.Tensor, alpha: float) -> torch.Tensor:
    """The paper's L_DM = (1/G) sum_i (p_i - q_i)^2 with q = softmax(phi) per group; mean over groups."""
    p = boltzmann_target(rewards, alpha)
    q = torch.softmax(phi, dim=-1)
    return ((p - q) ** 2).mean(dim=-1).mean()


def dmpo_phi_gradient(phi: torch.Tensor, rewards: torch.Tensor, alpha: float) -> torch.Tensor:
    """dL_DM/dphi_j of one group's loss (the paper's reading), in closed form: (2/G) q_j (d_j -
    sum_i d_i q_i) with d = q - p. Computed while a group is whole, it lets each completion's
    term be the linear `coef_j * phi_j` wherever TRL puts it, with the exact group gradient."""
    return _softmax_mse_gradient(phi, boltzmann_target(rewards, alpha), torch.ones_like(phi, dtype=torch.bool))


def _softmax_mse_gradient(phi: torch.Tensor, p: torch.Tensor, member: torch.Tensor) -> torch.Tensor:
    """d/dphi of (1/m) sum_i (p_i - q_i)^2, q = softmax(phi) over the `member` slots of each row
    (m of them); zero at the other slots."""
    q = torch.softmax(phi.detach().masked_fill(~member, float("-inf")), dim=-1)
    d = (q - p) * member
    m = member.sum(-1, keepdim=True).clamp(min=1).to(q.dtype)
    return 2.0 / m * q * (d - (d * q).sum(dim=-1, keepdim=True)) * member


def fragments(values: torch.Tensor, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(groups, G) -> (groups * ceil(G / size), size): each group cut into fragments of `size`
    consecutive members (the last one shorter when size does not divide G), with a mask of
    the real slots (the padded ones hold 0)."""
    groups, g = values.shape
    count = -(-g // size)
    padded = values.new_zeros((groups, count * size))
    padded[:, :g] = values
    member = torch.zeros(groups, count * size, dtype=torch.bool, device=values.device)
    member[:, :g] = True
    return padded.view(-1, size), member.view(-1, size)


def unfragment(values: torch.Tensor, g: int) -> torch.Tensor:
    """The inverse of `fragments` for per-slot values: (fragments, size) -> (groups, G)."""
    size = values.size(-1)
    count = -(-g // size)
    return values.reshape(-1, count * size)[:, :g]


@dataclass(frozen=True)
class Reading:
    """One reading of L_DM: what the target softmaxes, over which members, and what is skipped."""

    target: str = "reward"
    grouping: str = "exact"
    flat: str = "keep"
    alpha: float = 1.0
    tau: float = 1.0 / 15.0
    fragment_size: int = 4

    def target_logits(self, rewards: torch.Tensor, advantages: torch.Tensor) -> torch.Tensor:
        return rewards / self.alpha if self.target == "reward" else advantages / self.tau

    def units(self, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The rows L_DM softmaxes over: whole groups, or fragments of them; and their masks."""
        if self.grouping == "exact":
            return values, torch.ones_like(values, dtype=torch.bool)
        return fragments(values, self.fragment_size)

    def _unit_terms(self, phi: torch.Tensor, rewards: torch.Tensor, advantages: torch.Tensor):
        """Per unit (group or fragment): its members' phi, target p, mask and weight in L_DM."""
        logits, member = self.units(self.target_logits(rewards, advantages).detach())
        phis, _ = self.units(phi)
        adv, _ = self.units(advantages.detach())
        p = torch.softmax(logits.masked_fill(~member, float("-inf")), dim=-1) * member
        m = member.sum(-1).clamp(min=1).to(p.dtype)
        big = torch.finfo(adv.dtype).max
        spread = adv.masked_fill(~member, -big).max(-1).values - adv.masked_fill(~member, big).min(-1).values
        active = (spread > FLAT_TOLERANCE) if self.flat == "skip" else torch.ones_like(m, dtype=torch.bool)
        active = active & (m > 1)  # a member alone: p = q = 1, nothing to match
        weight = active.to(phi.dtype)
        if self.grouping == "exact":  # the paper's mean over the groups (skipped ones count as 0)
            weight = weight / len(weight)
        return phis, p, member, m, weight

    def loss(self, phi: torch.Tensor, rewards: torch.Tensor, advantages: torch.Tensor) -> torch.Tensor:
        """L_DM of (groups, G) inputs, differentiable in phi (verl's registered loss takes it so).

        exact: the mean over groups of (1/G) sum_i (p_i - q_i)^2.
        fragments: the SUM over fragments of (1/m) sum_{i in fragment} (p_i - q_i)^2, as the
        authors' code sums its micro-batch losses."""
        phis, p, member, m, weight = self._unit_terms(phi, rewards, advantages)
        q = torch.softmax(phis.masked_fill(~member, float("-inf")), dim=-1) * member
        return ((((p - q) ** 2).sum(-1) / m) * weight).sum()

    def loss_and_gradient(self, phi: torch.Tensor, rewards: torch.Tensor,
                          advantages: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(L_DM of one optimisation step on one device, dL_DM/dphi in closed form), all
        (groups, G) inputs, nothing differentiated: what the trainer computes while the
        groups are whole, to add as linear terms wherever TRL puts each completion."""
        phis, p, member, m, weight = self._unit_terms(phi.detach(), rewards, advantages)
        q = torch.softmax(phis.masked_fill(~member, float("-inf")), dim=-1) * member
        loss = ((((p - q) ** 2).sum(-1) / m) * weight).sum()
        grad = _softmax_mse_gradient(phis, p, member) * weight[:, None]
        return loss, (grad if self.grouping == "exact" else unfragment(grad, phi.size(-1)))


@dataclass
class DMPOConfig(GRPOConfig):
    dmpo_lambda: float = field(default=0.5, metadata={"help": "DMPO: weight of L_DM (the paper: robust in 0.3-0.7)."})
    dmpo_recipe: str = field(default="authors", metadata={
        "help": "DMPO: authors (the authors' verl recipe: advantage target over fragments of a group, summed) or "
                "paper (the formulas read exactly: reward target over whole groups); see the README."})
    dmpo_target: str | None = field(default=None, metadata={
        "help": "DMPO: the target's softmax over reward / alpha, or advantage / tau (default: the recipe's)."})
    dmpo_alpha: float = field(default=1.0, metadata={"help": "DMPO: temperature of the reward target (paper: 0.8-1.2)."})
    dmpo_tau: float = field(default=1.0 / 15.0, metadata={
        "help": "DMPO: temperature of the advantage target (the authors' dmpo_temperature, 1/15)."})
    dmpo_grouping: str | None = field(default=None, metadata={
        "help": "DMPO: exact (L_DM over whole groups, mean over groups) or fragments (over dmpo_fragment_size "
                "members at a time, summed, as the authors' per-micro-batch loss) (default: the recipe's)."})
    dmpo_fragment_size: int = field(default=4, metadata={
        "help": "DMPO fragments: group members per fragment (fixed, whatever fits on a device)."})
    dmpo_flat: str | None = field(default=None, metadata={
        "help": "DMPO: skip (a fragment or group whose advantages are all equal adds nothing, the authors' "
                "grpo_dmpo_zero) or keep (default: the recipe's)."})
    allow_inexact: bool = field(default=False, metadata={
        "help": "DMPO: train with num_iterations > 1 or steps_per_generation != gradient_accumulation_steps, where "
                "the group term's gradient is approximate (warns instead of refusing)."})

    def __post_init__(self):
        super().__post_init__()
        if self.dmpo_recipe not in RECIPES:
            raise UsageError(f"--dmpo-recipe {self.dmpo_recipe!r}: choose one of {', '.join(RECIPES)}")
        for name, value in RECIPES[self.dmpo_recipe].items():
            if getattr(self, name) is None:
                setattr(self, name, value)
        for name, choices in (("dmpo_target", TARGETS), ("dmpo_grouping", GROUPINGS), ("dmpo_flat", FLAT)):
            if getattr(self, name) not in choices:
                raise UsageError(f"--{name.replace('_', '-')} {getattr(self, name)!r}: choose one of {', '.join(choices)}")
        if self.dmpo_fragment_size < 2:
            raise UsageError(f"--dmpo-fragment-size {self.dmpo_fragment_size}: at least 2 (a member alone matches "
                             f"itself and adds nothing)")
        for name in ("dmpo_alpha", "dmpo_tau"):
            if not getattr(self, name) > 0:
                raise UsageError(f"--{name.replace('_', '-')} {getattr(self, name)}: must be positive")
        if not (math.isfinite(self.dmpo_lambda) and self.dmpo_lambda >= 0):
            raise UsageError(f"--dmpo-lambda {self.dmpo_lambda}: must be a finite number >= 0")

    @property
    def dmpo_reading(self) -> Reading:
        return Reading(self.dmpo_target, self.dmpo_grouping, self.dmpo_flat, self.dmpo_alpha, self.dmpo_tau,
                       self.dmpo_fragment_size)


@register_algorithm("dmpo")
class DMPOTrainer(MMNPTrainer):
    config_class = DMPOConfig
    display_metrics = ("dmpo/l_dm",)
    group_coupled = True

    def on_scored(self, batch: dict, scores: GroupScores) -> dict:
        logps = batch.get("old_per_token_logps")  # TRL's own, when it made them; never inserted by DMPO
        if logps is None:
            logps = self.no_grad_logps(self.model, batch)
        local = logps.size(0)
        g = scores.rewards.size(1)
        phi = self.accelerator.gather(length_normalised(logps, self.completion_mask(batch))).view(-1, g)
        advantages = self.accelerator.gather(batch["advantages"].reshape(local, -1)[:, 0].float()).view(-1, g)
        rewards = scores.rewards.to(phi.device).float()
        loss, coef = self.args.dmpo_reading.loss_and_gradient(phi.float(), rewards, advantages)
        # Every process adds its rows' linear terms and DDP averages the gradients: the exact
        # reading's mean over all groups needs coef * P; the fragments' per-device sum (averaged
        # over devices, as verl's data parallelism does) is the global sum / P, i.e. coef itself.
        if self.args.dmpo_grouping == "exact":
            coef = coef * self.accelerator.num_processes
        else:
            loss = loss / self.accelerator.num_processes
        start = self.accelerator.process_index * local
        batch["dmpo_coef"] = coef.flatten()[start : start + local].to(logps.dtype)
        self.log_metric("dmpo/l_dm", loss.item())
        return batch

    def add_to_loss(self, inputs, logps):
        phi = length_normalised(logps, self.completion_mask(inputs))
        return self.args.dmpo_lambda * (inputs["dmpo_coef"] * phi).sum()
