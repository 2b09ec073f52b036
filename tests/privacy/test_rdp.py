"""Tests of the RDP core: closed forms against independent computations, limits, conversions,
cross-checks against dp-accounting, and the numbers printed in Mironov (2017)."""

from __future__ import annotations

import itertools
import math
import runpy
import warnings
from pathlib import Path

import dp_accounting
import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as dpa_rdp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, special, stats

from pymc_rdp.privacy import _series, rdp

ORDERS = rdp.DEFAULT_ORDERS
DPA_ORDERS = np.asarray(dpa_rdp.DEFAULT_RDP_ORDERS, dtype=np.float64)
HYP = settings(max_examples=60, deadline=None)

finite_pos = st.floats(min_value=1e-3, max_value=1e3, allow_nan=False, allow_infinity=False)
small_pos = st.floats(min_value=1e-3, max_value=20.0, allow_nan=False, allow_infinity=False)
truth_p = st.floats(min_value=0.5005, max_value=0.9995)
deltas = st.floats(min_value=1e-15, max_value=0.5)


# ------------------------------------------------------------------------------------------------
# Independent oracles
# ------------------------------------------------------------------------------------------------


def renyi_by_quadrature(logp, logq, alpha: float, breakpoints=()) -> float:
    """D_α(P‖Q) = log ∫ p^α q^{1−α} / (α − 1) by adaptive quadrature on the real line."""

    def integrand(x: float) -> float:
        return math.exp(alpha * logp(x) + (1.0 - alpha) * logq(x))

    edges = [-math.inf, *sorted(breakpoints), math.inf]
    total = 0.0
    for lo, hi in itertools.pairwise(edges):
        val, _ = integrate.quad(integrand, lo, hi, epsabs=0.0, epsrel=1e-12, limit=200)
        total += val
    return math.log(total) / (alpha - 1.0)


def kl_by_quadrature(logp, logq, breakpoints=()) -> float:
    def integrand(x: float) -> float:
        lp = logp(x)
        return math.exp(lp) * (lp - logq(x))

    edges = [-math.inf, *sorted(breakpoints), math.inf]
    return sum(
        integrate.quad(integrand, lo, hi, epsabs=0.0, epsrel=1e-12, limit=200)[0]
        for lo, hi in itertools.pairwise(edges)
    )


def laplace_logpdf(loc: float, scale: float):
    return lambda x: -abs(x - loc) / scale - math.log(2.0 * scale)


def normal_logpdf(loc: float, sigma: float):
    return lambda x: -0.5 * ((x - loc) / sigma) ** 2 - math.log(sigma * math.sqrt(2.0 * math.pi))


def log_beta(u: np.ndarray) -> float:
    return float(np.sum(special.gammaln(u)) - special.gammaln(np.sum(u)))


def dirichlet_renyi(u: np.ndarray, v: np.ndarray, lam: float) -> float:
    """Exact D_λ(Dir(u) ‖ Dir(v)); +inf when λu + (1 − λ)v is not positive."""
    w = lam * u + (1.0 - lam) * v
    if (w <= 0).any():
        return math.inf
    return (log_beta(w) - lam * log_beta(u) + (lam - 1.0) * log_beta(v)) / (lam - 1.0)


# ------------------------------------------------------------------------------------------------
# DEFAULT_ORDERS
# ------------------------------------------------------------------------------------------------


def test_default_orders_cover_dp_accounting_and_extend() -> None:
    assert ORDERS.dtype == np.float64
    assert np.all(np.diff(ORDERS) > 0)
    assert ORDERS[0] > 1 and ORDERS[0] <= 1.001
    assert ORDERS[-1] == 1e6
    assert set(DPA_ORDERS.tolist()) <= set(ORDERS.tolist())
    assert ORDERS.size >= DPA_ORDERS.size + 50
    with pytest.raises(ValueError):
        ORDERS[0] = 3.0  # read-only: nobody can corrupt the shared grid


# ------------------------------------------------------------------------------------------------
# Closed forms against independent computations
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", [1.5, 2.0, 5.0, 12.0])
@pytest.mark.parametrize(("sigma", "sens"), [(1.0, 1.0), (2.5, 0.7), (0.8, 2.0)])
def test_gaussian_matches_quadrature(alpha: float, sigma: float, sens: float) -> None:
    p = normal_logpdf(0.0, sigma)
    q = normal_logpdf(sens, sigma)
    expected = renyi_by_quadrature(p, q, alpha, breakpoints=(0.0, sens))
    assert rdp.gaussian(alpha, sigma, sens) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("alpha", [1.05, 1.5, 2.0, 4.0, 10.0, 30.0])
@pytest.mark.parametrize(("scale", "sens"), [(1.0, 1.0), (2.0, 0.5), (0.5, 1.0), (10.0, 1.0)])
def test_laplace_matches_quadrature(alpha: float, scale: float, sens: float) -> None:
    p = laplace_logpdf(0.0, scale)
    q = laplace_logpdf(sens, scale)
    expected = renyi_by_quadrature(p, q, alpha, breakpoints=(0.0, sens))
    reverse = renyi_by_quadrature(q, p, alpha, breakpoints=(0.0, sens))
    assert rdp.laplace(alpha, scale, sens) == pytest.approx(expected, rel=1e-8)
    assert reverse == pytest.approx(expected, rel=1e-8)  # symmetric: one curve for both directions


@pytest.mark.parametrize(("scale", "sens"), [(1.0, 1.0), (3.0, 1.0), (0.25, 1.0)])
def test_laplace_kl_limit_matches_quadrature(scale: float, sens: float) -> None:
    p = laplace_logpdf(0.0, scale)
    q = laplace_logpdf(sens, scale)
    kl = kl_by_quadrature(p, q, breakpoints=(0.0, sens))
    assert rdp.laplace(1.0, scale, sens) == pytest.approx(kl, rel=1e-9)
    assert rdp.laplace(1.0 + 1e-9, scale, sens) == pytest.approx(kl, rel=1e-6)


