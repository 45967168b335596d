"""Training cost of each algorithm relative to GRPO, and the reward functions' throughput.

    python benchmarks/bench_train.py [--steps 8] [--model DIR]

1. Seconds per optimisation step of GRPO, DMPO, ProGRPO and FlowRL on the same tiny model,
   data, batch and seed (a local `mmnp tiny-model` unless --model is given), the first
   step excluded as warm-up (target: the others within +10% of GRPO). Twice: with the
   tiny model's natural short answers, where the extra no-grad forward that exact group
   terms need is a visible share of a step, and with completions forced to
   --completion-length tokens, the regime of reasoning models, where generation dominates.
   Wall seconds, and the process's CPU seconds: on a shared machine other people's load
   adds wall time unevenly across runs, but barely moves CPU time (one torch thread).
2. Completions scored per second by each reward function on `medium` instances, on one
   core (target: >= 20,000/s), with a realistic mix of right, wrong and unparsable answers.
3. `--verifications`: verifier calls per completion in a training step, per algorithm
   (counted, not timed: each completion is verified once, by the reward function).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from transformers import TrainerCallback

import mmnp
from mmnp.clikit import script_main
from mmnp.trainers.rewards import get_reward, record_payload, reward_names
from mmnp.trainers.spec import TrainSpec
from mmnp.trainers.train import build_trainer


class StepTimer(TrainerCallback):
    """Wall and CPU seconds of each optimisation step."""

    def __init__(self) -> None:
        self.times: list[tuple[float, float]] = []
        self._start = (0.0, 0.0)

    def on_step_begin(self, args, state, control, **kwargs):
        self._start = (time.perf_counter(), time.process_time())

    def on_step_end(self, args, state, control, **kwargs):
        self.times.append((time.perf_counter() - self._start[0], time.process_time() - self._start[1]))


def step_times(model: str, steps: int, completion_length: int, forced: bool,
               rounds: int = 2) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) step time per algorithm; `rounds` alternating passes, the lowest
    medians kept (the machine's other load only ever adds time)."""
    out: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for algo in [a for _ in range(rounds) for a in ("grpo", "dmpo", "progrpo", "flowrl")]:
            spec = TrainSpec(algo=algo, model=model, output_dir=str(Path(tmp) / algo), tasks="knapsack,tsp,max_clique",
                             difficulty="easy", count=16, max_steps=steps, num_generations=8,
                             per_device_train_batch_size=16, max_completion_length=completion_length,
                             learning_rate=1e-5, reward="shaped", report_to="none", save_steps=10_000,
                             temperature=1.0)
            trainer = build_trainer(spec)
            if forced:  # every completion runs to the limit, as reasoning answers do (the paper: ~400 tokens)
                trainer.generation_config.min_new_tokens = completion_length
            timer = StepTimer()
            trainer.add_callback(timer)
            trainer.train()
            median = tuple(statistics.median(t[i] for t in timer.times[1:]) for i in (0, 1))
            out[algo] = tuple(map(min, out.get(algo, median), median))
    return out


def verifications_per_completion(model: str, steps: int = 2) -> dict[str, float]:
    """Calls of Task.verify per generated completion over `steps` training steps."""
    from mmnp.task import Task

    calls = [0]
    verify = Task.verify

    def counted(self, *args, **kwargs):
        calls[0] += 1
        return verify(self, *args, **kwargs)

    out = {}
    Task.verify = counted
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for algo in ("grpo", "dmpo", "progrpo", "flowrl"):
                spec = TrainSpec(algo=algo, model=model, output_dir=str(Path(tmp) / algo), tasks="knapsack",
                                 difficulty="easy", count=8, max_steps=steps, num_generations=4,
                                 per_device_train_batch_size=8, max_completion_length=16, reward="shaped",
                                 report_to="none", save_steps=10_000)
                trainer = build_trainer(spec)
                calls[0] = 0
                trainer.train()
                out[algo] = calls[0] / (steps * 8)
    finally:
        Task.verify = verify
    return out


def reward_throughput(n_instances: int = 200) -> dict[str, float]:
    completions, payloads = [], []
    for task in mmnp.list_tasks():
        for seed in range(n_instances // 10):
            inst = task.generate("medium", seed=seed)
            payload = record_payload(inst)
            good = task.format_answer(inst.reference["heuristic"]["solution"])
            wrong = task.format_answer(task.solver.random(inst.data, task.rng("medium", seed + 1)))
            for text in (good, wrong, "Let me think about this step by step.\n" + good, "I am not sure."):
                completions.append(text)
                payloads.append(payload)
    out = {}
    for name in reward_names():  # every registered reward, plug-ins included
        fn = get_reward(name)
        fn(None, completions, payloads)  # warm the row cache, as the G samples of a prompt do
        start = time.perf_counter()
        repeats = 5
        for _ in range(repeats):
            fn(None, completions, payloads)
        out[name] = repeats * len(completions) / (time.perf_counter() - start)
    return out


def main() -> None:
    import torch

    torch.set_num_threads(1)  # one core: steadier timings, and the figure the targets are stated for
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--completion-length", type=int, default=256, help="forced length of the second run")
    parser.add_argument("--model", help="a model folder (default: a fresh `mmnp tiny-model`)")
    parser.add_argument("--verifications", action="store_true", help="only count verifications per completion")
    args = parser.parse_args()
    if args.verifications:
        with tempfile.TemporaryDirectory() as tmp:
            from mmnp.trainers.tiny_model import write_tiny_model

            model = args.model or str(write_tiny_model(Path(tmp) / "tiny", warm_steps=100))
            for algo, n in verifications_per_completion(model).items():
                print(f"  {algo:>8}: {n:.2f} verifications per completion")
        return

    rates = reward_throughput()
    print("reward functions, medium instances, one core:")
    for name, rate in rates.items():
        print(f"  {name:>9}: {rate:,.0f} completions/s")
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model
        if model is None:
            from mmnp.trainers.tiny_model import write_tiny_model

            model = str(write_tiny_model(Path(tmp) / "tiny", warm_steps=100))
        for forced, length in ((False, 64), (True, args.completion_length)):
            times = step_times(model, args.steps, length, forced)
            wall_base, cpu_base = times["grpo"]
            what = f"exactly {length}" if forced else f"<= {length} (the tiny model stops early)"
            print(f"seconds per training step (median of {args.steps - 1}; 16 completions of {what} tokens):")
            for algo, (wall, cpu) in times.items():
                print(f"  {algo:>8}: {wall:.3f} s  ({100 * (wall / wall_base - 1):+.1f}% vs GRPO)   "
                      f"CPU {cpu:.3f} s  ({100 * (cpu / cpu_base - 1):+.1f}% vs GRPO)")


if __name__ == "__main__":
    raise SystemExit(script_main(main))
