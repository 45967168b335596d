"""The multi-answer toy through the real trainers (tests/multi_answer.py): GRPO and DMPO from
the same non-Boltzmann start, same seed, steps and lr; per seed, the policy's distribution
over the answers, the Boltzmann target and KL(policy || target). DMPO is run at each
--lambdas value, to show how strong L_DM must be against GRPO's term here.

    python benchmarks/multi_answer.py [--seeds 0 1 2] [--lambdas 0.5 100 3000] [--alpha 1.0]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--lambdas", type=float, nargs="+", default=[0.5, 100.0, 3000.0])
    parser.add_argument("--alpha", type=float, default=1.0)
    parser.add_argument("--model", type=Path, help="a tiny model folder (default: `mmnp tiny-model`'s, built here)")
    args = parser.parse_args()

    import torch
    from multi_answer import (
        ANSWERS,
        REWARDS,
        SETTINGS,
        START,
        boltzmann,
        kl,
        start_model,
        train,
    )
    from transformers.utils import logging

    from mmnp.tiny_model import write_tiny_model

    logging.set_verbosity_error()
    logging.disable_progress_bar()
    target = boltzmann(args.alpha)

    def show(q: torch.Tensor) -> str:
        return " ".join(f"{a} {x:.3f}" for a, x in zip(ANSWERS, q.tolist()))

    print(f"rewards {dict(zip(ANSWERS, REWARDS))}; start {show(torch.tensor(START))}; "
          f"Boltzmann target (alpha {args.alpha}): {show(target)}")
    print(f"settings: {SETTINGS}")
    with tempfile.TemporaryDirectory() as tmp:
        base = args.model or write_tiny_model(Path(tmp) / "base", warm_steps=100)
        start = start_model(base, Path(tmp) / "start")
        runs = [("grpo", {})] + [("dmpo", {"dmpo_lambda": lam, "dmpo_alpha": args.alpha}) for lam in args.lambdas]
        for seed in args.seeds:
            for algo, options in runs:
                began = time.perf_counter()
                q, mass = train(algo, start, Path(tmp) / "out", seed, **options)
                name = algo + (f" lambda {options['dmpo_lambda']:g}" if options else "")
                print(f"seed {seed} {name:<18} {show(q)}  KL {kl(q, target):.4f}  answer mass {mass:.4f}  "
                      f"({time.perf_counter() - began:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