@pytest.mark.parametrize("p", [0.51, 0.6, 0.75, 0.9, 0.999])
@pytest.mark.parametrize("alpha", [1.01, 1.5, 2.0, 7.0, 100.0])
def test_randomized_response_matches_two_point_sum(p: float, alpha: float) -> None:
    # D_α(Bern(p) ‖ Bern(1 − p)) summed directly over the two outcomes.
    direct = math.log(p**alpha * (1 - p) ** (1 - alpha) + (1 - p) ** alpha * p ** (1 - alpha)) / (
        alpha - 1
    )
    assert rdp.randomized_response(alpha, p) == pytest.approx(direct, rel=1e-11)


@pytest.mark.parametrize("p", [0.51, 0.75, 0.999])
def test_randomized_response_limits(p: float) -> None:
    big_l = math.log(p / (1 - p))
    kl = p * math.log(p / (1 - p)) + (1 - p) * math.log((1 - p) / p)
    assert rdp.randomized_response(1.0, p) == pytest.approx(kl, rel=1e-12)
    assert rdp.randomized_response(1.0 + 1e-10, p) == pytest.approx(kl, rel=1e-5)
    assert rdp.randomized_response(np.inf, p) == pytest.approx(big_l, rel=1e-15)
    assert rdp.randomized_response(1e6, p) == pytest.approx(big_l, rel=1e-4)


def test_full_relative_precision_for_weak_mechanisms() -> None:
    """Tiny t = Δ/b and p close to 1/2 against 50-digit arithmetic (no cancellation)."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 50

    def lap(a, t):
        a, t = mp.mpf(a), mp.mpf(t)
        if a == 1:
            return t + mp.e ** (-t) - 1
        mix = a / (2 * a - 1) * mp.e ** ((a - 1) * t) + (a - 1) / (2 * a - 1) * mp.e ** (-a * t)
        return mp.log(mix) / (a - 1)

    def rr(a, p):
        a, p = mp.mpf(a), mp.mpf(p)
        if a == 1:
            return (2 * p - 1) * mp.log(p / (1 - p))
        return mp.log(p**a * (1 - p) ** (1 - a) + (1 - p) ** a * p ** (1 - a)) / (a - 1)

    orders = [1.0, 1.0 + 1e-9, 1.001, 1.1, 2.0, 10.0, 1e3, 1e6]
    for t in (1e-8, 1e-5, 1e-2, 0.3, 10.0):
        got = rdp.laplace(orders, 1.0, t)
        want = np.array([float(lap(a, t)) for a in orders])
        np.testing.assert_allclose(got, want, rtol=5e-14)
    for p in (0.5 + 1e-9, 0.5 + 1e-4, 0.52, 0.6, 1 - 1e-9):
        got = rdp.randomized_response(orders, p)
        want = np.array([float(rr(a, p)) for a in orders])
        np.testing.assert_allclose(got, want, rtol=5e-14)


# ------------------------------------------------------------------------------------------------
# Evaluation paths: per-grid series tables, batches of curves, elementwise broadcasting
# ------------------------------------------------------------------------------------------------


def _mp_laplace(a: float, t: float) -> float:
    mp = pytest.importorskip("mpmath")
    a, t = mp.mpf(a), mp.mpf(t)
    if a == 1:
        return float(t + mp.e ** (-t) - 1)
    if mp.isinf(a):
        return float(t)
    mix = a / (2 * a - 1) * mp.e ** ((a - 1) * t) + (a - 1) / (2 * a - 1) * mp.e ** (-a * t)
    return float(mp.log(mix) / (a - 1))


def _mp_rr(a: float, p: float) -> float:
    mp = pytest.importorskip("mpmath")
    a, p = mp.mpf(a), mp.mpf(p)
    big_l = mp.log(p / (1 - p))
    if a == 1:
        return float((2 * p - 1) * big_l)
    if mp.isinf(a):
        return float(big_l)
    return float(mp.log(p**a * (1 - p) ** (1 - a) + (1 - p) ** a * p ** (1 - a)) / (a - 1))


# orders on both sides of every switch between series and direct forms, the limits, and orders
# beyond the series tables (1e13)
PATH_ORDERS = np.array(
    [
        *(1.0, 1.0 + 1e-12, 1.001, 1.05, 1.5, 2.0, 3.7, 10.0, 40.0, 63.0, 512.0, 4096.0),
        *(5e4, 1e6, 3e7, 1e12, 1e13, np.inf),
    ]
)
LAPLACE_TS = [1e-14, 1e-9, 3e-7, 1e-4, 0.0025, 0.01, 0.05, 0.1249, 0.1251, 0.3, 1.0, 7.0, 60.0]
RR_PS = [0.5 + 2**-52, 0.5 + 1e-9, 0.5001, 0.505, 0.52, 0.53124, 0.53126, 0.6, 0.9, 1 - 1e-12]


@pytest.fixture(scope="module")
def mp_reference() -> dict[str, np.ndarray]:
    pytest.importorskip("mpmath").mp.dps = 60
    lap = np.array([[_mp_laplace(a, t) for a in PATH_ORDERS] for t in LAPLACE_TS])
    rr = np.array([[_mp_rr(a, p) for a in PATH_ORDERS] for p in RR_PS])
    return {"laplace": lap, "rr": rr}


def test_grid_path_matches_mpmath(mp_reference: dict[str, np.ndarray]) -> None:
    """Scalar parameters (series on a table per grid + direct form) to 60-digit arithmetic."""
    for i, t in enumerate(LAPLACE_TS):
        np.testing.assert_allclose(
            rdp.laplace(PATH_ORDERS, 1.0, t),
            mp_reference["laplace"][i],
            rtol=2e-14,
            err_msg=f"t={t}",
        )
        # the same t through scale and sensitivity, and unsorted orders
        perm = np.random.default_rng(i).permutation(PATH_ORDERS.size)
        np.testing.assert_allclose(
            rdp.laplace(PATH_ORDERS[perm], 2.0 / t, 2.0),
            mp_reference["laplace"][i][perm],
            rtol=2e-14,
        )
    for i, p in enumerate(RR_PS):
        np.testing.assert_allclose(
            rdp.randomized_response(PATH_ORDERS, p),
            mp_reference["rr"][i],
            rtol=2e-14,
            err_msg=f"p={p}",
        )


def test_batch_and_elementwise_paths_match_mpmath(mp_reference: dict[str, np.ndarray]) -> None:
    """Rows of parameters against a row of orders (one matrix product), and the elementwise
    fallback for arbitrary broadcasting, against the same 60-digit values."""
    ts = np.array(LAPLACE_TS)
    ps = np.array(RR_PS)
    batch = rdp.laplace(PATH_ORDERS[None, :], 1.0 / ts[:, None])
    np.testing.assert_allclose(batch, mp_reference["laplace"], rtol=2e-14)
    np.testing.assert_allclose(
        rdp.laplace(PATH_ORDERS, 1.0, ts[:, None]), mp_reference["laplace"], rtol=2e-14
    )
    batch = rdp.randomized_response(PATH_ORDERS[None, :], ps[:, None])
    np.testing.assert_allclose(batch, mp_reference["rr"], rtol=2e-14)
    # elementwise: orders (k, 1) against parameters (1, n) is neither a single value nor rows
    lap_t = rdp.laplace(PATH_ORDERS[:, None], 1.0 / ts[None, :])
    np.testing.assert_allclose(lap_t, mp_reference["laplace"].T, rtol=5e-14)
    rr_t = rdp.randomized_response(PATH_ORDERS[:, None], ps[None, :])
    np.testing.assert_allclose(rr_t, mp_reference["rr"].T, rtol=5e-14)


@HYP
@given(
    t=st.floats(1e-12, 50.0),
    p=st.floats(0.5 + 1e-12, 1 - 1e-12),
    alpha=st.floats(1.0, 2e6),
)
def test_paths_agree(t: float, p: float, alpha: float) -> None:
    """Grid path (scalar parameter), batch rows and the elementwise fallback give the same curve."""
    orders = np.concatenate([ORDERS, [alpha]])
    lap = rdp.laplace(orders, 1.0, t)
    rr = rdp.randomized_response(orders, p)
    rows = rdp.laplace(orders[None, :], np.array([[1.0 / t], [1.0]]))
    np.testing.assert_allclose(rows[0], lap, rtol=1e-14)
    np.testing.assert_allclose(rdp.laplace(orders, np.full(orders.size, 1.0 / t)), lap, rtol=5e-14)
    rows = rdp.randomized_response(orders[None, :], np.array([[p], [0.75]]))
    np.testing.assert_allclose(rows[0], rr, rtol=1e-14)
    np.testing.assert_allclose(
        rdp.randomized_response(orders, np.full(orders.size, p)), rr, rtol=5e-14
    )
    single = rdp.laplace(alpha, 1.0, t)
    assert single.shape == () and float(single) == pytest.approx(float(lap[-1]), rel=1e-14)


def test_laplace_series_coefficients_are_exact() -> None:
    """a₂ = α/2, a₃ = −α/6, a₄ = α(1 + 2α − 2α²)/24, a_k(1) = (−1)^k/k!, and 60-digit Taylor."""
    for alpha in (1.0, 1.1, 2.0, 17.5, 1e6):
        a = _series._laplace_coefficients(alpha)
        assert a[0] == alpha / 2 and a[1] == pytest.approx(-alpha / 6, rel=1e-16)
        assert a[2] == pytest.approx(alpha * (1 + 2 * alpha - 2 * alpha**2) / 24, rel=1e-15)
    one = _series._laplace_coefficients(1.0)
    np.testing.assert_array_equal(
        one, [(-1) ** k / math.factorial(k) for k in range(2, 2 + len(one))]
    )
    # Taylor coefficients of the curve in t, by 60-digit differentiation at α = 3
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 60
    taylor = mp.taylor(
        lambda x: mp.log(mp.mpf(3) / 5 * mp.e ** (2 * x) + mp.mpf(2) / 5 * mp.e ** (-3 * x)) / 2,
        0,
        8,
    )
    np.testing.assert_allclose(
        _series._laplace_coefficients(3.0)[:7], [float(c) for c in taylor[2:9]], rtol=1e-15
    )


def test_randomized_response_series_coefficients() -> None:
    """(p − q)L + Σ c_n λ^{n−1} reproduces the curve's Taylor coefficients in λ = α − 1."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 60
    p = mp.mpf("0.53")
    big_l = mp.log(p / (1 - p))
    taylor = mp.taylor(
        lambda lam: mp.log(p * mp.e ** (lam * big_l) + (1 - p) * mp.e ** (-lam * big_l)), 0, 9
    )
    # λ ε = K(λ): the coefficient of λ^{n−1} in ε is the one of λ^n in K
    pf = float(p)
    q, gap = 1.0 - pf, 2.0 * pf - 1.0
    c = _series._rr_coefficients(
        np.array([pf]), np.array([q]), np.array([gap]), np.array([math.log1p(gap / q)])
    )[0]
    assert gap * math.log1p(gap / q) == pytest.approx(float(taylor[1]), rel=1e-15)
    np.testing.assert_allclose(c[:8], [float(x) for x in taylor[2:10]], rtol=1e-13)


