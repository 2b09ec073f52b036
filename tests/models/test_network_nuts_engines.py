"""BayesianNetwork.sample(sampler="nuts", nuts_sampler=...): the engine reaches pm.sample."""

from __future__ import annotations

import importlib.util
import multiprocessing
import os
import subprocess
import sys

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


def _cores_given(monkeypatch, **options) -> int | None:
    """The ``cores`` that bn.sample(sampler="nuts") hands to pm.sample (None: PyMC's default)."""
    import pymc as pm

    seen = []

    def fake_sample(**kwargs):
        seen.append(kwargs)
        raise _Called

    monkeypatch.setattr(pm, "sample", fake_sample)
    with pytest.raises(_Called):
        _fit().sample(draws=10, tune=10, sampler="nuts", **options)
    return seen[0].get("cores")


def test_nuts_chains_get_a_process_each_where_pymc_forks(monkeypatch):
    monkeypatch.delitem(sys.modules, "jaxlib", raising=False)
    monkeypatch.setattr(network_posterior.importlib.util, "find_spec", lambda name: None)
    monkeypatch.setattr(network_posterior.multiprocessing, "get_start_method", lambda **kw: None)
    monkeypatch.setattr(
        network_posterior.multiprocessing, "get_all_start_methods", lambda: ["fork"]
    )
    monkeypatch.setattr(network_posterior.os, "cpu_count", lambda: 2)
    assert _cores_given(monkeypatch, chains=2) == 2
    assert _cores_given(monkeypatch, chains=3) == 2  # no more than the CPUs
    assert _cores_given(monkeypatch, chains=2, nuts_sampler="pymc") == 2
    # left to PyMC: the caller's choice, one chain, another engine or start method, JAX loaded
    assert _cores_given(monkeypatch, chains=2, cores=1) == 1
    assert _cores_given(monkeypatch, chains=2, mp_ctx="spawn") is None
    assert _cores_given(monkeypatch, chains=1) is None
    monkeypatch.setattr(network_posterior, "check_nuts_engine", lambda engine: None)
    assert _cores_given(monkeypatch, chains=2, nuts_sampler="numpyro") is None
    monkeypatch.setattr(network_posterior.multiprocessing, "get_start_method", lambda **kw: "spawn")
    assert _cores_given(monkeypatch, chains=2) is None
    monkeypatch.setattr(network_posterior.multiprocessing, "get_start_method", lambda **kw: None)
    monkeypatch.setattr(
        network_posterior.multiprocessing, "get_all_start_methods", lambda: ["spawn"]
    )
    assert _cores_given(monkeypatch, chains=2) is None
    monkeypatch.setattr(
        network_posterior.multiprocessing, "get_all_start_methods", lambda: ["fork"]
    )
    monkeypatch.setitem(sys.modules, "jaxlib", object())
    assert _cores_given(monkeypatch, chains=2) is None


def test_nuts_without_a_nutpie_default_leaves_pymc_to_choose_when_nutpie_is_installed(monkeypatch):
    monkeypatch.delitem(sys.modules, "jaxlib", raising=False)
    monkeypatch.setattr(network_posterior.importlib.util, "find_spec", lambda name: object())
    monkeypatch.setattr(
        network_posterior.multiprocessing, "get_all_start_methods", lambda: ["fork"]
    )
    monkeypatch.setattr(network_posterior.multiprocessing, "get_start_method", lambda **kw: None)
    assert _cores_given(monkeypatch, chains=2) is None  # PyMC may sample with nutpie's threads


_IN_PROCESSES = """
import numpy as np, pandas as pd
from pymc_rdp.models import network_posterior
from pymc_rdp.models.bayesian_network import BayesianNetwork
from pymc_rdp.privacy.mechanisms import UnsafeNoiseSeed

if __name__ == "__main__":
    assert network_posterior.nuts_chain_cores(2, {}) == 2
    rng = np.random.default_rng(4)
    df = pd.DataFrame({v: rng.integers(0, 2, size=300) for v in "ab"})
    bn = BayesianNetwork({"a": [], "b": ["a"]}, states={v: [0, 1] for v in "ab"})
    bn.fit(df, mechanism="gaussian", epsilon=2.0, order=5.0, noise_source=UnsafeNoiseSeed(1))
    options = dict(draws=30, tune=30, chains=2, random_seed=5, sampler="nuts", progressbar=False)
    together = bn.cpt_draws(bn.sample(**options), "b")
    in_turn = bn.cpt_draws(bn.sample(cores=1, **options), "b")
    np.testing.assert_array_equal(together, in_turn)
    print("same draws")
"""


@pytest.mark.skipif(
    (os.cpu_count() or 1) < 2 or "fork" not in multiprocessing.get_all_start_methods(),
    reason="one CPU, or no fork start method on this platform",
)
def test_chains_in_processes_draw_what_chains_in_turn_draw(tmp_path):
    # a fresh interpreter: this one may have loaded JAX, which keeps the chains in turn
    script = tmp_path / "in_processes.py"
    script.write_text(_IN_PROCESSES)
    done = subprocess.run(
        [sys.executable, "-W", "error", str(script)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONWARNINGS": "error"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("same draws")
