"""What every layer's commands share: the consoles, one-line user errors, list flags, the progress bar.

Each layer owns its commands (`mmnp/cli.py`: data; `evaluation/cli.py`: eval and leaderboard;
`trainers/cli.py`: training); `mmnp/cli.py` merges them into the one `mmnp` entry point.
"""

from __future__ import annotations

import functools
from typing import Callable

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from mmnp.errors import MMNPError, RunError

console = Console(stderr=True, soft_wrap=True)
out_console = Console()

USER_ERRORS = (MMNPError,)  # ours only: any other exception is a bug and keeps its traceback
DEBUG = False  # set by `mmnp --debug`: errors keep their traceback


def user_errors(fn: Callable) -> Callable:
    """Print a user's mistake, a refused input or an unusable path as one red line (exit 2 or 1),
    instead of a traceback."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (*USER_ERRORS, OSError) as e:
            if DEBUG:
                raise
            if isinstance(e, OSError):  # a folder that is a file, no permission, a full disk, a name too long
                e = RunError(f"cannot use {e.filename or 'a file'}: {e.strerror or e}; check the path, its "
                             "permissions and the free disk space")
            message = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
            console.print(f"[bold red]error:[/] {escape(message)}", highlight=False)
            raise typer.Exit(getattr(e, "exit_code", 2)) from None

    return wrapper


def split_list(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def progress_bar() -> Progress:
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("eta"),
                    TimeRemainingColumn(), console=console, transient=False)
