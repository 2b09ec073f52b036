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
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["main"]

PROG = "pymc-rdp"
MECHANISMS = ("dirichlet", "gaussian", "laplace")
DEFAULT_EPSILON = 1.0
DEFAULT_DELTA = 1e-6
#: nodes of the Adult network drawn by ``demo`` (few parent configurations, readable plots)
_DEMO_CPT_NODES = ("age", "sex", "income")


class CLIError(Exception):
    """A failure to report as one line (exit status 1)."""


class _UsageError(Exception):
    """Bad arguments (exit status 2)."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, not a usage block."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise _UsageError(f"{message} (see '{self.prog} --help')")


# ------------------------------------------------------------------------------ argument types


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def _order(text: str) -> float:
    value = _positive_float(text)
    if not value > 1:
        raise argparse.ArgumentTypeError(f"the Rényi order must be > 1, got {text!r}")
    return value


def _delta(text: str) -> float:
    value = _positive_float(text)
    if not value < 1:
        raise argparse.ArgumentTypeError(f"delta must lie in (0, 1), got {text!r}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return value


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}")
    return value


# ------------------------------------------------------------------------------ the parser

_MAIN_EPILOG = """\
examples:
  pymc-rdp demo                                   # Adult data, ε = 1 at δ = 1e-6, Dirichlet
  pymc-rdp fit records.csv --structure dag.json --schema schema.yaml --epsilon 1 --out result
  pymc-rdp ledger result/posterior.nc --delta 1e-8

Set PYMC_RDP_DEBUG=1 to see full tracebacks.
"""

_DEMO_EPILOG = """\
examples:
  pymc-rdp demo
  pymc-rdp demo --epsilon 0.5 --delta 1e-8 --mechanism gaussian --out adult-gauss
  pymc-rdp demo --epsilon 2 --order 5 --mechanism laplace --seed 3   # seed of the MCMC only

