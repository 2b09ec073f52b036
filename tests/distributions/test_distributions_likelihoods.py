"""The noise-aware likelihoods against brute force, numerical integration and each other."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats
from scipy.special import logsumexp

from pymc_rdp.distributions import likelihoods as lik

# ---------------------------------------------------------------------------------------------
# Oracles (NumPy / SciPy only)
# ---------------------------------------------------------------------------------------------


def _cell_factor(noise, scale, y, s, clamped, rounded):
    """Noise factor of one cell by SciPy: density, interval or left-tail probability."""
    dist = stats.laplace(loc=s, scale=scale) if noise == "laplace" else stats.norm(s, scale)
    if clamped and y <= 0:
        return dist.cdf(0.5 if rounded else 0.0)
    if rounded:
        return dist.cdf(y + 0.5) - dist.cdf(y - 0.5)
    return dist.pdf(y)


def brute_force_logp(y, n, p, noise, scale, clamped=False, rounded=False):
    """log Σ over every integer vector s with Σ s = n of Multinomial(s) Π noise factors."""
    k = len(p)
    total = 0.0
    for s in itertools.product(range(n + 1), repeat=k):
        if sum(s) != n:
            continue
        term = stats.multinomial.pmf(s, n, p)
        for j in range(k):
            term *= _cell_factor(noise, scale, y[j], s[j], clamped, rounded)
        total += term
    return np.log(total)


def normal_laplace_by_quadrature(z, v, b, cdf=False):
    """∫ φ(x; 0, v) q(z − x) dx with q the Laplace density or CDF, by adaptive quadrature."""
    s = np.sqrt(v)
    lo, hi = -40 * s, 40 * s
    q = stats.laplace(scale=b)
    g = q.cdf if cdf else q.pdf
    pts = [z] if lo < z < hi else None
    val = integrate.quad(
        lambda x: stats.norm.pdf(x, scale=s) * g(z - x),
        lo,
        hi,
        points=pts,
        limit=500,
        epsabs=0,
        epsrel=1e-12,
    )[0]
    return val


def _fn(*inputs_and_output):
    *inputs, out = inputs_and_output
    return pytensor.function(list(inputs), out, mode="FAST_COMPILE")


# ---------------------------------------------------------------------------------------------
# Enumeration
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "k"), [(0, 1), (0, 3), (5, 1), (4, 2), (6, 3), (5, 4)])
def test_compositions_are_all_count_vectors(n, k):
    states = lik.compositions(n, k)
    brute = sorted(s for s in itertools.product(range(n + 1), repeat=k) if sum(s) == n)
    assert states.dtype == np.int64
    assert states.shape == (lik.number_of_compositions(n, k), k)
    assert sorted(map(tuple, states.tolist())) == brute


def test_log_multinomial_coefficients():
    states = lik.compositions(7, 3)
    expected = [
        np.log(math.factorial(7) // math.prod(math.factorial(int(c)) for c in s)) for s in states
    ]
    np.testing.assert_allclose(lik.log_multinomial_coefficients(states), expected, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# Normal–Laplace convolution
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("v", "b"), [(0.3, 2.0), (25.0, 20.0), (4.0, 0.5), (1e-4, 3.0)])
def test_normal_laplace_density_and_cdf_match_quadrature(v, b):
    z = pt.dvector("z")
    f = _fn(z, [lik.normal_laplace_logpdf(z, v, b), lik.normal_laplace_logcdf(z, v, b)])
    zs = np.array([-60.0, -5.0, -1.0, -0.2, 0.0])
    logpdf, logcdf = f(zs)
    for zi, a, c in zip(zs, logpdf, logcdf, strict=True):
        np.testing.assert_allclose(np.exp(a), normal_laplace_by_quadrature(zi, v, b), rtol=1e-6)
        np.testing.assert_allclose(
            np.exp(c), normal_laplace_by_quadrature(zi, v, b, cdf=True), rtol=1e-6
        )
    # positive z through the symmetry f(z) = f(−z)
    np.testing.assert_allclose(f(-zs)[0], logpdf, rtol=1e-12)


def test_normal_laplace_far_tails_are_finite_with_finite_gradients():
    z = pt.dvector("z")
    v = pt.dscalar("v")
    out = (
        lik.normal_laplace_logpdf(z, v, 2.0).sum()
        + lik.normal_laplace_logcdf(pt.minimum(z, 0.0), v, 2.0).sum()
    )
    f = _fn(z, v, [out, *pt.grad(out, [z, v])])
    zs = np.array([-1e4, -300.0, -1e-3, 0.0, 1e-3, 300.0, 1e4])
    for vv in (1e-8, 1.0, 1e4):
        val, gz, gv = f(zs, vv)
        assert np.isfinite(val) and np.isfinite(gz).all() and np.isfinite(gv)
    # tails: the Laplace part dominates, log f ≈ −|z|/b + const
    far = _fn(z, lik.normal_laplace_logpdf(z, 1.0, 2.0))(np.array([-1e4, 1e4]))
    np.testing.assert_allclose(far, -1e4 / 2.0 + 1.0 / 8.0 - np.log(4.0), rtol=1e-12)


def test_scale_mixture_of_normals_is_laplace():
    """∫ N(w; 0, ω) Exponential(ω; mean 2b²) dω = Laplace(w; b) (the mixture mode's latent ω)."""
    b = 1.7
    for w in (0.1, 1.0, 4.0):
        val = integrate.quad(
            lambda om, w=w: (
                stats.norm.pdf(w, scale=np.sqrt(om)) * stats.expon.pdf(om, scale=2 * b**2)
            ),
            0,
            np.inf,
            limit=200,
        )[0]
        np.testing.assert_allclose(val, stats.laplace.pdf(w, scale=b), rtol=1e-7)


# ---------------------------------------------------------------------------------------------
# Exact likelihood = brute force over latent counts
# ---------------------------------------------------------------------------------------------

CASES = [
    # y, n, p, noise, scale, clamped, rounded
    ([3.2, 4.9], 8, [0.3, 0.7], "laplace", 1.5, False, False),
    ([-1.0, 9.5], 8, [0.6, 0.4], "laplace", 4.0, False, False),
    ([2.1, 0.4, 5.3], 7, [0.2, 0.3, 0.5], "laplace", 2.0, False, False),
    ([2.1, 0.4, 5.3], 7, [0.2, 0.3, 0.5], "gaussian", 1.3, False, False),
    ([0.0, 3.0, 6.0], 9, [0.1, 0.4, 0.5], "laplace", 1.0, True, True),
    ([0.0, 2.4, 6.0], 9, [0.1, 0.4, 0.5], "laplace", 1.0, True, False),
    ([-1.0, 3.0, 6.0], 9, [0.1, 0.4, 0.5], "gaussian", 2.0, False, True),
    ([0.0, 12.0], 10, [0.05, 0.95], "gaussian", 0.7, True, True),
]


@pytest.mark.parametrize(("y", "n", "p", "noise", "scale", "clamped", "rounded"), CASES)
def test_exact_logp_equals_brute_force(y, n, p, noise, scale, clamped, rounded):
    yv = pt.dvector("y")
    pv = pt.dvector("p")
    out = lik.exact_logp(yv, n, pv, noise, scale, clamped=clamped, rounded=rounded, k=len(p))
    got = _fn(yv, pv, out)(np.array(y), np.array(p))
    expected = brute_force_logp(y, n, p, noise, scale, clamped, rounded)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-8)


