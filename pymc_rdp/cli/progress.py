"""Progress of a run on stderr: numbered steps, with a ``rich`` progress bar on a terminal.

On a terminal every long step draws a :mod:`rich.progress` bar (a counted bar when the step
knows how many items it has, a pulsing one otherwise) with its elapsed time; written elsewhere
(a log file, a test's captured stderr) each step is two plain lines, ``[2/6] text ...`` and
``done (1.2 s)``, and nothing redraws; ``quiet`` writes nothing at all.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["Steps"]


def _ignore(n: int = 1) -> None:
    """The advance callback of a step without a bar."""


class Steps:
    """Numbered steps of a run, written to stderr.

    Parameters
    ----------
    total : int
        How many steps the run has (the ``n`` of ``[i/n]``).
    quiet : bool, default False
        Write nothing.
    console : rich.console.Console, optional
        Where bars are drawn; default a console on ``sys.stderr`` (looked up when writing, so
        a redirected stderr is honoured). Bars are drawn only if it is a terminal.

    Examples
    --------
    >>> steps = Steps(2, quiet=True)
    >>> with steps.step("count", total=3) as advance:
    ...     for _ in range(3):
    ...         advance()
    >>> steps.i
    1
    """

    def __init__(self, total: int, quiet: bool = False, console: Any = None) -> None:
        if int(total) < 1:
            raise ValueError(f"total must be >= 1, got {total!r}")
        self.total = int(total)
        self.quiet = bool(quiet)
        self.i = 0
        self.t0 = time.perf_counter()
        self._console = console

    @property
    def console(self) -> Any:
        """The :class:`rich.console.Console` on stderr that draws the bars."""
        if self._console is None:
            from rich.console import Console

            self._console = Console(stderr=True)
        return self._console

    @property
    def bars(self) -> bool:
        """Whether progress bars are drawn: not quiet, and stderr is a terminal."""
        return not self.quiet and bool(self.console.is_terminal)

    @property
    def elapsed(self) -> float:
        """Seconds since the run started."""
        return time.perf_counter() - self.t0

    def info(self, text: str) -> None:
        """A note under the current step."""
        if not self.quiet:
            print(f"      {text}", file=sys.stderr, flush=True)

    @contextlib.contextmanager
    def step(
        self, text: str, total: int | None = None, bar: bool = True
    ) -> Iterator[Callable[[int], None]]:
        """The next step; yields ``advance(n=1)`` to count its items.

        ``total`` items give a counted bar, ``None`` a pulsing one; ``bar=False`` draws none
        (for a step that draws its own, such as PyMC's sampler). A step that raises is not
        reported as done.
        """
        self.i += 1
        label = f"[{self.i}/{self.total}] {text}"
        start = time.perf_counter()
        if self.quiet:
            yield _ignore
            return
        if not (bar and self.bars):
            print(f"{label} ...", file=sys.stderr, flush=True)
            yield _ignore
            print(f"      done ({time.perf_counter() - start:.1f} s)", file=sys.stderr, flush=True)
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        columns: list[Any] = [
            SpinnerColumn(finished_text="[green]✓"),
            TextColumn("{task.description}", markup=False),
            BarColumn(),
        ]
        if total is not None:
            columns.append(MofNCompleteColumn())
        columns.append(TimeElapsedColumn())
        with Progress(*columns, console=self.console, transient=False) as progress:
            task = progress.add_task(label, total=total)

            def advance(n: int = 1) -> None:
                progress.advance(task, n)

            yield advance
            progress.update(task, total=total or 1, completed=total or 1)

    @contextlib.contextmanager
    def stdout_to_stderr(self) -> Iterator[None]:
        """Send what is printed to stdout meanwhile to stderr (a sampler's own progress bar)."""
        with contextlib.redirect_stdout(sys.stderr):
            yield
