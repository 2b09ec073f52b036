"""Private quantiles (Smith 2011 exponential mechanism): law, privacy, charge, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import pymc_rdp as pmr
from pymc_rdp.curation.quantiles import private_bins, private_quantiles
from pymc_rdp.privacy import rdp
from pymc_rdp.privacy.mechanisms import ExponentialQuantile, mechanism_from_dict


def _exact_interval_probabilities(x, q, eps, lower, upper) -> tuple[np.ndarray, np.ndarray]:
    """Written out from the definition, independently of the module."""
    z = [lower, *sorted(min(max(v, lower), upper) for v in x), upper]
    n = len(x)
    w = [(z[i + 1] - z[i]) * math.exp(-eps * abs(i - q * n) / 2) for i in range(n + 1)]
    total = sum(w)
    return np.asarray(z), np.asarray([v / total for v in w])


def test_interval_probabilities_match_the_definition() -> None:
    x = [3.0, -1.0, 7.5, 2.0, 12.0]  # 12 is clipped to 10
    m = ExponentialQuantile(0.8, 0.5, 0.0, 10.0)
    z, logp = m.intervals(x)
    z_ref, p_ref = _exact_interval_probabilities(x, 0.5, 0.8, 0.0, 10.0)
    np.testing.assert_allclose(z, z_ref)
    np.testing.assert_allclose(np.exp(logp), p_ref, rtol=1e-13, atol=1e-300)
    assert np.exp(logp)[0] == 0.0  # [0, 0] (the clipped -1) is empty


def test_release_distribution_against_exact_probabilities() -> None:
    x = [1.0, 2.0, 2.5, 6.0, 8.0, 8.5]
    m = ExponentialQuantile(1.0, 0.5, 0.0, 10.0)
    z, logp = m.intervals(x)
    p = np.exp(logp)
    source = pmr.UnsafeNoiseSeed(12345)
    draws = np.array([m.release(x, noise_source=source) for _ in range(15_000)])
    assert draws.min() >= 0.0 and draws.max() <= 10.0
    idx = np.clip(np.searchsorted(z, draws, side="right") - 1, 0, len(p) - 1)
    observed = np.bincount(idx, minlength=len(p))
    chi = stats.chisquare(observed, 15_000 * p)
    assert chi.pvalue > 1e-3
    # uniform within an interval: the relative position in the most likely one
    k = int(np.argmax(p))
    rel = (draws[idx == k] - z[k]) / (z[k + 1] - z[k])
    assert stats.kstest(rel, "uniform").pvalue > 1e-3


def test_release_draws_from_the_noise_source() -> None:
    x = np.arange(50.0)
    m = ExponentialQuantile(1.0, 0.3, 0.0, 60.0)
    a = [m.release(x, noise_source=pmr.UnsafeNoiseSeed(3)) for _ in range(3)]
    b = [m.release(x, noise_source=pmr.UnsafeNoiseSeed(3)) for _ in range(3)]
    assert a == b
    c = {m.release(x) for _ in range(20)}  # OS entropy: not a constant
    assert len(c) > 1
    with pytest.raises(TypeError, match="noise_source"):
        m.release(x, noise_source=1)


def _neighbours(rng: np.random.Generator, n: int, relation: str) -> tuple[np.ndarray, np.ndarray]:
    x = rng.integers(-2, 12, size=n).astype(float) + rng.choice([0.0, 0.5], size=n)
    if relation == "replace-one":
        y = x.copy()
        y[rng.integers(n)] = float(rng.integers(-2, 12))
    else:
        y = np.append(x, float(rng.integers(-2, 12)))
    return x, y


@pytest.mark.parametrize("relation", ["replace-one", "add-remove"])
def test_density_ratio_on_neighbours_is_at_most_exp_epsilon(relation: str) -> None:
    """The score has sensitivity 1, so the output densities differ by at most e^ε anywhere."""
    rng = np.random.default_rng(5)
    worst = 0.0
    for _ in range(2000):
        n = int(rng.integers(1, 9))
        x, y = _neighbours(rng, n, relation)
        q = float(rng.choice([0.0, 0.1, 0.25, 0.5, 0.9, 1.0, rng.random()]))
        eps = float(rng.choice([0.1, 1.0, 3.0]))
        m = ExponentialQuantile(eps, q, 0.0, 10.0)
        # the densities are piecewise constant between the values: test every piece's midpoint
        cuts = np.unique(np.clip(np.concatenate([[0.0, 10.0], x, y]), 0.0, 10.0))
        mid = (cuts[:-1] + cuts[1:]) / 2
        # sensitivity of the score
        for a, b in ((x, y), (y, x)):
            ra = np.searchsorted(np.sort(np.clip(a, 0, 10)), mid, side="left")
            rb = np.searchsorted(np.sort(np.clip(b, 0, 10)), mid, side="left")
            ua = -np.abs(ra - q * a.size)
            ub = -np.abs(rb - q * b.size)
            assert np.max(np.abs(ua - ub)) <= 1.0 + 1e-12
        log_ratio = np.abs(m.log_density(x, mid) - m.log_density(y, mid))
        worst = max(worst, float(np.max(log_ratio)) / eps)
        assert np.all(log_ratio <= eps * (1 + 1e-12))
    assert 0.5 < worst <= 1.0 + 1e-12  # the bound is approached, never exceeded


def test_density_integrates_to_one_and_matches_intervals() -> None:
    x = [1.0, 4.0, 4.0, 9.0]
    m = ExponentialQuantile(2.0, 0.25, 0.0, 10.0)
    z, logp = m.intervals(x)
    mids = (z[:-1] + z[1:]) / 2
    dens = np.exp(m.log_density(x, mids))
    np.testing.assert_allclose(dens * np.diff(z), np.exp(logp), rtol=1e-12)


def test_rdp_curve_is_pure_dp_and_round_trips() -> None:
    m = ExponentialQuantile(0.5, 0.5, 0.0, 1.0)
    orders = rdp.DEFAULT_ORDERS
    np.testing.assert_allclose(m.rdp(orders), np.minimum(0.5, orders * 0.25 / 2))
    assert m.rdp([np.inf])[0] == 0.5
    assert mechanism_from_dict(m.to_dict()) == m
    cal = ExponentialQuantile.calibrate(0.1, 0.5, 0.0, 1.0, order=5.0)
    assert float(cal.rdp([5.0])[0]) == pytest.approx(0.1, rel=1e-9)
    assert float(cal.rdp([5.0])[0]) <= 0.1


def test_private_quantiles_charges_every_quantile() -> None:
    acc = pmr.Accountant(budget=(2.0, 1e-6))
    x = np.random.default_rng(0).normal(50, 10, 500)
    out = private_quantiles(
        x,
        [0.25, 0.5, 0.75],
        0.0,
        100.0,
        epsilon=0.9,
        accountant=acc,
        noise_source=pmr.UnsafeNoiseSeed(1),
    )
    assert out.shape == (3,)
    assert len(acc.ledger) == 3
    assert [e.tag for e in acc.ledger] == [
        "quantiles/q=0.25",
        "quantiles/q=0.5",
        "quantiles/q=0.75",
    ]
    np.testing.assert_allclose(acc.rdp(), 3 * rdp.pure_dp(acc.orders, 0.3), rtol=1e-12)
    assert acc.rdp([np.inf])[0] == pytest.approx(0.9)
    # accurate on a large sample (ε = 0.3 each): within a few units of the true quartiles
    np.testing.assert_allclose(out, np.quantile(x, [0.25, 0.5, 0.75]), atol=3.0)


def test_private_quantiles_refused_when_over_budget() -> None:
    acc = pmr.Accountant.at_order(0.1, 5.0)
    before = acc.to_json()
    with pytest.raises(pmr.BudgetExceededError):
        private_quantiles([1.0, 2.0], [0.5], 0.0, 3.0, epsilon=5.0, accountant=acc)
    assert acc.to_json() == before


def test_private_bins_gives_schema_cuts() -> None:
    from pymc_rdp.curation import domains

    acc = pmr.Accountant()
    x = np.random.default_rng(2).uniform(0, 100, 2000)
    cuts = private_bins(x, 4, 0.0, 100.0, epsilon=1.0, accountant=acc, granularity=1.0)
    assert len(acc.ledger) == 3
    assert cuts == sorted(set(cuts)) and all(float(c).is_integer() for c in cuts)
    np.testing.assert_allclose(cuts, [25, 50, 75], atol=5)
    schema = domains.parse_schema({"v": {"cuts": cuts}})
    assert len(schema["v"]["states"]) == len(cuts) + 1


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.floats(-5, 15, allow_nan=False), min_size=0, max_size=12),
    st.floats(0, 1),
    st.floats(0.01, 5),
)
def test_probabilities_are_a_distribution(x, q, eps) -> None:
    m = ExponentialQuantile(eps, q, 0.0, 10.0)
    z, logp = m.intervals(x)
    p = np.exp(logp)
    assert p.sum() == pytest.approx(1.0, rel=1e-12)
    assert np.all(p[np.diff(z) == 0] == 0)
    y = m.release(x, noise_source=pmr.UnsafeNoiseSeed(0))
    assert 0.0 <= y <= 10.0


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"epsilon": 0.0}, ValueError, "epsilon must be > 0"),
        ({"quantiles": [1.5]}, ValueError, "quantiles must lie in"),
        ({"quantiles": []}, ValueError, "quantiles must be a non-empty"),
        ({"lower": 5.0, "upper": 1.0}, ValueError, "lower must be < upper"),
        ({"upper": np.inf}, ValueError, "upper"),
        ({"values": [1.0, np.nan]}, ValueError, "values has missing values"),
        ({"values": [[1.0]]}, ValueError, "values must be 1-D"),
        ({"values": "abc"}, TypeError, "values must be a 1-D array"),
        ({"accountant": None}, TypeError, "accountant must be an Accountant"),
    ],
)
def test_bad_input(kwargs, error, match) -> None:
    args = {
        "values": [1.0, 2.0],
        "quantiles": [0.5],
        "lower": 0.0,
        "upper": 3.0,
        "epsilon": 1.0,
        "accountant": pmr.Accountant(),
    }
    args.update(kwargs)
    values, quantiles, lower, upper = (
        args.pop(k) for k in ("values", "quantiles", "lower", "upper")
    )
    with pytest.raises(error, match=match):
        private_quantiles(values, quantiles, lower, upper, **args)


def test_private_bins_bad_n_bins() -> None:
    with pytest.raises(ValueError, match="n_bins must be an integer >= 2"):
        private_bins([1.0], 1, 0.0, 2.0, epsilon=1.0, accountant=pmr.Accountant())
