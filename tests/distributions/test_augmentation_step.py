"""Data augmentation as a PyMC step, an unknown number of records, and the network's default.

Oracles: the enumeration of the latent tables in ``test_distributions_data_augmentation`` (a
fixed N), and here the same enumeration summed over N = 0..N_max under a prior on N.
"""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytest
from scipy.special import gammaln
from test_distributions_data_augmentation import (
    STATES,
    STRUCTURE,
    _compositions,
    _ess,
    _family_tables,
    _gaussian_releases,
    _log_eta,
    exact_moments,
    max_z,
)

import pymc_rdp as pmr
from pymc_rdp.distributions.data_augmentation import DataAugmentation
from pymc_rdp.privacy.mechanisms import GaussianMechanism, LaplaceMechanism, UnsafeNoiseSeed

N = 5


@pytest.fixture(scope="module")
def exact_gaussian():
    return exact_moments(STRUCTURE, STATES, _gaussian_releases(), N)


def _draws_z(draws: np.ndarray, m1: np.ndarray, m2: np.ndarray) -> float:
    """Largest |z| of first and second moments of (chain, draw, ...) draws."""
    sd1 = np.sqrt(np.maximum(m2 - m1**2, 1e-12))
    z1 = (draws.mean(axis=(0, 1)) - m1) / (sd1 / np.sqrt(_ess(draws)))
    sq = draws**2
    sd2 = sq.reshape(-1, *sq.shape[2:]).std(axis=0) + 1e-12
    z2 = (sq.mean(axis=(0, 1)) - m2) / (sd2 / np.sqrt(_ess(sq)))
    return float(max(np.max(np.abs(z1)), np.max(np.abs(z2))))


# ------------------------------------------------------------------------- the PyMC step


def test_pm_sample_with_the_step_gives_the_exact_posterior(exact_gaussian):
    da = DataAugmentation(STRUCTURE, STATES, _gaussian_releases(), N)
    with da.build_model():
        idata = pm.sample(
            draws=3000,
            tune=100,
            chains=2,
            cores=1,
            step=da,
            random_seed=5,
            progressbar=False,
            compute_convergence_checks=False,
        )
    post = idata["posterior"]
    assert post["c_cpt"].dims == ("chain", "draw", "c_cell")  # the flat CPT layout
    assert list(post["c_cell"].values) == da.coords["c_cell"]
    assert max_z(idata, exact_gaussian) < 4.5
    for move in da.moves:  # the default schedule
        rates = idata["sample_stats"][f"accept_{move}"].to_numpy()
        assert rates.shape == (2, 3000) and 0 < rates.mean() < 1, move


@pytest.mark.slow  # two worker processes each compile the kernels: about 2 minutes
def test_the_step_and_the_fast_path_agree_on_a_network_model():
    """On a fitted network's own model (whole-family variables for nodes with parents, flat CPTs
    for roots), two worker processes: the same posterior as ``DataAugmentation.sample``."""
    from test_distributions_data_augmentation import _frame

    bn = pmr.BayesianNetwork(STRUCTURE, states=STATES)
    bn.fit(
        _frame(200, 3),
        mechanism="gaussian",
        epsilon=2.0,
        delta=1e-6,
        public_total=200,
        noise_source=UnsafeNoiseSeed(4),
    )
    assert [v.name for v in bn.model.free_RVs] == ["a_cpt", "b_family", "c_family"]
    da = DataAugmentation.from_network(bn)
    with bn.model:
        idata = pmr.sample(
            800,
            tune=200,
            chains=2,
            cores=2,
            step=da,
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
            accountant=bn.accountant,
        )
    fast = da.sample(draws=3000, tune=200, chains=2, random_seed=2)
    assert pmr.read_ledger(idata)["accountant"].to_json() == bn.accountant.to_json()
    for v in bn.nodes:
        a = bn.cpt_draws(idata, v)
        b = bn.cpt_draws(fast, v)
        np.testing.assert_allclose(a.sum(axis=-1), 1.0, atol=1e-9)
        ess_a = _ess(idata["posterior"][f"{v}_cpt"].to_numpy()).reshape(a.shape[1:])
        ess_b = _ess(fast["posterior"][f"{v}_cpt"].to_numpy()).reshape(b.shape[1:])
        se = np.sqrt(a.var(axis=0) / ess_a + b.var(axis=0) / ess_b)
        assert np.max(np.abs(a.mean(axis=0) - b.mean(axis=0)) / (se + 1e-9)) < 5.0, v
    # the two chains ran in separate processes from separate records: they differ
    c = idata["posterior"]["b_cpt"].to_numpy()
    assert not np.allclose(c[0], c[1])


