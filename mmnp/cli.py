"""The `mmnp` command line: one entry point; each layer registers its own commands."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, List, Optional

import typer
from rich.markup import escape
from rich.table import Table

from mmnp import cli_data, clikit
from mmnp.clikit import console, out_console, print_written, progress_bar, split_list, user_errors
from mmnp.errors import DataError, UsageError
from mmnp.evaluation import cli as evaluation_cli
from mmnp.render import DEFAULT_SIZE
from mmnp.task import DEFAULT_TIME_LIMIT, TIME_LIMIT_HELP
from mmnp.trainers import cli as trainers_cli

if TYPE_CHECKING:
    from mmnp.dataset import GenerateSpec

DEFAULT_DIFFICULTIES = "easy,medium,hard"  # what a bare `mmnp generate` makes, with every task ...
DEFAULT_COUNT = 10  # ... this many of each

app = typer.Typer(help="MM-NP-Bench: generate, verify, evaluate and train on NP-hard optimisation tasks.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)


@app.callback()
def _root(debug: bool = typer.Option(False, "--debug", help="Show tracebacks instead of one-line errors.")) -> None:
    clikit.DEBUG = debug


def parse_params(params: list[str]) -> dict[str, str]:
    out = {}
    for item in params:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--param {item!r}: expected KEY=VALUE, e.g. --param n=25 or --param tsp.n=20-30")
        out[key.strip()] = value.strip()
    return out


class Rate:
    """Instances per second, from the second progress tick on (the first has no interval)."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.first: tuple[int, float] | None = None

    def __call__(self, done: int) -> str:
        now = self.clock()
        if self.first is None:
            self.first = (done, now)
            return ""
        count, start = self.first
        return f"{(done - count) / (now - start):.1f} inst/s" if done > count and now > start else ""


# Over 60 lines only by its signature: typer declares every flag there, one or two lines each.
@app.command()
@user_errors
def generate(
    out: Path = typer.Option(..., "--out", "-o", help="Output folder."),
    tasks: Optional[str] = typer.Option(None, help="Comma-separated task names, or 'all'.", show_default="all"),
    difficulty: Optional[str] = typer.Option(None, help="Comma-separated difficulties.",
                                             show_default=DEFAULT_DIFFICULTIES),
    levels: Optional[str] = typer.Option(None, help="Ladder levels, e.g. 1-10 or 2,5,9 (easy=2 ... bench=5)."),
    count: Optional[int] = typer.Option(None, help="Instances per task and difficulty.", show_default=str(DEFAULT_COUNT)),
    seed: Optional[int] = typer.Option(None, help="Base seed.", show_default="0"),
    preset: Optional[str] = typer.Option(None, help="A canonical release, e.g. mm-np-bench-v2 (fixes tasks, "
                                                    "difficulties, count, seed, image size and time limit)."),
    param: List[str] = typer.Option([], help="Generator parameter override KEY=VALUE (e.g. n=25, tsp.n=20-30); "
                                             "repeatable."),
    workers: int = typer.Option(0, help="Worker processes; 0 = all cores (with --executor ray: every CPU of the "
                                        "cluster). The output does not depend on it."),
    images: bool = typer.Option(True, "--images/--no-images", help="Render PNG images."),
    optimal: bool = typer.Option(True, "--optimal/--no-optimal",
                                 help="Run the exact OR-Tools solver for best-known references."),
    image_size: Optional[int] = typer.Option(None, help="Image width in pixels (the height follows the picture).",
                                             show_default=str(DEFAULT_SIZE)),
    time_limit: Optional[float] = typer.Option(None, help=TIME_LIMIT_HELP, show_default=f"{DEFAULT_TIME_LIMIT:g}"),
    overwrite: bool = typer.Option(False, help="Replace a dataset in --out (only the files its manifest lists)."),
    shard: Optional[str] = typer.Option(None, "--shard", help="Make only part K of N (K/N, e.g. 3/8) into --out; "
                                                               "`mmnp merge` joins the N parts into the dataset."),
    executor: str = typer.Option("process", help="process (this machine) or ray (a Ray cluster: RAY_ADDRESS or "
                                                 "--ray-address, else a local Ray)."),
    ray_address: Optional[str] = typer.Option(None, help="The Ray cluster for --executor ray (e.g. auto)."),
) -> None:
    """Generate a benchmark: prompts, images and reference solutions for each instance.

    Rerun the same command to finish an interrupted run (every finished instance is kept) or to
    repair a damaged dataset (only the damaged instances are made again)."""
    from mmnp.dataset import GenerateSpec, parse_part
    from mmnp.levels import parse_levels
    from mmnp.registry import resolve_tasks

    if workers < 0:
        raise UsageError(f"--workers must be 0 (all cores) or more, got {workers}")
    part = parse_part(shard) if shard is not None else None
    if preset is not None:
        clashes = [n for n, v in (("--tasks", tasks), ("--difficulty", difficulty), ("--levels", levels),
                                  ("--count", count), ("--seed", seed), ("--param", param or None),
                                  ("--image-size", image_size), ("--time-limit", time_limit)) if v is not None]
        spec = _preset_spec(preset, clashes, images, optimal)
    else:
        spec = GenerateSpec(
            tasks=tuple(t.name for t in resolve_tasks(tasks or "all")),
            difficulties=tuple(dict.fromkeys(split_list(difficulty or ("" if levels else DEFAULT_DIFFICULTIES))
                                             + (parse_levels(levels) if levels else []))),
            count=DEFAULT_COUNT if count is None else count,
            seed=0 if seed is None else seed,
            images=images,
            optimal=optimal,
            image_size=DEFAULT_SIZE if image_size is None else image_size,
            time_limit=DEFAULT_TIME_LIMIT if time_limit is None else time_limit,
            params=parse_params(param),
        )
    if executor == "process":
        workers = workers or os.cpu_count() or 1
    manifest = _generate_with_progress(out, spec, workers, overwrite, part, executor, ray_address)
    if part is not None:
        console.print(f"[green]wrote[/] part {part[0]}/{part[1]} ({manifest['instances']} instances) to "
                      f"{escape(str(out))}; when all {part[1]} parts are done: mmnp merge PART_FOLDERS... --out DIR",
                      highlight=False)
        return
    print_written(manifest, out, preset)


