"""What an RDP guarantee means: event probabilities, posterior odds, groups, and the composition
of pure-DP mechanisms (Mironov 2017, "Rényi Differential Privacy", §V and §VII).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pymc_rdp._validation import (
    as_float_array,
    as_positive,
    check_broadcast,
    check_delta,
    check_orders,
)
from pymc_rdp.privacy.conversion import Curve, curve_on

__all__ = [
    "advanced_composition",
    "best_event_probability_bound",
    "event_probability_bounds",
    "group_privacy",
    "posterior_odds_bound",
]

ArrayLike = Any


def _out(arr: np.ndarray) -> np.ndarray:
    """float64 array (0-d arrays are returned as 0-d arrays, never as Python scalars)."""
    return np.asarray(arr, dtype=np.float64)


def _event_orders(order: ArrayLike) -> np.ndarray:
    return check_orders(order, "order", allow_inf=True)


def event_probability_bounds(
    p: ArrayLike, order: ArrayLike, epsilon: ArrayLike
) -> tuple[np.ndarray, np.ndarray]:
    r"""Range of an event's probability on a neighbour, given its baseline probability p.

    For an (α, ε)-RDP mechanism, neighbours D, D′ and any event A with Pr[M(D′) ∈ A] = p
    (Mironov 2017, §VII, Proposition 10 applied in both directions),

    .. math:: e^{-\varepsilon}\, p^{\alpha/(\alpha-1)} \le \Pr[M(D) \in A]
              \le \min\big\{1, (e^{\varepsilon} p)^{(\alpha-1)/\alpha}\big\}.

    At α = ∞ this is the pure-DP range [e^{−ε} p, min(1, e^{ε} p)]. Example from the paper:
    (α, ε) = (10, 0.1) and p = 1e-6 give [1.95e-7, 4.36e-6].

    Parameters
    ----------
    p : array_like
        Baseline probability, in [0, 1].
    order : array_like
        Rényi order α > 1 (``inf`` allowed).
    epsilon : array_like
        RDP parameter at that order, > 0.

    Returns
    -------
    low, high : numpy.ndarray
        Bounds, float64, of the broadcast shape of the inputs.
    """
    pp = as_float_array(p, "p")
    if ((pp < 0) | (pp > 1)).any():
        raise ValueError("p must lie in [0, 1]")
    a = _event_orders(order)
    e = as_positive(epsilon, "epsilon")
    pp, a, e = check_broadcast((pp, "p"), (a, "order"), (e, "epsilon"))
    at_inf = np.isinf(a)
    am = np.where(at_inf, 2.0, a)
    frac = np.where(at_inf, 1.0, (am - 1.0) / am)  # (α − 1)/α
    positive = pp > 0
    log_p = np.log(np.where(positive, pp, 1.0))
    high = np.where(positive, np.exp(np.minimum(frac * (e + log_p), 0.0)), 0.0)
    low = np.where(positive, np.exp(-e + log_p / frac), 0.0)
    return _out(np.minimum(low, pp)), _out(high)


def best_event_probability_bound(orders: ArrayLike, rdp: Curve, p: ArrayLike) -> tuple[Any, Any]:
    r"""Smallest upper bound over the orders on an event's probability, from a whole RDP curve.

    .. math:: \min_\alpha\ \min\big\{1, \exp\big(\tfrac{\alpha-1}{\alpha}(\varepsilon(\alpha)
              + \log p)\big)\big\}

    (Mironov 2017, Proposition 10, at the best order).

    Parameters
    ----------
    orders : array_like
        One-dimensional array of orders > 1 (``inf`` allowed).
    rdp : array_like or callable
        The curve on ``orders`` or a callable returning it.
    p : float or array_like
        Baseline probabilities in (0, 1]; an array gives arrays back.

    Returns
    -------
    high, best_order : float or numpy.ndarray
        The bound and the order that attains it, shaped like ``p``.
    """
    a, r = curve_on(orders, rdp)
    pp = as_float_array(p, "p")
    if ((pp <= 0) | (pp > 1)).any():
        raise ValueError("p must lie in (0, 1]")
    at_inf = np.isinf(a)
    frac = np.where(at_inf, 1.0, (np.where(at_inf, 2.0, a) - 1.0) / np.where(at_inf, 2.0, a))
    log_high = frac * (r + np.log(pp.reshape(-1))[:, None])
    idx = np.argmin(log_high, axis=1)
    rows = np.arange(idx.size)
    high = np.exp(np.minimum(log_high[rows, idx], 0.0))
    if pp.ndim == 0:
        return float(high[0]), float(a[idx[0]])
    return high.reshape(pp.shape), a[idx].reshape(pp.shape)


def posterior_odds_bound(
    prior_odds: ArrayLike, order: ArrayLike, epsilon: ArrayLike, delta: ArrayLike
) -> np.ndarray:
    r"""Upper bound on an adversary's posterior odds that holds with probability ≥ 1 − δ.

    An adversary weighs two neighbouring data sets D (the true one) and D′ with prior odds
    O = Pr[D]/Pr[D′]. Seeing the output o its odds become O·e^{L(o)} with the privacy loss
    L(o) = log(p_D(o)/p_{D′}(o)). (α, ε)-RDP says E_{o∼M(D)}[e^{(α−1)L(o)}] ≤ e^{(α−1)ε}
    (Mironov 2017, §III and §VII: RDP bounds the (α − 1)-th moment of the change in odds), so by
    Markov's inequality

    .. math:: \Pr_{o\sim M(D)}\Big[\text{posterior odds} \ge O\,\exp\big(\varepsilon
              + \tfrac{\log(1/\delta)}{\alpha-1}\big)\Big] \le \delta .

    At α = ∞ the bound is O·e^{ε} with probability 1.

    Parameters
    ----------
    prior_odds : array_like
        Prior odds of D against D′, > 0.
    order : array_like
        Rényi order α > 1 (``inf`` allowed).
    epsilon : array_like
        RDP parameter at that order, > 0.
    delta : array_like
        Probability, over the mechanism's randomness, that the bound may fail; in (0, 1).

    Returns
    -------
    numpy.ndarray
        The bound on the posterior odds (may be ``inf`` on overflow), broadcast shape.
    """
    o = as_positive(prior_odds, "prior_odds")
    a = _event_orders(order)
    e = as_positive(epsilon, "epsilon")
    d = check_delta(delta)
    o, a, e, d = check_broadcast((o, "prior_odds"), (a, "order"), (e, "epsilon"), (d, "delta"))
    at_inf = np.isinf(a)
    am1 = np.where(at_inf, 1.0, a - 1.0)
    log_bound = np.log(o) + e + np.where(at_inf, 0.0, -np.log(d) / am1)
    with np.errstate(over="ignore"):
        return _out(np.exp(log_bound))


def group_privacy(order: ArrayLike, epsilon: ArrayLike, c: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Group privacy for RDP (Mironov 2017, Proposition 2).

    If M is (α, ε)-RDP, g is 2^c-stable (neighbouring inputs map to inputs at distance ≤ 2^c)
    and α ≥ 2^{c+1}, then M∘g is (α/2^c, 3^c ε)-RDP.

    Parameters
    ----------
    order : array_like
        Order α, finite, ≥ 2^{c+1}.
    epsilon : array_like
        RDP parameter at α, > 0.
    c : int
        log₂ of the group size, ≥ 0.

    Returns
    -------
    order, epsilon : numpy.ndarray
        The new order α/2^c and parameter 3^c ε.
    """
    if isinstance(c, bool) or not isinstance(c, (int, np.integer)):
        raise TypeError(f"c must be a whole number >= 0, got {c!r}")
    if c < 0:
        raise ValueError(f"c must be >= 0, got {c}")
    a = check_orders(order, "order", allow_inf=False)
    e = as_positive(epsilon, "epsilon")
    if (a < 2.0 ** (c + 1)).any():
        raise ValueError(f"order must be >= 2**(c+1) = {2 ** (c + 1)} for c = {c}")
    check_broadcast((a, "order"), (e, "epsilon"))
    a, e = np.broadcast_arrays(a, e)
    return _out(a / 2.0**c), _out(e * 3.0**c)