def test_step_reset_per_chain_and_sweeps():
    da = DataAugmentation(STRUCTURE, STATES, _gaussian_releases(), N, sweeps=3)
    with da.build_model() as model:
        point = model.initial_point()
        da.setup_chain(np.random.default_rng(0), 0, 5)
        first = da._x.copy()
        new, stats = da.step(point)
        assert set(new) == set(point) and stats[0].keys() == {f"accept_{m}" for m in da.moves}
        da.setup_chain(np.random.default_rng(1), 0, 5)
        assert not np.array_equal(first, da._x)
    assert DataAugmentation.competence(None, True) == pm.step_methods.compound.Competence(0)


def test_step_is_not_silently_replaced_by_nuts():
    """Every CPT variable is claimed by the step: PyMC assigns nothing else."""
    from pymc.sampling.mcmc import assign_step_methods

    da = DataAugmentation(STRUCTURE, STATES, _gaussian_releases(), N)
    with da.build_model() as model:
        provided, assigned = assign_step_methods(model, step=da)
    assert provided == [da] and not any(assigned.values())
    assert {v.name for v in da.vars} == {v.name for v in model.value_vars}


# ------------------------------------------------------------------------ unknown N


def exact_unknown_n(structure, states, releases, log_prior_n, alpha0=1.0):
    """Exact E[θ], E[θ²] per CPT entry and the posterior of N, summing over N = 0..N_max."""
    cards = {v: len(s) for v, s in states.items()}
    j = int(np.prod(list(cards.values())))
    logw, first, second, ns = [], [], [], []
    for n, lp in enumerate(log_prior_n):
        if not np.isfinite(lp):
            continue
        for joint in _compositions(n, j):
            tables = _family_tables(joint, structure, cards)
            lw = lp + gammaln(n + 1) - np.sum(gammaln(joint + 1))
            m1, m2 = {}, {}
            for v, s in tables.items():
                a = alpha0 + s
                big = a.sum(axis=1, keepdims=True)
                lw += (
                    np.sum(gammaln(a))
                    - np.sum(gammaln(big))
                    - s.shape[0] * (cards[v] * gammaln(alpha0) - gammaln(cards[v] * alpha0))
                )
                m1[v] = a / big
                m2[v] = a * (a + 1) / (big * (big + 1))
            logw.append(lw + _log_eta(tables, releases))
            first.append(m1)
            second.append(m2)
            ns.append(n)
    w = np.exp(np.array(logw) - np.max(logw))
    w /= w.sum()
    moments = {
        v: (
            sum(wi * f[v] for wi, f in zip(w, first, strict=True)),
            sum(wi * s[v] for wi, s in zip(w, second, strict=True)),
        )
        for v in structure
    }
    p_n = np.bincount(np.array(ns), weights=w, minlength=len(log_prior_n))
    return moments, p_n


SMALL = {"a": [], "b": ["a"]}
SMALL_STATES = {"a": [0, 1], "b": [0, 1]}


def _small_releases(mech):
    return {"a": (np.array([2.6, 1.2]), mech), "b": (np.array([1.4, 0.9, -0.3, 1.8]), mech)}


@pytest.mark.parametrize(
    "mech",
    [GaussianMechanism(0.9, math.sqrt(2)), LaplaceMechanism(0.8, 1.0)],
    ids=["gaussian", "laplace"],
)
def test_unknown_n_matches_enumeration_over_n(mech):
    prior = np.array([0.5, 1, 1, 1, 1, 1, 1, 1, 0.5])  # N = 0..8, not flat: the ratio matters
    releases = _small_releases(mech)
    da = DataAugmentation(SMALL, SMALL_STATES, releases, None, n_prior=prior, birth_death_moves=4)
    idata = da.sample(draws=6000, tune=200, chains=2, random_seed=7)
    moments, p_n = exact_unknown_n(SMALL, SMALL_STATES, releases, np.log(prior / prior.sum()))
    assert max_z(idata, moments) < 4.5
    n_draws = idata["posterior"]["n_records"].to_numpy()
    mean_n = float(np.sum(p_n * np.arange(p_n.size)))
    second_n = float(np.sum(p_n * np.arange(p_n.size) ** 2))
    assert _draws_z(n_draws.astype(float), np.array(mean_n), np.array(second_n)) < 4.5
    # the releases do inform N: its posterior is not the prior
    assert abs(mean_n - 4.0) > 0.3
    freq = np.bincount(n_draws.reshape(-1), minlength=p_n.size) / n_draws.size
    assert np.max(np.abs(freq - p_n)) < 0.03


