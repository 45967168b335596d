"""`mmnp eval`, `mmnp backends` and `mmnp leaderboard`: the evaluation layer's commands.

Importing this module imports no backend: `mmnp eval --help` lists the backends' names when help
is shown (from the registry's table and the installed plug-ins' metadata), and imports one
backend, for its --model-args, only when `--model NAME:` names it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer
from rich.markup import escape
from rich.table import Table

from mmnp.clikit import console, lazy_epilog, option_value, out_console, progress_bar, split_list, user_errors

if TYPE_CHECKING:
    from mmnp.dataset import Selection
    from mmnp.evaluation.backend import Backend
    from mmnp.evaluation.runner import EvalConfig
    from mmnp.evaluation.schema import Results

app = typer.Typer()


def _eval_epilog(args: list[str]) -> str:
    """`mmnp eval --help`'s epilog: the backends by name (nothing imported), and the --model-args of
    the one `--model NAME:...` names (only that backend is imported)."""
    from mmnp.evaluation.backend import REGISTRY

    entries = REGISTRY.entries()
    builtin = [name for name, e in entries.items() if e.distribution is None]
    plugins = [f"{name} ({e.origin})" for name, e in entries.items() if e.distribution is not None]
    lines = ["Backends (--model NAME:TARGET): " + ", ".join(builtin) + (
        "; plug-ins: " + ", ".join(plugins) if plugins else "") + ". `mmnp backends NAME` (or `mmnp eval "
        "--model NAME: --help`) lists a backend's --model-args."]
    model = option_value(args, "--model")
    name = model.partition(":")[0] if model else None
    if name:
        lines += _options_lines(name)
    return "\n\n".join(map(escape, lines))


def _options_lines(name: str) -> list[str]:
    """The --model-args of backend `name` as help lines, or the one line saying why it cannot load."""
    from mmnp.errors import MMNPError
    from mmnp.evaluation.backend import backend_class, option_docs

    try:
        docs = option_docs(backend_class(name))
    except MMNPError as e:
        return [f"{name}: {e}"]
    return [f"{name}: --model-args " + (", ".join(d.name for d in docs) or "none")] + [
        f"{d.name} ({d.type}{'' if d.required else ' = ' + repr(d.default)}): {d.help}" for d in docs]


@app.command("eval", cls=lazy_epilog(_eval_epilog))
@user_errors
def eval_command(
    model: str = typer.Option(..., help="NAME:TARGET, e.g. solver:heuristic, openai:MODEL, hf:PATH, vllm:PATH."),
    model_args: Optional[str] = typer.Option(None, help="Backend options k=v,... (mmnp backends NAME lists them)."),
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
    from mmnp.dataset import select_instances
    from mmnp.evaluation.backend import Sampling, backend_class, build_options, parse_kwargs, sample_options, split_model
    from mmnp.evaluation.runner import EvalConfig

    modalities = _check_eval_flags(modality, probe, {
        "--samples": samples, "--max-tokens": max_tokens, "--temperature": temperature, "--top-p": top_p,
        "--max-fail-rate": max_fail_rate, "--count": count, "--limit": limit, "--rounds": rounds})
    name, target = split_model(model)
    flags = {"base_url": base_url, "api_key_env": api_key_env, "concurrency": concurrency,
             "max_retries": max_retries, "timeout": timeout, "batch_size": batch_size}
    options = build_options(name, parse_kwargs(model_args, "--model-args"), flags)
    extra = _request_fields(gen_kwargs)
    selection = select_instances(tasks, split_list(difficulty), data=data, count=count, seed=seed, limit=limit,
                                 allow_modified=allow_modified)
    backend = None if rescore else backend_class(name)(target, options)
    config = EvalConfig(model=model, modalities=modalities, samples=samples,
                        sampling=Sampling(temperature, top_p, max_tokens, seed, extra), system_prompt=system_prompt,
                        model_args=sample_options(options), rounds=rounds, probe=probe,
                        endpoint=getattr(backend, "endpoint", None))
    results = _run_with_progress(backend, selection, config, output_path, rescore, skip_image_probe)
    _report(results, model, output_path, max_fail_rate)


# The numeric flags of `mmnp eval`: flag -> (whether a value is allowed, the rule a refusal states)
MAX_ROUNDS = 32  # feedback rounds a sample may take: each is a figure in every group of results.json
RANGES = {
    "--samples": (lambda v: v >= 1, "at least 1"),
    "--max-tokens": (lambda v: v >= 1, "at least 1"),
    "--temperature": (lambda v: v >= 0, "0 or more"),
    "--top-p": (lambda v: 0 < v <= 1, "in (0, 1]"),
    "--max-fail-rate": (lambda v: 0 <= v <= 1, "in [0, 1]"),
    "--count": (lambda v: v >= 1, "at least 1"),
    "--limit": (lambda v: v is None or v >= 1, "at least 1"),
    "--rounds": (lambda v: 1 <= v <= MAX_ROUNDS, f"between 1 and {MAX_ROUNDS} (every round is a column of the tables)"),
}


def _check_eval_flags(modality: str, probe: str | None, numbers: dict[str, float | None]) -> tuple[str, ...]:
    """The modalities `--modality` asks for; a UsageError naming the first flag out of its range."""
    from mmnp.errors import UsageError
    from mmnp.evaluation.runner import MODALITIES, PROBES

    modalities = MODALITIES if modality == "both" else (modality,)
    if any(m not in MODALITIES for m in modalities):
        raise UsageError(f"--modality {modality!r}: choose text, image or both")
    for flag, value in numbers.items():
        allowed, rule = RANGES[flag]
        if not allowed(value):
            raise UsageError(f"{flag} {value}: must be {rule}")
    if probe is not None and probe not in PROBES:
        raise UsageError(f"--probe {probe!r}: choose {', '.join(PROBES)}")
    return modalities


def _request_fields(gen_kwargs: str | None) -> dict:
    """--gen-kwargs as the extra request fields (the model and the messages are mmnp's own)."""
    from mmnp.errors import UsageError
    from mmnp.evaluation.backend import parse_kwargs

    extra = parse_kwargs(gen_kwargs, "--gen-kwargs")
    for reserved in ("model", "messages"):
        if reserved in extra:
            raise UsageError(f"--gen-kwargs {reserved}: set by mmnp itself (use --model)")
    return extra


def _run_with_progress(backend: Backend | None, selection: Selection, config: EvalConfig, output_path: Path,
                       rescore: bool, skip_image_probe: bool) -> Results:
    """`evaluate` under a progress bar showing samples per second (from the second tick on)."""
    from mmnp.errors import RunError
    from mmnp.evaluation.runner import evaluate

    try:
        with progress_bar() as bar:
            job = bar.add_task(f"{config.model}", total=None, rate="")
            first: list[float] = []

            def report(done: int, total: int) -> None:
                now = time.perf_counter()
                if not first:  # a rate needs two ticks: the first only starts the clock
                    first.extend((now, done))
                    bar.update(job, completed=done, total=total)
                    return
                rate = (done - first[1]) / max(now - first[0], 1e-9)
                bar.update(job, completed=done, total=total, rate=f"{rate:.1f} samples/s")

            return evaluate(backend, selection.instances, config, output_path, image_loader=selection.image,
                            dataset=selection.identity, rescore=rescore, skip_image_probe=skip_image_probe,
                            progress=report, notice=lambda line: console.print(f"[yellow]{escape(line)}[/]"))
    except OSError as e:
        raise RunError(f"cannot write {e.filename or output_path}: {e.strerror}; choose another "
                       "--output-path") from None


def _report(results: Results, model: str, output_path: Path, max_fail_rate: float) -> None:
    """The run's headline numbers, where they were written, and exit 1 when too many samples failed."""
    from mmnp.errors import RunError
    from mmnp.evaluation.runner import model_dir_name

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
    _warn_empty_answers(where)
    failed, total = results["failed_samples"], results["total_samples"]
    if results["missing_instances"]:
        raise RunError(f"{results['missing_instances']} instance(s) lack samples; run the same command again")
    if failed > max_fail_rate * total:
        raise RunError(f"{failed} of {total} samples failed ({_reasons(where)}); results.json says complete: false. "
                       "Run the same command again to retry them (or allow some with --max-fail-rate)")
    if failed:
        console.print(f"[yellow]{failed} of {total} samples failed (allowed by --max-fail-rate); "
                      "results.json says complete: false[/]")


def _warn_empty_answers(folder: Path) -> None:
    """Say so when half the answers or more are empty: scored as wrong, as given, but more likely the
    server's doing (a reasoning parser that keeps the answer in `reasoning_content`, which mmnp does not
    score, or --max-tokens spent on reasoning) than the model's."""
    from mmnp.samplelog import SAMPLES, read_samples

    answers: list[tuple[object, object]] = []  # (response, finish_reason), every --rounds round's included
    for record in read_samples(folder / SAMPLES):
        answers += [(turn[0], None) for turn in record.get("history") or []]
        if not record.get("failed"):
            answers.append((record.get("response"), record.get("finish_reason")))
    empty = [finish for response, finish in answers if not str(response or "").strip()]
    if answers and 2 * len(empty) >= len(answers):
        stopped = empty.count("length")
        console.print(f"[yellow]{len(empty)} of {len(answers)} answers are empty ({stopped} stopped at --max-tokens), "
                      "scored as wrong: a server's reasoning parser may keep the answer in reasoning_content, which "
                      "mmnp does not score; check the server's settings, or raise --max-tokens[/]", highlight=False)


def failure_kind(error: str) -> str:
    """A failure reason with its numbers (token counts, sizes) as #, an HTTP status kept: `HTTP 400` and
    `HTTP 429` are other kinds, `... 1001 tokens` and `... 1003 tokens` one."""
    import re

    return re.sub(r"(?<!HTTP )(?<![\d.])\d+(\.\d+)?", "#", error)


def _reasons(folder: Path, most: int = 3, width: int = 200) -> str:
    """The commonest failure reasons in a run's samples, for the one-line error: reasons that differ
    only in their numbers (token counts, sizes) are one kind, shown by its first example, cut at a
    word within `width` characters."""
    from collections import Counter

    from mmnp.samplelog import SAMPLES, read_samples

    kinds: Counter[str] = Counter()
    example: dict[str, str] = {}
    for record in read_samples(folder / SAMPLES):
        if record.get("failed"):
            error = " ".join(str(record.get("error") or "?").split())
            kind = failure_kind(error)
            kinds[kind] += 1
            example.setdefault(kind, error)
    shown = [(n, example[kind]) for kind, n in kinds.most_common(most)]
    return "; ".join(f"{n}x {e if len(e) <= width else e[:width].rsplit(' ', 1)[0] + ' ...'}" for n, e in shown)


@app.command("backends")
@user_errors
def backends_command(
    name: Optional[str] = typer.Argument(None, help="A backend: show its --model-args (imports it)."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """List the backends of `mmnp eval --model NAME:TARGET` (built-in and plug-ins), or one backend's options.

    Listing imports no backend; naming one imports it alone (a plug-in that fails says so in one line)."""
    import json

    from mmnp.evaluation.backend import REGISTRY

    if name is not None:
        _show_backend(name, as_json)
        return
    rows = [{"name": e.name, "origin": e.origin, "target": e.where} for e in REGISTRY.entries().values()]
    for line in REGISTRY.problems():
        console.print(f"[yellow]not offered:[/] {escape(line)}", highlight=False)
    if as_json:
        out_console.print_json(json.dumps(rows))
        return
    _print_rows(("backend", "origin", "target"), [list(r.values()) for r in rows], "mmnp eval backends")


def _show_backend(name: str, as_json: bool) -> None:
    """`mmnp backends NAME`: where the backend comes from, what it is, and its --model-args."""
    import json

    from mmnp.evaluation.backend import REGISTRY, backend_class, option_docs

    entry = REGISTRY.entry(name)  # an unknown name is refused before anything is imported
    cls = backend_class(name)
    docs = option_docs(cls)
    if as_json:
        out_console.print_json(json.dumps({"name": name, "origin": entry.origin, "target": entry.where,
                                           "options": [vars(d) for d in docs]}, default=repr))
        return
    summary = (cls.__doc__ or "").strip().split("\n\n")[0]
    out_console.print(escape(f"{name} ({entry.origin}, {entry.where})" + (f": {' '.join(summary.split())}"
                                                                          if summary else "")), highlight=False)
    cells = [[d.name, d.type, "(required)" if d.required else repr(d.default), d.help + (
        " [changes what a sample is]" if d.sample else "")] for d in docs]
    _print_rows(("option", "type", "default", "help"), cells, f"--model-args of {name} (k=v,...)")


def _print_rows(columns: tuple[str, ...], cells: list[list[str]], title: str) -> None:
    """A table on a terminal; whole values, one tab-separated line per row, when piped."""
    if not out_console.is_terminal:
        for line in (columns, *cells):
            typer.echo("\t".join(line))
        return
    table = Table(title=title)
    for col in columns:
        table.add_column(col, overflow="fold")
    for row in cells:
        table.add_row(*map(escape, row))
    out_console.print(table)


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
    include_unverified: bool = typer.Option(False, "--include-unverified",
                                            help="Show runs whose results.json its samples do not earn, marked "
                                                 "UNVERIFIED, with the numbers the samples earn."),
    stderr: bool = typer.Option(False, "--stderr", help="Show standard errors (md/csv: 52.3 ± 4.1)."),
) -> None:
    """The leaderboard: SR/QR, pass@k and diversity per dataset and protocol, recomputed from samples.

    The NP-Bench layout (category SR/QR, Overall, macro over tasks) plus pass@k and diversity, one
    table per dataset and protocol; every run's numbers recomputed from its samples."""
    from mmnp.evaluation.leaderboard import make_leaderboard

    text = make_leaderboard(paths, format, out, modality, browser_samples, mix_datasets, include_incomplete,
                            include_unverified=include_unverified, stderr=stderr)
    if text is not None:
        out_console.print(text, markup=False, highlight=False, soft_wrap=True)
