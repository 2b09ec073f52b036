"""NoisyCounts: logp against brute force, posterior against the exact grid, predictive, errors."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import stats
from scipy.special import logsumexp

import pymc_rdp.distributions as D
from pymc_rdp.privacy.accountant import Accountant
from pymc_rdp.privacy.mechanisms import (
    DirichletMechanism,
    DiscreteLaplaceMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    RandomizedResponse,
)

LAP = LaplaceMechanism(scale=1.5, sensitivity=2.0)
GAU = GaussianMechanism(sigma=1.2, sensitivity=math.sqrt(2.0))
DLAP = DiscreteLaplaceMechanism(scale=1.5, sensitivity=2.0)


def _continuous_release(counts, mech, tag, rng, *, clamp=False, round=False):
    """A table released elsewhere with continuous noise (privatize refuses it for counts): the
    continuous likelihood paths stay available for such releases through Release/observed=."""
    counts = np.asarray(counts, dtype=np.float64)
    if isinstance(mech, LaplaceMechanism):
        values = counts + rng.laplace(0.0, mech.scale, counts.shape)
    else:
        values = counts + rng.normal(0.0, mech.sigma, counts.shape)
    if round:
        values = np.round(values)
    if clamp:
        values = np.maximum(values, 0.0)
    return D.Release(
        values=values + 0.0,
        mechanism=mech,
        tag=tag,
        clamped=clamp,
        rounded=round,
        total=float(counts.sum()),
    )


def brute_force_logp(y, n, p, noise, scale, clamped=False, rounded=False):
    """log Σ_s Multinomial(s; n, p) Π_k q(y_k | s_k) by enumerating every s (SciPy only)."""
    total = 0.0
    for s in itertools.product(range(n + 1), repeat=len(p)):
        if sum(s) != n:
            continue
        term = stats.multinomial.pmf(s, n, p)
        for yk, sk in zip(y, s, strict=True):
            d = stats.laplace(sk, scale) if noise == "laplace" else stats.norm(sk, scale)
            if clamped and yk <= 0:
                term *= d.cdf(0.5 if rounded else 0.0)
            elif rounded:
                term *= d.cdf(yk + 0.5) - d.cdf(yk - 0.5)
            else:
                term *= d.pdf(yk)
        total += term
    return math.log(total)


def _logp(rv, value):
    return pm.logp(rv, pt.as_tensor(np.asarray(value, dtype=np.float64))).eval(mode="FAST_COMPILE")


# ---------------------------------------------------------------------------------------------
# logp of the node (check_logp-style: a grid of parameters and values against an oracle)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mech", "clamped", "rounded"),
    [(LAP, False, False), (LAP, True, True), (GAU, False, False), (GAU, True, False)],
)
def test_exact_node_logp_equals_brute_force_k2_k3(mech, clamped, rounded):
    noise = "laplace" if isinstance(mech, LaplaceMechanism) else "gaussian"
    scale = mech.scale if noise == "laplace" else mech.sigma
    for k, n in [(2, 6), (3, 5)]:
        ps = [np.full(k, 1 / k), np.linspace(1, 2, k) / np.linspace(1, 2, k).sum()]
        ys = [np.linspace(0.0, n, k), np.r_[np.zeros(k - 1), float(n) + 1]]
        for p, y in itertools.product(ps, ys):
            rv = D.NoisyCounts.dist(
                n, p, mechanism=mech, mode="exact", clamped=clamped, rounded=rounded
            )
            expected = brute_force_logp(y, n, p, noise, scale, clamped, rounded)
            np.testing.assert_allclose(_logp(rv, y), expected, atol=1e-8)


def test_batch_rows_with_known_totals_sum_per_row():
    p = np.array([[0.2, 0.8], [0.5, 0.5], [0.7, 0.3]])
    n = np.array([3, 5, 4])
    y = np.array([[1.0, 2.5], [2.2, 2.0], [-0.5, 4.0]])
    rv = D.NoisyCounts.dist(n, p, mechanism=LAP, mode="exact")
    got = _logp(rv, y)
    assert got.shape == (3,)
    expected = [brute_force_logp(y[i], n[i], p[i], "laplace", 1.5) for i in range(3)]
    np.testing.assert_allclose(got, expected, atol=1e-8)


def test_gaussian_convolution_is_the_multinomial_clt_mvnormal():
    p = np.array([0.2, 0.3, 0.5])
    n = 50
    y = np.array([9.0, 16.0, 24.0])
    rv = D.NoisyCounts.dist(n, p, mechanism=GAU)
    cov = n * (np.diag(p) - np.outer(p, p)) + GAU.sigma**2 * np.eye(3)
    expected = stats.multivariate_normal.logpdf(y, n * p, cov)
    np.testing.assert_allclose(_logp(rv, y), expected, rtol=1e-10)
    assert rv.owner.op.likelihood == "mvnormal"


def test_unknown_total_is_poissonised_independent_cells():
    mu = pt.dscalar("mu")
    p = np.array([0.25, 0.75])
    rv = D.NoisyCounts.dist(mu, p, mechanism=GAU)
    assert rv.owner.op.poissonised
    y = np.array([3.0, 10.0])
    f = pytensor.function([mu], pm.logp(rv, pt.constant(y)), mode="FAST_COMPILE")
    expected = stats.norm.logpdf(y, 12.0 * p, np.sqrt(12.0 * p + GAU.sigma**2)).sum()
    np.testing.assert_allclose(f(12.0), expected, rtol=1e-12)


def test_auto_mode_choice():
    big = LaplaceMechanism(20.0, 2.0)
    small = LaplaceMechanism(0.5, 2.0)
    with pm.Model():
        p = pm.Dirichlet("p", np.ones(2))
        a = D.NoisyCounts("a", 40, p, mechanism=big, observed=[10.0, 30.0])
        b = D.NoisyCounts("b", 60, p, mechanism=big, observed=[20.0, 40.0], max_states=10)
        c = D.NoisyCounts("c", 50_000, p, mechanism=small, observed=[1e4, 4e4], max_states=100)
        mu = pm.Gamma("mu", 2.0, 0.1)
        d = D.NoisyCounts("d", mu, p, mechanism=small, observed=[10.0, 30.0])
        e = D.NoisyCounts("e", 40, p, mechanism=GAU, observed=[10.0, 30.0])
        model = pm.modelcontext(None)
    kinds = {rv.name: rv.owner.op.likelihood for rv in (a, b, c, d, e)}
    assert kinds == {
        "a": "exact",
        "b": "convolution",
        "c": "mvnormal",
        "d": "convolution",
        "e": "mvnormal",
    }
    # the scale mixture added its latent mixing variances
    assert "c_omega" in model.named_vars
    assert {e["name"]: e["mode"] for e in D.ledger(model)}["c"] == "mixture"


def test_mixture_mode_marginal_matches_exact_for_k2():
    """Integrating out the mixture's latent ω gives the CLT–Laplace likelihood (checked here)."""
    n, b = 40, 3.0
    p = np.array([0.3, 0.7])
    y = np.array([13.0, 26.0])
    # the mixture's likelihood given ω is MvNormal; with ω integrated it is
    # ∫ N(s; np, Σ) Π Laplace(y_k − s_k; b) ds with s = np + t·(1, −1), t ~ N(0, npq)
    sd = math.sqrt(n * p[0] * p[1])
    t = np.linspace(-12 * sd, 12 * sd, 40001)
    s0 = n * p[0] + t
    s1 = n * p[1] - t
    dens = stats.norm.pdf(t, 0, sd) * stats.laplace.pdf(y[0] - s0, scale=b)
    dens *= stats.laplace.pdf(y[1] - s1, scale=b)
    clt = np.log(np.trapezoid(dens, t))
    exact = brute_force_logp(y, n, p, "laplace", b)
    assert abs(clt - exact) < 0.05  # the CLT on counts is the mixture's only approximation


