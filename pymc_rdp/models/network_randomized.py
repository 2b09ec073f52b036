"""Fitting a :class:`pymc_rdp.BayesianNetwork` by randomized response on every record.

``fit(df, mechanism="randomized_response", ...)`` randomises each record's value of every node
(k-ary randomized response, :class:`pymc_rdp.CategoricalRandomizedResponse`) and releases the
randomised records, one row per record, in place of family tables.

Budget
------
Neighbouring data sets differ in one record (``neighbours="replace-one"``), whose released row
is the only one whose law changes; the other rows cancel. So the fit costs one record's curve,
the sum over the nodes of their randomized-response curves (Mironov 2017, Proposition 1), and
each node is charged once under its own tag. Every node gets the same pure-DP share ``ε₀``,
``p_v = e^{ε₀}/(e^{ε₀} + K_v − 1)`` (Kairouz, Oh & Viswanath 2016), the largest ``ε₀`` whose
summed curve meets the fit's budget (ε at order λ, or (ε, δ) through the accountant's
conversion), found by bisection.

What leaves the curator
-----------------------
The randomised rows, and so their number ``N``: the caller must declare ``N`` public
(``public_total=len(df)``, recorded in the ledger), and add/remove neighbours, under which ``N``
would be private, are refused. States read from the data are declared as for table releases.
Everything is checked and charged before the first value is randomised. The records' codes
are read by the frame's own engine (:func:`pymc_rdp.curation.counting.records.encode_records`)
and randomised in the curator's process.

The analyst's side
------------------
``sample()`` draws the exact posterior of the CPTs given the released rows: by NUTS on the rows'
exact likelihood (:mod:`pymc_rdp.distributions.records_model`, the fit's
:attr:`~pymc_rdp.BayesianNetwork.model`) up to 100,000 joint states of the nodes (a million on
request), and beyond by :class:`pymc_rdp.DataAugmentation`
(:mod:`pymc_rdp.distributions.augmentation_records`), which warns when the randomization leaves
it slow (:func:`iterations_per_draw`). After sampling,
:attr:`~pymc_rdp.BayesianNetwork.cpts` is the posterior mean; before, it holds a moment
estimate: each family table of the released rows with the mechanisms' matrices inverted along
its axes (``E[T̃] = (M_{pa} ⊗ M_v) T``), negative entries set to zero, ``α₀`` added and the rows
normalised.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pymc_rdp.curation.charge import PlannedRelease, release_plan
from pymc_rdp.curation.family_tables import check_public_total
from pymc_rdp.curation.release import Release
from pymc_rdp.curation.table_budget import make_accountant
from pymc_rdp.models.network_fit import fit_declarations

__all__ = [
    "SLOW_MIXING",
    "calibrate_records",
    "fit_randomized",
    "iterations_per_draw",
    "moment_cpts",
    "warn_slow_mixing",
]

#: iterations per effective draw (:func:`iterations_per_draw`) above which data augmentation warns
SLOW_MIXING = 100.0


def iterations_per_draw(p: float, k: int) -> float:
    """Integrated autocorrelation time of data augmentation for a node randomised with ``p``.

    Notes
    -----
    Released through k-ary randomized response, a multinomial margin ``π`` is seen as
    ``λ = q + (p − q) π`` (``q = (1 − p)/(k − 1)``); at ``π`` uniform, ``λ = π`` and the
    observed Fisher information is ``(p − q)²`` times the complete-data one. The fraction of
    missing information is then ``1 − (p − q)²``, which is the lag-one autocorrelation of the
    slowest function of a two-block data-augmentation sampler (Liu, Wong & Kong 1994,
    Biometrika 81; the rate of EM, Dempster, Laird & Rubin 1977), so its integrated
    autocorrelation time is ``(1 + ρ)/(1 − ρ) = 2/(p − q)² − 1`` iterations per effective
    draw. A node's parents and children being latent too only slow the chain further.
    """
    from pymc_rdp.privacy.curves import check_categorical_rr

    k, p = check_categorical_rr(p, k)
    d2 = (p - (1.0 - p) / (k - 1)) ** 2
    return 2.0 / d2 - 1.0


def calibrate_records(
    cards: list[int], epsilon: float, order: float | None, delta: float | None, orders: Any
) -> list[Any]:
    """One :class:`~pymc_rdp.CategoricalRandomizedResponse` per node (``cards`` their numbers
    of states), with the same pure-DP share each, whose summed curve meets the budget (module
    notes).

    Raises
    ------
    ValueError
        A node with fewer than two states.
    """
    from pymc_rdp.privacy.calibration import least_noise
    from pymc_rdp.privacy.mechanisms import CategoricalRandomizedResponse
    from pymc_rdp.privacy.mechanisms.base import CalibrationTarget

    if any(k < 2 for k in cards):
        raise ValueError("mechanism='randomized_response' needs two or more states per node")
    # the accountant's orders convert an (ε, δ) budget; an order budget is met at that order
    target = CalibrationTarget(epsilon, order, delta, orders if delta is not None else None)

    def mechanisms(share: float) -> list[Any]:
        return [CategoricalRandomizedResponse.calibrate(share, k, order=math.inf) for k in cards]

    def meets(x: float) -> bool:  # x = 1/ε₀: more noise as x grows
        return target.met_by(sum(m.rdp(target.orders) for m in mechanisms(1.0 / x)))

    share = 1.0 / least_noise(meets, len(cards) / target.epsilon)
    out = mechanisms(share)
    if not target.met_by(sum(m.rdp(target.orders) for m in out)):  # pragma: no cover - guard
        raise RuntimeError("randomized response: the calibrated mechanisms miss the budget")
    return out


def moment_cpts(
    released: dict[str, np.ndarray], structure: Any, cards: dict[str, int], mechs: dict, alpha0
) -> dict[str, np.ndarray]:
    """The moment estimate of every CPT from the released rows (module notes)."""
    from pymc_rdp.bn.tables import config_index

    n = len(next(iter(released.values())))
    inverse = {}
    for v, m in mechs.items():
        inverse[v] = np.linalg.inv(m.matrix())  # E[released table]: M^T along each axis
    out = {}
    for v in structure.order:
        parents = list(structure.parents[v])
        rows = config_index(released, parents, cards, n)
        n_rows = int(np.prod([cards[p] for p in parents])) if parents else 1
        table = np.zeros((n_rows, cards[v]))
        np.add.at(table, (rows, released[v]), 1.0)
        full = table.reshape([*(cards[p] for p in parents), cards[v]])
        for axis, u in enumerate([*parents, v]):
            full = np.moveaxis(np.tensordot(inverse[u].T, full, axes=([1], [axis])), 0, axis)
        est = np.maximum(full.reshape(n_rows, cards[v]), 0.0) + alpha0
        out[v] = est / est.sum(axis=1, keepdims=True)
    return out


def fit_randomized(
    bn: Any,
    df: Any,
    counted: Any,
    *,
    epsilon: float,
    order: float | None,
    delta: float | None,
    neighbours: str,
    accountant: Any,
    alpha0: float,
    source: Any,
    public_total: int | None,
) -> Any:
    """The body of ``fit(mechanism="randomized_response")`` (module notes); returns ``bn``.

    Raises
    ------
    ValueError
        Add/remove neighbours, ``N`` not declared public, a node with one state.
    BudgetExceededError
        The release does not fit the accountant's remaining budget; nothing was drawn.
    """
    from pymc_rdp.curation.counting.records import encode_records
    from pymc_rdp.distributions.bn_models import point_model
    from pymc_rdp.distributions.records_model import (
        MAX_JOINT_STATES,
        joint_states,
        records_model,
    )

    if neighbours != "replace-one":
        raise ValueError(
            "mechanism='randomized_response' releases one row per record, which publishes N: "
            "only neighbours='replace-one' (N fixed and public) applies"
        )
    n_public = check_public_total(public_total, counted.n_records)
    if n_public is None:
        raise ValueError(
            "mechanism='randomized_response' releases one row per record, which publishes N: "
            "declare it public with public_total=len(df)"
        )
    states, cards = counted.states, counted.cards
    # every record's codes, row-aligned across nodes, read by the frame's own engine
    codes = encode_records(df, {v: states[v] for v in bn.nodes}, name="df")
    acc = make_accountant(accountant, epsilon, order, delta)
    bn._last_accountant = acc
    mechs = dict(
        zip(
            bn.nodes,
            calibrate_records(
                [cards[v] for v in bn.nodes],
                epsilon,
                order,
                delta,
                np.asarray(acc.orders, dtype=np.float64),
            ),
            strict=True,
        )
    )
    plan = [
        PlannedRelease(
            mechs[v], codes[v], f"bn:{v}", neighbours="replace-one", public_total=float(n_public)
        )
        for v in bn.nodes
    ]
    released = release_plan(
        plan,
        acc,
        noise_source=source,
        declarations=fit_declarations(
            counted.from_data, n_public, " (randomized response releases one row per record)"
        ),
        refusal=(
            f"the {len(plan)} randomized-response releases (one per node) do not fit into the "
            "accountant's remaining budget (without accountant=, a refit is charged to the "
            "accountant of the previous fit)"
        ),
    )
    releases: dict[str, Release] = dict(zip(bn.nodes, released, strict=True))
    bn._reset()
    bn.mechanism = "randomized_response"
    bn.neighbours = neighbours
    bn.noise_aware = None
    bn.noise_model = None
    bn.states = states
    bn.cards = cards
    bn.n_records = n_public
    bn.alpha0 = alpha0
    bn.accountant = acc
    bn.releases = releases
    values = {v: np.asarray(r.values).astype(np.int64) for v, r in releases.items()}
    bn._point_cpts = moment_cpts(values, bn.structure, cards, mechs, alpha0)
    if joint_states([cards[v] for v in bn.nodes]) <= MAX_JOINT_STATES:
        bn.model = records_model(
            bn.nodes,
            bn.structure.parents,
            cards,
            {v: mechs[v].matrix() for v in bn.nodes},
            values,
            alpha0,
            bn.coords,
        )
    else:  # too many joint states for the exact likelihood: the moment CPTs, as pm.Data
        bn.model = point_model(bn, bn._point_cpts)
    bn._fitted = True
    return bn


def warn_slow_mixing(mechs: dict[str, Any], nuts_available: bool) -> None:
    """Warn when a node's randomized response leaves data augmentation's chains slow (from the
    public ``p`` and ``k`` only): above :data:`SLOW_MIXING` iterations per effective draw.
    ``nuts_available``: the exact likelihood is modelled for NUTS (few enough joint states)."""
    import warnings

    slow = {v: iterations_per_draw(m.p, m.k) for v, m in mechs.items()}
    node = max(slow, key=slow.__getitem__)
    if slow[node] <= SLOW_MIXING:
        return
    m = mechs[node]
    warnings.warn(
        f"randomized response at this budget keeps little information per record: {node!r} "
        f"keeps its value with probability {m.p:.3g} against {m.q:.3g} for each other state, so "
        f"the exact posterior's chains need about {slow[node]:,.0f} iterations per effective "
        "draw of its margin (2/(p − q)² − 1, the fraction of missing information being "
        "1 − (p − q)²). "
        + (
            "Sample with NUTS (sampler='nuts'), which does not pay this"
            if nuts_available
            else "Run long chains and check the ESS, or release family tables instead"
        ),
        UserWarning,
        stacklevel=5,  # the caller of BayesianNetwork.sample
    )
