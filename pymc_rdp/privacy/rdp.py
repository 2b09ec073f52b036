"""Rényi differential privacy: curves, conversion to (ε, δ)-DP and what a guarantee means.

A mechanism M is (α, ε)-RDP when D_α(M(D) ‖ M(D′)) ≤ ε for every pair of neighbouring data sets
(Mironov 2017, "Rényi Differential Privacy", CSF; arXiv:1702.07476). Its *RDP curve* is the map
α ↦ ε(α). Curves of adaptively composed mechanisms add order by order, so an accountant only needs
the curves on a common grid of orders and a conversion to (ε, δ)-DP at the end.

This module gathers the public names of four modules with one job each:

* :mod:`pymc_rdp.privacy.orders` — :data:`DEFAULT_ORDERS` and the checks on orders;
* :mod:`pymc_rdp.privacy.curves` — the curves of the standard mechanisms (:func:`gaussian`,
  :func:`laplace`, :func:`randomized_response`, :func:`categorical_randomized_response`,
  :func:`dirichlet`, :func:`discrete_gaussian`,
  :func:`discrete_laplace`, :func:`pure_dp`, :func:`zcdp`);
* :mod:`pymc_rdp.privacy.conversion` — :func:`to_dp` and :func:`to_delta`;
* :mod:`pymc_rdp.privacy.guarantees` — event probabilities, posterior odds, group privacy and
  :func:`advanced_composition`.

Every curve takes an array of orders (any shape, broadcast against the parameters) and returns
float64. Orders must be ≥ 1: the order 1 means the limit α → 1 (a Kullback–Leibler bound) and
``inf`` means the limit α → ∞ (a pure-DP bound, ``inf`` where the mechanism has none).
These modules depend on numpy and scipy only. The mathematics, with sources, is in ``docs/rdp.md``.
"""

from __future__ import annotations

from pymc_rdp.privacy.conversion import to_delta, to_dp
from pymc_rdp.privacy.curves import (
    DISCRETE_LAPLACE_EXACT_MAX,
    categorical_randomized_response,
    dirichlet,
    discrete_gaussian,
    discrete_laplace,
    gaussian,
    laplace,
    pure_dp,
    randomized_response,
    zcdp,
)
from pymc_rdp.privacy.guarantees import (
    advanced_composition,
    best_event_probability_bound,
    event_probability_bounds,
    group_privacy,
    posterior_odds_bound,
)
from pymc_rdp.privacy.orders import DEFAULT_ORDERS

__all__ = [
    "DEFAULT_ORDERS",
    "DISCRETE_LAPLACE_EXACT_MAX",
    "advanced_composition",
    "best_event_probability_bound",
    "categorical_randomized_response",
    "dirichlet",
    "discrete_gaussian",
    "discrete_laplace",
    "event_probability_bounds",
    "gaussian",
    "group_privacy",
    "laplace",
    "posterior_odds_bound",
    "pure_dp",
    "randomized_response",
    "to_delta",
    "to_dp",
    "zcdp",
]
