"""Fitting a :class:`pymc_rdp.BayesianNetwork`: check the options, count, release, build the model.

:func:`fit_network` is the body of :meth:`pymc_rdp.BayesianNetwork.fit` (its parameters and the
privacy accounting are documented there and in :mod:`pymc_rdp.models.bayesian_network`);
:func:`release_tables` charges every family table as one plan, all or nothing, before any noise
is drawn. The naive baseline's clip-and-normalise CPTs (:func:`naive_cpt`) live here too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from pymc_rdp._validation import check_positive
from pymc_rdp.curation.charge import PlannedRelease, release_plan
from pymc_rdp.curation.domains import declare_from_data
from pymc_rdp.curation.family_tables import check_public_total, count_family_tables
from pymc_rdp.curation.release import Release, check_sensitivity
from pymc_rdp.curation.table_budget import (
    TABLE_MECHANISMS,
    calibrate_tables,
    check_budget,
    make_accountant,
)
from pymc_rdp.distributions.bn_models import conjugate_model, noise_aware_model, point_model
from pymc_rdp.privacy.neighbours import check_neighbours

__all__ = [
    "NAIVE_FLOOR",
    "fit_declarations",
    "fit_network",
    "naive_cpt",
    "normalise_rows",
    "release_tables",
]

_MECHANISMS = (*TABLE_MECHANISMS, "randomized_response", "none")

_LIKELIHOODS = ("auto", "multinomial", "poissonised")
#: clipping floor of the naive baseline (Ponnoprat 2023, Sec. 6, Gaussian and Laplace baselines)
NAIVE_FLOOR = 1e-6


def fit_network(
    bn: Any,
    df: Any,
    *,
    mechanism: str,
    epsilon: float | None,
    order: float | None,
    delta: float | None,
    neighbours: str,
    accountant: Any,
    noise_aware: bool,
    alpha0: float,
    noise_source: Any,
    likelihood: str,
    margins: str,
    noise_model: str,
    public_total: int | None,
    random_state: Any,
) -> Any:
    """Release every family table of ``bn`` privately and build its model; returns ``bn``.

    The parameters, results and errors are those of :meth:`pymc_rdp.BayesianNetwork.fit`.
    Every option is checked and the records counted before anything is charged; the releases
    go through :func:`release_tables`, and ``bn``'s fitted state is
    reset only once they have been drawn.
    """
    if random_state is not None:
        raise TypeError(
            "random_state is not accepted by fit(): privacy noise comes from OS entropy and "
            "is never steered by a user seed. Use noise_source=pmr.UnsafeNoiseSeed(k) for "
            "reproducible, non-private releases in tests, and sample(random_seed=...) for "
            "the MCMC"
        )
    from pymc_rdp.privacy.mechanisms.noise import resolve_noise_source

    source = resolve_noise_source(noise_source)
    if mechanism not in _MECHANISMS:
        raise ValueError(f"mechanism must be one of {_MECHANISMS}, got {mechanism!r}")
    check_neighbours(neighbours)
    if noise_model not in ("per-family", "joint"):
        raise ValueError(f"noise_model must be 'per-family' or 'joint', got {noise_model!r}")
    if margins not in ("free", "network"):
        raise ValueError(f"margins must be 'free' or 'network', got {margins!r}")
    if likelihood not in _LIKELIHOODS:
        raise ValueError(f"likelihood must be one of {_LIKELIHOODS}, got {likelihood!r}")
    if not isinstance(noise_aware, (bool, np.bool_)):
        raise TypeError(f"noise_aware must be True or False, got {noise_aware!r}")
    alpha0 = float(check_positive(alpha0, "alpha0"))
    if mechanism == "none":
        for name, value in (("epsilon", epsilon), ("order", order), ("delta", delta)):
            if value is not None:
                raise ValueError(f"{name} is not used with mechanism='none' (no privacy)")
    else:
        epsilon, order, delta = check_budget(epsilon, order, delta)

    counted = count_family_tables(
        df,
        bn.structure,
        bn._given_states,
        private=mechanism != "none",
        from_data_nodes=bn._from_data_nodes,
        all_from_data=bn._states_from_data,
    )
    states, tables, cards = counted.states, counted.tables, counted.cards
    n_public = check_public_total(public_total, counted.n_records)
    if mechanism != "none" and accountant is None:
        accountant = bn.__dict__.get("_last_accountant")  # a refit charges the previous fit's
    if mechanism == "randomized_response":  # records, not tables (network_randomized)
        from pymc_rdp.models.network_randomized import fit_randomized

        return fit_randomized(
            bn,
            df,
            counted,
            epsilon=epsilon,
            order=order,
            delta=delta,
            neighbours=neighbours,
            accountant=accountant,
            alpha0=alpha0,
            source=source,
            public_total=n_public,
        )

    acc = mech = None
    if mechanism != "none":
        acc = make_accountant(accountant, epsilon, order, delta)
        bn._last_accountant = acc
        mech = calibrate_tables(
            mechanism,
            bn.structure.n_families,
            epsilon=epsilon,
            order=order,
            delta=delta,
            neighbours=neighbours,
            alpha0=alpha0,
            orders=np.asarray(acc.orders, dtype=np.float64),
        )
        releases = release_tables(
            bn, tables, mech, acc, source, neighbours, n_public, counted.from_data
        )

    bn._reset()
    bn.mechanism = mechanism
    bn.neighbours = neighbours
    counts = mech is not None and mech.for_counts
    bn.noise_aware = bool(noise_aware) if counts else None
    bn.noise_model = noise_model if bn.noise_aware else None
    bn.states = states
    bn.cards = cards
    # N leaves the curator only when declared public (or without privacy)
    bn.n_records = counted.n_records if mechanism == "none" else n_public
    bn.alpha0 = alpha0

    if mechanism == "none":
        bn.accountant = accountant
        bn._posterior_params = {v: tables[v] + alpha0 for v in bn.nodes}
        bn._point_cpts = {
            v: a / a.sum(axis=1, keepdims=True) for v, a in bn._posterior_params.items()
        }
        bn.model = conjugate_model(bn, tables)
        bn._fitted = True
        return bn

    bn.accountant = acc
    bn.family_mechanism = mech
    bn.releases = releases
    if mech.releases_probabilities:  # the released CPTs are the result
        bn._point_cpts = {v: normalise_rows(releases[v].values) for v in bn.nodes}
        bn.model = point_model(bn, bn._point_cpts)
    else:
        if bn.n_records is None:
            totals = [float(np.sum(r.values)) for r in releases.values()]
            bn.n_records = max(1, round(float(np.mean(totals))))
        if noise_aware and noise_model == "joint":
            from pymc_rdp.distributions.joint_likelihood import joint_model_from_network

            bn.model = joint_model_from_network(bn)
        elif noise_aware:
            bn.model = noise_aware_model(bn, likelihood, margins)
        else:
            bn._point_cpts = {
                v: naive_cpt(releases[v].values.reshape(-1, cards[v])) for v in bn.nodes
            }
            bn.model = point_model(bn, bn._point_cpts)
    bn._fitted = True
    return bn


def release_tables(
    bn: Any,
    tables: Mapping[str, np.ndarray],
    mech: Any,
    acc: Any,
    source: Any,
    neighbours: str,
    n_public: int | None,
    from_data: list[str],
) -> dict[str, Release]:
    """Every family table of ``bn`` as one plan: charged all or nothing, then drawn.

    A count mechanism releases the flattened table (configuration-major) with integer
    noise; the Dirichlet mechanism one draw per row (the released CPT).
    """
    counts = mech.for_counts
    check_sensitivity(mech, neighbours)
    plan = [
        PlannedRelease(
            mech,
            tables[v].reshape(-1).astype(np.int64) if counts else tables[v],
            f"bn:{v}",
            neighbours=neighbours,
            public_total=None if n_public is None else float(n_public),
        )
        for v in bn.nodes
    ]
    released = release_plan(
        plan,
        acc,
        noise_source=source,
        declarations=fit_declarations(from_data, n_public),
        refusal=(
            f"the {len(plan)} family releases ({mech!r} each) do not fit into the "
            "accountant's remaining budget (without accountant=, a refit is charged to "
            "the accountant of the previous fit)"
        ),
    )
    return dict(zip(bn.nodes, released, strict=True))


def fit_declarations(from_data: list[str], n_public: int | None, why: str = "") -> list[Any]:
    """The ledger declarations of a fit's release plan: the nodes whose states were read from
    the data, and ``N`` when the caller declared it public (``why`` appended to its text)."""
    declarations: list[Any] = [lambda a: declare_from_data(a, from_data, "BayesianNetwork.fit")]
    if n_public is not None:
        declarations.append(
            (
                "public_total",
                f"the number of records N = {n_public} of the fit was declared public by "
                f"the caller{why}",
            )
        )
    return declarations


def naive_cpt(noisy: np.ndarray) -> np.ndarray:
    """The paper's naive baseline: clip the noisy counts at 1e-6 and normalise each row."""
    return normalise_rows(np.maximum(noisy, NAIVE_FLOOR))


def normalise_rows(table: np.ndarray) -> np.ndarray:
    """``table`` as float64, divided by its sums over the last axis (each row sums to 1)."""
    table = np.asarray(table, dtype=np.float64)
    return table / table.sum(axis=-1, keepdims=True)