def test_exact_logp_batch_with_different_totals():
    y = np.array([[1.5, 2.0, 0.2], [4.0, -1.0, 3.3], [0.0, 0.0, 2.0]])
    p = np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3], [0.3, 0.3, 0.4]])
    n = np.array([4, 6, 4])
    yv = pt.dmatrix("y")
    pv = pt.dmatrix("p")
    got = _fn(yv, pv, lik.exact_logp(yv, n, pv, "laplace", 1.2, k=3))(y, p)
    expected = [brute_force_logp(y[i], n[i], p[i], "laplace", 1.2) for i in range(3)]
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-8)


_COMPILED: dict = {}


def _exact_fn(n, k, noise):
    key = (n, k, noise)
    if key not in _COMPILED:
        yv, pv, sv = pt.dvector("y"), pt.dvector("p"), pt.dscalar("scale")
        _COMPILED[key] = _fn(yv, pv, sv, lik.exact_logp(yv, n, pv, noise, sv, k=k))
    return _COMPILED[key]


@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(0, 5),
    k=st.integers(2, 3),
    scale=st.floats(0.3, 10.0),
    noise=st.sampled_from(["laplace", "gaussian"]),
    seed=st.integers(0, 2**31 - 1),
)
def test_exact_logp_property(n, k, scale, noise, seed):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k))
    y = rng.normal(n / k, 3.0, size=k)
    got = _exact_fn(n, k, noise)(y, p, scale)
    np.testing.assert_allclose(got, brute_force_logp(y, n, p, noise, scale), atol=1e-8)


