"""DISA step 1: for each prompt, N proposals from a proposal (teacher) model, their rewards,
their log-likelihoods under the reference and the proposal, and
log Z_IS = logsumexp(log pi_ref - log p_T + beta r~) - log N, with the weights' effective
sample size. Appended per prompt to `labels.jsonl`, so an interrupted run resumes.

Log-likelihood convention (`loglik`): `sum` (the default) is log pi(o|q), and the anchored
target pi_ref exp(beta r) / Z is a distribution over completions, as in the paper. `mean`
(length-normalised) is not the log of any normalised distribution: Z is then a normaliser
of pi_ref(o|q)^(1/|o|) exp(beta r) over completions, which does not sum to 1 over o, so the
paper's guarantee (the policy at the stationary point equals the tilted reference) does not
carry over; it only keeps the labels' scale independent of length. Estimation and training
use the one chosen here.

The proposals are drawn by plain ancestral sampling at temperature 1 with every logits
processor off, so log p_T, scored by teacher forcing, is the density the samples were drawn
from. A checkpoint's generation_config is not merely overridden field by field (transformers
fills every field a call leaves unset from it: min_p, no_repeat_ngram_size, bad_words_ids,
suppress_tokens, forced_eos_token_id, ...): while proposals are drawn the model carries a
fresh GenerationConfig, so only transformers' global defaults and the fields set here apply.
"""

from __future__ import annotations

import json
import math
import zlib
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

import torch
from mmnp.trainers.disa.anchor import (
    ESTIMATE,
    LABELS,
    pooled_prompt_features,
    size_features,
)

from mmnp.dataset import atomic_write
from mmnp.errors import UsageError
from mmnp.samplelog import JsonlLog
from mmnp.registry import list_tasks
from mmnp.trainers.rewards import get_reward, record_payload
from mmnp.evaluation.models import weights_fingerprint
from mmnp.trainers.spec import model_identity, same_model


def log_z_importance_sampling(logp_ref: torch.Tensor, logp_proposal: torch.Tensor, reward: torch.Tensor,
                              beta: float) -> torch.Tensor:
    """log Z_IS(q) = logsumexp_i(log pi_ref - log p_T + beta r~) - log N over the last axis."""
    n = logp_ref.size(-1)
    return torch.logsumexp(logp_ref - logp_proposal + beta * reward, dim=-1) - torch.log(torch.tensor(float(n)))


def sequence_logps(model, prompt_ids: list[int], completions: list[list[int]], loglik: str, device) -> list[float]:
    """log p(o|q) (summed, or averaged over tokens) of each completion, by teacher forcing
    in one right-padded batch."""
    width = max(1, max(len(c) for c in completions))
    pad = next((c[0] for c in completions if c), 0)  # any id: padded positions are masked out
    ids = torch.tensor([prompt_ids + c + [pad] * (width - len(c)) for c in completions], device=device)
    mask = torch.tensor([[1] * len(c) + [0] * (width - len(c)) for c in completions], device=device)
    attention = torch.cat([torch.ones(len(completions), len(prompt_ids), device=device, dtype=mask.dtype), mask], 1)
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=attention).logits[:, len(prompt_ids) - 1 : -1].float()
    token = torch.log_softmax(logits, -1).gather(2, ids[:, len(prompt_ids) :, None]).squeeze(2) * mask
    totals = token.sum(1) if loglik == "sum" else token.sum(1) / mask.sum(1).clamp(min=1)
    return totals.tolist()


@dataclass(frozen=True)
class EstimateSpec:
    ref: str
    proposal: str
    tasks: str = "all"
    difficulty: str = "easy,medium"
    prompts: int = 2000
    samples: int = 16
    beta: float = 15.0
    seed: int = 2
    max_tokens: int = 1024
    reward: str = "quality"
    loglik: str = "sum"
    engine: str = "transformers"  # or "vllm" for the proposals (GPU)

    def validate(self) -> None:
        if self.engine not in ("transformers", "vllm"):
            raise UsageError(f"--engine {self.engine!r}: choose transformers or vllm")
        if self.loglik not in ("mean", "sum"):
            raise UsageError(f"--loglik {self.loglik!r}: choose sum or mean (length-normalised)")
        get_reward(self.reward)
        for name in ("samples", "prompts", "max_tokens"):
            if getattr(self, name) < 1:
                raise UsageError(f"--{name.replace('_', '-')} {getattr(self, name)}: at least 1")
        if not (math.isfinite(self.beta) and self.beta >= 0):
            raise UsageError(f"--beta {self.beta}: must be a finite number >= 0")


def load_model(path: str, device):
    """(model, tokenizer) for scoring and sampling, through the loader evaluation uses."""
    from mmnp.evaluation.models import load_hf

    loaded = load_hf(path, device=str(device), vision=False)
    return loaded.model, loaded.tokenizer


