"""DISA step 3, the anchored trainer: the loss replaces GRPO's with
w_i (g(q) + log pi(o|q) - log pi_ref(o|q) - beta r~)^2, no gradient through the frozen anchor
g (`mmnp.trainers.disa.anchor`, fitted to the labels of `mmnp.trainers.disa.estimate`), with
the estimate's log-likelihood convention, reward and beta. r~ is the reward itself (not
group-normalised), so estimation and training use the same one."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from trl import GRPOConfig

from mmnp.errors import UsageError
from mmnp.evaluation.models import weights_fingerprint
from mmnp.trainers.rewards import get_reward
from mmnp.trainers.algorithms import register_algorithm
from mmnp.trainers.base import GroupScores, MMNPTrainer, SelfTest, length_normalised
from mmnp.trainers.disa.anchor import REGRESSOR_CONFIG, Anchor, pooled_prompt_features, size_features
from mmnp.trainers.spec import same_model


def disa_loss(anchor: torch.Tensor, logp: torch.Tensor, logp_ref: torch.Tensor, reward: torch.Tensor,
              weight: torch.Tensor, beta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The anchored residual sum_i w_i (g(q) + log pi(o_i|q) - log pi_ref(o_i|q) - beta r~)^2,
    averaged over sequences, with no gradient through the anchor g(q). Returns (loss, residual)."""
    residual = anchor.detach() + logp - logp_ref.detach() - beta * reward.detach()
    return (weight.detach() * residual**2).mean(), residual


@dataclass
class DISAConfig(GRPOConfig):
    logz: str | None = field(default=None, metadata={
        "help": "DISA: the folder of `mmnp disa estimate` and `fit` (beta, reward and log-likelihood come from it).",
        "required": "DIR from `mmnp disa fit`"})
    disa_w_max: float = field(default=10.0, metadata={"help": "DISA: clip of the importance weight w_i."})

    def __post_init__(self):
        super().__post_init__()
        if not self.disa_w_max > 0:
            raise UsageError(f"--disa-w-max {self.disa_w_max}: must be positive")


def check_reference(model, logz: str | None) -> None:
    """The policy must start from the reference model pi_ref the anchor was estimated with:
    log pi_ref in the loss and the anchor's prompt features come from it. The same local folder
    by any path, or the same hub id; else one line saying which model the anchor needs."""
    if not logz:
        raise UsageError("--algo disa needs --logz DIR from `mmnp disa fit`")
    path = Path(logz) / REGRESSOR_CONFIG
    if not path.exists():
        raise UsageError(f"{path} not found: fit the anchor first (mmnp disa fit {logz})")
    estimate = json.loads(path.read_text()).get("estimate", {})
    recorded = estimate.get("ref_path") or estimate.get("ref")
    given = model if isinstance(model, (str, Path)) else getattr(getattr(model, "config", None), "_name_or_path", "")
    if not isinstance(recorded, str):  # every `mmnp disa estimate` records it: an anchor made some other way
        raise UsageError(f"{path} names no reference model (its estimate.ref): the policy cannot be checked against "
                         "pi_ref; estimate and fit the anchor with `mmnp disa estimate` and `mmnp disa fit`")
    weights, given_weights = estimate.get("ref_weights"), weights_fingerprint(str(given))
    if weights and given_weights:  # local folders: the same files, wherever they are
        if given_weights == weights:
            return
        if same_model(recorded, str(given)):
            raise UsageError(f"--model {given}: its files have changed since --logz {logz} was estimated with it "
                             "(another checkpoint under the same path); estimate and fit an anchor for it")
    if not same_model(recorded, str(given)):
        raise UsageError(f"--logz {logz} was estimated with the reference model {recorded!r}, not "
                         f"{str(given)!r}: train with --model {recorded} (the policy starts at pi_ref), "
                         f"or estimate and fit an anchor for this model")


def small_anchor(model: Path, folder: Path) -> dict[str, Any]:
    """A small anchor for the conformance suite: 6 text prompts, 2 proposals each from the model
    itself, fitted briefly; returns the options that train on it (the anchor, and the tasks and
    completion length it was estimated with, which training must keep)."""
    from mmnp.trainers.disa.anchor import fit
    from mmnp.trainers.disa.estimate import EstimateSpec, estimate

    tasks, max_tokens = "knapsack,subset_sum", 16
    estimate(EstimateSpec(ref=str(model), proposal=str(model), tasks=tasks, difficulty="easy",
                          prompts=6, samples=2, max_tokens=max_tokens), folder)
    fit(folder, epochs=50)
    return {"logz": str(folder), "tasks": tasks, "max_completion_length": max_tokens}


