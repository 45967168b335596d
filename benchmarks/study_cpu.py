"""A CPU-scale study that training learns: SFT, then GRPO / DMPO / ProGRPO (FlowRL with
--flowrl), 3 seeds each, scored on held-out instances before and after RL.

    python benchmarks/study_cpu.py [--out runs/study_cpu] [--quick]

One command, resumable: each finished unit (the tiny model, the SFT model, each RL run and
each evaluation) is written to --out and skipped when the command runs again. Writes
docs/study_cpu.md (table) and docs/images/study_cpu.png (plot).

Setting (sized for a quiet 2-core machine: on a quiet machine SFT took 15 s and a tiny
model's RL step about a second; on the shared machine it was written on, under a load
average of 20-30, a step took about a minute, so the defaults are small: 6 RL steps of 2
prompts x G=8): a tiny Qwen2-style model (`mmnp.tiny_model`, 4 layers of width 96,
tokenizer trained here) on knapsack with 4 items (`--params n=4`), the quality reward (QR: the empty knapsack earns 0, so
it cannot be the hack the 0/1 feasibility reward invites; the answer distribution is
reported). Held-out instances come from another seed than the training ones (their content
hashes are checked disjoint). Metrics per model, from K samples per held-out prompt at
temperature 1: SR (share of feasible samples), QR (mean quality ratio), distinct feasible
answers per prompt, pass@K (a feasible answer among the K), and the answer distribution
(empty, unparsed, infeasible, by size). Intervals: 95% t-intervals over the 3 seeds (RL),
and +-1.96 standard errors over held-out prompts (SFT start, and each run).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time
from collections import Counter
from pathlib import Path

TASK = "knapsack"
PARAMS = "n=4"
ALGOS = ("grpo", "dmpo", "progrpo")
SEEDS = (1, 2, 3)
T95 = {2: 12.71, 3: 4.30, 4: 3.18, 5: 2.78}  # two-sided 95% t quantiles by sample size


def _atomic_json(path: Path, value) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(value, indent=1))
    os.replace(tmp, path)


def _unit(path: Path, make):
    """Resumability: a finished unit is read back, an unfinished one is (re)made."""
    if path.exists():
        return json.loads(path.read_text())
    value = make()
    _atomic_json(path, value)
    return value


def held_out(count: int, seed: int):
    from mmnp.trainers.data import parse_params, training_instances

    return training_instances(TASK, ["easy"], count, seed, params=parse_params(PARAMS))


def evaluate(model_dir: str, instances, k: int, max_new_tokens: int, seed: int = 0) -> dict:
    """K samples per prompt at temperature 1; per-prompt verdicts and the summary."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from mmnp.registry import get_task
    from mmnp.rewards import record_payload, score

    tok = AutoTokenizer.from_pretrained(model_dir, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    torch.manual_seed(seed)
    per_prompt, answers = [], Counter()
    task = get_task(TASK)
    for start in range(0, len(instances), 16):
        chunk = instances[start : start + 16]
        texts = [tok.apply_chat_template([{"role": "user", "content": i.prompt}], tokenize=False,
                                         add_generation_prompt=True) for i in chunk]
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        with torch.no_grad():
            out = model.generate(**enc, do_sample=True, temperature=1.0, top_k=0, top_p=1.0, num_return_sequences=k,
                                 max_new_tokens=max_new_tokens, pad_token_id=tok.pad_token_id)
        decoded = tok.batch_decode(out[:, enc["input_ids"].size(1):], skip_special_tokens=True)
        for j, inst in enumerate(chunk):
            payload = record_payload(inst)
            feasible, ratios, distinct = [], [], set()
            for text in decoded[j * k : (j + 1) * k]:
                verdict, ratio = score(text, payload)
                feasible.append(verdict.feasible)
                ratios.append(ratio)
                if not verdict.parsed:
                    answers["unparsed"] += 1
                elif not verdict.feasible:
                    answers["infeasible"] += 1
                else:
                    size = len(verdict.solution)
                    answers["empty" if size == 0 else f"{size} items"] += 1
                    distinct.add(task.verifier.canonical(verdict.solution))
            per_prompt.append({"sr": sum(feasible) / k, "qr": sum(ratios) / k, "distinct": len(distinct),
                               "pass": float(any(feasible))})
    return {"per_prompt": per_prompt, "answers": dict(answers), **summary(per_prompt)}


def summary(per_prompt: list[dict]) -> dict:
    out = {}
    for key in ("sr", "qr", "distinct", "pass"):
        values = [p[key] for p in per_prompt]
        mean = statistics.fmean(values)
        se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0
        out[key], out[key + "_se"] = mean, se
    return out


def run_rl(algo: str, seed: int, model: str, out: Path, args) -> str:
    """One RL run from the SFT model; returns the saved model folder."""
    from mmnp.trainers.spec import TrainSpec
    from mmnp.trainers.train import build_trainer

    folder = out / "runs" / f"{algo}-s{seed}"
    spec = TrainSpec(algo=algo, model=model, output_dir=str(folder), tasks=TASK, difficulty="easy",
                     params=PARAMS, count=args.train_count, seed=seed, reward="quality", max_steps=args.steps,
                     num_generations=8, per_device_train_batch_size=8 * args.prompts_per_step,
                     max_completion_length=args.max_new_tokens,
                     learning_rate=args.lr, temperature=1.0, report_to="none", save_steps=100_000, logging_steps=5,
                     beta=0.0)
    trainer = build_trainer(spec)
    trainer.train()
    trainer.save_model(str(folder))
    return str(folder)


def t_interval(values: list[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95% t-interval (nan from one value)."""
    mean = statistics.fmean(values)
    half = T95[len(values)] * statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else float("nan")
    return mean, half


def report(results: dict, sft_eval: dict, base_eval: dict, args, elapsed: float, docs: Path) -> str:
    rows = [("untrained (random init)", base_eval, None), ("SFT start", sft_eval, None)]
    lines = ["# CPU-scale study: SFT, then RL, on held-out knapsack instances", "",
             f"Generated by `python benchmarks/study_cpu.py` (its last invocation took {elapsed / 60:.0f} min of wall time on a shared 2-core machine). "
             f"Model: tiny Qwen2-style ({args.layers} layers, width {args.hidden}), SFT {args.sft_steps} steps on "
             f"reference answers, then {args.steps} RL steps ({args.prompts_per_step} prompts x G=8, lr {args.lr}, quality reward) per "
             f"algorithm and seed. Task: {TASK} with {PARAMS} items; {args.held_out} held-out instances "
             f"(another seed), K={args.k} samples each at temperature 1.", "",
             "Intervals: RL rows give mean +- 95% t-interval over seeds "
             f"({', '.join(map(str, SEEDS))}); single models give +- 1.96 SE over held-out prompts. "
             "\"vs SFT\" is the RL mean minus the SFT start, and whether it exceeds the seed spread "
             "(largest minus smallest seed).", "",
             "| model | SR | QR | distinct feasible / prompt | pass@K | QR vs SFT |", "|---|---|---|---|---|---|"]
    for name, ev, _ in rows:
        lines.append(f"| {name} | {ev['sr']:.3f} +- {1.96 * ev['sr_se']:.3f} | {ev['qr']:.3f} +- {1.96 * ev['qr_se']:.3f} | "
                     f"{ev['distinct']:.2f} +- {1.96 * ev['distinct_se']:.2f} | {ev['pass']:.3f} +- {1.96 * ev['pass_se']:.3f} | |")
    for algo, per_seed in results.items():
        cells = []
        for key in ("sr", "qr", "distinct", "pass"):
            mean, half = t_interval([r[key] for r in per_seed])
            cells.append(f"{mean:.3f} +- {half:.3f}" if key != "distinct" else f"{mean:.2f} +- {half:.2f}")
        qrs = [r["qr"] for r in per_seed]
        srs = [r["sr"] for r in per_seed]
        gain_qr = statistics.fmean(qrs) - sft_eval["qr"]
        gain_sr = statistics.fmean(srs) - sft_eval["sr"]
        if len(per_seed) > 1:
            beats = gain_qr > max(qrs) - min(qrs) or gain_sr > max(srs) - min(srs)
            verdict = "beyond" if beats else "within"
        else:
            verdict = "one seed only: no spread"
        lines.append(f"| {algo.upper()} after RL ({len(per_seed)} seed{'s' * (len(per_seed) > 1)}) | " +
                     " | ".join(cells) + f" | {gain_qr:+.3f} (SR {gain_sr:+.3f}); {verdict} the seed spread |")
    lines += ["", "Per seed (SR / QR / distinct / pass@K):", ""]
    for algo, per_seed in results.items():
        lines.append(f"- {algo}: " + "; ".join(f"seed {s}: {r['sr']:.3f} / {r['qr']:.3f} / {r['distinct']:.2f} / "
                                                f"{r['pass']:.3f}" for s, r in zip(SEEDS, per_seed)))
    lines += ["", "Answer distribution (share of all held-out samples; the empty knapsack is feasible but earns QR 0):", "",
              "| model | " + " | ".join(_answer_keys(results, sft_eval)) + " |",
              "|---|" + "---|" * len(_answer_keys(results, sft_eval))]
    keys = _answer_keys(results, sft_eval)
    for name, answers in [("SFT start", sft_eval["answers"])] + [
            (f"{a.upper()} ({len(rs)} seeds)", _sum_answers(rs)) for a, rs in results.items()]:
        total = sum(answers.values())
        lines.append(f"| {name} | " + " | ".join(f"{answers.get(k, 0) / total:.3f}" for k in keys) + " |")
    d = {a: statistics.fmean(r["distinct"] for r in rs) for a, rs in results.items()}
    if "grpo" in d and "dmpo" in d:
        lines += ["", f"Diversity as measured: distinct feasible answers per prompt, GRPO {d['grpo']:.2f} vs DMPO "
                      f"{d['dmpo']:.2f} (SFT start {sft_eval['distinct']:.2f})."]
    lines += ["", "![study](images/study_cpu.png)", ""]
    text = "\n".join(lines)
    (docs / "study_cpu.md").write_text(text)
    _plot(results, sft_eval, docs / "images" / "study_cpu.png")
    return text


def _sum_answers(runs: list[dict]) -> dict:
    total: Counter = Counter()
    for r in runs:
        total.update(r["answers"])
    return dict(total)


def _answer_keys(results: dict, sft_eval: dict) -> list[str]:
    keys = set(sft_eval["answers"])
    for runs in results.values():
        for r in runs:
            keys |= set(r["answers"])
    order = ["unparsed", "infeasible", "empty"]
    return [k for k in order if k in keys] + sorted(k for k in keys if k not in order)


def _plot(results: dict, sft_eval: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = [("sr", "SR"), ("qr", "QR"), ("distinct", "distinct feasible / prompt"), ("pass", "pass@K")]
    fig, axes = plt.subplots(1, 4, figsize=(13, 3.2))
    names = ["SFT"] + [a.upper() for a in results]
    for ax, (key, label) in zip(axes, metrics):
        means = [sft_eval[key]] + [t_interval([r[key] for r in rs])[0] for rs in results.values()]
        errs = [1.96 * sft_eval[key + "_se"]] + [t_interval([r[key] for r in rs])[1] for rs in results.values()]
        ax.bar(names, means, yerr=errs, capsize=4, color=["#999999"] + ["C0", "C1", "C2", "C3"][: len(results)])
        for i, rs in enumerate(results.values(), start=1):
            ax.scatter([i] * len(rs), [r[key] for r in rs], color="k", s=10, zorder=3)
        ax.set_title(label)
    fig.suptitle("Held-out knapsack (4 items): SFT start vs after RL (bars: mean, 95% interval; dots: seeds)", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/study_cpu", help="working folder (resumable)")
    parser.add_argument("--docs", default="docs", help="where study_cpu.md and images/study_cpu.png go")
    parser.add_argument("--hidden", type=int, default=96)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--sft-steps", type=int, default=150)
    parser.add_argument("--sft-lr", type=float, default=2e-3)
    parser.add_argument("--steps", type=int, default=6, help="RL steps per run")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--train-count", type=int, default=400)
    parser.add_argument("--held-out", type=int, default=32)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--prompts-per-step", type=int, default=2, help="prompts per RL step (G = 8 each)")
    parser.add_argument("--algos", default=",".join(ALGOS), help="comma-separated, in the order they run")
    parser.add_argument("--flowrl", action="store_true", help="add FlowRL")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--report-only", action="store_true", help="write the report from the finished units")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    from mmnp.tiny_model import write_tiny_model
    from mmnp.trainers.sft import SFTSpec, sft

    start = time.time()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    algos = tuple(args.algos.split(",")) + (("flowrl",) if args.flowrl else ())
    test = held_out(args.held_out, seed=9001)
    train_hashes = {i.hash for i in held_out(args.train_count, seed=3)} | \
        {i.hash for s in SEEDS for i in held_out(args.train_count, seed=s)}
    overlap = sum(i.hash in train_hashes for i in test)
    print(f"held-out: {len(test)} instances, {overlap} also in a training set", flush=True)

    base = out / "tiny"
    if not (base / "config.json").exists():
        write_tiny_model(base, hidden=args.hidden, layers=args.layers)
    sft_dir = out / "sft"
    if not (sft_dir / "mmnp_sft.json").exists():
        sft(SFTSpec(model=str(base), out=str(sft_dir), tasks=TASK, difficulty="easy", params=PARAMS,
                    count=args.train_count, seed=3, max_steps=args.sft_steps, batch_size=16,
                    learning_rate=args.sft_lr, max_length=1024))
    ev = lambda name, model: _unit(out / "eval" / f"{name}.json",  # noqa: E731
                                   lambda: evaluate(model, test, args.k, args.max_new_tokens))
    base_eval = ev("untrained", str(base))
    sft_eval = ev("sft", str(sft_dir))
    print(f"[{(time.time() - start) / 60:.1f} min] SFT start: SR {sft_eval['sr']:.3f} QR {sft_eval['qr']:.3f} "
          f"distinct {sft_eval['distinct']:.2f} pass@{args.k} {sft_eval['pass']:.3f}", flush=True)
    results: dict[str, list[dict]] = {a: [] for a in algos}
    for seed in SEEDS:  # seeds outermost: an interrupted study has every algorithm at equal seeds
        for algo in algos:
            name = f"{algo}-s{seed}"
            done = out / "eval" / f"{name}.json"
            if not done.exists():
                if args.report_only:
                    continue
                run_rl(algo, seed, str(sft_dir), out, args)
            r = ev(name, str(out / "runs" / name))
            results[algo].append(r)
            print(f"[{(time.time() - start) / 60:.1f} min] {name}: SR {r['sr']:.3f} QR {r['qr']:.3f} "
                  f"distinct {r['distinct']:.2f} pass@{args.k} {r['pass']:.3f} answers {r['answers']}", flush=True)
    results = {a: rs for a, rs in results.items() if rs}
    print(report(results, sft_eval, base_eval, args, time.time() - start, Path(args.docs)))


if __name__ == "__main__":
    main()
