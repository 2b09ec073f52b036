"""The ``pymc-rdp`` command: private Bayesian networks from the shell.

Three sub-commands:

``pymc-rdp demo``
    The bundled Adult data and the Adult network of Ponnoprat (TMLR 2023): private release of the
    family tables, posterior sampling, figures and a plain-words report.
``pymc-rdp fit DATA --structure FILE [--schema FILE]``
    The same for a table of your own (CSV or Parquet) and a network given as JSON
    (``{child: [parents]}``) or a BIF file.
``pymc-rdp ledger FILE``
    Print a saved privacy ledger (from a result ``.nc``, a ledger or accountant ``.json``, the
    ``releases.json`` of a run or a single release ``.json``) with the (ε, δ) it converts to.

Errors are reported as one line ``pymc-rdp: error: ...`` on stderr with a non-zero exit status
(1 for a failure while running, 2 for bad arguments); set ``PYMC_RDP_DEBUG=1`` to see the traceback.

This module is the entry point (:func:`main`: parse, dispatch, turn failures into one line);
the parser is :mod:`pymc_rdp.cli.parser`, the commands :mod:`pymc_rdp.cli.commands`, and the
pipeline they run, callable from Python, :mod:`pymc_rdp.cli.pipeline`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from pymc_rdp.cli.commands import COMMANDS
from pymc_rdp.cli.errors import CLIError, UsageError
from pymc_rdp.cli.parser import PROG, build_parser

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``pymc-rdp`` with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        _fail(str(exc))
        return 2
    if args.command is None:
        parser.print_help()
        return 0
    debug = os.environ.get("PYMC_RDP_DEBUG", "") not in ("", "0")
    if getattr(args, "quiet", False):
        import logging

        logging.getLogger("pymc").setLevel(logging.WARNING)
    try:
        # NUTS does many small vector operations: threaded BLAS only oversubscribes the cores.
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1):
            COMMANDS[args.command](args)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler below
    except BrokenPipeError:
        return _broken_pipe()
    except KeyboardInterrupt:
        _fail("interrupted")
        return 130
    except UsageError as exc:
        _fail(str(exc))
        return 2
    except Exception as exc:  # every failure becomes one line
        if debug:
            raise
        _fail(_describe(exc))
        return 1
    return 0


def _broken_pipe() -> int:
    """The reader of stdout went away (``pymc-rdp ledger --json | head -1``): stop quietly.

    stdout is pointed at ``os.devnull`` so the interpreter's final flush does not raise again
    (the recipe of the Python documentation, ``signal`` module, "Note on SIGPIPE"); exit 141 =
    128 + SIGPIPE, the status of a command killed by the signal.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout without a file descriptor
        pass
    return 141


def _describe(exc: BaseException) -> str:
    if isinstance(exc, FileNotFoundError) and exc.filename:
        return f"file not found: {exc.filename}"
    if isinstance(exc, (CLIError, ValueError, TypeError, OSError)):
        text = str(exc) or type(exc).__name__
    elif isinstance(exc, KeyError):
        text = f"missing key {exc}"
    else:
        text = f"{type(exc).__name__}: {exc}"
    name = type(exc).__name__
    if name == "BudgetExceededError":
        text = f"budget exceeded: {text}"
    return " ".join(text.split())


def _fail(message: str) -> None:
    print(f"{PROG}: error: {' '.join(message.split())}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
