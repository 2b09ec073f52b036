"""RDP curves of the standard mechanisms (Mironov 2017; Bun & Steinke 2016; Ponnoprat 2023;
Canonne, Kamath & Steinke 2020).

Every curve takes an array of orders (any shape, broadcast against the parameters) and returns
float64. Orders must be ≥ 1: the order 1 means the limit α → 1 (a Kullback–Leibler bound) and
``inf`` means the limit α → ∞ (a pure-DP bound, ``inf`` where the mechanism has none). All curves
are evaluated in log space (``log1p``/``expm1``) and stay finite and warning-free up to α = 1e6.
Curves of adaptively composed mechanisms add order by order (Mironov 2017, Proposition 1).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import special

from pymc_rdp._validation import as_positive, check_broadcast, check_probability_open
from pymc_rdp.privacy._series import (
    _dispatch,
    _exp_m1_plus,
    _grid_of,
    _laplace_on_grid,
    _laplace_outer,
    _laplace_rows_on_grid,
    _log1p_minus,
    _rr_on_grid,
    _rr_outer,
)
from pymc_rdp.privacy.orders import curve_orders, split_orders

__all__ = [
    "DISCRETE_LAPLACE_EXACT_MAX",
    "categorical_randomized_response",
    "dirichlet",
    "discrete_gaussian",
    "discrete_laplace",
    "gaussian",
    "laplace",
    "pure_dp",
    "randomized_response",
    "zcdp",
]

ArrayLike = Any


def _out(arr: np.ndarray) -> np.ndarray:
    """float64 array (0-d arrays are returned as 0-d arrays, never as Python scalars)."""
    return np.asarray(arr, dtype=np.float64)


def gaussian(orders: ArrayLike, sigma: ArrayLike, sensitivity: ArrayLike = 1.0) -> np.ndarray:
    r"""RDP curve of the Gaussian mechanism.

    .. math:: \varepsilon(\alpha) = \frac{\alpha\,\Delta_2^2}{2\sigma^2}

    (Mironov 2017, Proposition 7 / Table II). The α → 1 limit is the KL divergence Δ₂²/(2σ²);
    at α = ∞ the curve is ``inf`` (the Gaussian mechanism is not pure-DP).

    Parameters
    ----------
    orders : array_like
        Rényi orders, ≥ 1 (``inf`` allowed).
    sigma : array_like
        Standard deviation of the noise, > 0.
    sensitivity : array_like, default 1.0
        ℓ2 sensitivity Δ₂ of the query, > 0.

    Returns
    -------
    numpy.ndarray
        ε(α), float64, of the broadcast shape of the inputs.
    """
    a = curve_orders(orders)
    s = as_positive(sigma, "sigma")
    d = as_positive(sensitivity, "sensitivity")
    if isinstance(s, float) and isinstance(d, float):
        out = gaussian_checked(a, s, d)
        return out if a.ndim else np.asarray(out)
    a, s, d = check_broadcast((a, "orders"), (s, "sigma"), (d, "sensitivity"))
    # the parameter part first: one full-size product when a batch of curves is evaluated
    return _out(a * ((d / s) ** 2 / 2.0))


def laplace(orders: ArrayLike, scale: ArrayLike, sensitivity: ArrayLike = 1.0) -> np.ndarray:
    r"""RDP curve of the Laplace mechanism with scale b and ℓ1 sensitivity Δ₁.

    With t = Δ₁ / b (Mironov 2017, Proposition 6 / Table II),

    .. math::
        \varepsilon(\alpha) = \frac{1}{\alpha-1}\log\Big[\frac{\alpha}{2\alpha-1}e^{(\alpha-1)t}
            + \frac{\alpha-1}{2\alpha-1}e^{-\alpha t}\Big]
          = t + \frac{1}{\alpha-1}\,\mathrm{log1p}\Big[\frac{\alpha-1}{2\alpha-1}\,
            \mathrm{expm1}\big(-(2\alpha-1)t\big)\Big],

    the second form being the one evaluated (no overflow for any α) where (2α − 1) t ≥ 1/4.
    Below, where that form cancels, the curve is the power series Σ_k a_k(α) t^k of the cumulant
    generating function of a shifted Bernoulli variable (18 terms; coefficients computed exactly
    once per grid of orders), so weak mechanisms keep full relative precision. Limits: α → 1
    gives t + e^{−t} − 1, α = ∞ gives t (the pure-DP guarantee).

    A scalar parameter costs a few vector operations on the grid; rows of parameters against a
    row of orders (shapes (n, 1) and (k,)) are evaluated as one batch.

    Parameters
    ----------
    orders : array_like
        Rényi orders, ≥ 1 (``inf`` allowed).
    scale : array_like
        Laplace scale b, > 0.
    sensitivity : array_like, default 1.0
        ℓ1 sensitivity Δ₁, > 0.

    Returns
    -------
    numpy.ndarray
        ε(α), float64, of the broadcast shape of the inputs.
    """
    a = curve_orders(orders)
    b = as_positive(scale, "scale")
    d = as_positive(sensitivity, "sensitivity")
    if isinstance(b, float) and isinstance(d, float):
        t = laplace_ratio(b, d)
        grid = _grid_of(a)
        val = _laplace_on_grid(grid, t)
        if val is None:
            return _laplace_elementwise(a, t)
        if grid.perm is None and a.ndim == 1:
            # the fresh array itself (no view): the accountant keeps it without copying
            return val
        return grid.unsort(val).reshape(a.shape)
    a, b, d = check_broadcast((a, "orders"), (b, "scale"), (d, "sensitivity"))
    t = np.asarray(d / b, dtype=np.float64)
    return _dispatch(a, t, _laplace_on_grid, _laplace_outer, _laplace_elementwise)


# ------------------------------------------------------------------ checked arguments
# The kernels the accountant calls for the built-in Gaussian and Laplace mechanisms, on its own
# (checked, sorted, read-only) orders: the same floats as gaussian() and laplace(), which end in
# them, without re-checking anything.


def gaussian_coefficient(sigma: float, sensitivity: float) -> float:
    """Δ₂²/(2σ²), the slope of the Gaussian curve ε(α) = α Δ₂²/(2σ²), for positive floats."""
    return (sensitivity / sigma) ** 2 / 2.0


def gaussian_checked(orders: np.ndarray, sigma: float, sensitivity: float) -> np.ndarray:
    """:func:`gaussian` for checked arguments: orders a float64 array of valid orders, ``sigma``
    and ``sensitivity`` finite positive floats. A fresh array, the same floats as :func:`gaussian`
    (which calls it); row i of ``np.multiply(c[:, None], orders)``, c the
    :func:`gaussian_coefficient` of each mechanism, is the same floats again (one rounded product
    per element)."""
    return gaussian_of_coefficient(orders, gaussian_coefficient(sigma, sensitivity))


def gaussian_of_coefficient(orders: np.ndarray, coefficient: float) -> np.ndarray:
    """The Gaussian curve c·α of the coefficient c = :func:`gaussian_coefficient` (fresh)."""
    return np.multiply(orders, coefficient)


def laplace_ratio(scale: float, sensitivity: float) -> float:
    """t = Δ₁/b, the one parameter of the Laplace curve."""
    return sensitivity / scale


def laplace_checked(orders: np.ndarray, scale: float, sensitivity: float) -> np.ndarray | None:
    """:func:`laplace` for checked arguments: orders a sorted 1-D float64 array of valid orders,
    ``scale`` and ``sensitivity`` finite positive floats.

    A fresh array with the same floats as :func:`laplace`, or None where :func:`laplace` takes
    another path (unsorted orders).
    """
    return laplace_of_ratio(orders, laplace_ratio(scale, sensitivity))


def laplace_of_ratio(orders: np.ndarray, t: float) -> np.ndarray | None:
    """:func:`laplace_checked` for the ratio t = Δ₁/b (a positive finite float)."""
    grid = _grid_of(orders)
    if grid.perm is not None:
        return None
    val = _laplace_on_grid(grid, t)
    return _laplace_elementwise(orders, t) if val is None else val


def laplace_rows_checked(orders: np.ndarray, t: np.ndarray) -> np.ndarray | None:
    """The Laplace curves of the ratios ``t`` (positive, finite) as rows of a fresh array.

    Row i holds the same floats as ``laplace_checked(orders, b, Δ)`` for ``t[i] = Δ/b``
    (:func:`pymc_rdp.privacy._series._laplace_rows_on_grid` rounds every element as the one-row
    evaluation does); None for unsorted orders.
    """
    grid = _grid_of(orders)
    if grid.perm is not None:
        return None
    rows, declined = _laplace_rows_on_grid(grid, t)
    for i in declined.tolist():
        rows[i] = _laplace_elementwise(orders, float(t[i]))
    return rows


def _laplace_elementwise(a: np.ndarray, t: Any) -> np.ndarray:
    """Laplace curve elementwise for any broadcastable orders and t (no per-grid tables)."""
    at_one, at_inf, am = split_orders(a)
    am1 = am - 1.0
    two_am1 = 2.0 * am - 1.0
    s = two_am1 * t
    u = am1 / two_am1 * np.expm1(-s)
    if np.all(t >= 0.05):
        # relative rounding error of the direct form is about 1e-16 t/ε(α) ≤ 1e-14 here
        val = t + np.log1p(u) / am1
        kl = t + np.expm1(-t)
    else:
        # t + log1p(u)/(α−1) = [e^{−s} − 1 + s]/(2α − 1) + [log1p(u) − u]/(α − 1): both brackets
        # are evaluated without cancellation, so small t keeps full relative precision.
        val = _exp_m1_plus(s) / two_am1 + _log1p_minus(u) / am1
        kl = _exp_m1_plus(t)
    val = np.where(at_one, kl, val)
    val = np.where(at_inf, t, val)
    return _out(val)


def randomized_response(orders: ArrayLike, p: ArrayLike) -> np.ndarray:
    r"""RDP curve of binary randomized response that reports the truth with probability p.

    With L = log(p / (1 − p)) (Mironov 2017, Proposition 5 / Table II),

    .. math::
        \varepsilon(\alpha) = \frac{1}{\alpha-1}\log\big[p^\alpha(1-p)^{1-\alpha}
            + (1-p)^\alpha p^{1-\alpha}\big]
          = L + \frac{1}{\alpha-1}\,\mathrm{log1p}\big[(1-p)\,\mathrm{expm1}(-2(\alpha-1)L)\big].

    The second form is evaluated except where p − q and (α − 1) L are both small: there the
    curve is (p − q) L + Σ_n c_n(p) (α − 1)^{n−1}, the power series of the cumulant generating
    function of the privacy loss (18 terms), which keeps full relative precision for p near 1/2.
    Limits: α → 1 gives (2p − 1) L, α = ∞ gives L.

    Parameters
    ----------
    orders : array_like
        Rényi orders, ≥ 1 (``inf`` allowed).
    p : array_like
        Probability of reporting the true bit, in the open interval (1/2, 1).

    Returns
    -------
    numpy.ndarray
        ε(α), float64, of the broadcast shape of the inputs.
    """
    a = curve_orders(orders)
    if isinstance(p, float) and 0.5 < p < 1.0:
        grid = _grid_of(a)
        val = _rr_on_grid(grid, p)
        if val is not None:
            return grid.unsort(val).reshape(a.shape)
        return _rr_elementwise(a, p)
    pp = check_probability_open(p, "p", 0.5, 1.0)
    a, pp = check_broadcast((a, "orders"), (pp, "p"))
    return _dispatch(a, pp, _rr_on_grid, _rr_outer, _rr_elementwise)


def _rr_elementwise(a: np.ndarray, pp: Any) -> np.ndarray:
    """Randomized-response curve elementwise for any broadcastable orders and p."""
    q = 1.0 - pp
    gap = 2.0 * pp - 1.0  # p − q, exact for p in (1/2, 1)
    big_l = np.log1p(gap / q)
    at_one, at_inf, am = split_orders(a)
    am1 = am - 1.0
    w = 2.0 * am1 * big_l
    u = q * np.expm1(-w)
    if np.all(gap >= 0.05):
        # relative rounding error of the direct form is about 1e-16 L/ε(α) ≤ 1e-14 here
        val = big_l + np.log1p(u) / am1
    else:
        # L + log1p(u)/(α−1) = (p − q)L + [q(e^{−w} − 1 + w) + log1p(u) − u]/(α − 1), a sum of
        # terms without cancellation (the bracket is ≈ 2pq(α − 1)²L² > 0).
        val = gap * big_l + (q * _exp_m1_plus(w) + _log1p_minus(u)) / am1
    val = np.where(at_one, gap * big_l, val)
    val = np.where(at_inf, big_l, val)
    return _out(val)


def categorical_randomized_response(orders: ArrayLike, p: float, k: int) -> np.ndarray:
    r"""RDP curve of k-ary randomized response: the true value of ``k`` with probability ``p``,
    each of the ``k − 1`` others with probability ``q = (1 − p)/(k − 1)``.

    Two neighbouring inputs (the value changes) give output distributions that differ only at the
    two values; the other ``k − 2`` have probability ``q`` under both. With ``L = log(p/q)`` and
    ``w = (α − 1) L``, Rényi's divergence (Mironov 2017, Definition 3) sums to

    .. math::
        \varepsilon(\alpha) = \frac{1}{\alpha-1}\log\big[p^\alpha q^{1-\alpha}
            + q^\alpha p^{1-\alpha} + (k-2)\,q\big]
          = \frac{\mathrm{log1p}\big[p\,\mathrm{expm1}(w) + q\,\mathrm{expm1}(-w)\big]}
                 {\alpha-1}
          = L + \frac{\mathrm{log1p}\big[q\,\mathrm{expm1}(-2w)
                 + (k-2)\,q\,\mathrm{expm1}(-w)\big]}{\alpha-1},

    (``p + (k − 1) q = 1``), the second form for ``w ≤ 1``, the third beyond it (no overflow).
    Limits: ``α → 1`` gives the Kullback–Leibler divergence ``(p − q) L``, ``α = ∞`` gives ``L``,
    the mechanism's pure-DP ε (Kairouz, Oh & Viswanath 2016, "Extremal mechanisms for local
    differential privacy"). ``k = 2`` is binary randomized response
    (:func:`randomized_response`).

    Parameters
    ----------
    orders : array_like
        Rényi orders, ≥ 1 (``inf`` allowed).
    p : float
        Probability of reporting the true value, in the open interval (1/k, 1).
    k : int
        Number of values, ≥ 2.

    Returns
    -------
    numpy.ndarray
        ε(α), float64, of the shape of ``orders``.
    """
    kk, pp = check_categorical_rr(p, k)
    a = curve_orders(orders)
    q = (1.0 - pp) / (kk - 1)
    big_l = math.log(pp) - math.log(q)
    at_one, at_inf, am = split_orders(a)
    am1 = am - 1.0
    w = am1 * big_l
    with np.errstate(over="ignore"):
        near = np.log1p(pp * np.expm1(np.minimum(w, 1.0)) + q * np.expm1(-np.minimum(w, 1.0)))
    far = big_l * am1 + np.log1p(q * np.expm1(-2.0 * w) + (kk - 2) * q * np.expm1(-w))
    val = np.where(w <= 1.0, near, far) / am1
    val = np.where(at_one, (pp - q) * big_l, val)
    val = np.where(at_inf, big_l, val)
    return _out(val)


def check_categorical_rr(p: Any, k: Any) -> tuple[int, float]:
    """``(k, p)`` of k-ary randomized response, checked: ``k`` an integer ≥ 2, ``p`` a finite
    number in the open interval (1/k, 1) (at ``p ≤ 1/k`` the true value is no likelier than
    another, at ``p = 1`` there is no noise)."""
    k = check_value_count(k)
    if isinstance(p, bool) or not isinstance(p, (int, float, np.integer, np.floating)):
        raise TypeError(f"p must be a number in (1/k, 1), got {p!r}")
    pf = float(p)
    if not (math.isfinite(pf) and 1.0 / int(k) < pf < 1.0):
        raise ValueError(f"p must lie in the open interval (1/k, 1) = (1/{int(k)}, 1), got {p!r}")
    return k, pf


def check_value_count(k: Any) -> int:
    """``k``, the number of values of k-ary randomized response, as an int ≥ 2 (checked)."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"k must be an integer >= 2, got {k!r}")
    if k < 2:
        raise ValueError(f"k must be an integer >= 2, got {k!r}")
    return int(k)


