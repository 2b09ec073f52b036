"""Subtree moves: the forward proposal redraws only the descendants whose parents changed, and
its log ratio and the reverse proposal's probability are those of the sequential predictive
recomputed here from recounted tables."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pymc_rdp.distributions import _augmentation_kernels as kernels
from pymc_rdp.distributions import augmentation_subtree as subtree
from pymc_rdp.distributions.data_augmentation import DataAugmentation
from pymc_rdp.privacy.mechanisms import GaussianMechanism

# a chain with a side branch: a -> b -> c and a -> d; d's parents are (a, b)
STRUCTURE = {"a": [], "b": ["a"], "c": ["b"], "d": ["a", "b"]}
STATES = {"a": [0, 1, 2], "b": [0, 1], "c": [0, 1, 2], "d": [0, 1]}
N = 60


#: the family tables' shapes (parent configurations × states)
SHAPES = {"a": (3,), "b": (3, 2), "c": (2, 3), "d": (6, 2)}


def _sampler() -> DataAugmentation:
    g = GaussianMechanism(3.0, math.sqrt(2))
    rng = np.random.default_rng(0)
    releases = {v: (rng.normal(N / math.prod(s), 2, s), g) for v, s in SHAPES.items()}
    return DataAugmentation(STRUCTURE, STATES, releases, N, moves=("subtree",))


def _tables(net, x):
    cell_n = np.zeros(int(net[4][-1]), dtype=np.int64)
    row_n = np.zeros(int(net[5][-1]), dtype=np.int64)
    kernels.tabulate(x, net, cell_n, row_n)
    return cell_n, row_n


def _predictive_path(net, alpha, dset, sel, start, end):
    """log q of turning the records ``sel`` from ``start`` into ``end``, visiting each record's
    nodes in ``dset`` order and redrawing a descendant when one of its parents differs: the
    tables recounted from the records as they stand at every step."""
    card, n_par, par = net[0], net[1], net[2]
    x = start.copy()
    lq = 0.0
    for j in sel:
        for i, w in enumerate(dset):
            parents = [int(par[w, q]) for q in range(n_par[w])]
            if i > 0 and all(start[j, p] == end[j, p] for p in parents):
                assert x[j, w] == end[j, w]  # kept, not redrawn
                continue
            x[j, w] = -1  # out of its family while weighed
            keep = x[:, w] >= 0
            same_row = np.ones(len(x), dtype=bool)
            for p in parents:
                same_row &= x[:, p] == end[j, p]
            if i > 0:
                in_row = int(np.sum(same_row & keep))
                in_cell = int(np.sum(same_row & keep & (x[:, w] == end[j, w])))
                lq += math.log(in_cell + alpha[w]) - math.log(in_row + card[w] * alpha[w])
            x[j, w] = end[j, w]
    np.testing.assert_array_equal(x, end)
    return lq


@pytest.mark.parametrize("seed", range(6))
def test_a_subtree_move_redraws_what_changed_and_scores_both_ways(seed):
    da = _sampler()
    net, obs = da._net, da._obs
    card = net[0]
    rng = np.random.default_rng(seed)
    start = da._records(rng)
    v, k2 = 0, int(rng.integers(1, 3))
    k1 = (k2 + int(rng.integers(1, 3))) % 3  # a source state other than k2
    sel = np.flatnonzero(start[:, v] == k1)[:6].astype(np.int64)
    m = len(sel)
    assert m >= 3
    desc, n_desc = subtree.descendants({0: [1, 3], 1: [2, 3]}, 4)
    dset, n_d = subtree._subtree_set(v, desc, n_desc)
    where = np.full(4, -1, dtype=np.int64)
    where[dset] = np.arange(n_d)
    n_kid, kid = subtree._child_places(dset, n_d, where, net[6], net[7])
    step = np.empty((m * n_d, 2), dtype=np.int64)
    old = np.empty(m * n_d, dtype=np.int64)
    moved = np.empty((m * n_d, 4), dtype=np.int64)
    pending = np.zeros(n_d, dtype=np.bool_)
    flag = np.zeros(n_d, dtype=np.bool_)
    e_of = np.zeros(n_d, dtype=np.int64)
    alpha = np.asarray(da._alpha, dtype=np.float64)
    logs, num_of, den_of = subtree.predictive_logs(alpha, card, N)
    x = start.copy()
    cell_n, row_n = _tables(net, x)
    kernels.seed(seed)
    log_ratio, e_n = subtree._forward(
        x, sel, m, k2, dset, n_d, where, n_kid, kid, alpha, logs, num_of, den_of, pending, flag,
        e_of, step, old, moved, net[0], net[1], net[2], net[3], net[4], net[5], *obs, cell_n, row_n,
    )  # fmt: skip
    # the families listed, in visiting order (record by record, nodes in dset order)
    visits = [tuple(step[e]) for e in range(e_n)]
    assert visits == sorted(visits)
    redrawn = np.zeros((m, n_d), dtype=bool)
    for t, i in visits:
        redrawn[t, i] = True
    np.testing.assert_array_equal(old[:e_n], [start[sel[t], dset[i]] for t, i in visits])
    proposal = x.copy()
    # the tables are those of the proposal; only the moved records changed, v to k2
    for got, want in zip((cell_n, row_n), _tables(net, proposal), strict=True):
        np.testing.assert_array_equal(got, want)
    others = np.setdiff1d(np.arange(N), sel)
    np.testing.assert_array_equal(proposal[others], start[others])
    assert np.all(proposal[sel, v] == k2)
    # c (child of b alone) changes only where b changed; d follows a, so it is always redrawn
    kept = proposal[sel, 1] == start[sel, 1]
    np.testing.assert_array_equal(proposal[sel][kept, 2], start[sel][kept, 2])
    np.testing.assert_array_equal(redrawn[:m, 2], ~kept)
    assert redrawn[:m, 3].all()

    # forward: log π(x') − log π(x) − log q(x → x')
    q_forward = _predictive_path(net, alpha, dset, sel, start, proposal)
    target = kernels.log_target(*_tables(net, proposal), True, net, obs) - kernels.log_target(
        *_tables(net, start), True, net, obs
    )
    assert log_ratio == pytest.approx(target - q_forward, abs=1e-9)
    # reverse: log q(x' → x), leaving the tables at x
    q_reverse = subtree._reverse(e_n, step, logs, num_of, den_of, dset, moved, cell_n, row_n)
    assert q_reverse == pytest.approx(_predictive_path(net, alpha, dset, sel, proposal, start))
    for got, want in zip((cell_n, row_n), _tables(net, start), strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("alpha", [[1.0] * 4, [0.5] * 4, [1 / 3] * 4, [2.7, 1.0, 2.7, 0.25]])
def test_predictive_logs_are_the_logarithms_the_moves_would_take(alpha):
    """One row per distinct offset (α or K α), and each entry the logarithm of the double the
    move computes, bit for bit."""
    card = np.array([2, 3, 5, 3], dtype=np.int64)
    alpha = np.array(alpha)
    logs, num_of, den_of = subtree.predictive_logs(alpha, card, 40)
    offsets = {float(a) for a in alpha} | {float(k * a) for k, a in zip(card, alpha, strict=True)}
    assert logs.shape == (len(offsets), 41)
    for w in range(4):
        for n in range(41):
            assert logs[num_of[w], n] == math.log(n + alpha[w])
            assert logs[den_of[w], n] == math.log(n + card[w] * alpha[w])
