"""DISA's offline stage: the estimator on an explicit toy, estimation throughput on a tiny
model, and the regressor's held-out error against the number of proposals N.

    python benchmarks/bench_disa.py [--prompts 60] [--model DIR]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import torch

from mmnp.clikit import script_main
from mmnp.trainers.disa.anchor import fit
from mmnp.trainers.disa.estimate import EstimateSpec, estimate, log_z_importance_sampling


def toy_bias(ns=(1, 2, 4, 8, 16, 32, 64), repeats: int = 200_000) -> list[tuple[int, float, float]]:
    """(N, E[log Z_IS] - log Z, its delta-method prediction) on explicit categoricals."""
    pi_ref = torch.tensor([0.4, 0.3, 0.15, 0.1, 0.05], dtype=torch.float64)
    proposal = torch.tensor([0.1, 0.15, 0.25, 0.3, 0.2], dtype=torch.float64)
    reward = torch.tensor([0.0, 0.2, 0.5, 0.8, 1.0], dtype=torch.float64)
    beta = 3.0
    log_z = torch.log((pi_ref * torch.exp(beta * reward)).sum())
    w = pi_ref / proposal * torch.exp(beta * reward)
    cv2 = ((proposal * (w - (proposal * w).sum()) ** 2).sum() / (proposal * w).sum() ** 2).item()
    rows = []
    generator = torch.Generator().manual_seed(0)
    for n in ns:
        draws = torch.multinomial(proposal.expand(repeats, -1), n, replacement=True, generator=generator)
        est = log_z_importance_sampling(pi_ref.log()[draws], proposal.log()[draws], reward[draws], beta)
        rows.append((n, (est.mean() - log_z).item(), -cv2 / (2 * n)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompts", type=int, default=60)
    parser.add_argument("--model", help="reference = proposal model folder (default: a fresh `mmnp tiny-model`)")
    parser.add_argument("--proposal", help="a different proposal model (default: the reference itself)")
    args = parser.parse_args()
    if args.prompts < 5:
        parser.error(f"--prompts {args.prompts}: the regressor's fit needs at least 5 prompts")

    print("toy (pi_ref, proposal explicit over 5 answers, beta 3): bias of log Z_IS")
    print(f"{'N':>5} {'bias':>10} {'-cv^2/2N':>10}")
    for n, bias, predicted in toy_bias():
        print(f"{n:>5} {bias:>10.5f} {predicted:>10.5f}")

    with tempfile.TemporaryDirectory() as tmp:
        model = args.model
        if model is None:
            from mmnp.trainers.tiny_model import write_tiny_model

            model = str(write_tiny_model(Path(tmp) / "tiny", warm_steps=100))
        proposal = args.proposal or model
        print(f"\nestimation and amortisation on {args.prompts} prompts (knapsack, subset_sum, max_clique, easy):")
        print(f"{'N':>4} {'proposals/s':>12} {'label std':>10} {'held-out MSE':>13} {'mean-predictor MSE':>19}")
        for n in (2, 4, 8, 16):
            folder = Path(tmp) / f"n{n}"
            spec = EstimateSpec(ref=model, proposal=proposal, tasks="knapsack,subset_sum,max_clique", difficulty="easy",
                                prompts=args.prompts, samples=n, max_tokens=32, beta=15.0)
            start = time.perf_counter()
            estimate(spec, folder)
            rate = args.prompts * n / (time.perf_counter() - start)
            config = fit(folder)
            labels = torch.tensor([json.loads(line)["log_z"] for line in (folder / "labels.jsonl").read_text().splitlines()])
            print(f"{n:>4} {rate:>12.1f} {labels.std().item():>10.3f} {config['held_out_mse']:>13.4f} "
                  f"{config['held_out_baseline_mse']:>19.4f}")


if __name__ == "__main__":
    raise SystemExit(script_main(main))