@register_algorithm("disa")
class DISATrainer(MMNPTrainer):
    config_class = DISAConfig
    self_test = SelfTest(modalities=("text",), reward="quality", prepare=small_anchor)
    display_metrics = ("disa/residual", "disa/anchor")
    needs_reference = True

    def __init__(self, model, *args, **kwargs) -> None:
        config = kwargs.get("args") if "args" in kwargs else (args[1] if len(args) > 1 else None)
        check_reference(model, getattr(config, "logz", None))  # before the model loads
        super().__init__(model, *args, **kwargs)
        self.anchor, config = Anchor.load(self.args.logz, self.accelerator.device)
        if "size_tasks" not in config:
            raise UsageError(f"{self.args.logz}: the anchor predates stored size features; estimate and fit again")
        self.size_tasks = config["size_tasks"]
        self.estimate = config["estimate"]
        names = [getattr(f, "__name__", "") for f in self.reward_funcs]
        expected = get_reward(self.estimate["reward"]).__name__
        if names != [expected]:
            raise UsageError(f"the anchor was estimated with the {self.estimate['reward']} reward; train with "
                             f"--reward {self.estimate['reward']} so r~ is the same")
        if self.temperature != 1.0:
            raise UsageError("DISA needs --temperature 1.0: the anchor's log-likelihoods were taken at 1.0")
        tasks = self.estimate.get("tasks", "all")  # as the estimate read it: "all", or names with spaces around
        self.estimated_tasks = set(self.size_tasks) if tasks == "all" else {t.strip() for t in tasks.split(",")} - {""}
        self._check_prompts_match_the_estimate()

    def _check_prompts_match_the_estimate(self) -> None:
        """The anchor predicts log Z for prompts like those it was estimated on: their tasks, text
        without a system message, completions up to the same length. Checked here on a dataset of
        rows (one line, before training); a curriculum's stream is checked batch by batch."""
        limit = self.estimate.get("max_tokens")
        if limit is not None and self.args.max_completion_length != limit:
            raise UsageError(f"--logz {self.args.logz} was estimated on completions of up to {limit} tokens: train "
                             f"with --max-completion-length {limit}, so that log Z is the same distribution's")
        rows = self.train_dataset
        columns = getattr(rows, "column_names", None) or []
        self._stream = "task" not in columns  # a curriculum's stream: its tasks are checked batch by batch
        if not self._stream:
            self._check_tasks(set(rows["task"]))
        if "image" in columns:
            raise UsageError("DISA's anchor is estimated on text prompts; train it with --modality text")
        if "prompt" in columns and any(message["role"] == "system" for p in rows["prompt"] for message in p):
            raise UsageError(f"--logz {self.args.logz} was estimated on prompts without a system message, whose "
                             "features the anchor reads: train without --system-prompt")

    def _check_tasks(self, tasks: set[str]) -> None:
        if unseen := sorted(tasks - self.estimated_tasks):
            raise UsageError(f"--logz {self.args.logz} was estimated on {', '.join(sorted(self.estimated_tasks))}, not "
                             f"{', '.join(unseen)}: its anchor would extrapolate there; train with --tasks among those, "
                             "or estimate and fit an anchor covering them")

    def on_scored(self, batch: dict, scores: GroupScores) -> dict:
        if "pixel_values" in batch:
            raise UsageError("DISA's anchor is estimated on text prompts; train it with --modality text")
        if self._stream:
            self._check_tasks({json.loads(p)["task"] for p in scores.records})
        ref = self.accelerator.unwrap_model(self.ref_model)
        rows, inverse = self.unique_prompts(batch)
        forwards = int(self.accelerator.gather(torch.tensor([len(rows)], device=rows.device)).max())
        hidden = pooled_prompt_features(ref, batch["prompt_ids"][rows], batch["prompt_mask"][rows], forwards)[inverse]
        size = torch.tensor([size_features(p, self.size_tasks) for p in scores.records], device=hidden.device)
        with torch.no_grad():
            batch["disa_anchor"] = self.anchor(torch.cat([hidden, size], dim=1))
        if "ref_per_token_logps" not in batch:
            batch["ref_per_token_logps"] = self.no_grad_logps(self.ref_model, batch)
        batch["disa_reward"] = scores.local.to(hidden.device)
        return batch

    def _loglik(self, token_logps: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return length_normalised(token_logps, mask) if self.estimate["loglik"] == "mean" else (token_logps * mask).sum(-1)

    def replace_loss(self, inputs, logps):
        mask = self.completion_mask(inputs)
        old = inputs.get("old_per_token_logps")
        old = logps.detach() if old is None else old
        weight = torch.exp(((logps - old) * mask).sum(-1)).clamp(max=self.args.disa_w_max)
        anchored, residual = disa_loss(inputs["disa_anchor"], self._loglik(logps, mask),
                                       self._loglik(inputs["ref_per_token_logps"], mask), inputs["disa_reward"],
                                       weight, self.estimate["beta"])
        self.log_metric("disa/residual", residual.abs().mean().item())
        self.log_metric("disa/anchor", inputs["disa_anchor"].mean().item())
        return anchored
