"""The multi-answer toy through the real trainers (tests/multi_answer.py): GRPO and DMPO in both
readings from the same non-Boltzmann start, same seeds, steps and lr; per seed, A's share of the
two equally rewarded answers (0.5: an even split), the distribution over the answers and KL to
the Boltzmann target. Then the push of L_DM on a completion relative to GRPO's, per unit
lambda, in both readings, and the lambda at which the exact reading pushes as hard as the
authors' at the paper's 0.5.

    python benchmarks/multi_answer.py [--seeds 0 1 2] [--authors 0.3 0.5] [--paper 0.5 100 3000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mmnp.clikit import script_main

sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))


def pushes(batches: int, g: int, groups: int, fragment: int, probabilities, rewards, seed: int = 0) -> dict:
    """Mean over sampled steps of |dL/dphi| per unit lambda for each reading, and GRPO's
    |dL_GRPO/dphi| (the surrogate's -A_j / N for one-token answers, ratio 1), when each of
    `groups` groups of `g` answers is drawn from `probabilities` (phi = log-probability)."""
    import torch

    from mmnp.trainers.algorithms.dmpo import Reading
    from mmnp.trainers.base import group_advantages

    generator = torch.Generator().manual_seed(seed)
    probabilities = torch.tensor(probabilities, dtype=torch.float64)
    table = torch.tensor(rewards, dtype=torch.float64)
    paper = Reading("reward", "exact", "keep", alpha=1.0)
    authors = Reading("advantage", "fragments", "keep", tau=1 / 15, fragment_size=fragment)
    norms = {"grpo": [], "paper": [], "authors": []}
    for _ in range(batches):
        answers = torch.multinomial(probabilities, groups * g, replacement=True, generator=generator).view(groups, g)
        phi, r = probabilities.log()[answers], table[answers]
        adv = group_advantages(r)
        norms["grpo"].append(float((adv / adv.numel()).norm()))
        norms["paper"].append(float(paper.loss_and_gradient(phi, r, adv)[1].norm()))
        norms["authors"].append(float(authors.loss_and_gradient(phi, r, adv)[1].norm()))
    return {k: statistics.fmean(v) for k, v in norms.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--authors", type=float, nargs="+", default=[0.3, 0.5], help="lambdas of the authors' recipe")
    parser.add_argument("--paper", type=float, nargs="+", default=[0.5, 100.0, 3000.0],
                        help="lambdas of the exact reading")
    parser.add_argument("--variants", action="store_true",
                        help="also the authors' recipe with flat fragments skipped (grpo_dmpo_zero) and fragments of 2/8")
    parser.add_argument("--alpha", type=float, default=1.0)
    parser.add_argument("--model", type=Path, help="a tiny model folder (default: `mmnp tiny-model`'s, built here)")
    args = parser.parse_args()

    import torch
    from multi_answer import ANSWERS, REWARDS, SETTINGS, START, a_share, boltzmann, kl, start_model, train
    from transformers.utils import logging

    from mmnp.trainers.tiny_model import write_tiny_model

    logging.set_verbosity_error()
    logging.disable_progress_bar()
    target = boltzmann(args.alpha)

    def show(q: torch.Tensor) -> str:
        return " ".join(f"{a} {x:.3f}" for a, x in zip(ANSWERS, q.tolist()))

    print(f"rewards {dict(zip(ANSWERS, REWARDS))}; start {show(torch.tensor(START))}; "
          f"Boltzmann target (alpha {args.alpha}): {show(target)}")
    print(f"settings: {SETTINGS}")
    runs = [("GRPO", "grpo", {}), ("DMPO lambda 0", "dmpo", {"dmpo_lambda": 0.0})]
    runs += [(f"authors lambda {lam:g}", "dmpo", {"dmpo_lambda": lam}) for lam in args.authors]
    runs += [(f"paper lambda {lam:g}", "dmpo", {"dmpo_recipe": "paper", "dmpo_lambda": lam, "dmpo_alpha": args.alpha})
             for lam in args.paper]
    if args.variants:
        runs += [("authors 0.5, flat skipped", "dmpo", {"dmpo_lambda": 0.5, "dmpo_flat": "skip"}),
                 ("authors 0.5, fragments of 2", "dmpo", {"dmpo_lambda": 0.5, "dmpo_fragment_size": 2}),
                 ("authors 0.5, fragments of 8", "dmpo", {"dmpo_lambda": 0.5, "dmpo_fragment_size": 8})]
    shares: dict[str, list[float]] = {name: [] for name, _, _ in runs}
    with tempfile.TemporaryDirectory() as tmp:
        base = args.model or write_tiny_model(Path(tmp) / "base", warm_steps=100)
        start = start_model(base, Path(tmp) / "start")
        for seed in args.seeds:
            for name, algo, options in runs:
                began = time.perf_counter()
                q, mass = train(algo, start, Path(tmp) / "out", seed, **options)
                shares[name].append(a_share(q))
                print(f"seed {seed} {name:<28} A/(A+B) {a_share(q):.3f}  {show(q)}  KL {kl(q, target):.4f}  "
                      f"answer mass {mass:.4f}  ({time.perf_counter() - began:.1f} s)", flush=True)
    print("\nA's share of A + B after training, per seed (start 0.786; even split 0.5):")
    for name, values in shares.items():
        print(f"  {name:<28} " + " / ".join(f"{v:.3f}" for v in values))

    g, groups = SETTINGS["num_generations"], SETTINGS["per_device_train_batch_size"] // SETTINGS["num_generations"]
    print("\nPush of L_DM on the completions per unit lambda, |dL_DM/dphi|, against GRPO's |dL/dphi|, "
          "mean over 2000 sampled steps:")
    for label, probabilities, rewards, shape in (
            ("the toy at its start", START, REWARDS, (g, groups)),
            ("0/1 rewards, success rate 0.5, 4 groups of 8", (0.5, 0.5), (1.0, 0.0), (8, 4))):
        for fragment in (2, 4, 8):
            n = pushes(2000, shape[0], shape[1], fragment, probabilities, rewards)
            print(f"  {label}, fragments of {fragment}: paper {n['paper'] / n['grpo']:.4f} x GRPO's, authors "
                  f"{n['authors'] / n['grpo']:.3f} x GRPO's; the exact reading pushes as hard as the authors' at "
                  f"lambda 0.5 from lambda {0.5 * n['authors'] / n['paper']:.0f}")


if __name__ == "__main__":
    raise SystemExit(script_main(main))
