"""mmnp's DMPO (both readings) and ProGRPO for verl, the trainer the DMPO authors ran on: import
this module in verl's processes and `actor.policy_loss.loss_mode: mmnp_dmpo` /
`algorithm.adv_estimator: mmnp_progrpo` train with them (examples/verl/mmnp_dmpo.yaml).
Importing mmnp never imports this module, nor verl.

Importing it (verl 0.9.1):
- registers the policy loss `mmnp_dmpo` (verl's clipped surrogate + lambda * L_DM, in the
  reading `mmnp.trainers.algorithms.dmpo.Reading` defines, from `DMPOPolicyLossConfig`) and the
  advantage estimator `mmnp_progrpo` (verl's GRPO advantage, then ProGRPO's shift of the
  correct answers, `mmnp.trainers.algorithms.progrpo.progrpo_advantages`);
- wraps verl's `ppo_loss`, which hands a policy loss neither the prompt groups (uid) nor the
  rewards: L_DM needs both. The authors' recipe replaces the same function for the same reason
  (verl-recipe #105, dmpo/dmpo_patch.py); here the wrapper only makes the micro-batch's uid
  and rewards visible to `mmnp_dmpo` and leaves verl's own loss code (entropy, KL, metrics)
  as it is;
- wraps verl's `compute_advantage`, which hands a custom estimator no log-probabilities, so
  `mmnp_progrpo` receives the batch's `old_log_probs` (answer confidence) and, when the batch
  carries them, `prompt_log_probs` / `prompt_mask` (prompt confidence). verl 0.9.1 computes no
  prompt log-probabilities, so ProGRPO's c(q) must be supplied by the user's pipeline: the
  estimator refuses to run without it rather than drop the term.

The two readings in verl's micro-batches: `exact` needs whole groups in each micro-batch
(trainer.balance_batch false, actor.use_dynamic_bsz false, actor.shuffle false,
ppo_micro_batch_size_per_gpu a multiple of rollout.n) and checks it; each micro-batch adds
its groups' share of the mean over the mini-batch's groups. `fragments` cuts each group's
members present in a micro-batch into consecutive chunks of dmpo_fragment_size and sums the
chunks' losses (with whole groups in order, exactly mmnp's fragments; with verl's default
length balancing, the members a micro-batch happens to hold, as in the authors' runs).
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass, field
from typing import Any, Optional

import torch
from verl.trainer.config import AlgoConfig
from verl.trainer.ppo.core_algos import (
    compute_grpo_outcome_advantage,
    compute_policy_loss_vanilla,
    register_adv_est,
    register_policy_loss,
)
from verl.utils import as_torch_index
from verl.workers.config import FSDPActorConfig, PolicyLossConfig

from mmnp.trainers.algorithms.dmpo import RECIPES, Reading
from mmnp.trainers.algorithms.progrpo import confidence, progrpo_advantages

DMPO_LOSS = "mmnp_dmpo"
PROGRPO_ADVANTAGE = "mmnp_progrpo"


@dataclass
class DMPOPolicyLossConfig(PolicyLossConfig):
    """verl's policy-loss settings with mmnp's DMPO options (as `mmnp train --algo dmpo` names them)."""

    dmpo_lambda: float = 0.5
    dmpo_recipe: str = "authors"
    dmpo_target: Optional[str] = None
    dmpo_alpha: float = 1.0
    dmpo_tau: float = 1.0 / 15.0
    dmpo_grouping: Optional[str] = None
    dmpo_fragment_size: int = 4
    dmpo_flat: Optional[str] = None


@dataclass
class DMPOActorConfig(FSDPActorConfig):
    """The FSDP actor config whose policy_loss accepts the DMPO options."""

    policy_loss: DMPOPolicyLossConfig = field(default_factory=DMPOPolicyLossConfig)


@dataclass
class ProGRPOAlgoConfig(AlgoConfig):
    """verl's algorithm settings with ProGRPO's."""

    progrpo_alpha: float = 0.3
    progrpo_fraction: float = 0.2


def reading_of(policy_loss: Any) -> tuple[float, Reading]:
    """(lambda, reading) from a policy-loss config (a dataclass or a DictConfig); unset
    target, grouping and flat come from the recipe, as in `DMPOConfig`."""
    get = policy_loss.get
    recipe = RECIPES[get("dmpo_recipe", "authors")]
    pick = lambda name: get(name, None) or recipe[name]  # noqa: E731
    return float(get("dmpo_lambda", 0.5)), Reading(pick("dmpo_target"), pick("dmpo_grouping"), pick("dmpo_flat"),
                                                   float(get("dmpo_alpha", 1.0)), float(get("dmpo_tau", 1 / 15)),
                                                   int(get("dmpo_fragment_size", 4)))


@dataclass(frozen=True)
class MicroBatch:
    """What verl's ppo_loss knows of a micro-batch and does not pass on: each row's prompt
    group and its sequence reward."""

    uid: Any
    rewards: Optional[torch.Tensor]


_MICRO_BATCH: contextvars.ContextVar[Optional[MicroBatch]] = contextvars.ContextVar("mmnp_verl_micro_batch",
                                                                                     default=None)


@contextlib.contextmanager
def micro_batch(uid: Any, rewards: Optional[torch.Tensor] = None):
    """Make a micro-batch's prompt groups (and sequence rewards) visible to `mmnp_dmpo` while
    verl computes its loss (what the ppo_loss wrapper does; tests call it directly)."""
    token = _MICRO_BATCH.set(MicroBatch(uid, rewards))
    try:
        yield
    finally:
        _MICRO_BATCH.reset(token)


def seq_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    mask = mask.to(values.dtype)
    return (values * mask).sum(-1) / mask.sum(-1).clamp(min=1)


def micro_batch_l_dm(log_prob: torch.Tensor, advantages: torch.Tensor, response_mask: torch.Tensor, uid: Any,
                     rewards: Optional[torch.Tensor], reading: Reading, group_size: int,
                     groups_per_mini_batch: Optional[int] = None, dp_size: int = 1) -> torch.Tensor:
    """A micro-batch's share of L_DM (see the module's note on the readings), differentiable in
    log_prob. Rows are grouped by uid in their order of appearance."""
    if reading.target == "reward" and rewards is None:
        raise ValueError("mmnp_dmpo with dmpo_target reward needs the batch's token_level_rewards")
    index = as_torch_index(uid, device=log_prob.device)
    phi = seq_mean(log_prob, response_mask)
    adv = seq_mean(advantages, response_mask).detach()
    r = rewards.to(phi.dtype).detach() if rewards is not None else adv
    total = phi.new_zeros(())
    seen = []
    for group in index.tolist():
        if group not in seen:
            seen.append(group)
    for group in seen:
        rows = torch.nonzero(index == group).squeeze(1)
        if reading.grouping == "exact" and len(rows) != group_size:
            raise ValueError(f"mmnp_dmpo's exact reading needs whole groups in every micro-batch, and one holds "
                             f"{len(rows)} of a group's {group_size}: set trainer.balance_batch=false, "
                             "actor_rollout_ref.actor.use_dynamic_bsz=false, actor_rollout_ref.actor.shuffle=false "
                             "and ppo_micro_batch_size_per_gpu to a multiple of rollout.n (or use dmpo_grouping "
                             "fragments)")
        total = total + reading.loss(phi[rows][None], r[rows][None], adv[rows][None])
    if reading.grouping == "exact":  # Reading.loss averaged over one group; over the mini-batch's instead
        total = total * dp_size / (groups_per_mini_batch or len(seen))
    return total


@register_policy_loss(DMPO_LOSS)
def compute_policy_loss_mmnp_dmpo(old_log_prob: torch.Tensor, log_prob: torch.Tensor, advantages: torch.Tensor,
                                  response_mask: torch.Tensor, loss_agg_mode: str = "token-mean", config=None,
                                  rollout_is_weights: Optional[torch.Tensor] = None) -> tuple[torch.Tensor, dict]:
    """verl's clipped surrogate + lambda * L_DM (mmnp's DMPO)."""
    pg_loss, metrics = compute_policy_loss_vanilla(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode,
                                                   config, rollout_is_weights)
    batch = _MICRO_BATCH.get()
    if batch is None or batch.uid is None:
        raise RuntimeError("mmnp_dmpo needs each micro-batch's prompt groups, which verl's ppo_loss does not pass: "
                           "import mmnp.trainers.verl in the actor workers (actor_rollout_ref.model.external_lib: "
                           "mmnp.trainers.verl), which wraps it")
    lam, reading = reading_of(config.policy_loss)
    info = config.global_batch_info
    global_batch = info.get("global_batch_size")
    l_dm = micro_batch_l_dm(log_prob, advantages, response_mask, batch.uid, batch.rewards, reading, config.rollout_n,
                            global_batch // config.rollout_n if global_batch else None, info.get("dp_size") or 1)
    metrics.update({"actor/dmpo_l_dm": l_dm.detach().item(), "actor/dmpo_lambda": lam})
    return pg_loss + lam * l_dm, metrics


@register_adv_est(PROGRPO_ADVANTAGE)
def compute_progrpo_advantage(token_level_rewards: torch.Tensor, response_mask: torch.Tensor, index, config=None,
                              old_log_probs: Optional[torch.Tensor] = None,
                              prompt_log_probs: Optional[torch.Tensor] = None,
                              prompt_mask: Optional[torch.Tensor] = None, epsilon: float = 1e-6,
                              norm_adv_by_std_in_grpo: bool = True, **_: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """verl's GRPO advantage, then A + alpha (c(q) - c(o|q)) on the correct answers (reward > 0),
    c the exponentiated mean of the lowest `progrpo_fraction` of the token log-probabilities."""
    if old_log_probs is None or prompt_log_probs is None or prompt_mask is None:
        raise ValueError("mmnp_progrpo needs the answers' old_log_probs and the prompts' prompt_log_probs / "
                         "prompt_mask in the batch (import mmnp.trainers.verl in the driver to pass them; verl 0.9.1 "
                         "computes no prompt log-probabilities, so the pipeline must add them)")
    get = config.get if config is not None else (lambda key, default: default)
    alpha, fraction = float(get("progrpo_alpha", 0.3)), float(get("progrpo_fraction", 0.2))
    advantages, _ = compute_grpo_outcome_advantage(token_level_rewards, response_mask, index, epsilon,
                                                   norm_adv_by_std_in_grpo)
    scores = token_level_rewards.sum(-1)
    shifted = progrpo_advantages(advantages[:, 0] if advantages.dim() > 1 else advantages,
                                 confidence(prompt_log_probs, prompt_mask, fraction),
                                 confidence(old_log_probs, response_mask, fraction), scores, alpha)
    out = shifted[:, None] * response_mask
    return out, out


# -- the two wrappers -----------------------------------------------------------------------------------

def _ppo_loss_with_groups(original):
    from verl.utils import tensordict_utils as tu

    def ppo_loss(config, model_output, data, dp_group=None):
        rewards = None
        if "token_level_rewards" in data.keys():
            rewards = data.select("token_level_rewards").to_padded_tensor()["token_level_rewards"].sum(-1)
        with micro_batch(tu.get(data, "uid", None), rewards):
            return original(config, model_output, data, dp_group)

    ppo_loss.mmnp_wrapped = original
    return ppo_loss


def _compute_advantage_with_log_probs(original):
    def compute_advantage(data, adv_estimator, *args, **kwargs):
        if adv_estimator != PROGRPO_ADVANTAGE:
            return original(data, adv_estimator, *args, **kwargs)
        batch = data.batch
        config = kwargs.get("config")
        advantages, returns = compute_progrpo_advantage(
            batch["token_level_rewards"], batch["response_mask"], data.non_tensor_batch["uid"], config,
            old_log_probs=batch.get("old_log_probs", None), prompt_log_probs=batch.get("prompt_log_probs", None),
            prompt_mask=batch.get("prompt_mask", None),
            norm_adv_by_std_in_grpo=kwargs.get("norm_adv_by_std_in_grpo", True))
        batch["advantages"], batch["returns"] = advantages, returns
        return data

    compute_advantage.mmnp_wrapped = original
    return compute_advantage


def install() -> None:
    """Wrap verl's ppo_loss and compute_advantage where verl looks them up (idempotent)."""
    import importlib

    for module_name, name, wrap in (("verl.workers.utils.losses", "ppo_loss", _ppo_loss_with_groups),
                                    ("verl.workers.engine_workers", "ppo_loss", _ppo_loss_with_groups),
                                    ("verl.trainer.ppo.ray_trainer", "compute_advantage",
                                     _compute_advantage_with_log_probs)):
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # e.g. ray or the GPU stack absent: nothing there to wrap
            continue
        current = getattr(module, name, None)
        if current is not None and not hasattr(current, "mmnp_wrapped"):
            setattr(module, name, wrap(current))


install()
