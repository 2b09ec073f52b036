"""Compiled scalar kernels: the polygamma functions ψ′, ψ″, ψ‴ and the Dirichlet calibration solver.

These functions are plain numba ``@njit`` kernels on float64 scalars. They are shared by the numpy
code (:meth:`pymc_rdp.privacy.mechanisms.DirichletMechanism.calibrate` loops over them in parallel)
and by
the pytensor Ops of :mod:`pymc_rdp.distributions.ops` (whose numba implementation *is* these
kernels and whose
Python implementation calls numpy ufuncs compiled from them), so that the numbers a model computes
and the numbers the numpy path computes come from the same code. This module imports numba and
numpy only.

Polygamma functions
-------------------
For x > 0 and n ∈ {1, 2, 3} (Abramowitz & Stegun 6.4.6 and 6.4.11)::

    ψ⁽ⁿ⁾(x) = ψ⁽ⁿ⁾(x + 1) + (−1)ⁿ⁺¹ n! / xⁿ⁺¹                                     (recurrence)
    ψ⁽ⁿ⁾(z) ~ (−1)ⁿ⁺¹ [ (n−1)!/zⁿ + n!/(2zⁿ⁺¹) + Σₖ B₂ₖ (2k+n−1)!/(2k)! / z²ᵏ⁺ⁿ ]   (z → ∞)

with B₂ₖ the Bernoulli numbers. The recurrence lifts x to z ≥ 10, where ten terms of the asymptotic
series are accurate to about 1e-16 relative; the recurrence terms are then added from the smallest
to the largest. For tiny x the leading term n!/xⁿ⁺¹ dominates and is exact up to rounding.

Calibration equation
--------------------
With K = λΔ₂²/2, b = (λ−1)Δ∞ and a(r) = α + c·b·r, the solver finds r > 0 with

    g(r) = K r² ψ′(a(r)) = ε.

``c = 3`` is the "paper" scheme of Ponnoprat (TMLR 2023, "Dirichlet Mechanism for Differentially
Private KL Divergence Minimization", Algorithm 1: α = α₀ is the base concentration there and the
released draw uses α₀ + 4(λ−1)rΔ∞); ``c = −1`` is the fixed-α scheme, where the Theorem-1 curve
(λ r² Δ₂²/2)·ψ′(α − (λ−1)rΔ∞) is set equal to ε directly on 0 < r < α/b.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numba
import numpy as np

__all__ = [
    "calibrate_many",
    "calibrate_r",
    "calibrate_r_fixed",
    "calibrate_r_paper",
    "calibration_residual",
    "pentagamma",
    "polygamma_pos",
    "tetragamma",
    "trigamma",
    "trigamma_tetragamma",
]

SCHEME_COEFFICIENTS: dict[str, float] = {"paper": 3.0, "fixed-alpha": -1.0}

# Asymptotic-series coefficients B₂ₖ (2k+n−1)!/(2k)!, k = 1..10, for n = 1, 2, 3 (rows).
_BERNOULLI = [
    Fraction(1, 6),
    Fraction(-1, 30),
    Fraction(1, 42),
    Fraction(-1, 30),
    Fraction(5, 66),
    Fraction(-691, 2730),
    Fraction(7, 6),
    Fraction(-3617, 510),
    Fraction(43867, 798),
    Fraction(-174611, 330),
]
_SERIES = np.array(
    [
        [
            float(b * Fraction(math.factorial(2 * k + n - 1), math.factorial(2 * k)))
            for k, b in enumerate(_BERNOULLI, start=1)
        ]
        for n in (1, 2, 3)
    ],
    dtype=np.float64,
)
_LIFT = 10.0  # the recurrence lifts x to at least this value before the series is used


@numba.njit(cache=True)
def _lifted(x: float) -> tuple[int, float, float]:
    """Recurrence steps m that lift x to z = x + m ≥ ``_LIFT``, and t = 1/z, t²."""
    m = 0
    if x < _LIFT:
        m = int(_LIFT - x) + 1
    t = 1.0 / (x + m)
    return m, t, t * t


@numba.njit(cache=True)
def polygamma_pos(n: int, x: float) -> float:
    """ψ⁽ⁿ⁾(x) for n ∈ {1, 2, 3} and x > 0 (NaN for x ≤ 0 or NaN, 0 at +inf)."""
    if not x > 0.0:
        return np.nan
    if x == np.inf:
        return 0.0
    m, t, t2 = _lifted(x)
    q = 0.0
    for k in range(_SERIES.shape[1] - 1, -1, -1):
        q = q * t2 + _SERIES[n - 1, k]
    fact_nm1 = 1.0 if n < 3 else 2.0  # (n−1)!
    fact_n = 1.0 if n == 1 else (2.0 if n == 2 else 6.0)  # n!
    tn = t if n == 1 else (t2 if n == 2 else t2 * t)
    s = tn * (fact_nm1 + t * (0.5 * fact_n + t * q))
    # recurrence terms n!/(x+k)^(n+1), largest k (smallest term) first
    for k in range(m - 1, -1, -1):
        y = x + k
        if n == 1:
            s += 1.0 / (y * y)
        elif n == 2:
            s += 2.0 / (y * y * y)
        else:
            y2 = y * y
            s += 6.0 / (y2 * y2)
    if n == 2:
        return -s
    return s


@numba.njit(cache=True)
def trigamma(x: float) -> float:
    """ψ′(x) = d² log Γ(x)/dx² for x > 0 (relative error ≲ 1e-15; NaN for x ≤ 0)."""
    return polygamma_pos(1, x)


@numba.njit(cache=True)
def tetragamma(x: float) -> float:
    """ψ″(x) = d³ log Γ(x)/dx³ for x > 0 (NaN for x ≤ 0)."""
    return polygamma_pos(2, x)


@numba.njit(cache=True)
def pentagamma(x: float) -> float:
    """ψ‴(x) = d⁴ log Γ(x)/dx⁴ for x > 0 (NaN for x ≤ 0)."""
    return polygamma_pos(3, x)


@numba.njit(cache=True)
def trigamma_tetragamma(x: float) -> tuple[float, float]:
    """(ψ′(x), ψ″(x)) in one pass (x > 0 assumed)."""
    m, t, t2 = _lifted(x)
    q1 = 0.0
    q2 = 0.0
    for k in range(_SERIES.shape[1] - 1, -1, -1):
        q1 = q1 * t2 + _SERIES[0, k]
        q2 = q2 * t2 + _SERIES[1, k]
    s1 = t * (1.0 + t * (0.5 + t * q1))
    s2 = t2 * (1.0 + t * (1.0 + t * q2))
    for k in range(m - 1, -1, -1):
        y = x + k
        iy2 = 1.0 / (y * y)
        s1 += iy2
        s2 += 2.0 * iy2 / y
    return s1, -s2


@numba.njit(cache=True)
def _log_g_and_slope(
    r: float, log_k: float, alpha: float, cb: float, log_eps: float
) -> tuple[float, float]:
    """h = log g(r) − log ε and dh/d(log r), for a = α + c·b·r."""
    a = alpha + cb * r
    if not a > 0.0:
        return np.inf, 2.0
    p1, p2 = trigamma_tetragamma(a)
    h = log_k + 2.0 * math.log(r) + math.log(p1) - log_eps
    dh = 2.0 + cb * r * p2 / p1
    return h, dh


@numba.njit(cache=True)
def calibrate_r(
    epsilon: float, order: float, alpha: float, l2: float, linf: float, c: float
) -> float:
    """The r > 0 with K r² ψ′(α + c(λ−1)Δ∞ r) = ε, K = λΔ₂²/2 (NaN for invalid input).

    Safeguarded Newton on h(t) = log g(eᵗ) − log ε in t = log r, inside an analytic bracket
    (ψ′(a) ≥ 1/a, ψ′(a) ≥ 1/a², ψ′(a) ≤ (1 + 1/a)/a and monotonicity of ψ′); a Newton step that
    leaves the current bracket is replaced by bisection. Once the step in log r is below 1e-13,
    and where h is steep in log r (|dh/dlog r|·|log r| ≥ 64, near the pole of the fixed-α
    scheme), up to four Newton steps in r itself (accepted only while |h| decreases) bring the
    residual to the resolution of r, finer there than that of log r.
    """
    if not (epsilon > 0.0 and epsilon < np.inf):
        return np.nan
    if not (order > 1.0 and order < np.inf):
        return np.nan
    if not (alpha > 0.0 and alpha < np.inf):
        return np.nan
    if not (l2 > 0.0 and l2 < np.inf and linf > 0.0 and linf < np.inf):
        return np.nan
    kk = 0.5 * order * l2 * l2
    b = (order - 1.0) * linf
    cb = c * b
    log_k = math.log(kk)
    log_eps = math.log(epsilon)
    r_flat = math.sqrt(epsilon / (kk * trigamma(alpha)))  # g(r) vs K r² ψ′(α)
    if c > 0.0:
        # ψ′ decreases along a = α + cbr ≥ α: root ≥ r_flat; ψ′(a) ≤ (1+1/α)/a gives the 2nd bound
        r_lo = max(r_flat, cb * epsilon / (kk * (1.0 + 1.0 / alpha)))
        # ψ′(a) ≥ 1/a: K r² = ε (α + cbr) bounds the root from above
        e_cb = epsilon * cb
        r_hi = (e_cb + math.sqrt(e_cb * e_cb + 4.0 * kk * epsilon * alpha)) / (2.0 * kk)
        r_hi = max(r_hi, r_lo)
        t = math.log(r_lo)
    else:
        # a = α − b r decreases: ψ′(a) ≥ ψ′(α) and ψ′(a) ≥ 1/a² bound the root from above
        se = math.sqrt(epsilon)
        r_hi = min(r_flat, se * alpha / (math.sqrt(kk) + se * b))
        a_min = alpha - b * r_hi
        if a_min > 0.0:
            r_lo = math.sqrt(epsilon / (kk * trigamma(a_min)))
        else:
            r_lo = 0.0
        if not r_lo > 0.0:
            r_lo = r_hi * 1e-300
        r_lo = min(r_lo, r_hi)
        t = math.log(r_hi)
    t_lo = math.log(r_lo)
    t_hi = math.log(r_hi)
    r = math.exp(t)
    for _ in range(200):
        h, dh = _log_g_and_slope(r, log_k, alpha, cb, log_eps)
        if h == 0.0:
            return r
        if h > 0.0:
            t_hi = t
        else:
            t_lo = t
        t_new = t - h / dh
        if not (t_new >= t_lo and t_new <= t_hi):
            t_new = 0.5 * (t_lo + t_hi)
        step = t_new - t
        t = t_new
        r = math.exp(t)
        if abs(step) <= 1e-13 or t_hi - t_lo <= 1e-13:
            break
    # Polish in r itself: log r is coarser than r by up to a factor |log r|, which matters only
    # where h is steep in log r (near the pole of the fixed-α scheme).
    if abs(dh) * max(1.0, abs(t)) < 64.0:
        return r
    h, dh = _log_g_and_slope(r, log_k, alpha, cb, log_eps)
    for _ in range(4):
        if abs(h) <= 2.2e-16 * abs(dh):
            break
        r_new = r - r * (h / dh)
        if not r_new > 0.0:
            break
        h_new, dh_new = _log_g_and_slope(r_new, log_k, alpha, cb, log_eps)
        if not abs(h_new) < abs(h):
            break
        r, h, dh = r_new, h_new, dh_new
    return r


@numba.njit(cache=True)
def calibrate_r_paper(epsilon: float, order: float, alpha0: float, l2: float, linf: float) -> float:
    """Paper scheme: r with (λr²Δ₂²/2) ψ′(α₀ + 3(λ−1)rΔ∞) = ε (NaN for invalid input)."""
    return calibrate_r(epsilon, order, alpha0, l2, linf, 3.0)


@numba.njit(cache=True)
def calibrate_r_fixed(epsilon: float, order: float, alpha: float, l2: float, linf: float) -> float:
    """Fixed-α scheme: r with (λr²Δ₂²/2) ψ′(α − (λ−1)rΔ∞) = ε (NaN for invalid input)."""
    return calibrate_r(epsilon, order, alpha, l2, linf, -1.0)


@numba.njit(cache=True)
def calibration_residual(
    r: float, epsilon: float, order: float, alpha: float, l2: float, linf: float, c: float
) -> float:
    """g(r)/ε − 1 for the calibration equation with scheme coefficient ``c``."""
    a = alpha + c * (order - 1.0) * linf * r
    return 0.5 * order * r * r * l2 * l2 * trigamma(a) / epsilon - 1.0


@numba.njit(parallel=True, cache=True)
def _calibrate_flat(eps, order, alpha, l2, linf, c, out):  # pragma: no cover - compiled
    for i in numba.prange(out.shape[0]):
        out[i] = calibrate_r(eps[i], order[i], alpha[i], l2[i], linf[i], c)


def calibrate_many(
    epsilon: np.ndarray,
    order: np.ndarray,
    alpha: np.ndarray,
    l2: np.ndarray,
    linf: np.ndarray,
    c: float,
) -> np.ndarray:
    """Broadcast the five arguments and solve every calibration in a parallel compiled loop.

    No validation here (invalid settings give NaN); callers check their arguments first.
    """
    arrays = np.broadcast_arrays(
        *(np.asarray(v, dtype=np.float64) for v in (epsilon, order, alpha, l2, linf))
    )
    shape = arrays[0].shape
    flat = [np.ascontiguousarray(a).reshape(-1) for a in arrays]
    out = np.empty(flat[0].shape[0], dtype=np.float64)
    _calibrate_flat(*flat, float(c), out)
    return out.reshape(shape)


# numpy ufuncs compiled from the same kernels, built on first use (used by the Python
# implementation of the pytensor Ops through ``nfunc_spec``).
def _trigamma_elem(x):
    return trigamma(x)


def _tetragamma_elem(x):
    return tetragamma(x)


def _pentagamma_elem(x):
    return pentagamma(x)


def _calibrate_r_paper_elem(x0, x1, x2, x3, x4):
    return calibrate_r_paper(x0, x1, x2, x3, x4)


def _calibrate_r_fixed_elem(x0, x1, x2, x3, x4):
    return calibrate_r_fixed(x0, x1, x2, x3, x4)


_UNARY = ["float64(float64)"]
_FIVE = ["float64(float64, float64, float64, float64, float64)"]
_UFUNC_SOURCES = {
    "trigamma_ufunc": (_trigamma_elem, _UNARY),
    "tetragamma_ufunc": (_tetragamma_elem, _UNARY),
    "pentagamma_ufunc": (_pentagamma_elem, _UNARY),
    "calibrate_r_paper_ufunc": (_calibrate_r_paper_elem, _FIVE),
    "calibrate_r_fixed_ufunc": (_calibrate_r_fixed_elem, _FIVE),
}


def __getattr__(name: str) -> np.ufunc:
    source = _UFUNC_SOURCES.get(name)
    if source is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    func, signatures = source
    ufunc = numba.vectorize(signatures, cache=True)(func)
    globals()[name] = ufunc
    return ufunc
