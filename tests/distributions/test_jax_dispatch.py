"""The JAX implementations of the package's Ops: every private node's logp and gradient under JAX.

Oracle: the same model compiled by PyTensor's own backends (the Ops' numpy/numba ``perform``
through ``FAST_COMPILE``; the numba default linker for the scalar Ops), compared at several points
to 1e-9. Two JAX gradients are checked: PyTensor's gradient graph compiled by JAX (numpyro, and
``mode="JAX"``) and JAX's own differentiation of the JAX logp (nutpie's ``gradient_backend="jax"``).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import numpy as np
import pytest

jax = pytest.importorskip("jax", reason="jax is not installed (the optional 'jax' extra)")

import pymc as pm  # noqa: E402
import pytensor  # noqa: E402
import pytensor.tensor as pt  # noqa: E402

import pymc_rdp.distributions as D  # noqa: E402
from pymc_rdp.distributions.joint_likelihood import build_joint_model, family_moments  # noqa: E402
from pymc_rdp.distributions.ops import calibrate_r, pentagamma, tetragamma, trigamma  # noqa: E402
from pymc_rdp.privacy import _kernels  # noqa: E402
from pymc_rdp.privacy.accountant import Accountant  # noqa: E402
from pymc_rdp.privacy.mechanisms import (  # noqa: E402
    DirichletMechanism,
    DiscreteLaplaceMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    UnsafeNoiseSeed,
)

SQRT2 = float(np.sqrt(2.0))
TOTALS = np.array([40, 25, 60], dtype=np.int64)
TABLE = np.array([[20, 12, 8], [5, 10, 10], [30, 18, 12]], dtype=np.int64)


def _hierarchical(observe) -> pm.Model:
    with pm.Model(coords={"row": list("abc"), "cell": list("xyz")}) as model:
        mu = pm.Dirichlet("mu", np.ones(3), dims="cell")
        kappa = pm.Gamma("kappa", alpha=2.0, beta=0.1)
        p = pm.Dirichlet("p", kappa * mu, dims=("row", "cell"))
        observe(p)
    return model


def _discrete_laplace_model() -> pm.Model:
    def observe(p):
        acc = Accountant(budget=(2.0, 1e-6))
        mech = DiscreteLaplaceMechanism.calibrate(1.0, order=float("inf"), sensitivity=2.0)
        rel = D.privatize(TABLE, mech, acc, "row x cell", UnsafeNoiseSeed(3))
        D.NoisyCounts("table", TOTALS, p, rel, dims=("row", "cell"))

    return _hierarchical(observe)


def _additive_model(mech) -> pm.Model:
    noisy = TABLE + np.random.default_rng(5).laplace(0.0, 2.0, TABLE.shape)

    def observe(p):
        D.NoisyCounts("table", TOTALS, p, mechanism=mech, observed=noisy, dims=("row", "cell"))

    return _hierarchical(observe)


def _dirichlet_release_model() -> pm.Model:
    mech = DirichletMechanism(r=0.8, alpha=30.0, l2_sensitivity=SQRT2, linf_sensitivity=1.0)
    with pm.Model(coords={"parent": ["a", "b", "c"], "state": ["x", "y"]}) as model:
        D.DirichletRelease("row", np.array([4, 9, 2]), mech, tag="row-release")
        D.DirichletRelease(
            "cpt", np.array([[3, 4], [0, 10], [5, 5]]), mech, dims=("parent", "state")
        )
    return model


SMALL = {"a": [], "b": ["a"], "c": ["a", "b"], "d": ["c"]}
SMALL_CARDS = {"a": 2, "b": 3, "c": 2, "d": 3}


def _joint_model(noise: str, method: str) -> pm.Model:
    from pymc_rdp.bn.structure import family_table

    rng = np.random.default_rng(11)
    codes = {v: rng.integers(0, SMALL_CARDS[v], size=300) for v in SMALL}
    releases = {}
    for v in SMALL:
        table = family_table(codes, v, SMALL[v], SMALL_CARDS).astype(np.float64)
        releases[v] = table + rng.normal(0.0, 2.0, size=table.shape)
    return build_joint_model(
        SMALL, SMALL_CARDS, releases, n=300, noise=noise, scale=2.0, method=method
    )


def _calibrate_model() -> pm.Model:
    with pm.Model() as model:
        eps = pm.LogNormal("eps", mu=0.0, sigma=0.5)
        alpha = pm.Gamma("alpha", alpha=4.0, beta=2.0)
        r = calibrate_r(eps, 5.0, alpha, SQRT2, 1.0)
        r_fixed = calibrate_r(eps, 3.0, alpha + 20.0, SQRT2, 1.0, scheme="fixed-alpha")
        pm.Normal("y", mu=pt.log(r) + pt.log(r_fixed), sigma=0.5, observed=[-1.0, -0.5, -0.8])
        pm.Potential("psi", pt.log(trigamma(alpha)) - tetragamma(alpha))
    return model


MODELS = {
    "discrete_laplace": _discrete_laplace_model,
    "laplace": lambda: _additive_model(LaplaceMechanism(2.0, 2.0)),
    "gaussian": lambda: _additive_model(GaussianMechanism(2.0, 2.0)),
    "dirichlet_release": _dirichlet_release_model,
    "joint_gaussian": lambda: _joint_model("gaussian", "enumeration"),
    "joint_laplace": lambda: _joint_model("laplace", "junction_tree"),
    "calibrate_r": _calibrate_model,
}


def _points(model: pm.Model, n: int = 3) -> list[dict[str, np.ndarray]]:
    """The initial point and jittered ones (draws on the simplex for untransformed releases)."""
    start = model.initial_point()
    rv_of = {v.name: model.values_to_rvs[v] for v in model.value_vars}
    out = [start]
    for seed in range(1, n):
        rng = np.random.default_rng(seed)
        point = {}
        for k, v in start.items():
            if isinstance(rv_of[k].owner.op, D.DirichletReleaseRV):
                point[k] = rng.dirichlet(np.ones(np.shape(v)[-1]), size=np.shape(v)[:-1])
            else:
                point[k] = v + rng.normal(0.0, 0.3, size=np.shape(v))
        out.append(point)
    return out


def _jax_autodiff(model: pm.Model):
    """JAX's value-and-gradient of the JAX-compiled logp (what nutpie's JAX gradient runs)."""
    from pymc.sampling.jax import get_jaxified_graph

    values = model.value_vars
    logp = get_jaxified_graph(inputs=values, outputs=[model.logp()])

    def f(*xs):
        return logp(*xs)[0]

    vg = jax.jit(jax.value_and_grad(f, argnums=tuple(range(len(values)))))

    def run(point):
        val, grads = vg(*[point[v.name] for v in values])
        return float(val), np.concatenate([np.ravel(np.asarray(g)) for g in grads])

    return run


# laplace, gaussian and joint_laplace use no custom Op the other kinds do not: slow (--runslow)
_COVERED_ELSEWHERE = {"laplace", "gaussian", "joint_laplace"}


@pytest.mark.parametrize(
    "kind",
    [
        pytest.param(k, marks=pytest.mark.slow) if k in _COVERED_ELSEWHERE else k
        for k in sorted(MODELS)
    ],
)
def test_jax_logp_and_gradients_equal_pytensor_backends(kind: str) -> None:
    model = MODELS[kind]()
    ref_logp = model.compile_logp(mode="FAST_COMPILE")
    ref_dlogp = model.compile_dlogp(mode="FAST_COMPILE")
    jax_logp = model.compile_logp(mode="JAX")
    jax_dlogp = model.compile_dlogp(mode="JAX")
    autodiff = _jax_autodiff(model)
    for point in _points(model):
        want, want_grad = ref_logp(point), ref_dlogp(point)
        assert np.isfinite(want) and np.all(np.isfinite(want_grad))
        assert float(jax_logp(point)) == pytest.approx(float(want), rel=1e-9, abs=1e-9)
        np.testing.assert_allclose(jax_dlogp(point), want_grad, rtol=1e-9, atol=1e-9)
        val, grad = autodiff(point)
        assert val == pytest.approx(float(want), rel=1e-9, abs=1e-9)
        np.testing.assert_allclose(grad, want_grad, rtol=1e-9, atol=1e-9)


def test_scalar_ops_equal_the_numba_default_backend() -> None:
    """ψ′, ψ″, ψ‴ and both calibrations: JAX against the default (numba) linker, and gradients."""
    x = pt.dvector("x")
    grid = np.concatenate([np.logspace(-6, 6, 301), [9.999999999, 10.0, 10.5, 1e8]])
    eps = np.logspace(-3, 2, 7)
    outs = [
        trigamma(x),
        tetragamma(x),
        pentagamma(x),
        pytensor.grad(trigamma(x).sum(), x),
        pytensor.grad(tetragamma(x).sum(), x),
    ]
    e = pt.dvector("e")
    cal = [
        calibrate_r(e, 5.0, 1.0, SQRT2, 1.0),
        calibrate_r(e, 3.0, 25.0, SQRT2, 1.0, "fixed-alpha"),
    ]
    cal += [pytensor.grad(c.sum(), e) for c in list(cal)]
    numba = pytensor.function([x], outs)(grid) + pytensor.function([e], cal)(eps)
    on_jax = pytensor.function([x], outs, mode="JAX")(grid) + pytensor.function(
        [e], cal, mode="JAX"
    )(eps)
    for got, want in zip(on_jax, numba, strict=True):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-13, atol=0.0)
    # the JAX JVP of calibrate_r (nutpie's JAX gradient) is the implicit-function derivative
    from pymc_rdp.distributions.jax_dispatch import calibrate_r_jax

    f = calibrate_r_jax(3.0)
    grad = jax.vmap(jax.grad(lambda v: f(v, 5.0, 1.0, SQRT2, 1.0)))(eps)
    np.testing.assert_allclose(np.asarray(grad), numba[-2], rtol=1e-12)
    r = np.asarray(f(eps, 5.0, 1.0, SQRT2, 1.0))
    np.testing.assert_array_equal(r, _kernels.calibrate_many(eps, 5.0, 1.0, SQRT2, 1.0, 3.0))


def test_invalid_inputs_give_nan_and_minus_inf_under_jax() -> None:
    from pymc_rdp.distributions.jax_dispatch import mvnormal_logp_jax, polygamma_jax

    got = np.asarray(polygamma_jax(1, np.array([-1.0, 0.0, np.nan, np.inf])))
    np.testing.assert_array_equal(got, [np.nan, np.nan, np.nan, 0.0])
    not_pd = np.array([[1.0, 2.0], [2.0, 1.0]])
    assert float(mvnormal_logp_jax(np.zeros(2), np.zeros(2), not_pd)) == -np.inf
    grads = jax.grad(mvnormal_logp_jax, argnums=(0, 1, 2))(np.ones(2), np.zeros(2), not_pd)
    assert all(np.all(np.asarray(g) == 0.0) for g in grads)
    with pytest.raises(ValueError, match="n must be"):
        polygamma_jax(4, 1.0)


def test_family_moments_under_jax_equal_numpy(rng: np.random.Generator) -> None:
    cpts = {
        v: rng.dirichlet(np.ones(SMALL_CARDS[v]), size=int(np.prod([SMALL_CARDS[u] for u in p])))
        for v, p in SMALL.items()
    }
    want_mean, want_second = family_moments(SMALL, SMALL_CARDS, cpts)
    sym = {v: pt.dmatrix(v) for v in SMALL}
    mean, second = family_moments(SMALL, SMALL_CARDS, sym, graph="tape")
    fn = pytensor.function(list(sym.values()), [mean, second], mode="JAX")
    got_mean, got_second = fn(*[cpts[v] for v in SMALL])
    np.testing.assert_allclose(got_mean, want_mean, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(got_second, want_second, rtol=1e-12, atol=1e-15)


def test_forward_draw_of_a_release_is_refused_under_jax() -> None:
    model = _dirichlet_release_model()
    with pytest.warns(UserWarning, match="RandomType SharedVariables"):
        fn = pytensor.function([], model["row"], mode="JAX")
    with pytest.raises(D.RefusedDrawError, match="forward draw"):
        fn()


# the registration, checked once PyTensor's JAX backend loads
_REGISTERED = (
    "import pytensor.link.jax.dispatch as d;"
    "from pymc_rdp.distributions.ops import Polygamma;"
    "impl = d.jax_funcify.dispatch(Polygamma);"
    "assert impl.__module__ == 'pymc_rdp.distributions.jax_dispatch', impl"
)


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="jax is not installed")
@pytest.mark.parametrize(
    "imports",
    [
        "import sys, pymc_rdp.distributions, pymc_rdp.distributions.ops;"
        "assert 'jax' not in sys.modules, 'jax imported';",
        # ArviZ places a lazy module under sys.modules["jax"]; reading its spec imports jax
        "import sys, arviz, pymc_rdp, pymc_rdp.distributions, pymc_rdp.models.network_posterior;"
        "assert type(sys.modules['jax']).__name__ == '_LazyModule', type(sys.modules['jax']);"
        "assert 'jaxlib' not in sys.modules, 'jax imported';",
    ],
    ids=["alone", "after-arviz"],
)
def test_importing_the_package_does_not_import_jax(imports: str) -> None:
    code = imports + _REGISTERED
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