def test_exact_logp_gradient_is_finite_and_matches_finite_differences():
    y = np.array([2.0, 0.5, 4.5])
    pv = pt.dvector("p")
    out = lik.exact_logp(pt.constant(y), 6, pv, "laplace", 1.0, clamped=True, rounded=True)
    f = _fn(pv, [out, pt.grad(out, pv)])
    p0 = np.array([0.2, 0.3, 0.5])
    _, g = f(p0)
    h = 1e-6
    fd = [(f(p0 + h * e)[0] - f(p0 - h * e)[0]) / (2 * h) for e in np.eye(3)]
    np.testing.assert_allclose(g, fd, rtol=1e-5)


# ---------------------------------------------------------------------------------------------
# Scalable modes against the exact mode
# ---------------------------------------------------------------------------------------------


def _posterior_on_grid(logp_fn, grid):
    """Posterior on a grid under a flat prior (the grid points are evaluated as one batch)."""
    lp = logp_fn(grid)
    w = np.exp(lp - logsumexp(lp))
    return w / w.sum()


@pytest.mark.parametrize(("k", "n"), [(2, 40), (3, 30)])
def test_convolution_within_one_percent_tv_at_epsilon_0_1(k, n):
    """Laplace with Δ₁ = 2 at ε = 0.1 (b = 20): the scalable posterior is within 1% TV of exact."""
    rng = np.random.default_rng(7 + k)
    b = 2.0 / 0.1
    p_true = np.array([0.3, 0.7]) if k == 2 else np.array([0.2, 0.3, 0.5])
    counts = rng.multinomial(n, p_true)
    y = counts + rng.laplace(0.0, b, size=k)
    pv = pt.dmatrix("p")
    exact = _fn(pv, lik.exact_logp(pt.constant(y), n, pv, "laplace", b, k=k))
    conv = _fn(pv, lik.convolution_logp(pt.constant(y), n, pv, "laplace", b))
    if k == 2:
        t = np.linspace(0.0025, 0.9975, 400)
        grid = np.stack([t, 1 - t], axis=1)
    else:
        ts = np.linspace(0.01, 0.99, 60)
        grid = np.array([[a, c, 1 - a - c] for a in ts for c in ts if a + c < 0.995])
    post_exact = _posterior_on_grid(exact, grid)
    post_conv = _posterior_on_grid(conv, grid)
    tv = 0.5 * np.abs(post_exact - post_conv).sum()
    assert tv < 0.01, tv


