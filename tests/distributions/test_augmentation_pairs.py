"""Pair moves: their weights against the whole collapsed target, their bookkeeping, and the
posterior they sample against enumeration, with windows that hold the whole range and with
windows that do not (the Metropolis–Hastings correction)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import test_augmentation_gibbs as gibbs_tests
from test_augmentation_gibbs import STATES, STRUCTURE, N, _tables
from test_distributions_data_augmentation import RELEASES, exact_moments, max_z
from test_distributions_data_augmentation import STATES as STATES_SMALL
from test_distributions_data_augmentation import STRUCTURE as STRUCTURE_SMALL
from test_distributions_data_augmentation import N as N_SMALL

from pymc_rdp.distributions import _augmentation_kernels as kernels
from pymc_rdp.distributions import augmentation_gibbs as gibbs
from pymc_rdp.distributions import augmentation_pairs as pairs
from pymc_rdp.distributions.data_augmentation import DataAugmentation
from pymc_rdp.privacy.mechanisms import DirichletMechanism


def _sampler(mechanism: str) -> DataAugmentation:
    """The heat-bath tests' network (a → b, a → c, b → c; N = 40) with Gaussian releases, or
    Dirichlet releases of the same tables."""
    if mechanism == "gaussian":
        return gibbs_tests._sampler()
    rng = np.random.default_rng(0)
    mech = DirichletMechanism(0.6, 1.5, math.sqrt(2), 1.0)
    releases = {
        "a": (rng.dirichlet(np.ones(3), 1), mech),
        "b": (rng.dirichlet(np.ones(2), 3), mech),
        "c": (rng.dirichlet(np.ones(3), 6), mech),
    }
    return DataAugmentation(STRUCTURE, STATES, releases, N, moves=("pair",))


@pytest.mark.parametrize("mechanism", ["gaussian", "dirichlet"])
@pytest.mark.parametrize(("v", "ka", "kb"), [(0, 0, 2), (0, 1, 0), (1, 1, 0), (2, 2, 1)])
def test_pair_weights_are_the_target_at_every_split(mechanism, v, ka, kb):
    """``log binom(T, m) + L(m)`` from the kernel against the whole log target recomputed from
    tables of records with each split ``m`` of a group's two states: equal up to one constant
    (and the binomial counts the labelled assignments)."""
    da = _sampler(mechanism)
    card, n_par, par, stride, cell_off, row_off, n_ch, ch = da._net
    kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row = da._obs
    rng = np.random.default_rng(v + 10 * ka + 100 * kb)
    x = np.column_stack([rng.integers(0, len(STATES[s]), 4 * N) for s in STRUCTURE])[:N]
    x[:, 0] = np.where(np.arange(N) < N // 2, 0, x[:, 0])  # a large group at a's first rows
    cs = gibbs._child_strides(card, n_par, par, stride, n_ch, ch)
    keys = np.empty(N, dtype=np.int64)
    assert gibbs._keys(v, gibbs.node_major(x), card, n_par, par, n_ch, ch, keys, 1e18)
    sizes = {k: int(np.sum(keys == k)) for k in np.unique(keys)}
    j0 = int(np.flatnonzero(keys == max(sizes, key=sizes.get))[0])
    group = np.flatnonzero(keys == keys[j0])
    members = group[np.isin(x[group, v], [ka, kb])]
    total = len(members)
    assert total >= 3
    m = int(np.sum(x[members, v] == ka))
    cell_n, row_n = _tables(da, x)
    nc = int(n_ch[v])
    width = max(1, ch.shape[1])
    cw0 = np.array(
        [kernels._config(x, j0, ch[v, i], n_par, par, stride) - x[j0, v] * cs[v, i] for i in
         range(nc)] + [0] * (width - nc), dtype=np.int64,
    )  # fmt: skip
    xw = np.array([x[j0, ch[v, i]] for i in range(nc)] + [0] * (width - nc), dtype=np.int64)
    base = cell_off[v] + kernels._config(x, j0, v, n_par, par, stride) * card[v]
    cells = np.empty(2 * (1 + width), dtype=np.int64)
    rows = np.empty(2 * width, dtype=np.int64)
    cell0 = np.empty_like(cells)
    row0 = np.empty_like(rows)
    pairs._pair_cells(
        v, ka, kb, base, cw0, xw, cs, card, cell_off, row_off, ch, nc, cell_n, row_n, cells,
        rows, cell0, row0,
    )  # fmt: skip
    lw = np.empty(total + 1)
    log_fact = pairs.log_factorials(N)
    pairs._pair_weights(
        lw, 0, 0, total, m, total, v, nc, cells, cell0, rows, row0, ch, kind, coef, r, y, logt,
        acell, arow, lg_cell, lg_row, lgd_cell, lgd_row, log_fact,
    )  # fmt: skip
    offsets = []
    for mm in range(total + 1):
        z = x.copy()
        z[members, v] = np.where(np.arange(total) < mm, ka, kb)
        c2, r2 = _tables(da, z)
        target = kernels.log_target(c2, r2, True, da._net, da._obs)
        offsets.append(lw[mm] - math.log(math.comb(total, mm)) - target)
    np.testing.assert_allclose(offsets, offsets[0], atol=1e-9)


@pytest.mark.parametrize("mechanism", ["gaussian", "dirichlet"])
@pytest.mark.parametrize("limit", [gibbs.KEY_SPACE_LIMIT, 0.0], ids=["grouped", "one-by-one"])
def test_the_tables_follow_the_records_and_splits_change(mechanism, limit):
    da = _sampler(mechanism)
    rng = np.random.default_rng(3)
    x = np.column_stack([rng.integers(0, len(STATES[s]), N) for s in STRUCTURE])
    cell_n, row_n = _tables(da, x)
    kernels.seed(5)
    changed = proposed = 0
    for half_width, min_group in [(1, 1), (2, 2), (50, 1), (50, 3)]:
        widths = np.full(3, half_width, dtype=np.int64)
        for _ in range(20):
            a, p = pairs.pair_sweep(
                x, da._net, da._obs, cell_n, row_n, widths, pairs.log_factorials(N), limit,
                np.ones(3, dtype=np.bool_), min_group,
            )  # fmt: skip
            changed += a
            proposed += p
            expected_cells, expected_rows = _tables(da, x)
            np.testing.assert_array_equal(cell_n, expected_cells)
            np.testing.assert_array_equal(row_n, expected_rows)
    assert 0 < changed < proposed
    assert x.min() >= 0
    assert all(x[:, i].max() < len(STATES[s]) for i, s in enumerate(STRUCTURE))


@pytest.fixture(scope="module")
def exact():
    return {
        name: exact_moments(STRUCTURE_SMALL, STATES_SMALL, make(), N_SMALL)
        for name, make in RELEASES.items()
    }


@pytest.mark.parametrize("mechanism", list(RELEASES))
@pytest.mark.parametrize("half_width", [None, 1])
def test_pair_moves_match_enumeration(exact, monkeypatch, mechanism, half_width):
    """Pair moves alone: the posterior of the CPTs is the enumerated one, with windows of the
    default width (the whole range at these sizes: exact Gibbs draws of each split) and of
    one record each way (most proposals corrected by the ratio of the windows' sums)."""
    if half_width is not None:
        sweep = pairs.pair_sweep

        def narrow(x, net, obs, cell_n, row_n, widths, log_fact, limit, visit, min_group):
            widths = np.full_like(widths, half_width)
            return sweep(x, net, obs, cell_n, row_n, widths, log_fact, limit, visit, min_group)

        monkeypatch.setattr(pairs, "pair_sweep", narrow)
    da = DataAugmentation(
        STRUCTURE_SMALL, STATES_SMALL, RELEASES[mechanism](), N_SMALL, moves=("pair",)
    )
    idata = da.sample(draws=4000, tune=200, chains=2, random_seed=29)
    assert float(idata["sample_stats"]["accept_pair"].mean()) > 0.1
    assert max_z(idata, exact[mechanism]) < 4.5


def test_log_factorials_against_math_and_bad_input():
    """The table is ``log k!`` (against ``math.factorial``) and a bad size is refused by name."""
    table = pairs.log_factorials(12)
    assert table.dtype == np.float64
    assert table.shape == (13,)
    np.testing.assert_allclose(
        table, [math.log(math.factorial(k)) for k in range(13)], rtol=1e-14, atol=1e-14
    )
    big = pairs.log_factorials(40_000)  # a table as long as Adult's records
    np.testing.assert_allclose(
        big[::997], [math.lgamma(k + 1.0) for k in range(0, 40_001, 997)], rtol=1e-13
    )
    assert pairs.log_factorials(np.int64(0)).tolist() == [0.0]
    with pytest.raises(ValueError, match="n must be >= 0"):
        pairs.log_factorials(-1)
    for bad in (2.0, True, "3", None):
        with pytest.raises(TypeError, match="n must be an integer"):
            pairs.log_factorials(bad)
