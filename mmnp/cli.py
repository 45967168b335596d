"""The `mmnp` command line."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import sys
import time
from pathlib import Path
from typing import Callable, List, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

app = typer.Typer(help="MM-NP-Bench: generate, verify, evaluate and train on NP-hard optimisation tasks.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
console = Console(stderr=True, soft_wrap=True)
out_console = Console()

USER_ERRORS = (ValueError, KeyError, FileExistsError, FileNotFoundError, TypeError)


def user_errors(fn: Callable) -> Callable:
    """Print a user's mistake as one red line and exit 2, instead of a traceback."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except USER_ERRORS as e:
            message = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
            console.print(f"[bold red]error:[/] {escape(message)}", highlight=False)
            raise typer.Exit(2) from None

    return wrapper


def split_list(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def progress_bar() -> Progress:
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("eta"),
                    TimeRemainingColumn(), console=console, transient=False)


def parse_params(params: list[str]) -> dict[str, str]:
    out = {}
    for item in params:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--param {item!r}: expected KEY=VALUE, e.g. --param n=25 or --param tsp.n=20-30")
        out[key.strip()] = value.strip()
    return out


@app.command()
@user_errors
def generate(
    out: Path = typer.Option(..., "--out", "-o", help="Output folder."),
    tasks: Optional[str] = typer.Option(None, help="Comma-separated task names, or 'all'. [default: all]"),
    difficulty: Optional[str] = typer.Option(None, help="Comma-separated difficulties. [default: easy,medium,hard]"),
    count: Optional[int] = typer.Option(None, help="Instances per task and difficulty. [default: 10]"),
    seed: Optional[int] = typer.Option(None, help="Base seed. [default: 0]"),
    preset: Optional[str] = typer.Option(None, help="A canonical release, e.g. mm-np-bench-v1 (fixes tasks, "
                                                    "difficulties, count and seed)."),
    param: List[str] = typer.Option([], help="Generator parameter override KEY=VALUE (e.g. n=25, tsp.n=20-30); repeatable."),
    workers: int = typer.Option(0, help="Worker processes; 0 = all cores. The output does not depend on it."),
    images: bool = typer.Option(True, "--images/--no-images", help="Render PNG images."),
    optimal: bool = typer.Option(True, "--optimal/--no-optimal", help="Run the exact OR-Tools solver for best-known references."),
    image_size: int = typer.Option(768, help="Image height in pixels."),
    time_limit: float = typer.Option(10.0, help="Exact solver's deterministic time limit per instance."),
    overwrite: bool = typer.Option(False, help="Replace an existing dataset in --out."),
) -> None:
    """Generate a benchmark: prompts, images and reference solutions for each instance."""
    from mmnp.dataset import PRESETS, GenerateSpec, generate_dataset
    from mmnp.registry import resolve_tasks

    if preset is not None:
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; available: {', '.join(PRESETS)}")
        clashes = [n for n, v in (("--tasks", tasks), ("--difficulty", difficulty), ("--count", count),
                                  ("--seed", seed), ("--param", param or None)) if v is not None]
        if clashes:
            raise ValueError(f"--preset {preset} fixes {', '.join(clashes)}; drop them or drop --preset")
        fixed = PRESETS[preset]
        tasks, difficulty = fixed["tasks"], ",".join(fixed["difficulties"])
        count, seed = fixed["count"], fixed["seed"]
    spec = GenerateSpec(
        tasks=tuple(t.name for t in resolve_tasks(tasks or "all")),
        difficulties=tuple(split_list(difficulty or "easy,medium,hard")),
        count=10 if count is None else count,
        seed=0 if seed is None else seed,
        images=images,
        optimal=optimal,
        image_size=image_size,
        time_limit=time_limit,
        params=parse_params(param),
    )
    workers = workers or os.cpu_count() or 1
    with progress_bar() as bar:
        job = bar.add_task("generating", total=None, rate="")
        started = [None]

        def report(done: int, total: int) -> None:
            started[0] = started[0] or time.perf_counter()
            elapsed = max(time.perf_counter() - started[0], 1e-9)
            bar.update(job, completed=done, total=total, rate=f"{done / elapsed:.1f} inst/s")

        manifest = generate_dataset(out, spec, workers=workers, overwrite=overwrite, progress=report)
    console.print(f"[green]wrote[/] {manifest['total']} instances to {out} "
                  f"(benchmark hash {manifest['benchmark_hash'][:16]})")


