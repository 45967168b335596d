"""mmnp's own error types: what the CLI prints as one line (and the exit code) instead of a traceback.

Raise `UsageError` for a mistake in what the user asked (exit 2) and `DataError` / `RunError` for
input that is damaged or a run that failed (exit 1). Every message names the file, the place and
what to do. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


class MMNPError(Exception):
    """Base of the errors the CLI reports as one line."""

    exit_code = 1


class UsageError(MMNPError, ValueError):
    """A bad flag, value or combination of options (exit 2). A ValueError, so library callers can catch it."""

    exit_code = 2


class DataError(MMNPError):
    """A dataset, results folder or file that is missing, damaged, edited or not what it claims (exit 1)."""


class RunError(MMNPError):
    """A run that cannot go on or cannot be trusted: an endpoint that refuses, samples that failed (exit 1)."""
