"""`mmnp leaderboard`: read the runs and check each against its samples and data (`runs`), rank runs
on the same data under the same protocol together (`ranking`), and render markdown or CSV (`tables`)
or a self-contained HTML report (`html_report`).

`render_markdown`, `render_csv` and `render_html` are the library's entry points; `make_leaderboard`
is the whole command.
"""

from __future__ import annotations

from pathlib import Path

from mmnp.errors import DataError, RunError, UsageError
from mmnp.files import check_out_file
from mmnp.evaluation.html_report import html_board
from mmnp.evaluation.ranking import Board
from mmnp.evaluation.runs import Run, gather
from mmnp.evaluation.tables import csv_board, markdown_board

FORMATS = ("md", "csv", "html")
# how each format's report starts: an existing --out is replaced only when it is one (refreshed), never a user's file
REPORT_STARTS = (b"# MM-NP-Bench leaderboard\n", b"dataset,dataset_modified,",
                 b'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>MM-NP-Bench leaderboard</title>')


def _a_leaderboard(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(200).startswith(REPORT_STARTS)


def render_markdown(runs: list[Run], modality: str | None = None, *, mix_datasets: bool = False,
                    include_incomplete: bool = False, include_unverified: bool = False, stderr: bool = False,
                    problems: list[str] = ()) -> str:
    """The markdown report of `runs` (`problems`: lines about folders that could not be read)."""
    return markdown_board(Board.build(runs, problems, modality, mix_datasets, include_incomplete, include_unverified),
                          stderr)


def render_csv(runs: list[Run], modality: str | None = None, *, mix_datasets: bool = False,
               include_incomplete: bool = False, include_unverified: bool = False, stderr: bool = False) -> str:
    """Long format with the dataset key of every row (so mixing is never silent)."""
    return csv_board(Board.build(runs, (), modality, mix_datasets, include_incomplete, include_unverified), stderr)


def render_html(runs: list[Run], modality: str | None = None, browser_samples: int = 2, *, mix_datasets: bool = False,
                include_incomplete: bool = False, include_unverified: bool = False, stderr: bool = False,
                problems: list[str] = ()) -> str:
    """The self-contained HTML report of `runs`, with `browser_samples` samples per task and model."""
    return html_board(Board.build(runs, problems, modality, mix_datasets, include_incomplete, include_unverified),
                      browser_samples, stderr)


def _write(out: Path, text: str) -> None:
    """Write the report atomically; a failure is one line naming --out."""
    from mmnp.dataset import atomic_write

    try:
        atomic_write(out, text)
    except OSError as e:
        raise RunError(f"cannot write --out {out}: {e.strerror or e}; choose a writable path with free space") from None


def _say_not_shown(lines: list[str]) -> None:
    """One stderr line per run or folder a report does not show, where the report itself does not say it."""
    from rich.markup import escape

    from mmnp.clikit import console

    for line in lines:
        console.print(f"[yellow]not shown:[/] {escape(line)}", highlight=False)


def make_leaderboard(paths: list[Path], format: str = "md", out: Path | None = None,
                     modality: str | None = None, browser_samples: int = 2, mix_datasets: bool = False,
                     include_incomplete: bool = False, stderr: bool = False,
                     include_unverified: bool = False) -> str | None:
    """All of `mmnp leaderboard`: read the runs and check them against their samples, group them by
    dataset and protocol, render, and write `out` (returning None) or return the text to print.
    Lines about what is not shown go to stderr (and into md and HTML reports); with no run left to rank,
    nothing is rendered and, after those lines, a `DataError` (exit status 1) says so."""
    from rich.markup import escape

    from mmnp.clikit import console

    if format not in FORMATS:
        raise UsageError(f"--format {format!r}: choose md, csv or html")
    if format == "html" and out is None:
        raise UsageError("--format html needs --out FILE.html")
    if browser_samples < 0:
        raise UsageError(f"--browser-samples {browser_samples}: give 0 or more")
    if out is not None:
        out = Path(out)
        check_out_file(out, f"leaderboard.{format}", _a_leaderboard, "a leaderboard mmnp wrote")
    runs, problems = gather(paths)
    if not runs:
        raise DataError("no readable results.json: " + "; ".join(problems))
    present = sorted({m for r in runs for m in r.modalities()})
    if modality is not None and modality not in present:
        raise UsageError(f"--modality {modality!r}: no run has it; the runs have {', '.join(present) or 'none'}")
    board = Board.build(runs, problems, modality, mix_datasets, include_incomplete, include_unverified)
    ranked = [r for ranking in board.rankings for r in ranking.runs if modality is None or modality in r.modalities()]
    if not ranked:  # an empty report must not pass for one: a script tells by the exit status
        _say_not_shown(board.left_out)
        lacking = f" or has no {modality} scores (without --modality those are ranked)" if board.rankings else ""
        raise DataError(f"no run left to rank ({len(runs)} read): each is left out{lacking}; the \"not shown\" "
                        "lines above say why and what to do")
    if format == "md":
        text = markdown_board(board, stderr)
    elif format == "csv":
        text = csv_board(board, stderr)
    else:
        text = html_board(board, browser_samples, stderr)
    if not (format == "md" and out is None):  # printed markdown carries these lines itself
        _say_not_shown(board.left_out)
    if out is None:
        return text
    _write(out, text)
    console.print(f"[green]wrote[/] {escape(str(out))}", highlight=False)
    return None
