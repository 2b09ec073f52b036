"""Conversion of an RDP curve to (ε, δ)-DP, and back from ε to δ.

An (α, ε(α))-RDP mechanism is (ε, δ)-DP for every α and the ε of the conversion rule at α; the
best guarantee minimises over the orders. The rules and their sources are in :func:`to_dp` and
:func:`to_delta`, the mathematics in ``docs/rdp.md``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import optimize

from pymc_rdp._validation import as_float_array, as_positive, check_delta
from pymc_rdp.privacy.orders import conversion_orders

__all__ = ["METHODS", "Curve", "curve_on", "to_delta", "to_dp"]

ArrayLike = Any
#: An RDP curve: its values on the orders, or a callable mapping an array of orders to them.
Curve = np.ndarray | Callable[[np.ndarray], ArrayLike]

#: The conversion rules of :func:`to_dp`.
METHODS = ("bbghs", "mironov")


def curve_on(orders: ArrayLike, rdp: Curve) -> tuple[np.ndarray, np.ndarray]:
    """Checked one-dimensional orders (> 1) and the curve on them (same shape, ≥ 0, inf allowed)."""
    a = conversion_orders(orders)
    if callable(rdp):
        r = as_float_array(rdp(a), "rdp", allow_inf=True)
    else:
        r = as_float_array(rdp, "rdp", allow_inf=True)
        if r.ndim == 0 and a.size == 1:
            r = r.reshape(1)
    if r.shape != a.shape:
        raise ValueError(f"rdp must have the same shape as orders: {r.shape} vs {a.shape}")
    if (r < 0).any():
        raise ValueError(f"rdp must be >= 0 at every order, got min {r.min()}")
    return a, r


_ORDER_TERMS: dict[bytes, tuple[np.ndarray, np.ndarray, np.ndarray, bool]] = {}


def _order_terms(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """Order-only terms of the conversion, cached per grid of orders (grids are reused a lot).

    Returns 1/(α − 1), log(1 − 1/α) − log(α)/(α − 1) (0 at α = ∞), the α = ∞ mask and whether any
    order is infinite.
    """
    key = a.tobytes()
    terms = _ORDER_TERMS.get(key)
    if terms is None:
        at_inf = np.isinf(a)
        am = np.where(at_inf, 2.0, a)
        inv = np.where(at_inf, 0.0, 1.0 / (am - 1.0))
        shift = np.where(at_inf, 0.0, np.log1p(-1.0 / am) - np.log(am) * inv)
        for arr in (inv, shift, at_inf):
            arr.setflags(write=False)
        terms = (inv, shift, at_inf, bool(at_inf.any()))
        if len(_ORDER_TERMS) > 64:
            _ORDER_TERMS.clear()
        _ORDER_TERMS[key] = terms
    return terms


def _epsilons(a: np.ndarray, r: np.ndarray, log_delta: np.ndarray, method: str) -> np.ndarray:
    """ε at every (δ, order) pair: shape (len(log_delta), len(a)). No minimisation."""
    inv, shift, _, _ = _order_terms(a)
    ld = log_delta[:, None]
    if method == "bbghs":
        # ε(α) + log(1 − 1/α) − (log δ + log α)/(α − 1); at α = ∞ this is ε(∞).
        eps = (r + shift) - ld * inv
        # KL fallback (dp-accounting): δ ≥ sqrt(1 − e^{−KL}) ⇒ (0, δ)-DP, and KL ≤ ε(α).
        eps = np.where(np.exp(2.0 * ld) + np.expm1(-r) > 0, 0.0, eps)
    else:
        eps = r - ld * inv
    return eps


def _single_epsilon(alpha: float, rdp_value: float, log_delta: float, method: str) -> float:
    """ε of the conversion at one finite order α > 1 (scalar version of :func:`_epsilons`)."""
    if not math.isfinite(rdp_value):
        return math.inf
    if method == "bbghs":
        if math.exp(2.0 * log_delta) + math.expm1(-rdp_value) > 0:
            return 0.0
        return rdp_value + math.log1p(-1.0 / alpha) - (log_delta + math.log(alpha)) / (alpha - 1.0)
    return rdp_value - log_delta / (alpha - 1.0)


def _refine(
    a: np.ndarray,
    r: np.ndarray,
    rdp: Curve,
    i: int,
    log_delta: float,
    method: str,
) -> tuple[float, float]:
    """Minimise the conversion over α continuously on the grid cells next to a[i].

    With a callable curve it is evaluated exactly. With an array it is bounded between grid orders
    through the convexity of α ↦ (α − 1) D_α (the log-moment-generating function of the privacy
    loss): linear interpolation of (α − 1) ε(α) between neighbouring grid orders is a valid bound.
    """
    best = (math.inf, float(a[i]))
    for j0, j1 in ((i - 1, i), (i, i + 1)):
        if j0 < 0 or j1 >= a.size:
            continue
        lo, hi = float(a[j0]), float(a[j1])
        if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
            continue
        if callable(rdp):

            def objective(x: float) -> float:
                val = float(np.asarray(rdp(np.array([x])), dtype=np.float64).reshape(-1)[0])
                return _single_epsilon(x, val, log_delta, method)

        else:
            k0, k1 = (lo - 1.0) * float(r[j0]), (hi - 1.0) * float(r[j1])
            if not (math.isfinite(k0) and math.isfinite(k1)):
                continue

            def objective(x: float, lo=lo, hi=hi, k0=k0, k1=k1) -> float:
                w = (x - lo) / (hi - lo)
                kx = (1.0 - w) * k0 + w * k1
                return _single_epsilon(x, kx / (x - 1.0), log_delta, method)

        res = optimize.minimize_scalar(
            objective, bounds=(lo, hi), method="bounded", options={"xatol": 1e-10 * hi}
        )
        if res.fun < best[0]:
            best = (float(res.fun), float(res.x))
    return best


def to_dp(
    orders: ArrayLike,
    rdp: Curve,
    delta: ArrayLike,
    method: str = "bbghs",
    refine: bool = False,
) -> tuple[Any, Any]:
    r"""Convert an RDP curve to (ε, δ)-DP, minimising over the orders.

    ``method="bbghs"`` (default) is Balle, Barthe, Gaboardi, Hsu & Sato 2020 (Theorem 21),
    equivalently Canonne, Kamath & Steinke 2020 (Proposition 12 in v4 of arXiv:2004.00010):

    .. math:: \varepsilon = \min_\alpha\ \varepsilon(\alpha) + \log\frac{\alpha-1}{\alpha}
              - \frac{\log\delta + \log\alpha}{\alpha-1},

    with dp-accounting's additional rule ε = 0 where δ² + expm1(−ε(α)) > 0 (a KL-divergence bound:
    δ ≥ sqrt(1 − e^{−KL}) ≥ total variation). It is used at every order > 1 and is never looser than
    dp-accounting's ``compute_epsilon`` on the same curve and orders. ``method="mironov"`` is
    Mironov 2017, Proposition 3: ε = min_α ε(α) + log(1/δ)/(α − 1). At α = ∞ both give ε(∞).

    Parameters
    ----------
    orders : array_like
        One-dimensional array of orders, all > 1 (``inf`` allowed).
    rdp : array_like or callable
        The curve on ``orders`` (same shape, ≥ 0, ``inf`` allowed), or a callable mapping an array
        of orders to the curve there.
    delta : float or array_like
        Target δ in (0, 1); an array gives arrays back.
    method : {"bbghs", "mironov"}
        Conversion rule.
    refine : bool, default False
        Also minimise continuously over the order on the two grid cells next to the best grid
        order. A callable curve is evaluated exactly there; an array curve is bounded between grid
        orders by the convexity of (α − 1) ε(α) in α (see ``docs/rdp.md``). Never worse than the
        grid result.

    Returns
    -------
    epsilon, best_order : float or numpy.ndarray
        The smallest ε found (≥ 0) and the order that attains it, shaped like ``delta``.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    a, r = curve_on(orders, rdp)
    if isinstance(delta, float) and 0.0 < delta < 1.0:  # fast path for the common scalar case
        d = np.asarray(delta)
    else:
        d = check_delta(delta)
    log_d = np.log(d.reshape(-1))
    if refine:
        order_idx = np.argsort(a, kind="stable")
        a, r = a[order_idx], r[order_idx]
    eps = _epsilons(a, r, log_d, method)
    idx = np.argmin(eps, axis=1)
    rows = np.arange(idx.size)
    best_eps = np.maximum(eps[rows, idx], 0.0)
    best_ord = a[idx]
    if refine:
        for k in range(idx.size):
            if best_eps[k] == 0.0 or not np.isfinite(best_eps[k]):
                continue
            e_ref, a_ref = _refine(a, r, rdp, int(idx[k]), float(log_d[k]), method)
            if e_ref < best_eps[k]:
                best_eps[k], best_ord[k] = max(e_ref, 0.0), a_ref
    if d.ndim == 0:
        return float(best_eps[0]), float(best_ord[0])
    return best_eps.reshape(d.shape), best_ord.reshape(d.shape)