def test_cached_grids_follow_the_contents_of_the_orders() -> None:
    """Per-grid constants are reused for equal orders, never for an array changed in place."""
    orders = np.array([2.0, 5.0, 30.0])
    first = rdp.laplace(orders, 50.0)
    orders[1] = 7.0
    np.testing.assert_array_equal(rdp.laplace(orders, 50.0), rdp.laplace([2.0, 7.0, 30.0], 50.0))
    assert rdp.laplace(orders, 50.0)[1] != first[1]
    # a read-only view of a writeable array is not trusted by identity either
    base = np.array([2.0, 5.0, 30.0])
    view = base.view()
    view.flags.writeable = False
    before = rdp.randomized_response(view, 0.51)
    base[0] = 3.0
    after = rdp.randomized_response(view, 0.51)
    assert after[0] != before[0]
    np.testing.assert_array_equal(after, rdp.randomized_response([3.0, 5.0, 30.0], 0.51))
    # bad orders are still refused after valid arrays were seen
    with pytest.raises(ValueError, match="orders"):
        rdp.laplace(np.array([0.5, 2.0]), 1.0)


def test_batch_shapes_and_gaussian_batch_equals_single() -> None:
    sig = np.array([[0.5], [3.0], [40.0]])
    batch = rdp.gaussian(ORDERS[None, :], sig, 2.0)
    assert batch.shape == (3, ORDERS.size)
    for i, s in enumerate(sig[:, 0]):
        np.testing.assert_array_equal(batch[i], rdp.gaussian(ORDERS, float(s), 2.0))
    assert rdp.laplace(ORDERS, np.array([[10.0]])).shape == (1, ORDERS.size)
    assert rdp.laplace(ORDERS, np.full((2, 3, 1), 10.0)).shape == (2, 3, ORDERS.size)
    assert rdp.randomized_response(ORDERS.reshape(1, 1, -1), np.full((4, 1), 0.6)).shape == (
        1,
        4,
        ORDERS.size,
    )
    assert rdp.randomized_response(2.0, np.float64(0.6)).shape == ()


