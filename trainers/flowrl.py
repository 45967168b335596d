"""FlowRL: trajectory balance with a learned log Z_phi(q), an MLP on the policy's hidden
states pooled over the prompt, trained jointly with the policy (the coupling DISA removes).
The loss replaces GRPO's: mean(w * delta^2), delta = log Z(q) + phi(o) - beta r~ - phi_ref(o),
r~ the group-normalised reward, w = min(exp(sum_t logp - logp_old), w_max)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn
from trl import GRPOConfig

from mmnp.trainers.algorithms import flowrl_loss, length_normalised
from mmnp.trainers.grpo import VISION_KEYS, MMNPGRPOTrainer

HEAD_FILE = "logz_head.pt"


@dataclass
class FlowRLConfig(GRPOConfig):
    flowrl_beta: float = field(default=15.0, metadata={"help": "Reward scale beta."})
    flowrl_w_max: float = field(default=10.0, metadata={"help": "Clip of the importance weight."})
    logz_hidden: int = field(default=256, metadata={"help": "Width of the log Z MLP."})
    logz_learning_rate: float = field(default=1e-3, metadata={"help": "Learning rate of the log Z MLP."})


def prompt_features(trainer: MMNPGRPOTrainer, batch: dict) -> torch.Tensor:
    """The policy's last hidden state averaged over the prompt's real tokens, no gradient;
    computed once per distinct prompt."""
    model = trainer.accelerator.unwrap_model(trainer.model)
    rows, inverse = trainer.unique_prompts(batch)
    mask = batch["prompt_mask"][rows]
    extra = {k: batch[k] for k in VISION_KEYS if k in batch and k not in ("num_images", "num_tiles")}
    for key in ("token_type_ids", "mm_token_type_ids"):  # these span prompt + completion: keep the prompt's
        if key in extra:
            extra[key] = extra[key][rows, : mask.size(1)]
    with torch.no_grad():
        hidden = model(input_ids=batch["prompt_ids"][rows], attention_mask=mask, output_hidden_states=True,
                       **extra).hidden_states[-1]
    pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdim=True).clamp(min=1)
    return pooled.float()[inverse]


class FlowRLTrainer(MMNPGRPOTrainer):
    config_class = FlowRLConfig
    needs_reference = True

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        config = self.accelerator.unwrap_model(self.model).config
        width = getattr(config, "hidden_size", None) or config.get_text_config().hidden_size
        self.logz_head = nn.Sequential(nn.Linear(width, self.args.logz_hidden), nn.GELU(),
                                       nn.Linear(self.args.logz_hidden, 1)).to(self.accelerator.device)

    def create_optimizer(self, *args, **kwargs):
        optimizer = super().create_optimizer(*args, **kwargs)
        optimizer.add_param_group({"params": list(self.logz_head.parameters()), "lr": self.args.logz_learning_rate,
                                   "weight_decay": 0.0})
        return optimizer

    def training_step(self, model, inputs, num_items_in_batch):
        loss = super().training_step(model, inputs, num_items_in_batch)
        if self.accelerator.num_processes > 1:  # the head is outside DDP: average its gradients by hand
            for p in self.logz_head.parameters():
                if p.grad is not None:
                    p.grad = self.accelerator.reduce(p.grad, reduction="mean")
        return loss

    def on_scored(self, batch: dict) -> dict:
        batch["flowrl_features"] = prompt_features(self, batch)
        if "ref_per_token_logps" not in batch:
            batch["ref_per_token_logps"] = self.no_grad_logps(self.ref_model, batch)
        return batch

    def extend_loss(self, loss, inputs, logps):
        mask = self.completion_mask(inputs)
        old = inputs.get("old_per_token_logps")
        old = logps.detach() if old is None else old
        log_z = self.logz_head(inputs["flowrl_features"]).squeeze(-1)
        flow, delta = flowrl_loss(log_z, length_normalised(logps, mask), length_normalised(inputs["ref_per_token_logps"], mask),
                                  inputs["advantages"], ((logps - old) * mask).sum(-1), self.args.flowrl_beta,
                                  self.args.flowrl_w_max)
        self.log_metric("flowrl/log_z", log_z.mean().item())
        self.log_metric("flowrl/delta_abs", delta.abs().mean().item())
        scale = self.current_gradient_accumulation_steps if self.mode == "train" else 1
        return flow / scale  # replaces GRPO's surrogate

    def _save(self, output_dir: str | None = None, state_dict=None) -> None:
        super()._save(output_dir, state_dict)
        torch.save(self.logz_head.state_dict(), Path(output_dir or self.args.output_dir) / HEAD_FILE)

    def _load_from_checkpoint(self, resume_from_checkpoint, model=None):
        super()._load_from_checkpoint(resume_from_checkpoint, model)
        head = Path(resume_from_checkpoint) / HEAD_FILE
        if head.exists():
            self.logz_head.load_state_dict(torch.load(head, map_location=self.accelerator.device))