def pure_dp(orders: ArrayLike, epsilon: ArrayLike) -> np.ndarray:
    r"""RDP curve implied by pure ε-DP.

    .. math:: \varepsilon(\alpha) = \min\big(\varepsilon,\ \alpha\varepsilon^2/2\big)

    The first term is monotonicity of D_α in α (D_α ≤ D_∞ ≤ ε, Mironov 2017 Prop. 1); the second
    follows from ε-DP ⇒ (ε²/2)-zCDP (Bun & Steinke 2016, Proposition 3.3).

    Parameters
    ----------
    orders : array_like
        Rényi orders, ≥ 1 (``inf`` allowed; the value there is ε).
    epsilon : array_like
        Pure-DP parameter, > 0.

    Returns
    -------
    numpy.ndarray
        ε(α), float64, of the broadcast shape of the inputs.
    """
    a = curve_orders(orders)
    e = as_positive(epsilon, "epsilon")
    a, e = check_broadcast((a, "orders"), (e, "epsilon"))
    return _out(np.minimum(e, a * e * e / 2.0))


def zcdp(orders: ArrayLike, rho: ArrayLike) -> np.ndarray:
    r"""RDP curve of a ρ-zCDP mechanism: ε(α) = ρα (Bun & Steinke 2016, Definition 1.1).

    Parameters
    ----------
    orders : array_like
        Rényi orders, ≥ 1 (``inf`` allowed; the value there is ``inf``).
    rho : array_like
        zCDP parameter, > 0.

    Returns
    -------
    numpy.ndarray
        ε(α), float64, of the broadcast shape of the inputs.
    """
    a = curve_orders(orders)
    r = as_positive(rho, "rho")
    a, r = check_broadcast((a, "orders"), (r, "rho"))
    return _out(r * a)


