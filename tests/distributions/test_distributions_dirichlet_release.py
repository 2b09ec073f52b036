"""DirichletRelease and release_dirichlet(): exact draws, k × curve, parallel rows, refusals."""

from __future__ import annotations

import json
import math

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import stats

import pymc_rdp.distributions as D
from pymc_rdp.privacy.accountant import Accountant, BudgetExceededError
from pymc_rdp.privacy.mechanisms import DirichletMechanism, LaplaceMechanism, UnsafeNoiseSeed

SQRT2 = math.sqrt(2.0)
MECH = DirichletMechanism(r=0.8, alpha=30.0, l2_sensitivity=SQRT2, linf_sensitivity=1.0)
ROW = np.array([4, 9, 2])
CPT = np.array([[3, 4], [0, 10], [5, 5]])


def _model():
    with pm.Model(coords={"parent": ["a", "b", "c"], "state": ["x", "y"]}) as model:
        D.DirichletRelease("row", ROW, MECH, tag="row-release")
        D.DirichletRelease("cpt", CPT, MECH, dims=("parent", "state"))
    return model


def test_logp_is_the_dirichlet_density():
    rv = D.DirichletRelease.dist(ROW, mechanism=MECH)
    x = np.array([0.2, 0.5, 0.3])
    got = pm.logp(rv, pt.constant(x)).eval()
    expected = stats.dirichlet.logpdf(x, 0.8 * ROW + 30.0)
    np.testing.assert_allclose(got, expected, rtol=1e-10)


def test_k_draws_cost_k_times_the_curve_and_a_cpt_is_one_table_entry():
    model = _model()
    acc = Accountant()
    k = 7
    tree = D.release_dirichlet(model, draws=k, accountant=acc, noise_source=UnsafeNoiseSeed(1))
    curve = MECH.rdp(acc.orders)
    # one row: k·ε; a CPT of 3 rows with one shared setting and shared α: a move within a row
    # and a move across rows both cost A(α + s) + B(α) (Theorem 1 here): k·ε; total 2k·ε
    np.testing.assert_allclose(acc.rdp(), 2 * k * curve, rtol=1e-12)
    tags = [e.tag for e in acc.ledger]
    assert tags == ["row-release", "cpt"]
    assert all(e.count == k for e in acc.ledger)
    assert [e.mechanism for e in acc.ledger] == ["dirichlet", "dirichlet_table"]
    assert acc.ledger[1].params["rows"] == 3 and acc.ledger[1].group is None
    assert tree.attrs[D.ACCOUNTANT_ATTR] == acc.to_json()
    assert {e["name"] for e in json.loads(tree.attrs[D.LEDGER_ATTR])} == {"row", "cpt"}


def test_draws_are_exact_on_the_simplex_with_coords():
    model = _model()
    tree = D.release_dirichlet(
        model, draws=4000, accountant=Accountant(), noise_source=UnsafeNoiseSeed(2)
    )
    post = tree.posterior
    assert post["row"].shape == (1, 4000, 3)
    assert post["cpt"].dims == ("chain", "draw", "parent", "state")
    assert list(post["parent"].values) == ["a", "b", "c"]
    np.testing.assert_allclose(post["cpt"].sum("state"), 1.0, rtol=1e-12)
    # the draws follow Dirichlet(r·counts + α): mean and a KS test of a marginal (Beta)
    conc = 0.8 * ROW + 30.0
    np.testing.assert_allclose(post["row"].mean(("chain", "draw")), conc / conc.sum(), atol=4e-3)
    marg = stats.beta(conc[0], conc.sum() - conc[0])
    assert stats.kstest(post["row"].values[0, :, 0], marg.cdf).pvalue > 1e-3


def test_same_seed_same_draws():
    a = D.release_dirichlet(
        _model(), draws=3, accountant=Accountant(), noise_source=UnsafeNoiseSeed(5)
    )
    b = D.release_dirichlet(
        _model(), draws=3, accountant=Accountant(), noise_source=UnsafeNoiseSeed(5)
    )
    np.testing.assert_array_equal(a.posterior["cpt"].values, b.posterior["cpt"].values)