@pytest.mark.parametrize("poissonised", [True, False])
def test_convolution_gaussian_is_independent_normals(poissonised):
    y = np.array([3.0, 5.5, -1.0])
    p = np.array([0.2, 0.5, 0.3])
    mu, sigma = 12.0, 1.5
    yv = pt.dvector("y")
    got = _fn(
        yv,
        lik.convolution_logp(yv, mu, pt.constant(p), "gaussian", sigma, poissonised=poissonised),
    )(y)
    v = mu * p if poissonised else mu * p * (1 - p)
    expected = stats.norm.logpdf(y, mu * p, np.sqrt(v + sigma**2)).sum()
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_convolution_censored_cells_use_probabilities():
    y = np.array([0.0, 4.0])
    p = np.array([0.3, 0.7])
    mu, sigma = 6.0, 1.0
    yv = pt.dvector("y")
    got = _fn(
        yv,
        lik.convolution_logp(
            yv, mu, pt.constant(p), "gaussian", sigma, poissonised=True, clamped=True, rounded=True
        ),
    )(y)
    sd = np.sqrt(mu * p + sigma**2)
    expected = stats.norm.logcdf(0.5, mu * p[0], sd[0]) + np.log(
        stats.norm.cdf(4.5, mu * p[1], sd[1]) - stats.norm.cdf(3.5, mu * p[1], sd[1])
    )
    np.testing.assert_allclose(got, expected, rtol=1e-10)


def test_convolution_laplace_interval_matches_quadrature():
    mu, b = 10.0, 2.0
    p = np.array([0.4, 0.6])
    y = np.array([0.0, 7.0])
    yv = pt.dvector("y")
    got = _fn(
        yv,
        lik.convolution_logp(
            yv, mu, pt.constant(p), "laplace", b, poissonised=True, clamped=True, rounded=True
        ),
    )(y)
    v = mu * p
    left = normal_laplace_by_quadrature(0.5 - v[0], v[0], b, cdf=True)
    hi = normal_laplace_by_quadrature(-(7.5 - v[1]), v[1], b, cdf=True)  # 1 − F(7.5 − m)
    lo = normal_laplace_by_quadrature(-(6.5 - v[1]), v[1], b, cdf=True)
    np.testing.assert_allclose(got, np.log(left) + np.log(lo - hi), rtol=1e-6)


def test_mvnormal_logp_matches_scipy_batch():
    p = np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])
    n = np.array([10.0, 20.0])
    var = np.array([[1.0, 2.0, 0.5], [3.0, 3.0, 3.0]])
    y = np.array([[2.0, 3.5, 4.0], [11.0, 7.0, 1.5]])
    yv = pt.dmatrix("y")
    got = _fn(yv, lik.mvnormal_logp(yv, pt.constant(n), pt.constant(p), pt.constant(var)))(y)
    expected = [
        stats.multivariate_normal.logpdf(
            y[i], n[i] * p[i], n[i] * (np.diag(p[i]) - np.outer(p[i], p[i])) + np.diag(var[i])
        )
        for i in range(2)
    ]
    np.testing.assert_allclose(got, expected, rtol=1e-10)


def test_exact_logp_refuses_fractional_totals():
    with pytest.raises(ValueError, match="n must hold whole numbers"):
        lik.exact_logp(pt.dvector("y"), 2.5, pt.dvector("p"), "laplace", 1.0, k=2)


_MVN_FN = []


def _mvnormal_fn():
    if not _MVN_FN:
        y, p, v = pt.dvector("y"), pt.dvector("p"), pt.dvector("v")
        n = pt.dscalar("n")
        _MVN_FN.append(_fn(y, n, p, v, lik.mvnormal_logp(y, n, p, v)))
    return _MVN_FN[0]