class _Proposals(Protocol):
    tokenizer: Any

    def sample(self, prompt_ids: list[int], n: int, max_tokens: int, seed: int,
               loglik: str) -> tuple[list[list[int]], list[float]]:
        """n completions (token ids, EOS included) drawn by plain sampling at temperature 1,
        and log p_T of each under the same convention as the reference's."""


def plain_sampling(tokenizer, max_tokens: int):
    """A GenerationConfig with every logits processor off (transformers' global defaults
    include top_k 50: set to 0 here). Use it under `without_checkpoint_defaults`, or the
    checkpoint's own fields fill whatever this leaves unset."""
    from transformers import GenerationConfig

    return GenerationConfig(do_sample=True, temperature=1.0, top_k=0, top_p=1.0, repetition_penalty=1.0,
                            max_new_tokens=max_tokens, eos_token_id=tokenizer.eos_token_id,
                            pad_token_id=tokenizer.pad_token_id)


@contextmanager
def without_checkpoint_defaults(model):
    """The model's generation_config replaced by a fresh one while generating: transformers
    reads every field a call leaves unset from it, and a processor field has no neutral
    value to pin (forced_eos_token_id, bad_words_ids, ...), so the checkpoint's are kept out
    wholesale."""
    from transformers import GenerationConfig

    saved = model.generation_config
    model.generation_config = GenerationConfig()
    try:
        yield
    finally:
        model.generation_config = saved


class TransformersProposals:
    def __init__(self, model, tokenizer, device) -> None:
        self.model, self.tokenizer, self.device = model, tokenizer, device

    def sample(self, prompt_ids, n, max_tokens, seed, loglik):
        torch.manual_seed(seed)
        ids = torch.tensor([prompt_ids] * n, device=self.device)
        eos = self.tokenizer.eos_token_id
        with torch.no_grad(), without_checkpoint_defaults(self.model):
            generated = self.model.generate(ids, attention_mask=torch.ones_like(ids),
                                            generation_config=plain_sampling(self.tokenizer, max_tokens))
        completions = []
        for row in generated[:, len(prompt_ids) :].tolist():
            completions.append((row[: row.index(eos) + 1] if eos in row else row) or [eos])
        return completions, sequence_logps(self.model, prompt_ids, completions, loglik, self.device)


class VLLMProposals:
    """vLLM samples and reports each sampled token's log-probability: no scoring pass."""

    def __init__(self, path: str) -> None:
        from mmnp.evaluation.models import load_vllm

        # generation_config="vllm": the checkpoint's sampling defaults stay off
        self.llm = load_vllm(path, images_per_prompt=0, generation_config="vllm")
        self.tokenizer = self.llm.get_tokenizer()

    def sample(self, prompt_ids, n, max_tokens, seed, loglik):
        from vllm import SamplingParams

        params = SamplingParams(n=n, temperature=1.0, top_p=1.0, top_k=-1, repetition_penalty=1.0,
                                max_tokens=max_tokens, logprobs=0, seed=seed)
        output = self.llm.generate([{"prompt_token_ids": prompt_ids}], params, use_tqdm=False)[0]
        completions, logps = [], []
        for c in output.outputs:
            tokens = list(c.token_ids)
            token_logps = [step[t].logprob for t, step in zip(tokens, c.logprobs)]
            completions.append(tokens)
            logps.append(sum(token_logps) if loglik == "sum" else sum(token_logps) / max(len(token_logps), 1))
        return completions, logps


def shared_vocabulary(a, b) -> bool:
    """Whether two tokenizers map the same ids to the same tokens and end on the same EOS: then a
    proposal's sampled ids are scored under the reference as they are, not as re-tokenized text."""
    return a is b or (a.eos_token_id == b.eos_token_id and a.get_vocab() == b.get_vocab())


def for_reference(completion: list[int], prop_tok, ref_tok) -> list[int]:
    """A completion sampled with another vocabulary, as the reference's tokens: its text
    re-tokenized, with the reference's EOS only where the proposal ended on its own (a completion
    cut at --max-tokens has none, as training scores it), so both log-likelihoods in a label
    are of one answer."""
    ended = bool(completion) and completion[-1] == prop_tok.eos_token_id
    text = prop_tok.decode(completion[:-1] if ended else completion, skip_special_tokens=True)
    end = [ref_tok.eos_token_id] if ended and ref_tok.eos_token_id is not None else []  # a reference with no EOS
    return ref_tok(text, add_special_tokens=False)["input_ids"] + end


