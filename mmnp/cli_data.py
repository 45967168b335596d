"""`mmnp import` and `mmnp export`: datasets in from published files, and out to the Hub, parquet and
verl. The commands only parse and print; `mmnp.importers` and `mmnp.export` do the work, and
their FORMATS tables give the choices and the help."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape

from mmnp import export, importers
from mmnp.clikit import console, out_console, print_written, progress_bar, user_errors
from mmnp.task import DEFAULT_TIME_LIMIT, TIME_LIMIT_HELP

app = typer.Typer()


def _choices(formats: dict) -> str:
    """`name: help; ...` of a FORMATS table, for a --format or FORMAT help."""
    return "; ".join(f"{name}: {f.help}" for name, f in formats.items())


@app.command("import")
@user_errors
def import_command(
    fmt: Annotated[str, typer.Argument(metavar="FORMAT", help=_choices(importers.FORMATS))],
    out: Annotated[Path, typer.Option("--out", "-o", help="new dataset folder")],
    files: Annotated[Optional[list[Path]], typer.Argument(help="instance files (none for classic)")] = None,
    task: Annotated[Optional[str], typer.Option(help="task for DIMACS graphs: a graph task, e.g. max_clique "
                                                     "(the tasks whose generator lists dimacs in IMPORTS)")] = None,
    complement: Annotated[bool, typer.Option(help="DIMACS: import the complement graph")] = False,
    optima: Annotated[Optional[Path], typer.Option(help='JSON {name: {"objective", "proven", "source"}}')] = None,
    images: Annotated[bool, typer.Option(help="render pictures")] = True,
    optimal: Annotated[bool, typer.Option(help="run the exact solver too")] = True,
    image_size: Annotated[int, typer.Option(help="picture size in pixels")] = 768,
    time_limit: Annotated[float, typer.Option(help=TIME_LIMIT_HELP)] = DEFAULT_TIME_LIMIT,
    relabel: Annotated[Optional[int], typer.Option(
        metavar="SEED", help="DIMACS: renumber the vertices by a permutation drawn from SEED (a file's numbering can "
                             "give the answer away: Leighton's le450 graphs are coloured by vertex mod k)")] = None,
    unit_costs: Annotated[bool, typer.Option(
        "--unit-costs", help="OR-Library: read weighted set cover files (scp4x, scpa...) as their unicost variants, "
                             "as the unicost literature does (mmnp's set_cover counts subsets)")] = False,
) -> None:
    """Import published instances (TSPLIB, DIMACS, OR-Library, or the shipped classic set) as a dataset."""
    bar, jobs = progress_bar(), []

    def report(done: int, total: int) -> None:  # the bar starts with the first instance, after the files are read
        if not jobs:
            bar.start()
            jobs.append(bar.add_task("importing", total=total, rate=""))
        bar.update(jobs[0], completed=done, total=total)

    try:
        manifest = importers.import_files(
            fmt, files or [], out, task, complement, optima, images, optimal, image_size, time_limit, relabel,
            notice=lambda line: console.print(f"[yellow]warning:[/] {escape(line)}", highlight=False), progress=report,
            unit_costs=unit_costs)
    except BaseException:
        if jobs:  # a refused instance is one line: the bar cleared, and not Progress.stop, which prints a
            bar.live.transient = True  # line break off a terminal
            bar.live.stop()
        raise
    if jobs:
        bar.stop()
    print_written(manifest, out)
    console.print("  " + ", ".join(f"{t}: {sum(c.values())}" for t, c in manifest["counts"].items()), highlight=False)


@app.command("export")
@user_errors
def export_command(
    data: Path = typer.Option(..., "--data", help="A dataset folder written by `mmnp generate`."),
    out: Path = typer.Option(..., "--out", "-o", help="A new folder for the export."),
    format: str = typer.Option("hf", "--format", help=_choices(export.FORMATS) + "."),
    split_by: Optional[str] = typer.Option(None, "--split-by", help=", ".join(export.SPLIT_BY)
                                           + " (none: one 'test' split); hf and parquet; default difficulty."),
    modality: Optional[str] = typer.Option(None, help="verl only: text prompts, or image prompts with the PNG; "
                                                      "default text."),
    reward: Optional[str] = typer.Option(None, help="verl only: a reward's name, as for mmnp train --reward (its help "
                                                    "lists them); default quality."),
    test_fraction: Optional[float] = typer.Option(None, help="verl only: share of the instances in test.parquet, "
                                                             "stratified by task x difficulty; default 0.1."),
    push_to_hub: Optional[str] = typer.Option(None, "--push-to-hub", help="Also upload to this Hub dataset repo "
                                                                          "(owner/name); needs `hf` format."),
    private: bool = typer.Option(False, help="Make the pushed Hub repo private."),
) -> None:
    """Export a dataset for Hugging Face datasets / the Hub, parquet readers, or verl."""
    summary = export.export_dataset(data, out, format, split_by, push_to_hub, private, modality, reward,
                                    test_fraction, notice=lambda line: console.print(f"[yellow]warning:[/] {escape(line)}",
                                                                                     highlight=False))
    rows = ", ".join(f"{name} {n}" for name, n in summary["rows"].items())
    out_console.print(f"wrote {summary['out']} ({format}; rows: {rows}); benchmark hash "
                      f"{summary['benchmark_hash'][:12]}" + (f"; pushed to {push_to_hub}" if push_to_hub else ""),
                      highlight=False, soft_wrap=True)