@settings(max_examples=30, deadline=None)
@given(
    k=st.integers(2, 40),
    log_n=st.floats(0.0, 5.0),
    log_var=st.floats(-2.0, 4.0),
    seed=st.integers(0, 2**31 - 1),
)
def test_mvnormal_logp_closed_form_equals_dense_factorisation(k, log_n, log_var, seed):
    """The Sherman–Morrison density equals scipy's dense evaluation, tiny cells included."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(k, 0.3))
    p = np.maximum(p, 1e-12)
    p /= p.sum()
    n = 10.0**log_n
    var = 10.0**log_var * rng.uniform(0.5, 2.0, size=k)
    y = n * p + rng.normal(size=k) * np.sqrt(n * p + var)
    cov = n * (np.diag(p) - np.outer(p, p)) + np.diag(var)
    expected = stats.multivariate_normal.logpdf(y, n * p, cov)
    got = _mvnormal_fn()(y, n, p, var)
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9)


def test_mvnormal_logp_gradient_matches_finite_differences():
    pv = pt.dvector("p")
    y = np.array([30.0, 55.0, 14.0, 0.5])
    out = lik.mvnormal_logp(y, pt.constant(100.0), pv, pt.constant(np.array([4.0, 4, 4, 4])))
    f = pytensor.function([pv], out)
    g = pytensor.function([pv], pytensor.grad(out, pv))
    p0 = np.array([0.3, 0.5, 0.15, 0.05])
    eps = 1e-6
    fd = [(f(p0 + eps * e) - f(p0 - eps * e)) / (2 * eps) for e in np.eye(4)]
    np.testing.assert_allclose(g(p0), fd, rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# Constants computed at graph construction (nothing left for PyTensor to fold by compiling C)
# ---------------------------------------------------------------------------------------------


def _inner_graph_nodes_on_constants(out):
    from pytensor.graph.basic import Constant
    from pytensor.graph.op import HasInnerGraph
    from pytensor.graph.traversal import apply_ancestors, graph_inputs

    return [
        node
        for node in apply_ancestors([out])
        if isinstance(node.op, HasInnerGraph)
        and all(isinstance(i, Constant) for i in graph_inputs(node.inputs))
    ]


@pytest.mark.parametrize("sigma", [0.05, 0.3, 0.999, 1.0, 1.7, 6.0, 48.0])
def test_discrete_gaussian_normaliser_of_a_known_sigma_equals_the_graph_and_the_sum(sigma):
    s = pt.scalar("s", dtype="float64")
    graph = pytensor.function([s], lik.discrete_gaussian_log_normaliser(s))(sigma)
    known = lik.discrete_gaussian_log_normaliser(sigma)
    assert isinstance(known, pt.TensorConstant)
    x = np.arange(-4000, 4001, dtype=np.float64)
    direct = logsumexp(-(x**2) / (2.0 * sigma**2))
    np.testing.assert_allclose(known.data, graph, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(known.data, direct, rtol=1e-14, atol=1e-14)


def test_constant_value_evaluates_constant_graphs_only():
    x = pt.scalar("x", dtype="float64")
    c = pt.constant(np.array([1.0, 4.0]))
    np.testing.assert_array_equal(lik.constant_value(pt.sqrt(c) + 1.0), [2.0, 3.0])
    np.testing.assert_array_equal(lik.constant_value(2.5), 2.5)
    assert lik.constant_value(x + c) is None
    # a logsumexp (an inner-graph Op) is left to the compiled function, not evaluated here
    assert lik.constant_value(pt.special.logsumexp(c)) is None


@pytest.mark.parametrize("noise", ["discrete_gaussian", "discrete_laplace", "gaussian"])
def test_exact_logp_leaves_no_inner_graph_op_on_constants(noise):
    # a regression check: folding such an Op compiles its inner graph through C, ~1 s per Op
    # on a cold cache, which made up most of the cold compile of a small network's model
    p = pt.vector("p", dtype="float64", shape=(3,))
    y = np.array([2.0, 5.0, -1.0])
    out = lik.exact_logp(y, 6, p, noise, 1.5)
    assert _inner_graph_nodes_on_constants(out) == []
    value = pytensor.function([p], out)(np.array([0.2, 0.5, 0.3]))
    assert np.isfinite(value)
