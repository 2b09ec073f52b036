"""Tests of the reference log-ratio transform of the simplex."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pymc.logprob.transforms import Transform
from scipy import stats

from pymc_rdp.distributions.simplex_transform import ReferenceLogRatio


def _fns(reference: int):
    tr = ReferenceLogRatio(reference)
    z = pt.dvector("z")
    x = pt.dvector("x")
    backward = pytensor.function([z], tr.backward(z))
    forward = pytensor.function([x], tr.forward(x))
    ljd = pytensor.function([z], tr.log_jac_det(z))
    # PyTensor's generic determinant of the Jacobian of the first K-1 simplex coordinates
    generic = pytensor.function([z], Transform.log_jac_det(_Drop(tr), z))
    return backward, forward, ljd, generic


class _Drop(Transform):
    """``z -> x[:-1]`` (the simplex's free coordinates), for the generic Jacobian."""

    ndim_supp = 1

    def __init__(self, tr):
        self.tr = tr

    def forward(self, value, *inputs):  # pragma: no cover - unused
        raise NotImplementedError

    def backward(self, value, *inputs):
        return self.tr.backward(value)[:-1]


_CACHE: dict = {}


@settings(max_examples=25, deadline=None)
@given(k=st.integers(2, 7), data=st.data())
def test_round_trip_and_jacobian(k, data):
    ref = data.draw(st.integers(0, k - 2))  # the dropped coordinate must not be the reference
    key = ref
    if key not in _CACHE:
        _CACHE[key] = _fns(ref)
    backward, forward, ljd, generic = _CACHE[key]
    z = np.array(data.draw(st.lists(st.floats(-8, 8), min_size=k - 1, max_size=k - 1)))
    x = backward(z)
    assert x.shape == (k,)
    assert x.sum() == pytest.approx(1.0)
    assert x[ref] == pytest.approx(1.0 / (1.0 + np.exp(z).sum()))
    np.testing.assert_allclose(forward(x), z, atol=1e-9)
    np.testing.assert_allclose(ljd(z), generic(z), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(ljd(z), np.log(x).sum(), rtol=1e-12)


def test_dirichlet_with_the_transform_has_the_dirichlet_density():
    a = np.array([0.5, 2.0, 1.0, 3.0])
    with pm.Model() as model:
        pm.Dirichlet("x", a=a, default_transform=ReferenceLogRatio(3))
    logp = model.compile_logp(jacobian=True)
    name = model.rvs_to_values[model["x"]].name
    assert name == "x_reference_log_ratio__"
    rng = np.random.default_rng(0)
    for _ in range(5):
        z = rng.normal(size=3)
        x = np.exp(np.append(z, 0.0))
        x /= x.sum()
        expected = stats.dirichlet.logpdf(x, a) + np.log(x).sum()
        assert logp({name: z}) == pytest.approx(expected, rel=1e-10)


def test_nuts_recovers_dirichlet_moments():
    a = np.array([0.3, 1.0, 6.0, 2.0, 0.7])
    with pm.Model():
        pm.Dirichlet("x", a=a, default_transform=ReferenceLogRatio(2))
        idata = pm.sample(
            500,
            tune=300,
            chains=2,
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
            nuts_sampler="pymc",
        )
    draws = idata["posterior"]["x"].to_numpy().reshape(-1, 5)
    mean = a / a.sum()
    sd = np.sqrt(mean * (1 - mean) / (a.sum() + 1))
    # 1,000 draws with an ESS of a few hundred: within 4 standard errors of an ESS of 200
    assert np.all(np.abs(draws.mean(axis=0) - mean) <= 4 * sd / np.sqrt(200))
    np.testing.assert_allclose(draws.std(axis=0), sd, rtol=0.15)


def test_reference_must_be_an_int():
    with pytest.raises(TypeError, match="reference"):
        ReferenceLogRatio(1.5)
    assert ReferenceLogRatio(2) == ReferenceLogRatio(2) != ReferenceLogRatio(1)
