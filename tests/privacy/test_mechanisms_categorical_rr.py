"""k-ary randomized response: its curve against exact summation and dp-accounting, its exact
sampler, calibration, ledger round trip and bad input."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymc_rdp import (
    Accountant,
    CategoricalRandomizedResponse,
    RandomizedResponse,
    mechanism_from_dict,
)
from pymc_rdp.privacy import rdp
from pymc_rdp.privacy.mechanisms.noise import NoiseSource, UnsafeNoiseSeed

ORDERS = np.array([1.0, 1.0001, 1.25, 1.5, 2.0, 3.5, 8.0, 32.0, 256.0, 1e4, np.inf])


def _exact_renyi(p: float, k: int, a: float) -> float:
    """D_α between the output laws of inputs 0 and 1, summed over the k outputs at 60 digits."""
    with mpmath.workdps(60):
        pp = mpmath.mpf(p)
        q = (1 - pp) / (k - 1)
        law0 = [pp, q] + [q] * (k - 2)
        law1 = [q, pp] + [q] * (k - 2)
        if math.isinf(a):
            return float(max(mpmath.log(x / y) for x, y in zip(law0, law1, strict=True)))
        if a == 1.0:
            return float(sum(x * mpmath.log(x / y) for x, y in zip(law0, law1, strict=True)))
        am = mpmath.mpf(a)
        s = sum(x**am * y ** (1 - am) for x, y in zip(law0, law1, strict=True))
        return float(mpmath.log(s) / (am - 1))


@pytest.mark.parametrize(
    ("p", "k"),
    [(0.9, 2), (0.51, 2), (0.3, 10), (0.1001, 10), (0.999, 16), (0.8, 3), (1 / 15 + 1e-4, 15)],
)
def test_curve_equals_the_exact_renyi_divergence(p, k):
    ours = rdp.categorical_randomized_response(ORDERS, p, k)
    exact = [_exact_renyi(p, k, a) for a in ORDERS]
    np.testing.assert_allclose(ours, exact, rtol=1e-10, atol=0)


@settings(max_examples=60, deadline=None)
@given(
    k=st.integers(2, 40),
    frac=st.floats(0.001, 0.999),
    a=st.floats(1.0001, 500.0),
)
def test_curve_equals_the_exact_divergence_over_random_settings(k, frac, a):
    p = 1.0 / k + frac * (1.0 - 1.0 / k)
    ours = float(rdp.categorical_randomized_response(a, p, k))
    assert ours == pytest.approx(_exact_renyi(p, k, a), rel=1e-9)


def test_two_values_is_binary_randomized_response_and_the_curve_rises_to_log_p_over_q():
    for p in (0.55, 0.75, 0.99):
        np.testing.assert_allclose(
            rdp.categorical_randomized_response(ORDERS, p, 2),
            rdp.randomized_response(ORDERS, p),
            rtol=1e-12,
        )
    curve = rdp.categorical_randomized_response(ORDERS, 0.4, 6)
    assert np.all(np.diff(curve) > 0)
    assert curve[-1] == pytest.approx(math.log(0.4 / (0.6 / 5)), rel=1e-15)


def test_dp_accountings_rdp_accountant_computes_the_same_curve():
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.rdp import rdp_privacy_accountant as rpa

    orders = [1.5, 2.0, 3.0, 5.0, 10.0, 64.0, 512.0]
    for p, k in ((0.3, 10), (0.75, 4), (0.9, 2), (0.2, 7)):
        m = CategoricalRandomizedResponse(p, k)
        acc = Accountant(orders=orders)
        acc.spend(m, count=3)
        theirs = rpa.RdpAccountant(
            orders=orders, neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE
        )
        event = acc.to_dp_events()
        assert theirs.supports(event)
        theirs.compose(event)
        np.testing.assert_allclose(theirs._rdp, 3 * m.rdp(orders), rtol=1e-9)
        assert theirs.get_epsilon(1e-6) == pytest.approx(acc.epsilon(1e-6, "rdp"), rel=1e-9)


class _Counting(NoiseSource):
    """Words whose bits are a counter's, reversed: word ``i``'s top ``t`` bits run through every
    ``t``-bit pattern over each aligned block of ``2^t`` words, whatever ``t``. Over whole
    cycles the release's frequencies are its exact probabilities."""

    secure = False

    def __init__(self) -> None:
        self.counter = 0

    def randbits(self, k: int) -> int:
        assert k % 64 == 0, "the sampler draws whole 64-bit words"
        n = k // 64
        idx = range(self.counter, self.counter + n)
        self.counter += n
        words = np.array([int(f"{i:064b}"[::-1], 2) for i in idx], dtype="<u8")
        return int.from_bytes(words.tobytes(), "little")


@pytest.mark.parametrize(("p", "k"), [(0.75, 3), (0.625, 5), (0.5 + 2**-6, 2), (0.5 + 2**-6, 9)])
def test_the_sampler_keeps_with_probability_exactly_p(p, k):
    keep = Fraction(p)
    cycle = keep.denominator
    m = CategoricalRandomizedResponse(p, k)
    src = _Counting()
    true = np.full(cycle * (k - 1), 1, dtype=np.int64)
    out = m.release(true, src)
    # over whole cycles of the bit patterns the kept share is p exactly
    assert Fraction(int((out == 1).sum()), out.size) == keep
    # and the others are equally likely, never the true value again
    others = out[out != 1]
    counts = np.bincount(others, minlength=k)
    assert counts[1] == 0
    assert len({int(c) for i, c in enumerate(counts) if i != 1}) == 1


