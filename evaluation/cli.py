"""`mmnp eval` and `mmnp leaderboard`: the evaluation layer's commands."""

from __future__ import annotations

import time
from pathlib import Path
from typing import List, Optional

import typer

from mmnp.clikit import console, out_console, progress_bar, split_list, user_errors

app = typer.Typer()


@app.command("eval")
@user_errors
def eval_command(
    model: str = typer.Option(..., help="solver:heuristic|optimal|random, openai:MODEL, hf:PATH or vllm:PATH."),
    data: Optional[Path] = typer.Option(None, help="Dataset folder from `mmnp generate` (else generated on the fly)."),
    tasks: str = typer.Option("all", help="Tasks to evaluate (and to generate, without --data)."),
    difficulty: str = typer.Option("easy,medium,hard", help="Difficulties to evaluate."),
    count: int = typer.Option(10, help="Instances per task and difficulty when generating on the fly."),
    seed: int = typer.Option(0, help="Generation seed (on the fly) and sampling seed."),
    limit: Optional[int] = typer.Option(None, help="At most this many instances per task and difficulty."),
    modality: str = typer.Option("text", help="text, image or both."),
    samples: int = typer.Option(1, help="Samples per instance (NP-Bench: 3 at temperature 0.7)."),
    temperature: float = typer.Option(0.0),
    top_p: float = typer.Option(1.0, "--top-p"),
    max_tokens: int = typer.Option(4096, help="Completion token limit."),
    system_prompt: Optional[str] = typer.Option(None, help="A system message for every request."),
    output_path: Path = typer.Option(Path("results"), help="Results go to OUTPUT_PATH/<model>/."),
    base_url: Optional[str] = typer.Option(None, help="openai: the endpoint, e.g. http://localhost:8000/v1."),
    api_key_env: str = typer.Option("OPENAI_API_KEY", help="openai: environment variable holding the key."),
    concurrency: int = typer.Option(8, help="openai: requests in flight."),
    max_retries: int = typer.Option(5, help="openai: retries on 429/5xx/timeouts."),
    timeout: float = typer.Option(300.0, help="openai: seconds per request."),
    batch_size: int = typer.Option(8, help="hf: generation batch size."),
    rescore: bool = typer.Option(False, help="Recompute verdicts and metrics from stored responses; no model calls."),
) -> None:
    """Evaluate a model (or a baseline solver) and write samples.jsonl and results.json."""
    from mmnp.evaluation.backend import Sampling, make_backend
    from mmnp.evaluation.runner import MODALITIES, EvalConfig, evaluate, model_dir_name
    from mmnp.evaluation.sources import load_instances

    modalities = MODALITIES if modality == "both" else (modality,)
    if any(m not in MODALITIES for m in modalities):
        raise ValueError(f"--modality {modality!r}: choose text, image or both")
    if samples < 1:
        raise ValueError("--samples must be at least 1")
    instances, image_loader, dataset = load_instances(data, tasks, split_list(difficulty), count, seed, limit,
                                                      need_images="image" in modalities)
    backend = None if rescore else make_backend(model, base_url=base_url, api_key_env=api_key_env,
                                                concurrency=concurrency, max_retries=max_retries,
                                                timeout=timeout, batch_size=batch_size)
    config = EvalConfig(model=model, modalities=modalities, samples=samples,
                        sampling=Sampling(temperature, top_p, max_tokens, seed), system_prompt=system_prompt)
    with progress_bar() as bar:
        job = bar.add_task(f"{model}", total=None, rate="")
        started = time.perf_counter()

        def report(done: int, total: int) -> None:
            rate = done / max(time.perf_counter() - started, 1e-9)
            bar.update(job, completed=done, total=total, rate=f"{rate:.1f} samples/s")

        results = evaluate(backend, instances, config, output_path, image_loader=image_loader, dataset=dataset,
                           rescore=rescore, progress=report)
    for m, metrics in results["metrics"].items():
        overall = metrics.get("overall") or {}
        if overall:
            console.print(f"[bold]{model}[/] {m}: SR {100 * overall['sr']:.1f}  QR {100 * overall['qr']:.1f}  "
                          f"SR@1 {100 * overall['sr_at_1']:.1f}  fail {100 * overall['fail_rate']:.1f}%", highlight=False)
    if not results["complete"]:
        console.print(f"[yellow]{results['missing_instances']} instance(s) lack samples (failed calls); "
                      "run the same command again to retry them[/]")
    console.print(f"[green]wrote[/] {Path(output_path) / model_dir_name(model)}/results.json")


@app.command()
@user_errors
def leaderboard(
    paths: List[Path] = typer.Argument(..., help="Output paths of `mmnp eval` (a model folder or a folder of them)."),
    format: str = typer.Option("md", "--format", help="md, csv or html."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="File to write (default: print md/csv)."),
    modality: Optional[str] = typer.Option(None, help="Only this modality (default: every one present)."),
    browser_samples: int = typer.Option(2, help="html: samples per task and model in the sample browser."),
) -> None:
    """The NP-Bench leaderboard (category SR/QR, Overall) plus pass@k and diversity."""
    from mmnp.evaluation.leaderboard import collect, render_csv, render_html, render_markdown

    runs = collect(paths)
    if format == "md":
        text = render_markdown(runs, modality)
    elif format == "csv":
        text = render_csv(runs, modality)
    elif format == "html":
        if out is None:
            raise ValueError("--format html needs --out FILE.html")
        text = render_html(runs, modality, browser_samples=browser_samples)
    else:
        raise ValueError(f"--format {format!r}: choose md, csv or html")
    if out is None:
        out_console.print(text, markup=False, highlight=False, soft_wrap=True)
    else:
        from mmnp.dataset import atomic_write

        atomic_write(out, text)
        console.print(f"[green]wrote[/] {out}")