def test_unknown_n_comparison_rejects_a_wrong_prior_ratio():
    """The same comparison fails when the sampler ignores the prior on N (flat instead)."""
    prior = np.array([0.02, 0.05, 0.1, 0.2, 3.0, 0.2, 0.1, 0.05, 0.02])
    releases = _small_releases(GaussianMechanism(0.9, math.sqrt(2)))
    wrong = DataAugmentation(
        SMALL, SMALL_STATES, releases, None, n_prior=np.ones(9), birth_death_moves=4
    )
    idata = wrong.sample(draws=4000, tune=200, chains=2, random_seed=7)
    _, p_n = exact_unknown_n(SMALL, SMALL_STATES, releases, np.log(prior / prior.sum()))
    freq = np.bincount(idata["posterior"]["n_records"].to_numpy().reshape(-1), minlength=9)
    assert np.max(np.abs(freq / freq.sum() - p_n)) > 0.1


def test_unknown_n_through_pm_sample():
    releases = _small_releases(GaussianMechanism(0.9, math.sqrt(2)))
    da = DataAugmentation(SMALL, SMALL_STATES, releases, None, n_prior=np.ones(9))
    with da.build_model():
        idata = pm.sample(
            draws=200, tune=20, chains=2, cores=1, step=da, random_seed=1, progressbar=False
        )
    n = idata["sample_stats"]["n_records"].to_numpy()
    assert n.shape == (2, 200) and n.min() >= 0 and n.max() <= 8 and len(np.unique(n)) > 1


def test_from_network_with_a_private_n_samples_it():
    from test_distributions_data_augmentation import _frame

    bn = pmr.BayesianNetwork(STRUCTURE, states=STATES)
    bn.fit(
        _frame(150, 1),
        mechanism="gaussian",
        epsilon=4.0,
        delta=1e-6,
        neighbours="add-remove",
        noise_source=UnsafeNoiseSeed(2),
    )
    spent = bn.accountant.rdp().copy()
    idata = bn.sample(draws=400, tune=100, chains=2, random_seed=1)  # the default sampler
    np.testing.assert_array_equal(bn.accountant.rdp(), spent)  # nothing more is charged
    n = idata["posterior"]["n_records"].to_numpy()
    totals = [float(np.sum(r.values)) for r in bn.releases.values()]
    sd = bn.family_mechanism.sigma * math.sqrt(12) / math.sqrt(len(totals))
    assert abs(n.mean() - np.mean(totals)) < 4 * sd + 5
    assert n.std() > 0


# ---------------------------------------------------------------- the network's default


@pytest.mark.parametrize("mechanism", ["gaussian", "laplace", "dirichlet"])
def test_network_samples_by_augmentation_by_default(mechanism):
    from test_distributions_data_augmentation import _frame

    bn = pmr.BayesianNetwork(STRUCTURE, states=STATES)
    bn.fit(
        _frame(120, 5),
        mechanism=mechanism,
        epsilon=2.0,
        delta=1e-6,
        public_total=120,
        noise_source=UnsafeNoiseSeed(1),
    )
    released = bn.cpts if mechanism == "dirichlet" else None
    ledger = bn.accountant.to_json()
    idata = bn.sample(draws=100, tune=50, chains=2, random_seed=0)
    assert idata.attrs["sampler"] == "data_augmentation"
    assert idata["posterior"].sizes["draw"] == 100 and idata["posterior"].sizes["chain"] == 2
    assert pmr.read_ledger(idata)["accountant"].to_json() == ledger == bn.accountant.to_json()
    if mechanism == "dirichlet":  # the point release stays; the posterior is the analyst's
        for v in bn.nodes:
            np.testing.assert_array_equal(bn.cpts[v], released[v])
    else:
        for v in bn.nodes:
            np.testing.assert_allclose(bn.cpts[v], bn.cpt_draws(idata, v).mean(axis=0))