def dirichlet(
    orders: ArrayLike,
    r: ArrayLike,
    alpha: ArrayLike,
    l2_sensitivity: ArrayLike,
    linf_sensitivity: ArrayLike,
) -> np.ndarray:
    r"""RDP bound of the Dirichlet mechanism y ~ Dirichlet(r f(x) + α) (Ponnoprat 2023, Theorem 1).

    .. math::
        \varepsilon(\lambda) = \frac{\lambda r^2 \Delta_2^2}{2}\,
            \psi'\big(\alpha - (\lambda-1)\, r\, \Delta_\infty\big)
        \quad\text{if } \alpha > (\lambda-1) r \Delta_\infty, \qquad +\infty \text{ otherwise},

    where ψ′ is the trigamma function and α the smallest concentration of the base measure.
    At λ = 1 the bound is r²Δ₂²ψ′(α)/2; at λ = ∞ it is ``inf``.

    Parameters
    ----------
    orders : array_like
        Rényi orders λ, ≥ 1 (``inf`` allowed).
    r : array_like
        Scale of the sufficient statistic, > 0.
    alpha : array_like
        Smallest concentration parameter of the base measure, > 0.
    l2_sensitivity, linf_sensitivity : array_like
        ℓ2 and ℓ∞ sensitivities Δ₂ and Δ∞ of f, > 0.

    Returns
    -------
    numpy.ndarray
        ε(λ), float64, of the broadcast shape of the inputs; ``inf`` where the bound does not hold.
    """
    lam = curve_orders(orders)
    rr = as_positive(r, "r")
    al = as_positive(alpha, "alpha")
    d2 = as_positive(l2_sensitivity, "l2_sensitivity")
    dinf = as_positive(linf_sensitivity, "linf_sensitivity")
    lam, rr, al, d2, dinf = check_broadcast(
        (lam, "orders"),
        (rr, "r"),
        (al, "alpha"),
        (d2, "l2_sensitivity"),
        (dinf, "linf_sensitivity"),
    )
    finite = np.isfinite(lam)
    lam_safe = np.where(finite, lam, 1.0)
    x = al - (lam_safe - 1.0) * rr * dinf
    valid = finite & (x > 0)
    trigamma = special.polygamma(1, np.where(valid, x, 1.0))
    val = np.where(valid, lam_safe * (rr * d2) ** 2 / 2.0 * trigamma, np.inf)
    return _out(val)