def test_over_budget_refused_before_drawing_and_ledger_unchanged():
    model = _model()
    eps_one = float(MECH.rdp(np.array([5.0]))[0])
    acc = Accountant.at_order(10 * eps_one, 5.0)
    D.release_dirichlet(
        model, draws=2, accountant=acc, noise_source=UnsafeNoiseSeed(0)
    )  # costs 4 ε
    before = acc.to_json()
    with pytest.raises(BudgetExceededError, match="nothing was drawn"):
        D.release_dirichlet(
            model, draws=4, accountant=acc, noise_source=UnsafeNoiseSeed(0)
        )  # would cost 8 ε more
    assert acc.to_json() == before
    # a release of only one node fits
    D.release_dirichlet(
        model, draws=3, accountant=acc, var_names=["row"], noise_source=UnsafeNoiseSeed(0)
    )
    np.testing.assert_allclose(acc.rdp(np.array([5.0])), 7 * eps_one, rtol=1e-12)


def test_one_setting_per_row():
    mech = DirichletMechanism(
        r=np.array([0.5, 1.0, 2.0]), alpha=30.0, l2_sensitivity=SQRT2, linf_sensitivity=1.0
    )
    with pm.Model() as model:
        D.DirichletRelease("cpt", CPT, mech)
    acc = Accountant()
    D.release_dirichlet(model, draws=2, accountant=acc, noise_source=UnsafeNoiseSeed(0))
    rows = np.stack([DirichletMechanism(r, 30.0, SQRT2, 1.0).rdp(acc.orders) for r in (0.5, 1, 2)])
    np.testing.assert_allclose(acc.rdp(), 2 * rows.max(axis=0), rtol=1e-12)
    assert len(acc.ledger) == 1 and acc.ledger[0].params["r"] == [0.5, 1.0, 2.0]


def test_bad_input():
    with pytest.raises(ValueError, match="counts must be non-negative counts"):
        D.DirichletRelease.dist(np.array([1, -1]), mechanism=MECH)
    with pytest.raises(ValueError, match="counts contains NaN"):
        D.DirichletRelease.dist(np.array([1.0, np.nan]), mechanism=MECH)
    with pytest.raises(TypeError, match="mechanism must be a DirichletMechanism"):
        D.DirichletRelease.dist(ROW, mechanism=LaplaceMechanism(1.0, 2.0))
    with pytest.raises(ValueError, match="l2_sensitivity = 1 is below"):
        D.DirichletRelease.dist(ROW, mechanism=DirichletMechanism(0.8, 30.0, 1.0, 1.0))
    D.DirichletRelease.dist(
        ROW, mechanism=DirichletMechanism(0.8, 30.0, 1.0, 1.0), neighbours="add-remove"
    )
    with pytest.raises(ValueError, match="one setting per row"):
        D.DirichletRelease.dist(
            CPT, mechanism=DirichletMechanism(np.array([1.0, 2.0]), 30.0, SQRT2, 1.0)
        )
    with pm.Model():
        with pytest.raises(ValueError, match="cannot be observed"):
            D.DirichletRelease("t", ROW, MECH, observed=np.array([0.2, 0.3, 0.5]))
    with pytest.raises(ValueError, match="no DirichletRelease"):
        D.release_dirichlet(pm.Model(), draws=1, accountant=Accountant())
    with pytest.raises(ValueError, match="draws must be >= 1"):
        D.release_dirichlet(_model(), draws=0, accountant=Accountant())
    with pytest.raises(TypeError, match="accountant must be an Accountant"):
        D.release_dirichlet(_model(), draws=1, accountant=None)
    with pytest.raises(ValueError, match="var_names not DirichletRelease"):
        D.release_dirichlet(_model(), draws=1, accountant=Accountant(), var_names=["nope"])


# ------------------------------------------------------------- draws and seeds


def _forward_draws(model: pm.Model) -> list:
    """Every way PyMC offers to draw the node forward (each must be refused)."""
    row = model["row"]
    return [
        lambda: pm.draw(row),
        lambda: pm.draw(model["cpt"], draws=3),
        lambda: pm.sample_prior_predictive(draws=5, model=model),
        lambda: pm.sample_prior_predictive(draws=5, model=model, var_names=["row"]),
    ]