# ---------------------------------------------------------------------------------------------
# NUTS against the exact grid posterior
# ---------------------------------------------------------------------------------------------


def _grid_posterior(y, n, b, prior=(1.0, 1.0)):
    """Posterior mean and sd of θ on a fine grid: exact sum over the latent binomial count."""
    t = np.linspace(1e-4, 1 - 1e-4, 4001)[:, None]
    s = np.arange(n + 1)[None, :]
    noise = stats.laplace.logpdf(y[0] - s, scale=b) + stats.laplace.logpdf(y[1] - (n - s), scale=b)
    lp = logsumexp(stats.binom.logpmf(s, n, t) + noise, axis=1)
    t = t[:, 0]
    lp = lp + stats.beta.logpdf(t, *prior)
    w = np.exp(lp - lp.max())
    w /= np.trapezoid(w, t)
    mean = np.trapezoid(t * w, t)
    sd = math.sqrt(np.trapezoid((t - mean) ** 2 * w, t))
    return mean, sd


@pytest.mark.filterwarnings("ignore:.*(rhat|effective sample size).*:UserWarning")
def test_laplace_binomial_nuts_matches_exact_grid_posterior():
    rng = np.random.default_rng(11)
    n, eps = 60, 0.5
    mech = LaplaceMechanism(scale=2.0 / eps, sensitivity=2.0)  # pure ε-DP, Δ₁ = 2
    acc = Accountant()
    counts = rng.multinomial(n, [0.35, 0.65])
    acc.spend(mech, tag="binomial")
    rel = _continuous_release(counts, mech, "binomial", rng)
    before = acc.to_json()
    with pm.Model() as model:
        theta = pm.Beta("theta", 1.0, 1.0)
        D.NoisyCounts("y", n, pt.stack([theta, 1.0 - theta]), rel)
    idata = D.sample(
        1500,
        tune=700,
        chains=2,
        cores=1,
        model=model,
        accountant=acc,
        random_seed=5,
        progressbar=False,
        compute_convergence_checks=False,
    )
    assert acc.to_json() == before  # sampling never charges
    draws = idata.posterior["theta"].values.ravel()
    mean, sd = _grid_posterior(rel.values, n, mech.scale)
    assert abs(draws.mean() - mean) < 0.15 * sd
    assert abs(draws.std() / sd - 1) < 0.12


