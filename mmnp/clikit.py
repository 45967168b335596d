"""What every layer's commands share: the consoles, one-line user errors (the benchmark scripts' too), list
flags, the progress bar.

Each layer owns its commands (`mmnp/cli.py`: data; `evaluation/cli.py`: eval and leaderboard;
`trainers/cli.py`: training); `mmnp/cli.py` merges them into the one `mmnp` entry point.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Any, Callable

import typer
from typer.core import TyperCommand
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


def script_main(main: Callable[[], int | None]) -> int:
    """A benchmark script's exit code: `main`'s, or, for a refused input (an mmnp error) or a file it
    cannot use, one `error:` line on stderr and that error's code, as mmnp's commands say it."""
    try:
        return main() or 0
    except (MMNPError, OSError) as e:
        if DEBUG:
            raise
        if isinstance(e, OSError):  # a file given that is not there, or cannot be read or written
            print(f"error: cannot use {e.filename or 'a file'}: {e.strerror or e}; check the path", file=sys.stderr)
            return 1
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code


def split_list(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def progress_bar() -> Progress:
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("eta"),
                    TimeRemainingColumn(), console=console, transient=False)


class LazyEpilogCommand(TyperCommand):
    """A command whose help epilog is written when help is shown, from the arguments given, never
    at import: `mmnp eval --model hf: --help` shows that backend's options, and a backend that fails
    to import cannot break `import mmnp.cli`. Subclasses (`lazy_epilog`) set `epilog_for`."""

    epilog_for: Callable[[list[str]], str]

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        ctx.meta["mmnp.args"] = list(args)  # before --help is handled, which happens while parsing
        return super().parse_args(ctx, args)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self.epilog = self.epilog_for(ctx.meta.get("mmnp.args", []))
        return super().format_help(ctx, formatter)


def lazy_epilog(epilog_for: Callable[[list[str]], str]) -> type[LazyEpilogCommand]:
    """A command class (for `app.command(cls=...)`) whose epilog is `epilog_for(the command's arguments)`,
    in rich markup (escape what is not ours)."""
    return type("LazyEpilog", (LazyEpilogCommand,), {"epilog_for": staticmethod(epilog_for)})


def option_value(args: list[str], flag: str) -> str | None:
    """The last value given to `flag` in raw arguments (`--flag V` or `--flag=V`), None if absent."""
    value = None
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith(flag + "="):
            value = arg[len(flag) + 1:]
    return value


def print_written(manifest: dict, out: Path, preset: str | None = None) -> None:
    """What a finished dataset is: its hashes, and whether (and why not) it is a release."""
    from mmnp.releases import release_note, release_of, why_not

    bench, refs = manifest["benchmark_hash"], manifest["references_hash"]
    console.print(f"[green]wrote[/] {manifest['total']} instances to {escape(str(out))}", highlight=False)
    console.print(f"  benchmark hash  {bench}\n  references hash {refs}", highlight=False)
    if name := release_of(bench, refs):
        console.print(f"  release         {name}", highlight=False)
    elif note := (why_not(preset, manifest) if preset else release_note(bench, refs)):
        console.print(f"  [yellow]not {preset or 'a release'}: {escape(note)}[/]", highlight=False)