def _preset_spec(preset: str, clashes: list[str], images: bool, optimal: bool) -> GenerateSpec:
    """The spec of `--preset`, refusing the flags it fixes and warning of task versions that differ."""
    from mmnp.dataset import preset_spec
    from mmnp.releases import differing_task_versions

    spec = preset_spec(preset, images=images, optimal=optimal)
    if clashes:
        raise UsageError(f"--preset {preset} fixes {', '.join(clashes)}; drop them or drop --preset")
    for task, (then, now) in differing_task_versions(preset).items():
        console.print(f"[yellow]{task} is version {now} here; {preset} was made with version {then}: this "
                      "build will differ from the release[/]", highlight=False)
    return spec


def _generate_with_progress(out: Path, spec: GenerateSpec, workers: int, overwrite: bool,
                            part: tuple[int, int] | None, executor: str, ray_address: str | None) -> dict:
    """`generate_dataset` under a progress bar (instances per second), its notices printed above it."""
    from mmnp.dataset import generate_dataset

    with progress_bar() as bar:
        job = bar.add_task("generating" if part is None else f"generating part {part[0]}/{part[1]}", total=None,
                           rate="")
        rate = Rate()

        def report(done: int, total: int) -> None:
            bar.update(job, completed=done, total=total, rate=rate(done))

        def notify(message: str) -> None:
            bar.console.print(f"[yellow]{escape(message)}[/]", highlight=False)

        return generate_dataset(out, spec, workers=workers, overwrite=overwrite, progress=report, notify=notify,
                                part=part, executor=executor, ray_address=ray_address)


@app.command()
@user_errors
def merge(
    parts: List[Path] = typer.Argument(..., help="The part folders of one `mmnp generate --shard K/N` run (all N)."),
    out: Path = typer.Option(..., "--out", "-o", help="A new folder for the dataset."),
) -> None:
    """Join the N parts of a `--shard K/N` generation into one dataset: the same bytes and hashes as one run."""
    from mmnp.dataset import merge_parts

    with progress_bar() as bar:
        job = bar.add_task("merging", total=None, rate="")

        def report(done: int, total: int) -> None:
            bar.update(job, completed=done, total=total)

        def notify(message: str) -> None:
            bar.console.print(f"[yellow]{escape(message)}[/]", highlight=False)

        manifest = merge_parts(out, parts, notify=notify, progress=report)
    print_written(manifest, out)


AUDIT_DIFFERS = 3  # `mmnp audit`'s exit status when an instance made again differs (DataError: 1, UsageError: 2)