@pytest.mark.parametrize(("scale", "sens"), [(1.0, 1.0), (0.01, 1.0), (100.0, 1.0)])
def test_laplace_limits(scale: float, sens: float) -> None:
    t = sens / scale
    assert rdp.laplace(np.inf, scale, sens) == t
    assert rdp.laplace(1.0, scale, sens) == pytest.approx(t + math.expm1(-t), rel=1e-12)
    # t − ε(α) ≤ log(2)/(α − 1): the large-order curve approaches the pure-DP value from below.
    gap = t - float(rdp.laplace(1e6, scale, sens))
    assert 0.0 <= gap <= math.log(2.0) / (1e6 - 1.0) * (1 + 1e-9)


def test_simple_curves_closed_forms() -> None:
    a = np.array([1.0, 1.5, 2.0, 10.0, 1e6, np.inf])
    np.testing.assert_array_equal(rdp.zcdp(a, 0.3), 0.3 * a)
    np.testing.assert_allclose(rdp.gaussian(a, 2.0, 3.0), a * 9.0 / 8.0, rtol=1e-15)
    eps = 0.4
    np.testing.assert_allclose(rdp.pure_dp(a, eps), np.minimum(eps, a * eps**2 / 2), rtol=1e-15)
    assert rdp.pure_dp(np.inf, eps) == eps
    assert np.isinf(rdp.gaussian(np.inf, 1.0)) and np.isinf(rdp.zcdp(np.inf, 1.0))


def test_pure_dp_curve_bounds_randomized_response() -> None:
    # RR with L = ε is ε-DP, so its curve must lie under the generic pure-DP bound.
    eps = 0.8
    p = math.exp(eps) / (1 + math.exp(eps))
    assert np.all(rdp.randomized_response(ORDERS, p) <= rdp.pure_dp(ORDERS, eps) + 1e-12)


def test_dirichlet_formula_and_domain() -> None:
    lam = np.array([1.0, 1.5, 2.0, 3.0, 5.0, np.inf])
    r, alpha, d2, dinf = 0.4, 2.0, math.sqrt(2.0), 1.0
    got = rdp.dirichlet(lam, r, alpha, d2, dinf)
    x = alpha - (lam[:4] - 1) * r * dinf
    expected = lam[:4] * r**2 * d2**2 / 2 * special.polygamma(1, x)
    np.testing.assert_allclose(got[:4], expected, rtol=1e-14)
    # λ = 6 makes the argument exactly 0, λ = ∞ is never covered.
    assert np.isfinite(got[4])  # λ = 5: argument 0.4 > 0
    assert np.isinf(rdp.dirichlet(6.0, r, alpha, d2, dinf))
    assert np.isinf(got[5])
    # broadcasting against parameter arrays (one curve per r)
    rs = np.array([0.1, 0.2, 0.3])
    grid = rdp.dirichlet(ORDERS[:, None], rs, alpha, d2, dinf)
    assert grid.shape == (ORDERS.size, 3)
    np.testing.assert_array_equal(grid[:, 1], rdp.dirichlet(ORDERS, 0.2, alpha, d2, dinf))


def test_dirichlet_bound_dominates_exact_divergence(rng: np.random.Generator) -> None:
    """Audit of Theorem 1 on replace-one histogram neighbours (Δ₂ = √2, Δ∞ = 1)."""
    worst = 0.0
    for _ in range(400):
        k = int(rng.integers(2, 6))
        counts = rng.integers(0, 5, size=k).astype(float)
        i, j = rng.choice(k, size=2, replace=False)
        if counts[i] == 0:
            counts[i] = 1.0
        other = counts.copy()
        other[i] -= 1.0
        other[j] += 1.0
        r = float(rng.uniform(0.05, 2.0))
        base = rng.uniform(0.5, 3.0, size=k)
        lam = float(rng.uniform(1.05, 8.0))
        bound = float(rdp.dirichlet(lam, r, base.min(), math.sqrt(2.0), 1.0))
        for u, v in ((counts, other), (other, counts)):
            exact = dirichlet_renyi(r * u + base, r * v + base, lam)
            if math.isfinite(bound):
                assert exact <= bound * (1 + 1e-9) + 1e-9
                worst = max(worst, exact / bound if bound > 0 else 0.0)
    assert worst > 0.1  # the audit did exercise tight cases


