"""DISA step 2: the amortised anchor g_psi(q), an MLP on prompt features (the reference
model's pooled prompt hidden states, and the instance's size features), fitted by least
squares to the importance-sampling labels on a train split, with a held-out MSE and a
calibration plot; then frozen and saved with its configuration, including the task list
its size features one-hot over (so adding a task to mmnp does not change an already-fitted
anchor's inputs)."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import torch
from torch import nn

from mmnp.dataset import atomic_write
from mmnp.errors import UsageError

LABELS = "labels.jsonl"
ESTIMATE = "estimate.json"
REGRESSOR = "regressor.pt"
REGRESSOR_CONFIG = "regressor.json"


def size_features(payload: str, tasks: list[str]) -> list[float]:
    """What the instance itself says about its size: a one-hot over `tasks` (the list the
    anchor was built on), and log sizes of its data."""
    record = json.loads(payload)
    data = json.dumps(record["instance"])
    numbers = sum(1 for tok in data.replace("[", " ").replace("]", " ").replace(",", " ").split() if tok.lstrip("-").isdigit())
    return [float(record["task"] == n) for n in tasks] + [math.log1p(len(data)), math.log1p(numbers),
                                                          math.log1p(abs(record["reference_objective"]))]


def pooled_prompt_features(model, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor,
                           forwards: int | None = None) -> torch.Tensor:
    """The model's last hidden state averaged over each prompt's tokens, as float32. Each
    prompt runs unpadded, so its features do not depend on what it was batched with.
    `forwards` pads the number of forward passes (repeating the last prompt, result
    discarded), so that processes holding different numbers of prompts make equally many
    calls: ZeRO-3 gathers parameters collectively inside each forward."""
    rows = []
    with torch.no_grad():
        for ids, mask in zip(prompt_ids, prompt_mask):
            real = ids[mask.bool()][None]
            rows.append(model(input_ids=real, output_hidden_states=True).hidden_states[-1][0].float().mean(0))
        for _ in range((forwards or 0) - len(rows)):
            model(input_ids=prompt_ids[-1:, -1:])
    return torch.stack(rows)


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
        anchor.load_state_dict(torch.load(folder / REGRESSOR, map_location=device, weights_only=True))
        return anchor.to(device).eval().requires_grad_(False), config


def _held_out(identifier: str, fraction: float) -> bool:
    return int(hashlib.sha256(identifier.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF < fraction


def fit(folder: str | Path, hidden: int = 64, epochs: int = 500, lr: float = 3e-3, weight_decay: float = 1e-2,
        held_out: float = 0.2, seed: int = 0) -> dict:
    """Fit g_psi to the IS labels by least squares (early-stopped on a validation part of
    the train split); save it, its configuration and a calibration plot (predicted vs
    label on the held-out prompts, which the fit never sees)."""
    folder = Path(folder)
    if not (folder / LABELS).exists():
        raise UsageError(f"{folder / LABELS} not found: run `mmnp disa estimate --out {folder}` first")
    rows = [json.loads(line) for line in (folder / LABELS).read_text().splitlines() if line.strip()]
    if len(rows) < 5:
        raise UsageError(f"{folder / LABELS} has {len(rows)} labelled prompts; estimate more (at least 5)")
    x = torch.tensor([r["features"] + r["size"] for r in rows])
    y = torch.tensor([r["log_z"] for r in rows])
    test = torch.tensor([_held_out(r["id"], held_out) for r in rows])
    if test.all() or not test.any():
        test = torch.arange(len(rows)) % 5 == 0
    torch.manual_seed(seed)
    anchor = Anchor(x.size(1), hidden)
    # a feature constant over the fit (a task the estimate did not cover) is left unscaled, so a value the fit
    # never saw shifts the input by its raw difference, never by that over a clamped std of 1e-6 (x 10^6)
    std = x[~test].std(0)
    anchor.x_mean, anchor.x_std = x[~test].mean(0), torch.where(std > 1e-6, std, torch.ones_like(std))
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
    if "size_tasks" not in estimate:
        raise UsageError(f"{folder / ESTIMATE} predates stored size features; estimate again into a new folder")
    config = {"width": x.size(1), "hidden": hidden, "size_tasks": estimate["size_tasks"], "feature_dims": {"hidden": len(rows[0]["features"]),
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