@app.command()
@user_errors
def audit(
    data: Path = typer.Argument(..., help="A dataset folder written by `mmnp generate` or `mmnp merge`."),
    sample: Optional[int] = typer.Option(None, help="Instances to make again, chosen at random by --seed.",
                                         show_default="every one"),
    seed: int = typer.Option(0, help="Which instances --sample chooses."),
    workers: int = typer.Option(0, help="Worker processes; 0 = all cores."),
) -> None:
    """Make instances of a dataset again in full, exact solve included, and compare them byte for byte.

    What a resumed run or a merge takes as written (an exact answer's proof, its bound, the solver's work)
    is checked here: for data made elsewhere (parts from other machines, a download). Exits 3 when an instance
    differs (1: the dataset cannot be read as it is, 2: a usage error)."""
    import shlex

    from mmnp.export import source_command
    from mmnp.generation import plan_audit, run_audit

    if sample is not None and sample < 1:
        raise UsageError(f"--sample must be 1 or more, got {sample}")
    if workers < 0:
        raise UsageError(f"--workers must be 0 (all cores) or more, got {workers}")
    audit = plan_audit(data, sample, seed=seed)  # refusals before any work
    with progress_bar() as bar:
        job = bar.add_task("making again", total=len(audit.jobs), rate="")
        made, problems = run_audit(audit, workers or os.cpu_count() or 1,
                                   lambda done, total: bar.update(job, completed=done, total=total))
    for line in problems:
        console.print(f"[red]differs[/] {escape(line)}", highlight=False)
    how = "exact solves included" if audit.spec.optimal else "no exact references (--no-optimal)"
    if problems:
        again = f"{source_command(audit.dataset.manifest, shlex.quote(str(data)))} --overwrite"
        console.print(f"[red]{len(problems)} of {len(made)} instances made again ({how}) differ from "
                      f"{escape(str(data))}[/]: they were edited after they were made, or made by other code; "
                      f"make it again ({escape(again)}: its manifest is whole, so only --overwrite or another --out "
                      "makes it again) or take it from its maker again", highlight=False)
        raise typer.Exit(AUDIT_DIFFERS)
    console.print(f"[green]{len(made)} instances made again ({how}): identical to {escape(str(data))}[/]",
                  highlight=False)


@app.command("tasks")
def list_tasks_command(as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
                       levels: bool = typer.Option(False, "--levels", help="Show each task's level ladder L1..L10."),
                       ) -> None:
    """List the registered tasks with their category, objective and difficulty presets."""
    from mmnp.registry import list_tasks

    if levels:
        _print_ladder(as_json)
        return

    rows = []
    for task in list_tasks():
        presets = {d: {k: v for k, v in dataclasses.asdict(c).items()} for d, c in task.presets.items()}
        rows.append({"name": task.name, "category": task.category, "objective": task.direction,
                     "violations": list(task.verifier.VIOLATION_KINDS), "presets": presets})
    if as_json:
        out_console.print_json(json.dumps(rows))
        return
    fmt = lambda v: f"{v[0]}-{v[1]}" if isinstance(v, (list, tuple)) else str(v)  # noqa: E731
    columns = ("task", "category", "objective", "easy", "medium", "hard")
    cells = [[r["name"], r["category"], r["objective"],
              *(", ".join(f"{k}={fmt(v)}" for k, v in r["presets"].get(d, {}).items()) for d in columns[3:])]
             for r in rows]
    if not out_console.is_terminal:  # piped: whole values, one tab-separated line per task
        for line in (columns, *cells):
            typer.echo("\t".join(line))
        return
    table = Table(title=f"{len(rows)} MM-NP-Bench tasks")
    for col in columns:  # names are never cut; the preset columns wrap instead
        table.add_column(col, no_wrap=col in columns[:3], overflow="fold",
                         min_width=max(len(c[columns.index(col)]) for c in cells) if col in columns[:3] else None)
    for row in cells:
        table.add_row(*row)
    out_console.print(table)


def _print_ladder(as_json: bool) -> None:
    """`mmnp tasks --levels`: the ladder, one row per task and level (whole values when piped)."""
    from mmnp.levels import ladder_rows

    rows = ladder_rows()
    if as_json:
        out_console.print_json(json.dumps(rows))
        return
    columns = ("task", "level", "alias", "text")
    cells = [[str(r[c]) for c in columns] for r in rows]
    if not out_console.is_terminal:
        for line in (columns, *cells):
            typer.echo("\t".join(line))
        return
    table = Table(title="MM-NP-Bench level ladder")
    for col in columns:
        table.add_column(col, no_wrap=col != "text", overflow="fold")
    for row in cells:
        table.add_row(*row)
    out_console.print(table)


