"""FlowRL: trajectory balance with a learned log Z_phi(q), an MLP on the policy's hidden
states pooled over the prompt, trained jointly with the policy (the coupling DISA removes).
The loss replaces GRPO's: mean(w * delta^2), delta = log Z(q) + phi(o) - beta r~ - phi_ref(o),
r~ the group-normalised reward, w = min(exp(sum_t logp - logp_old), w_max).

The head is a submodule of the policy (`model.logz_head`), so whatever wraps the policy
(DDP, DeepSpeed ZeRO-1/2, FSDP) averages its gradients, clips them with the policy's and
shards its optimiser state; it has its own learning rate. ZeRO-3 is refused: the head runs
outside the policy's forward, where ZeRO-3 has not gathered its parameters. Saved
checkpoints keep the head in `logz_head.pt`, not in the model's weights.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn
from trl import GRPOConfig

from mmnp.errors import UsageError
from mmnp.trainers.algorithms import register_algorithm
from mmnp.trainers.base import VISION_KEYS, GroupScores, MMNPTrainer, length_normalised

HEAD_FILE = "logz_head.pt"
HEAD = "logz_head"


def flowrl_loss(log_z: torch.Tensor, phi: torch.Tensor, phi_ref: torch.Tensor, reward: torch.Tensor,
                log_ratio: torch.Tensor, beta: float = 15.0, w_max: float = 10.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Trajectory balance with a learned log Z: delta = log Z(q) + phi(o) - beta r~ - phi_ref(o);
    loss = mean(w delta^2), w = min(exp(sum_t(logp - logp_old)), w_max), detached.
    `reward` is r~ (group-normalised); `log_ratio` is the summed token log-ratio. Returns
    (loss, delta)."""
    weight = torch.exp(log_ratio.detach()).clamp(max=w_max)
    delta = log_z + phi - beta * reward.detach() - phi_ref.detach()
    return (weight * delta**2).mean(), delta


@dataclass
class FlowRLConfig(GRPOConfig):
    flowrl_beta: float = field(default=15.0, metadata={"help": "FlowRL: reward scale beta."})
    flowrl_w_max: float = field(default=10.0, metadata={"help": "FlowRL: clip of the importance weight."})
    logz_hidden: int = field(default=256, metadata={"help": "FlowRL: width of the log Z MLP."})
    logz_learning_rate: float = field(default=1e-3, metadata={"help": "FlowRL: learning rate of the log Z MLP."})

    def __post_init__(self):
        super().__post_init__()
        if not (math.isfinite(self.flowrl_beta) and self.flowrl_beta >= 0):
            raise UsageError(f"--flowrl-beta {self.flowrl_beta}: must be a finite number >= 0")
        if not self.flowrl_w_max > 0:
            raise UsageError(f"--flowrl-w-max {self.flowrl_w_max}: must be positive")
        if not (math.isfinite(self.logz_learning_rate) and self.logz_learning_rate >= 0):  # 0: a frozen head
            raise UsageError(f"--logz-learning-rate {self.logz_learning_rate}: must be a finite number >= 0")
        if self.logz_hidden < 1:
            raise UsageError(f"--logz-hidden {self.logz_hidden}: at least 1")


def prompt_features(trainer: MMNPTrainer, batch: dict) -> torch.Tensor:
    """The policy's last hidden state averaged over the prompt's real tokens, no gradient;
    computed once per distinct prompt."""
    model = trainer.accelerator.unwrap_model(trainer.model)
    rows, inverse = trainer.unique_prompts(batch)
    mask = batch["prompt_mask"][rows]
    extra = {k: batch[k] for k in VISION_KEYS if k in batch and k not in ("num_images", "num_tiles")}
    for key in ("token_type_ids", "mm_token_type_ids"):  # these span prompt + completion: keep the prompt's
        if key in extra:
            extra[key] = extra[key][rows, : mask.size(1)]
    with torch.no_grad(), trainer.accelerator.autocast():
        hidden = model(input_ids=batch["prompt_ids"][rows], attention_mask=mask, output_hidden_states=True,
                       **extra).hidden_states[-1]
    pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdim=True).clamp(min=1)
    return pooled.float()[inverse]