@app.command("tasks")
def list_tasks_command(as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")) -> None:
    """List the registered tasks with their category, objective and difficulty presets."""
    from mmnp.registry import list_tasks

    rows = []
    for task in list_tasks():
        presets = {d: {k: v for k, v in dataclasses.asdict(c).items()} for d, c in task.presets.items()}
        rows.append({"name": task.name, "category": task.category, "objective": task.direction,
                     "violations": list(task.verifier.VIOLATION_KINDS), "presets": presets})
    if as_json:
        out_console.print_json(json.dumps(rows))
        return
    table = Table(title=f"{len(rows)} MM-NP-Bench tasks")
    for col in ("task", "category", "objective", "easy", "medium", "hard"):
        table.add_column(col)
    fmt = lambda v: f"{v[0]}-{v[1]}" if isinstance(v, (list, tuple)) else str(v)  # noqa: E731
    for r in rows:
        cells = [", ".join(f"{k}={fmt(v)}" for k, v in r["presets"].get(d, {}).items()) for d in ("easy", "medium", "hard")]
        table.add_row(r["name"], r["category"], r["objective"], *cells)
    out_console.print(table)


def _answer_text(answer: Optional[str], answer_file: Optional[Path]) -> Optional[str]:
    if answer is not None and answer_file is not None:
        raise ValueError("give --answer or --answer-file, not both")
    if answer_file is not None:
        return sys.stdin.read() if str(answer_file) == "-" else answer_file.read_text(encoding="utf-8")
    return answer


@app.command()
@user_errors
def verify(
    data: Path = typer.Option(..., help="Dataset folder written by `mmnp generate`."),
    id: str = typer.Option(..., "--id", help="Instance id, e.g. tsp-medium-0003."),
    answer: Optional[str] = typer.Option(None, help="The answer text (a model's response)."),
    answer_file: Optional[Path] = typer.Option(None, help="Read the answer from a file ('-' for stdin)."),
    as_json: bool = typer.Option(False, "--json", help="Print the verdict as JSON."),
) -> None:
    """Verify an answer against a dataset instance and print the verdict."""
    from mmnp.dataset import find_instance
    from mmnp.registry import get_task

    text = _answer_text(answer, answer_file)
    if text is None:
        raise ValueError("give the answer with --answer TEXT or --answer-file FILE")
    inst = find_instance(data, id)
    task = get_task(inst.task)
    verdict = task.verify(inst, text)
    ratio = task.quality_ratio(verdict.objective, inst.reference_objective)
    opt_ratio = task.quality_ratio(verdict.objective, inst.best_objective)
    if as_json:
        out_console.print_json(json.dumps({"id": inst.id, **verdict.to_dict(), "ratio": ratio, "opt_ratio": opt_ratio}))
        return
    colour = "green" if verdict.feasible else "red"
    out_console.print(f"[bold]{inst.id}[/] ({task.name}, {task.direction}imise): "
                      f"[{colour}]{escape(verdict.summary())}[/]", highlight=False)
    for v in verdict.violations:
        out_console.print(escape(f"  - [{v.kind}] {v.message}"), highlight=False)
    if verdict.feasible:
        out_console.print(f"  quality ratio {ratio:.3f} (reference {inst.reference_objective:g}), "
                          f"optimality ratio {opt_ratio:.3f} (best known {inst.best_objective:g})")


@app.command()
@user_errors
def show(
    data: Path = typer.Option(..., help="Dataset folder written by `mmnp generate`."),
    id: str = typer.Option(..., "--id", help="Instance id."),
    out: Path = typer.Option(..., "--out", "-o", help="PNG file to write."),
    answer: Optional[str] = typer.Option(None, help="An answer to draw over the instance."),
    answer_file: Optional[Path] = typer.Option(None, help="Read the answer from a file ('-' for stdin)."),
    size: int = typer.Option(768, help="Image height in pixels."),
) -> None:
    """Draw an instance, with an answer and its violations overlaid when one is given."""
    from mmnp.dataset import atomic_write, find_instance
    from mmnp.registry import get_task

    inst = find_instance(data, id)
    png = get_task(inst.task).render(inst, size, answer=_answer_text(answer, answer_file))
    atomic_write(out, png)
    console.print(f"[green]wrote[/] {out}")


def main() -> None:
    app()


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


def _train_command(config: Optional[Path] = None, **flags):
    """Train with GRPO, DMPO, ProGRPO, FlowRL or DISA on MM-NP-Bench (TRL's GRPOTrainer).

    Every flag is also a key of the YAML --config file (flags win). Several GPUs:
    `accelerate launch -m mmnp train ...`.
    """
    try:
        from mmnp.trainers.spec import TrainSpec
        from mmnp.trainers.train import build_trainer
    except ImportError as e:
        raise ValueError(f"training needs the train extra ({e}): pip install 'mmnp[train]'") from None
    spec = TrainSpec.merged(config, flags)
    trainer = build_trainer(spec, console)
    return spec, trainer


def _train_run(**kwargs) -> None:
    spec, trainer = user_errors(_train_command)(**kwargs)  # mistakes in the settings: one red line
    from mmnp.trainers.train import train

    out = train(trainer, spec)  # errors while training keep their traceback
    console.print(f"[green]saved[/] {out}; evaluate it with: mmnp eval --model hf:{out} --data DATA", highlight=False)


def _register_train() -> None:
    """`mmnp train` takes one flag per TrainSpec field, generated so flags and YAML keys never drift."""
    import inspect

    from mmnp.trainers.spec import TRAIN_FIELDS

    params = [inspect.Parameter("config", inspect.Parameter.KEYWORD_ONLY, annotation=Optional[Path],
                                default=typer.Option(None, help="YAML file of settings (keys as the flags, with _)."))]
    for name, kind, help_text in TRAIN_FIELDS:
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=Optional[kind],
                                        default=typer.Option(None, f"--{name.replace('_', '-')}", help=help_text)))

    def command(**kwargs):
        return _train_run(**kwargs)

    command.__signature__ = inspect.Signature(params)  # typer reads the options from here
    command.__doc__ = _train_command.__doc__
    app.command("train")(command)