# ---------------------------------------------------------------------------------------------
# predictive
# ---------------------------------------------------------------------------------------------


def test_prior_and_posterior_predictive_shapes_and_censoring():
    counts = np.array([[3, 0, 7], [1, 1, 8]])
    rel = _continuous_release(counts, LAP, "cpt", np.random.default_rng(1), clamp=True, round=True)
    with pm.Model(coords={"row": ["a", "b"], "cell": ["x", "y", "z"]}) as model:
        p = pm.Dirichlet("p", np.ones(3), dims=("row", "cell"))
        D.NoisyCounts("y", np.array([10, 10]), p, rel, dims=("row", "cell"))
        prior = pm.sample_prior_predictive(50, random_seed=3)
    y = prior.prior_predictive["y"]
    assert y.shape == (1, 50, 2, 3)
    assert (y.values >= 0).all() and (y.values == np.round(y.values)).all()
    post = prior.prior.isel(draw=slice(0, 20))
    with model:
        pp = pm.sample_posterior_predictive(post, progressbar=False, random_seed=4)
    assert pp.posterior_predictive["y"].shape == (1, 20, 2, 3)


def test_random_draws_follow_the_generative_model():
    rv = D.NoisyCounts.dist(20, np.array([0.25, 0.75]), mechanism=LAP, size=(4000,))
    draws = pm.draw(rv, random_seed=9)
    assert draws.shape == (4000, 2)
    # mean n p; variance n p (1 − p) + 2 b² per cell; cells sum to n + noise
    np.testing.assert_allclose(draws.mean(axis=0), [5.0, 15.0], atol=0.2)
    np.testing.assert_allclose(draws.var(axis=0), 20 * 0.25 * 0.75 + 2 * 1.5**2, rtol=0.1)


# ---------------------------------------------------------------------------------------------
# bad input: clear errors at model-build time
# ---------------------------------------------------------------------------------------------


def _model_with(n, release=None, **kwargs):
    with pm.Model():
        p = pm.Dirichlet("p", np.ones(2))
        return D.NoisyCounts("y", n, p, release, **kwargs)


def test_release_without_mechanism_refused():
    with pytest.raises(ValueError, match="mechanism is required"):
        _model_with(10, observed=[3.0, 7.0])


def test_observed_nan_and_bad_shape_refused():
    with pytest.raises(ValueError, match="observed contains NaN"):
        _model_with(10, mechanism=LAP, observed=[np.nan, 7.0])
    with pytest.raises(ValueError, match="observed has 3 cells but p has 2"):
        _model_with(10, mechanism=LAP, observed=[1.0, 2.0, 7.0])
    with pytest.raises(ValueError, match="does not match p"):
        with pm.Model():
            p = pm.Dirichlet("p", np.ones((3, 2)))
            D.NoisyCounts("y", 10, p, mechanism=LAP, observed=np.ones((2, 2)))


def test_negative_values_in_a_clamped_release_refused():
    with pytest.raises(ValueError, match="negative values"):
        _model_with(10, mechanism=LAP, observed=[-1.0, 7.0], clamped=True)


def test_p_off_simplex_refused():
    with pytest.raises(ValueError, match="p must lie on the probability simplex"):
        D.NoisyCounts.dist(10, np.array([0.5, 0.6]), mechanism=LAP)
    with pytest.raises(ValueError, match="p must lie on the probability simplex"):
        D.NoisyCounts.dist(10, np.array([-0.1, 1.1]), mechanism=LAP)


