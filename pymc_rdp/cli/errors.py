"""The two failures of the command line: a run that fails and arguments that are wrong."""

from __future__ import annotations

__all__ = ["CLIError", "UsageError"]


class CLIError(Exception):
    """A failure to report as one line (exit status 1)."""


class UsageError(Exception):
    """Bad arguments (exit status 2)."""
