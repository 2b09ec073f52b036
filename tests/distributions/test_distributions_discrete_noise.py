"""Discrete noise on count tables: the floating-point attack, and the noise-aware likelihood.

The attack (Mironov 2012): one count released as count + N(0, σ²) in float64 with σ calibrated
to (1, 1e-6) under replace-one neighbours (σ ≈ 6.41). If the count is 1, a released |y| < 1 is
1 + z rounded, always a multiple of 2⁻⁵³; if the count is 0 it is z itself, which often is not.
So "|y| < 1 and not a multiple of 2⁻⁵³" certifies count 0: it fires with probability ≈ 0.04 on
count 0 and never on count 1, hence δ ≥ 0.04. The default path now releases integers.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import stats
from scipy.special import logsumexp

import pymc_rdp as pmr
import pymc_rdp.distributions as D
from pymc_rdp.privacy import rdp
from pymc_rdp.privacy.mechanisms import UnsafeNoiseSeed


def _certificate(y: np.ndarray) -> np.ndarray:
    """True where y cannot come from a count of 1: |y| < 1 and y is not a multiple of 2⁻⁵³."""
    scaled = y * 2.0**53  # exact (a power of two)
    return (np.abs(y) < 1) & (scaled != np.round(scaled))


def test_floating_point_certificate_distinguishes_counts_under_continuous_noise():
    # σ = 6.41: the RDP calibration to (1, 1e-6) of one count under replace-one neighbours
    mech = pmr.GaussianMechanism(6.41, sensitivity=math.sqrt(2.0))
    src = UnsafeNoiseSeed(1)  # float noise as the continuous mechanism draws it
    n = 40_000
    y0 = mech.release(np.zeros(n), src)
    y1 = mech.release(np.ones(n), src)
    rate0 = _certificate(y0).mean()
    assert 0.03 < rate0 < 0.052  # ≈ 0.041: δ ≥ 0.04, not 1e-6
    assert not _certificate(y1).any()


def test_default_count_path_releases_integers_so_no_certificate_exists():
    acc = pmr.Accountant()
    # privatize refuses the continuous mechanism on counts (old code released floats)
    with pytest.raises(TypeError, match="DiscreteGaussianMechanism"):
        pmr.privatize(np.array([0, 1]), pmr.GaussianMechanism(6.41, math.sqrt(2.0)), acc, "t")
    mech = pmr.DiscreteGaussianMechanism.calibrate(1.0, delta=1e-6, sensitivity=math.sqrt(2.0))
    src = UnsafeNoiseSeed(4)
    ys = np.concatenate(
        [
            pmr.privatize(np.array([0, 1]), mech, acc, f"t{i}", noise_source=src).values
            for i in range(2000)
        ]
    )
    assert (ys == np.round(ys)).all() and not _certificate(ys[np.abs(ys) < 1] + 0.0).any()
    # the two neighbours' output laws differ by exactly the audited divergence (integer order)
    x = np.arange(-200, 201, dtype=np.float64)
    logq = -(x**2) / (2 * mech.sigma**2)
    logq -= logsumexp(logq)
    lq1 = -((x - 1) ** 2) / (2 * mech.sigma**2) - logsumexp(-(x**2) / (2 * mech.sigma**2))
    alpha = 3.0
    one = logsumexp(alpha * logq + (1 - alpha) * lq1) / (alpha - 1)  # one coordinate, shift 1
    assert 2 * one == pytest.approx(float(mech.rdp([alpha])[0]), rel=1e-9)  # shift (1, −1)


def test_network_and_naive_bayes_default_to_the_discrete_mechanisms():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.integers(0, 2, 200), "b": rng.integers(0, 3, 200)})
    bn = pmr.BayesianNetwork({"a": [], "b": ["a"]}, states={"a": [0, 1], "b": [0, 1, 2]})
    bn.fit(df, mechanism="gaussian", epsilon=1.0, order=5.0, noise_aware=False)
    assert isinstance(bn.family_mechanism, pmr.DiscreteGaussianMechanism)
    assert {e.mechanism for e in bn.accountant.ledger} == {"discrete_gaussian"}
    for r in bn.releases.values():
        assert (r.values == np.round(r.values)).all()
    nb = pmr.NaiveBayes(
        mechanism="laplace", epsilon=1.0, categories={"b": [0, 1, 2]}, classes=[0, 1]
    ).fit(df[["b"]], df["a"])
    assert isinstance(nb.mechanism_, pmr.DiscreteLaplaceMechanism)
    assert {e.mechanism for e in nb.accountant_.ledger} == {"discrete_laplace"}
    for v in nb.releases_.values():
        assert (v == np.round(v)).all()


# ---------------------------------------------------------------------------------------------
# noise-aware likelihood: the exact integer convolution as the oracle
# ---------------------------------------------------------------------------------------------


def _noise_logpmf(mech, z):
    z = np.asarray(z, dtype=np.float64)
    wide = np.arange(-2000, 2001, dtype=np.float64)
    if isinstance(mech, pmr.DiscreteGaussianMechanism):
        f = lambda v: -(v**2) / (2 * mech.sigma**2)  # noqa: E731
    else:
        f = lambda v: -np.abs(v) / mech.scale  # noqa: E731
    return f(z) - logsumexp(f(wide))


def brute_force(y, n, p, mech):
    """log Σ_s Multinomial(s; n, p) Π_k q(y_k − s_k) over every integer count vector s."""
    terms = []
    for s in itertools.product(range(n + 1), repeat=len(p)):
        if sum(s) != n:
            continue
        terms.append(
            stats.multinomial.logpmf(s, n, p) + _noise_logpmf(mech, np.subtract(y, s)).sum()
        )
    return float(logsumexp(terms))


def _logp(rv, value):
    return pm.logp(rv, pt.as_tensor(np.asarray(value, dtype=np.float64))).eval(mode="FAST_COMPILE")


MECHS = [
    pmr.DiscreteLaplaceMechanism(1.5, 2.0),
    pmr.DiscreteLaplaceMechanism(0.4, 2.0),
    pmr.DiscreteGaussianMechanism(1.2, math.sqrt(2.0)),
    pmr.DiscreteGaussianMechanism(0.6, math.sqrt(2.0)),
]


@pytest.mark.parametrize("mech", MECHS, ids=lambda m: repr(m))
def test_exact_logp_equals_the_brute_force_integer_sum(mech):
    for k, n in [(2, 6), (3, 4)]:
        for p in (np.full(k, 1 / k), np.linspace(1, 2, k) / np.linspace(1, 2, k).sum()):
            for y in (np.r_[np.zeros(k - 1), n], np.r_[-1.0, np.full(k - 1, 3.0)]):
                rv = D.NoisyCounts.dist(n, p, mechanism=mech)
                assert rv.owner.op.likelihood == "exact"  # the default when it is small
                np.testing.assert_allclose(_logp(rv, y), brute_force(y, n, p, mech), atol=1e-9)


def test_release_round_trip_and_auto_exact():
    acc = pmr.Accountant()
    mech = pmr.DiscreteLaplaceMechanism(2.0, 2.0)
    rel = pmr.privatize(np.array([2, 3, 1]), mech, acc, "t", noise_source=UnsafeNoiseSeed(3))
    back = D.Release.from_json(rel.to_json())
    with pm.Model() as model:
        p = pm.Dirichlet("p", np.ones(3))
        D.NoisyCounts("y", 6, p, back)
    assert {e["name"]: e["mode"] for e in D.ledger(model)}["y"] == "exact"
    with pytest.raises(ValueError, match="non-integer"):
        with pm.Model():
            D.NoisyCounts("z", 6, np.full(3, 1 / 3), mechanism=mech, observed=[1.5, 2.0, 3.0])


def test_approximations_against_the_exact_sum_measured_error(capsys):
    """The surrogates (exact noise variance) against the integer sum, n = 40, K = 3.

    Measured with these seeds: discrete Gaussian σ = 4 (multivariate normal) and discrete
    Laplace t = 20 (independent normal-Laplace cells) are within the tolerances below; the
    independent cells at t = 4 (outside their rule) were off by up to 0.6 nats.
    """
    p = np.array([0.2, 0.3, 0.5])
    n = 40
    rng = np.random.default_rng(3)
    report = []
    for mech, mode, tol in [
        (pmr.DiscreteGaussianMechanism(4.0, math.sqrt(2.0)), "convolution", 0.05),
        # independent cells, where the continuous rule uses them (n/4 <= 2% of the variance)
        (pmr.DiscreteLaplaceMechanism(20.0, 2.0), "convolution", 0.05),
    ]:
        errs = []
        for _ in range(5):
            s = rng.multinomial(n, p)
            y = s + np.asarray(mech.release(np.zeros(3), UnsafeNoiseSeed(int(rng.integers(99)))))
            exact = _logp(D.NoisyCounts.dist(n, p, mechanism=mech, mode="exact"), y)
            approx = _logp(D.NoisyCounts.dist(n, p, mechanism=mech, mode=mode), y)
            errs.append(abs(float(approx) - float(exact)))
        report.append((mech.name, mode, max(errs)))
        assert max(errs) < tol
    with capsys.disabled():
        for name, mode, err in report:
            print(f"\n{name} {mode}: max |logp − exact| = {err:.4f} (n = 40, K = 3)")


def test_variances_by_summation():
    for sigma in (0.5, 1.0, 3.0):
        x = np.arange(-400, 401, dtype=np.float64)
        w = np.exp(-(x**2) / (2 * sigma**2))
        var = float((x**2 * w).sum() / w.sum())
        m = pmr.DiscreteGaussianMechanism(sigma)
        assert m.variance() == pytest.approx(var, rel=1e-12)
        assert m.variance() < sigma**2 or sigma >= 1.5
    for t in (0.3, 1.0, 5.0):
        x = np.arange(-3000, 3001, dtype=np.float64)
        w = np.exp(-np.abs(x) / t)
        var = float((x**2 * w).sum() / w.sum())
        assert pmr.DiscreteLaplaceMechanism(t).variance() == pytest.approx(var, rel=1e-10)


def test_joint_likelihood_accepts_discrete_releases():
    from pymc_rdp.distributions.joint_likelihood import build_joint_model

    acc = pmr.Accountant()
    mech = pmr.DiscreteGaussianMechanism(3.0, math.sqrt(2.0))
    src = UnsafeNoiseSeed(1)
    rels = {
        "a": pmr.privatize(np.array([30, 20]), mech, acc, "a", noise_source=src),
        "b": pmr.privatize(np.array([10, 20, 5, 15]), mech, acc, "b", noise_source=src),
    }
    model = build_joint_model({"a": [], "b": ["a"]}, {"a": 2, "b": 2}, rels, n=50)
    assert "joint_releases" in model.named_vars
    lap = pmr.DiscreteLaplaceMechanism(3.0, 2.0)
    rels_l = {
        "a": pmr.privatize(np.array([30, 20]), lap, acc, "la", noise_source=src),
        "b": pmr.privatize(np.array([10, 20, 5, 15]), lap, acc, "lb", noise_source=src),
    }
    model_l = build_joint_model({"a": [], "b": ["a"]}, {"a": 2, "b": 2}, rels_l, n=50)
    omega = model_l["releases_omega"]
    # the mixing variances have mean equal to the discrete Laplace's exact variance
    draws = pm.draw(omega, draws=4000, random_seed=2)
    assert draws.mean() == pytest.approx(lap.variance(), rel=0.05)


def test_release_refuses_non_integer_values_and_bad_noise_sources():
    m = pmr.DiscreteGaussianMechanism(2.0)
    with pytest.raises(ValueError, match="value must hold integers"):
        m.release([1.5, 2.0])
    with pytest.raises(ValueError, match="value contains NaN"):
        m.release([np.nan])
    with pytest.raises(TypeError, match="value must be an array of integers"):
        m.release(["a"])
    with pytest.raises(TypeError, match="noise_source"):
        m.release([1, 2], noise_source=3)
    out = m.release(np.array([1, 2], dtype=np.int32))
    assert out.dtype == np.int64
    assert rdp.discrete_gaussian([2.0], 2.0)[0] == pytest.approx(0.25)
