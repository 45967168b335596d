"""What every mmnp trainer shares, on top of TRL's GRPOTrainer (which is GRPO exactly):

- Each completion is verified once. The mmnp reward functions hand their verdicts (feasible,
  quality ratio, canonical solution) back through TRL's `log_extra` reward argument; SR, QR and
  distinct feasible solutions per group are logged from those, not from a second verification.
- Hooks an algorithm overrides, each called with what it needs passed in explicitly:
  - `on_scored(batch, scores)`: after TRL has generated, rewarded and normalised a generation
    batch, while every group is whole; `scores` holds the rewards of all processes by group.
  - `add_to_loss(inputs, logps)`: a term ADDED to GRPO's loss of a micro-batch (DMPO).
  - `replace_loss(inputs, logps)`: the loss used INSTEAD of GRPO's (FlowRL, DISA), a mean over
    the micro-batch; the base scales it for gradient accumulation as TRL scales its own.
  Both see the micro-batch's per-token log-probs still attached to the graph (one backward).
- `needs_reference`: build a frozen reference model even when the KL weight is 0.
- `self_test` (`SelfTest`): how the conformance suite (tests/test_algorithm_conformance.py)
  trains the algorithm for two steps on a CPU with the tiny models.
- `group_coupled`: the algorithm's term couples a group's completions through quantities
  computed once per generation batch; it is exact only when that batch is one optimisation
  step of fresh samples (`num_iterations = 1`, `steps_per_generation =
  gradient_accumulation_steps`). Other settings are refused, or warned about when the config's
  `allow_inexact` is set.
"""

from __future__ import annotations

import inspect
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch
from accelerate.utils import gather_object
from trl import GRPOTrainer

from mmnp.errors import UsageError
from mmnp.trainers.rewards import COLUMN, VERDICT_COLUMNS

VISION_KEYS = ("pixel_values", "image_grid_thw", "pixel_attention_mask", "spatial_shapes", "image_sizes",
               "token_type_ids", "mm_token_type_ids", "image_position_ids", "num_images", "num_tiles")


# -- tensor helpers shared by the algorithms -------------------------------------------------------

