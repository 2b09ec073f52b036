"""Synthetic datasets from the private posterior, and Rubin's rules for synthetic data."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import pymc_rdp as pmr
from pymc_rdp.models.synthesis import rubins_rules
from pymc_rdp.privacy.mechanisms import UnsafeNoiseSeed

STRUCTURE = {"a": [], "b": ["a"]}
STATES = {"a": ["lo", "hi"], "b": ["x", "y", "never"]}  # "never" is not in the data


def _frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.random(n) < 0.3
    b = np.where(rng.random(n) < np.where(a, 0.8, 0.2), "y", "x")
    return pd.DataFrame({"a": np.where(a, "hi", "lo"), "b": b})


@pytest.fixture(scope="module")
def fitted():
    bn = pmr.BayesianNetwork(STRUCTURE, states=STATES)
    bn.fit(
        _frame(400, 0),
        mechanism="gaussian",
        epsilon=2.0,
        delta=1e-6,
        public_total=400,
        noise_source=UnsafeNoiseSeed(3),
    )
    bn.sample(draws=300, tune=100, chains=2, random_seed=1)
    return bn


def test_datasets_have_the_declared_states_and_cost_nothing(fitted):
    bn = fitted
    ledger, spent = bn.accountant.to_json(), bn.accountant.rdp().copy()
    sets = bn.synthesize(5, random_state=0)
    assert len(sets) == 5
    for frame in sets:
        assert list(frame.columns) == ["a", "b"] and len(frame) == 400
        for v in bn.nodes:
            assert isinstance(frame[v].dtype, pd.CategoricalDtype)
            assert list(frame[v].cat.categories) == STATES[v]  # declared order, unseen kept
    # post-processing: the ledger is unchanged
    assert bn.accountant.to_json() == ledger
    np.testing.assert_array_equal(bn.accountant.rdp(), spent)
    # one posterior draw per dataset: the datasets differ
    shares = [float((f["a"] == "hi").mean()) for f in sets]
    assert len(set(shares)) > 1
    assert sets[0].equals(bn.synthesize(5, random_state=0)[0])  # the seed steers the sampling


def test_each_dataset_follows_its_own_posterior_draw(fitted):
    """Dataset i of n records is Multinomial(n, θ^(d_i)) for a root: the share of a = hi is
    within binomial error of the draw's θ, for the evenly spaced draws d_i."""
    bn = fitted
    n = 20_000
    sets = bn.synthesize(3, n=n, random_state=1)
    theta = bn.cpt_draws(bn.idata, "a")[:, 0, 1]
    picks = np.linspace(0, theta.size - 1, 3).round().astype(int)
    for frame, d in zip(sets, picks, strict=True):
        share = float((frame["a"] == "hi").mean())
        assert abs(share - theta[d]) < 4.5 * np.sqrt(theta[d] * (1 - theta[d]) / n)


def test_unknown_n_gives_each_dataset_its_draws_n():
    bn = pmr.BayesianNetwork(STRUCTURE, states=STATES)
    bn.fit(
        _frame(300, 1),
        mechanism="gaussian",
        epsilon=2.0,
        delta=1e-6,
        neighbours="add-remove",
        noise_source=UnsafeNoiseSeed(5),
    )
    idata = bn.sample(draws=50, tune=50, chains=2, random_seed=2)
    n = idata["posterior"]["n_records"].to_numpy().reshape(-1)
    sets = bn.synthesize(4)
    picks = np.linspace(0, n.size - 1, 4).round().astype(int)
    assert [len(f) for f in sets] == [int(n[d]) for d in picks]
    assert [len(f) for f in bn.synthesize(2, n=7)] == [7, 7]


def test_bad_synthesize_arguments(fitted):
    with pytest.raises(ValueError, match="m must be an integer >= 1"):
        fitted.synthesize(0)
    with pytest.raises(ValueError, match="posterior has 600"):
        fitted.synthesize(601)
    with pytest.raises(ValueError, match="n must be an integer"):
        fitted.synthesize(2, n=-1)
    fresh = pmr.BayesianNetwork(STRUCTURE, states=STATES).fit(_frame(50, 2), mechanism="none")
    with pytest.raises(RuntimeError, match=r"call bn.sample\(\) first"):
        fresh.synthesize(2)


