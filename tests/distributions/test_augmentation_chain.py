"""A chain's moves (:class:`ChainMoves`): the settings that adapt, the diffuse nodes, and the
family tables every move keeps in step with the records."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pymc_rdp.distributions import _augmentation_kernels as k
from pymc_rdp.distributions import augmentation_chain
from pymc_rdp.distributions import augmentation_gibbs as kg
from pymc_rdp.distributions import augmentation_pairs as kp
from pymc_rdp.distributions import augmentation_subtree as kt
from pymc_rdp.distributions.augmentation_chain import (
    COUNT_SIZE_CAP,
    SIZE_CAP,
    TARGET_ACCEPT,
    ChainMoves,
    adapted,
    diffuse_nodes,
    size_caps,
)
from pymc_rdp.distributions.augmentation_settings import MOVES
from pymc_rdp.distributions.data_augmentation import DataAugmentation
from pymc_rdp.privacy.mechanisms import DirichletMechanism, GaussianMechanism

#: a network with every kind of unit a move uses: a pooling edge (b → c: c's other parents,
#: none, a proper subset of b's), a transfer node (b: its child c lacks b's parent a), a node
#: whose parent lies outside its children's families (c, for swap moves) and a child-row edge
#: (c → d)
NET = {"a": [], "b": ["a"], "c": ["b"], "d": ["a", "c"]}
STATES = {"a": [0, 1], "b": [0, 1, 2], "c": [0, 1], "d": [0, 1, 2]}
N = 60


def _releases(mechanism: str) -> dict:
    """Fixed released values of each family table ((configurations, states)), near a table of
    ``N`` records spread evenly: the tests are about the moves' bookkeeping, not the noise."""
    rng = np.random.default_rng(3)
    out = {}
    for v, parents in NET.items():
        rows = math.prod(len(STATES[p]) for p in parents)
        kv = len(STATES[v])
        if mechanism == "gaussian":
            y = N / (rows * kv) + rng.normal(0.0, 2.0, (rows, kv))
            out[v] = (y, GaussianMechanism(1.2, math.sqrt(2)))
        else:
            out[v] = (rng.dirichlet(np.ones(kv), rows), DirichletMechanism(0.6, 1.5, 1.4, 1.0))
    return out


def _recounted(chain: ChainMoves, da: DataAugmentation) -> tuple[np.ndarray, np.ndarray]:
    cell_n = np.zeros_like(chain.cell_n)
    row_n = np.zeros_like(chain.row_n)
    k.tabulate(chain.x, da._net, cell_n, row_n)
    return cell_n, row_n


@pytest.mark.parametrize("mechanism", ["gaussian", "dirichlet"])
@pytest.mark.parametrize("move", MOVES)
def test_every_move_keeps_the_tables_those_of_its_records(move, mechanism):
    """After each run of any move, during tuning (block sizes adapting) and after it, the
    chain's family tables are those counted afresh from its records, and the move's rate is an
    acceptance rate (or NaN where it proposed nothing); the records change over the runs."""
    da = DataAugmentation(NET, STATES, _releases(mechanism), N, moves=(move,))
    k.seed(7)
    x = da._records(np.random.default_rng(1))
    start = x.copy()
    chain = ChainMoves(da, x, tune=4, adapt=True)
    for it in range(10):
        chain.begin(it)
        rate = chain.run(move, it, later=False)
        assert rate is not None
        assert math.isnan(rate) or 0.0 <= rate <= 1.0
        cell_n, row_n = _recounted(chain, da)
        np.testing.assert_array_equal(chain.cell_n, cell_n, err_msg=f"{move}: cells at {it}")
        np.testing.assert_array_equal(chain.row_n, row_n, err_msg=f"{move}: rows at {it}")
    assert chain.x is x
    if move != "diffuse_pair" or mechanism == "gaussian":
        assert not np.array_equal(x, start), f"{move} never moved a record"


def test_a_later_sweep_with_no_diffuse_node_makes_no_call_and_no_rate(monkeypatch):
    """Once the tuning iteration that decides them finds no diffuse node, a later heat-bath
    sweep is skipped (None: no rate is averaged in), while the first sweep still runs."""
    calls: list[bool] = []
    sweep = kg.gibbs_sweep

    def recording(*args):
        calls.append(bool(args[6].all()))
        return sweep(*args)

    monkeypatch.setattr(kg, "gibbs_sweep", recording)
    monkeypatch.setattr(augmentation_chain, "diffuse_nodes", lambda tally: tally[:, 0] < 0)
    da = DataAugmentation(NET, STATES, _releases("gaussian"), N, moves=("gibbs", "gibbs"))
    chain = ChainMoves(da, da._records(np.random.default_rng(2)), tune=30, adapt=True)
    decide = augmentation_chain.DIFFUSE_AFTER
    for it in (0, decide):
        chain.begin(it)
        assert chain.run("gibbs", it, later=False) is not None
        later = chain.run("gibbs", it, later=True)
        if it < decide:
            assert later is not None
        else:
            assert later is None
    assert calls == [True, True, True]  # the skipped sweep made no call


