"""Exact samplers: output laws computed exactly by enumerating random bits, and χ² on many draws.

The exhaustive checks replace the random bits by every bit string up to a depth: each string on
which the sampler stops has probability 2^{−length}, so the law of the output is known exactly
up to the (also exact) mass of the strings still running at that depth.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction
from typing import Any

import mpmath as mp
import numpy as np
import pytest
from scipy import stats

from pymc_rdp.privacy.mechanisms import UnsafeNoiseSeed
from pymc_rdp.privacy.mechanisms import exact_sampling as es
from pymc_rdp.privacy.mechanisms.noise import NoiseSource


class _Exhausted(Exception):
    pass


class ScriptedBits(es.BitStream):
    """A bit stream that replays a fixed prefix and stops when it runs out."""

    def __init__(self, prefix: list[int]) -> None:
        super().__init__(UnsafeNoiseSeed(0))
        self._prefix = prefix
        self._pos = 0

    def bit(self) -> int:
        if self._pos >= len(self._prefix):
            raise _Exhausted
        b = self._prefix[self._pos]
        self._pos += 1
        return b

    def bits(self, k: int) -> int:
        r = 0
        for _ in range(k):
            r = (r << 1) | self.bit()
        return r


def exact_law(sample, max_depth: int, max_paths: int = 400_000):
    """{output: P} summed over the terminating bit strings, and the mass still running."""
    law: dict = {}
    pending = Fraction(0)
    stack = [[]]
    paths = 0
    while stack:
        prefix = stack.pop()
        try:
            out = sample(ScriptedBits(prefix))
        except _Exhausted:
            if len(prefix) >= max_depth:
                pending += Fraction(1, 2 ** len(prefix))
                continue
            stack.append([*prefix, 1])
            stack.append([*prefix, 0])
            continue
        paths += 1
        assert paths < max_paths, "enumeration too large"
        law[out] = law.get(out, Fraction(0)) + Fraction(1, 2 ** len(prefix))
    return law, pending


@pytest.mark.parametrize(
    ("num", "den"), [(0, 1), (1, 3), (1, 2), (2, 3), (1, 1), (3, 2), (5, 2), (7, 10)]
)
def test_bernoulli_exp_law_is_exact_on_small_rationals(num, den):
    law, pending = exact_law(lambda b: es.bernoulli_exp(num, den, b), max_depth=26)
    p_true = law.get(True, Fraction(0))
    target = mp.e ** (-mp.mpf(num) / den)
    assert pending < Fraction(1, 2000)
    # the exact probability lies in [P(True so far), P(True so far) + pending]
    assert mp.mpf(p_true.numerator) / p_true.denominator <= target + mp.mpf(1e-30)
    assert target <= mp.mpf((p_true + pending).numerator) / (p_true + pending).denominator


def test_bernoulli_rational_is_exact():
    for num, den in [(1, 3), (2, 7), (5, 8), (0, 4), (4, 4)]:
        law, pending = exact_law(lambda b, n=num, d=den: b.bernoulli(n, d), max_depth=40)
        lo = law.get(True, Fraction(0))
        assert lo <= Fraction(num, den) <= lo + pending
        assert pending < Fraction(1, 10**9)


class _Need(Exception):
    def __init__(self, outcomes):
        self.outcomes = outcomes


class BranchingPrimitives:
    """The samplers' primitives with exact outcome probabilities (50 digits), enumerated."""

    def __init__(self, choices):
        self._choices = choices
        self._pos = 0

    def _next(self, outcomes):
        if self._pos >= len(self._choices):
            raise _Need(outcomes)
        v = self._choices[self._pos]
        self._pos += 1
        return v

    def bit(self):
        return self._next([(0, mp.mpf(1) / 2), (1, mp.mpf(1) / 2)])

    def below(self, n):
        return 0 if n == 1 else self._next([(i, mp.mpf(1) / n) for i in range(n)])

    def exp_bernoulli(self, num, den):
        if num == 0:
            return True
        p = mp.e ** (-mp.mpf(num) / den)
        return self._next([(True, p), (False, 1 - p)])

    def dlaplace(self, t):
        # exact pmf of the discrete Laplace of integer scale t on |y| <= 40 t (tail < e^-40)
        r = mp.e ** (-mp.mpf(1) / t)
        c = (1 - r) / (1 + r)
        return self._next([(y, c * r ** abs(y)) for y in range(-40 * t, 40 * t + 1)])