def _check_n(n: ArrayLike) -> np.ndarray:
    arr = as_float_array(n, "n")
    if (arr < 1).any() or (arr != np.round(arr)).any():
        raise ValueError("n must be whole numbers >= 1")
    return arr


def advanced_composition(
    epsilon: ArrayLike, n: ArrayLike, delta: ArrayLike, method: str = "mironov"
) -> np.ndarray:
    r"""ε′ such that the n-fold composition of an ε-DP mechanism is (ε′, δ)-DP.

    ``method="mironov"``: Mironov 2017, §V, Proposition 4, the RDP route. ε-DP implies
    (α, 2αε²)-RDP; n-fold composition gives (α, 2nαε²)-RDP; Proposition 3 at the order
    α = 1 + sqrt(log(1/δ)/(2nε²)) gives ε′ = 2nε² + 2ε sqrt(2n log(1/δ)) ≤ 4ε sqrt(2n log(1/δ)),

    .. math:: \varepsilon' = 4\varepsilon\sqrt{2n\log(1/\delta)}
              \qquad\text{provided}\quad \log(1/\delta) \ge \varepsilon^2 n,

    and ``inf`` (no guarantee from this proposition) where the proviso fails.

    ``method="drv"``: Dwork, Rothblum & Vadhan 2010 (Dwork & Roth 2014, Theorem 3.20, with δ = 0
    per mechanism): ε′ = ε sqrt(2n log(1/δ)) + nε(e^ε − 1).

    ``method="kov"``: Kairouz, Oh & Viswanath 2015, Theorem 3.4 (δ = 0 per mechanism):
    ε′ = min{nε, nε(e^ε−1)/(e^ε+1) + ε sqrt(2n log(e + sqrt(nε²)/δ)),
    nε(e^ε−1)/(e^ε+1) + ε sqrt(2n log(1/δ))}.

    Parameters
    ----------
    epsilon : array_like
        Pure-DP parameter of each mechanism, > 0.
    n : array_like
        Number of compositions, whole numbers ≥ 1.
    delta : array_like
        Target δ in (0, 1).
    method : {"mironov", "drv", "kov"}

    Returns
    -------
    numpy.ndarray
        ε′, float64, of the broadcast shape of the inputs.
    """
    e = as_positive(epsilon, "epsilon")
    nn = _check_n(n)
    d = check_delta(delta)
    e, nn, d = check_broadcast((e, "epsilon"), (nn, "n"), (d, "delta"))
    log_inv_d = -np.log(d)
    if method == "mironov":
        val = 4.0 * e * np.sqrt(2.0 * nn * log_inv_d)
        return _out(np.where(log_inv_d >= e * e * nn, val, np.inf))
    if method == "drv":
        return _out(e * np.sqrt(2.0 * nn * log_inv_d) + nn * e * np.expm1(e))
    if method == "kov":
        lead = nn * e * np.tanh(e / 2.0)  # nε(e^ε − 1)/(e^ε + 1)
        t2 = lead + e * np.sqrt(2.0 * nn * np.log(np.e + np.sqrt(nn * e * e) / d))
        t3 = lead + e * np.sqrt(2.0 * nn * log_inv_d)
        return _out(np.minimum(nn * e, np.minimum(t2, t3)))
    raise ValueError(f"method must be one of ('mironov', 'drv', 'kov'), got {method!r}")
