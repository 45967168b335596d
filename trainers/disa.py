"""DISA: the partition function estimated before RL and used as a frozen anchor.

1. `estimate`: for each prompt, N proposals from a proposal (teacher) model, their rewards,
   their log-likelihoods under the reference and the proposal, and
   log Z_IS = logsumexp(log pi_ref - log p_T + beta r~) - log N, with the weights' effective
   sample size. Appended per prompt to `labels.jsonl`, so an interrupted run resumes.
2. `fit`: an MLP g_psi(q) on prompt features (the reference model's pooled prompt hidden
   states, and the instance's size features), least squares on a train split, held-out
   MSE and a calibration plot; frozen and saved with its configuration.
3. `DISATrainer`: the anchored residual w_i (g(q) + log pi(o|q) - log pi_ref(o|q) - beta r~)^2,
   no gradient through g, with the estimate's log-likelihood convention, reward and beta.

r~ is the reward itself (not group-normalised), so estimation and training use the same
one; log-likelihoods are length-normalised (`mean`) or summed (`sum`), chosen once.
"""

from __future__ import annotations

import hashlib
import json
import math
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

import torch
from torch import nn
from trl import GRPOConfig

from mmnp.dataset import atomic_write
from mmnp.registry import list_tasks
from mmnp.rewards import COLUMN, REWARDS, record_payload
from mmnp.trainers.algorithms import disa_loss, length_normalised, log_z_importance_sampling
from mmnp.trainers.grpo import MMNPGRPOTrainer

LABELS = "labels.jsonl"
ESTIMATE = "estimate.json"
REGRESSOR = "regressor.pt"
REGRESSOR_CONFIG = "regressor.json"


# -- features -------------------------------------------------------------------------------

def size_features(payload: str) -> list[float]:
    """What the instance itself says about its size: task one-hot, log sizes of its data."""
    record = json.loads(payload)
    names = [t.name for t in list_tasks()]
    data = json.dumps(record["instance"])
    numbers = sum(1 for tok in data.replace("[", " ").replace("]", " ").replace(",", " ").split() if tok.lstrip("-").isdigit())
    return [float(record["task"] == n) for n in names] + [math.log1p(len(data)), math.log1p(numbers),
                                                          math.log1p(abs(record["reference_objective"]))]


def pooled_prompt_features(model, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor) -> torch.Tensor:
    """The model's last hidden state averaged over each prompt's tokens, as float32. Each
    prompt runs unpadded, so its features do not depend on what it was batched with."""
    rows = []
    with torch.no_grad():
        for ids, mask in zip(prompt_ids, prompt_mask):
            real = ids[mask.bool()][None]
            rows.append(model(input_ids=real, output_hidden_states=True).hidden_states[-1][0].float().mean(0))
    return torch.stack(rows)


def sequence_logps(model, prompt_ids: list[int], completions: list[list[int]], loglik: str, device) -> list[float]:
    """log p(o|q) (summed, or averaged over tokens) of each completion, by teacher forcing
    in one right-padded batch."""
    width = max(len(c) for c in completions)
    pad = completions[0][0]
    ids = torch.tensor([prompt_ids + c + [pad] * (width - len(c)) for c in completions], device=device)
    mask = torch.tensor([[1] * len(c) + [0] * (width - len(c)) for c in completions], device=device)
    attention = torch.cat([torch.ones(len(completions), len(prompt_ids), device=device, dtype=mask.dtype), mask], 1)
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=attention).logits[:, len(prompt_ids) - 1 : -1].float()
    token = torch.log_softmax(logits, -1).gather(2, ids[:, len(prompt_ids) :, None]).squeeze(2) * mask
    totals = token.sum(1) if loglik == "sum" else token.sum(1) / mask.sum(1)
    return totals.tolist()


# -- 1. estimation ------------------------------------------------------------------------------

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
    loglik: str = "mean"
    engine: str = "transformers"  # or "vllm" for the proposals (GPU)

    def validate(self) -> None:
        if self.engine not in ("transformers", "vllm"):
            raise ValueError(f"--engine {self.engine!r}: choose transformers or vllm")
        if self.loglik not in ("mean", "sum"):
            raise ValueError(f"--loglik {self.loglik!r}: choose mean (length-normalised) or sum")
        if self.reward not in REWARDS:
            raise ValueError(f"--reward {self.reward!r}: choose one of {', '.join(REWARDS)}")
        if self.samples < 1 or self.prompts < 1:
            raise ValueError("--samples and --prompts must be at least 1")


def _load_causal(path: str, device):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path).to(device).eval()
    return model, tokenizer


