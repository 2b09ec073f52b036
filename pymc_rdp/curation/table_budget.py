"""The budget of an estimator's count tables: checks, the accountant, one mechanism for K tables.

An estimator (:class:`~pymc_rdp.BayesianNetwork`, :class:`~pymc_rdp.NaiveBayes`) releases K count
tables of the same records with one mechanism. The tables compose sequentially (Mironov 2017,
"Rényi Differential Privacy", Proposition 1), so

* with a budget ε at order λ every table gets ε/K at λ (:meth:`calibrate_table` of the
  mechanism class, for the tables' sensitivities under the neighbouring relation);
* with an (ε, δ) budget one common noise level is searched, the least whose K-fold composition
  converts to at most (ε, δ): by the tightest valid bound the accountant computes
  (:func:`pymc_rdp.privacy.tight_accounting.planned_epsilon`, ``conversion="tight"``) or by the
  RDP conversion :func:`pymc_rdp.privacy.rdp.to_dp` on the accountant's orders
  (``conversion="rdp"``).

The estimators name their mechanisms by a word (``"gaussian"``, ``"laplace"``, ``"dirichlet"``);
:data:`TABLE_MECHANISMS` maps it to the class, and the class does the rest: count tables get
exactly sampled integer noise (the discrete mechanisms, Canonne, Kamath & Steinke 2020).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pymc_rdp._validation import check_positive
from pymc_rdp.privacy import rdp as _rdp
from pymc_rdp.privacy.accountant import Accountant
from pymc_rdp.privacy.calibration import largest_target, least_noise
from pymc_rdp.privacy.mechanisms import (
    DirichletMechanism,
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    Mechanism,
)
from pymc_rdp.privacy.neighbours import table_sensitivity

__all__ = [
    "MARGIN",
    "TABLE_MECHANISMS",
    "calibrate_tables",
    "check_budget",
    "make_accountant",
]

#: estimator word -> the mechanism class that releases its count tables
TABLE_MECHANISMS: dict[str, type[Mechanism]] = {
    "gaussian": DiscreteGaussianMechanism,
    "laplace": DiscreteLaplaceMechanism,
    "dirichlet": DirichletMechanism,
}

#: relative safety margin on per-table targets so that the composed total stays within budget
#: after floating-point summation
MARGIN = 1e-9


def check_budget(epsilon: Any, order: Any, delta: Any) -> tuple[float, float | None, float | None]:
    """``(ε, λ, δ)`` of a budget given as ε at order λ, or as (ε, δ) (exactly one of the two)."""
    if epsilon is None:
        raise ValueError("epsilon must be given (the privacy budget of the whole fit)")
    eps = float(check_positive(epsilon, "epsilon"))
    if (order is None) == (delta is None):
        raise ValueError("give exactly one of order (an RDP budget) and delta (an (ε, δ) budget)")
    if order is not None:
        lam = float(check_positive(order, "order"))
        if not lam > 1:
            raise ValueError(f"order must be > 1, got {lam!r}")
        return eps, lam, None
    d = float(check_positive(delta, "delta"))
    if not d < 1:
        raise ValueError(f"delta must lie in the open interval (0, 1), got {d!r}")
    return eps, None, d


def make_accountant(
    accountant: Any, epsilon: float, order: float | None, delta: float | None
) -> Accountant:
    """``accountant`` itself, or a new one whose budget is exactly (ε at λ) or (ε, δ)."""
    if accountant is not None:
        if not isinstance(accountant, Accountant):
            raise TypeError(f"accountant must be an Accountant, got {type(accountant).__name__}")
        return accountant
    if order is not None:
        return Accountant.at_order(epsilon, order)
    return Accountant(budget=(epsilon, delta))


def calibrate_tables(
    mechanism: str,
    n_tables: int,
    *,
    epsilon: float,
    order: float | None,
    delta: float | None,
    neighbours: str,
    alpha0: float,
    orders: np.ndarray,
    conversion: str = "tight",
) -> Mechanism:
    """One mechanism for each of ``n_tables`` count tables, meeting the whole budget together.

    Parameters
    ----------
    mechanism : {"gaussian", "laplace", "dirichlet"}
        The estimator's word for the mechanism (:data:`TABLE_MECHANISMS`).
    n_tables : int
        K, the number of tables released from the same records.
    epsilon, order, delta
        The budget: ε at ``order`` (``delta`` None), or (ε, δ). With ``conversion="rdp"`` the
        Dirichlet mechanism of an (ε, δ) budget is calibrated at ``order``.
    neighbours : {"replace-one", "add-remove"}
        Fixes the tables' sensitivities (:func:`~pymc_rdp.curation.release.table_sensitivity`).
    alpha0 : float
        The Dirichlet mechanism's base concentration.
    orders : numpy.ndarray
        The accountant's orders (the (ε, δ) conversion is made on them).
    conversion : {"tight", "rdp"}
        How the K-fold composition is converted to (ε, δ): the tightest bound the accountant
        reports, or the RDP conversion.
    """
    cls = TABLE_MECHANISMS[mechanism]
    need = table_sensitivity(neighbours)
    if delta is None:
        return cls.calibrate_table(epsilon / n_tables * (1.0 - MARGIN), order, need, alpha0=alpha0)
    target = epsilon * (1.0 - MARGIN)
    if conversion == "tight":
        from pymc_rdp.privacy.tight_accounting import planned_epsilon

        def meets(mech: Mechanism) -> bool:
            return planned_epsilon([(mech, n_tables)], delta, orders=orders) <= target

        if cls.releases_probabilities:
            from pymc_rdp.privacy.calibration import calibrate_dirichlet

            return calibrate_dirichlet(
                target,
                delta,
                need["l2"],
                need["linf"],
                alpha0=alpha0,
                count=n_tables,
                orders=orders,
            ).mechanism
        sens = need[cls.sensitivity_norm]
        noise = least_noise(
            lambda x: meets(cls.with_noise(x, need)), cls.noise_start(sens, n_tables, target)
        )
        return cls.with_noise(noise, need)
    if conversion != "rdp":
        raise ValueError(f"conversion must be 'tight' or 'rdp', got {conversion!r}")

    def composed_ok(mech: Mechanism) -> bool:
        curve = n_tables * np.asarray(mech.rdp(orders), dtype=np.float64)
        return bool(_rdp.to_dp(orders, curve, delta)[0] <= target)

    if cls.releases_probabilities:
        # the Dirichlet mechanism is calibrated at λ = order: search the per-table ε(λ)
        if order is None:
            raise ValueError("conversion='rdp' calibrates the Dirichlet mechanism at an order")

        def build(e: float) -> Mechanism:
            return cls.calibrate_table(e, order, need, alpha0=alpha0)

        e_t = largest_target(lambda e: composed_ok(build(e)), epsilon / n_tables)
        return build(e_t)
    sens = need[cls.sensitivity_norm]
    noise = least_noise(lambda x: composed_ok(cls.with_noise(x, need)), sens / epsilon)
    return cls.with_noise(noise, need)