# --------------------------------------------------------------------------------------------------
# Discrete noise on integer queries (Canonne, Kamath & Steinke 2020)
# --------------------------------------------------------------------------------------------------


def _discrete_args(
    orders: ArrayLike, scale: ArrayLike, scale_name: str, sensitivity: ArrayLike, *, l1: bool
) -> list[Any]:
    """Checked, mutually broadcastable orders, scale and sensitivity of a discrete curve.

    With ``l1`` the sensitivity must be >= 1 (a non-zero integer shift has ℓ1 norm >= 1).
    """
    a = curve_orders(orders)
    s = as_positive(scale, scale_name)
    d = as_positive(sensitivity, "sensitivity")
    if l1 and np.any(np.asarray(d) < 1.0 - 1e-9):
        raise ValueError(
            "sensitivity must be >= 1 for an integer query (a non-zero integer shift has ℓ1 "
            "norm >= 1)"
        )
    return check_broadcast((a, "orders"), (s, scale_name), (d, "sensitivity"))


def discrete_gaussian(
    orders: ArrayLike, sigma: ArrayLike, sensitivity: ArrayLike = 1.0
) -> np.ndarray:
    r"""RDP curve of independent discrete Gaussian noise N_ℤ(0, σ²) on an integer vector query.

    .. math:: \varepsilon(\alpha) = \frac{\alpha\,\Delta_2^2}{2\sigma^2}

    for every integer shift vector d with ‖d‖₂ ≤ Δ₂. This is the bound of Canonne, Kamath &
    Steinke 2020 ("The Discrete Gaussian for Differential Privacy", arXiv:2004.00010, Section 2:
    the discrete Gaussian mechanism is ½(Δ/σ)²-zCDP, and with independent coordinates
    ½ Σ_j d_j²/σ²-zCDP), and it *coincides* with the continuous Gaussian's curve
    (Mironov 2017, Proposition 7), for the reason below; it is not borrowed from it.

    Proof (one coordinate, integer shift d, α > 1): with θ(c) = Σ_{x∈ℤ} e^{−(x−c)²/(2σ²)},
    completing the square in α x² + (1 − α)(x − d)² gives

    .. math:: D_\alpha\big(N_\mathbb Z(0,\sigma^2)\,\|\,N_\mathbb Z(d,\sigma^2)\big)
              = \frac{\alpha d^2}{2\sigma^2}
              + \frac{1}{\alpha-1}\log\frac{\theta((\alpha-1)d)}{\theta(0)} .

    By Poisson summation θ(c) = √(2π) σ Σ_k e^{−2π²σ²k²} cos(2πkc) ≤ θ(0) (all Fourier
    coefficients are positive), so the second term is ≤ 0, with equality when (α − 1)d is an
    integer: the curve is exact at integer orders. Rényi divergences of product distributions
    add over coordinates, so a shift vector costs α‖d‖₂²/(2σ²) ≤ αΔ₂²/(2σ²). The α → 1 limit
    is Δ₂²/(2σ²) (θ is even, so the second term's derivative vanishes at 0); α = ∞ gives ``inf``.

    Parameters
    ----------
    orders : array_like
        Rényi orders, ≥ 1 (``inf`` allowed).
    sigma : array_like
        The scale σ of N_ℤ(0, σ²) (its pmf is ∝ e^{−x²/(2σ²)}), > 0.
    sensitivity : array_like, default 1.0
        ℓ2 sensitivity Δ₂ of the integer query, > 0.

    Returns
    -------
    numpy.ndarray
        ε(α), float64, of the broadcast shape of the inputs.
    """
    a, s, d = _discrete_args(orders, sigma, "sigma", sensitivity, l1=False)
    return _out(a * ((d / s) ** 2 / 2.0))