class _Proposals(Protocol):
    tokenizer: Any

    def sample(self, prompt_ids: list[int], n: int, max_tokens: int, seed: int,
               loglik: str) -> tuple[list[list[int]], list[float]]:
        """n completions (token ids, EOS included) drawn by plain sampling at temperature 1,
        and log p_T of each under the same convention as the reference's."""


class _TransformersProposals:
    def __init__(self, model, tokenizer, device) -> None:
        self.model, self.tokenizer, self.device = model, tokenizer, device

    def sample(self, prompt_ids, n, max_tokens, seed, loglik):
        torch.manual_seed(seed)
        ids = torch.tensor([prompt_ids] * n, device=self.device)
        eos = self.tokenizer.eos_token_id
        with torch.no_grad():  # plain ancestral sampling: log p_T is the sampling distribution
            generated = self.model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=True, temperature=1.0,
                                            top_k=0, top_p=1.0, max_new_tokens=max_tokens,
                                            pad_token_id=self.tokenizer.pad_token_id)
        completions = []
        for row in generated[:, len(prompt_ids) :].tolist():
            completions.append((row[: row.index(eos) + 1] if eos in row else row) or [eos])
        return completions, sequence_logps(self.model, prompt_ids, completions, loglik, self.device)


class _VLLMProposals:
    """vLLM samples and reports each sampled token's log-probability: no scoring pass."""

    def __init__(self, path: str) -> None:
        try:
            from vllm import LLM
        except ImportError:
            raise ValueError("--engine vllm needs vLLM on a GPU machine: pip install 'mmnp[vllm]'") from None
        self.llm = LLM(model=path)
        self.tokenizer = self.llm.get_tokenizer()

    def sample(self, prompt_ids, n, max_tokens, seed, loglik):
        from vllm import SamplingParams

        params = SamplingParams(n=n, temperature=1.0, top_p=1.0, top_k=-1, max_tokens=max_tokens, logprobs=0,
                                seed=seed)
        output = self.llm.generate([{"prompt_token_ids": prompt_ids}], params, use_tqdm=False)[0]
        completions, logps = [], []
        for c in output.outputs:
            tokens = list(c.token_ids)
            token_logps = [step[t].logprob for t, step in zip(tokens, c.logprobs)]
            completions.append(tokens)
            logps.append(sum(token_logps) if loglik == "sum" else sum(token_logps) / max(len(token_logps), 1))
        return completions, logps


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
    meta = {**spec.__dict__}
    meta_path = out / ESTIMATE
    if meta_path.exists() and json.loads(meta_path.read_text()) != meta:
        raise ValueError(f"{out} holds an estimate with other settings; use another --out or delete it")
    atomic_write(meta_path, json.dumps(meta, indent=1))
    labels = out / LABELS
    done = set()
    if labels.exists():
        raw = labels.read_bytes()
        if raw and not raw.endswith(b"\n"):
            raw = raw[: raw.rfind(b"\n") + 1]
            labels.write_bytes(raw)
        done = {json.loads(line)["id"] for line in raw.decode().splitlines() if line.strip()}
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    ref, ref_tok = _load_causal(spec.ref, device)
    if spec.engine == "vllm":
        proposals: _Proposals = _VLLMProposals(spec.proposal)
    else:
        proposals = _TransformersProposals(*((ref, ref_tok) if spec.proposal == spec.ref
                                             else _load_causal(spec.proposal, device)), device)
    prop_tok = proposals.tokenizer
    reward = REWARDS[spec.reward]
    todo = [inst for inst in estimation_prompts(spec) if inst.id not in done]
    with open(labels, "a", encoding="utf-8") as f:
        for k, inst in enumerate(todo):
            messages = [{"role": "user", "content": inst.prompt}]
            ref_prompt, prop_prompt = (
                tok(tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False),
                    add_special_tokens=False)["input_ids"] for tok in (ref_tok, prop_tok))  # as TRL tokenizes
            seed = spec.seed * 1_000_003 + zlib.crc32(inst.id.encode())  # per prompt: resumes identically
            completions, logp_t = proposals.sample(prop_prompt, spec.samples, spec.max_tokens, seed, spec.loglik)
            texts = [prop_tok.decode(c, skip_special_tokens=True) for c in completions]
            rewards = reward(None, texts, [record_payload(inst)] * len(texts))
            same_model = getattr(proposals, "model", None) is ref
            ref_completions = completions if same_model else \
                [ref_tok(t, add_special_tokens=False)["input_ids"] + [ref_tok.eos_token_id] for t in texts]
            logp_ref = sequence_logps(ref, ref_prompt, ref_completions, spec.loglik, device)
            a = torch.tensor(logp_ref) - torch.tensor(logp_t) + spec.beta * torch.tensor(rewards)
            log_z = log_z_importance_sampling(torch.tensor(logp_ref), torch.tensor(logp_t), torch.tensor(rewards),
                                              spec.beta).item()
            w = torch.exp(a - a.max())
            features = pooled_prompt_features(ref, torch.tensor([ref_prompt], device=device),
                                              torch.ones(1, len(ref_prompt), device=device))[0].tolist()
            f.write(json.dumps({"id": inst.id, "task": inst.task, "difficulty": inst.difficulty, "log_z": log_z,
                                "ess": (w.sum() ** 2 / (w**2).sum()).item(), "n": spec.samples,
                                "reward_mean": sum(rewards) / len(rewards), "features": features,
                                "size": size_features(record_payload(inst))}) + "\n")
            f.flush()
            if progress:
                progress(k + 1, len(todo))
    return out