_register_train()


@app.command("tiny-model")
@user_errors
def tiny_model(
    out: Path = typer.Option(..., "--out", "-o", help="Folder to write the model to."),
    vision: bool = typer.Option(False, help="A Qwen2-VL-style vision-language model instead of a text model."),
    warm_steps: int = typer.Option(100, help="Supervised steps on reference answers, so answers parse sometimes."),
    seed: int = typer.Option(0),
) -> None:
    """Build a tiny Qwen2 / Qwen2-VL model with a locally trained tokenizer (no download)."""
    try:
        from mmnp.tiny_model import write_tiny_model
    except ImportError as e:
        raise ValueError(f"tiny models need the train extra ({e}): pip install 'mmnp[train]'") from None
    path = write_tiny_model(out, vision=vision, seed=seed, warm_steps=warm_steps)
    console.print(f"[green]wrote[/] {'vision-language' if vision else 'text'} model to {path}")


disa_app = typer.Typer(help="DISA: estimate log Z offline, fit its regressor, then `mmnp train --algo disa`.",
                       no_args_is_help=True)
app.add_typer(disa_app, name="disa")


@disa_app.command("estimate")
@user_errors
def disa_estimate(
    ref: str = typer.Option(..., help="The reference model pi_ref (the policy's starting point)."),
    proposal: str = typer.Option(..., help="The proposal (teacher) model p_T that draws the samples."),
    out: Path = typer.Option(..., "--out", "-o", help="Folder for labels.jsonl and estimate.json."),
    tasks: str = typer.Option("all"),
    difficulty: str = typer.Option("easy,medium"),
    prompts: int = typer.Option(2000, help="Prompts to label, spread over tasks and difficulties."),
    samples: int = typer.Option(16, help="Proposals per prompt (N)."),
    beta: float = typer.Option(15.0, help="Tilt beta of the target pi_ref exp(beta r)."),
    reward: str = typer.Option("quality", help="quality, feasible or shaped (train with the same)."),
    loglik: str = typer.Option("mean", help="mean (length-normalised) or sum log-likelihoods."),
    max_tokens: int = typer.Option(1024),
    seed: int = typer.Option(2, help="Prompt generation seed (away from the test set's)."),
    engine: str = typer.Option("transformers", help="Draw proposals with transformers or vllm (GPU)."),
) -> None:
    """Importance-sampling labels log Z_IS(q), one per prompt, with their ESS (resumable)."""
    from mmnp.trainers.disa import EstimateSpec, estimate

    spec = EstimateSpec(ref=ref, proposal=proposal, tasks=tasks, difficulty=difficulty, prompts=prompts,
                        samples=samples, beta=beta, seed=seed, max_tokens=max_tokens, reward=reward, loglik=loglik,
                        engine=engine)
    with progress_bar() as bar:
        job = bar.add_task("estimating log Z", total=None, rate="")
        estimate(spec, out, progress=lambda done, total: bar.update(job, completed=done, total=total))
    console.print(f"[green]wrote[/] {out / 'labels.jsonl'}; next: mmnp disa fit {out}")


@disa_app.command("fit")
@user_errors
def disa_fit(
    folder: Path = typer.Argument(..., help="The folder of `mmnp disa estimate`."),
    hidden: int = typer.Option(64, help="Width of the regressor MLP."),
    epochs: int = typer.Option(500),
) -> None:
    """Fit and freeze g_psi(q); report its held-out error and save a calibration plot."""
    from mmnp.trainers.disa import fit

    config = fit(folder, hidden=hidden, epochs=epochs)
    console.print(f"g_psi: held-out MSE {config['held_out_mse']:.4g} (mean predictor {config['held_out_baseline_mse']:.4g}),"
                  f" train MSE {config['train_mse']:.4g}, {config['n_train']} train / {config['n_held_out']} held-out "
                  f"prompts; calibration plot {folder / 'calibration.png'}", highlight=False)