@pytest.mark.parametrize(
    ("curve", "args"),
    [
        (rdp.gaussian, (0.3,)),
        (rdp.laplace, (0.01,)),
        (rdp.laplace, (100.0,)),
        (rdp.randomized_response, (0.999999,)),
        (rdp.randomized_response, (0.500001,)),
        (rdp.pure_dp, (5.0,)),
        (rdp.zcdp, (2.0,)),
        (rdp.dirichlet, (1e-3, 1e4, 1.0, 1.0)),
    ],
)
def test_curves_finite_and_warning_free_up_to_1e6(curve, args) -> None:
    a = np.concatenate([[1.0, 1.0 + 1e-12], ORDERS, [np.inf]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        val = curve(a, *args)
    assert val.dtype == np.float64 and val.shape == a.shape
    assert not np.isnan(val).any()
    assert np.isfinite(val[:-1]).all() or curve is rdp.dirichlet
    assert (val >= 0).all()


# ------------------------------------------------------------------------------------------------
# Properties
# ------------------------------------------------------------------------------------------------


def _nondecreasing(values: np.ndarray) -> bool:
    finite = values[np.isfinite(values)]
    # infinite values may only form a tail (once unbounded, always unbounded)
    if not np.all(np.isinf(values[finite.size :])):
        return False
    return bool(np.all(np.diff(finite) >= -1e-12 * np.maximum(1.0, np.abs(finite[1:]))))


ORDERS_WITH_LIMITS = np.concatenate([[1.0], ORDERS, [np.inf]])


@HYP
@given(scale=small_pos, sens=small_pos)
def test_laplace_nondecreasing_in_order(scale: float, sens: float) -> None:
    assert _nondecreasing(rdp.laplace(ORDERS_WITH_LIMITS, scale, sens))


@HYP
@given(p=truth_p)
def test_randomized_response_nondecreasing_in_order(p: float) -> None:
    assert _nondecreasing(rdp.randomized_response(ORDERS_WITH_LIMITS, p))


@HYP
@given(sigma=finite_pos, eps=small_pos, rho=finite_pos)
def test_other_curves_nondecreasing_in_order(sigma: float, eps: float, rho: float) -> None:
    assert _nondecreasing(rdp.gaussian(ORDERS_WITH_LIMITS, sigma))
    assert _nondecreasing(rdp.pure_dp(ORDERS_WITH_LIMITS, eps))
    assert _nondecreasing(rdp.zcdp(ORDERS_WITH_LIMITS, rho))


@HYP
@given(
    r=st.floats(0.01, 5.0),
    alpha=st.floats(0.1, 50.0),
    d2=st.floats(0.1, 3.0),
    dinf=st.floats(0.1, 3.0),
)
def test_dirichlet_nondecreasing_in_order(r: float, alpha: float, d2: float, dinf: float) -> None:
    assert _nondecreasing(rdp.dirichlet(ORDERS_WITH_LIMITS, r, alpha, d2, dinf))


@HYP
@given(
    sigma=st.floats(0.3, 50.0),
    scale=st.floats(0.3, 50.0),
    d1=deltas,
    d2=deltas,
    method=st.sampled_from(["bbghs", "mironov"]),
)
def test_to_dp_nonincreasing_in_delta(
    sigma: float, scale: float, d1: float, d2: float, method: str
) -> None:
    curve = rdp.gaussian(ORDERS, sigma) + rdp.laplace(ORDERS, scale)
    lo, hi = sorted((d1, d2))
    e_lo, _ = rdp.to_dp(ORDERS, curve, lo, method=method)
    e_hi, _ = rdp.to_dp(ORDERS, curve, hi, method=method)
    assert e_hi <= e_lo + 1e-12
    eps_vec, ord_vec = rdp.to_dp(ORDERS, curve, np.array([lo, hi]), method=method)
    assert eps_vec.tolist() == [e_lo, e_hi]
    assert ord_vec.shape == (2,)


@HYP
@given(sigmas=st.lists(st.floats(0.2, 30.0), min_size=1, max_size=8), delta=deltas)
def test_composition_is_additive(sigmas: list[float], delta: float) -> None:
    # Gaussians compose into one Gaussian with 1/σ² = Σ 1/σ_i²: the sum of curves is that curve.
    total = sum(rdp.gaussian(ORDERS, s) for s in sigmas)
    sigma_eff = 1.0 / math.sqrt(sum(1.0 / s**2 for s in sigmas))
    single = rdp.gaussian(ORDERS, sigma_eff)
    np.testing.assert_allclose(total, single, rtol=1e-12)
    e_sum, _ = rdp.to_dp(ORDERS, total, delta)
    e_one, _ = rdp.to_dp(ORDERS, single, delta)
    assert e_sum == pytest.approx(e_one, rel=1e-9, abs=1e-12)


@HYP
@given(sigma=st.floats(0.3, 30.0), scale=st.floats(0.3, 30.0), delta=deltas)
def test_bbghs_never_worse_than_mironov_and_delta_round_trip(
    sigma: float, scale: float, delta: float
) -> None:
    curve = rdp.gaussian(ORDERS, sigma) + 3 * rdp.laplace(ORDERS, scale)
    eps_b, _ = rdp.to_dp(ORDERS, curve, delta)
    eps_m, _ = rdp.to_dp(ORDERS, curve, delta, method="mironov")
    assert eps_b <= eps_m + 1e-12
    if eps_b > 1e-6:
        back, _ = rdp.to_delta(ORDERS, curve, eps_b)
        assert back <= delta * (1 + 1e-7)


# ------------------------------------------------------------------------------------------------
# Cross-checks against dp-accounting
# ------------------------------------------------------------------------------------------------


def _random_workload(rng: np.random.Generator, with_rr: bool):
    events, ours = [], np.zeros_like(DPA_ORDERS)
    for _ in range(int(rng.integers(1, 25))):
        kind = rng.choice(["gaussian", "laplace", "rr"] if with_rr else ["gaussian", "laplace"])
        count = int(rng.integers(1, 4))
        if kind == "gaussian":
            sigma = float(rng.uniform(0.5, 20.0))
            ev = dp_accounting.GaussianDpEvent(noise_multiplier=sigma)
            curve = rdp.gaussian(DPA_ORDERS, sigma)
        elif kind == "laplace":
            scale = float(rng.uniform(0.5, 50.0))
            ev = dp_accounting.LaplaceDpEvent(noise_multiplier=scale)
            curve = rdp.laplace(DPA_ORDERS, scale)
        else:
            noise = float(rng.uniform(0.05, 0.95))  # dp-accounting: respond at random w.p. noise
            ev = dp_accounting.RandomizedResponseDpEvent(noise_parameter=noise, num_buckets=2)
            curve = rdp.randomized_response(DPA_ORDERS, 1.0 - noise / 2.0)
        events.append(dp_accounting.SelfComposedDpEvent(ev, count))
        ours = ours + count * curve
    return dp_accounting.ComposedDpEvent(events), ours


@pytest.mark.parametrize("with_rr", [False, True])
def test_against_dp_accounting_random_workloads(rng: np.random.Generator, with_rr: bool) -> None:
    relation = dp_accounting.NeighboringRelation.REPLACE_ONE
    for _ in range(25 if with_rr else 40):
        event, ours = _random_workload(rng, with_rr)
        acc = dpa_rdp.RdpAccountant(list(DPA_ORDERS), neighboring_relation=relation)
        acc.compose(event)
        theirs = np.asarray(acc._rdp, dtype=np.float64)
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-300)
        for delta in (1e-3, 1e-6, 1e-10):
            eps_ours, _ = rdp.to_dp(DPA_ORDERS, ours, delta)
            assert eps_ours <= acc.get_epsilon(delta) + 1e-12
        for eps in (0.5, 2.0, 8.0):
            delta_ours, _ = rdp.to_delta(DPA_ORDERS, ours, eps)
            assert delta_ours <= acc.get_delta(eps) * (1 + 1e-10) + 1e-300


def test_to_dp_matches_dp_accounting_formula_exactly_on_its_range() -> None:
    curve = 40 * rdp.gaussian(DPA_ORDERS, 5.0) + 10 * rdp.laplace(DPA_ORDERS, 7.0)
    for delta in (1e-2, 1e-5, 1e-9):
        ours, order = rdp.to_dp(DPA_ORDERS, curve, delta)
        theirs, their_order = dpa_rdp.compute_epsilon(DPA_ORDERS, curve, delta)
        assert ours == pytest.approx(theirs, rel=1e-12)
        assert order == their_order


def test_kl_rule_gives_zero_epsilon_for_tiny_curves() -> None:
    curve = rdp.gaussian(ORDERS, 1e4)  # KL = 5e-9, so δ = 0.1 already holds with ε = 0
    assert rdp.to_dp(ORDERS, curve, 0.1)[0] == 0.0
    assert dpa_rdp.compute_epsilon(DPA_ORDERS, rdp.gaussian(DPA_ORDERS, 1e4), 0.1)[0] == 0.0


def test_pure_dp_order_infinity_in_conversions() -> None:
    orders = np.array([2.0, 10.0, np.inf])
    curve = rdp.laplace(orders, 2.0)  # 0.5-DP
    eps, order = rdp.to_dp(orders, curve, 1e-30)
    assert (eps, order) == (0.5, np.inf)
    delta, order = rdp.to_delta(orders, curve, 0.5)
    assert (delta, order) == (0.0, np.inf)
    delta, _ = rdp.to_delta(np.array([np.inf]), np.array([np.inf]), 1.0)
    assert delta == 1.0


# ------------------------------------------------------------------------------------------------
# Continuous refinement of the order
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("rho", [1e-3, 0.05, 1.0])
@pytest.mark.parametrize("delta", [1e-5, 1e-9])
def test_refine_with_callable_reaches_analytic_optimum(rho: float, delta: float) -> None:
    # Mironov Prop. 3 on ρα: minimum at α* = 1 + sqrt(log(1/δ)/ρ), ε* = ρ + 2 sqrt(ρ log(1/δ)).
    log_inv = math.log(1 / delta)
    eps_star = rho + 2 * math.sqrt(rho * log_inv)
    alpha_star = 1 + math.sqrt(log_inv / rho)
    grid_eps, _ = rdp.to_dp(ORDERS, rdp.zcdp(ORDERS, rho), delta, method="mironov")
    eps, order = rdp.to_dp(ORDERS, lambda a: rdp.zcdp(a, rho), delta, method="mironov", refine=True)
    assert eps == pytest.approx(eps_star, rel=1e-10)
    assert order == pytest.approx(alpha_star, rel=1e-4)
    assert eps <= grid_eps


@HYP
@given(sigma=st.floats(0.5, 20.0), scale=st.floats(0.5, 20.0), delta=deltas)
def test_refine_never_worse_and_array_refinement_is_sound(
    sigma: float, scale: float, delta: float
) -> None:
    def curve_fn(a):
        return rdp.gaussian(a, sigma) + 2 * rdp.laplace(a, scale)

    coarse = np.array([1.5, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0])
    grid, _ = rdp.to_dp(coarse, curve_fn(coarse), delta)
    arr_eps, arr_ord = rdp.to_dp(coarse, curve_fn(coarse), delta, refine=True)
    fn_eps, _ = rdp.to_dp(coarse, curve_fn, delta, refine=True)
    assert arr_eps <= grid and fn_eps <= grid
    # The interpolated (convexity) bound is an upper bound on the true curve, so the exact
    # curve at the chosen order converts to an ε no larger than the one reported.
    exact_at_order, _ = rdp.to_dp(np.array([arr_ord]), curve_fn(np.array([arr_ord])), delta)
    assert exact_at_order <= arr_eps + 1e-9


def test_log_mgf_convexity_behind_array_refinement() -> None:
    # (α − 1) ε(α) convex in α for the exact curves used in refinement.
    a = np.linspace(1.01, 60.0, 500)
    for curve in (rdp.laplace(a, 0.7), rdp.randomized_response(a, 0.8), rdp.gaussian(a, 2.0)):
        k = (a - 1) * curve
        assert np.all(np.diff(k, 2) >= -1e-10)


# ------------------------------------------------------------------------------------------------
# Mironov 2017: probability preservation, posterior odds, group privacy, advanced composition
# ------------------------------------------------------------------------------------------------


def test_mironov_probability_preservation_example() -> None:
    low, high = rdp.event_probability_bounds(1e-6, 10.0, 0.1)
    assert float(low) == pytest.approx(1.95e-7, rel=3e-3)
    assert float(high) == pytest.approx(4.36e-6, rel=2e-3)


def test_event_bounds_pure_dp_limit_and_shapes() -> None:
    low, high = rdp.event_probability_bounds(np.array([1e-3, 0.5]), np.inf, 0.2)
    np.testing.assert_allclose(low, np.exp(-0.2) * np.array([1e-3, 0.5]))
    np.testing.assert_allclose(high, np.minimum(1.0, np.exp(0.2) * np.array([1e-3, 0.5])))
    low, high = rdp.event_probability_bounds(0.0, 2.0, 1.0)
    assert (float(low), float(high)) == (0.0, 0.0)
    _, high = rdp.event_probability_bounds(0.9, 2.0, 5.0)
    assert float(high) == 1.0


@pytest.mark.parametrize("p", [0.55, 0.7, 0.9])
def test_event_bounds_hold_for_randomized_response(p: float) -> None:
    # Events of RR with D′ ↦ Bern(1 − p), D ↦ Bern(p): the exact probabilities must be inside.
    for alpha in (1.5, 2.0, 10.0, 100.0):
        eps = float(rdp.randomized_response(alpha, p))
        for base, moved in ((1 - p, p), (p, 1 - p)):
            low, high = rdp.event_probability_bounds(base, alpha, eps)
            assert float(low) <= moved * (1 + 1e-12) and moved <= float(high) * (1 + 1e-12)


def test_best_event_probability_bound_minimises_over_orders() -> None:
    curve = 50 * rdp.laplace(ORDERS, 10.0)
    high, order = rdp.best_event_probability_bound(ORDERS, curve, 1e-6)
    each = rdp.event_probability_bounds(1e-6, ORDERS, curve)[1]
    assert high == pytest.approx(each.min(), rel=1e-12)
    assert order == ORDERS[np.argmin(each)]
    vec, _ = rdp.best_event_probability_bound(ORDERS, curve, np.array([1e-6, 1e-3]))
    assert vec[0] == high and vec.shape == (2,)


def test_posterior_odds_bound_tail_probability_for_randomized_response() -> None:
    # RR with 20-fold composition: the loss is a ±L random walk; compute the tail exactly.
    p, n, prior = 0.6, 20, 1.0
    big_l = math.log(p / (1 - p))
    k = np.arange(n + 1)  # number of truthful reports
    pmf = stats.binom.pmf(k, n, p)
    odds = prior * np.exp((2 * k - n) * big_l)
    for alpha in (2.0, 5.0, 20.0):
        eps = n * float(rdp.randomized_response(alpha, p))
        for delta in (0.2, 0.05, 1e-3):
            bound = float(rdp.posterior_odds_bound(prior, alpha, eps, delta))
            assert pmf[odds > bound].sum() <= delta
    assert float(rdp.posterior_odds_bound(2.0, np.inf, 0.3, 0.5)) == pytest.approx(
        2.0 * math.exp(0.3)
    )


def test_group_privacy_values() -> None:
    order, eps = rdp.group_privacy(16.0, 0.1, 2)
    assert (float(order), float(eps)) == (4.0, pytest.approx(0.9))
    order, eps = rdp.group_privacy(np.array([4.0, 8.0]), 0.5, 1)
    np.testing.assert_array_equal(order, [2.0, 4.0])
    np.testing.assert_allclose(eps, [1.5, 1.5])
    with pytest.raises(ValueError, match="order"):
        rdp.group_privacy(7.0, 0.1, 2)
    with pytest.raises(TypeError, match="c must"):
        rdp.group_privacy(8.0, 0.1, 1.5)
    with pytest.raises(ValueError, match="c must"):
        rdp.group_privacy(8.0, 0.1, -1)


def test_advanced_composition_mironov_proposition_4() -> None:
    eps, n, delta = 0.01, 1000, 1e-6
    val = float(rdp.advanced_composition(eps, n, delta))
    assert val == pytest.approx(4 * eps * math.sqrt(2 * n * math.log(1 / delta)), rel=1e-14)
    # The statement follows from (α, 2nαε²)-RDP and Proposition 3 at the best order.
    via_rdp, _ = rdp.to_dp(ORDERS, lambda a: 2 * n * eps**2 * a, delta, "mironov", refine=True)
    assert via_rdp <= val
    # ... and it never beats the tighter pure-DP curve converted with the default rule.
    assert rdp.to_dp(ORDERS, n * rdp.pure_dp(ORDERS, eps), delta)[0] <= val
    # Outside its proviso log(1/δ) ≥ nε² the proposition says nothing.
    assert np.isinf(rdp.advanced_composition(1.0, 100, 1e-3))


def test_standard_advanced_composition_bounds() -> None:
    eps, n, delta = 0.1, np.array([1, 10, 100, 1000]), 1e-6
    drv = rdp.advanced_composition(eps, n, delta, method="drv")
    kov = rdp.advanced_composition(eps, n, delta, method="kov")
    np.testing.assert_allclose(
        drv, eps * np.sqrt(2 * n * math.log(1 / delta)) + n * eps * math.expm1(eps)
    )
    assert np.all(kov <= n * eps + 1e-15)
    assert np.all(kov <= drv + 1e-12)


def test_figure2_example_runs_and_rdp_bound_is_smallest(tmp_path: Path) -> None:
    script = Path(__file__).resolve().parents[2] / "examples" / "mironov_figure2.py"
    namespace = runpy.run_path(str(script))
    out = namespace["main"](["--out", str(tmp_path / "fig.png"), "--n-max", "300"])
    assert out.stat().st_size > 10_000
    n = np.array([1.0, 10.0, 98.0, 1000.0])
    for p in (1e-6, 1e-3, 1e-1):
        curves = list(namespace["bounds"](n, 0.1, p).values())
        others = np.minimum.reduce(curves[:3])
        for rdp_bound in curves[3:]:
            assert np.all(rdp_bound <= others * (1 + 1e-9))
            assert np.all(rdp_bound >= p)


# ------------------------------------------------------------------------------------------------
# Bad input
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: rdp.gaussian(ORDERS, 0.0), ValueError, "sigma"),
        (lambda: rdp.gaussian(ORDERS, -1.0), ValueError, "sigma"),
        (lambda: rdp.gaussian(ORDERS, np.nan), ValueError, "sigma"),
        (lambda: rdp.gaussian(ORDERS, np.inf), ValueError, "sigma"),
        (lambda: rdp.gaussian(ORDERS, 1.0, 0.0), ValueError, "sensitivity"),
        (lambda: rdp.gaussian(ORDERS, "1.0"), TypeError, "sigma"),
        (lambda: rdp.gaussian(0.5, 1.0), ValueError, "orders"),
        (lambda: rdp.gaussian([2.0, np.nan], 1.0), ValueError, "orders"),
        (lambda: rdp.gaussian([], 1.0), ValueError, "orders"),
        (lambda: rdp.gaussian(ORDERS, np.ones(3)), ValueError, "sigma"),
        (lambda: rdp.laplace(ORDERS, 0.0), ValueError, "scale"),
        (lambda: rdp.laplace(ORDERS, 1.0, -2.0), ValueError, "sensitivity"),
        (lambda: rdp.randomized_response(ORDERS, 0.5), ValueError, "p"),
        (lambda: rdp.randomized_response(ORDERS, 1.0), ValueError, "p"),
        (lambda: rdp.randomized_response(ORDERS, np.nan), ValueError, "p"),
        (lambda: rdp.pure_dp(ORDERS, 0.0), ValueError, "epsilon"),
        (lambda: rdp.zcdp(ORDERS, -0.1), ValueError, "rho"),
        (lambda: rdp.dirichlet(ORDERS, 0.0, 1.0, 1.0, 1.0), ValueError, "r"),
        (lambda: rdp.dirichlet(ORDERS, 1.0, 0.0, 1.0, 1.0), ValueError, "alpha"),
        (lambda: rdp.dirichlet(ORDERS, 1.0, 1.0, np.nan, 1.0), ValueError, "l2_sensitivity"),
        (lambda: rdp.dirichlet(ORDERS, 1.0, 1.0, 1.0, 0.0), ValueError, "linf_sensitivity"),
        (lambda: rdp.to_dp(ORDERS, np.zeros(3), 1e-5), ValueError, "rdp"),
        (lambda: rdp.to_dp(ORDERS, -np.ones(ORDERS.size), 1e-5), ValueError, "rdp"),
        (lambda: rdp.to_dp(ORDERS, np.full(ORDERS.size, np.nan), 1e-5), ValueError, "rdp"),
        (lambda: rdp.to_dp(np.array([1.0, 2.0]), np.ones(2), 1e-5), ValueError, "orders"),
        (lambda: rdp.to_dp(np.ones((2, 2)) * 2, np.ones((2, 2)), 1e-5), ValueError, "orders"),
        (lambda: rdp.to_dp(ORDERS, np.ones(ORDERS.size), 0.0), ValueError, "delta"),
        (lambda: rdp.to_dp(ORDERS, np.ones(ORDERS.size), 1.0), ValueError, "delta"),
        (lambda: rdp.to_dp(ORDERS, np.ones(ORDERS.size), np.nan), ValueError, "delta"),
        (lambda: rdp.to_dp(ORDERS, np.ones(ORDERS.size), 1e-5, "bogus"), ValueError, "method"),
        (lambda: rdp.to_dp(ORDERS, lambda a: np.ones(3), 1e-5), ValueError, "rdp"),
        (lambda: rdp.to_delta(ORDERS, np.ones(ORDERS.size), 0.0), ValueError, "epsilon"),
        (lambda: rdp.to_delta(ORDERS, np.ones(ORDERS.size), -1.0), ValueError, "epsilon"),
        (lambda: rdp.to_delta(ORDERS, np.ones(5), 1.0), ValueError, "rdp"),
        (lambda: rdp.event_probability_bounds(1.5, 10.0, 0.1), ValueError, "p"),
        (lambda: rdp.event_probability_bounds(0.1, 1.0, 0.1), ValueError, "order"),
        (lambda: rdp.event_probability_bounds(0.1, 10.0, 0.0), ValueError, "epsilon"),
        (
            lambda: rdp.best_event_probability_bound(ORDERS, np.ones(ORDERS.size), 0.0),
            ValueError,
            "p",
        ),
        (lambda: rdp.posterior_odds_bound(0.0, 2.0, 0.1, 0.1), ValueError, "prior_odds"),
        (lambda: rdp.posterior_odds_bound(1.0, 2.0, 0.1, 1.0), ValueError, "delta"),
        (lambda: rdp.group_privacy(np.inf, 0.1, 1), ValueError, "order"),
        (lambda: rdp.advanced_composition(0.1, 0, 1e-5), ValueError, "n"),
        (lambda: rdp.advanced_composition(0.1, 2.5, 1e-5), ValueError, "n"),
        (lambda: rdp.advanced_composition(0.1, 10, 2.0), ValueError, "delta"),
        (lambda: rdp.advanced_composition(-0.1, 10, 1e-5), ValueError, "epsilon"),
        (lambda: rdp.advanced_composition(0.1, 10, 1e-5, method="x"), ValueError, "method"),
    ],
)
def test_bad_input_names_the_argument(call, exc, match: str) -> None:
    with pytest.raises(exc, match=match):
        call()


