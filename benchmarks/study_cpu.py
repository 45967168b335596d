"""A CPU-scale study of what RL does to a policy on a task with several optimal answers per
instance: SFT, then GRPO and DMPO in both readings (the paper's formulas read exactly, and
the authors' verl recipe; `mmnp.trainers.algorithms.dmpo`), 5 seeds each, scored on
held-out instances before and after RL.

    nice python benchmarks/study_cpu.py                 # the headline: docs/study_cpu.md, docs/images/study_cpu.png
    nice python benchmarks/study_cpu.py --report-only   # the report from the finished units

One command, resumable: each finished unit (the tiny model, the SFT model, each RL run with
its checkpoints every --save-steps, each evaluation) is kept in --out and skipped or
resumed when the command runs again. Sized for a shared 2-core machine (one thread, about
45 CPU-minutes; `--quick` for a smoke run).

Setting: a tiny Qwen2-style model (`mmnp.trainers.tiny_model`, 4 layers of width 96, tokenizer
trained here) on subset sum with 6 numbers of value 1 to 3 (`--params n=6,max_value=3`):
choose numbers that hit the target exactly, as many as possible. Most instances have
several optimal answers (about 5 on average, enumerated here over all 64 subsets), which is
what a mode-covering method should keep and a mode-seeking one may lose. Reward: the
quality ratio (QR; 0 when the sum misses). Held-out instances come from another seed
than the training ones, skipping any whose content hash a training set holds (the space of
such small instances is small enough for draws to collide). Per model, from K samples per
held-out prompt at temperature 1: SR (share feasible), QR, the share of optimal samples,
distinct feasible and distinct optimal answers per prompt (and the share of the prompt's
optimal answers found), and pass@1 / pass@k (unbiased estimator from the K samples).
Seeds vary the RL run (sampling and data order) from one SFT start; every arm of a seed
sees the same prompts in the same order, so arms are compared seed by seed (paired
t-test over the 5 seeds). Each run's movement from the SFT start (parameter distance,
training reward) is recorded, so a run that does not move is reported, not averaged in
silently.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import statistics
import time
from collections import Counter
from pathlib import Path

from mmnp.clikit import script_main

TASK = "subset_sum"
PARAMS = "n=6,max_value=3"
ARMS = {  # name -> (algorithm, options); DMPO at the paper's lambda and alpha in both readings
    "grpo": ("grpo", {}),
    "dmpo-paper": ("dmpo", {"dmpo_recipe": "paper", "dmpo_lambda": 0.5, "dmpo_alpha": 1.0}),
    "dmpo-authors": ("dmpo", {"dmpo_recipe": "authors", "dmpo_lambda": 0.5}),
}
SEEDS = (1, 2, 3, 4, 5)
SFT_SEED, HELD_OUT_SEED = 3, 9001
METRICS = (("sr", "SR"), ("qr", "QR"), ("optimal", "optimal share"), ("distinct_optimal", "distinct optimal / prompt"),
           ("coverage", "optimal answers found"), ("pass1", "pass@1"), ("passk", "pass@k"))


def _atomic_json(path: Path, value) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(value, indent=1))
    os.replace(tmp, path)


def _unit(path: Path, make):
    """Resumability: a finished unit is read back, an unfinished one is (re)made. Each keeps
    the CPU seconds it took (`cpu_s`), so the report's total covers interrupted studies."""
    if path.exists():
        return json.loads(path.read_text())
    began = time.process_time()
    value = make()
    value["cpu_s"] = value.get("cpu_s", 0.0) + time.process_time() - began
    _atomic_json(path, value)
    return value


def instances(count: int, seed: int):
    from mmnp.trainers.data import parse_params, training_instances

    return training_instances(TASK, ["easy"], count, seed, params=parse_params(PARAMS))