def length_normalised(token_logps: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """phi(o) = (1/|o|) sum_t logp_t, per sequence."""
    return (token_logps * mask).sum(-1) / mask.sum(-1).clamp(min=1)


def group_advantages(rewards: torch.Tensor, eps: float = 1e-4) -> torch.Tensor:
    """GRPO's A_i = (r_i - mean(r)) / (std(r) + eps) within each group (rows of `rewards`)."""
    std = rewards.std(dim=-1, keepdim=True) if rewards.size(-1) > 1 else torch.zeros_like(rewards[..., :1])
    return (rewards - rewards.mean(dim=-1, keepdim=True)) / (std + eps)


def unique_rows(ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(the first row of each distinct row of `ids`, each row's index into those)."""
    rows = torch.arange(ids.size(0), device=ids.device)
    _, inverse = torch.unique(ids, dim=0, return_inverse=True)
    first = torch.full((int(inverse.max()) + 1,), ids.size(0), device=ids.device)
    return first.scatter_reduce(0, inverse, rows, reduce="amin"), inverse


def cache_keyword(model) -> str:
    """The name under which `model.forward` takes and returns its key/value cache: `cache`
    from transformers 5.24 on, `past_key_values` before (announced for removal in 5.40).
    Read off the forward's own signature, so neither name is assumed past its versions."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def cached_completion_logps(model, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor, completion_ids: torch.Tensor,
                            completion_mask: torch.Tensor, temperature: float, chunk: int) -> torch.Tensor:
    """log p(completion token | prefix) at `temperature`, (B, C), no gradient: each distinct
    prompt goes through the model once, and its completions continue from its cached keys
    and values. The logits come from the model's own forward, so model-specific output
    transforms (Gemma-2's final_logit_softcapping, Cohere's logit_scale, Granite's
    logits_scaling) apply exactly as in the loss's pass."""
    keyword = cache_keyword(model)
    rows, inverse = unique_rows(prompt_ids)
    out = torch.zeros(completion_ids.shape, dtype=torch.float32, device=completion_ids.device)
    per_prompt = max(1, chunk // max(1, completion_ids.size(0) // len(rows)))
    with torch.no_grad():
        for start in range(0, len(rows), per_prompt):
            prompts = torch.arange(start, min(start + per_prompt, len(rows)), device=rows.device)
            members = torch.nonzero(torch.isin(inverse, prompts)).squeeze(1)
            first = model(input_ids=prompt_ids[rows[prompts]], attention_mask=prompt_mask[rows[prompts]],
                          use_cache=True, logits_to_keep=1)
            cache = getattr(first, keyword)
            mask = torch.cat([prompt_mask[members], completion_mask[members]], dim=1)
            if cache is None:  # no cache (gradient checkpointing in train mode turns it off): one full pass
                ids = torch.cat([prompt_ids[members], completion_ids[members]], dim=1)
                logits = model(input_ids=ids, attention_mask=mask,
                               logits_to_keep=completion_ids.size(1) + 1).logits[:, :-1].float() / temperature
                out[members] = torch.log_softmax(logits, -1).gather(-1, completion_ids[members, :, None]).squeeze(-1)
                continue
            position = torch.searchsorted(prompts, inverse[members])  # each member's prompt within the chunk
            cache.reorder_cache(position)
            logits = first.logits[position, -1:]
            if completion_ids.size(1) > 1:
                rest = model(input_ids=completion_ids[members, :-1], attention_mask=mask[:, :-1],
                             use_cache=False, **{keyword: cache}).logits
                logits = torch.cat([logits, rest], dim=1)
            logits = logits.float() / temperature
            out[members] = torch.log_softmax(logits, -1).gather(-1, completion_ids[members, :, None]).squeeze(-1)
    return out * completion_mask


@dataclass
class GroupScores:
    """The rewards of one generation batch, handed to `on_scored`.

    `rewards`: (groups, G), all processes, in TRL's global order; `local`: this process's rows
    of it, in the batch's row order; `records`: this process's `mmnp_instance` payloads."""

    rewards: torch.Tensor
    local: torch.Tensor
    records: list[str]


@dataclass(frozen=True)
class SelfTest:
    """How the conformance suite trains an algorithm two steps on a CPU with the tiny models and
    evaluates its checkpoint. `modalities`: those it trains on (each gets its own run).
    `reward`: the --reward it trains with. `prepare(tiny_text_model, folder)`: builds what the
    algorithm needs beyond the model (DISA: an anchor) and returns its own options for the run.
    `skip`: why it can never run there (the suite reports it as a skip)."""

    modalities: tuple[str, ...] = ("text", "image")
    reward: str = "shaped"
    prepare: Callable[[Path, Path], dict[str, Any]] | None = None
    skip: str | None = None


def check_loss_settings(trainer_class: type, beta: float) -> None:
    """Refuse TRL's KL weight for an algorithm whose loss replaces GRPO's, where it would do nothing."""
    if trainer_class.replace_loss is not MMNPTrainer.replace_loss and beta:
        name = getattr(trainer_class, "algorithm", trainer_class.__name__)
        raise UsageError(f"--beta {beta:g}: {name} replaces GRPO's loss, and TRL's KL term (--beta) is part of that "
                         "loss, so it would do nothing; leave --beta at 0")


class MMNPTrainer(GRPOTrainer):
    """TRL's GRPOTrainer with MM-NP-Bench metrics and the hooks of the other algorithms."""

    self_test = SelfTest()
    needs_reference = False
    group_coupled = False
    display_metrics: tuple[str, ...] = ()  # its own metrics: on the console line, and checked by the conformance suite

    def __init__(self, *args, **kwargs) -> None:
        config = kwargs.get("args", args[2] if len(args) > 2 else None)  # GRPOTrainer(model, reward_funcs, args)
        check_loss_settings(type(self), getattr(config, "beta", 0))  # before the model loads
        super().__init__(*args, **kwargs)
        self._live_logps: torch.Tensor | None = None
        self._scores: GroupScores | None = None
        self._verdicts: dict[str, list] = {}
        if self.group_coupled:
            self._check_exactness()
        if self.needs_reference and self.ref_model is None:
            self.ref_model = self._frozen_reference()

    def _check_exactness(self) -> None:
        args = self.args
        problems = []
        if args.num_iterations > 1:
            problems.append(f"num_iterations = {args.num_iterations} (> 1)")
        if args.steps_per_generation != args.gradient_accumulation_steps:
            problems.append(f"steps_per_generation = {args.steps_per_generation} != gradient_accumulation_steps = "
                            f"{args.gradient_accumulation_steps}")
        if not problems:
            return
        message = (f"{self.algorithm}'s group term is exact only with num_iterations = 1 and steps_per_generation = "
                   f"gradient_accumulation_steps; here " + " and ".join(problems))
        if not getattr(args, "allow_inexact", False):
            raise UsageError(message + " (set allow_inexact to train anyway, with an approximate gradient)")
        warnings.warn(message + ": its gradient is approximate", stacklevel=3)

    # -- hooks -----------------------------------------------------------------------------
    def on_scored(self, batch: dict, scores: GroupScores) -> dict:
        return batch

    def add_to_loss(self, inputs: dict, logps: torch.Tensor) -> torch.Tensor | None:
        return None

    def replace_loss(self, inputs: dict, logps: torch.Tensor) -> torch.Tensor | None:
        return None

    # -- TRL overrides -----------------------------------------------------------------------
    def _load_callback_state(self) -> None:
        """transformers replaces each callback it restores from a checkpoint by a new one appended
        after all the others: put the new one in the place of the one it replaced, so the
        curriculum's callback, which adds its columns to the logs, still runs before the one that
        writes them (metrics.csv)."""
        before = list(self.callback_handler.callbacks)
        super()._load_callback_state()
        after = self.callback_handler.callbacks
        new = [c for c in after if not any(c is b for b in before)]
        order = []
        for callback in before:
            if any(callback is c for c in after):
                order.append(callback)
            elif (restored := next((c for c in new if type(c) is type(callback)), None)) is not None:
                new.remove(restored)
                order.append(restored)
        after[:] = order + new

    def _generate_and_score_completions(self, inputs):
        batch = super()._generate_and_score_completions(inputs)
        scores, self._scores = self._scores, None
        return self.on_scored(batch, scores)

    def _log_completion_extra(self, column: str, values: list):
        if column in VERDICT_COLUMNS:  # the reward function's verdicts: kept for the metrics, not the table
            self._verdicts.setdefault(column, values)
            return
        super()._log_completion_extra(column, values)

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        self._verdicts = {}
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        weights = self.reward_weights.to(rewards_per_func.device)
        rewards = (rewards_per_func * weights).nansum(dim=1)  # all processes, global order
        local = len(prompts)
        start = self.accelerator.process_index * local
        self._scores = GroupScores(rewards.view(-1, self.group_size), rewards[start : start + local],
                                   [x.get(COLUMN, "") for x in inputs])
        if set(VERDICT_COLUMNS) <= set(self._verdicts):
            self._log_solution_metrics()
        return rewards_per_func

    def _get_per_token_logps_and_entropies(self, *args, **kwargs):
        result = super()._get_per_token_logps_and_entropies(*args, **kwargs)
        if torch.is_grad_enabled() and kwargs.get("compute_entropy"):
            self._live_logps = result[0]  # the loss's own forward: reuse it, no second pass
        return result

    def _compute_loss(self, model, inputs):
        self._live_logps = None
        loss = super()._compute_loss(model, inputs)
        replaced = self.replace_loss(inputs, self._live_logps)
        if replaced is not None:
            loss = replaced / (self.current_gradient_accumulation_steps if self.mode == "train" else 1)
        added = self.add_to_loss(inputs, self._live_logps)
        return loss if added is None else loss + added

    # -- helpers for subclasses ----------------------------------------------------------------
    @property
    def mode(self) -> str:
        return "train" if self.model.training else "eval"

    @property
    def group_size(self) -> int:
        return self.num_generations if self.mode == "train" else self.num_generations_eval

    def log_metric(self, name: str, value: float) -> None:
        self._metrics[self.mode][name].append(float(value))

    def completion_mask(self, batch: dict) -> torch.Tensor:
        mask = batch["completion_mask"]
        return mask * batch["tool_mask"] if "tool_mask" in batch else mask

    def no_grad_logps(self, model, batch: dict) -> torch.Tensor:
        """Per-token log-probs of the completions under `model`, without gradients, under the
        trainer's autocast (as the loss's pass). Text batches run each distinct prompt once and
        its G completions on its cached keys and values (about half the tokens of a full pass);
        vision and sharded (DeepSpeed, FSDP) models take TRL's own full pass."""
        if "pixel_values" not in batch and not (self.is_deepspeed_enabled or self.is_fsdp_enabled):
            unwrapped = self.accelerator.unwrap_model(model)
            if getattr(unwrapped, "base_model_prefix", None):
                with self.accelerator.autocast():
                    return cached_completion_logps(unwrapped, batch["prompt_ids"], batch["prompt_mask"],
                                                   batch["completion_ids"], batch["completion_mask"],
                                                   self.temperature, self.args.per_device_train_batch_size)
        ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
        mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
        keep = batch["completion_ids"].size(1)
        extra = {k: batch[k] for k in VISION_KEYS if k in batch}
        with torch.no_grad(), self.accelerator.autocast():
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
        with torch.no_grad(), self.accelerator.autocast():
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

    def _log_solution_metrics(self) -> None:
        """SR, QR and distinct feasible solutions per group, over all processes, from the
        verdicts the reward function returned."""
        feasible, ratio, solution = (self._verdicts[c] for c in VERDICT_COLUMNS)
        stats = self.accelerator.gather(torch.tensor([feasible, ratio], device=self.accelerator.device,
                                                     dtype=torch.float32).T)
        self.log_metric("mmnp/sr", stats[:, 0].mean().item())
        self.log_metric("mmnp/qr", stats[:, 1].mean().item())
        everything = gather_object(list(solution))
        g = self.group_size
        groups = [everything[i : i + g] for i in range(0, len(everything), g)]
        self.log_metric("mmnp/distinct_feasible", sum(len({c for c in grp if c is not None}) for grp in groups)
                        / max(len(groups), 1))