def test_forward_draws_of_a_release_are_refused_and_charge_nothing():
    """Uncharged forward draws: pm.draw / prior predictive on a DirichletRelease would return exact
    mechanism draws from the raw counts, uncharged. They are refused; the ledger is unchanged."""
    model = _model()
    acc = Accountant()
    D.release_dirichlet(model, draws=1, accountant=acc)
    before, nodes_before = acc.to_json(), D.ledger(model)
    for draw in _forward_draws(model):
        with pytest.raises(D.RefusedDrawError, match=r"only pymc_rdp\.release"):
            draw()
    assert acc.to_json() == before and D.ledger(model) == nodes_before
    # a posterior predictive that must draw the node afresh (it is not in the trace) is refused
    tree = D.release_dirichlet(model, draws=2, accountant=acc, var_names=["cpt"])
    charged = acc.to_json()
    with model, pytest.raises(D.RefusedDrawError):
        pm.sample_posterior_predictive(tree, var_names=["row"], progressbar=False)
    assert acc.to_json() == charged
    # one that reads released draws from the trace is post-processing
    tree = D.release_dirichlet(model, draws=2, accountant=acc, var_names=["row"])
    with model:
        pp = pm.sample_posterior_predictive(tree, var_names=["row"], progressbar=False)
    np.testing.assert_array_equal(pp.posterior_predictive["row"].values, tree.posterior["row"])
    # the logp (what an analyst evaluates) and the support point still work
    x = np.array([0.2, 0.5, 0.3])
    expected = stats.dirichlet.logpdf(x, 0.8 * ROW + 30.0)
    np.testing.assert_allclose(pm.logp(model["row"], x).eval(), expected, rtol=1e-10)
    assert np.isfinite(model.compile_logp()(model.initial_point()))


def test_forward_draws_from_released_values_are_post_processing():
    """Drawing from a node whose parameters are the released values is allowed (it never sees
    the raw counts): a Dirichlet built on a released row, and NoisyCounts on released values."""
    acc = Accountant()
    tree = D.release_dirichlet(_model(), draws=1, accountant=acc)
    released = tree.posterior["row"].values[0, 0]
    before = acc.to_json()
    with pm.Model():
        theta = pm.Dirichlet("theta", 100.0 * released)
        y = D.NoisyCounts("y", 20, theta, mechanism=LaplaceMechanism(2.0, 2.0))
        assert pm.draw(y, draws=4).shape == (4, 3)
        assert pm.draw(theta).shape == (3,)
    assert acc.to_json() == before


def _old_release(counts: np.ndarray, seed: int) -> np.ndarray:
    """The pre-fix release with ``random_seed=seed``: Gamma variates from numpy's default_rng."""
    gen = np.random.default_rng(seed)
    g = gen.standard_gamma(MECH.concentration(counts))
    return g / g.sum(axis=-1, keepdims=True)


def test_known_seed_no_longer_distinguishes_neighbours():
    """Seeded noise: with a known seed, a Dirichlet release was a perfect distinguisher
    (replay the seed on each candidate dataset; exactly one matches). Now a seed is refused and
    the default draw (OS entropy) matches no seed on either neighbour."""
    neighbour = ROW + np.array([-1, 1, 0])  # one record moved from state 0 to state 1
    with pm.Model() as model:
        D.DirichletRelease("row", ROW, MECH)
    acc = Accountant()
    try:
        tree = D.release_dirichlet(model, draws=1, accountant=acc, random_seed=3)  # the old call
    except TypeError as exc:
        assert "noise_source" in str(exc)
        tree = D.release_dirichlet(model, draws=1, accountant=acc)
    out = tree.posterior["row"].values[0, 0]
    for seed in range(256):
        for counts in (ROW, neighbour):
            assert not np.allclose(out, _old_release(counts, seed), rtol=1e-9, atol=0)
    with pytest.raises(TypeError, match="noise_source must be None"):
        D.release_dirichlet(model, draws=1, accountant=acc, noise_source=3)
    with pytest.raises(TypeError, match="noise_source must be None"):
        D.release_dirichlet(model, draws=1, accountant=acc, noise_source=np.random.default_rng(3))


def test_unsafe_seed_distinguishes_and_is_declared_outside_the_guarantee():
    """Control: with UnsafeNoiseSeed the replay does tell the neighbours apart, which is why the
    ledger marks such a release as not private."""
    neighbour = ROW + np.array([-1, 1, 0])
    with pm.Model() as model:
        D.DirichletRelease("row", ROW, MECH, tag="t")
    acc = Accountant()
    out = D.release_dirichlet(model, accountant=acc, noise_source=UnsafeNoiseSeed(3)).posterior[
        "row"
    ]
    out = out.values[0, 0]
    np.testing.assert_array_equal(out, MECH.release(ROW, UnsafeNoiseSeed(3)))
    assert not np.allclose(out, MECH.release(neighbour, UnsafeNoiseSeed(3)))
    assert not acc.within_guarantee
    (decl,) = acc.declarations
    assert decl["kind"] == "unsafe_noise" and decl["outside_guarantee"] is True
    assert "'t'" in decl["detail"] and "NOT PRIVATE" in acc.report()