def branching_law(sample, threshold):
    """{output: P} over every branch of probability >= threshold, and the mass below it."""
    law, pending = {}, mp.mpf(0)
    stack = [([], mp.mpf(1))]
    while stack:
        choices, prob = stack.pop()
        try:
            out = sample(BranchingPrimitives(choices))
        except _Need as need:
            for v, p in need.outcomes:
                q = prob * p
                if q >= threshold:
                    stack.append(([*choices, v], q))
                else:
                    pending += q
            continue
        law[out] = law.get(out, 0) + prob
    return law, pending


def test_discrete_laplace_law_is_exact_given_exact_bernoullis(monkeypatch):
    """Algorithm 2's logic: with exact Bernoulli(e^{-γ}) primitives (checked above) the output
    law of sample_discrete_laplace is the discrete Laplace pmf, to the enumerated mass."""
    monkeypatch.setattr(es, "_bernoulli_exp_le1", lambda n, d, b: b.exp_bernoulli(n, d))
    mp.mp.dps = 50
    for t, s in [(1, 1)]:
        law, pending = branching_law(
            lambda b, t=t, s=s: es.sample_discrete_laplace(t, s, b), mp.mpf(10) ** -11
        )
        assert pending < 1e-8
        r = mp.e ** (-mp.mpf(s) / t)
        for y in range(-8, 9):
            pmf = (1 - r) / (1 + r) * r ** abs(y)
            assert law.get(y, 0) <= pmf + mp.mpf(10) ** -40 <= law.get(y, 0) + pending + 1e-39


def _chi2_pvalue(draws: np.ndarray, logq: np.ndarray, xs: np.ndarray, min_expected=20.0) -> float:
    """χ² of integer draws against an exact pmf on xs, tails pooled into two cells."""
    q = np.exp(logq - logq.max())
    q /= q.sum()
    n = draws.size
    keep = q * n >= min_expected
    lo, hi = xs[keep].min(), xs[keep].max()
    inner = (xs >= lo) & (xs <= hi)
    expected = np.concatenate([[q[xs < lo].sum()], q[inner], [q[xs > hi].sum()]]) * n
    counts = np.bincount(np.clip(draws, lo - 1, hi + 1) - (lo - 1), minlength=hi - lo + 3)
    mask = expected > 0
    return float(
        stats.chisquare(counts[mask], expected[mask] * counts.sum() / expected.sum()).pvalue
    )


def _run_chi2(n_draws: int) -> dict[str, float]:
    src = UnsafeNoiseSeed(2026)
    out = {}
    for sigma in (0.7, 1.7, 6.41):
        x = np.arange(-int(40 * sigma) - 5, int(40 * sigma) + 6)
        draws = es.discrete_gaussian(sigma, n_draws, src)
        # the law of the float's exact rational value (what the sampler uses)
        var = float(Fraction(sigma) ** 2)
        out[f"dg{sigma}"] = _chi2_pvalue(draws, -(x.astype(float) ** 2) / (2 * var), x)
    for scale in (0.4, 2.3, 10.0):
        x = np.arange(-int(60 * scale) - 5, int(60 * scale) + 6)
        draws = es.discrete_laplace(scale, n_draws, src)
        out[f"dl{scale}"] = _chi2_pvalue(draws, -np.abs(x) / scale, x)
    return out


def test_chi2_of_draws_against_the_exact_pmfs():
    pvalues = _run_chi2(100_000)
    assert min(pvalues.values()) > 1e-4, pvalues


@pytest.mark.slow
def test_chi2_of_a_million_draws_against_the_exact_pmfs():
    start = time.perf_counter()
    pvalues = _run_chi2(1_000_000)
    elapsed = time.perf_counter() - start
    assert min(pvalues.values()) > 1e-4, (pvalues, elapsed)


def test_moments_match_the_laws():
    src = UnsafeNoiseSeed(7)
    d = es.discrete_laplace(2.0, 50_000, src)
    r = math.exp(-0.5)
    assert abs(d.mean()) < 5 * math.sqrt(2 * r / (1 - r) ** 2 / d.size)
    assert abs(d.var() / (2 * r / (1 - r) ** 2) - 1) < 0.04
    g = es.discrete_gaussian(3.0, 50_000, src)
    assert abs(g.var() / 9.0 - 1) < 0.04