def test_network_sampling_takes_a_time_limit():
    """``time_limit`` reaches the sampler, not ``from_network``: the chain keeps one draw, and
    the warning names the analyst's line."""
    from test_distributions_data_augmentation import _frame

    bn = pmr.BayesianNetwork(STRUCTURE, states=STATES)
    bn.fit(_frame(80, 2), mechanism="gaussian", epsilon=2.0, delta=1e-6, public_total=80)
    with pytest.warns(UserWarning, match="cut to 1 draw of the 50") as caught:
        idata = bn.sample(draws=50, tune=5, chains=1, random_seed=0, time_limit=1e-9)
    assert idata["posterior"].sizes["draw"] == 1 and idata.attrs["time_limit"] == 1e-9
    # the warning points at this call, not at the package's own call of the sampler
    assert [w.filename for w in caught] == [__file__]


def test_network_sampler_choices_are_checked():
    from test_distributions_data_augmentation import _frame

    bn = pmr.BayesianNetwork(STRUCTURE, states=STATES).fit(_frame(50, 1), mechanism="none")
    with pytest.raises(ValueError, match="sampler must be one of"):
        bn.sample(sampler="gibbs")
    with pytest.raises(ValueError, match="sampler='augmentation' needs a noise-aware fit"):
        bn.sample(sampler="augmentation")
    dirichlet = pmr.BayesianNetwork(STRUCTURE, states=STATES).fit(
        _frame(50, 1), mechanism="dirichlet", epsilon=1.0, delta=1e-6
    )
    with pytest.raises(ValueError, match="Dirichlet release carries no total"):
        dirichlet.sample()
    idata = dirichlet.sample(draws=20, tune=10, chains=1, n_prior=np.ones(101))
    assert "n_records" in idata["posterior"].data_vars


# ------------------------------------------------------------------------ bad input


def test_model_with_other_free_variables_is_refused():
    da = DataAugmentation(STRUCTURE, STATES, _gaussian_releases(), N)
    with da.build_model():
        pm.Normal("income", 0.0, 1.0)  # a continuous node
        with pytest.raises(ValueError, match=r"free variables \['income'\] are not CPTs"):
            da.bind()


def test_model_without_a_node_or_of_the_wrong_shape_is_refused():
    da = DataAugmentation(STRUCTURE, STATES, _gaussian_releases(), N)
    with pm.Model():
        pm.Dirichlet("a_cpt", a=np.ones(2))
        with pytest.raises(ValueError, match="no free variable b_cpt or b_family for node 'b'"):
            da.bind()
    with pm.Model():
        pm.Dirichlet("a_cpt", a=np.ones(2))
        pm.Dirichlet("b_cpt", a=np.ones(3))
        pm.Dirichlet("c_cpt", a=np.ones(12))
        with pytest.raises(ValueError, match=r"b_cpt has shape \(3,\).*= 6 cells"):
            da.bind()


def test_step_outside_a_model_is_refused():
    da = DataAugmentation(STRUCTURE, STATES, _gaussian_releases(), N)
    with pytest.raises(TypeError, match="model"):
        da.vars  # noqa: B018


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n_records": None, "n_prior": np.ones(9), "moves": ("site",)}, ValueError, "unknown N"),
        ({"n_records": 5, "n_prior": np.ones(9)}, ValueError, "not both"),
        ({"n_records": None, "n_prior": np.ones((2, 2))}, ValueError, "n_prior"),
        ({"n_records": None, "n_prior": [1.0, 0.0]}, ValueError, "no mass"),
        ({"n_records": 5, "sweeps": 0}, ValueError, "sweeps"),
        ({"n_records": 5, "birth_death_moves": 0}, ValueError, "birth_death_moves"),
    ],
)
def test_bad_step_arguments(kwargs, error, match):
    n = kwargs.pop("n_records")
    with pytest.raises(error, match=match):
        DataAugmentation(STRUCTURE, STATES, _gaussian_releases(), n, **kwargs)


def test_continuous_node_states_are_refused():
    states = dict(STATES, c=1.5)
    with pytest.raises(TypeError, match=r"\['c'\] are not categorical"):
        DataAugmentation(STRUCTURE, states, _gaussian_releases(), N)


def test_release_shape_disagreeing_with_the_structure_is_refused_before_sampling():
    releases = _gaussian_releases()
    releases["b"] = (np.zeros(4), releases["b"][1])  # b has 2 configurations × 3 states
    with pytest.raises(ValueError, match=r"releases\['b'\].*2 parent configurations × 3"):
        DataAugmentation(STRUCTURE, STATES, releases, N)
