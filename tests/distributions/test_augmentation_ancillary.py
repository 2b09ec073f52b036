"""The ancillary moves: the records' uniforms invert to the records, a sweep keeps records,
tables, CPTs and uniforms consistent, and the move samples the exact posterior (enumeration,
with a prior whose term does not vanish)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_distributions_data_augmentation import STATES as STATES_SMALL
from test_distributions_data_augmentation import STRUCTURE as STRUCTURE_SMALL
from test_distributions_data_augmentation import N as N_SMALL
from test_distributions_data_augmentation import _gaussian_releases, exact_moments, max_z

from pymc_rdp.distributions import _augmentation_kernels as kernels
from pymc_rdp.distributions import augmentation_ancillary as ancillary
from pymc_rdp.distributions.augmentation_subtree import descendants
from pymc_rdp.distributions.data_augmentation import DataAugmentation
from pymc_rdp.privacy.mechanisms import GaussianMechanism

STRUCTURE = {"a": [], "b": ["a"], "c": ["a", "b"], "d": ["c"]}
STATES = {"a": [0, 1, 2], "b": [0, 1], "c": [0, 1, 2, 3], "d": [0, 1]}
N = 60


def _sampler(moves=("ancillary",)) -> DataAugmentation:
    g = GaussianMechanism(1.0, math.sqrt(2))
    rng = np.random.default_rng(0)
    releases = {
        "a": (rng.normal(N / 3, 2, 3), g),
        "b": (rng.normal(N / 6, 2, (3, 2)), g),
        "c": (rng.normal(N / 24, 2, (6, 4)), g),
        "d": (rng.normal(N / 8, 2, (4, 2)), g),
    }
    return DataAugmentation(STRUCTURE, STATES, releases, N, moves=moves)


def _state(da, seed):
    """Records forward-sampled from the initial CPTs, their tables, θ | x and u | x, θ."""
    rng = np.random.default_rng(seed)
    kernels.seed(seed)
    x = da._records(rng)
    net = da._net
    cell_n = np.zeros(int(net[4][-1]), dtype=np.int64)
    row_n = np.zeros(int(net[5][-1]), dtype=np.int64)
    kernels.tabulate(x, net, cell_n, row_n)
    theta = np.empty(cell_n.size)
    kernels.draw_theta(cell_n, da._alpha, net, theta, np.empty(int(net[0].max())))
    u = np.empty(x.shape)
    ancillary.draw_uniforms(x, theta, net, u)
    return x, cell_n, row_n, theta, u


def _inverted(da, x, theta, u):
    """Every record's state recomputed from its uniform under θ of its configuration."""
    card, n_par, par, stride, cell_off = da._net[:5]
    out = np.empty_like(x)
    for j in range(x.shape[0]):
        for w in range(x.shape[1]):
            c = sum(int(x[j, par[w, p]]) * int(stride[w, p]) for p in range(n_par[w]))
            base = int(cell_off[w]) + c * int(card[w])
            out[j, w] = ancillary._inverse_cdf(theta, base, int(card[w]), u[j, w])
    return out


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_uniforms_invert_to_the_records(seed):
    da = _sampler()
    x, _, _, theta, u = _state(da, seed)
    assert np.all((u >= 0.0) & (u < 1.0))
    np.testing.assert_array_equal(_inverted(da, x, theta, u), x)


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 30))
def test_a_sweep_keeps_records_tables_cpts_and_uniforms_consistent(seed, step):
    da = _sampler()
    x, cell_n, row_n, theta, u = _state(da, seed)
    net, obs = da._net, da._obs
    desc, n_desc = descendants({0: [1, 2], 1: [2], 2: [3]}, 4)
    accepted = proposed = 0
    for v in range(4):
        a, p = ancillary.ancillary_sweep(
            theta, u, v, 3, step, da._alpha, desc, n_desc, x, net, obs, cell_n, row_n
        )
        accepted += a
        proposed += p
    assert proposed > 0
    # the tables kept move by move are those of the final records
    fresh_cells = np.zeros_like(cell_n)
    fresh_rows = np.zeros_like(row_n)
    kernels.tabulate(x, net, fresh_cells, fresh_rows)
    np.testing.assert_array_equal(cell_n, fresh_cells)
    np.testing.assert_array_equal(row_n, fresh_rows)
    # CPT rows stay on the simplex, and the records are the inverse CDF of their uniforms
    rows = theta.reshape(-1)
    assert np.all(rows > 0.0)
    for i, v in enumerate(da.nodes):
        block = rows[net[4][i] : net[4][i + 1]].reshape(-1, da.cards[v])
        np.testing.assert_allclose(block.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_array_equal(_inverted(da, x, theta, u), x)


def test_an_ancillary_move_changes_the_records():
    """A chain of ancillary moves alone moves the records (the move is not the identity)."""
    da = _sampler()
    _, stats, x = da.run_chain(draws=30, tune=10, seed=3)
    assert 0.05 < stats["accept_ancillary"].mean() < 0.95
    start = da._records(np.random.default_rng(3))
    assert not np.array_equal(start, x)


@pytest.mark.parametrize("alpha0", [0.5, 2.0])
def test_ancillary_moves_match_enumeration_with_a_prior_term(alpha0):
    """α₀ ≠ 1: the prior's ratio enters the acceptance (module notes)."""
    exact = exact_moments(STRUCTURE_SMALL, STATES_SMALL, _gaussian_releases(), N_SMALL, alpha0)
    da = DataAugmentation(
        STRUCTURE_SMALL,
        STATES_SMALL,
        _gaussian_releases(),
        N_SMALL,
        alpha0=alpha0,
        moves=("ancillary",),
        block_size=3,
    )
    idata = da.sample(draws=4000, tune=200, chains=2, random_seed=11)
    assert max_z(idata, exact) < 4.5