def test_parameters_are_used_exactly():
    assert es.exact_fraction(0.1, "sigma") == Fraction(3602879701896397, 36028797018963968)
    assert es.exact_fraction(Fraction(1, 3), "sigma") == Fraction(1, 3)
    assert es.exact_fraction(4, "sigma") == 4
    for bad, exc in [
        (0.0, ValueError),
        (-1, ValueError),
        (math.inf, ValueError),
        (math.nan, ValueError),
        ("1", TypeError),
        (True, TypeError),
    ]:
        with pytest.raises(exc, match="sigma"):
            es.exact_fraction(bad, "sigma")


def test_output_is_int64_of_the_requested_shape_and_reproducible_only_with_an_unsafe_seed():
    a = es.discrete_gaussian(2.5, (3, 4), UnsafeNoiseSeed(5))
    b = es.discrete_gaussian(2.5, (3, 4), UnsafeNoiseSeed(5))
    assert a.dtype == np.int64 and a.shape == (3, 4)
    np.testing.assert_array_equal(a, b)
    assert es.discrete_laplace(1.0, 0).shape == (0,)
    with pytest.raises(TypeError, match="noise_source"):
        es.discrete_laplace(1.0, 3, noise_source=1)
    with pytest.raises(TypeError, match="noise_source"):
        es.discrete_gaussian(1.0, 3, noise_source=np.random.default_rng(0))
    with pytest.raises(ValueError, match="size"):
        es.discrete_gaussian(1.0, (-1,))


def test_randomness_comes_only_from_the_noise_source():
    class Recording(NoiseSource):
        secure = False

        def __init__(self):
            self.calls = []
            self._inner = UnsafeNoiseSeed(1)

        def randbits(self, k):
            self.calls.append(k)
            return self._inner.randbits(k)

    src = Recording()
    es.discrete_gaussian(4.0, 1000, src)
    assert src.calls and set(src.calls) == {4096}


def test_draw_rate_for_a_table_the_size_of_adults_largest(capsys):
    """16,384 cells (Adult's largest family table has about 16k) in well under a few seconds."""
    start = time.perf_counter()
    es.discrete_gaussian(17.3, 16_384)
    dg = time.perf_counter() - start
    start = time.perf_counter()
    es.discrete_laplace(12.1, 16_384)
    dl = time.perf_counter() - start
    with capsys.disabled():
        print(f"\n16,384 draws: discrete Gaussian {dg:.2f} s, discrete Laplace {dl:.2f} s")
    assert dg < 10.0 and dl < 10.0


def test_discrete_gaussian_law_is_exact_given_exact_primitives(monkeypatch):
    """Algorithm 3's logic: each candidate y of the discrete Laplace of scale t is accepted by the
    code with probability exp(−num/den); with exact primitives (checked above) the output law is
    P[y] ∝ DLap_t(y)·exp(−num/den). Read num/den and t off the code itself for every y and check
    that this law is the discrete Gaussian pmf exp(−y²/(2σ²))/Z, in 50-digit arithmetic."""
    mp.mp.dps = 50
    for a, b in [(1, 1), (3, 2), (7, 3), (41, 1), (1, 5)]:  # σ² = a / b
        calls: dict[str, Any] = {}

        def fake_laplace(t, s, bits, calls=calls):
            calls["t"], calls["s"] = t, s
            return calls["y"]

        def fake_bernoulli(num, den, bits, calls=calls):
            calls["gamma"] = (num, den)
            return True

        monkeypatch.setattr(es, "sample_discrete_laplace", fake_laplace)
        monkeypatch.setattr(es, "bernoulli_exp", fake_bernoulli)
        sigma2 = mp.mpf(a) / b
        ys = range(-60, 61)
        weights = {}
        for y in ys:
            calls["y"] = y
            assert es.sample_discrete_gaussian(a, b, None) == y
            t, s = calls["t"], calls["s"]
            assert s == 1 and t == int(mp.floor(mp.sqrt(sigma2))) + 1
            num, den = calls["gamma"]
            r = mp.e ** (-mp.mpf(1) / t)
            weights[y] = (1 - r) / (1 + r) * r ** abs(y) * mp.e ** (-mp.mpf(num) / den)
        z_out = mp.fsum(weights.values())
        z_dg = mp.fsum(mp.e ** (-(mp.mpf(y) ** 2) / (2 * sigma2)) for y in ys)
        for y in ys:
            target = mp.e ** (-(mp.mpf(y) ** 2) / (2 * sigma2)) / z_dg
            assert abs(weights[y] / z_out - target) < mp.mpf(10) ** -40, (a, b, y)