def to_delta(orders: ArrayLike, rdp: Curve, epsilon: ArrayLike) -> tuple[Any, Any]:
    r"""The smallest δ such that an RDP curve implies (ε, δ)-DP, minimised over the orders.

    The inverse of the ``bbghs`` rule of :func:`to_dp` (Canonne, Kamath & Steinke 2020, Prop. 12;
    as dp-accounting's ``compute_delta``):

    .. math:: \log\delta = \min_\alpha \min\Big\{(\alpha-1)\big(\varepsilon(\alpha) - \varepsilon
              + \log(1 - 1/\alpha)\big) - \log\alpha,\ \tfrac12\log\big(1 - e^{-\varepsilon(\alpha)}
              \big)\Big\},

    the second term being the KL bound. At α = ∞, δ = 0 when ε(∞) ≤ ε. The result is capped at 1.

    Parameters
    ----------
    orders : array_like
        One-dimensional array of orders, all > 1 (``inf`` allowed).
    rdp : array_like or callable
        The curve on ``orders`` or a callable returning it.
    epsilon : float or array_like
        Target ε > 0; an array gives arrays back.

    Returns
    -------
    delta, best_order : float or numpy.ndarray
        δ in [0, 1] and the order that attains it, shaped like ``epsilon``.
    """
    a, r = curve_on(orders, rdp)
    e = np.asarray(as_positive(epsilon, "epsilon"), dtype=np.float64)
    ev = e.reshape(-1)[:, None]
    at_inf = np.isinf(a)
    am = np.where(at_inf, 2.0, a)
    finite_r = np.isfinite(r)
    # Curves beyond 1e200 give δ = 1 anyway; clipping keeps the products below overflow.
    rs = np.minimum(np.where(finite_r, r, 0.0), 1e200)
    log_d = (am - 1.0) * (rs - ev + np.log1p(-1.0 / am)) - np.log(am)
    log_d = np.where(finite_r, log_d, np.inf)
    if at_inf.any():
        log_d = np.where(at_inf, np.where(r <= ev, -np.inf, np.inf), log_d)
    # KL bound δ ≤ sqrt(1 − e^{−ε(α)}): −∞ for a zero curve, 0 (δ = 1) for an infinite one.
    usable = (r > 0) & finite_r
    kl = 0.5 * np.log1p(-np.exp(-np.where(usable, r, 1.0)))
    kl = np.where(usable, kl, np.where(r > 0, 0.0, -np.inf))
    log_d = np.minimum(log_d, kl)
    idx = np.argmin(log_d, axis=1)
    rows = np.arange(idx.size)
    delta = np.minimum(np.exp(log_d[rows, idx]), 1.0)
    best = a[idx]
    if e.ndim == 0:
        return float(delta[0]), float(best[0])
    return delta.reshape(e.shape), best.reshape(e.shape)