def optimal_answers(inst) -> tuple[float, set]:
    """(the best objective, every optimal answer in canonical form), by enumerating all subsets."""
    from mmnp.registry import get_task

    task = get_task(TASK)
    n = len(inst.data["numbers"])
    feasible = {}
    for k in range(n + 1):
        for chosen in itertools.combinations(range(n), k):
            objective, _ = task.verifier.check(inst.data, list(chosen))
            if objective is not None:
                feasible[task.verifier.canonical(inst.data, list(chosen))] = objective
    best = max(feasible.values())
    exact = (inst.reference.get("optimal") or {}).get("objective")
    assert exact is None or exact == best, f"{inst.id}: enumeration {best} vs the exact solver's {exact}"
    return best, {c for c, o in feasible.items() if o == best}


def pass_at(n: int, c: int, k: int) -> float:
    """The unbiased pass@k from n samples with c correct (Chen et al. 2021)."""
    return 1.0 if n - c < k else 1.0 - math.comb(n - c, k) / math.comb(n, k)


def evaluate(model_dir: str, held_out, k: int, pass_k: int, max_new_tokens: int, seed: int = 0) -> dict:
    """K samples per prompt at temperature 1 (plain sampling); per-prompt verdicts and the summary."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    from mmnp.registry import get_task
    from mmnp.trainers.rewards import record_payload, score

    tok = AutoTokenizer.from_pretrained(model_dir, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    plain = GenerationConfig(do_sample=True, temperature=1.0, top_k=0, top_p=1.0, max_new_tokens=max_new_tokens,
                             num_return_sequences=k, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
    torch.manual_seed(seed)
    task = get_task(TASK)
    per_prompt, answers = [], Counter()
    for start in range(0, len(held_out), 16):
        chunk = held_out[start : start + 16]
        texts = [tok.apply_chat_template([{"role": "user", "content": i.prompt}], tokenize=False,
                                         add_generation_prompt=True) for i in chunk]
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        with torch.no_grad():
            out = model.generate(**enc, generation_config=plain)
        decoded = tok.batch_decode(out[:, enc["input_ids"].size(1):], skip_special_tokens=True)
        for j, inst in enumerate(chunk):
            payload = record_payload(inst)
            best, optimal = optimal_answers(inst)
            feasible, ratios, found, optimal_hits = [], [], set(), 0
            for text in decoded[j * k : (j + 1) * k]:
                verdict, ratio = score(text, payload)
                feasible.append(verdict.feasible)
                ratios.append(ratio)
                if not verdict.parsed:
                    answers["unparsed"] += 1
                elif not verdict.feasible:
                    answers["infeasible"] += 1
                else:
                    answer = task.verifier.canonical(inst.data, verdict.solution)
                    found.add(answer)
                    optimal_hits += answer in optimal
                    answers["optimal" if answer in optimal else "feasible, not optimal"] += 1
            per_prompt.append({"id": inst.id, "sr": sum(feasible) / k, "qr": sum(ratios) / k, "optimal": optimal_hits / k,
                               "distinct_feasible": len(found), "distinct_optimal": len(found & optimal),
                               "available_optimal": len(optimal), "coverage": len(found & optimal) / len(optimal),
                               "pass1": pass_at(k, sum(feasible), 1), "passk": pass_at(k, sum(feasible), pass_k)})
    return {"per_prompt": per_prompt, "answers": dict(answers), **summary(per_prompt)}


def summary(per_prompt: list[dict]) -> dict:
    out = {}
    for key in [m for m, _ in METRICS] + ["distinct_feasible", "available_optimal"]:
        values = [p[key] for p in per_prompt]
        out[key] = statistics.fmean(values)
        out[key + "_se"] = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0
    return out


def run_rl(arm: str, seed: int, sft_dir: str, out: Path, args) -> dict:
    """One RL run from the SFT model (resuming from its last checkpoint); the saved model's
    folder and how far it moved: parameter distance from the SFT start and the training
    reward of the first and last logged steps."""
    from transformers import AutoModelForCausalLM, PrinterCallback, ProgressCallback

    from mmnp.trainers.spec import TrainSpec
    from mmnp.trainers.train import build_trainer, train

    algo, options = ARMS[arm]
    folder = out / "runs" / f"{arm}-s{seed}"
    spec = TrainSpec(algo=algo, model=sft_dir, output_dir=str(folder), tasks=TASK, difficulty="easy", params=PARAMS,
                     count=args.train_count, seed=seed, reward="quality", max_steps=args.steps, num_generations=8,
                     per_device_train_batch_size=8 * args.prompts_per_step, max_completion_length=args.max_new_tokens,
                     learning_rate=args.lr, temperature=1.0, report_to="none", save_steps=args.save_steps,
                     logging_steps=1, beta=0.0, options=dict(options))
    trainer = build_trainer(spec)
    for quiet in (PrinterCallback, ProgressCallback):  # the study prints its own lines
        trainer.remove_callback(quiet)
    train(trainer, spec)
    start = dict(AutoModelForCausalLM.from_pretrained(sft_dir).named_parameters())
    moved = math.sqrt(sum(float(((p.detach() - start[n].detach()) ** 2).sum())
                          for n, p in trainer.accelerator.unwrap_model(trainer.model).named_parameters()))
    rewards = [h["reward"] for h in trainer.state.log_history if "reward" in h]
    l_dm = [h["dmpo/l_dm"] for h in trainer.state.log_history if "dmpo/l_dm" in h]
    return {"folder": str(folder), "moved": moved, "reward_first": rewards[0] if rewards else None,
            "reward_last5": statistics.fmean(rewards[-5:]) if rewards else None,
            "l_dm_mean": statistics.fmean(l_dm) if l_dm else None}


# -- statistics and the report --------------------------------------------------------------------

def t_quantile(df: int) -> float:
    from scipy import stats

    return float(stats.t.ppf(0.975, df))


def mean_ci(values: list[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95% t-interval (nan from one value)."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, float("nan")
    return mean, t_quantile(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))


def paired(a: list[float], b: list[float]) -> tuple[float, float, float]:
    """(mean of a - b, its 95% half-width, two-sided p of the paired t-test) over seeds."""
    from scipy import stats

    diffs = [x - y for x, y in zip(a, b)]
    mean, half = mean_ci(diffs)
    if len(diffs) < 2:
        return mean, half, float("nan")
    if statistics.pstdev(diffs) == 0:  # every seed the same difference: certain, or none at all
        return mean, half, float("nan") if mean == 0 else 0.0
    return mean, half, float(stats.ttest_rel(a, b).pvalue)


def report(results: dict, runs: dict, sft_eval: dict, args, seeds: list[int], docs: Path, cpu_minutes: float) -> str:
    """docs/study_cpu.md and its plot from the finished units; returns the markdown."""
    arms = [a for a in ARMS if results.get(a)]
    fmt = lambda key, v: f"{v:.2f}" if key.startswith("distinct") else f"{v:.3f}"  # noqa: E731
    lines = ["# CPU-scale study: GRPO and both readings of DMPO on a task with several optimal answers", "",
             f"Generated by `nice python benchmarks/study_cpu.py` ({cpu_minutes:.0f} CPU-minutes over its units, "
             f"one thread). Model: tiny Qwen2-style ({args.layers} layers, width {args.hidden}), SFT {args.sft_steps} "
             f"steps on one reference answer per training instance, then {args.steps} RL steps per arm and seed "
             f"({args.prompts_per_step} prompts x G=8, lr {args.lr}, quality reward, beta 0). Task: {TASK} with "
             f"`{PARAMS}`; {args.held_out} held-out instances (seed {HELD_OUT_SEED}), "
             f"{sft_eval['available_optimal']:.2f} optimal answers per instance on average (enumerated), "
             f"K={args.k} samples each at temperature 1; pass@k with k={args.pass_k}.", "",
             "Arms: GRPO (TRL's, mmnp's baseline); DMPO `paper` (reward target softmax(r/alpha), alpha 1, exact "
             "whole-group L_DM, lambda 0.5); DMPO `authors` (the verl recipe: advantage target softmax(A/tau), tau "
             "1/15, L_DM over fragments of 4 group members summed, lambda 0.5). All three take the same numerical "
             "path (DMPO at lambda 0 reproduces GRPO's parameters; tests/test_trainer_behaviour.py).", "",
             f"RL rows: mean +- 95% t-interval over seeds {', '.join(map(str, seeds))}; the SFT row: +- 1.96 SE over "
             "held-out prompts.", "",
             "| model | " + " | ".join(label for _, label in METRICS) + " |", "|---|" + "---|" * len(METRICS)]
    lines.append("| SFT start | " + " | ".join(f"{fmt(k, sft_eval[k])} +- {fmt(k, 1.96 * sft_eval[k + '_se'])}"
                                            for k, _ in METRICS) + " |")
    for arm in arms:
        cells = []
        for key, _ in METRICS:
            mean, half = mean_ci([r[key] for r in results[arm]])
            cells.append(f"{fmt(key, mean)} +- {fmt(key, half)}")
        lines.append(f"| {arm} ({len(results[arm])} seeds) | " + " | ".join(cells) + " |")
    lines += ["", "Paired differences over seeds (each arm against GRPO of the same seed; mean, 95% interval, "
                  "paired t-test p):", "", "| comparison | " + " | ".join(label for _, label in METRICS) + " |",
              "|---|" + "---|" * len(METRICS)]
    for arm in arms[1:]:
        n = min(len(results[arm]), len(results["grpo"]))
        cells = []
        for key, _ in METRICS:
            d, half, p = paired([r[key] for r in results[arm][:n]], [r[key] for r in results["grpo"][:n]])
            cells.append(f"{d:+.3f} +- {half:.3f} (p {p:.2g})")
        lines.append(f"| {arm} - grpo | " + " | ".join(cells) + " |")
    for arm in arms:
        n = len(results[arm])
        cells = []
        for key, _ in METRICS:
            values = [r[key] for r in results[arm]]
            d, half = mean_ci([v - sft_eval[key] for v in values])
            cells.append(f"{d:+.3f} +- {half:.3f}")
        lines.append(f"| {arm} - SFT start ({n} seeds) | " + " | ".join(cells) + " |")
    lines += ["", "Result, as measured (computed from the tables above):", ""] + _verdicts(results, sft_eval, arms)
    lines += ["", "Per seed (SR / QR / distinct optimal per prompt / pass@1; movement: parameter distance from the "
                  "SFT start, training reward first step -> mean of the last 5):", ""]
    for arm in arms:
        lines.append(f"- {arm}: " + "; ".join(
            f"seed {s}: {r['sr']:.3f} / {r['qr']:.3f} / {r['distinct_optimal']:.2f} / {r['pass1']:.3f} "
            f"(moved {runs[arm][i]['moved']:.3f}, reward {runs[arm][i]['reward_first']:.2f} -> "
            f"{runs[arm][i]['reward_last5']:.2f})" for i, (s, r) in enumerate(zip(seeds, results[arm]))))
    still = [f"{a} seed {s}" for a in arms for s, run in zip(seeds, runs[a]) if run["moved"] < 1e-6]
    lines += ["", "Runs that did not move from the SFT start: " + (", ".join(still) if still else "none") + "."]
    keys = ["unparsed", "infeasible", "feasible, not optimal", "optimal"]
    lines += ["", "Answer distribution (share of all held-out samples):", "", "| model | " + " | ".join(keys) + " |",
              "|---|" + "---|" * len(keys)]
    for name, answers in [("SFT start", sft_eval["answers"])] + [(a, _sum_answers(results[a])) for a in arms]:
        total = sum(answers.values())
        lines.append(f"| {name} | " + " | ".join(f"{answers.get(k, 0) / total:.3f}" for k in keys) + " |")
    lines += ["", "![study](images/study_cpu.png)", ""]
    text = "\n".join(lines)
    (docs / "images").mkdir(parents=True, exist_ok=True)
    (docs / "study_cpu.md").write_text(text)
    _plot(results, sft_eval, seeds, docs / "images" / "study_cpu.png")
    return text


def _verdicts(results: dict, sft_eval: dict, arms: list[str]) -> list[str]:
    """One line per finding, in words, with the numbers behind it: what RL did to the SFT
    start, and each DMPO reading against GRPO on diversity and on quality."""
    out = []
    for arm in arms:
        parts = []
        for key, label in (("distinct_optimal", "distinct optimal answers per prompt"), ("sr", "SR"), ("qr", "QR")):
            values = [r[key] for r in results[arm]]
            d, half = mean_ci([v - sft_eval[key] for v in values])
            where = ("one seed: no interval" if math.isnan(half) else
                     f"{'beyond' if abs(d) > half else 'within'} the 95% interval of the seeds")
            parts.append(f"{label} {sft_eval[key]:.3f} -> {statistics.fmean(values):.3f} ({d:+.3f} +- {half:.3f}, "
                         f"{where})")
        out.append(f"- {arm} against the SFT start: " + "; ".join(parts) + ".")
    for arm in arms:
        if arm == "grpo" or "grpo" not in results:
            continue
        n = min(len(results[arm]), len(results["grpo"]))
        parts = []
        for key, label in (("distinct_optimal", "distinct optimal answers per prompt"), ("coverage",
                           "share of the optimal answers found"), ("sr", "SR"), ("qr", "QR")):
            d, half, p = paired([r[key] for r in results[arm][:n]], [r[key] for r in results["grpo"][:n]])
            verdict = ("one seed: no test" if math.isnan(p) else
                       "a difference at the 5% level" if p < 0.05 else "no difference at the 5% level")
            parts.append(f"{label} {d:+.3f} +- {half:.3f} (paired t-test p {p:.2g}: {verdict})")
        out.append(f"- {arm} against GRPO, seed by seed: " + "; ".join(parts) + ".")
    return out


def _sum_answers(evals: list[dict]) -> dict:
    total: Counter = Counter()
    for r in evals:
        total.update(r["answers"])
    return dict(total)


def _plot(results: dict, sft_eval: dict, seeds: list[int], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [("sr", "SR"), ("qr", "QR"), ("distinct_optimal", "distinct optimal answers / prompt"),
             ("coverage", "share of optimal answers found"), ("pass1", "pass@1")]
    arms = [a for a in ARMS if results.get(a)]
    fig, axes = plt.subplots(1, len(shown), figsize=(3.1 * len(shown), 3.4))
    names = ["SFT"] + arms
    for ax, (key, label) in zip(axes, shown):
        means = [sft_eval[key]] + [mean_ci([r[key] for r in results[a]])[0] for a in arms]
        errs = [1.96 * sft_eval[key + "_se"]] + [mean_ci([r[key] for r in results[a]])[1] for a in arms]
        ax.bar(names, means, yerr=errs, capsize=4, color=["#999999", "C0", "C1", "C2"][: len(names)])
        for i, arm in enumerate(arms, start=1):
            values = [r[key] for r in results[arm]]
            ax.scatter([i] * len(values), values, color="k", s=10, zorder=3)
            if arm != "grpo":  # each seed joined to its GRPO run: the paired comparison
                for v, g in zip(values, [r[key] for r in results["grpo"]]):
                    ax.plot([1, i], [g, v], color="k", alpha=0.15, lw=0.8)
        ax.set_title(label, fontsize=9)
        ax.tick_params(axis="x", labelrotation=30, labelsize=8)
    fig.suptitle(f"Held-out {TASK} ({PARAMS}): SFT start vs after RL (bars: mean and 95% interval; dots: seeds "
                 f"{seeds[0]}-{seeds[-1]}, lines: pairs with GRPO)", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/study_cpu", help="working folder (resumable)")
    parser.add_argument("--docs", help="where study_cpu.md and images/study_cpu.png go, created if missing "
                                       "(default: docs, or OUT/docs with --quick)")
    parser.add_argument("--hidden", type=int, default=96)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--sft-steps", type=int, default=300)
    parser.add_argument("--sft-lr", type=float, default=2e-3)
    parser.add_argument("--steps", type=int, default=100, help="RL steps per run")
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--save-steps", type=int, default=10, help="RL checkpoints (an interrupted run resumes)")
    parser.add_argument("--train-count", type=int, default=400)
    parser.add_argument("--held-out", type=int, default=64)
    parser.add_argument("--k", type=int, default=16, help="samples per held-out prompt")
    parser.add_argument("--pass-k", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--prompts-per-step", type=int, default=4, help="prompts per RL step (G = 8 each)")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    parser.add_argument("--arms", default=",".join(ARMS), help="comma-separated, from: " + ", ".join(ARMS))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 2 seeds, 4 steps, 16 held-out prompts")
    parser.add_argument("--report-only", action="store_true", help="write the report from the finished units")
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.steps, args.held_out, args.sft_steps = args.seeds[:2], 4, 16, 20
    docs = Path(args.docs or (Path(args.out) / "docs" if args.quick else "docs"))
    arms = args.arms.split(",")
    unknown = sorted(set(arms) - set(ARMS))
    if unknown:
        parser.error(f"--arms: unknown {', '.join(unknown)}; choose from {', '.join(ARMS)}")

    import torch
    from transformers.utils import logging

    torch.set_num_threads(args.threads)
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    from mmnp.trainers.tiny_model import write_tiny_model
    from mmnp.trainers.sft import SFTSpec, sft

    began = time.process_time()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    train_hashes = {i.hash for s in (SFT_SEED, *args.seeds) for i in instances(args.train_count, s)}
    candidates = instances(8 * args.held_out, HELD_OUT_SEED)
    test = [i for i in candidates if i.hash not in train_hashes][: args.held_out]
    print(f"held-out: {len(test)} instances unseen in training (of the first {candidates.index(test[-1]) + 1} drawn)",
          flush=True)

    def clock() -> str:
        return f"[{(time.process_time() - began) / 60:.1f} CPU-min]"

    base = out / "tiny"
    if not (base / "config.json").exists():
        write_tiny_model(base, hidden=args.hidden, layers=args.layers)
    sft_dir = out / "sft"
    sft_unit = _unit(out / "sft.json", lambda: {"folder": str(sft(SFTSpec(
        model=str(base), out=str(sft_dir), tasks=TASK, difficulty="easy", params=PARAMS, count=args.train_count,
        seed=SFT_SEED, max_steps=args.sft_steps, batch_size=16, learning_rate=args.sft_lr, max_length=1024)))})

    def ev(name: str, model: str) -> dict:
        return _unit(out / "eval" / f"{name}.json", lambda: evaluate(model, test, args.k, args.pass_k,
                                                                      args.max_new_tokens))

    sft_eval = ev("sft", str(sft_dir))
    print(f"{clock()} SFT start: SR {sft_eval['sr']:.3f} QR {sft_eval['qr']:.3f} distinct optimal "
          f"{sft_eval['distinct_optimal']:.2f} of {sft_eval['available_optimal']:.2f}", flush=True)
    results: dict[str, list[dict]] = {a: [] for a in arms}
    runs: dict[str, list[dict]] = {a: [] for a in arms}
    done_seeds = []
    for seed in args.seeds:  # seeds outermost: an interrupted study has every arm at equal seeds
        complete = True
        for arm in arms:
            name = f"{arm}-s{seed}"
            if args.report_only and not (out / "eval" / f"{name}.json").exists():
                complete = False
                continue
            run = _unit(out / "runs" / f"{name}.json", lambda: run_rl(arm, seed, str(sft_dir), out, args))
            r = ev(name, run["folder"])
            results[arm].append(r)
            runs[arm].append(run)
            print(f"{clock()} {name}: SR {r['sr']:.3f} QR {r['qr']:.3f} distinct optimal {r['distinct_optimal']:.2f} "
                  f"pass@1 {r['pass1']:.3f} (moved {run['moved']:.3f})", flush=True)
        if complete:
            done_seeds.append(seed)
        else:  # a partly finished seed stays out of the paired comparison
            for arm in arms:
                if len(results[arm]) > len(done_seeds):
                    results[arm].pop()
                    runs[arm].pop()
    if not done_seeds:
        raise SystemExit("no seed has finished every arm yet: run without --report-only first")
    units = [sft_unit, sft_eval] + [u for arm in arms for u in runs[arm] + results[arm]]
    print(report(results, runs, sft_eval, args, done_seeds, docs, sum(u.get("cpu_s", 0.0) for u in units) / 60))


if __name__ == "__main__":
    raise SystemExit(script_main(main))