#: Largest ℓ1 sensitivity for which the discrete Laplace curve is the exact worst case over
#: integer shift vectors (an O(m²) maximisation); beyond it the pure-DP bound is used.
DISCRETE_LAPLACE_EXACT_MAX = 64


def _exp_m1_minus(z: np.ndarray) -> np.ndarray:
    """e^z − 1 − z for any real z without cancellation (Taylor series for |z| < 0.1)."""
    z = np.asarray(z, dtype=np.float64)
    out = np.expm1(np.minimum(z, 709.0)) - z
    small = np.abs(z) < 0.1
    if small.any():
        zs = z[small]
        term = zs * zs / 2.0
        acc = term.copy()
        for k in range(3, 15):
            term = term * zs / k
            acc = acc + term
        out[small] = acc
    return out


def _discrete_laplace_shift(a: np.ndarray, u: float, d: int) -> np.ndarray:
    """D_α(DLap(t) ‖ d + DLap(t)) for a one-coordinate integer shift d ≥ 1, u = 1/t; flat a.

    The privacy loss L(x) = u(|x − d| − |x|) under P takes the value u(d − 2j) with weight
    w_0 = 1/(1 + r), w_j = tanh(u/2) r^j (0 < j < d), w_d = r^d/(1 + r), r = e^{−u}. Then
    (α − 1) D_α = log E[e^{(α−1)L}] = (α − 1) KL + log E[e^{z}] with KL = E[L] and
    z = (α − 1)(L − KL), E[z] = 0, evaluated as log1p(E[e^z − 1 − z]) (all terms ≥ 0).
    """
    at_one, at_inf, am = split_orders(a)
    lam = am - 1.0
    r_log1p = math.log1p(math.exp(-u))
    log_c = math.log(math.tanh(u / 2.0))
    j = np.arange(d + 1, dtype=np.float64)
    log_w = log_c - j * u
    log_w[0] = -r_log1p
    log_w[d] = -d * u - r_log1p
    w = np.exp(log_w)
    # KL = E[L] = u Σ_{j < d/2} (d − 2j)(w_j − w_{d−j}), each difference without cancellation
    kl = 0.0
    for jj in range(0, (d + 1) // 2):
        k = d - 2 * jj
        if jj == 0:
            diff = -math.expm1(-d * u) / (1.0 + math.exp(-u))
        else:
            diff = -math.exp(log_c - jj * u) * math.expm1(-k * u)
        kl += k * diff
    kl *= u
    levels = u * (d - 2.0 * j)  # the values of L
    z = lam[:, None] * (levels[None, :] - kl)
    zmax = np.max(z, axis=1)
    big = zmax > 700.0
    val = np.empty(a.size)
    if (~big).any():
        v = (w[None, :] * _exp_m1_minus(z[~big])).sum(axis=1)
        val[~big] = kl + np.log1p(v) / lam[~big]
    if big.any():
        zb = z[big] + log_w[None, :]
        mb = zb.max(axis=1)
        val[big] = kl + (mb + np.log(np.exp(zb - mb[:, None]).sum(axis=1))) / lam[big]
    val = np.where(at_one, kl, val)
    val = np.where(at_inf, d * u, val)
    return np.maximum(val, 0.0)


def discrete_laplace(
    orders: ArrayLike, scale: ArrayLike, sensitivity: ArrayLike = 1.0
) -> np.ndarray:
    r"""RDP curve of independent discrete Laplace noise on an integer vector query.

    Each coordinate gets noise with pmf P(x) = tanh(1/(2t)) e^{−|x|/t} on ℤ (scale t; the
    two-sided geometric distribution of Ghosh, Roughgarden & Sundararajan 2012, sampled exactly
    by Canonne, Kamath & Steinke 2020, Algorithm 2). The neighbouring outputs differ by an
    integer shift vector d with ‖d‖₁ ≤ Δ₁.

    One coordinate, shift d ≥ 1 (exact, by summing the geometric series): with u = 1/t and
    r = e^{−u} the privacy loss L(x) = u(|x − d| − |x|) takes the values u(d − 2j), j = 0 … d,
    with probabilities w_0 = 1/(1 + r) (x ≤ 0), w_d = r^d/(1 + r) (x ≥ d) and
    w_j = tanh(u/2) r^j (x = j in between), so

    .. math:: f_d(\alpha) = D_\alpha = \frac{1}{\alpha-1}
              \log \sum_{j=0}^{d} w_j\, e^{(\alpha-1)u(d-2j)} ,

    evaluated as KL + log1p(E[e^z − 1 − z])/(α − 1) with the KL divergence E[L] and the centred
    z = (α − 1)(L − E L) so that no digits cancel; f_d(1) = E[L], f_d(∞) = d u.

    Vectors: Rényi divergences of product distributions add over coordinates, so a shift vector
    costs Σ_j f_{|d_j|}(α). The curve is the exact worst case over integer vectors with
    ‖d‖₁ ≤ m = ⌊Δ₁⌋: g(m) with g(0) = 0 and g(n) = max_{1≤k≤n} [f_k + g(n − k)] (a maximum
    over the partitions of n, order by order; g is non-decreasing since f ≥ 0). For
    m > ``DISCRETE_LAPLACE_EXACT_MAX`` the pure-DP bound is used instead: every ratio
    P(x)/P(x − d) is at most e^{‖d‖₁/t}, so the mechanism is (m/t)-DP and
    ε(α) = min(m/t, α m²/(2t²)) (:func:`pure_dp`), which is ≥ the exact worst case.

    Parameters
    ----------
    orders : array_like
        Rényi orders, ≥ 1 (``inf`` allowed; the value there is ⌊Δ₁⌋/t).
    scale : float
        The scale t > 0.
    sensitivity : float, default 1.0
        ℓ1 sensitivity Δ₁ ≥ 1 of the integer query (an integer shift of ℓ1 norm below 1 is 0).
        It is read as ⌊Δ₁ + 1e-9⌋ so that a value a rounding error below an integer counts as
        that integer.

    Returns
    -------
    numpy.ndarray
        ε(α), float64, of the broadcast shape of the inputs.
    """
    a, t_arr, d_arr = _discrete_args(orders, scale, "scale", sensitivity, l1=True)
    shape = np.broadcast_shapes(np.shape(a), np.shape(t_arr), np.shape(d_arr))
    ab = np.broadcast_to(a, shape).reshape(-1)
    tb = np.broadcast_to(t_arr, shape).reshape(-1)
    mb = np.floor(np.broadcast_to(d_arr, shape).reshape(-1) + 1e-9).astype(np.int64)
    out = np.empty(ab.size, dtype=np.float64)
    keys = np.stack([tb, mb.astype(np.float64)], axis=1)
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    for i, (t, m_f) in enumerate(uniq):
        sel = inverse == i
        m = int(m_f)
        u = 1.0 / float(t)
        orders_i = ab[sel]
        if m > DISCRETE_LAPLACE_EXACT_MAX:
            e = m * u
            out[sel] = np.minimum(e, orders_i * e * e / 2.0)
            continue
        f = [np.zeros(orders_i.size)] + [
            _discrete_laplace_shift(orders_i, u, k) for k in range(1, m + 1)
        ]
        g = [np.zeros(orders_i.size)]
        for n in range(1, m + 1):
            g.append(np.max(np.stack([f[k] + g[n - k] for k in range(1, n + 1)]), axis=0))
        out[sel] = g[m]
    return _out(out.reshape(shape))
