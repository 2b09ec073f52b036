"""BayesianNetwork.sample(sampler="nuts", nuts_sampler=...): the engine reaches pm.sample."""

from __future__ import annotations

import importlib.util

import numpy as np
import pandas as pd
import pytest

from pymc_rdp.models import network_posterior
from pymc_rdp.models.bayesian_network import BayesianNetwork
from pymc_rdp.privacy.mechanisms import UnsafeNoiseSeed

STRUCTURE = {"a": [], "b": ["a"]}


def _fit(mechanism: str = "gaussian") -> BayesianNetwork:
    rng = np.random.default_rng(4)
    df = pd.DataFrame({v: rng.integers(0, 2, size=300) for v in STRUCTURE})
    bn = BayesianNetwork(STRUCTURE, states={v: [0, 1] for v in STRUCTURE})
    if mechanism == "none":
        return bn.fit(df, mechanism="none")
    return bn.fit(df, mechanism=mechanism, epsilon=2.0, order=5.0, noise_source=UnsafeNoiseSeed(1))


def test_unknown_engine_is_refused_before_sampling():
    bn = _fit()
    with pytest.raises(ValueError, match="nuts_sampler must be one of"):
        bn.sample(draws=10, tune=10, sampler="nuts", nuts_sampler="stan")
    assert bn.idata is None


def test_missing_engine_names_the_install_command(monkeypatch):
    real = importlib.util.find_spec

    def without(name, *args):
        return None if name in ("numpyro", "nutpie", "blackjax") else real(name, *args)

    monkeypatch.setattr(network_posterior.importlib.util, "find_spec", without)
    bn = _fit()
    with pytest.raises(ImportError, match=r"needs numpyro, .*pip install 'pymc-rdp\[jax\]'$"):
        bn.sample(draws=10, tune=10, sampler="nuts", nuts_sampler="numpyro")
    with pytest.raises(ImportError, match=r"needs nutpie, .*pip install 'pymc-rdp\[nutpie\]'$"):
        bn.sample(draws=10, tune=10, sampler="nuts", nuts_sampler="nutpie")
    with pytest.raises(ImportError, match=r"needs blackjax, .*pip install blackjax$"):
        network_posterior.check_nuts_engine("blackjax")
    assert bn.idata is None
    network_posterior.check_nuts_engine("pymc")  # nothing to install
    network_posterior.check_nuts_engine(None)


def test_engine_without_nuts_is_refused():
    with pytest.raises(ValueError, match="nuts_sampler applies to NUTS"):
        _fit().sample(draws=10, tune=10, nuts_sampler="pymc")  # data augmentation
    with pytest.raises(ValueError, match="nuts_sampler applies to NUTS"):
        _fit("none").sample(draws=10, tune=10, sampler="nuts", nuts_sampler="pymc")


@pytest.mark.skipif(
    importlib.util.find_spec("numpyro") is None, reason="numpyro is not installed (extra 'jax')"
)
def test_numpyro_samples_the_noise_aware_model_with_the_ledger():
    bn = _fit()
    idata = bn.sample(
        draws=100,
        tune=100,
        chains=1,
        random_seed=3,
        sampler="nuts",
        nuts_sampler="numpyro",
        progressbar=False,
        compute_convergence_checks=False,
    )
    post = idata["posterior"]
    assert post.attrs.get("inference_library") == "numpyro"
    assert post.sizes["draw"] == 100 and post.sizes["chain"] == 1
    draws = bn.cpt_draws(idata, "b")
    assert draws.shape == (100, 2, 2) and np.allclose(draws.sum(axis=-1), 1.0)
    from pymc_rdp.distributions import read_ledger

    assert read_ledger(idata)["accountant"] is not None


class _Called(Exception):
    pass


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="jax is not installed")
def test_nutpie_compiles_through_jax_unless_told_otherwise(monkeypatch):
    import pymc as pm

    seen = []

    def fake_sample(**kwargs):
        seen.append(kwargs)
        raise _Called

    monkeypatch.setattr(pm, "sample", fake_sample)
    monkeypatch.setattr(network_posterior, "check_nuts_engine", lambda engine: None)
    bn = _fit()
    for extra in (
        {},
        {"compile_kwargs": {"mode": "JAX"}},
        {"backend": "numba"},
        {"compile_kwargs": {"gradient_backend": "pytensor"}},
    ):
        with pytest.raises(_Called):
            bn.sample(draws=10, tune=10, sampler="nuts", nuts_sampler="nutpie", **extra)
    assert seen[0]["backend"] == "jax"
    assert seen[0]["compile_kwargs"] == {"gradient_backend": "jax"}
    assert seen[1]["compile_kwargs"] == {"gradient_backend": "jax", "mode": "JAX"}
    assert seen[2]["backend"] == "numba" and "compile_kwargs" not in seen[2]
    assert seen[3]["compile_kwargs"] == {"gradient_backend": "pytensor"}
    with pytest.raises(_Called):
        bn.sample(draws=10, tune=10, sampler="nuts", nuts_sampler="numpyro")
    assert "backend" not in seen[4]
