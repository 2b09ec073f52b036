"""Mechanisms: curves against independent formulas, releases, calibration, serialisation, input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, special, stats

from pymc_rdp.privacy import rdp
from pymc_rdp.privacy.mechanisms import (
    CustomCurve,
    DirichletMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    Mechanism,
    RandomizedResponse,
    UnsafeNoiseSeed,
    mechanism_from_dict,
)
from pymc_rdp.privacy.mechanisms.base import registered_mechanisms
from pymc_rdp.privacy.tight_accounting import planned_epsilon

ORDERS = np.array([1.01, 1.5, 2.0, 3.0, 7.5, 16.0, 64.0, 1000.0])


# ------------------------------------------------------------------ curves against oracles


def _renyi_numeric(logp, logq, order, lo, hi, points=()):
    """D_α(P‖Q) = log ∫ p^α q^{1−α} / (α−1) by quadrature (an independent oracle)."""

    def f(x):
        return math.exp(order * logp(x) + (1.0 - order) * logq(x))

    val, _ = integrate.quad(f, lo, hi, points=list(points), limit=400, epsabs=0, epsrel=1e-12)
    return math.log(val) / (order - 1.0)


@pytest.mark.parametrize("sigma,sens", [(1.0, 1.0), (3.7, 2.0), (0.4, 0.25)])
def test_gaussian_curve_matches_numeric_divergence(sigma, sens):
    m = GaussianMechanism(sigma, sens)
    curve = m.rdp(ORDERS[:6])
    for order, value in zip(ORDERS[:6], curve, strict=True):
        num = _renyi_numeric(
            lambda x: stats.norm.logpdf(x, 0, sigma),
            lambda x: stats.norm.logpdf(x, sens, sigma),
            order,
            -60 * sigma - 50 * sens,
            60 * sigma + 50 * sens,
            points=(0.0, sens),
        )
        assert value == pytest.approx(num, rel=1e-7, abs=1e-12)
        assert value == pytest.approx(order * sens**2 / (2 * sigma**2), rel=1e-15)


@pytest.mark.parametrize("scale,sens", [(1.0, 1.0), (0.5, 1.0), (4.0, 2.0)])
def test_laplace_curve_matches_numeric_divergence_and_dp_accounting(scale, sens):
    from dp_accounting.rdp import rdp_privacy_accountant as dpa

    m = LaplaceMechanism(scale, sens)
    curve = m.rdp(ORDERS)
    for order, value in zip(ORDERS, curve, strict=True):
        ref = dpa._laplace_rdp(sens / scale, order)
        assert value == pytest.approx(ref, rel=1e-10, abs=1e-14)
        if order <= 16:
            num = _renyi_numeric(
                lambda x: stats.laplace.logpdf(x, 0, scale),
                lambda x: stats.laplace.logpdf(x, sens, scale),
                order,
                -200 * scale,
                200 * scale + sens,
                points=(0.0, sens),
            )
            assert value == pytest.approx(num, rel=1e-7, abs=1e-12)
    assert m.rdp([np.inf])[0] == pytest.approx(sens / scale, rel=1e-15)


@pytest.mark.parametrize("p", [0.51, 0.6, 0.75, 0.9, 0.999])
def test_randomized_response_curve_matches_bernoulli_divergence(p):
    m = RandomizedResponse(p)
    curve = m.rdp(ORDERS)
    for order, value in zip(ORDERS, curve, strict=True):
        # two-point distributions P = (p, 1-p), Q = (1-p, p)
        terms = [
            order * math.log(p) + (1 - order) * math.log1p(-p),
            order * math.log1p(-p) + (1 - order) * math.log(p),
        ]
        assert value == pytest.approx(special.logsumexp(terms) / (order - 1), rel=1e-12)
    assert m.rdp([np.inf])[0] == pytest.approx(math.log(p / (1 - p)), rel=1e-14)


def test_randomized_response_matches_dp_accounting_binary_rr():
    from dp_accounting.rdp import rdp_privacy_accountant as dpa

    # dp-accounting's RR keeps the bucket with probability 1 - q + q/k; binary: p = 1 - q/2.
    for p in (0.55, 0.7, 0.95):
        ours = RandomizedResponse(p).rdp(ORDERS)
        ref = [dpa._randomized_response_rdp_replace_one(2 * (1 - p), 2, a) for a in ORDERS]
        np.testing.assert_allclose(ours, ref, rtol=1e-11)


def test_default_orders_used_when_none():
    m = LaplaceMechanism(2.0)
    np.testing.assert_array_equal(m.rdp(), rdp.laplace(rdp.DEFAULT_ORDERS, 2.0))
    assert m.rdp().dtype == np.float64


@settings(max_examples=40, deadline=None)
@given(
    kind=st.sampled_from(["g", "l", "rr"]),
    x=st.floats(0.05, 50.0),
    p=st.floats(0.5001, 0.999),
)
def test_curves_are_non_decreasing_in_the_order(kind, x, p):
    m = {"g": GaussianMechanism(x), "l": LaplaceMechanism(x), "rr": RandomizedResponse(p)}[kind]
    c = m.rdp()
    assert np.all(np.diff(c) >= -1e-12 * np.abs(c[1:]))
    assert np.all(c >= 0)


# ------------------------------------------------------------------ batch curves


def test_batch_rdp_matches_single_curves(rng):
    gs = [GaussianMechanism(s, d) for s, d in rng.uniform(0.1, 10, (7, 2))]
    ls = [LaplaceMechanism(s, d) for s, d in rng.uniform(0.1, 10, (7, 2))]
    rs = [RandomizedResponse(p) for p in rng.uniform(0.51, 0.99, 7)]
    o = rdp.DEFAULT_ORDERS
    for group in (gs, ls, rs):
        block = type(group[0]).batch_rdp(group, o)
        assert block.shape == (7, o.size)
        for row, m in zip(block, group, strict=True):
            np.testing.assert_allclose(row, m.rdp(o), rtol=1e-12, atol=0)


# ------------------------------------------------------------------ release


@pytest.mark.parametrize(
    "mech", [GaussianMechanism(2.0), LaplaceMechanism(1.5), RandomizedResponse(0.8)]
)
@pytest.mark.parametrize("shape", [(), (5,), (3, 4)])
def test_release_shape_dtype_and_seeding(mech, shape):
    value = np.ones(shape)
    out = mech.release(value, noise_source=UnsafeNoiseSeed(7))
    assert isinstance(out, np.ndarray)
    assert out.shape == shape and out.dtype == np.float64
    np.testing.assert_array_equal(out, mech.release(value, noise_source=UnsafeNoiseSeed(7)))
    assert mech.release(value).shape == shape  # noise_source=None: OS entropy


def test_gaussian_and_laplace_noise_distribution():
    x = np.full(200_000, 3.0)
    g = GaussianMechanism(2.0).release(x, noise_source=UnsafeNoiseSeed(1)) - 3.0
    lap = LaplaceMechanism(1.5).release(x, noise_source=UnsafeNoiseSeed(2)) - 3.0
    assert stats.kstest(g, stats.norm(0, 2.0).cdf).pvalue > 1e-4
    assert stats.kstest(lap, stats.laplace(0, 1.5).cdf).pvalue > 1e-4


def test_randomized_response_flip_rate_and_values():
    rr = RandomizedResponse(0.7)
    bits = np.resize([True, False, True], 300_000)
    out = rr.release(bits, noise_source=UnsafeNoiseSeed(3))
    assert set(np.unique(out)) <= {0.0, 1.0}
    flips = int(np.sum(out != bits))
    assert stats.binomtest(flips, bits.size, 0.3).pvalue > 1e-4
    out01 = rr.release(np.array([[0, 1], [1, 0]]), noise_source=UnsafeNoiseSeed(3))
    assert out01.shape == (2, 2)


def test_randomized_response_refuses_non_bits():
    rr = RandomizedResponse(0.7)
    with pytest.raises(ValueError, match="value"):
        rr.release([0, 1, 2])
    with pytest.raises(ValueError, match="value"):
        rr.release([0.5])
    with pytest.raises(TypeError, match="value"):
        rr.release("01")


@pytest.mark.parametrize("mech", [GaussianMechanism(1.0), LaplaceMechanism(1.0)])
def test_additive_release_refuses_bad_values(mech):
    with pytest.raises(ValueError, match="value"):
        mech.release([1.0, np.nan])
    with pytest.raises(ValueError, match="value"):
        mech.release([np.inf])
    with pytest.raises(TypeError, match="value"):
        mech.release("abc")


@pytest.mark.parametrize(
    "bad", ["seed", 1.5, True, 7, -1, np.random.RandomState(0), np.random.default_rng(7)]
)
@pytest.mark.parametrize(
    "mech",
    [
        GaussianMechanism(1.0),
        LaplaceMechanism(1.0),
        RandomizedResponse(0.8),
        DirichletMechanism(1.0, 5.0, 2**0.5, 1.0),
    ],
)
def test_release_refuses_seeds_and_generators(mech, bad):
    """Privacy noise is never steered by a user seed or generator."""
    with pytest.raises(TypeError, match="noise_source must be None"):
        mech.release(np.array([0.0, 1.0]), noise_source=bad)
    with pytest.raises(TypeError, match="noise_source must be None"):
        mech.release(np.array([0.0, 1.0]), bad)  # positionally too


# ------------------------------------------------------------------ calibration


def _meets(mech, eps, order=None, delta=None):
    if order is not None:
        return mech.rdp([order])[0] <= eps
    return rdp.to_dp(rdp.DEFAULT_ORDERS, mech.rdp(), delta)[0] <= eps


def _less_noise(mech, factor=0.99):
    if isinstance(mech, GaussianMechanism):
        return GaussianMechanism(mech.sigma * factor, mech.sensitivity)
    if isinstance(mech, LaplaceMechanism):
        return LaplaceMechanism(mech.scale * factor, mech.sensitivity)
    # 1% less noise for RR: log-odds 1% larger
    lo = math.log(mech.p / (1 - mech.p)) / factor
    return RandomizedResponse(1 / (1 + math.exp(-lo)))


def _calibrate(cls, eps, order, delta, sens, **kw):
    # with delta: the RDP calibration (method="rdp"); the default, the tightest valid bound, is
    # tested in test_tight_accounting.py
    if cls is RandomizedResponse:
        return cls.calibrate(eps, order=order, delta=delta)
    if delta is not None:
        kw.setdefault("method", "rdp")
    return cls.calibrate(eps, order=order, delta=delta, sensitivity=sens, **kw)


@settings(max_examples=25, deadline=None)
@given(
    cls=st.sampled_from([GaussianMechanism, LaplaceMechanism, RandomizedResponse]),
    eps=st.floats(0.01, 10.0),
    order=st.sampled_from([1.5, 2.0, 5.0, 32.0, 1000.0]),
    sens=st.floats(0.1, 10.0),
)
def test_calibrate_at_an_order_meets_the_target_and_is_least(cls, eps, order, sens):
    m = _calibrate(cls, eps, order, None, sens)
    assert _meets(m, eps, order=order)
    assert not _meets(_less_noise(m), eps, order=order)
    assert not _meets(_less_noise(m, 1 - 1e-9), eps, order=order)


@settings(max_examples=20, deadline=None)
@given(
    cls=st.sampled_from([GaussianMechanism, LaplaceMechanism, RandomizedResponse]),
    eps=st.floats(0.05, 8.0),
    delta=st.sampled_from([1e-9, 1e-6, 1e-3, 0.1]),
    sens=st.floats(0.1, 10.0),
)
def test_calibrate_to_epsilon_delta_meets_the_target_and_is_least(cls, eps, delta, sens):
    m = _calibrate(cls, eps, None, delta, sens)
    assert _meets(m, eps, delta=delta)
    assert not _meets(_less_noise(m), eps, delta=delta)
    assert not _meets(_less_noise(m, 1 - 1e-9), eps, delta=delta)
    if cls is GaussianMechanism:  # the default calibration (exact bound) needs less noise
        tight = _calibrate(cls, eps, None, delta, sens, method="best")
        assert tight.sigma <= m.sigma
        assert planned_epsilon([(tight, 1)], delta) <= eps


def test_gaussian_calibrate_closed_form():
    for eps, order, sens in [(1.0, 10.0, 1.0), (0.3, 2.0, 2.5), (5.0, 64.0, 0.1)]:
        m = GaussianMechanism.calibrate(eps, order=order, sensitivity=sens)
        assert m.sigma == pytest.approx(sens * math.sqrt(order / (2 * eps)), rel=4e-16)
        assert m.sensitivity == sens


def test_pure_dp_calibration_closed_forms():
    lap = LaplaceMechanism.calibrate(0.5, order=math.inf, sensitivity=2.0)
    assert lap.scale == pytest.approx(4.0, rel=1e-15)
    rr = RandomizedResponse.calibrate(1.0, order=math.inf)
    assert rr.p == pytest.approx(math.exp(1) / (1 + math.exp(1)), rel=1e-15)


def test_calibrated_gaussian_is_no_looser_than_dp_accounting():
    import dp_accounting

    m = GaussianMechanism.calibrate(1.0, delta=1e-6, method="rdp")
    acc = dp_accounting.rdp.RdpAccountant()
    acc.compose(dp_accounting.GaussianDpEvent(m.sigma))
    # dp-accounting's grid is a subset of ours: its ε for the same σ is at least the target
    assert acc.get_epsilon(1e-6) >= 1.0 - 1e-12
    assert acc.get_epsilon(1e-6) == pytest.approx(1.0, rel=0.02)


def test_calibrate_with_custom_orders():
    orders = [2.0, 4.0, 8.0, 16.0, 32.0]
    m = GaussianMechanism.calibrate(1.0, delta=1e-5, orders=orders, method="rdp")
    assert rdp.to_dp(orders, m.rdp(orders), 1e-5)[0] <= 1.0
    assert rdp.to_dp(orders, _less_noise(m).rdp(orders), 1e-5)[0] > 1.0


@pytest.mark.parametrize("cls", [GaussianMechanism, LaplaceMechanism, RandomizedResponse])
@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"epsilon": 1.0}, "order and delta"),
        ({"epsilon": 1.0, "order": 2.0, "delta": 1e-5}, "order and delta"),
        ({"epsilon": 0.0, "order": 2.0}, "epsilon"),
        ({"epsilon": -1.0, "delta": 1e-5}, "epsilon"),
        ({"epsilon": np.nan, "delta": 1e-5}, "epsilon"),
        ({"epsilon": np.inf, "delta": 1e-5}, "epsilon"),
        ({"epsilon": 1.0, "order": 1.0}, "order"),
        ({"epsilon": 1.0, "order": np.nan}, "order"),
        ({"epsilon": 1.0, "delta": 0.0}, "delta"),
        ({"epsilon": 1.0, "delta": 1.0}, "delta"),
        ({"epsilon": 1.0, "delta": np.nan}, "delta"),
        ({"epsilon": [1.0, 2.0], "order": 2.0}, "epsilon"),
        ({"epsilon": 1.0, "delta": 1e-5, "orders": [0.5, 2.0]}, "orders"),
    ],
)
def test_calibrate_bad_input(cls, kwargs, match):
    with pytest.raises(ValueError, match=match):
        cls.calibrate(**kwargs)


def test_calibrate_bad_sensitivity_and_unbounded_order():
    with pytest.raises(ValueError, match="sensitivity"):
        GaussianMechanism.calibrate(1.0, order=2.0, sensitivity=0.0)
    with pytest.raises(ValueError, match="sensitivity"):
        LaplaceMechanism.calibrate(1.0, order=2.0, sensitivity=np.inf)
    with pytest.raises(ValueError, match="order"):
        GaussianMechanism.calibrate(1.0, order=np.inf)
    with pytest.raises(TypeError, match="epsilon"):
        GaussianMechanism.calibrate("1", order=2.0)


# ------------------------------------------------------------------ parameters and registry


@pytest.mark.parametrize(
    "factory,match,exc",
    [
        (lambda: GaussianMechanism(0.0), "sigma", ValueError),
        (lambda: GaussianMechanism(-1.0), "sigma", ValueError),
        (lambda: GaussianMechanism(np.nan), "sigma", ValueError),
        (lambda: GaussianMechanism(np.inf), "sigma", ValueError),
        (lambda: GaussianMechanism([1.0, 2.0]), "sigma", ValueError),
        (lambda: GaussianMechanism("1"), "sigma", TypeError),
        (lambda: GaussianMechanism(None), "sigma", TypeError),
        (lambda: GaussianMechanism(1.0, 0.0), "sensitivity", ValueError),
        (lambda: GaussianMechanism(1.0, np.nan), "sensitivity", ValueError),
        (lambda: LaplaceMechanism(0.0), "scale", ValueError),
        (lambda: LaplaceMechanism(-2.0), "scale", ValueError),
        (lambda: LaplaceMechanism(np.inf), "scale", ValueError),
        (lambda: LaplaceMechanism(1.0, -1.0), "sensitivity", ValueError),
        (lambda: RandomizedResponse(0.5), "p", ValueError),
        (lambda: RandomizedResponse(1.0), "p", ValueError),
        (lambda: RandomizedResponse(0.3), "p", ValueError),
        (lambda: RandomizedResponse(np.nan), "p", ValueError),
        (lambda: RandomizedResponse(np.inf), "p", ValueError),
        (lambda: CustomCurve([2.0, 3.0], [0.1]), "rdp", ValueError),
        (lambda: CustomCurve([1.0, 3.0], [0.1, 0.2]), "orders", ValueError),
        (lambda: CustomCurve([2.0, 3.0], [0.1, -0.2]), "rdp", ValueError),
        (lambda: CustomCurve([2.0, 3.0], [0.1, np.nan]), "rdp", ValueError),
    ],
)
def test_bad_parameters(factory, match, exc):
    with pytest.raises(exc, match=match):
        factory()


@pytest.mark.parametrize(
    "mech", [GaussianMechanism(1.0), LaplaceMechanism(1.0), RandomizedResponse(0.7)]
)
@pytest.mark.parametrize(
    "orders,match", [([1.0, 2.0], "orders"), ([np.nan], "orders"), ([], "orders")]
)
def test_rdp_bad_orders(mech, orders, match):
    with pytest.raises(ValueError, match=match):
        mech.rdp(orders)


@pytest.mark.parametrize(
    "mech",
    [
        GaussianMechanism(1.25, 2.0),
        LaplaceMechanism(0.1 + 0.2, 1.0 / 3.0),
        RandomizedResponse(0.7),
        CustomCurve([2.0, 8.0, np.inf], [0.1, 0.5, np.inf], label="external"),
    ],
)
def test_to_dict_round_trip(mech):
    d = mech.to_dict()
    assert d["name"] == mech.name
    back = mechanism_from_dict(d)
    assert type(back) is type(mech) and back == mech and hash(back) == hash(mech)
    np.testing.assert_array_equal(back.rdp(), mech.rdp())
    assert repr(mech).startswith(type(mech).__name__)


def test_registry_contents_and_errors():
    reg = registered_mechanisms()
    for name in ("gaussian", "laplace", "randomized_response", "custom_curve"):
        assert name in reg and issubclass(reg[name], Mechanism)
    with pytest.raises(ValueError, match="name"):
        mechanism_from_dict({"name": "no-such-mechanism"})
    with pytest.raises(ValueError, match="name"):
        mechanism_from_dict({"sigma": 1.0})
    with pytest.raises(TypeError, match="d must be a dict"):
        mechanism_from_dict([("name", "gaussian")])


def test_custom_curve_reads_next_larger_order():
    c = CustomCurve([2.0, 8.0, 32.0], [0.1, 0.4, 0.9])
    np.testing.assert_array_equal(
        c.rdp([2.0, 3.0, 8.0, 9.0, 32.0, 33.0]), [0.1, 0.4, 0.4, 0.9, 0.9, np.inf]
    )
    with pytest.raises(NotImplementedError):
        c.release([1.0])
