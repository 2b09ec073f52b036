"""The exact likelihood of randomised records for NUTS: against brute force, a grid posterior,
data augmentation's posterior mean, and its size limit."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pymc as pm
import pytest
from scipy import special

import pymc_rdp as pmr
from pymc_rdp.distributions.records_model import released_table
from pymc_rdp.privacy.mechanisms.noise import UnsafeNoiseSeed

STRUCTURE = {"a": [], "b": ["a"], "c": ["a", "b"]}
STATES = {"a": [0, 1, 2], "b": [0, 1], "c": [0, 1]}


def _frame(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = (rng.random(n) < 0.3 + 0.2 * a).astype(int)
    c = (rng.random(n) < 0.2 + 0.3 * b).astype(int)
    return pd.DataFrame({"a": a, "b": b, "c": c})


def _fit(df: pd.DataFrame, epsilon: float = 6.0, structure=STRUCTURE, states=STATES):
    bn = pmr.BayesianNetwork(structure, states=states)
    return bn.fit(
        df,
        mechanism="randomized_response",
        epsilon=epsilon,
        delta=1e-6,
        public_total=len(df),
        noise_source=UnsafeNoiseSeed(5),
    )


def test_the_likelihood_is_the_released_rows_summed_over_every_true_record():
    bn = _fit(_frame(40))
    model = bn.model
    rng = np.random.default_rng(1)
    theta = {
        v: rng.dirichlet(np.ones(bn.cards[v]), len(bn.parent_configurations(v))) for v in STATES
    }
    point = {}
    for v in STATES:
        rv = model[f"{v}_cpt"]
        value = model.rvs_to_values[rv]
        transform = model.rvs_to_transforms[rv]
        point[value.name] = transform.forward(theta[v].reshape(-1)).eval()
    obs = model["released_records"]
    ours = float(model.compile_logp(vars=[obs], jacobian=False)(point))
    # brute force: the probability of every released row, summed over the 12 true states
    mats = {v: bn.releases[v].mechanism.matrix() for v in STATES}
    lam = np.zeros((3, 2, 2))
    for y in itertools.product(range(3), range(2), range(2)):
        for x in itertools.product(range(3), range(2), range(2)):
            px = theta["a"][0, x[0]] * theta["b"][x[0], x[1]] * theta["c"][x[0] * 2 + x[1], x[2]]
            lam[y] += px * mats["a"][x[0], y[0]] * mats["b"][x[1], y[1]] * mats["c"][x[2], y[2]]
    assert lam.sum() == pytest.approx(1.0, abs=1e-14)
    rows = {v: np.asarray(bn.releases[v].values, dtype=int) for v in STATES}
    table = released_table(rows, list(STATES), [3, 2, 2])
    assert table.sum() == 40 and table[rows["a"][0], rows["b"][0], rows["c"][0]] >= 1
    # the same multinomial (PyMC's own coefficient) at the brute-force probabilities
    dist = pm.Multinomial.dist(n=40, p=lam.reshape(-1))
    expected = float(pm.logp(dist, table.reshape(-1)).eval())
    assert ours == pytest.approx(expected, rel=1e-12)
    by_record = sum(math.log(lam[y]) for y in zip(rows["a"], rows["b"], rows["c"], strict=True))
    coef = special.gammaln(41) - special.gammaln(table + 1).sum()
    assert ours == pytest.approx(by_record + coef, rel=1e-7)  # pytensor's log-gamma: ~1e-8


def test_nuts_matches_a_grid_posterior_for_one_binary_node():
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"s": (rng.random(300) < 0.3).astype(int)})
    bn = _fit(df, epsilon=1.5, structure={"s": []}, states={"s": [0, 1]})
    mech = bn.releases["s"].mechanism
    ones = int(np.sum(bn.releases["s"].values))
    grid = np.linspace(1e-6, 1 - 1e-6, 20_001)
    lam = mech.q + (mech.p - mech.q) * grid  # P(released 1) when P(true 1) = grid
    logpost = ones * np.log(lam) + (300 - ones) * np.log1p(-lam)  # the Dirichlet(1) prior is flat
    w = np.exp(logpost - logpost.max())
    w /= w.sum()
    mean = float((w * grid).sum())
    sd = float(np.sqrt((w * (grid - mean) ** 2).sum()))
    idata = bn.sample(draws=1000, tune=500, chains=2, random_seed=4, sampler="nuts")
    draws = idata["posterior"]["s_cpt"].values[..., 1].reshape(-1)
    assert draws.mean() == pytest.approx(mean, abs=4 * sd / math.sqrt(500))
    assert draws.std() == pytest.approx(sd, rel=0.12)


def test_data_augmentation_and_nuts_agree_and_cpts_become_the_posterior_mean():
    bn = _fit(_frame(600, seed=2))
    moments = bn.cpts
    a = bn.sample(draws=600, tune=300, chains=2, random_seed=1, sampler="nuts")
    from_nuts = {v: bn.cpt_draws(a, v) for v in STATES}
    np.testing.assert_allclose(bn.cpts["c"], from_nuts["c"].mean(axis=0), atol=1e-12)
    b = bn.sample(draws=3000, tune=300, chains=2, random_seed=1, sampler="augmentation")
    for v in STATES:
        da = bn.cpt_draws(b, v)
        # both samplers' means within a few Monte-Carlo errors (DA's autocorrelated: 10x)
        se = np.sqrt(from_nuts[v].var(axis=0) / 400 + da.var(axis=0) / 300)
        assert np.all(np.abs(from_nuts[v].mean(axis=0) - da.mean(axis=0)) < 4 * se + 1e-3), v
        np.testing.assert_allclose(bn.cpts[v], da.mean(axis=0), atol=1e-12)
    assert any(not np.allclose(moments[v], bn.cpts[v]) for v in STATES)


def test_too_many_joint_states_leave_only_data_augmentation():
    nodes = [f"x{i}" for i in range(7)]  # 8^7 = 2,097,152 joint states
    rng = np.random.default_rng(0)
    df = pd.DataFrame({v: rng.integers(0, 8, 30) for v in nodes})
    bn = _fit(
        df,
        epsilon=60.0,
        structure={v: [] for v in nodes},
        states={v: list(range(8)) for v in nodes},
    )
    with pytest.raises(ValueError, match="2,097,152"):
        bn.sample(draws=10, tune=10, chains=1, sampler="nuts")
    noisy = _fit(df, epsilon=1.0, structure={v: [] for v in nodes}, states=bn.states)
    with pytest.warns(UserWarning, match="release family tables instead") as rec:
        noisy.sample(draws=5, tune=5, chains=1, random_seed=1)  # data augmentation by default
    assert "sampler='nuts'" not in str(rec[0].message)