def _answer_text(answer: Optional[str], answer_file: Optional[Path]) -> Optional[str]:
    if answer is not None and answer_file is not None:
        raise UsageError("give --answer or --answer-file, not both")
    if answer_file is not None:
        if str(answer_file) == "-":
            return sys.stdin.read()
        try:
            return answer_file.read_text(encoding="utf-8", errors="replace")
        except OSError as e:
            raise UsageError(f"--answer-file {answer_file}: cannot be read ({e.strerror or e})") from None
    return answer


ALLOW_MODIFIED_HELP = "Use a dataset that differs from its manifest (edited on purpose)."


@app.command()
@user_errors
def verify(
    data: Path = typer.Option(..., help="Dataset folder written by `mmnp generate`."),
    id: str = typer.Option(..., "--id", help="Instance id, e.g. tsp-medium-0003."),
    answer: Optional[str] = typer.Option(None, help="The answer text (a model's response)."),
    answer_file: Optional[Path] = typer.Option(None, help="Read the answer from a file ('-' for stdin)."),
    as_json: bool = typer.Option(False, "--json", help="Print the verdict as JSON."),
    allow_modified: bool = typer.Option(False, "--allow-modified", help=ALLOW_MODIFIED_HELP),
) -> None:
    """Verify an answer against a dataset instance and print the verdict."""
    from mmnp.dataset import find_instance
    from mmnp.registry import get_task

    text = _answer_text(answer, answer_file)
    if text is None:
        raise UsageError("give the answer with --answer TEXT or --answer-file FILE")
    inst = find_instance(data, id, allow_modified=allow_modified)
    task = get_task(inst.task)
    verdict = task.verify(inst, text)
    if verdict.parsed and verdict.error:
        raise DataError(f"{data}: {inst.id}: {verdict.error}")
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
    out: Path = typer.Option(..., "--out", "-o", help="Picture file to write: .png, or another format Pillow writes "
                                                      "by its suffix (.jpg, .webp, ...)."),
    answer: Optional[str] = typer.Option(None, help="An answer to draw over the instance."),
    answer_file: Optional[Path] = typer.Option(None, help="Read the answer from a file ('-' for stdin)."),
    size: int = typer.Option(768, help="Image width in pixels (the height follows the picture)."),
    allow_modified: bool = typer.Option(False, "--allow-modified", help=ALLOW_MODIFIED_HELP),
) -> None:
    """Draw an instance, with an answer and its violations overlaid when one is given."""
    from mmnp.dataset import draw, find_instance
    from mmnp.files import atomic_write, check_out_file
    from mmnp.render import check_image_size

    check_image_size(size, "--size")
    check_out_file(out, f"{id}.png", _a_picture, "a picture")
    kind = _picture_format(out)
    inst = find_instance(data, id, allow_modified=allow_modified)
    png = draw(inst, size, _answer_text(answer, answer_file), edited=allow_modified, source=data)
    atomic_write(out, png if kind == "PNG" else _converted(png, kind))
    console.print(f"[green]wrote[/] {out}")


def _a_picture(path: Path) -> bool:
    """Whether `path` holds a picture (a drawing `show` made before is redrawn; notes are not)."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path):
            return True
    except (UnidentifiedImageError, OSError):
        return False


def _picture_format(out: Path) -> str:
    """Pillow's format for `out`'s suffix (a file named .jpg holds a JPEG, not PNG bytes)."""
    from PIL import Image

    kind = Image.registered_extensions().get(out.suffix.lower())
    if kind is None or kind not in Image.SAVE:
        raise UsageError(f"--out {out}: Pillow writes no picture format named by {out.suffix or 'no suffix'!r}; "
                         "end the name in .png (or .jpg, .webp)")
    return kind


def _converted(png: bytes, kind: str) -> bytes:
    import io

    from PIL import Image

    buffer = io.BytesIO()
    try:  # RGB: what every format Pillow writes takes but one-bit ones (XBM), which are refused here
        Image.open(io.BytesIO(png)).convert("RGB").save(buffer, format=kind)
    except (OSError, ValueError) as e:
        raise UsageError(f"Pillow cannot write this picture as {kind} ({e}); end the --out name in .png, .jpg or "
                         ".webp") from None
    return buffer.getvalue()


app.add_typer(cli_data.app)
app.add_typer(evaluation_cli.app)
app.add_typer(trainers_cli.app)
