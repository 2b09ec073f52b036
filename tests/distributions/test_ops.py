"""The numba-native polygamma Ops and the calibrate_r Op (values, gradients, linkers, PyMC)."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.scalar as ps
import pytensor.tensor as pt
import pytest
from pytensor.compile.mode import Mode
from pytensor.gradient import verify_grad
from pytensor.link.numba.dispatch.basic import numba_funcify_and_cache_key
from scipy.special import polygamma

from pymc_rdp.distributions.ops import (
    CalibrateR,
    Polygamma,
    calibrate_r,
    pentagamma,
    tetragamma,
    trigamma,
)
from pymc_rdp.privacy import _kernels

NUMBA = Mode(linker="numba", optimizer="fast_run")
C_LINKER = Mode(linker="c|py", optimizer="fast_run")
CVM = Mode(linker="cvm", optimizer="fast_compile")
SQRT2 = float(np.sqrt(2.0))


def _grid() -> np.ndarray:
    rng = np.random.default_rng(7)
    return np.concatenate(
        [
            np.logspace(-8, 8, 20001),
            rng.uniform(1e-8, 12.0, 5000),
            np.arange(1.0, 30.0),  # integers and the recurrence boundary
            [9.999999999, 10.0, 10.000000001, 1e-8, 1e8],
        ]
    )


# ----------------------------------------------------------------------------------------------
# polygamma kernels and Ops
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 2, 3])
def test_kernel_matches_scipy(n: int) -> None:
    x = _grid()
    ufunc = getattr(_kernels, ("trigamma", "tetragamma", "pentagamma")[n - 1] + "_ufunc")
    rel = np.abs(ufunc(x) / polygamma(n, x) - 1.0)
    assert rel.max() <= 1e-13


def test_trigamma_op_numba_accuracy_and_gradient() -> None:
    x = pt.dvector("x")
    y = trigamma(x)
    f = pytensor.function([x], [y, pytensor.grad(y.sum(), x)], mode=NUMBA)
    xs = _grid()
    val, grad = f(xs)
    assert np.abs(val / polygamma(1, xs) - 1).max() <= 1e-13
    assert np.abs(grad / polygamma(2, xs) - 1).max() <= 1e-13


@pytest.mark.parametrize("mode", [C_LINKER, CVM], ids=["c|py", "cvm"])
def test_polygamma_ops_other_linkers_agree(mode: Mode) -> None:
    """The C and VM linkers call the kernels' ufuncs; the numba linker compiles the same kernels
    into the graph's own machine code, with fast-math flags by default
    (``pytensor.config.numba__fastmath``), so a value may round differently in its last bit: on
    2026-12-07, in a fresh numba cache, ψ‴ at x = 6.31 was 0.010052583289008108 from the ufunc
    and …106 from the numba linker, bit for bit equal with fast math off. Agreement is asserted
    to two units in the last place."""
    x = pt.dvector("x")
    outs = [trigamma(x), tetragamma(x), pentagamma(x)]
    xs = np.logspace(-6, 6, 301)
    got = pytensor.function([x], outs, mode=mode)(xs)
    ref = pytensor.function([x], outs, mode=NUMBA)(xs)
    for g, r, n in zip(got, ref, (1, 2, 3), strict=True):
        np.testing.assert_array_max_ulp(g, r, maxulp=2)
        assert np.abs(g / polygamma(n, xs) - 1).max() <= 1e-13


def test_numba_implementation_is_the_kernel() -> None:
    """The numba dispatch returns the shared compiled kernel with a cache key (no object mode)."""
    for op, kernel in [
        (Polygamma(1), _kernels.trigamma),
        (Polygamma(2), _kernels.tetragamma),
        (CalibrateR("paper"), _kernels.calibrate_r_paper),
        (CalibrateR("fixed-alpha"), _kernels.calibrate_r_fixed),
    ]:
        node = op.make_node(*[ps.float64() for _ in range(op.nin)])
        fn, key = numba_funcify_and_cache_key(op, node=node)
        assert fn is kernel
        assert isinstance(key, str) and len(key) == 64
    keys = {
        numba_funcify_and_cache_key(
            CalibrateR(s), node=CalibrateR(s).make_node(*[ps.float64()] * 5)
        )[1]
        for s in ("paper", "fixed-alpha")
    }
    assert len(keys) == 2


def test_trigamma_invalid_and_limits() -> None:
    f = pytensor.function([x := pt.dvector("x")], trigamma(x), mode=NUMBA)
    out = f(np.array([0.0, -1.0, np.nan, np.inf]))
    assert np.isnan(out[:3]).all() and out[3] == 0.0


def test_python_ints_and_floats_are_cast_to_float64() -> None:
    assert trigamma(3).dtype == "float64"
    assert calibrate_r(1, 5, 1, SQRT2, 1).dtype == "float64"
    x = pt.fvector("x")
    assert trigamma(x).dtype == "float64"


def test_polygamma_order_is_checked() -> None:
    with pytest.raises(ValueError, match="n must be"):
        Polygamma(4)


@pytest.mark.parametrize("mode", [NUMBA, C_LINKER], ids=["numba", "c|py"])
def test_verify_grad_trigamma(mode: Mode, rng: np.random.Generator) -> None:
    verify_grad(trigamma, [np.array([0.05, 0.3, 4.0, 25.0])], rng=rng, mode=mode)
    verify_grad(trigamma, [np.array([1e-3])], rng=rng, mode=mode, eps=1e-9)
    verify_grad(tetragamma, [np.array([0.2, 3.0, 40.0])], rng=rng, mode=mode)


# ----------------------------------------------------------------------------------------------
# calibrate_r
# ----------------------------------------------------------------------------------------------
POINTS = [
    np.array([0.05, 0.5, 2.0, 30.0]),  # epsilon
    np.array([5.0, 2.5, 11.0, 1.3]),  # order
    np.array([1.0, 0.4, 2.0, 3.0]),  # alpha0 / alpha
    np.array([SQRT2, 1.0, 2.0, 0.8]),  # l2
    np.array([1.0, 1.0, 0.5, 0.7]),  # linf
]


@pytest.mark.parametrize("mode", [NUMBA, C_LINKER], ids=["numba", "c|py"])
@pytest.mark.parametrize("scheme", ["paper", "fixed-alpha"])
def test_verify_grad_calibrate_r(mode: Mode, scheme: str, rng: np.random.Generator) -> None:
    verify_grad(
        lambda *a: calibrate_r(*a, scheme=scheme),
        [p.copy() for p in POINTS],
        rng=rng,
        mode=mode,
        n_tests=3,
    )


@pytest.mark.parametrize("scheme", ["paper", "fixed-alpha"])
def test_implicit_gradient_matches_central_differences(scheme: str) -> None:
    """The IFT gradient agrees with differences of the numpy kernel to 1e-6 relative."""
    args = [pt.dscalar(n) for n in ("e", "l", "a", "d2", "dinf")]
    r = calibrate_r(*args, scheme=scheme)
    grads = pytensor.function(args, pytensor.grad(r, args), mode=NUMBA)
    c = _kernels.SCHEME_COEFFICIENTS[scheme]
    for point in np.array(POINTS).T:
        g = np.array(grads(*point))
        for i in range(5):
            h = 1e-6 * point[i]
            up, dn = point.copy(), point.copy()
            up[i] += h
            dn[i] -= h
            fd = (_kernels.calibrate_r(*up, c) - _kernels.calibrate_r(*dn, c)) / (2 * h)
            assert g[i] == pytest.approx(fd, rel=1e-6)


@pytest.mark.parametrize("scheme", ["paper", "fixed-alpha"])
def test_calibrate_r_op_is_the_numpy_kernel(scheme: str) -> None:
    rng = np.random.default_rng(3)
    n = 2000
    eps = 10 ** rng.uniform(-8, 4, n)
    lam = 10 ** rng.uniform(np.log10(1.01), 4, n)
    a0 = 10 ** rng.uniform(-1, 1, n)
    ins = [pt.dvector(n) for n in ("e", "l", "a")]
    r = calibrate_r(ins[0], ins[1], ins[2], SQRT2, 1.0, scheme=scheme)
    c = _kernels.SCHEME_COEFFICIENTS[scheme]
    ref = _kernels.calibrate_many(eps, lam, a0, SQRT2, 1.0, c)
    for mode in (NUMBA, C_LINKER):
        got = pytensor.function(ins, r, mode=mode)(eps, lam, a0)
        np.testing.assert_array_equal(got, ref)
    g = 0.5 * lam * ref**2 * 2.0 * polygamma(1, a0 + c * (lam - 1) * ref)
    assert np.abs(g / eps - 1).max() <= 1e-10


def test_calibrate_r_broadcasts_and_invalid_gives_nan() -> None:
    e = pt.dvector("e")
    f = pytensor.function([e], calibrate_r(e, 5.0, 1.0, SQRT2, 1.0), mode=NUMBA)
    out = f(np.array([1.0, -1.0, np.nan, np.inf, 0.0]))
    assert np.isfinite(out[0]) and np.isnan(out[1:]).all()
    m = pt.dmatrix("m")
    g = pytensor.function([m], calibrate_r(m, pt.as_tensor(np.array([2.0, 5.0])), 1, 1, 1))
    assert g(np.ones((3, 2))).shape == (3, 2)
    with pytest.raises(ValueError, match="scheme"):
        calibrate_r(1.0, 5.0, 1.0, 1.0, 1.0, scheme="other")
    with pytest.raises(ValueError, match="scheme"):
        CalibrateR("other")


def test_calibrate_r_in_a_pymc_model() -> None:
    """r as a Deterministic of an uncertain ε: prior predictive and NUTS through the Op."""
    pm = pytest.importorskip("pymc")
    with pm.Model() as model:
        eps = pm.LogNormal("eps", mu=0.0, sigma=0.5)
        r = pm.Deterministic("r", calibrate_r(eps, 5.0, 1.0, SQRT2, 1.0))
        pm.Normal("y", mu=pt.log(r), sigma=0.5, observed=np.array([-1.0, -0.5, -0.8]))
        prior = pm.sample_prior_predictive(draws=200, random_seed=1)
        idata = pm.sample(
            draws=150,
            tune=150,
            chains=1,
            cores=1,
            random_seed=2,
            progressbar=False,
            compute_convergence_checks=False,
            nuts_sampler="pymc",
        )
    e_prior = np.asarray(prior["prior"]["eps"]).ravel()
    r_prior = np.asarray(prior["prior"]["r"]).ravel()
    np.testing.assert_allclose(
        r_prior, _kernels.calibrate_many(e_prior, 5.0, 1.0, SQRT2, 1.0, 3.0), rtol=1e-14
    )
    e_post = np.asarray(idata["posterior"]["eps"]).ravel()
    r_post = np.asarray(idata["posterior"]["r"]).ravel()
    assert e_post.size == 150 and np.isfinite(r_post).all()
    np.testing.assert_allclose(
        r_post, _kernels.calibrate_many(e_post, 5.0, 1.0, SQRT2, 1.0, 3.0), rtol=1e-14
    )
    assert model.compile_logp()({"eps_log__": 0.0}) is not None