# -- 2. amortisation ------------------------------------------------------------------------------

class Anchor(nn.Module):
    """g_psi(q): standardised features -> MLP -> log Z, in label units."""

    def __init__(self, width: int, hidden: int = 64) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(width, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU(),
                                 nn.Linear(hidden, 1))
        self.register_buffer("x_mean", torch.zeros(width))
        self.register_buffer("x_std", torch.ones(width))
        self.register_buffer("y_mean", torch.zeros(()))
        self.register_buffer("y_std", torch.ones(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net((x - self.x_mean) / self.x_std).squeeze(-1) * self.y_std + self.y_mean

    @classmethod
    def load(cls, folder: str | Path, device="cpu") -> tuple[Anchor, dict]:
        folder = Path(folder)
        config = json.loads((folder / REGRESSOR_CONFIG).read_text())
        anchor = cls(config["width"], config["hidden"])
        anchor.load_state_dict(torch.load(folder / REGRESSOR, map_location=device))
        return anchor.to(device).eval().requires_grad_(False), config


def _held_out(identifier: str, fraction: float) -> bool:
    return int(hashlib.sha256(identifier.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF < fraction


def fit(folder: str | Path, hidden: int = 64, epochs: int = 500, lr: float = 3e-3, weight_decay: float = 1e-2,
        held_out: float = 0.2, seed: int = 0) -> dict:
    """Fit g_psi to the IS labels by least squares (early-stopped on a validation part of
    the train split); save it, its configuration and a calibration plot (predicted vs
    label on the held-out prompts, which the fit never sees)."""
    folder = Path(folder)
    rows = [json.loads(line) for line in (folder / LABELS).read_text().splitlines() if line.strip()]
    if len(rows) < 5:
        raise ValueError(f"{folder / LABELS} has {len(rows)} labelled prompts; estimate more (at least 5)")
    x = torch.tensor([r["features"] + r["size"] for r in rows])
    y = torch.tensor([r["log_z"] for r in rows])
    test = torch.tensor([_held_out(r["id"], held_out) for r in rows])
    if test.all() or not test.any():
        test = torch.arange(len(rows)) % 5 == 0
    torch.manual_seed(seed)
    anchor = Anchor(x.size(1), hidden)
    anchor.x_mean, anchor.x_std = x[~test].mean(0), x[~test].std(0).clamp(min=1e-6)
    anchor.y_mean, anchor.y_std = y[~test].mean(), y[~test].std().clamp(min=1e-6)
    # early stopping on a validation part of the train split (the held-out part stays unseen)
    train_rows = torch.nonzero(~test).squeeze(1)
    val = train_rows[torch.tensor([_held_out("val:" + rows[i]["id"], 0.2) for i in train_rows.tolist()])]
    fit_rows = train_rows[~torch.isin(train_rows, val)] if len(val) else train_rows
    val = val if len(val) else fit_rows
    optimiser = torch.optim.AdamW(anchor.parameters(), lr=lr, weight_decay=weight_decay)
    best, best_state = float("inf"), None
    for epoch in range(epochs):
        loss = ((anchor(x[fit_rows]) - y[fit_rows]) ** 2).mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        with torch.no_grad():
            val_mse = ((anchor(x[val]) - y[val]) ** 2).mean().item()
        if val_mse < best:
            best, best_state = val_mse, {k: v.clone() for k, v in anchor.state_dict().items()}
    anchor.load_state_dict(best_state)
    anchor.eval().requires_grad_(False)
    pred = anchor(x)
    mse = lambda mask: ((pred[mask] - y[mask]) ** 2).mean().item()  # noqa: E731
    baseline = ((y[test] - y[~test].mean()) ** 2).mean().item()
    estimate = json.loads((folder / ESTIMATE).read_text())
    config = {"width": x.size(1), "hidden": hidden, "feature_dims": {"hidden": len(rows[0]["features"]),
                                                                     "size": len(rows[0]["size"])},
              "train_mse": mse(~test), "held_out_mse": mse(test), "held_out_baseline_mse": baseline,
              "held_out_r2": 1 - mse(test) / baseline if baseline > 0 else None,
              "n_train": int((~test).sum()), "n_held_out": int(test.sum()), "estimate": estimate}
    torch.save(anchor.state_dict(), folder / REGRESSOR)
    atomic_write(folder / REGRESSOR_CONFIG, json.dumps(config, indent=1))
    _calibration_plot(y[test].tolist(), pred[test].tolist(), config, folder / "calibration.png")
    return config


def _calibration_plot(label: list[float], predicted: list[float], config: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 5))
    ax.scatter(label, predicted, s=14, alpha=0.7)
    lo, hi = min(label + predicted), max(label + predicted)
    ax.plot([lo, hi], [lo, hi], "k--", lw=1, label="ideal")
    ax.set_xlabel("log Z (importance-sampling label)")
    ax.set_ylabel("g_psi(q) (prediction)")
    ax.set_title(f"held-out: MSE {config['held_out_mse']:.3g} (mean predictor {config['held_out_baseline_mse']:.3g})",
                 fontsize=9)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# -- 3. anchored training ---------------------------------------------------------------------------

@dataclass
class DISAConfig(GRPOConfig):
    disa_w_max: float = field(default=10.0, metadata={"help": "Clip of the importance weight w_i."})


class DISATrainer(MMNPGRPOTrainer):
    config_class = DISAConfig
    needs_reference = True

    def __init__(self, *args, anchor_dir: str | Path, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.anchor, config = Anchor.load(anchor_dir, self.accelerator.device)
        self.estimate = config["estimate"]
        names = [getattr(f, "__name__", "") for f in self.reward_funcs]
        expected = REWARDS[self.estimate["reward"]].__name__
        if names != [expected]:
            raise ValueError(f"the anchor was estimated with the {self.estimate['reward']} reward; train with "
                             f"--reward {self.estimate['reward']} so r~ is the same")
        if self.temperature != 1.0:
            raise ValueError("DISA needs --temperature 1.0: the anchor's log-likelihoods were taken at 1.0")

    def _generate_and_score_completions(self, inputs):
        self._rows = [x[COLUMN] for x in inputs]
        return super()._generate_and_score_completions(inputs)

    def on_scored(self, batch: dict) -> dict:
        if "pixel_values" in batch:
            raise ValueError("DISA's anchor is estimated on text prompts; train it with --modality text")
        ref = self.accelerator.unwrap_model(self.ref_model)
        rows, inverse = self.unique_prompts(batch)
        hidden = pooled_prompt_features(ref, batch["prompt_ids"][rows], batch["prompt_mask"][rows])[inverse]
        size = torch.tensor([size_features(p) for p in self._rows], device=hidden.device)
        with torch.no_grad():
            batch["disa_anchor"] = self.anchor(torch.cat([hidden, size], dim=1))
        if "ref_per_token_logps" not in batch:
            batch["ref_per_token_logps"] = self.no_grad_logps(self.ref_model, batch)
        batch["disa_reward"] = self.local_slice(self._rewards.to(hidden.device), hidden.size(0))
        return batch

    def _loglik(self, token_logps: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return length_normalised(token_logps, mask) if self.estimate["loglik"] == "mean" else (token_logps * mask).sum(-1)

    def extend_loss(self, loss, inputs, logps):
        mask = self.completion_mask(inputs)
        old = inputs.get("old_per_token_logps")
        old = logps.detach() if old is None else old
        weight = torch.exp(((logps - old) * mask).sum(-1)).clamp(max=self.args.disa_w_max)
        anchored, residual = disa_loss(inputs["disa_anchor"], self._loglik(logps, mask),
                                       self._loglik(inputs["ref_per_token_logps"], mask), inputs["disa_reward"],
                                       weight, self.estimate["beta"])
        self.log_metric("disa/residual", residual.abs().mean().item())
        self.log_metric("disa/anchor", inputs["disa_anchor"].mean().item())
        scale = self.current_gradient_accumulation_steps if self.mode == "train" else 1
        return anchored / scale  # replaces GRPO's surrogate