def test_pair_moves_over_the_diffuse_nodes_wait_for_them():
    """``"diffuse_pair"`` proposes nothing (NaN) before the tuning iteration that fixes the
    diffuse nodes when a heat-bath sweep is there to find them, and runs from it on."""
    da = DataAugmentation(
        NET, STATES, _releases("gaussian"), N, moves=("gibbs", "diffuse_pair"), block_size=2
    )
    chain = ChainMoves(da, da._records(np.random.default_rng(4)), tune=25, adapt=True)
    decide = augmentation_chain.DIFFUSE_AFTER
    for it in range(decide + 1):
        chain.begin(it)
        chain.run("gibbs", it, later=False)
        rate = chain.run("diffuse_pair", it, later=False)
        if it < decide:
            assert math.isnan(rate)
    visited = chain._repeat_nodes
    assert math.isnan(rate) != bool(visited.any())


def test_the_compile_helper_gets_the_kernels_called_after_the_first_move():
    """The default schedule's later moves: θ's draw, the subtree sweep, the predictive's
    tables and the pair sweep; a schedule of record moves alone draws θ in its first move and
    calls nothing later."""
    da = DataAugmentation(NET, STATES, _releases("gaussian"), N)
    assert da.moves == ("gibbs", "gibbs", "subtree", "diffuse_pair")
    chain = ChainMoves(da, da._records(np.random.default_rng(5)), tune=5, adapt=True)
    kernels = [kernel for kernel, _ in chain.compile_ahead_calls()]
    assert set(kernels) == {k.draw_theta, kt.subtree_sweep, kt.predictive_logs, kp.pair_sweep}
    alone = DataAugmentation(NET, STATES, _releases("gaussian"), N, moves=("record",))
    assert (
        ChainMoves(alone, alone._records(np.random.default_rng(5)), 5, True).compile_ahead_calls()
        == []
    )


def test_size_caps_by_the_kind_of_release():
    """Gaussian and Laplace releases adapt up to COUNT_SIZE_CAP block sizes, the others up to
    SIZE_CAP, never below one record."""
    kinds = np.array([k.KIND_GAUSSIAN, k.KIND_LAPLACE, k.KIND_DIRICHLET, k.KIND_NONE])
    assert size_caps(kinds, [3, 0, 2, 5]) == [
        3 * COUNT_SIZE_CAP,
        1,
        2 * SIZE_CAP,
        5 * SIZE_CAP,
    ]
    with pytest.raises(ValueError):  # one size per node
        size_caps(kinds, [3, 0])


def test_diffuse_nodes_at_the_share():
    """A node is diffuse when its records changed state in at least half of their updates; a
    node never updated is not."""
    tally = np.array([[5, 10], [4, 10], [0, 0], [1, 1]])
    assert diffuse_nodes(tally).tolist() == [True, False, False, True]


def test_adapted_step_reference_value():
    """``size · exp((rate − 0.35) / sqrt(1 + it))``: 10 · e^{0.25} at rate 0.85, it = 3."""
    assert adapted(10.0, TARGET_ACCEPT + 0.5, 3, 100) == pytest.approx(10.0 * math.exp(0.25))
    assert adapted(10.0, TARGET_ACCEPT + 0.5, 3, 12) == 12  # capped
    assert adapted(1.2, 0.0, 0, 100) == 1.0  # never below one record


@given(
    size=st.floats(1.0, 500.0),
    rate=st.floats(0.0, 1.0),
    it=st.integers(0, 10_000),
    cap=st.integers(1, 1000),
)
def test_adapted_moves_towards_the_target_within_its_bounds(size, rate, it, cap):
    """Up when the acceptance is above the target, down when below, never by more than the
    Robbins–Monro step, always within 1..cap."""
    out = adapted(size, rate, it, cap)
    assert 1.0 <= out <= cap
    free = size * math.exp((rate - TARGET_ACCEPT) / math.sqrt(1.0 + it))
    assert out == min(cap, max(1.0, free))
    if rate > TARGET_ACCEPT and size <= cap:
        assert out >= min(size, cap)
    if rate < TARGET_ACCEPT:
        assert out <= max(size, 1.0)