def test_results_never_nan_on_extreme_but_valid_inputs() -> None:
    curves = [
        rdp.gaussian(ORDERS, 1e-3),
        rdp.laplace(ORDERS, 1e-4),
        rdp.randomized_response(ORDERS, 1 - 1e-15),
        np.full(ORDERS.size, np.inf),
        np.zeros(ORDERS.size),
    ]
    for curve in curves:
        for delta in (1e-300, 0.5, 1 - 1e-16):
            eps, order = rdp.to_dp(ORDERS, curve, delta)
            assert not math.isnan(eps) and not math.isnan(order)
        for eps in (1e-300, 1.0, 1e300):
            delta, _ = rdp.to_delta(ORDERS, curve, eps)
            assert 0.0 <= delta <= 1.0


@settings(max_examples=300, deadline=None)
@given(
    st.floats(1e-3, 1e4),
    st.floats(1e-2, 1e2),
    st.sampled_from(["default", "shuffled", "with_limits"]),
)
def test_laplace_scalar_path_is_bit_identical_to_the_general_path(
    scale: float, sens: float, grid: str
) -> None:
    # A scalar scale on a sorted one-dimensional grid returns the grid's fresh array directly;
    # the value must be the one of the general path (0-d parameters: unsort and reshape), bit for
    # bit, and the array must own its data (the accountant keeps it without a copy).
    orders = rdp.DEFAULT_ORDERS
    if grid == "shuffled":
        orders = np.random.default_rng(3).permutation(orders)
    elif grid == "with_limits":
        orders = np.concatenate([[1.0], orders, [np.inf]])
    fast = rdp.laplace(orders, scale, sens)
    general = rdp.laplace(orders, np.array(scale), np.array(sens))
    g = _series._grid_of(orders)
    t = sens / scale
    on_grid = _series._laplace_on_grid(g, t)
    assert fast.shape == orders.shape and fast.dtype == np.float64
    assert fast.tobytes() == general.tobytes()
    if on_grid is not None:
        assert fast.tobytes() == g.unsort(on_grid).reshape(orders.shape).tobytes()
    if grid == "default" and on_grid is not None:
        assert fast.base is None
        assert rdp.laplace(orders, scale, sens) is not fast  # a new array every call
