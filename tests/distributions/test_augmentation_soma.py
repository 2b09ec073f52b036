"""Single-offer-multiple-attempts moves: their bookkeeping, their subsets, and their acceptance
with one attempt (the record move's)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymc_rdp.distributions import _augmentation_kernels as kernels
from pymc_rdp.distributions import augmentation_soma as soma
from pymc_rdp.distributions.data_augmentation import RECORD_DTYPE, DataAugmentation
from pymc_rdp.privacy.mechanisms import GaussianMechanism

STRUCTURE = {"a": [], "b": ["a"], "c": ["a", "b"]}
STATES = {"a": [0, 1, 2], "b": [0, 1], "c": [0, 1, 2]}
N = 30


def _sampler(sigma: float) -> DataAugmentation:
    """Gaussian tables of noise sd ``sigma`` (sensitivity √2: a record changes two cells)."""
    g = GaussianMechanism(sigma, math.sqrt(2))
    rng = np.random.default_rng(1)
    releases = {
        "a": (rng.normal(N / 3, 2, 3), g),
        "b": (rng.normal(N / 6, 2, (3, 2)), g),
        "c": (rng.normal(N / 18, 2, (6, 3)), g),
    }
    return DataAugmentation(STRUCTURE, STATES, releases, N, moves=("soma",))


def _state(da: DataAugmentation, seed: int):
    rng = np.random.default_rng(seed)
    x = np.column_stack([rng.integers(0, len(STATES[v]), N) for v in da.nodes]).astype(RECORD_DTYPE)
    net = da._net
    cell_n = np.zeros(int(net[4][-1]), dtype=np.int64)
    row_n = np.zeros(int(net[5][-1]), dtype=np.int64)
    kernels.tabulate(x, net, cell_n, row_n)
    theta = np.empty(cell_n.shape[0])
    kernels.draw_theta(cell_n, da._alpha, net, theta, np.empty(3))
    return x, cell_n, row_n, theta


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**16), attempts=st.integers(1, 40), offers=st.integers(1, 60))
def test_tables_follow_the_records_and_subsets_stay_a_permutation(seed, attempts, offers):
    da = _sampler(1.0)
    x, cell_n, row_n, theta = _state(da, seed)
    perm = np.arange(N, dtype=np.int64)
    kernels.seed(seed)
    accepted = soma.soma_sweep(x, theta, offers, attempts, perm, da._net, da._obs, cell_n, row_n)
    assert 0 <= accepted <= offers
    expect_cell = np.zeros_like(cell_n)
    expect_row = np.zeros_like(row_n)
    kernels.tabulate(x, da._net, expect_cell, expect_row)
    np.testing.assert_array_equal(cell_n, expect_cell)
    np.testing.assert_array_equal(row_n, expect_row)
    assert sorted(perm.tolist()) == list(range(N))


@pytest.mark.parametrize("attempts", [1, 5])
def test_one_attempt_is_the_record_move(attempts):
    """With one attempt the acceptance rate is the record move's (same θ, same target); with
    five, on tables of small noise where the record move is often refused, offers are accepted
    more often (an offer that fits badly in place of one record can fit in place of another)."""
    da = _sampler(0.7)
    rates = {}
    for name in ("record", "soma"):
        x, cell_n, row_n, theta = _state(da, 3)
        kernels.seed(5)
        if name == "record":
            acc = sum(
                kernels.record_sweep(x, theta, da._net, da._obs, cell_n, row_n) for _ in range(1000)
            )
        else:
            perm = np.arange(N, dtype=np.int64)
            acc = sum(
                soma.soma_sweep(x, theta, N, attempts, perm, da._net, da._obs, cell_n, row_n)
                for _ in range(1000)
            )
        rates[name] = acc / (1000 * N)
    if attempts == 1:
        assert abs(rates["soma"] - rates["record"]) < 0.04
    else:
        assert rates["soma"] > rates["record"] + 0.2