# --------------------------------------------------------------------------- Rubin's rules


def test_rubins_rules_by_hand():
    r = rubins_rules([1.0, 2.0, 3.0, 4.0], [0.5, 0.5, 0.5, 0.5])
    # q̄ = 2.5; b = 5/3; ū = 0.5; T = (1 + 1/4)·5/3 − 0.5 = 19/12; ν = 3 (1 − 4·0.5/(5·5/3))²
    assert r.estimate == pytest.approx(2.5)
    assert r.between == pytest.approx(5 / 3)
    assert r.within == pytest.approx(0.5)
    assert r.variance == pytest.approx(19 / 12)
    assert r.df == pytest.approx(3 * (1 - 0.24) ** 2)
    lo, hi = r.interval(0.9)
    half = stats.t.ppf(0.95, 3 * 0.76**2) * np.sqrt(19 / 12)
    assert (lo, hi) == (pytest.approx(2.5 - half), pytest.approx(2.5 + half))
    # vector estimates combine entry by entry
    v = rubins_rules([[1.0, 0.0], [2.0, 0.0], [3.0, 1.0], [4.0, 1.0]], np.full((4, 2), 0.5))
    assert v.estimate[0] == pytest.approx(2.5) and v.variance[0] == pytest.approx(19 / 12)


def test_rubins_rules_refuse_a_negative_variance_and_bad_input():
    r = rubins_rules([1.0, 1.01, 0.99], [1.0, 1.0, 1.0])  # b tiny: T < 0
    assert r.variance < 0
    with pytest.raises(ValueError, match="use more datasets"):
        r.interval()
    with pytest.raises(ValueError, match="m >= 2"):
        rubins_rules([1.0], [1.0])
    with pytest.raises(ValueError, match="must agree"):
        rubins_rules([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match=">= 0"):
        rubins_rules([1.0, 2.0], [1.0, -1.0])
    with pytest.raises(ValueError, match="level"):
        rubins_rules([1.0, 2.0], [0.1, 0.1]).interval(1.5)


def test_rubins_rules_cover_a_known_truth():
    """Simulation: records x ~ Bernoulli(p), posterior Beta(1 + k, 1 + n − k); m synthetic
    datasets of n records, each from its own posterior draw; the estimate is the mean with
    variance p̂(1 − p̂)/n. The 90% intervals cover p at the nominal rate (3 binomial sds).
    (With m = 30, T = (1 + 1/m) b − ū was negative in about 1% of replicates here.)"""
    rng = np.random.default_rng(11)
    p, n, m, reps = 0.3, 400, 100, 1500
    k = rng.binomial(n, p, size=reps)
    theta = rng.beta(1 + k[:, None], 1 + n - k[:, None], size=(reps, m))
    q = rng.binomial(n, theta) / n
    u = q * (1 - q) / n
    hits = 0
    for r in range(reps):
        result = rubins_rules(q[r], u[r])
        if result.variance > 0:  # T <= 0 (no interval) counts as a miss
            lo, hi = result.interval(0.9)
            hits += bool(lo <= p <= hi)
    cover = hits / reps
    assert abs(cover - 0.9) < 3 * np.sqrt(0.9 * 0.1 / reps), cover
    # treating the synthetic data as real (the naive variance ū/m of the pooled mean) does not
    naive = np.mean(np.abs(q.mean(axis=1) - p) <= 1.645 * np.sqrt(u.mean(axis=1) / m))
    assert naive < 0.6


def test_rubins_rules_import_no_pymc():
    code = (
        "import sys, pymc_rdp as pmr\n"
        "r = pmr.rubins_rules([1.0, 2.0, 4.0], [0.1, 0.1, 0.1])\n"
        "print(sorted(m for m in ('pymc', 'pytensor', 'arviz') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
