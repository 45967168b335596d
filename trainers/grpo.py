"""GRPO exactly as TRL implements it, plus what every mmnp trainer shares: SR, QR and
distinct-feasible-solutions logging, and the three hooks the other algorithms override.

- `on_scored(batch)`: after TRL has generated, rewarded and normalised a generation batch,
  while every group is whole (across processes, through gathers).
- `extend_loss(loss, inputs, logps)`: after TRL's loss for a micro-batch, with the
  micro-batch's per-token log-probs still attached to the graph (one backward).
- `needs_reference`: build a frozen reference model even when the KL weight is 0.
"""

from __future__ import annotations

import torch
from accelerate.utils import gather_object
from trl import GRPOConfig, GRPOTrainer

from mmnp.registry import get_task
from mmnp.rewards import COLUMN, score

VISION_KEYS = ("pixel_values", "image_grid_thw", "pixel_attention_mask", "spatial_shapes", "image_sizes",
               "token_type_ids", "mm_token_type_ids", "image_position_ids", "num_images", "num_tiles")


def unique_rows(ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(the first row of each distinct row of `ids`, each row's index into those)."""
    rows = torch.arange(ids.size(0), device=ids.device)
    _, inverse = torch.unique(ids, dim=0, return_inverse=True)
    first = torch.full((int(inverse.max()) + 1,), ids.size(0), device=ids.device)
    return first.scatter_reduce(0, inverse, rows, reduce="amin"), inverse


def cached_completion_logps(model, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor, completion_ids: torch.Tensor,
                            completion_mask: torch.Tensor, temperature: float, chunk: int) -> torch.Tensor:
    """log p(completion token | prefix) at `temperature`, (B, C), no gradient: each distinct
    prompt goes through the model once, and its completions continue from its cached keys
    and values; the LM head runs chunk by chunk so full logits never sit in memory."""
    backbone = getattr(model, model.base_model_prefix)
    head = model.get_output_embeddings()
    rows, inverse = unique_rows(prompt_ids)
    out = torch.zeros(completion_ids.shape, dtype=torch.float32, device=completion_ids.device)
    per_prompt = max(1, chunk // max(1, completion_ids.size(0) // len(rows)))
    with torch.no_grad():
        for start in range(0, len(rows), per_prompt):
            prompts = torch.arange(start, min(start + per_prompt, len(rows)), device=rows.device)
            members = torch.nonzero(torch.isin(inverse, prompts)).squeeze(1)
            first = backbone(input_ids=prompt_ids[rows[prompts]], attention_mask=prompt_mask[rows[prompts]],
                             use_cache=True)
            cache = first.past_key_values
            position = torch.searchsorted(prompts, inverse[members])  # each member's prompt within the chunk
            cache.reorder_cache(position)
            mask = torch.cat([prompt_mask[members], completion_mask[members]], dim=1)
            hidden = backbone(input_ids=completion_ids[members], attention_mask=mask, past_key_values=cache,
                              use_cache=False).last_hidden_state
            hidden = torch.cat([first.last_hidden_state[position, -1:], hidden[:, :-1]], dim=1)
            logits = head(hidden).float() / temperature
            out[members] = torch.log_softmax(logits, -1).gather(-1, completion_ids[members, :, None]).squeeze(-1)
    return out * completion_mask


class MMNPGRPOTrainer(GRPOTrainer):
    """TRL's GRPOTrainer with MM-NP-Bench metrics; the base of DMPO, ProGRPO, FlowRL, DISA."""

    config_class = GRPOConfig
    needs_reference = False

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._live_logps: torch.Tensor | None = None
        self._rewards: torch.Tensor | None = None
        if self.needs_reference and self.ref_model is None:
            self.ref_model = self._frozen_reference()

    # -- hooks -----------------------------------------------------------------------------
    def on_scored(self, batch: dict) -> dict:
        return batch

    def extend_loss(self, loss: torch.Tensor, inputs: dict, logps: torch.Tensor) -> torch.Tensor:
        return loss

    # -- TRL overrides -----------------------------------------------------------------------
    def _generate_and_score_completions(self, inputs):
        return self.on_scored(super()._generate_and_score_completions(inputs))

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        weights = self.reward_weights.to(rewards_per_func.device)
        self._rewards = (rewards_per_func * weights).nansum(dim=1)  # all processes, global order
        if COLUMN in inputs[0]:
            self._log_solution_metrics(inputs, completions)
        return rewards_per_func

    def _get_per_token_logps_and_entropies(self, *args, **kwargs):
        result = super()._get_per_token_logps_and_entropies(*args, **kwargs)
        if torch.is_grad_enabled() and kwargs.get("compute_entropy"):
            self._live_logps = result[0]  # the loss's own forward: reuse it, no second pass
        return result

    def _compute_loss(self, model, inputs):
        self._live_logps = None
        loss = super()._compute_loss(model, inputs)
        return self.extend_loss(loss, inputs, self._live_logps)

    # -- helpers for subclasses ----------------------------------------------------------------
    @property
    def mode(self) -> str:
        return "train" if self.model.training else "eval"

    @property
    def group_size(self) -> int:
        return self.num_generations if self.mode == "train" else self.num_generations_eval

    def log_metric(self, name: str, value: float) -> None:
        self._metrics[self.mode][name].append(float(value))

    def local_slice(self, values: torch.Tensor, local: int) -> torch.Tensor:
        """This process's part of a tensor gathered across processes."""
        start = self.accelerator.process_index * local
        return values[start : start + local]

    def completion_mask(self, batch: dict) -> torch.Tensor:
        mask = batch["completion_mask"]
        return mask * batch["tool_mask"] if "tool_mask" in batch else mask

    def no_grad_logps(self, model, batch: dict) -> torch.Tensor:
        """Per-token log-probs of the completions under `model`, without gradients. Text
        batches run each distinct prompt once and its G completions on its cached keys and
        values (about half the tokens of a full pass); vision and sharded (DeepSpeed, FSDP)
        models take TRL's own full pass."""
        if "pixel_values" not in batch and not (self.is_deepspeed_enabled or self.is_fsdp_enabled):
            unwrapped = self.accelerator.unwrap_model(model)
            if getattr(unwrapped, "base_model_prefix", None) and unwrapped.get_output_embeddings() is not None:
                return cached_completion_logps(unwrapped, batch["prompt_ids"], batch["prompt_mask"],
                                               batch["completion_ids"], batch["completion_mask"], self.temperature,
                                               self.args.per_device_train_batch_size)
        ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
        mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
        keep = batch["completion_ids"].size(1)
        extra = {k: batch[k] for k in VISION_KEYS if k in batch}
        with torch.no_grad():
            logps, _, _ = self._get_per_token_logps_and_entropies(
                model, ids, mask, keep, batch_size=self.args.per_device_train_batch_size, **extra)
        return logps

    def unique_prompts(self, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
        """(rows holding each distinct prompt once, each row's index into them): the G
        completions of a prompt share its prompt-only computations. Vision batches keep
        every row (their image tensors are not sliced by row)."""
        if "pixel_values" in batch:
            rows = torch.arange(batch["prompt_ids"].size(0), device=batch["prompt_ids"].device)
            return rows, rows
        return unique_rows(batch["prompt_ids"])

    def prompt_logps(self, model, batch: dict, rows: torch.Tensor) -> torch.Tensor:
        """Log-probs of prompt tokens 1..P-1 of the given rows, no gradient."""
        extra = {k: batch[k] for k in VISION_KEYS if k in batch and k not in ("token_type_ids", "mm_token_type_ids")}
        for key in ("token_type_ids", "mm_token_type_ids"):
            if key in batch:
                extra[key] = batch[key][:, : batch["prompt_ids"].size(1)]
        with torch.no_grad():
            logps, _, _ = self._get_per_token_logps_and_entropies(
                model, batch["prompt_ids"][rows], batch["prompt_mask"][rows], batch["prompt_ids"].size(1) - 1,
                batch_size=self.args.per_device_train_batch_size, **extra)
        return logps

    def _frozen_reference(self):
        from trl.models import prepare_deepspeed, prepare_fsdp
        from trl.trainer.utils import add_fused_lm_head, create_model_from_path, get_config_model_id

        model = self.accelerator.unwrap_model(self.model)
        ref = create_model_from_path(get_config_model_id(model.config), dtype=model.dtype)
        ref.eval().requires_grad_(False)
        add_fused_lm_head(ref, temperature=self.temperature, cast_lm_head_to_fp32=self.args.cast_lm_head_to_fp32)
        if self.is_deepspeed_enabled:
            return prepare_deepspeed(ref, self.accelerator)
        if self.is_fsdp_enabled:
            return prepare_fsdp(ref, self.accelerator)
        return self.accelerator.prepare_model(ref, evaluation_mode=True)

    def _log_solution_metrics(self, inputs: list[dict], completions: list) -> None:
        """SR, QR and distinct feasible solutions per group, over all processes."""
        feasible, ratios, canon = [], [], []
        for example, completion in zip(inputs, completions):
            verdict, ratio = score(completion, example[COLUMN])
            feasible.append(float(verdict.feasible))
            ratios.append(ratio)
            if verdict.feasible:
                task = get_task(example["task"]) if "task" in example else None
                canon.append(repr(task.verifier.canonical(verdict.solution)) if task else repr(verdict.solution))
            else:
                canon.append(None)
        device = self.accelerator.device
        stats = self.accelerator.gather(torch.tensor([feasible, ratios], device=device).T)
        self.log_metric("mmnp/sr", stats[:, 0].mean().item())
        self.log_metric("mmnp/qr", stats[:, 1].mean().item())
        everything = gather_object(canon)
        g = self.group_size
        groups = [everything[i : i + g] for i in range(0, len(everything), g)]
        self.log_metric("mmnp/distinct_feasible", sum(len({c for c in grp if c is not None}) for grp in groups)
                        / max(len(groups), 1))
