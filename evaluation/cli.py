"""`mmnp eval` and `mmnp leaderboard`: the evaluation layer's commands."""

from __future__ import annotations

import time
from pathlib import Path
from typing import List, Optional

import typer

from mmnp.clikit import console, out_console, progress_bar, split_list, user_errors

app = typer.Typer()


def _backends_help() -> str:
    """The epilog of `mmnp eval --help`: each backend and its --model-args options."""
    from mmnp.evaluation.backend import BACKENDS, backend_class, options_help

    lines = ["Backends (--model NAME:TARGET) and their --model-args:"]
    for name in BACKENDS:
        try:
            options = options_help(backend_class(name))
        except ImportError:  # a registered plugin whose module is missing
            continue
        lines.append(f"{name}: " + "; ".join(f"{o} ({t.split('=', 1)[1]}): {h}" for o, t, h in options))
    return "\n\n".join(lines)


@app.command("eval", epilog=_backends_help())
@user_errors
def eval_command(
    model: str = typer.Option(..., help="NAME:TARGET, e.g. solver:heuristic, openai:MODEL, hf:PATH, vllm:PATH."),
    model_args: Optional[str] = typer.Option(None, help="Backend options k=v,... (listed below)."),
    gen_kwargs: Optional[str] = typer.Option(
        None, help="Request fields k=v,... (k=none drops a field)."),
    data: Optional[Path] = typer.Option(None, help="Dataset folder (else generated on the fly)."),
    allow_modified: bool = typer.Option(False, "--allow-modified", help="Evaluate an edited dataset (marked so)."),
    tasks: str = typer.Option("all", help="Tasks to evaluate (and to generate, without --data)."),
    difficulty: str = typer.Option("easy,medium,hard", help="Difficulties to evaluate."),
    count: int = typer.Option(10, help="Instances per task and difficulty (on the fly)."),
    seed: int = typer.Option(0, help="Generation seed (on the fly) and sampling seed."),
    limit: Optional[int] = typer.Option(None, help="At most this many instances per task and difficulty."),
    modality: str = typer.Option("text", help="text, image or both."),
    samples: int = typer.Option(1, help="Samples per instance (NP-Bench: 3 at temperature 0.7)."),
    temperature: float = typer.Option(0.0, help="Sampling temperature (0: greedy)."),
    top_p: float = typer.Option(1.0, "--top-p", help="Nucleus sampling mass, in (0, 1]."),
    max_tokens: int = typer.Option(4096, help="Completion token limit."),
    system_prompt: Optional[str] = typer.Option(None, help="A system message for every request."),
    output_path: Path = typer.Option(Path("results"), help="Results go to OUTPUT_PATH/MODEL/."),
    base_url: Optional[str] = typer.Option(None, help="openai: the endpoint (model-args base_url)."),
    api_key_env: Optional[str] = typer.Option(None, help="openai: variable holding the key."),
    concurrency: Optional[int] = typer.Option(None, help="openai: requests in flight (8)."),
    max_retries: Optional[int] = typer.Option(None, help="openai: retries on 429/5xx/timeouts (5)."),
    timeout: Optional[float] = typer.Option(None, help="openai: seconds per request (300)."),
    batch_size: Optional[int] = typer.Option(None, help="hf: generation batch size (8)."),
    max_fail_rate: float = typer.Option(0.0, help="Exit 0 with up to this fraction of failed samples."),
    skip_image_probe: bool = typer.Option(False, "--skip-image-probe", help="Run images without checking they reach the model."),
    rescore: bool = typer.Option(False, "--rescore", help="Recompute verdicts and metrics; no model calls."),
    rounds: int = typer.Option(1, help="Answers per sample: the verifier's verdict goes back as the next turn."),
    probe: Optional[str] = typer.Option(None, help="transcribe: also ask for the instance read off each picture."),
) -> None:
    """Evaluate a model (or a baseline solver) and write samples.jsonl and results.json.

    Exits 1 when more than --max-fail-rate of the samples failed (rerun to retry them)."""
    from mmnp.errors import RunError, UsageError
    from mmnp.evaluation.backend import Sampling, backend_class, build_options, parse_kwargs, sample_options, split_model
    from mmnp.evaluation.runner import MODALITIES, PROBES, EvalConfig, evaluate, model_dir_name
    from mmnp.evaluation.sources import load_instances

    modalities = MODALITIES if modality == "both" else (modality,)
    if any(m not in MODALITIES for m in modalities):
        raise UsageError(f"--modality {modality!r}: choose text, image or both")
    for name, value, ok, rule in (("--samples", samples, samples >= 1, "at least 1"),
                                  ("--max-tokens", max_tokens, max_tokens >= 1, "at least 1"),
                                  ("--temperature", temperature, temperature >= 0, "0 or more"),
                                  ("--top-p", top_p, 0 < top_p <= 1, "in (0, 1]"),
                                  ("--max-fail-rate", max_fail_rate, 0 <= max_fail_rate <= 1, "in [0, 1]"),
                                  ("--count", count, count >= 1, "at least 1"),
                                  ("--limit", limit, limit is None or limit >= 1, "at least 1"),
                                  ("--rounds", rounds, rounds >= 1, "at least 1")):
        if not ok:
            raise UsageError(f"{name} {value}: must be {rule}")
    if probe is not None and probe not in PROBES:
        raise UsageError(f"--probe {probe!r}: choose {', '.join(PROBES)}")
    name, target = split_model(model)
    flags = {"base_url": base_url, "api_key_env": api_key_env, "concurrency": concurrency,
             "max_retries": max_retries, "timeout": timeout, "batch_size": batch_size}
    options = build_options(name, parse_kwargs(model_args, "--model-args"), flags)
    extra = parse_kwargs(gen_kwargs, "--gen-kwargs")
    for reserved in ("model", "messages"):
        if reserved in extra:
            raise UsageError(f"--gen-kwargs {reserved}: set by mmnp itself (use --model)")
    instances, image_loader, dataset = load_instances(data, tasks, split_list(difficulty), count, seed, limit,
                                                      need_images="image" in modalities or probe is not None,
                                                      allow_modified=allow_modified)
    backend = None if rescore else backend_class(name)(target, options)
    config = EvalConfig(model=model, modalities=modalities, samples=samples,
                        sampling=Sampling(temperature, top_p, max_tokens, seed, extra), system_prompt=system_prompt,
                        model_args=sample_options(options), rounds=rounds, probe=probe,
                        endpoint=getattr(backend, "endpoint", None))
    try:
        with progress_bar() as bar:
            job = bar.add_task(f"{model}", total=None, rate="")
            first: list[float] = []

            def report(done: int, total: int) -> None:
                now = time.perf_counter()
                if not first:  # a rate needs two ticks: the first only starts the clock
                    first.extend((now, done))
                    bar.update(job, completed=done, total=total)
                    return
                rate = (done - first[1]) / max(now - first[0], 1e-9)
                bar.update(job, completed=done, total=total, rate=f"{rate:.1f} samples/s")

            results = evaluate(backend, instances, config, output_path, image_loader=image_loader, dataset=dataset,
                               rescore=rescore, skip_image_probe=skip_image_probe, progress=report)
    except OSError as e:
        raise RunError(f"cannot write {e.filename or output_path}: {e.strerror}; choose another "
                       "--output-path") from None
    for m, metrics in results["metrics"].items():
        overall = metrics.get("overall") or {}
        if m == "probe" and overall:
            console.print(f"[bold]{model}[/] probe: recognition {100 * overall['recognition_accuracy']:.1f}  "
                          f"field F1 {100 * overall['field_f1']:.1f}", highlight=False)
        elif overall:
            console.print(f"[bold]{model}[/] {m}: SR {100 * overall['sr']:.1f}  QR {100 * overall['qr']:.1f}  "
                          f"SR@1 {100 * overall['sr_at_1']:.1f}  fail {100 * overall['fail_rate']:.1f}%",
                          highlight=False)
    where = Path(output_path) / model_dir_name(model)
    console.print(f"[green]wrote[/] {where}/results.json")
    failed, total = results["failed_samples"], results["total_samples"]
    if results["missing_instances"]:
        raise RunError(f"{results['missing_instances']} instance(s) lack samples; run the same command again")
    if failed > max_fail_rate * total:
        raise RunError(f"{failed} of {total} samples failed ({_reasons(where)}); results.json says complete: false. "
                       "Run the same command again to retry them (or allow some with --max-fail-rate)")
    if failed:
        console.print(f"[yellow]{failed} of {total} samples failed (allowed by --max-fail-rate); "
                      "results.json says complete: false[/]")


