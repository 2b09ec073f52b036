"""The grouped heat-bath sweep: its keys, its bookkeeping, and its conditionals against a direct
computation of the full conditional from the collapsed target."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymc_rdp.distributions import _augmentation_kernels as kernels
from pymc_rdp.distributions import augmentation_gibbs as gibbs
from pymc_rdp.distributions.data_augmentation import RECORD_DTYPE, DataAugmentation
from pymc_rdp.privacy.mechanisms import GaussianMechanism

# a has children b and c; c has co-parent b: a's Markov blanket is {b, c}, b's is {a, c}
STRUCTURE = {"a": [], "b": ["a"], "c": ["a", "b"]}
STATES = {"a": [0, 1, 2], "b": [0, 1], "c": [0, 1, 2]}
N = 40


def _sampler(sigma: float = 1.5) -> DataAugmentation:
    g = GaussianMechanism(sigma, math.sqrt(2))
    rng = np.random.default_rng(0)
    releases = {
        "a": (rng.normal(N / 3, 2, 3), g),
        "b": (rng.normal(N / 6, 2, (3, 2)), g),
        "c": (rng.normal(N / 18, 2, (6, 3)), g),
    }
    return DataAugmentation(STRUCTURE, STATES, releases, N, moves=("gibbs",))


def _tables(da, x):
    net = da._net
    cell_n = np.zeros(int(net[4][-1]), dtype=np.int64)
    row_n = np.zeros(int(net[5][-1]), dtype=np.int64)
    kernels.tabulate(x, net, cell_n, row_n)
    return cell_n, row_n


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 1), st.integers(0, 2)), min_size=2))
def test_keys_are_equal_exactly_when_the_markov_blankets_are(rows):
    da = _sampler()
    card, n_par, par, _, _, _, n_ch, ch = da._net
    x = np.array(rows, dtype=RECORD_DTYPE)
    blankets = {0: (1, 2), 1: (0, 2), 2: (0, 1)}  # a, b, c
    for v, blanket in blankets.items():
        keys = np.empty(len(x), dtype=np.int64)
        args = (v, gibbs.node_major(x), card, n_par, par, n_ch, ch, keys)
        space = gibbs._keys(*args, gibbs.KEY_SPACE_LIMIT)
        assert space == math.prod(int(card[u]) for u in blanket)
        assert np.all((keys >= 0) & (keys < space))
        same_key = keys[:, None] == keys[None, :]
        same_blanket = np.all(x[:, None, blanket] == x[None, :, blanket], axis=-1)
        np.testing.assert_array_equal(same_key, same_blanket)
        assert gibbs._keys(*args, 0.0) == 0.0  # over the limit: no grouping


@pytest.mark.parametrize("limit", [gibbs.KEY_SPACE_LIMIT, 0.0])
def test_sweep_keeps_the_tables_of_the_records(limit):
    da = _sampler()
    x = da._records(np.random.default_rng(1))
    cell_n, row_n = _tables(da, x)
    kernels.seed(5)
    changed = 0
    for _ in range(5):
        c, updated = gibbs.gibbs_sweep(x, da._net, da._obs, cell_n, row_n, limit)
        changed += c
        assert updated == N * 3
    assert changed > 0
    want_cells, want_rows = _tables(da, x)
    np.testing.assert_array_equal(cell_n, want_cells)
    np.testing.assert_array_equal(row_n, want_rows)


def test_a_sweep_over_marked_nodes_updates_them_alone_and_tallies_each():
    """``active`` restricts the sweep to the nodes it marks; ``tally`` gains each visited node's
    records changed (each record is updated once per node, so those are the records whose value
    at the node differs afterwards) and updated."""
    da = _sampler(30.0)
    x = da._records(np.random.default_rng(2))
    cell_n, row_n = _tables(da, x)
    before = x.copy()
    tally = np.zeros((3, 2), dtype=np.int64)
    kernels.seed(3)
    changed, updated = gibbs.gibbs_sweep(
        x, da._net, da._obs, cell_n, row_n, gibbs.KEY_SPACE_LIMIT, np.array([False, True, True]),
        tally,
    )  # fmt: skip
    np.testing.assert_array_equal(x[:, 0], before[:, 0])
    assert updated == 2 * N
    np.testing.assert_array_equal(tally[:, 1], [0, N, N])
    np.testing.assert_array_equal(tally[:, 0], (x != before).sum(axis=0))
    assert tally[:, 0].sum() == changed > 0
    want_cells, want_rows = _tables(da, x)
    np.testing.assert_array_equal(cell_n, want_cells)
    np.testing.assert_array_equal(row_n, want_rows)


def test_one_record_draws_follow_its_full_conditional():
    """With N = 1 the sweeps are a two-site Gibbs sampler of the one record, whose stationary law
    is the normalised collapsed target; the visit frequencies must match it."""
    da1 = DataAugmentation(
        {"a": [], "b": ["a"]},
        {"a": [0, 1, 2], "b": [0, 1]},
        {
            "a": (np.array([0.3, 1.4, -0.2]), GaussianMechanism(0.8, math.sqrt(2))),
            "b": (np.array([[0.9, 0.1], [0.2, 0.6], [0.5, 0.5]]), GaussianMechanism(0.8, 1.4)),
        },
        1,
        moves=("gibbs",),
    )
    x = np.array([[1, 0]], dtype=RECORD_DTYPE)
    cell_n, row_n = _tables(da1, x)
    kernels.seed(9)
    joint = np.zeros((3, 2))
    for _ in range(20000):
        gibbs.gibbs_sweep(x, da1._net, da1._obs, cell_n, row_n)
        joint[x[0, 0], x[0, 1]] += 1
    joint /= joint.sum()
    # the exact stationary law of the single record: the normalised collapsed target
    logp = np.empty((3, 2))
    for a in range(3):
        for b in range(2):
            y = np.array([[a, b]], dtype=RECORD_DTYPE)
            c, r = _tables(da1, y)
            logp[a, b] = kernels.log_target(c, r, True, da1._net, da1._obs)
    p = np.exp(logp - logp.max())
    p /= p.sum()
    se = np.sqrt(p * (1 - p) / 20000 * 3)  # a Gibbs chain: allow for autocorrelation
    assert np.all(np.abs(joint - p) < 4.5 * se)


def _keys_below(max_bits: int) -> st.SearchStrategy:
    """A bit width up to ``max_bits`` and up to 300 keys below ``2**bits``."""
    return st.integers(1, max_bits).flatmap(
        lambda bits: st.tuples(
            st.just(bits), st.lists(st.integers(0, 2**bits - 1), min_size=0, max_size=300)
        )
    )


@settings(max_examples=40, deadline=None)
@given(_keys_below(62))
def test_radix_order_is_a_stable_sort(case):
    bits, values = case
    keys = np.array(values, dtype=np.int64)
    order = gibbs.radix_order(keys, 2.0**bits)
    np.testing.assert_array_equal(order, np.argsort(keys, kind="stable"))


@settings(max_examples=40, deadline=None)
@given(_keys_below(12))
def test_counting_order_is_a_stable_sort_and_sorts_the_keys(case):
    """The four quarters' counting sort against numpy's stable argsort, at every length (the
    quarters uneven or empty when N is not a multiple of 4 or below it)."""
    bits, values = case
    keys = np.array(values, dtype=np.int64)
    sorted_keys = np.full(len(keys), -1, dtype=np.int64)
    order = gibbs._counting_order(keys, 2**bits, sorted_keys)
    want = np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(order, want)
    np.testing.assert_array_equal(sorted_keys, keys[want])


@pytest.mark.parametrize("limit", [gibbs.KEY_SPACE_LIMIT, 5.0, 0.0])
def test_group_order_sorts_the_records_by_key_in_index_order_on_every_path(limit):
    """Within ``limit`` the keys (here all under ``_COUNTING_SPACE``) are counted, over it every
    record is its own group: on each path, compiled and in Python, the order is a stable sort
    by key and ``group_keys`` are the keys in that order."""
    da = _sampler()
    card, n_par, par, _, _, _, n_ch, ch = da._net
    x = da._records(np.random.default_rng(2))
    xt = gibbs.node_major(x)
    np.testing.assert_array_equal(xt, x.T)
    keys = np.empty(N, dtype=np.int64)
    for v in range(x.shape[1]):
        runs = [gibbs.group_order(v, xt, card, n_par, par, n_ch, ch, keys, limit)]
        runs.append(gibbs.group_order.py_func(v, xt, card, n_par, par, n_ch, ch, keys, limit))
        space = gibbs._keys(v, xt, card, n_par, par, n_ch, ch, keys, limit)
        want_keys = keys.copy() if space else np.arange(N)
        want = np.argsort(want_keys, kind="stable")
        for order, group_keys in runs:
            np.testing.assert_array_equal(order, want)
            np.testing.assert_array_equal(group_keys, want_keys[want])


def test_group_order_takes_the_radix_sort_beyond_the_counting_space(monkeypatch):
    """With ``_COUNTING_SPACE`` at 0 every key space goes to the radix sort: the same order and
    sorted keys."""
    da = _sampler()
    card, n_par, par, _, _, _, n_ch, ch = da._net
    xt = gibbs.node_major(da._records(np.random.default_rng(2)))
    keys = np.empty(N, dtype=np.int64)
    monkeypatch.setattr(gibbs, "_COUNTING_SPACE", 0)  # read by the Python source below
    for v in range(xt.shape[0]):
        order, group_keys = gibbs.group_order.py_func(
            v, xt, card, n_par, par, n_ch, ch, keys, gibbs.KEY_SPACE_LIMIT
        )
        gibbs._keys(v, xt, card, n_par, par, n_ch, ch, keys, gibbs.KEY_SPACE_LIMIT)
        np.testing.assert_array_equal(order, np.argsort(keys, kind="stable"))
        np.testing.assert_array_equal(group_keys, np.sort(keys))


def test_re_anchoring_the_cached_weights_leaves_the_draws_unchanged(monkeypatch):
    """Each group keeps its weights as ``exp(W_k − ref)`` and re-anchors ``ref`` when their sum
    leaves ``(_LOW, _HIGH)``. Re-anchoring at every record (both bounds at 1) or at some of them
    (bounds inside the sum's range ``[1, K]``) must not change a single draw: a record that stays
    must get back its weight on the current reference, not on the one before (restoring the old
    one skewed the group's later conditionals until the next re-anchoring; the sweep's Python
    source is run, so the bounds can be changed)."""
    da = _sampler()
    start = da._records(np.random.default_rng(3))
    runs = []
    for low, high in [(gibbs._LOW, gibbs._HIGH), (1.0, 1.0), (0.9, 1.6), (0.9, 2.5)]:
        monkeypatch.setattr(gibbs, "_LOW", low)
        monkeypatch.setattr(gibbs, "_HIGH", high)
        x = start.copy()
        cell_n, row_n = _tables(da, x)
        np.random.seed(21)  # noqa: NPY002 (the Python source draws from numpy's global generator)
        changed = 0
        for _ in range(3):
            changed += gibbs.grouped_sweep.py_func(x, da._net, da._obs, cell_n, row_n)[0]
        runs.append((x, changed))
    assert runs[0][1] > 0
    for x, _ in runs[1:]:
        np.testing.assert_array_equal(runs[0][0], x)


@pytest.mark.parametrize("limit", [gibbs.KEY_SPACE_LIMIT, 0.0, 7.0])
@pytest.mark.parametrize("sigma", [1.5, 30.0])
def test_sweep_draws_are_the_heat_bath_draws_from_the_target_recomputed(sigma, limit, monkeypatch):
    """Every draw of the grouped sweep (cached weights per group, the one-record-out weight kept
    per state) equals the draw of a direct heat-bath update in the same order, its conditional
    computed record by record from the whole collapsed target on recounted tables, fed the same
    uniforms: a cached weight that went stale would send some record elsewhere. With noise of
    scale 30 the releases say little and records move often, so the weights handed over on a
    move are read. With ``limit`` 0 every node is updated one record at a time in index order,
    its weights summed from cached factor terms, which must go stale exactly when a record
    moves. With ``limit`` 7 node b (key space 9) is updated that way between a and c (key
    spaces 6) in groups, each in its own kernel call, as one scan."""
    # the Python source throughout, so that every uniform comes from numpy's global generator
    for kernel in ("grouped_sweep", "factor_sweep", "_factor_scan"):
        monkeypatch.setattr(gibbs, kernel, getattr(gibbs, kernel).py_func)
    da = _sampler(sigma)
    net, obs = da._net, da._obs
    card, n_par, par, _, _, _, n_ch, ch = net
    one = gibbs.one_by_one_nodes(net, N, limit)
    assert one.tolist() == {0.0: [True] * 3, 7.0: [False, True, False]}.get(limit, [False] * 3)
    start = da._records(np.random.default_rng(4))
    x = start.copy()
    cell_n, row_n = _tables(da, x)
    np.random.seed(8)  # noqa: NPY002 (the Python source draws from numpy's global generator)
    changed = sum(gibbs.gibbs_sweep(x, net, obs, cell_n, row_n, limit)[0] for _ in range(5))
    assert changed > 20

    want = start.copy()
    np.random.seed(8)  # noqa: NPY002
    keys = np.empty(N, dtype=np.int64)
    for _ in range(5):
        for v in range(want.shape[1]):
            order, _ = gibbs.group_order(
                v, gibbs.node_major(want), card, n_par, par, n_ch, ch, keys, limit
            )
            for j in order:
                logp = np.empty(card[v])
                for k in range(card[v]):
                    want[j, v] = k
                    logp[k] = kernels.log_target(*_tables(da, want), True, net, obs)
                prob = np.exp(logp - logp.max())
                cum = np.cumsum(prob / prob.sum())
                u = np.random.random()  # noqa: NPY002
                want[j, v] = next((k for k in range(card[v] - 1) if u < cum[k]), card[v] - 1)
    np.testing.assert_array_equal(x, want)


def test_the_grouped_sweep_calls_no_record_by_record_code():
    """The grouped kernel does not call the record-by-record one: numba compiles every callee
    of a kernel on its first call, and the record-by-record code took 1.7 of the 6.5 s of
    compiling the sweep on Adult, which has no node that needs it."""
    names = set(gibbs.grouped_sweep.py_func.__code__.co_names)
    assert not names & {"factor_sweep", "_factor_scan"}
    assert "_factor_scan" in gibbs.factor_sweep.py_func.__code__.co_names
