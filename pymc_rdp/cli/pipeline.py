"""The pipeline of ``pymc-rdp`` as library functions: release, infer, save, plot, report.

:func:`run_fit` runs what ``pymc-rdp fit`` runs on a table already in memory, :func:`run_demo`
what ``pymc-rdp demo`` runs on the bundled Adult data; both take the settings as a
:class:`FitConfig` and return a :class:`FitResult`. The command line only reads its files,
builds the config and prints the summary.

The release is the curator's step (:meth:`pymc_rdp.BayesianNetwork.fit`: every family table
charged once to the accountant, then noised); everything afterwards (posterior, files, figures,
report) is post-processing of the releases.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pymc_rdp.cli.config import (
    DEFAULT_DELTA,
    DEFAULT_EPSILON,
    TABLE_MECHANISM_NAMES,
    FitConfig,
    FitResult,
    ReleaseKind,
    release_kind,
)
from pymc_rdp.cli.progress import Steps

__all__ = [
    "DEFAULT_DELTA",
    "DEFAULT_EPSILON",
    "FitConfig",
    "FitResult",
    "ReleaseKind",
    "Steps",
    "release_kind",
    "run_demo",
    "run_fit",
]

#: nodes of the Adult network drawn by the demo (few parent configurations, readable plots)
DEMO_CPT_NODES = ("age", "sex", "income")


# ------------------------------------------------------------------------------ entry points


def run_fit(
    train: Any,
    structure: Mapping[str, Sequence[str]],
    config: FitConfig | None = None,
    *,
    states: Mapping[str, Sequence[str]] | None = None,
    test: Any = None,
    out: str | Path | None = None,
    title: str = "A private Bayesian network",
    notes: Sequence[str] = (),
    command: str = "pymc_rdp.cli.run_fit",
    progress: bool | Steps = False,
    public_total: int | None = None,
) -> FitResult:
    """Release the family tables of ``train`` privately, infer the CPTs and, with ``out``, write
    ``posterior.nc``, ``ledger.json``, ``releases.json``, ``figures/*.png`` and ``report.md``.

    Parameters
    ----------
    train : pandas.DataFrame or a lazily read frame
        The records, one column per variable of ``structure``.
    structure : dict
        ``{child: [parents]}``.
    config : FitConfig, optional
        Mechanism, budget, inference and sampler (default ``FitConfig()``: the Dirichlet
        mechanism at (1, 1e-6)-DP).
    states : dict, optional
        The declared states of the variables; a variable without states has them read from the
        records, which the ledger and report flag as outside the guarantee.
    test : pandas.DataFrame, optional
        Held-out records, scored by their mean log-likelihood (not protected).
    out : path, optional
        Folder of the result files; nothing is written without it.
    title, notes, command : str
        The report's title, its notes on the data and the command it names.
    progress : bool or Steps
        Numbered steps with progress bars on stderr (``False``: nothing).
    public_total : int, optional
        The number of records of ``train``, declared public (known outside the data; recorded
        in the ledger). Required by ``"randomized_response"``, whose rows publish it; with the
        Dirichlet mechanism it lets the posterior of the released CPTs be sampled.

    Returns
    -------
    FitResult
    """
    config = FitConfig() if config is None else config
    _check_config(config)
    sampler = [
        k for k in ("draws", "tune", "chains", "time_limit") if getattr(config, k) is not None
    ]
    kind = release_kind(config.mechanism)
    if sampler and kind.cpt_draw and public_total is None:
        raise ValueError(
            f"{', '.join(sampler)}: not used by run_fit with mechanism {config.mechanism!r} "
            "without public_total: the released CPTs are then one draw each (their posterior "
            "needs a public number of records)"
        )
    if kind.records and public_total is None:
        raise ValueError(
            f"mechanism {config.mechanism!r} releases one row per record, which publishes their "
            "number: declare it public with public_total"
        )
    if not isinstance(structure, Mapping):
        raise TypeError(
            f"structure must be a mapping child -> [parents], got {type(structure).__name__}"
        )
    steps = _steps(progress, 2 + (3 if out is not None else 0))
    return _run(
        config,
        train=train,
        test=test,
        structure={str(v): list(p) for v, p in structure.items()},
        states=None if states is None else {v: list(s) for v, s in states.items()},
        out=None if out is None else Path(out),
        steps=steps,
        title=title,
        notes=list(notes),
        command=command,
        sampling=config.sampling(fast=False),
        public_total=public_total,
    )


def run_demo(
    config: FitConfig | None = None,
    *,
    out: str | Path | None = None,
    fast: bool = False,
    command: str = "pymc_rdp.cli.run_demo",
    progress: bool | Steps = False,
) -> FitResult:
    """The demo: the bundled Adult data and the Adult network of Ponnoprat (TMLR 2023).

    Loads ``adult.data`` (training) and ``adult.test`` (held out) with their public schema
    (:data:`pymc_rdp.datasets.ADULT_SCHEMA`), releases and infers as :func:`run_fit`, and, as
    the data are public, also compares the three mechanisms over a grid of ε and draws the
    non-private posterior beside the private one. ``fast`` subsamples 4,000 training and 2,000
    held-out records, with a two-point grid and short sampling.
    """
    from pymc_rdp.cli.io import prepare_out

    config = FitConfig() if config is None else config
    _check_config(config)
    if out is not None:
        prepare_out(Path(out))
    steps = _steps(progress, 4 + (3 if out is not None else 0))
    with steps.step("loading the bundled Adult data (UCI, Becker & Kohavi 1996)"):
        train, test, states, notes = _demo_data(fast, config.seed)
    from pymc_rdp import datasets

    return _run(
        config,
        train=train,
        test=test,
        structure=dict(datasets.ADULT_DAG),
        states=states,
        out=None if out is None else Path(out),
        steps=steps,
        title="pymc-rdp demo: a private Bayesian network of the Adult data",
        notes=notes,
        command=command,
        sampling=config.sampling(fast=fast),
        compare_grid=(0.3, 3.0) if fast else (0.1, 0.3, 1.0, 3.0, 10.0),
        cpt_nodes=DEMO_CPT_NODES,
        public_reference=True,
        public_total=len(train),  # the Adult files' record counts are public (UCI)
    )


def _check_config(config: Any) -> None:
    if not isinstance(config, FitConfig):
        raise TypeError(f"config must be a FitConfig, got {type(config).__name__}")


def _steps(progress: bool | Steps, total: int) -> Steps:
    """The caller's :class:`Steps`, or new ones for ``total`` steps (quiet unless ``True``)."""
    if isinstance(progress, Steps):
        return progress
    if not isinstance(progress, bool):
        raise TypeError(f"progress must be a bool or Steps, got {type(progress).__name__}")
    return Steps(total, quiet=not progress)


def _demo_data(fast: bool, seed: int | None) -> tuple[Any, Any, dict[str, list[str]], list[str]]:
    """The demo's training and held-out records (as text), declared states and data notes."""
    from pymc_rdp import datasets
    from pymc_rdp.curation.domains import parse_schema

    train_full = datasets.adult_public("train")
    test_full = datasets.adult_public("test")
    nodes = list(datasets.ADULT_DAG)
    schema = parse_schema(datasets.ADULT_SCHEMA)
    states = {v: [str(s) for s in schema[v]["states"]] for v in nodes}
    rng = np.random.default_rng(seed if seed is not None else 0)
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
    if fast:
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
    return train, test, states, notes


# ------------------------------------------------------------------------------ the run


def _run(
    config: FitConfig,
    *,
    train: Any,
    test: Any,
    structure: dict[str, list[str]],
    states: dict[str, list[str]] | None,
    out: Path | None,
    steps: Steps,
    title: str,
    notes: list[str],
    command: str,
    sampling: dict[str, int],
    compare_grid: Sequence[float] | None = None,
    cpt_nodes: Sequence[str] | None = None,
    public_reference: bool = False,
    public_total: int | None = None,
) -> FitResult:
    """Release, sample, save, compare, plot and report.

    ``compare_grid`` and ``public_reference`` fit the data again (other budgets, and without
    privacy): only for public data such as the demo's, never for the records being protected.
    """
    from pymc_rdp.cli import io

    figures = io.prepare_out(out) if out is not None else None
    epsilon, order, delta = config.budget
    mechanism = config.mechanism
    noise_aware, inference_note = _choose_inference(config, structure, states, train)

    kind = release_kind(mechanism)
    what = "randomised records" if kind.records else "family tables"
    with steps.step(f"private release of the {what} ({mechanism})"):
        bn = _fit_network(
            structure,
            states,
            train,
            mechanism,
            epsilon,
            order,
            delta,
            config.neighbours,
            config.unsafe_noise_seed,
            noise_aware=noise_aware,
            noise_model="joint" if config.inference == "joint" and noise_aware else "per-family",
            public_total=public_total,
        )
    acc = bn.accountant
    # NUTS only when asked for; a Dirichlet posterior needs a public N (no total is released)
    nuts = noise_aware and config.inference in ("noise-aware", "joint")
    if kind.records and not nuts and not config.time_limit:
        # NUTS while the joint states are few (resolve_sampler); a time limit asks for data
        # augmentation, the sampler that takes one
        from pymc_rdp.models.posterior_sampling import resolve_sampler

        nuts = resolve_sampler(bn, None) == "nuts"
        how = "NUTS on their exact likelihood" if nuts else "data augmentation"
        inference_note = f"exact posterior given the randomised records, by {how}"
    if inference_note:
        steps.info(f"inference: {inference_note}")
    sampled = noise_aware or (kind.cpt_draw and bn.n_records is not None)
    sampler_name = "NUTS" if nuts else "data augmentation"
    limit = config.time_limit  # FitConfig allows it with data augmentation only
    planned = f"{sampling['draws']} draws"
    if limit:
        planned = f"up to {planned} in {limit:g} s"
    if sampled:
        with (
            steps.step(
                f"posterior sampling ({sampler_name}, {sampling['chains']} chain(s) x {planned}, "
                f"{sampling['tune']} tuning steps)",
                bar=False,  # PyMC draws its own bars, sent to stderr
            ),
            steps.stdout_to_stderr(),
        ):
            nuts_options = {"progressbar": steps.bars, "compute_convergence_checks": False}
            idata = bn.sample(
                draws=sampling["draws"],
                tune=sampling["tune"],
                chains=sampling["chains"],
                random_seed=config.seed,
                sampler="nuts" if nuts else "augmentation",
                **(nuts_options if nuts else {}),
                **({"time_limit": limit} if limit else {}),
            )
        if limit:  # the draws kept within the limit, as the report states them
            sampling = dict(sampling, draws=int(idata["posterior"].sizes["draw"]), time_limit=limit)
    else:
        with steps.step("collecting the released CPTs (no MCMC needed)"):
            idata = bn.sample(random_seed=config.seed, sampler="nuts")

    ledger_json = acc.to_json()
    if out is not None:
        with steps.step("writing posterior.nc, ledger.json, releases.json"):
            releases = {
                "format": "pymc-rdp.bn-releases",
                "version": 1,
                "mechanism": mechanism,
                "neighbours": config.neighbours,
                "structure": {v: list(bn.parents[v]) for v in bn.nodes},
                # the number of records only when the caller declared it public (never the raw N)
                "n_records": _public_n_records(bn),
                "families": [_release_record(bn, v, mechanism) for v in bn.nodes],
                "ledger": json.loads(ledger_json),
            }
            io.write_results(out, idata, ledger_json, releases)

    test_ll = test_scored = None
    if test is not None:
        test_ll = bn.log_likelihood(test, unseen="skip")
        test_scored = (_scored_records(bn, test), len(test))
    results = ref_idata = None
    reference: dict[str, float] = {}
    if compare_grid or public_reference:
        results, reference, ref_idata = _compare(
            config, steps, structure, states, train, test, compare_grid, public_reference, sampling
        )
        if results is not None and out is not None:
            results.to_csv(out / "privacy_utility.csv", index=False)

    written: list[str] = []
    if figures is not None:
        from pymc_rdp.cli.figures import figure_jobs, save_figure

        jobs = figure_jobs(
            bn,
            idata,
            mechanism=mechanism,
            noise_aware=noise_aware,
            comparison=results,
            reference=reference,
            order=order,
            delta=delta,
            ref_idata=ref_idata,
            cpt_nodes=cpt_nodes,
        )
        with steps.step("figures", total=len(jobs)) as advance:
            for job in jobs:
                written.append(save_figure(job, figures))
                advance(1)

    summary = {
        "title": title,
        "command": command,
        "mechanism": mechanism,
        "release_kind": release_kind(mechanism),
        "noise_aware": noise_aware,
        "inference_note": inference_note,
        "neighbours": config.neighbours,
        "n_records_public": _public_n_records(bn),
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
        "data_notes": notes,
        "out": str(out),
    }
    if out is not None:
        from pymc_rdp.cli.report import render_report

        with steps.step("report.md"):
            text = render_report(bn, summary, steps.elapsed)
            (out / "report.md").write_text(text, encoding="utf-8")
    return FitResult(network=bn, idata=idata, summary=summary, out=out)


def _compare(
    config: FitConfig,
    steps: Steps,
    structure: dict[str, list[str]],
    states: dict[str, list[str]] | None,
    train: Any,
    test: Any,
    grid: Sequence[float] | None,
    public_reference: bool,
    sampling: dict[str, int],
) -> tuple[Any, dict[str, float], Any]:
    """The demo's privacy-utility study: every mechanism at every ε of ``grid`` (naive CPTs) and
    the non-private fit; returns (frame or None, reference log-likelihoods, non-private draws).
    """
    import pandas as pd

    _, order, delta = config.budget
    runs = [(m, e) for e in (grid or ()) for m in TABLE_MECHANISM_NAMES]
    rows = []
    reference: dict[str, float] = {}
    ref_idata = None
    with steps.step(
        f"privacy-utility comparison: {len(runs)} extra fits "
        f"({', '.join(TABLE_MECHANISM_NAMES)} at ε in {list(grid or ())}) and a non-private fit",
        total=len(runs) + 1,
    ) as advance:
        for m, e in runs:
            b = _fit_network(
                structure,
                states,
                train,
                m,
                e,
                order,
                delta,
                config.neighbours,
                config.unsafe_noise_seed,
                noise_aware=False,
            )
            rows.append(
                {"mechanism": m, "epsilon": e, "log_likelihood": b.log_likelihood(test, "skip")}
            )
            advance(1)
        b = _fit_network(
            structure, states, train, "none", None, None, None, config.neighbours, None
        )
        if test is not None:
            reference["non-private (posterior mean)"] = b.log_likelihood(test, "skip")
        if public_reference:
            ref_idata = b.sample(
                draws=max(sampling["draws"], 200),
                chains=sampling["chains"],
                random_seed=config.seed,
            )
        advance(1)
    return (pd.DataFrame(rows) if rows else None), reference, ref_idata


def _fit_network(
    structure: Any,
    states: dict[str, list[str]] | None,
    train: Any,
    mechanism: str,
    epsilon: float | None,
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


def _release_record(bn: Any, node: str, mechanism: str) -> dict[str, Any]:
    """One family's entry of ``releases.json``: its table layout and what was released."""
    rel = bn.releases[node]
    record: dict[str, Any] = {
        "node": node,
        "parents": list(bn.parents[node]),
        "parent_configurations": bn.parent_configurations(node),
        "states": [str(s) for s in bn.states[node]],
    }
    kind = release_kind(mechanism)
    if kind.records:
        record["kind"] = "randomised records (one released state code per record, in record order)"
        record["mechanism"] = rel.mechanism.to_dict()
        record["values"] = np.asarray(rel.values).astype(np.int64).tolist()
    elif not kind.cpt_draw:
        record["kind"] = "noisy counts (flattened family table: parent configuration-major)"
        record["release"] = rel.to_dict()
    else:
        record["kind"] = "released CPT (one exact Dirichlet-mechanism draw per row)"
        record["mechanism"] = bn.family_mechanism.to_dict()
        record["values"] = rel.values.tolist()
    return record


def _choose_inference(
    config: FitConfig, structure: Any, states: Any, train: Any
) -> tuple[bool, str]:
    """(noise_aware, explanation) for Gaussian/Laplace releases and randomised records."""
    kind = release_kind(config.mechanism)
    if kind.records and config.inference == "noise-aware":
        return True, "exact posterior given the randomised records, by NUTS (requested)"
    if kind.records:  # the sampler is chosen once the fit is known (_run)
        return True, "exact posterior given the randomised records"
    if kind.cpt_draw:
        return False, ""
    inference = config.inference
    if inference == "noise-aware":
        return True, "noise-aware posterior (requested)"
    if inference == "joint":
        return True, "noise-aware posterior with the joint likelihood of all tables (requested)"
    if inference == "naive":
        return False, "naive baseline: noisy counts clipped at 1e-6 and normalised (requested)"
    return True, "exact posterior given the releases, by data augmentation"


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