@register_algorithm("flowrl")
class FlowRLTrainer(MMNPTrainer):
    config_class = FlowRLConfig
    display_metrics = ("flowrl/log_z",)
    needs_reference = True

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        plugin = getattr(self.accelerator.state, "deepspeed_plugin", None)
        if plugin is not None and plugin.zero_stage == 3:
            raise UsageError("FlowRL's log Z head runs outside the policy's forward, which ZeRO-3 does not support; "
                             "use ZeRO-2, DDP or FSDP")
        model = self.accelerator.unwrap_model(self.model)
        config = model.config
        width = getattr(config, "hidden_size", None) or config.get_text_config().hidden_size
        model.add_module(HEAD, nn.Sequential(nn.Linear(width, self.args.logz_hidden), nn.GELU(),
                                             nn.Linear(self.args.logz_hidden, 1)).to(model.device))
        if self.use_vllm:  # vLLM holds the policy only: send it the weights without the head
            sync = self.vllm_generation.sync_weights

            def sync_without_head() -> None:
                head = model._modules.pop(HEAD)
                try:
                    sync()
                finally:
                    model._modules[HEAD] = head

            self.vllm_generation.sync_weights = sync_without_head

    @property
    def logz_head(self) -> nn.Module:
        return getattr(self.accelerator.unwrap_model(self.model), HEAD)

    def create_optimizer(self, *args, **kwargs):
        optimizer = super().create_optimizer(*args, **kwargs)
        head = {id(p) for p in self.logz_head.parameters()}
        for group in optimizer.param_groups:  # out of the policy's groups, into its own (own lr, no decay)
            group["params"] = [p for p in group["params"] if id(p) not in head]
        optimizer.add_param_group({"params": list(self.logz_head.parameters()), "lr": self.args.logz_learning_rate,
                                   "weight_decay": 0.0})
        return optimizer

    def on_scored(self, batch: dict, scores: GroupScores) -> dict:
        batch["flowrl_features"] = prompt_features(self, batch)
        if "ref_per_token_logps" not in batch:
            batch["ref_per_token_logps"] = self.no_grad_logps(self.ref_model, batch)
        return batch

    def replace_loss(self, inputs, logps):
        mask = self.completion_mask(inputs)
        old = inputs.get("old_per_token_logps")
        old = logps.detach() if old is None else old
        log_z = self.logz_head(inputs["flowrl_features"]).squeeze(-1)
        flow, delta = flowrl_loss(log_z, length_normalised(logps, mask), length_normalised(inputs["ref_per_token_logps"], mask),
                                  inputs["advantages"], ((logps - old) * mask).sum(-1), self.args.flowrl_beta,
                                  self.args.flowrl_w_max)
        self.log_metric("flowrl/log_z", log_z.mean().item())
        self.log_metric("flowrl/delta_abs", delta.abs().mean().item())
        self.log_metric("flowrl/delta_mean", delta.mean().item())
        return flow

    def _save(self, output_dir: str | None = None, state_dict=None) -> None:
        model = self.accelerator.unwrap_model(self.model)
        state_dict = model.state_dict() if state_dict is None else state_dict
        super()._save(output_dir, {k: v for k, v in state_dict.items() if not k.startswith(HEAD + ".")})
        torch.save(self.logz_head.state_dict(), Path(output_dir or self.args.output_dir) / HEAD_FILE)

    def _load_from_checkpoint(self, resume_from_checkpoint, model=None):
        super()._load_from_checkpoint(resume_from_checkpoint, model)
        head = Path(resume_from_checkpoint) / HEAD_FILE
        if head.exists():
            self.logz_head.load_state_dict(torch.load(head, map_location=self.accelerator.device, weights_only=True))
