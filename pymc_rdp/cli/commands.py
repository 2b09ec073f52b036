"""The three commands of ``pymc-rdp``: arguments in, files read, the pipeline run, a summary out.

``demo`` and ``fit`` call :func:`pymc_rdp.cli.pipeline.run_demo` and
:func:`~pymc_rdp.cli.pipeline.run_fit`; ``ledger`` prints a ledger read by
:func:`pymc_rdp.cli.ledger.load_ledger`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pymc_rdp.cli import io
from pymc_rdp.cli.config import (
    DEFAULT_DELTA,
    DEFAULT_EPSILON,
    FitConfig,
    records_conflict,
    release_kind,
)
from pymc_rdp.cli.errors import CLIError, UsageError
from pymc_rdp.cli.ledger import load_ledger
from pymc_rdp.cli.parser import PROG
from pymc_rdp.cli.pipeline import run_demo, run_fit
from pymc_rdp.cli.progress import Steps
from pymc_rdp.cli.report import scored_text

__all__ = ["COMMANDS"]


def _check_applicable(args: argparse.Namespace, samples_dirichlet: bool = False) -> None:
    """Refuse options that the chosen mechanism or inference would ignore.

    * ``--inference`` other than ``auto`` needs ``--mechanism gaussian`` or ``laplace`` (the
      Dirichlet mechanism releases the CPTs themselves: there is nothing to infer; randomised
      records are observed by data augmentation);
    * ``--mechanism randomized_response`` needs replace-one neighbours and, in ``fit``,
      ``--public-total`` (its rows publish the number of records); ``--public-total`` is
      refused with ``--missing drop``, whose count of records left is read from the data;
    * ``--draws``, ``--tune``, ``--chains``, ``--time-limit`` need a sampled posterior: not
      with ``--inference naive`` (point CPTs), nor with the Dirichlet mechanism unless
      ``samples_dirichlet`` (the demo, which declares the Adult files' record count public and
      samples the release's posterior) or ``fit --public-total`` (without a public count ``fit``
      returns the one released draw per CPT row);
    * ``--time-limit`` needs data augmentation: not with ``--inference noise-aware`` or
      ``joint`` (NUTS).
    """
    sampler = [
        f"--{k.replace('_', '-')}"
        for k in ("draws", "tune", "chains", "time_limit")
        if getattr(args, k, None) is not None
    ]
    if getattr(args, "time_limit", None) is not None and args.inference in ("noise-aware", "joint"):
        raise CLIError(
            f"--time-limit: only data augmentation (--inference auto) samples for a time limit; "
            f"--inference {args.inference} samples with NUTS"
        )
    kind = release_kind(args.mechanism)
    public_total = getattr(args, "public_total", None)
    conflict = kind.records and records_conflict(
        args.inference, args.neighbours, lambda k, v: f"--{k} {v}"
    )
    if conflict:
        raise CLIError(conflict)
    if kind.records and args.command == "fit" and public_total is None:
        raise CLIError(
            "--mechanism randomized_response releases one row per record, which publishes their "
            "number: declare it with --public-total N (only if N is known outside the data)"
        )
    if public_total is not None and getattr(args, "missing", "error") == "drop":
        raise CLIError(
            "--public-total with --missing drop: the number of records left after dropping is "
            "read from the data, so it cannot be declared public"
        )
    if kind.cpt_draw and args.inference != "auto":
        raise CLIError(
            f"--inference {args.inference} applies only to --mechanism gaussian or laplace: the "
            "Dirichlet mechanism releases the CPTs themselves"
        )
    if kind.cpt_draw and sampler and not samples_dirichlet and public_total is None:
        raise CLIError(
            f"{', '.join(sampler)}: not used with --mechanism dirichlet in fit without "
            "--public-total: the released CPTs are then one draw each (their posterior needs a "
            "public number of records)"
        )
    if args.inference == "naive" and sampler:
        raise CLIError(
            f"{', '.join(sampler)}: not used with --inference naive, which samples nothing"
        )


def _config(args: argparse.Namespace) -> FitConfig:
    """The pipeline's settings from the options of ``demo`` or ``fit``."""
    return FitConfig(
        mechanism=args.mechanism,
        epsilon=DEFAULT_EPSILON if args.epsilon is None else args.epsilon,
        delta=args.delta,
        order=args.order,
        neighbours=args.neighbours,
        inference=args.inference,
        draws=args.draws,
        tune=args.tune,
        chains=args.chains,
        time_limit=args.time_limit,
        seed=args.seed,
        unsafe_noise_seed=args.unsafe_noise_seed,
    )