def test_bad_totals_refused():
    with pytest.raises(ValueError, match="n must hold non-negative whole numbers"):
        D.NoisyCounts.dist(2.5, np.array([0.5, 0.5]), mechanism=LAP)
    with pytest.raises(ValueError, match="n must hold non-negative whole numbers"):
        D.NoisyCounts.dist(-3, np.array([0.5, 0.5]), mechanism=LAP)
    with pytest.raises(TypeError, match="must be continuous"):
        D.NoisyCounts.dist(pt.lscalar("n"), np.array([0.5, 0.5]), mechanism=LAP)
    rel = D.privatize(np.array([4, 6]), DLAP, Accountant(), "t", public_total=10)
    with pytest.raises(ValueError, match="differs from the release's public total"):
        _model_with(12, rel)


def test_mechanism_sensitivity_not_matching_the_table_refused():
    with pytest.raises(ValueError, match="below the sensitivity 2 of a count table"):
        D.NoisyCounts.dist(10, np.array([0.5, 0.5]), mechanism=LaplaceMechanism(1.0, 1.0))
    with pytest.raises(ValueError, match=r"below the sensitivity 1\.41421"):
        D.NoisyCounts.dist(10, np.array([0.5, 0.5]), mechanism=GaussianMechanism(1.0, 1.0))
    # add/remove neighbours need only 1
    D.NoisyCounts.dist(
        10, np.array([0.5, 0.5]), mechanism=LaplaceMechanism(1.0, 1.0), neighbours="add-remove"
    )
    with pytest.raises(TypeError, match="GaussianMechanism or LaplaceMechanism"):
        D.NoisyCounts.dist(10, np.array([0.5, 0.5]), mechanism=RandomizedResponse(0.75))
    with pytest.raises(TypeError, match="GaussianMechanism or LaplaceMechanism"):
        D.NoisyCounts.dist(
            10, np.array([0.5, 0.5]), mechanism=DirichletMechanism(1.0, 5.0, 2**0.5, 1.0)
        )


def test_normalised_release_refused():
    rel = D.privatize(np.array([4, 6]), DLAP, Accountant(), "t")
    normalised = D.Release.from_dict({**rel.to_dict(), "normalised": True})
    with pytest.raises(ValueError, match="normalised or projected"):
        _model_with(10, normalised)
    with pytest.raises(ValueError, match="looks normalised"):
        _model_with(10, mechanism=LAP, observed=[0.35, 0.65])


def test_mode_errors():
    with pytest.raises(ValueError, match="mode must be one of"):
        D.NoisyCounts.dist(10, np.array([0.5, 0.5]), mechanism=LAP, mode="fast")
    with pytest.raises(ValueError, match="scale mixture of Laplace"):
        _model_with(10, mechanism=GAU, observed=[3.0, 7.0], mode="mixture")
    with pytest.raises(ValueError, match="needs a known total"):
        D.NoisyCounts.dist(pt.dscalar("mu"), np.array([0.5, 0.5]), mechanism=LAP, mode="exact")
    with pytest.raises(ValueError, match=r"inside a pm\.Model"):
        D.NoisyCounts.dist(10, np.array([0.5, 0.5]), mechanism=LAP, mode="mixture")


@pytest.mark.filterwarnings("ignore:.*(rhat|effective sample size|divergen).*:UserWarning")
def test_mixture_mode_nuts_close_to_exact_posterior():
    """The scale mixture (latent ω) in a count-dominated regime, where independent cells fail."""
    rng = np.random.default_rng(21)
    n, mech = 300, LaplaceMechanism(scale=2.0, sensitivity=2.0)  # ε = 1
    counts = rng.multinomial(n, [0.3, 0.7])
    rel = _continuous_release(counts, mech, "binomial", rng)
    with pm.Model() as model:
        theta = pm.Beta("theta", 1.0, 1.0)
        D.NoisyCounts("y", n, pt.stack([theta, 1.0 - theta]), rel, mode="mixture")
    assert {e["name"]: e["mode"] for e in D.ledger(model)}["y"] == "mixture"
    idata = D.sample(
        1000,
        tune=1000,
        chains=2,
        cores=1,
        model=model,
        random_seed=8,
        progressbar=False,
        compute_convergence_checks=False,
    )
    draws = idata.posterior["theta"].values.ravel()
    mean, sd = _grid_posterior(rel.values, n, mech.scale)
    assert abs(draws.mean() - mean) < 0.2 * sd
    assert abs(draws.std() / sd - 1) < 0.15