def estimation_prompts(spec: EstimateSpec):
    from mmnp.trainers.data import training_instances

    difficulties = spec.difficulty.split(",")
    names = [t.name for t in list_tasks()] if spec.tasks == "all" else spec.tasks.split(",")
    per_cell = math.ceil(spec.prompts / (len(names) * len(difficulties)))
    instances = training_instances(spec.tasks, difficulties, per_cell, spec.seed)
    # interleave tasks so a smaller --prompts still covers every task
    cells: dict[tuple[str, str], list] = {}
    for inst in instances:
        cells.setdefault((inst.task, inst.difficulty), []).append(inst)
    ordered = [cell[i] for i in range(per_cell) for cell in cells.values() if i < len(cell)]
    return ordered[: spec.prompts]


def estimate(spec: EstimateSpec, out: str | Path, progress: Callable[[int, int], None] | None = None,
             device: str | None = None) -> Path:
    """Write `labels.jsonl` (one line per prompt) and `estimate.json` to `out`; resumable."""
    spec.validate()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tasks = [t.name for t in list_tasks()]  # the size features' one-hot, stored with the estimate
    # the models by folder (whatever path names them, or their hub id) and by their files' content
    meta = {**spec.__dict__, "size_tasks": tasks, "ref_path": model_identity(spec.ref),
            "proposal_path": model_identity(spec.proposal), "ref_weights": weights_fingerprint(spec.ref),
            "proposal_weights": weights_fingerprint(spec.proposal)}
    meta_path = out / ESTIMATE
    if meta_path.exists():  # a resumed estimate: its labels so far must come from the same models and settings
        stored = json.loads(meta_path.read_text())
        same_files = {f"{role}_path" for role in ("ref", "proposal")  # a local folder is its files, wherever it is
                      if meta[f"{role}_weights"] is not None and stored.get(f"{role}_weights") == meta[f"{role}_weights"]}
        differ = [f"{key} {stored.get(key)!r} -> {value!r}" for key, value in meta.items()
                  if key not in ("ref", "proposal", *same_files) and stored.get(key) != value]
        if differ:
            raise UsageError(f"{out} holds an estimate with other settings ({'; '.join(differ)}); resume it with its "
                             "own, or use another --out")
    atomic_write(meta_path, json.dumps(meta, indent=1))
    labels = JsonlLog(out / LABELS, key_of=lambda r: r["id"])  # cuts a torn last line: resumes cleanly
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    if spec.engine == "vllm":  # vLLM first: it claims its share of GPU memory before the reference loads
        proposals: _Proposals = VLLMProposals(spec.proposal)
        ref, ref_tok = load_model(spec.ref, device)
    else:
        ref, ref_tok = load_model(spec.ref, device)
        proposals = TransformersProposals(*((ref, ref_tok) if same_model(spec.proposal, spec.ref)
                                            else load_model(spec.proposal, device)), device)
    prop_tok = proposals.tokenizer
    shared = shared_vocabulary(prop_tok, ref_tok)
    reward = get_reward(spec.reward)
    todo = [inst for inst in estimation_prompts(spec) if inst.id not in labels.records]
    try:
        for k, inst in enumerate(todo):
            messages = [{"role": "user", "content": inst.prompt}]
            ref_prompt, prop_prompt = (
                tok(tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False),
                    add_special_tokens=False)["input_ids"] for tok in (ref_tok, prop_tok))  # as TRL tokenizes
            seed = spec.seed * 1_000_003 + zlib.crc32(inst.id.encode())  # per prompt: resumes identically
            completions, logp_t = proposals.sample(prop_prompt, spec.samples, spec.max_tokens, seed, spec.loglik)
            texts = [prop_tok.decode(c, skip_special_tokens=True) for c in completions]
            rewards = reward(None, texts, [record_payload(inst)] * len(texts))
            ref_completions = completions if shared else [for_reference(c, prop_tok, ref_tok) for c in completions]
            logp_ref = sequence_logps(ref, ref_prompt, ref_completions, spec.loglik, device)
            a = torch.tensor(logp_ref) - torch.tensor(logp_t) + spec.beta * torch.tensor(rewards)
            log_z = log_z_importance_sampling(torch.tensor(logp_ref), torch.tensor(logp_t), torch.tensor(rewards),
                                              spec.beta).item()
            w = torch.exp(a - a.max())
            features = pooled_prompt_features(ref, torch.tensor([ref_prompt], device=device),
                                              torch.ones(1, len(ref_prompt), device=device))[0].tolist()
            labels.append({"id": inst.id, "task": inst.task, "difficulty": inst.difficulty, "log_z": log_z,
                           "ess": (w.sum() ** 2 / (w**2).sum()).item(), "n": spec.samples,
                           "reward_mean": sum(rewards) / len(rewards), "features": features,
                           "size": size_features(record_payload(inst), tasks)})
            if progress:
                progress(k + 1, len(todo))
    finally:
        labels.close()
    return out