def _reasons(folder: Path, most: int = 3) -> str:
    """The commonest failure reasons in a run's samples, for the one-line error."""
    from collections import Counter

    from mmnp.records import SAMPLES, read_samples

    errors = Counter((r.get("error") or "?")[:80] for r in read_samples(folder / SAMPLES) if r.get("failed"))
    return "; ".join(f"{n}x {e}" for e, n in errors.most_common(most))


@app.command()
@user_errors
def leaderboard(
    paths: List[Path] = typer.Argument(..., help="Output paths of `mmnp eval` (a model folder or a folder of them)."),
    format: str = typer.Option("md", "--format", help="md, csv or html."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="File to write (default: print md/csv)."),
    modality: Optional[str] = typer.Option(None, help="Only this modality (default: every one present)."),
    browser_samples: int = typer.Option(2, help="html: samples per task and model in the sample browser."),
    mix_datasets: bool = typer.Option(False, "--mix-datasets", help="Rank runs on different datasets together."),
    include_incomplete: bool = typer.Option(False, "--include-incomplete",
                                            help="Rank incomplete runs too (marked so)."),
    stderr: bool = typer.Option(False, "--stderr", help="Show standard errors (md/csv: 52.3 ± 4.1)."),
) -> None:
    """The NP-Bench leaderboard (category SR/QR, Overall) plus pass@k and diversity, one table per dataset."""
    from mmnp.evaluation.leaderboard import leaderboard_command_impl

    text = leaderboard_command_impl(paths, format, out, modality, browser_samples, mix_datasets, include_incomplete,
                                    stderr)
    if text is not None:
        out_console.print(text, markup=False, highlight=False, soft_wrap=True)
