"""The argument parser of ``pymc-rdp``: its sub-commands, their options and help texts."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from pymc_rdp.cli.config import (
    DEFAULT_DELTA,
    DEFAULT_EPSILON,
    INFERENCES,
    MECHANISMS,
    NEIGHBOURS,
)
from pymc_rdp.cli.errors import UsageError

__all__ = ["PROG", "build_parser"]

PROG = "pymc-rdp"


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, not a usage block."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see '{self.prog} --help')")


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
  pymc-rdp demo --epsilon 8 --mechanism randomized_response --fast

writes OUT/posterior.nc, OUT/ledger.json, OUT/releases.json, OUT/figures/*.png, OUT/report.md
"""

_FIT_EPILOG = """\
examples:
  pymc-rdp fit records.csv --structure dag.json --schema schema.yaml --epsilon 1 --out result
  pymc-rdp fit records.parquet --structure asia.bif --mechanism gaussian \\
      --epsilon 2 --order 8 --test holdout.csv --out result
  pymc-rdp fit records.csv --structure asia.bif --mechanism randomized_response \\
      --epsilon 4 --public-total 5000 --out result   # 5000: the file's known, public size

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
        "exactly sampled discrete Gaussian/Laplace integer noise to the counts); "
        "randomized_response releases every record instead, each value randomised on its own "
        "(needs a public number of records: fit --public-total)",
    )
    p.add_argument(
        "--neighbours",
        choices=NEIGHBOURS,
        default="replace-one",
        help="neighbouring datasets: replace one record (default) or add/remove one",
    )
    p.add_argument(
        "--inference",
        choices=INFERENCES,
        default="auto",
        help="gaussian/laplace only: auto (default) samples the exact posterior given the "
        "releases by data augmentation; 'noise-aware' samples the per-family model with NUTS, "
        "'joint' the likelihood of all tables with their exact covariance with NUTS (slower); "
        "'naive' uses the clip-and-normalise CPTs; randomized_response takes auto or "
        "'noise-aware' (NUTS on the records' exact likelihood)",
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
    p.add_argument(
        "--time-limit",
        type=_positive_float,
        default=None,
        metavar="SECONDS",
        help="data augmentation only: stop sampling after this many wall seconds (every chain "
        "finishes tuning and keeps at least one draw; --draws is then the most kept)",
    )
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
        "--public-total",
        type=_count,
        default=None,
        metavar="N",
        help="declare the number of records public (known outside the data, e.g. a published "
        "file size; recorded in the ledger): required by --mechanism randomized_response, and "
        "lets a Dirichlet fit sample its posterior. A different count of DATA is refused",
    )
    fit.add_argument(
        "--missing",
        choices=("error", "drop", "category"),
        default="error",
        help="records with missing values: refuse (default), drop them, or treat a missing "
        "value as the state 'missing'",
    )

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
    return parser
