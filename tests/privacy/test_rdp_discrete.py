"""Audit of the discrete Gaussian and discrete Laplace curves against the exact Rényi divergence.

The oracle sums the two neighbouring output pmfs over a wide integer range (log-sum-exp in
float64, and mpmath at 40 digits on a subset); a shift vector's divergence is the sum over its
coordinates (product distributions). 10,000 random neighbour pairs per mechanism, 0 violations
beyond the float64 rounding tolerance (relative 1e-9; the discrete Gaussian curve is attained
exactly at integer orders, so the two agree there to rounding).
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from scipy.special import logsumexp

import pymc_rdp as pmr
from pymc_rdp.privacy import rdp

RTOL = 1e-9


def _logpmf(kind: str, x: np.ndarray, scale: float) -> np.ndarray:
    big = np.arange(-int(60 * scale) - 60, int(60 * scale) + 61, dtype=np.float64)
    if kind == "dg":
        logq = -(big**2) / (2 * scale**2)
        return -(x**2) / (2 * scale**2) - logsumexp(logq)
    logq = -np.abs(big) / scale
    return -np.abs(x) / scale - logsumexp(logq)


def _div_1d(kind: str, alpha: float, scale: float, d: int) -> float:
    """D_α(P ‖ P shifted by d) by summation over |x| ≤ 60·scale + (α+1)|d| + 60."""
    if d == 0:
        return 0.0
    reach = int(60 * scale + (alpha + 1) * abs(d)) + 60
    x = np.arange(-reach, reach + 1, dtype=np.float64)
    lp = _logpmf(kind, x, scale)
    lq = _logpmf(kind, x - d, scale)
    return float(logsumexp(alpha * lp + (1 - alpha) * lq) / (alpha - 1))


def _random_shift(rng, kind: str, sens: float) -> np.ndarray:
    k = int(rng.integers(1, 5))
    for _ in range(1000):
        d = rng.integers(-3, 4, size=k)
        norm = np.sqrt((d**2).sum()) if kind == "dg" else np.abs(d).sum()
        if 0 < norm <= sens + 1e-12:
            return d
    return np.array([1])


@pytest.mark.parametrize("kind", ["dg", "dl"])
def test_curve_bounds_the_exact_divergence_on_10k_random_neighbour_pairs(kind):
    rng = np.random.default_rng(20260 + (kind == "dl"))
    sens_choices = [1.0, math.sqrt(2.0), 2.0, math.sqrt(5.0), 3.0] if kind == "dg" else [1, 2, 3]
    cache: dict = {}
    worst = 0.0
    violations = 0
    n_pairs = 10_000
    for _ in range(n_pairs):
        scale = float(np.exp(rng.uniform(np.log(0.3), np.log(30.0))))
        scale = round(scale, 2)  # a few hundred distinct scales, so the cache helps
        alpha = (
            float(rng.choice([2.0, 3.0, 5.0, 10.0]))
            if rng.random() < 0.3
            else round(float(np.exp(rng.uniform(np.log(1.05), np.log(40.0)))), 2)
        )
        sens = float(rng.choice(sens_choices))
        d = _random_shift(rng, kind, sens)
        exact = 0.0
        for dj in np.abs(d):
            key = (scale, alpha, int(dj))
            if key not in cache:
                cache[key] = _div_1d(kind, alpha, scale, int(dj))
            exact += cache[key]
        if kind == "dg":
            curve = float(rdp.discrete_gaussian([alpha], scale, sens)[0])
        else:
            curve = float(rdp.discrete_laplace([alpha], scale, sens)[0])
        if exact > curve * (1 + RTOL) + 1e-15:
            violations += 1
        worst = max(worst, exact / curve)
    assert violations == 0
    assert worst <= 1 + RTOL
    if kind == "dg":
        assert worst > 1 - 1e-9  # attained (integer orders, integer (α − 1)d)


def test_discrete_laplace_curve_is_the_worst_case_not_only_a_bound():
    # Δ₁ = 2: the worst integer vector is the shift 2 in one coordinate (it exceeds two unit
    # shifts), and the curve equals its exact divergence
    for scale in (0.5, 1.0, 3.0, 10.0):
        for alpha in (1.5, 2.0, 7.0):
            one = _div_1d("dl", alpha, scale, 1)
            two = _div_1d("dl", alpha, scale, 2)
            curve = float(rdp.discrete_laplace([alpha], scale, 2.0)[0])
            assert two >= 2 * one
            assert curve == pytest.approx(two, rel=1e-9)
            # and it is more than the continuous Laplace curve at the same scale
            assert curve > float(rdp.laplace([alpha], scale, 2.0)[0])


def test_against_mpmath_at_40_digits():
    mp.mp.dps = 40
    for kind, scale, alpha, d in [
        ("dg", 0.7, 3.3, 2),
        ("dg", 5.0, 17.0, 1),
        ("dl", 0.8, 2.5, 2),
        ("dl", 4.0, 9.0, 1),
    ]:
        a = mp.mpf(alpha)
        r = int(60 * scale + (alpha + 1) * d) + 60
        if kind == "dg":
            w = [mp.e ** (-(mp.mpf(x) ** 2) / (2 * mp.mpf(scale) ** 2)) for x in range(-r, r + 1)]

            def lq(x, w=w, r=r, s=scale):
                return -(mp.mpf(x) ** 2) / (2 * mp.mpf(s) ** 2) - mp.log(mp.fsum(w))

            curve = float(rdp.discrete_gaussian([alpha], scale, d)[0])
        else:

            def lq(x, s=scale):
                u = 1 / mp.mpf(s)
                return mp.log(mp.tanh(u / 2)) - abs(x) * u

            curve = float(rdp.discrete_laplace([alpha], scale, d)[0])
        total = mp.fsum(mp.e ** (a * lq(x) + (1 - a) * lq(x - d)) for x in range(-r, r + 1))
        exact = float(mp.log(total) / (a - 1))
        assert exact <= curve * (1 + 1e-12)
        if kind == "dl":
            assert curve == pytest.approx(exact, rel=1e-12)


def test_limits_and_large_sensitivity():
    # α = 1 is the KL divergence, α = ∞ the pure-DP bound ⌊Δ₁⌋/t
    kl = float(rdp.discrete_laplace([1.0], 2.0, 1.0)[0])
    assert kl == pytest.approx(_div_1d("dl", 1.0 + 1e-7, 2.0, 1), rel=1e-5)
    assert float(rdp.discrete_laplace([np.inf], 2.0, 2.0)[0]) == pytest.approx(1.0)
    assert float(rdp.discrete_gaussian([np.inf], 2.0)[0]) == np.inf
    # beyond 64 the pure-DP bound, never below the exact divergence of the concentrated shift
    curve = float(rdp.discrete_laplace([3.0], 50.0, 100.0)[0])
    assert curve >= _div_1d("dl", 3.0, 50.0, 100)
    # weak mechanisms keep their precision: close to the continuous curve for a large scale
    np.testing.assert_allclose(
        rdp.discrete_laplace(rdp.DEFAULT_ORDERS[:40], 1e4, 2.0),
        rdp.laplace(rdp.DEFAULT_ORDERS[:40], 1e4, 2.0),
        rtol=1e-3,
    )


def test_bad_arguments():
    with pytest.raises(ValueError, match="sensitivity must be >= 1"):
        rdp.discrete_laplace([2.0], 1.0, 0.5)
    with pytest.raises(ValueError, match="scale"):
        rdp.discrete_laplace([2.0], -1.0)
    with pytest.raises(ValueError, match="sigma"):
        rdp.discrete_gaussian([2.0], 0.0)
    with pytest.raises(ValueError, match="orders"):
        rdp.discrete_gaussian([0.5], 1.0)


def test_mechanisms_use_the_discrete_curves_and_calibrate_on_them():
    m = pmr.DiscreteLaplaceMechanism.calibrate(1.0, delta=1e-6, sensitivity=2.0)
    orders = rdp.DEFAULT_ORDERS
    assert rdp.to_dp(orders, m.rdp(orders), 1e-6)[0] <= 1.0
    smaller = pmr.DiscreteLaplaceMechanism(m.scale * (1 - 1e-6), 2.0)
    assert rdp.to_dp(orders, smaller.rdp(orders), 1e-6)[0] > 1.0
    g = pmr.DiscreteGaussianMechanism.calibrate(0.5, order=5.0, sensitivity=math.sqrt(2.0))
    assert float(g.rdp([5.0])[0]) <= 0.5
    assert pmr.DiscreteLaplaceMechanism.calibrate(2.0, order=np.inf, sensitivity=2.0).scale == (
        pytest.approx(1.0)
    )
    acc = pmr.Accountant()
    acc.spend(m, tag="t")
    back = pmr.Accountant.from_json(acc.to_json())
    np.testing.assert_allclose(back.rdp(), m.rdp(acc.orders), rtol=1e-12)
    assert pmr.mechanism_from_dict(m.to_dict()) == m
