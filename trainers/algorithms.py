"""The training algorithms of ALGORITHMS.md as small, separately tested tensor functions.

Shapes: `(groups, G)` for group-level quantities, `(B,)` per sequence, `(B, T)` per token
with a 0/1 `mask` over real completion tokens. The trainer (`mmnp.trainers.trainer`) wires
them into TRL's GRPOTrainer; nothing here knows about TRL.
"""

from __future__ import annotations

import torch


def length_normalised(token_logps: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """phi(o) = (1/|o|) sum_t logp_t, per sequence."""
    return (token_logps * mask).sum(-1) / mask.sum(-1).clamp(min=1)


def group_advantages(rewards: torch.Tensor, eps: float = 1e-4) -> torch.Tensor:
    """GRPO's A_i = (r_i - mean(r)) / (std(r) + eps) within each group (rows of `rewards`)."""
    std = rewards.std(dim=-1, keepdim=True) if rewards.size(-1) > 1 else torch.zeros_like(rewards[..., :1])
    return (rewards - rewards.mean(dim=-1, keepdim=True)) / (std + eps)


# -- DMPO -----------------------------------------------------------------------------------

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


# -- ProGRPO ----------------------------------------------------------------------------------

def confidence(token_logps: torch.Tensor, mask: torch.Tensor, fraction: float = 0.2) -> torch.Tensor:
    """c(x) = exp(mean of the lowest `fraction` of x's token log-probabilities), per row."""
    big = torch.finfo(token_logps.dtype).max
    lengths = mask.sum(-1)
    k = (lengths * fraction).ceil().clamp(min=1).long()
    ordered = torch.where(mask.bool(), token_logps, torch.full_like(token_logps, big)).sort(dim=-1).values
    take = torch.arange(token_logps.size(-1), device=token_logps.device)[None, :] < k[:, None]
    low_mean = (ordered * take).sum(-1) / k
    return torch.exp(torch.where(lengths > 0, low_mean, torch.zeros_like(low_mean)))


def progrpo_advantages(advantages: torch.Tensor, prompt_confidence: torch.Tensor, answer_confidence: torch.Tensor,
                       rewards: torch.Tensor, alpha: float = 0.3) -> torch.Tensor:
    """A~_i = A_i + alpha * (c(q) - c(o_i|q)) for correct answers (reward > 0); a group
    with no correct answer, and every incorrect answer, keeps its plain advantage.
    All arguments are `(groups, G)`."""
    correct = rewards > 0
    shift = alpha * (prompt_confidence - answer_confidence)
    return torch.where(correct, advantages + shift, advantages)


# -- FlowRL and DISA ----------------------------------------------------------------------------

def flowrl_loss(log_z: torch.Tensor, phi: torch.Tensor, phi_ref: torch.Tensor, reward: torch.Tensor,
                log_ratio: torch.Tensor, beta: float = 15.0, w_max: float = 10.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Trajectory balance with a learned log Z: delta = log Z(q) + phi(o) - beta r~ - phi_ref(o);
    loss = mean(w delta^2), w = min(exp(sum_t(logp - logp_old)), w_max), detached.
    `reward` is r~ (group-normalised); `log_ratio` is the summed token log-ratio. Returns
    (loss, delta)."""
    weight = torch.exp(log_ratio.detach()).clamp(max=w_max)
    delta = log_z + phi - beta * reward.detach() - phi_ref.detach()
    return (weight * delta**2).mean(), delta


def disa_loss(anchor: torch.Tensor, logp: torch.Tensor, logp_ref: torch.Tensor, reward: torch.Tensor,
              weight: torch.Tensor, beta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The anchored residual sum_i w_i (g(q) + log pi(o_i|q) - log pi_ref(o_i|q) - beta r~)^2,
    averaged over sequences, with no gradient through the anchor g(q). Returns (loss, residual)."""
    residual = anchor.detach() + logp - logp_ref.detach() - beta * reward.detach()
    return (weight.detach() * residual**2).mean(), residual


def log_z_importance_sampling(logp_ref: torch.Tensor, logp_proposal: torch.Tensor, reward: torch.Tensor,
                              beta: float) -> torch.Tensor:
    """log Z_IS(q) = logsumexp_i(log pi_ref - log p_T + beta r~) - log N over the last axis."""
    n = logp_ref.size(-1)
    return torch.logsumexp(logp_ref - logp_proposal + beta * reward, dim=-1) - torch.log(torch.tensor(float(n)))