def test_binary_randomized_response_keeps_with_probability_exactly_p():
    p = 0.5 + 3 * 2**-5
    out = RandomizedResponse(p).release(np.ones(32), _Counting())
    assert out.dtype == np.float64
    assert Fraction(int((out == 1.0).sum()), out.size) == Fraction(p)


def test_release_frequencies_match_the_law_by_chi_square():
    from scipy import stats

    m = CategoricalRandomizedResponse(0.45, 6)
    x = np.repeat(np.arange(6), 4000)
    out = m.release(x, UnsafeNoiseSeed(11))
    table = np.zeros((6, 6))
    np.add.at(table, (x, out), 1)
    law = np.full((6, 6), m.q)
    np.fill_diagonal(law, m.p)
    chi2 = float(((table - 4000 * law) ** 2 / (4000 * law)).sum())
    assert stats.chi2.sf(chi2, 6 * 5) > 1e-4


def test_release_shape_dtype_and_noise_sources():
    m = CategoricalRandomizedResponse(0.6, 4)
    x = np.array([[0, 1], [2, 3]], dtype=np.int32)
    a = m.release(x, UnsafeNoiseSeed(2))
    assert a.dtype == np.int64 and a.shape == (2, 2)
    np.testing.assert_array_equal(a, m.release(x, UnsafeNoiseSeed(2)))
    assert m.release(np.zeros(0, dtype=np.int64)).shape == (0,)
    with pytest.raises(TypeError, match="noise_source"):
        m.release(x, noise_source=3)
    with pytest.raises(TypeError, match="noise_source"):
        m.release(x, noise_source=np.random.default_rng(0))


def test_bad_input_is_refused_naming_the_argument():
    for p, k, err, word in [
        (0.5, 1, ValueError, "k"),
        (0.5, 2.0, TypeError, "k"),
        (0.5, True, TypeError, "k"),
        (0.2, 5, ValueError, "p"),
        (1.0, 5, ValueError, "p"),
        (float("nan"), 5, ValueError, "p"),
        ("0.5", 5, TypeError, "p"),
    ]:
        with pytest.raises(err, match=word):
            CategoricalRandomizedResponse(p, k)
    m = CategoricalRandomizedResponse(0.6, 3)
    with pytest.raises(ValueError, match=r"0\.\.2"):
        m.release([0, 3])
    with pytest.raises(ValueError, match=r"0\.\.2"):
        m.release([-1])
    with pytest.raises(TypeError, match="integer codes"):
        m.release([0.0, 1.0])
    with pytest.raises(TypeError, match="integer codes"):
        m.release(np.array([True]))
    with pytest.raises(ValueError, match="orders"):
        m.rdp([0.5])


def test_calibration_to_pure_dp_and_to_an_order():
    eps, k = 0.7, 8
    m = CategoricalRandomizedResponse.calibrate(eps, k, order=math.inf)
    assert m.k == k
    assert m.p == pytest.approx(math.exp(eps) / (math.exp(eps) + k - 1), rel=1e-14)
    assert m.rdp([math.inf])[0] <= eps
    up = CategoricalRandomizedResponse(math.nextafter(m.p, 1.0), k)
    assert up.rdp([math.inf])[0] > eps
    at2 = CategoricalRandomizedResponse.calibrate(eps, k, order=2.0)
    assert (
        at2.rdp([2.0])[0]
        <= eps
        < CategoricalRandomizedResponse(math.nextafter(at2.p, 1.0), k).rdp([2.0])[0]
    )
    assert at2.p > m.p  # a weaker target: less noise
    with pytest.raises(TypeError, match="k"):
        CategoricalRandomizedResponse.calibrate(eps, 2.5, order=2.0)


def test_ledger_round_trip_recomputes_the_curve():
    m = CategoricalRandomizedResponse(0.35, 7)
    assert mechanism_from_dict(m.to_dict()) == m
    acc = Accountant()
    acc.spend(m, count=2, tag="rr")
    back = Accountant.from_json(acc.to_json())
    np.testing.assert_allclose(back.rdp(), acc.rdp(), rtol=0)
    np.testing.assert_allclose(acc.rdp(), 2 * m.rdp(acc.orders), rtol=1e-12)


def test_privacy_loss_distributions_compose_and_export_every_copy():
    """The PLD bound of repeated k-ary randomized response, against the exact ε and against
    dp-accounting's PLD accountant on the exported events. dp-accounting 0.6.0 composes a
    self-composed randomized-response event once whatever its count, so the export lists the
    copies; the self-composed form is checked to fail here, the defect the export avoids."""
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import pld_privacy_accountant as ppa

    mechs = [
        CategoricalRandomizedResponse(0.6, 3),
        CategoricalRandomizedResponse(0.7, 5),
        CategoricalRandomizedResponse(0.88, 2),
    ]
    acc = Accountant()
    for m in mechs:
        acc.spend(m, count=2)
    # every loss is ±log(p/q) or 0; the largest total, 2 Σ log(p/q), has probability
    # (0.6 · 0.7 · 0.88)² = 0.137 > δ, so ε(δ) is that total exactly
    exact = 2 * sum(math.log(m.p / m.q) for m in mechs)
    assert acc.epsilon(1e-6, "pld") == pytest.approx(exact, abs=5e-3)
    assert acc.epsilon(1e-6, "pld") >= exact - 1e-9

    def theirs(event):
        t = ppa.PLDAccountant(
            neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE,
            value_discretization_interval=1e-4,
        )
        t.compose(event)
        return t.get_epsilon(1e-6)

    assert theirs(acc.to_dp_events()) == pytest.approx(exact, abs=5e-3)
    one = acc.to_dp_events().events[0].events[0]  # the first entry's first copy
    assert theirs(dpa.SelfComposedDpEvent(one, 2)) == pytest.approx(math.log(0.6 / 0.2), abs=1e-3)