writes OUT/posterior.nc, OUT/ledger.json, OUT/releases.json, OUT/figures/*.png, OUT/report.md
"""

_FIT_EPILOG = """\
examples:
  pymc-rdp fit records.csv --structure dag.json --schema schema.yaml --epsilon 1 --out result
  pymc-rdp fit records.parquet --structure asia.bif --mechanism gaussian \\
      --epsilon 2 --order 8 --test holdout.csv --out result

dag.json maps each child to its parents, e.g. {"smoker": [], "cancer": ["smoker"]}
(parents that are not keys are added as roots). A BIF file contributes its structure and
its state names only (its probabilities are ignored).

Every variable needs a declared, public list of states: from a BIF file or a --schema file
(JSON or YAML), e.g.
  {"smoker": ["no", "yes"], "age": {"cuts": [25, 35, 45, 55, 65]}}
where "cuts" bins a numeric column into (-inf, 25], (25, 35], ..., (65, inf).
--states-from-data reads missing state lists from the records instead, outside the guarantee.
"""

_LEDGER_EPILOG = """\
examples:
  pymc-rdp ledger result/posterior.nc
  pymc-rdp ledger result/ledger.json --delta 1e-8
  pymc-rdp ledger result/releases.json --json

FILE may be a result .nc (the ledger is stored in its attributes), a ledger/accountant
.json, the releases.json of a run, or a single release .json.

A ledger is verified on load: every entry's curve is recomputed from its mechanism and its
hash chain is checked; an edited ledger is refused (exit status 1). The ε printed is that of
the recomputed curves. --digest checks the ledger against a published digest (the
"ledger digest" line of a report); --key-file checks its HMAC-SHA256 signature.
"""


def _add_budget(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--epsilon",
        type=_positive_float,
        default=None,
        metavar="E",
        help=f"total privacy budget ε > 0 of the fit (default {DEFAULT_EPSILON:g})",
    )
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--delta",
        type=_delta,
        default=None,
        metavar="D",
        help=f"(ε, δ)-DP budget: δ in (0, 1) (default {DEFAULT_DELTA:g} unless --order is given)",
    )
    g.add_argument(
        "--order",
        type=_order,
        default=None,
        metavar="L",
        help="RDP budget: ε at this Rényi order λ > 1 instead of an (ε, δ) budget",
    )
    p.add_argument(
        "--mechanism",
        choices=MECHANISMS,
        default="dirichlet",
        help="how each family table is released (default dirichlet; gaussian/laplace add "
        "exactly sampled discrete Gaussian/Laplace integer noise to the counts)",
    )
    p.add_argument(
        "--neighbours",
        choices=("replace-one", "add-remove"),
        default="replace-one",
        help="neighbouring datasets: replace one record (default) or add/remove one",
    )
    p.add_argument(
        "--inference",
        choices=("auto", "noise-aware", "joint", "naive"),
        default="auto",
        help="gaussian/laplace only: auto (default) samples the exact posterior given the "
        "releases by data augmentation; 'noise-aware' samples the per-family model with NUTS, "
        "'joint' the likelihood of all tables with their exact covariance with NUTS (slower); "
        "'naive' uses the clip-and-normalise CPTs",
    )
    p.add_argument(
        "--seed",
        type=_seed,
        default=None,
        metavar="S",
        help="seed of the posterior sampler (MCMC) and of the demo's subsample; never of the "
        "privacy noise, which always comes from OS entropy",
    )
    p.add_argument(
        "--unsafe-noise-seed",
        type=_seed,
        default=None,
        metavar="S",
        help="reproducible privacy noise from this seed, for tests only: the releases are NOT "
        "PRIVATE (anyone who knows or guesses the seed recovers the exact counts) and the "
        "ledger and report say so",
    )
    p.add_argument("--draws", type=_count, default=None, help="posterior draws per chain")
    p.add_argument("--tune", type=_count, default=None, help="tuning steps per chain")
    p.add_argument("--chains", type=_count, default=None, help="number of chains")
    p.add_argument("--quiet", action="store_true", help="no progress output")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``pymc-rdp`` (exposed for the documentation)."""
    from pymc_rdp import __version__

    parser = _Parser(
        prog=PROG,
        description="Private Bayesian networks in PyMC under Rényi differential privacy.",
        epilog=_MAIN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    demo = sub.add_parser(
        "demo",
        help="private Bayesian network on the bundled Adult data",
        description=(
            "Release the Adult data's family tables privately (the Adult network of Ponnoprat, "
            "TMLR 2023), sample the posterior and write results, figures and a report."
        ),
        epilog=_DEMO_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_budget(demo)
    demo.add_argument(
        "--out",
        type=Path,
        default=Path("pymc-rdp-demo"),
        help="output directory (default ./pymc-rdp-demo)",
    )
    demo.add_argument(
        "--fast", action="store_true", help="a small, quick run (subsampled data, few draws)"
    )
    demo.set_defaults(func=_cmd_demo)

    fit = sub.add_parser(
        "fit",
        help="private Bayesian network on your data",
        description=(
            "Release the family tables of DATA privately for the network in --structure, sample "
            "the posterior and write results, figures and a report."
        ),
        epilog=_FIT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    fit.add_argument("data", type=Path, metavar="DATA", help="records: .csv, .parquet")
    fit.add_argument(
        "--structure",
        type=Path,
        required=True,
        metavar="FILE",
        help="the network: JSON {child: [parents]} or a .bif file",
    )
    _add_budget(fit)
    fit.add_argument("--out", type=Path, default=Path("pymc-rdp-fit"), help="output directory")
    fit.add_argument(
        "--test",
        type=Path,
        default=None,
        metavar="FILE",
        help="held-out records (same columns) for the test log-likelihood",
    )
    fit.add_argument(
        "--schema",
        type=Path,
        default=None,
        metavar="FILE",
        help="the public domain of the variables (.json or .yaml): per column its states in "
        'order, e.g. {"sex": ["female", "male"]}, or cut points of a numeric column, e.g. '
        '{"age": {"cuts": [25, 35, 45, 55, 65]}}; overrides the states of a BIF file',
    )
    fit.add_argument(
        "--states-from-data",
        action="store_true",
        help="read the states of variables without declared states from the records (not "
        "covered by the guarantee: the ledger and report flag it)",
    )
    fit.add_argument(
        "--engine",
        default="auto",
        metavar="{auto,pandas,duckdb,polars}",
        help="how DATA and --test are read and counted: duckdb or polars stream through the "
        "file and keep only the counts (files larger than memory), pandas loads it; auto: "
        "duckdb when installed (pip install 'pymc-rdp[duckdb]'), else pandas",
    )
    fit.add_argument(
        "--missing",
        choices=("error", "drop", "category"),
        default="error",
        help="records with missing values: refuse (default), drop them, or treat a missing "
        "value as the state 'missing'",
    )
    fit.set_defaults(func=_cmd_fit)

    ledger = sub.add_parser(
        "ledger",
        help="print a saved privacy ledger",
        description="Print a saved privacy ledger with the (ε, δ) it converts to.",
        epilog=_LEDGER_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ledger.add_argument("file", type=Path, metavar="FILE")
    ledger.add_argument(
        "--delta",
        type=_delta,
        default=None,
        metavar="D",
        help="δ of the (ε, δ) conversion (default: the budget's δ, else 1e-6)",
    )
    ledger.add_argument("--json", action="store_true", help="print the ledger as JSON instead")
    ledger.add_argument(
        "--digest",
        default=None,
        metavar="HEX",
        help="refuse the ledger unless its sha256 chain digest is HEX (64 hex digits)",
    )
    ledger.add_argument(
        "--key-file",
        type=Path,
        default=None,
        metavar="PATH",
        help="verify the ledger's HMAC-SHA256 signature with the key in PATH (raw bytes)",
    )
    ledger.set_defaults(func=_cmd_ledger)
    return parser


# ------------------------------------------------------------------------------ entry point


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``pymc-rdp`` with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except _UsageError as exc:
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
            args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler below
    except BrokenPipeError:
        return _broken_pipe()
    except KeyboardInterrupt:
        _fail("interrupted")
        return 130
    except _UsageError as exc:
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


class _Progress:
    """Step lines on stderr: ``[2/7] fit ... done (1.2 s)``."""

    def __init__(self, total: int, quiet: bool) -> None:
        self.total = total
        self.quiet = quiet
        self.i = 0
        self.t0 = time.perf_counter()

    def step(self, text: str) -> Callable[[], None]:
        self.i += 1
        start = time.perf_counter()
        if not self.quiet:
            print(f"[{self.i}/{self.total}] {text} ...", file=sys.stderr, flush=True)

        def done() -> None:
            if not self.quiet:
                print(f"      done ({time.perf_counter() - start:.1f} s)", file=sys.stderr)

        return done

    def info(self, text: str) -> None:
        if not self.quiet:
            print(f"      {text}", file=sys.stderr, flush=True)

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.t0


# ------------------------------------------------------------------------------ budget


def _check_applicable(args: argparse.Namespace) -> None:
    """Refuse options that the chosen mechanism or inference would ignore.

    * ``--inference`` other than ``auto`` needs ``--mechanism gaussian`` or ``laplace`` (the
      Dirichlet mechanism releases the CPTs themselves: there is nothing to infer);
    * ``--draws``, ``--tune``, ``--chains`` need a sampled posterior: not with the Dirichlet
      mechanism (one released draw per CPT row) nor with ``--inference naive`` (point CPTs).
    """
    sampler = [f"--{k}" for k in ("draws", "tune", "chains") if getattr(args, k, None) is not None]
    if args.mechanism == "dirichlet" and args.inference != "auto":
        raise CLIError(
            f"--inference {args.inference} applies only to --mechanism gaussian or laplace: the "
            "Dirichlet mechanism releases the CPTs themselves"
        )
    if args.mechanism == "dirichlet" and sampler:
        raise CLIError(
            f"{', '.join(sampler)}: not used with --mechanism dirichlet, whose released CPTs are "
            "one draw each (more draws would be more releases)"
        )
    if args.inference == "naive" and sampler:
        raise CLIError(
            f"{', '.join(sampler)}: not used with --inference naive, which samples nothing"
        )


def _budget(args: argparse.Namespace) -> tuple[float, float | None, float | None]:
    """(epsilon, order, delta) with the defaults applied."""
    epsilon = DEFAULT_EPSILON if args.epsilon is None else args.epsilon
    if args.order is not None:
        return epsilon, args.order, None
    return epsilon, None, DEFAULT_DELTA if args.delta is None else args.delta


def _sampling(args: argparse.Namespace, fast: bool) -> dict[str, int]:
    """Sampler settings: short runs (the demo must finish within a minute on 2 cores)."""
    base = (
        {"draws": 100, "tune": 100, "chains": 1}
        if fast
        else {
            "draws": 300,
            "tune": 300,
            "chains": 2,
        }
    )
    for k in base:
        v = getattr(args, k, None)
        if v is not None:
            base[k] = v
    return base


# ------------------------------------------------------------------------------ data input


def read_table(
    path: Path, what: str = "data", engine: str = "pandas", as_text: bool = False
) -> Any:
    """Read a CSV or Parquet file into a DataFrame with one clear error per failure.

    ``engine="duckdb"`` or ``"polars"`` opens the file lazily instead (a DuckDB relation, a
    Polars LazyFrame; :func:`pymc_rdp.curation.counting.files.read_frame`); ``as_text`` reads its
    CSV
    columns as written (state names that are strings).
    """
    import pandas as pd

    path = Path(path)
    if not path.exists():
        raise CLIError(f"{what} file not found: {path}")
    if path.is_dir():
        raise CLIError(f"{what} file is a directory: {path}")
    if engine != "pandas":
        from pymc_rdp.curation.counting.files import read_frame

        try:
            return read_frame(path, engine, what=what, as_text=as_text)
        except (ValueError, ImportError) as exc:
            raise CLIError(str(exc)) from None
    suffix = "".join(path.suffixes[-2:]).lower()
    if suffix.endswith((".parquet", ".pq")):
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            try:
                import fastparquet  # noqa: F401
            except ImportError:
                raise CLIError(
                    f"reading Parquet ({path.name}) needs pyarrow: pip install pyarrow, "
                    "or save the table as CSV"
                ) from None
        df = pd.read_parquet(path)
    elif suffix.endswith((".csv", ".csv.gz", ".txt", ".tsv")):
        sep = "\t" if suffix.endswith(".tsv") else ","
        try:
            df = pd.read_csv(path, sep=sep, skipinitialspace=True)
        except pd.errors.EmptyDataError:
            raise CLIError(f"{what} file is empty: {path}") from None
        except (pd.errors.ParserError, UnicodeDecodeError) as exc:
            raise CLIError(f"cannot parse {what} file {path}: {exc}") from None
    else:
        raise CLIError(f"{what} file {path}: unknown format (use .csv or .parquet)")
    if len(df) == 0:
        raise CLIError(f"{what} file has no records: {path}")
    return df


def read_structure(path: Path) -> tuple[dict[str, list[str]], dict[str, list[str]] | None]:
    """A network structure ``{child: [parents]}`` and, for a BIF file, the state names."""
    path = Path(path)
    if not path.exists():
        raise CLIError(f"structure file not found: {path}")
    suffix = path.suffix.lower()
    if suffix == ".bif":
        from pgmpy.readwrite import BIFReader

        try:
            model = BIFReader(path=str(path)).get_model()
        except Exception as exc:  # pgmpy raises assorted exceptions on bad files
            raise CLIError(f"cannot read BIF file {path}: {exc}") from None
        structure = {str(v): [str(p) for p in model.get_parents(v)] for v in model.nodes()}
        states = {
            str(c.variable): [str(s) for s in c.state_names[c.variable]] for c in model.get_cpds()
        }
        return structure, states
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise CLIError(f"structure file {path} is not valid JSON: {exc}") from None
    if isinstance(doc, dict) and "structure" in doc and isinstance(doc["structure"], dict):
        doc = doc["structure"]
    if not isinstance(doc, dict) or not doc:
        raise CLIError(
            f"structure file {path} must hold a JSON object child -> [parents], "
            'e.g. {"smoker": [], "cancer": ["smoker"]}'
        )
    structure: dict[str, list[str]] = {}
    for child, parents in doc.items():
        if parents is None:
            parents = []
        if isinstance(parents, str):
            parents = [parents]
        if not isinstance(parents, list) or not all(isinstance(p, str) for p in parents):
            raise CLIError(
                f"structure file {path}: the parents of {child!r} must be a list of names"
            )
        structure[str(child)] = list(parents)
    for parents in list(structure.values()):
        for p in parents:
            structure.setdefault(p, [])  # parents that are not keys are roots
    return structure, None


def read_schema(path: Path, nodes: Sequence[str]) -> dict[str, dict[str, Any]]:
    """A schema file (JSON or YAML) of the public domains, checked against the network."""
    from pymc_rdp.curation.domains import load_schema

    path = Path(path)
    if not path.exists():
        raise CLIError(f"schema file not found: {path}")
    schema = load_schema(path)
    unknown = [c for c in schema if c not in nodes]
    if unknown:
        raise CLIError(
            f"schema file {path}: {', '.join(map(repr, unknown))} are not variables of the "
            f"network ({', '.join(nodes)})"
        )
    return schema


def _label(value: Any) -> str:
    """A state as the string the CLI compares (integral floats without '.0')."""
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def _declared_states(
    nodes: Sequence[str],
    bif_states: dict[str, list[str]] | None,
    schema: dict[str, dict[str, Any]] | None,
    from_data: bool,
) -> dict[str, list[str]]:
    """The declared states of every node (as strings): the BIF file's, then the schema's."""
    states: dict[str, list[str]] = dict(bif_states or {})
    for col, entry in (schema or {}).items():
        labels = [_label(s) for s in entry["states"]]
        if len(set(labels)) != len(labels):
            raise CLIError(f"schema: the states of {col!r} repeat once written as text: {labels}")
        states[col] = labels
    undeclared = [v for v in nodes if v not in states]
    if undeclared and not from_data:
        raise CLIError(
            f"no declared states for the variable(s) {', '.join(map(repr, undeclared))}: give "
            "--schema FILE (JSON or YAML; per column its states, or cut points for a numeric "
            "column) or a BIF structure; or --states-from-data to read them from the records "
            "(outside the guarantee, flagged in the ledger and the report)"
        )
    return states


def _bin_by_schema(df: Any, schema: dict[str, dict[str, Any]] | None, what: str) -> Any:
    """Bin the schema's numeric columns by their public cut points."""
    if not schema or not any("cuts" in e for e in schema.values()):
        return df
    from pymc_rdp.curation.domains import apply_schema

    binned, _ = apply_schema(df, {c: e for c, e in schema.items() if "cuts" in e}, name=what)
    return binned


def _check_columns(df: Any, nodes: Sequence[str], what: str) -> None:
    """Refuse a frame (pandas or a lazily read file) that lacks a column of the network."""
    from pymc_rdp.curation.counting import is_pandas

    if is_pandas(df):
        columns = list(df.columns)
    else:
        import narwhals as nw

        columns = list(nw.from_native(df).collect_schema())
    absent = [v for v in nodes if v not in columns]
    if absent:
        cols = list(map(str, columns))
        shown = ", ".join(cols[:12]) + (" ..." if len(cols) > 12 else "")
        raise CLIError(
            f"{what}: unknown column(s) {', '.join(map(repr, absent))} named in the structure "
            f"(columns: {shown})"
        )


def _prepare_frame(
    df: Any, nodes: Sequence[str], states: dict[str, list[str]] | None, missing: str, what: str
) -> Any:
    """The network's columns, checked; missing values handled; declared states as strings."""
    from pymc_rdp.curation.counting import is_pandas

    if not is_pandas(df):
        return _prepare_lazy(df, nodes, states, missing, what)
    _check_columns(df, nodes, what)
    sub = df[list(nodes)].copy()
    if missing == "drop":
        sub = sub.dropna().reset_index(drop=True)
        if len(sub) == 0:
            raise CLIError(f"{what}: no record is left after dropping missing values")
    elif missing == "category":
        for v in nodes:
            if sub[v].isna().any():
                sub[v] = sub[v].astype(object).where(sub[v].notna(), "missing")
    else:
        bad = [v for v in nodes if sub[v].isna().any()]
        if bad:
            raise CLIError(
                f"{what}: missing values in column(s) {', '.join(map(repr, bad))}; "
                "use --missing drop or --missing category"
            )
    if states is not None:
        for v in nodes:
            if v in states:
                sub[v] = sub[v].astype(object).map(_label)
    return sub


def _prepare_lazy(
    df: Any, nodes: Sequence[str], states: dict[str, list[str]] | None, missing: str, what: str
) -> Any:
    """:func:`_prepare_frame` for a lazily read file: the same checks as engine expressions."""
    import narwhals as nw

    frame = nw.from_native(df)
    _check_columns(df, nodes, what)
    frame = frame.select(*nodes)
    if states is not None:
        frame = frame.with_columns(*(nw.col(v).cast(nw.String) for v in nodes))
    if missing == "drop":
        frame = frame.drop_nulls()
    elif missing == "category":
        frame = frame.with_columns(
            *(nw.col(v).cast(nw.String).fill_null(nw.lit("missing")) for v in nodes)
        )
    else:
        holes = frame.select(*(nw.col(v).is_null().any() for v in nodes))
        holes = holes.collect() if isinstance(holes, nw.LazyFrame) else holes
        bad = [v for v in nodes if bool(holes.get_column(v).to_list()[0])]
        if bad:
            raise CLIError(
                f"{what}: missing values in column(s) {', '.join(map(repr, bad))}; "
                "use --missing drop or --missing category"
            )
    return frame.to_native()


def _engine(args: argparse.Namespace) -> str:
    """The engine of ``fit``: ``--engine``, or DuckDB when installed for ``auto``."""
    from pymc_rdp.curation.counting.files import ENGINES, default_engine

    engine = getattr(args, "engine", "pandas")
    if engine == "auto":
        return default_engine()
    if engine not in ENGINES:
        raise CLIError(f"unknown --engine {engine!r}: choose one of auto, {', '.join(ENGINES)}")
    return engine


# ------------------------------------------------------------------------------ the pipeline


def _fit_network(
    structure: Any,
    states: dict[str, list[str]] | None,
    train: Any,
    mechanism: str,
    epsilon: float,
    order: float | None,
    delta: float | None,
    neighbours: str,
    noise_seed: int | None,
    noise_aware: bool = True,
    noise_model: str = "per-family",
    public_total: int | None = None,
) -> Any:
    """Fit the network; ``noise_seed`` (``--unsafe-noise-seed``) makes the noise reproducible;
    ``public_total`` declares the number of records public (only for public data)."""
    from pymc_rdp.curation.domains import FROM_DATA
    from pymc_rdp.models import BayesianNetwork
    from pymc_rdp.privacy.mechanisms import UnsafeNoiseSeed

    if states is not None:  # the nodes without declared states: read from the data (flagged)
        states = {v: states.get(v, FROM_DATA) for v in structure}
    bn = BayesianNetwork(structure, states=states)
    bn.fit(
        train,
        mechanism=mechanism,
        epsilon=epsilon,
        order=order,
        delta=delta,
        neighbours=neighbours,
        noise_aware=noise_aware,
        noise_model=noise_model,
        noise_source=None if noise_seed is None else UnsafeNoiseSeed(noise_seed),
        public_total=public_total,
    )
    return bn


def _guarantee(acc: Any, epsilon: float, order: float | None, delta: float | None) -> dict:
    """The fit's guarantee in numbers: the requested budget and what the ledger composes to."""
    out: dict[str, Any] = {"requested_epsilon": epsilon}
    if order is not None:
        out["order"] = order
        out["rdp_epsilon_at_order"] = float(acc.rdp([order])[0])
        d = DEFAULT_DELTA
        eps_d, best = acc.epsilon_and_order(d)
        out["delta"] = d
        out["epsilon_at_delta"] = eps_d
        out["best_order"] = best
    else:
        out["delta"] = delta
        eps_d, best = acc.epsilon_and_order(delta)
        out["epsilon_at_delta"] = eps_d
        out["best_order"] = best
        out["rdp_epsilon_at_best_order"] = (
            float(acc.rdp([best])[0]) if math.isfinite(best) else None
        )
    return out


def _release_record(bn: Any, node: str) -> dict[str, Any]:
    rel = bn.releases[node]
    record: dict[str, Any] = {
        "node": node,
        "parents": list(bn.parents[node]),
        "parent_configurations": bn.parent_configurations(node),
        "states": [str(s) for s in bn.states[node]],
    }
    if hasattr(rel, "to_dict"):
        record["kind"] = "noisy counts (flattened family table: parent configuration-major)"
        record["release"] = rel.to_dict()
    else:
        record["kind"] = "released CPT (one exact Dirichlet-mechanism draw per row)"
        record["mechanism"] = bn.family_mechanism.to_dict()
        record["values"] = np.asarray(rel, dtype=np.float64).tolist()
    return record


def _json_default(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (np.floating, np.integer)):
        return x.item()
    raise TypeError(f"cannot write {type(x).__name__} as JSON")


def _write_json(path: Path, doc: Any) -> None:
    text = json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False, default=_json_default)
    path.write_text(text + "\n", encoding="utf-8")


def _cpt_figure_nodes(bn: Any, wanted: Sequence[str] | None, limit: int = 3) -> list[str]:
    if wanted is not None:
        return [v for v in wanted if v in bn.parents]
    nodes = sorted(bn.nodes, key=lambda v: (len(bn.parent_configurations(v)), bn.cards[v]))
    return nodes[:limit]


def _pick_configs(bn: Any, node: str, idata: Any, k: int = 4) -> list[str]:
    """Parent configurations to draw: the ones with the narrowest posteriors (post-processing)."""
    configs = bn.parent_configurations(node)
    if len(configs) <= k:
        return configs
    draws = bn.cpt_draws(idata, node)  # (draws, configs, states)
    if draws.shape[0] > 1:
        spread = draws.std(axis=0).sum(axis=1)
        idx = np.argsort(spread, kind="stable")[:k]
        return [configs[i] for i in sorted(idx)]
    return configs[:k]


def _states_to_show(bn: Any, node: str, max_states: int = 12) -> list[str] | None:
    states = [str(s) for s in bn.states[node]]
    return None if len(states) <= max_states else states[:max_states]


def _choose_inference(
    mechanism: str, inference: str, structure: Any, states: Any, train: Any
) -> tuple[bool, str]:
    """(noise_aware, explanation) for Gaussian/Laplace releases."""
    if mechanism not in ("gaussian", "laplace"):
        return False, ""
    if inference == "noise-aware":
        return True, "noise-aware posterior (requested)"
    if inference == "joint":
        return True, "noise-aware posterior with the joint likelihood of all tables (requested)"
    if inference == "naive":
        return False, "naive baseline: noisy counts clipped at 1e-6 and normalised (requested)"
    return True, "exact posterior given the releases, by data augmentation"


def _prepare_out(out: Path) -> Path:
    """Check the output can be written (before any work); returns ``out/figures``."""
    try:
        import h5netcdf  # noqa: F401
    except ImportError:
        raise CLIError("writing posterior.nc needs h5netcdf: pip install h5netcdf") from None
    figures = Path(out) / "figures"
    try:
        figures.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CLIError(f"cannot create the output directory {out}: {exc.strerror}") from None
    return figures


def run_pipeline(
    *,
    title: str,
    train: Any,
    test: Any,
    structure: dict[str, list[str]],
    states: dict[str, list[str]] | None,
    mechanism: str,
    inference: str,
    epsilon: float,
    order: float | None,
    delta: float | None,
    neighbours: str,
    seed: int | None,
    noise_seed: int | None,
    sampling: dict[str, int],
    out: Path,
    progress: _Progress,
    data_notes: list[str],
    compare_grid: Sequence[float] | None,
    cpt_nodes: Sequence[str] | None,
    public_reference: bool,
    command: str,
    public_total: int | None = None,
) -> dict[str, Any]:
    """Fit, sample, save, plot and report; returns a summary dictionary.

    ``compare_grid`` and ``public_reference`` fit the data again (other budgets, and without
    privacy): only for public data such as the demo's, never for the records being protected.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pymc_rdp import plots

    figures = _prepare_out(out)
    noise_aware, inference_note = _choose_inference(mechanism, inference, structure, states, train)

    done = progress.step(f"private release of the family tables ({mechanism})")
    bn = _fit_network(
        structure,
        states,
        train,
        mechanism,
        epsilon,
        order,
        delta,
        neighbours,
        noise_seed,
        noise_aware=noise_aware,
        noise_model="joint" if inference == "joint" and noise_aware else "per-family",
        public_total=public_total,
    )
    acc = bn.accountant
    done()
    if inference_note:
        progress.info(f"inference: {inference_note}")

    # NUTS only when asked for; the Dirichlet posterior needs a public N (no total is released)
    nuts = noise_aware and inference in ("noise-aware", "joint")
    sampled = noise_aware or (mechanism == "dirichlet" and bn.n_records is not None)
    sampler_name = "NUTS" if nuts else "data augmentation"
    if sampled:
        done = progress.step(
            f"posterior sampling ({sampler_name}, {sampling['chains']} chain(s) x "
            f"{sampling['draws']} draws, {sampling['tune']} tuning steps)"
        )
        nuts_options = {
            "progressbar": sys.stderr.isatty() and not progress.quiet,
            "compute_convergence_checks": False,
        }
        idata = bn.sample(
            draws=sampling["draws"],
            tune=sampling["tune"],
            chains=sampling["chains"],
            random_seed=seed,
            sampler="nuts" if nuts else "augmentation",
            **(nuts_options if nuts else {}),
        )
    else:
        done = progress.step("collecting the released CPTs (no MCMC needed)")
        idata = bn.sample(random_seed=seed, sampler="nuts")
    done()

    done = progress.step("writing posterior.nc, ledger.json, releases.json")
    ledger_json = acc.to_json()
    nc_path = out / "posterior.nc"
    if nc_path.exists():
        nc_path.unlink()
    idata.to_netcdf(nc_path, engine="h5netcdf")
    (out / "ledger.json").write_text(ledger_json + "\n", encoding="utf-8")
    releases = {
        "format": "pymc-rdp.bn-releases",
        "version": 1,
        "mechanism": mechanism,
        "neighbours": neighbours,
        "structure": {v: list(bn.parents[v]) for v in bn.nodes},
        # the number of records only when the caller declared it public (never the raw N)
        "n_records": _public_n_records(bn),
        "families": [_release_record(bn, v) for v in bn.nodes],
        "ledger": json.loads(ledger_json),
    }
    _write_json(out / "releases.json", releases)
    done()

    results = None
    reference: dict[str, float] = {}
    ref_idata = None
    test_ll = None
    test_scored = None
    if test is not None:
        test_ll = bn.log_likelihood(test, unseen="skip")
        test_scored = (_scored_records(bn, test), len(test))
    if compare_grid or public_reference:
        import pandas as pd

        runs = [(m, e) for e in (compare_grid or ()) for m in MECHANISMS]
        done = progress.step(
            f"privacy-utility comparison: {len(runs)} extra fits "
            f"({', '.join(MECHANISMS)} at ε in {list(compare_grid or ())}) and a non-private fit"
        )
        rows = []
        for m, e in _progress_iter(runs, progress.quiet):
            b = _fit_network(
                structure,
                states,
                train,
                m,
                e,
                order,
                delta,
                neighbours,
                noise_seed,
                noise_aware=False,
            )
            rows.append(
                {"mechanism": m, "epsilon": e, "log_likelihood": b.log_likelihood(test, "skip")}
            )
        b = _fit_network(structure, states, train, "none", None, None, None, neighbours, None)
        if test is not None:
            reference["non-private (posterior mean)"] = b.log_likelihood(test, "skip")
        if public_reference:
            ref_idata = b.sample(
                draws=max(sampling["draws"], 200), chains=sampling["chains"], random_seed=seed
            )
        if rows:
            results = pd.DataFrame(rows)
            results.to_csv(out / "privacy_utility.csv", index=False)
        done()

    done = progress.step("figures")
    written: list[str] = []
    ax = plots.plot_rdp_curve(acc)
    ax.figure.savefig(figures / "rdp_curve.png", dpi=110)
    plt.close(ax.figure)
    written.append("rdp_curve.png")
    ax = plots.plot_epsilon_delta(acc)
    ax.figure.savefig(figures / "epsilon_delta.png", dpi=110)
    plt.close(ax.figure)
    written.append("epsilon_delta.png")
    if results is not None:
        ax = plots.plot_privacy_utility(
            results, reference=reference, ylabel="held-out log-likelihood per record"
        )
        budget = f"ε at Rényi order {order:g}" if order is not None else f"ε at δ = {delta:g}"
        ax.set_title(f"Privacy–utility of the released CPTs (budget: {budget})", fontsize=10)
        ax.figure.savefig(figures / "privacy_utility.png", dpi=110)
        plt.close(ax.figure)
        written.append("privacy_utility.png")
    private_label = f"private ({mechanism})"
    for v in _cpt_figure_nodes(bn, cpt_nodes):
        if ref_idata is not None:
            data: Any = {private_label: idata, "non-private posterior": ref_idata}
            configs = _pick_configs(bn, v, ref_idata if not noise_aware else idata)
        else:
            data = idata
            configs = _pick_configs(bn, v, idata)
        fig = plots.plot_cpt_posterior(
            data, v, parent_configs=configs, states=_states_to_show(bn, v)
        )
        name = f"cpt_{_safe_name(v)}.png"
        fig.savefig(figures / name, dpi=100)
        plt.close(fig)
        written.append(name)
    done()

    summary = {
        "title": title,
        "command": command,
        "mechanism": mechanism,
        "noise_aware": noise_aware,
        "inference_note": inference_note,
        "neighbours": neighbours,
        "has_test": test is not None,
        "test_log_likelihood": test_ll,
        "test_scored": test_scored,
        "private": acc.within_guarantee,
        "declarations": acc.declarations,
        "guarantee": _guarantee(acc, epsilon, order, delta),
        "sampling": dict(sampling, sampler=sampler_name) if sampled else None,
        "figures": written,
        "comparison": results,
        "reference": reference,
        "public_reference": ref_idata is not None,
        "data_notes": data_notes,
        "out": str(out),
    }
    done = progress.step("report.md")
    (out / "report.md").write_text(_report(bn, summary, progress), encoding="utf-8")
    done()
    return summary


def _progress_iter(items: Sequence[Any], quiet: bool) -> Any:
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm is optional
        return items
    return tqdm(items, disable=quiet or None, file=sys.stderr, leave=False, unit="fit")


def _safe_name(node: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in node)


# ------------------------------------------------------------------------------ the report


def _fmt(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x:.4g}"


def _report(bn: Any, s: dict[str, Any], progress: _Progress) -> str:
    g = s["guarantee"]
    acc = bn.accountant
    mech = s["mechanism"]
    k = len(bn.nodes)
    lines: list[str] = []
    add = lines.append
    add(f"# {s['title']}")
    add("")
    if not s["private"]:
        add(
            "**NOT PRIVATE.** Part of what this run published is outside the privacy guarantee "
            "(see the ledger's OUTSIDE THE GUARANTEE lines):"
        )
        for d in s["declarations"]:
            if d["outside_guarantee"]:
                add(f"- {d['kind']}: {d['detail']}")
        add("")
    add(f"Generated by `{s['command']}` on {_dt.datetime.now(_dt.UTC):%Y-%m-%d %H:%M} UTC.")
    add("")
    add("## The data")
    add("")
    add(
        "- The training records were used for the private release only; their number is not "
        "published (it is private too)."
    )
    if s["has_test"]:
        add(
            "- Held-out records were used only to measure utility. They are not protected: the "
            "held-out log-likelihood below is computed from them exactly."
        )
    for note in s["data_notes"]:
        add(f"- {note}")
    add("")
    add("## What was released")
    add("")
    add(
        f"The network has {k} variables. For each variable the *family table* (how many records "
        "have each combination of the variable and its parents) was released once, through the "
        f"**{mech}** mechanism:"
    )
    add("")
    if mech == "dirichlet":
        add(
            "each row of each table was replaced by one random draw θ ~ Dirichlet(r·counts + α) "
            "(Ponnoprat 2023, the Dirichlet mechanism). The released draws are the conditional "
            "probability tables (CPTs) themselves; no count is published."
        )
    else:
        noise = "discrete Gaussian" if mech == "gaussian" else "discrete Laplace"
        add(
            f"Exactly sampled {noise} noise (integers, Canonne, Kamath & Steinke 2020) was added "
            "to every count of every table and the noisy counts were published."
        )
        add("")
        if s["noise_aware"]:
            add(
                "The CPTs were then inferred from the noisy counts with a model that accounts "
                "for the noise (Dirichlet priors on the CPTs, the true counts integrated out), "
                "sampled with NUTS"
                + (
                    ": the joint likelihood of all tables, with their exact between-table "
                    "covariance."
                    if bn.noise_model == "joint"
                    else ": one likelihood term per family table."
                )
            )
        else:
            add(f"The CPTs were then estimated with the {s['inference_note']}.")
    add("")
    add("| variable | parents | table (parent configurations × states) |")
    add("|---|---|---|")
    for v in bn.nodes:
        pars = ", ".join(bn.parents[v]) or "—"
        add(f"| {v} | {pars} | {len(bn.parent_configurations(v))} × {bn.cards[v]} |")
    add("")
    add(
        "The released tables are in `releases.json`; everything computed afterwards (posterior, "
        "figures, this report) is post-processing and costs no further privacy."
    )
    add("")
    add("## The guarantee")
    add("")
    neigh = (
        "differ in one record (one person's record replaced by another's)"
        if s["neighbours"] == "replace-one"
        else "differ by adding or removing one record"
    )
    if "order" in g:
        add(
            f"- Budget: **ε = {_fmt(g['requested_epsilon'])} of Rényi differential privacy at "
            f"order λ = {_fmt(g['order'])}**; the ledger composes to "
            f"ε({_fmt(g['order'])}) = {_fmt(g['rdp_epsilon_at_order'])}."
        )
        add(
            f"- In the usual (ε, δ) terms this is **({_fmt(g['epsilon_at_delta'])}, "
            f"{g['delta']:g})-DP** (best order {_fmt(g['best_order'])})."
        )
    else:
        add(
            f"- Budget: **(ε, δ) = ({_fmt(g['requested_epsilon'])}, {g['delta']:g})**; the "
            f"ledger composes to ε = {_fmt(g['epsilon_at_delta'])} at δ = {g['delta']:g}, "
            f"attained at Rényi order λ = {_fmt(g['best_order'])} "
            f"(RDP ε(λ) = {_fmt(g.get('rdp_epsilon_at_best_order'))})."
        )
    eps = g["epsilon_at_delta"]
    d = g["delta"]
    add(f"- Neighbouring datasets {neigh}.")
    add(
        f"- The {k} tables compose sequentially (their RDP curves add up, Mironov 2017); the rows "
        "of one table hold disjoint records."
    )
    p = 0.01
    hi = min(1.0, math.exp(eps) * p + d)
    add("")
    add(
        "In plain words: whatever anyone concludes from these outputs, the conclusion is almost "
        "as likely whether or not any one person's record was in the data. For example, an "
        f"outcome that has probability {p:.0%} without your record has probability at most "
        f"{hi:.2%} with it (e^ε · p + δ)."
    )
    add("")
    add("## The posterior")
    add("")
    if s["sampling"] is not None and s["sampling"].get("sampler") == "NUTS":
        sm = s["sampling"]
        add(
            f"NUTS sampled the noise-aware model: {sm['chains']} chain(s) × {sm['draws']} draws "
            f"after {sm['tune']} tuning steps. `posterior.nc` holds the draws of every CPT "
            "(`<variable>_cpt`, one flat dim `<variable>_cell`, labels `parents | variable=state`)."
        )
    elif s["sampling"] is not None:
        sm = s["sampling"]
        add(
            "Data augmentation sampled the exact posterior of the CPTs given the released "
            "tables (Ju, Awan, Gong & Rao 2022: the confidential records are latent, each CPT row "
            "is updated from them, each record is re-proposed and accepted by the mechanism's "
            f"density ratio): {sm['chains']} chain(s) × {sm['draws']} draws after {sm['tune']} "
            "discarded iterations. `posterior.nc` holds the draws of every CPT "
            "(`<variable>_cpt`, one flat dim `<variable>_cell`, labels `parents | variable=state`)"
            + (
                "; the released CPTs themselves stay the point estimate."
                if mech == "dirichlet"
                else "."
            )
        )
    elif mech == "dirichlet":
        add(
            "With the Dirichlet mechanism each released CPT row is one exact draw from "
            "Dirichlet(r·counts + α): a draw from the posterior under a Dirichlet(α) prior with "
            "the likelihood tempered by r, which is what makes it private. "
            "`posterior.nc` holds the draws as one chain of one draw (`<variable>_cpt`, one flat "
            "dim `<variable>_cell`). More draws would be more releases "
            "and would cost more budget, so the private CPTs have one value per probability."
        )
    else:
        add(
            "`posterior.nc` holds the estimated CPTs as one chain of one draw (`<variable>_cpt`, "
            "one flat dim `<variable>_cell`)."
        )
    if s["public_reference"]:
        add("")
        add(
            "For comparison only, the CPT figures also show the non-private posterior "
            "(Dirichlet(1 + counts) per row, exact draws) of the same public data: it is not "
            "private and would not be published for sensitive data."
        )
    if s["test_log_likelihood"] is not None:
        add("")
        add(
            f"Held-out log-likelihood per record of the estimated CPTs: "
            f"**{s['test_log_likelihood']:.4f}**, over {_scored_text(s['test_scored'])}"
            + (
                f" (non-private: {next(iter(s['reference'].values())):.4f})."
                if s["reference"]
                else "."
            )
        )
    if bn.idata is not None:
        from pymc_rdp.cli.report_posterior import posterior_section

        add("")
        add("### CPT posteriors and convergence")
        add("")
        lines.extend(posterior_section(bn, bn.idata))
    add("")
    add("## The ledger")
    add("")
    add(
        "Every release is a line of the privacy ledger, stored in `posterior.nc` (attributes), "
        "`ledger.json` and `releases.json`. Print it with "
        f"`pymc-rdp ledger {s['out']}/posterior.nc`; "
        "`--delta` converts at another δ. Columns: the release's tag, mechanism and parameters, "
        "how often it was applied, and its own ε. The last lines give the composed total."
    )
    add("")
    add("```")
    add(acc.report())
    add("```")
    add("")
    add("## Figures")
    add("")
    explain = {
        "rdp_curve.png": "the composed Rényi-DP curve ε(λ) against the order λ (log–log); "
        "dashed: individual releases; a release curve that ends has infinite ε beyond that "
        "order.",
        "epsilon_delta.png": "the (ε, δ)-DP guarantee implied by the ledger for every δ; "
        "the solid line is the conversion used for the budget (Balle et al. 2020), the "
        "dashed one Mironov's simpler bound.",
        "privacy_utility.png": "held-out log-likelihood (higher is better) of the released "
        "CPTs against ε for the Dirichlet mechanism and the naive Gaussian/Laplace baselines "
        "(noisy counts clipped and normalised), with the non-private fit as a reference.",
    }
    for name in s["figures"]:
        if name.startswith("cpt_"):
            text = (
                "one CPT, for a few parent configurations: dot = mean, thick bar = central 50% "
                "interval, thin bar = 94% interval"
                + (" (a single released value has no interval)" if not s["noise_aware"] else "")
            )
        else:
            text = explain.get(name, "")
        add(f"- `figures/{name}`: {text}")
    if s["comparison"] is not None:
        add("")
        add(
            "The privacy–utility comparison refits the network several times on the same data, "
            "each fit with its own budget: it illustrates the mechanisms on public data and is "
            "**not** covered by the guarantee above (its numbers are in `privacy_utility.csv`)."
        )
        table = s["comparison"].pivot(index="epsilon", columns="mechanism", values="log_likelihood")
        add("")
        add("| ε | " + " | ".join(table.columns) + " |")
        add("|---" * (len(table.columns) + 1) + "|")
        for e, row in table.iterrows():
            add(f"| {e:g} | " + " | ".join(f"{x:.4f}" for x in row.to_numpy()) + " |")
    add("")
    add(f"Total run time: {progress.elapsed:.1f} s.")
    add("")
    return "\n".join(lines)


# ------------------------------------------------------------------------------ commands


def _cmd_demo(args: argparse.Namespace) -> None:
    _check_applicable(args)
    epsilon, order, delta = _budget(args)
    _prepare_out(args.out)
    progress = _Progress(7, args.quiet)
    done = progress.step("loading the bundled Adult data (UCI, Becker & Kohavi 1996)")
    from pymc_rdp import datasets
    from pymc_rdp.curation.domains import parse_schema

    train_full = datasets.adult_public("train")
    test_full = datasets.adult_public("test")
    nodes = list(datasets.ADULT_DAG)
    schema = parse_schema(datasets.ADULT_SCHEMA)
    states = {v: [str(s) for s in schema[v]["states"]] for v in nodes}
    rng = np.random.default_rng(args.seed if args.seed is not None else 0)
    notes = [
        "Data: UCI Adult (Census Income, Becker & Kohavi 1996), the `adult.data` file as "
        "training set and `adult.test` as held-out set. Every state list is declared, not read "
        "from the records (`pymc_rdp.datasets.ADULT_SCHEMA`): the categories of the UCI "
        "documentation (`adult.names`, with `missing` for unknown values) and fixed public cut "
        "points for the numeric columns ("
        + "; ".join(f"{v}: {', '.join(schema[v]['states'])}" for v in nodes if "cuts" in schema[v])
        + "), so the guarantee covers the shape and labels of every published table.",
        "Network: the Adult DAG of Ponnoprat (TMLR 2023): "
        + "; ".join(
            f"{v} ← {', '.join(p)}" if p else f"{v} (root)" for v, p in datasets.ADULT_DAG.items()
        )
        + ".",
    ]
    if args.fast:
        n_train, n_test = 4000, 2000
        train = train_full.iloc[np.sort(rng.choice(len(train_full), n_train, replace=False))]
        test = test_full.iloc[np.sort(rng.choice(len(test_full), n_test, replace=False))]
        notes.append(
            f"Fast mode: a random subsample of {n_train:,} of the {len(train_full):,} training "
            f"records and {n_test:,} of the {len(test_full):,} held-out records."
        )
    else:
        train, test = train_full, test_full
    train = train[nodes].reset_index(drop=True).astype(str)
    test = test[nodes].reset_index(drop=True).astype(str)
    notes.append(
        f"The number of training records ({len(train):,}) is declared public (the UCI files' "
        "sizes are published), so the posterior is conditioned on it; the ledger records the "
        "declaration."
    )
    done()
    grid = (0.3, 3.0) if args.fast else (0.1, 0.3, 1.0, 3.0, 10.0)
    out = Path(args.out)
    summary = run_pipeline(
        title="pymc-rdp demo: a private Bayesian network of the Adult data",
        train=train,
        test=test,
        structure=dict(datasets.ADULT_DAG),
        states=states,
        mechanism=args.mechanism,
        epsilon=epsilon,
        order=order,
        delta=delta,
        neighbours=args.neighbours,
        seed=args.seed,
        noise_seed=args.unsafe_noise_seed,
        sampling=_sampling(args, args.fast),
        out=out,
        progress=progress,
        data_notes=notes,
        compare_grid=grid,
        cpt_nodes=_DEMO_CPT_NODES,
        public_reference=True,
        inference=args.inference,
        command=_command_line(args),
        public_total=len(train),  # the Adult files' record counts are public (UCI)
    )
    _print_summary(summary, out, progress)


def _cmd_fit(args: argparse.Namespace) -> None:
    _check_applicable(args)
    epsilon, order, delta = _budget(args)
    progress = _Progress(6, args.quiet)
    # inputs are checked before any progress output, so that a bad input is one line on stderr
    structure, states = read_structure(args.structure)
    from pymc_rdp.bn.structure import parse_structure

    parse_structure(structure)  # a cycle or a bad name fails here, before the data are read
    nodes = list(structure)
    schema = read_schema(args.schema, nodes) if args.schema is not None else None
    engine = _engine(args)
    binned = any("cuts" in e for e in (schema or {}).values())
    if engine != "pandas" and (args.states_from_data or binned):
        engine = "pandas"  # cut points and states read from the records are applied in memory
    lazy = engine != "pandas"
    raw = read_table(args.data, "data", engine, lazy)
    _check_columns(raw, nodes, "data")
    states = _declared_states(nodes, states, schema, args.states_from_data)
    train = _prepare_frame(_bin_by_schema(raw, schema, "data"), nodes, states, args.missing, "data")
    test = None
    if args.test is not None:
        test = _prepare_frame(
            _bin_by_schema(read_table(args.test, "test", engine, lazy), schema, "test"),
            nodes,
            states,
            args.missing,
            "test",
        )
        if lazy:  # held-out records are scored in memory
            import narwhals as nw

            test = nw.from_native(test).lazy().collect(backend="pandas").to_native()
    from pymc_rdp.curation.domains import check_within, states_from_data

    for frame, what in ((train, "data"), (test, "test")):  # one-line errors before any output
        if frame is not None and not (lazy and frame is train):  # the engine checks its own
            check_within(frame, states, name=what)
    if not lazy:
        states_from_data(train, [v for v in nodes if v not in states], name="data")
    _prepare_out(args.out)
    progress.step(f"read the records of {len(nodes)} variables from {args.data} ({engine})")()
    notes = [f"Data: `{args.data}`; network: `{args.structure}`."]
    from_data = [v for v in nodes if v not in states]
    source = "the schema" + (" and the BIF file" if args.structure.suffix == ".bif" else "")
    if args.schema is None:
        source = "the BIF file"
    if from_data:
        notes.append(
            f"**Outside the guarantee:** the states of {', '.join(map(repr, from_data))} were "
            "read from the records (--states-from-data); which values occur is not covered by "
            "the guarantee (the ledger records it). Declare them in a --schema file instead."
        )
        if len(from_data) < len(nodes):
            notes.append(f"The states of the other variables are declared by {source} (public).")
    else:
        notes.append(f"The states of every variable are declared by {source} (public).")
    if args.missing != "error":
        notes.append(f"Missing values: --missing {args.missing}.")
    out = Path(args.out)
    summary = run_pipeline(
        title=f"pymc-rdp fit: a private Bayesian network of {args.data.name}",
        train=train,
        test=test,
        structure=structure,
        states=states,
        mechanism=args.mechanism,
        epsilon=epsilon,
        order=order,
        delta=delta,
        neighbours=args.neighbours,
        seed=args.seed,
        noise_seed=args.unsafe_noise_seed,
        sampling=_sampling(args, False),
        out=out,
        progress=progress,
        data_notes=notes,
        compare_grid=None,
        cpt_nodes=None,
        public_reference=False,
        inference=args.inference,
        command=_command_line(args),
    )
    _print_summary(summary, out, progress)


#: options whose value is a seed: the report shows the option, never the value
_SEED_OPTIONS = ("--seed", "--unsafe-noise-seed")


def _command_line(args: argparse.Namespace) -> str:
    """The command as typed, with the values of seed options replaced by ``S``."""
    argv = list(sys.argv[1:])
    if not argv:
        return f"{PROG} {args.command}"
    shown: list[str] = []
    hide_next = False
    for a in argv:
        if hide_next:
            shown.append("S")
            hide_next = False
            continue
        name, eq, _ = a.partition("=")
        # argparse accepts unambiguous prefixes (--unsafe 3)
        if len(name) > 3 and any(o.startswith(name) for o in _SEED_OPTIONS):
            if eq:
                shown.append(f"{name}=S")
            else:
                shown.append(a)
                hide_next = True
            continue
        shown.append(a)
    return " ".join([PROG, *shown])


def _public_n_records(bn: Any) -> int | None:
    """The number of records if the caller declared it public, else ``None``.

    An estimate from the noisy table totals would be post-processing, but anyone can compute it
    from the releases; publishing it next to them adds nothing and reads like the exact count.
    """
    declared = any(d["kind"] == "public_total" for d in bn.accountant.declarations)
    return bn.n_records if declared else None


def _scored_records(bn: Any, test: Any) -> int:
    """Held-out records ``bn.log_likelihood(test, unseen="skip")`` scores: every value among
    the fitted states (the rest are left out of its mean)."""
    keep = np.ones(len(test), dtype=bool)
    for v in bn.nodes:
        keep &= np.asarray(test[v].isin(list(bn.states[v])), dtype=bool)
    return int(keep.sum())


def _scored_text(scored: tuple[int, int] | None) -> str:
    """``"1,000 of 1,000 held-out records scored"`` (the analyst's own held-out file)."""
    if scored is None:
        return "held-out records"
    n, total = scored
    return f"{n:,} of {total:,} held-out records scored"


def _print_summary(summary: dict[str, Any], out: Path, progress: _Progress) -> None:
    g = summary["guarantee"]
    if "order" in g:
        what = (
            f"ε = {g['rdp_epsilon_at_order']:.4g} at Rényi order {g['order']:g} "
            f"(= ({g['epsilon_at_delta']:.4g}, {g['delta']:g})-DP)"
        )
    else:
        what = f"(ε, δ) = ({g['epsilon_at_delta']:.4g}, {g['delta']:g})"
    print(f"released with the {summary['mechanism']} mechanism under {what}")
    if summary["test_log_likelihood"] is not None:
        print(
            f"held-out log-likelihood per record: {summary['test_log_likelihood']:.4f} "
            f"({_scored_text(summary['test_scored'])})"
        )
    print(f"results in {out}/ (report.md, posterior.nc, ledger.json, releases.json, figures/)")
    print(f"total time {progress.elapsed:.1f} s")


# ------------------------------------------------------------------------------ ledger


def load_ledger(path: Path, *, expected_digest: str | None = None, key: bytes | None = None) -> Any:
    """An :class:`~pymc_rdp.Accountant` rebuilt from a saved ledger, run or release file.

    A stored accountant is verified by :meth:`~pymc_rdp.Accountant.from_json` (curves
    recomputed, hash chain, ``expected_digest``, signature with ``key``); a refusal is a
    CLIError naming the file.
    """
    path = Path(path)
    verify = {"expected_digest": expected_digest, "key": key}
    if not path.exists():
        raise CLIError(f"file not found: {path}")
    if path.is_dir():
        for name in ("ledger.json", "posterior.nc"):
            if (path / name).exists():
                return load_ledger(path / name, **verify)
        raise CLIError(f"{path} is a directory without ledger.json or posterior.nc")
    with path.open("rb") as f:
        head = f.read(8)
    if head.startswith(b"\x89HDF") or path.suffix.lower() in (".nc", ".h5", ".netcdf"):
        return _ledger_from_doc(_ledger_from_netcdf(path), path, verify)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise CLIError(f"{path} is neither a netCDF result nor a JSON file") from None
    return _ledger_from_doc(doc, path, verify)


#: keys under which a ledger may be stored, most complete first
_LEDGER_KEYS = ("pymc_rdp_accountant", "accountant", "ledger", "pymc_rdp_ledger")


def _ledger_from_doc(doc: Any, path: Path, verify: dict[str, Any] | None = None) -> Any:
    from pymc_rdp.privacy.accountant import Accountant

    verify = verify or {}
    if isinstance(doc, dict):
        fmt = doc.get("format")
        if fmt == "pymc-rdp-ledger":
            try:
                return Accountant.from_json(json.dumps(doc), **verify)
            except ValueError as exc:
                raise CLIError(f"{path}: the ledger does not verify, refused: {exc}") from None
        for key in _LEDGER_KEYS:
            if key in doc:
                inner = doc[key]
                if isinstance(inner, str):
                    try:
                        inner = json.loads(inner)
                    except json.JSONDecodeError:
                        continue
                return _ledger_from_doc(inner, path, verify)
        if fmt == "pymc-rdp.release" or isinstance(doc.get("mechanism"), dict):
            return _ledger_from_releases([doc], path, verify)
    if (
        isinstance(doc, list)
        and doc
        and all(isinstance(d, dict) and isinstance(d.get("mechanism"), dict) for d in doc)
    ):
        return _ledger_from_releases(doc, path, verify)
    raise CLIError(f"{path} holds no pymc-rdp ledger, accountant or release")


def _ledger_from_releases(
    docs: list[dict[str, Any]], path: Path, verify: dict[str, Any] | None = None
) -> Any:
    """A ledger rebuilt from release records: each mechanism re-evaluated on the default orders.

    Used for files that carry mechanisms but no accountant (a single release, or the private
    nodes of a model); the composition is sequential, which is an upper bound for releases
    that were in fact composed in parallel.
    """
    from pymc_rdp.privacy.accountant import Accountant
    from pymc_rdp.privacy.mechanisms import mechanism_from_dict

    if verify and any(v is not None for v in verify.values()):
        raise CLIError(
            f"{path} holds releases but no stored ledger: there is no digest or signature to "
            "verify (point at ledger.json or posterior.nc)"
        )
    acc = Accountant()
    for d in docs:
        entry = d.get("entry") or {}
        try:
            mech = mechanism_from_dict(d["mechanism"])
        except (KeyError, TypeError, ValueError) as exc:
            raise CLIError(f"{path}: a release has an unreadable mechanism ({exc})") from None
        acc.spend(
            mech,
            count=int(entry.get("count", 1)),
            tag=entry.get("tag") or d.get("tag") or d.get("name") or None,
        )
    return acc


def _ledger_from_netcdf(path: Path) -> dict[str, str]:
    """The string attributes of a netCDF file's root group that may hold a ledger."""
    import h5py

    try:
        with h5py.File(path, "r") as f:
            attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
    except OSError as exc:
        raise CLIError(f"cannot read netCDF file {path}: {exc}") from None
    found = {k: v for k, v in attrs.items() if k in _LEDGER_KEYS and isinstance(v, str)}
    if not found:
        raise CLIError(f"{path} has no privacy ledger in its attributes")
    return found


def _cmd_ledger(args: argparse.Namespace) -> None:
    key = None
    if args.key_file is not None:
        key = args.key_file.read_bytes()
        if not key:
            raise CLIError(f"--key-file {args.key_file} is empty")
    if args.digest is not None:
        d = args.digest.strip().lower()
        if len(d) != 64 or any(c not in "0123456789abcdef" for c in d):
            raise _UsageError(f"--digest must be 64 hexadecimal digits, got {args.digest!r}")
    acc = load_ledger(args.file, expected_digest=args.digest, key=key)
    if args.json:
        print(acc.to_json())
        return
    delta = args.delta
    if delta is None and acc.budget is None:
        delta = DEFAULT_DELTA
    print(f"ledger of {args.file}")
    print()
    print(acc.report(delta=delta))
    if len(acc.ledger):
        d = delta if delta is not None else acc.budget[1]
        eps, method = acc.epsilon_and_method(d)
        how = f"best Rényi order {acc.epsilon_and_order(d)[1]:g}"
        if method != "rdp":
            how = f"the {method} bound; RDP conversion {acc.epsilon(d, 'rdp'):.6g} at {how}"
        print(f"(ε, δ)-DP: ε = {eps:.6g} at δ = {d:g} ({how})")
        if acc.budget_order is not None:
            e_b, lam = acc.budget_order
            print(f"RDP: ε({lam:g}) = {float(acc.rdp([lam])[0]):.6g} (budget {e_b:g})")
    if args.digest is not None:
        print(f"the ledger matches the expected digest {args.digest.strip().lower()}")


if __name__ == "__main__":
    sys.exit(main())