def _cmd_demo(args: argparse.Namespace) -> None:
    _check_applicable(args, samples_dirichlet=True)
    config = _config(args)
    io.prepare_out(args.out)
    steps = Steps(7, args.quiet)
    out = Path(args.out)
    result = run_demo(config, out=out, fast=args.fast, command=_command_line(args), progress=steps)
    _print_summary(result.summary, out, steps)


def _cmd_fit(args: argparse.Namespace) -> None:
    _check_applicable(args)
    config = _config(args)
    steps = Steps(6, args.quiet)
    # inputs are checked before any progress output, so that a bad input is one line on stderr
    structure, states = io.read_structure(args.structure)
    from pymc_rdp.bn.structure import parse_structure

    parse_structure(structure)  # a cycle or a bad name fails here, before the data are read
    nodes = list(structure)
    schema = io.read_schema(args.schema, nodes) if args.schema is not None else None
    engine = io.choose_engine(args.engine)
    binned = any("cuts" in e for e in (schema or {}).values())
    if engine != "pandas" and (args.states_from_data or binned):
        engine = "pandas"  # cut points and states read from the records are applied in memory
    lazy = engine != "pandas"
    raw = io.read_table(args.data, "data", engine, lazy)
    io.check_columns(raw, nodes, "data")
    states = io.declared_states(nodes, states, schema, args.states_from_data)
    train = io.prepare_frame(
        io.bin_by_schema(raw, schema, "data"), nodes, states, args.missing, "data"
    )
    test = None
    if args.test is not None:
        test = io.prepare_frame(
            io.bin_by_schema(io.read_table(args.test, "test", engine, lazy), schema, "test"),
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
    io.prepare_out(args.out)
    with steps.step(f"read the records of {len(nodes)} variables from {args.data} ({engine})"):
        pass
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
    if args.public_total is not None:
        notes.append(
            f"The number of records ({args.public_total:,}) is declared public (--public-total: "
            "known outside the data), so the posterior is conditioned on it; the ledger records "
            "the declaration."
        )
    out = Path(args.out)
    result = run_fit(
        train,
        structure,
        config,
        states=states,
        test=test,
        out=out,
        title=f"pymc-rdp fit: a private Bayesian network of {args.data.name}",
        notes=notes,
        command=_command_line(args),
        progress=steps,
        public_total=args.public_total,
    )
    _print_summary(result.summary, out, steps)


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


def _print_summary(summary: dict[str, Any], out: Path, progress: Steps) -> None:
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
            f"({scored_text(summary['test_scored'])})"
        )
    print(f"results in {out}/ (report.md, posterior.nc, ledger.json, releases.json, figures/)")
    print(f"total time {progress.elapsed:.1f} s")


def _cmd_ledger(args: argparse.Namespace) -> None:
    key = None
    if args.key_file is not None:
        key = args.key_file.read_bytes()
        if not key:
            raise CLIError(f"--key-file {args.key_file} is empty")
    if args.digest is not None:
        d = args.digest.strip().lower()
        if len(d) != 64 or any(c not in "0123456789abcdef" for c in d):
            raise UsageError(f"--digest must be 64 hexadecimal digits, got {args.digest!r}")
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


#: the function of each sub-command
COMMANDS = {"demo": _cmd_demo, "fit": _cmd_fit, "ledger": _cmd_ledger}
