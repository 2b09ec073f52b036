"""Pooled child-row moves: the edges they use, when they run, and their posterior against
enumeration."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_distributions_data_augmentation import exact_moments, max_z

from pymc_rdp import datasets
from pymc_rdp.distributions import augmentation_chain
from pymc_rdp.distributions.augmentation_subtree import pooling_edges
from pymc_rdp.distributions.data_augmentation import DataAugmentation
from pymc_rdp.privacy.mechanisms import DirichletMechanism, GaussianMechanism, LaplaceMechanism

#: a chain: c's rows (b) pool b's rows (a) over a, so b → c is a pooling edge
CHAIN = {"a": [], "b": ["a"], "c": ["b"]}
CHAIN_STATES = {"a": [0, 1], "b": [0, 1, 2], "c": [0, 1]}
N = 5
#: the count releases' default schedule with the pooled moves after it
POOLED = ("gibbs", "gibbs", "gibbs", "subtree", "pooled_row")


def _chain_releases(mechanism: str) -> dict:
    values = {
        "a": np.array([3.1, 1.6]),
        "b": np.array([[1.8, -0.4, 1.1], [0.2, 1.3, 0.6]]),
        "c": np.array([[1.4, 0.3], [0.9, -0.2], [0.1, 1.7]]),
    }
    if mechanism == "gaussian":
        mech = GaussianMechanism(1.2, math.sqrt(2))
    else:
        mech = LaplaceMechanism(0.9, 2.0)
    return {v: (y, mech) for v, y in values.items()}


def test_pooling_edges_are_the_edges_whose_child_rows_pool_the_parents_rows():
    """The child's other parents a proper subset of the parent's: on the Adult network the three
    edges from occupation down; none from a root (its child's rows cannot pool rows it does not
    have) nor where the other parents equal the parent's (the rows would be the parent's cells)
    or reach outside them."""
    assert pooling_edges(dict(datasets.ADULT_DAG)) == [
        ("occupation", "capital-gain"),
        ("capital-gain", "capital-loss"),
        ("capital-loss", "income"),
    ]
    assert pooling_edges(CHAIN) == [("b", "c")]
    assert pooling_edges({"a": [], "b": ["a"], "c": ["a", "b"]}) == []  # others == b's parents
    assert pooling_edges({"a": [], "b": [], "c": ["a", "b"]}) == []  # roots
    assert pooling_edges({"a": [], "b": [], "c": ["a"], "d": ["b", "c"]}) == []  # b is not c's
    assert pooling_edges({0: [], 1: [0], 2: [1]}) == [(1, 2)]  # indices alike


def test_pooled_moves_are_in_no_default_and_run_where_given():
    """The default schedules leave the pooled moves out (measured on Adult, where they lowered
    the one-minute benchmark's median); given in a schedule, they run, and the default's shape
    with them keeps its heat-bath and subtree moves."""
    releases = _chain_releases("gaussian")
    assert "pooled_row" not in DataAugmentation(CHAIN, CHAIN_STATES, releases, N).moves
    mech = DirichletMechanism(0.6, 1.5, math.sqrt(2), 1.0)
    cpts = {
        "a": (np.array([[0.8, 0.2]]), mech),
        "b": (np.array([[0.1, 0.6, 0.3], [0.3, 0.3, 0.4]]), mech),
        "c": (np.array([[0.5, 0.5], [0.7, 0.3], [0.9, 0.1]]), mech),
    }
    assert "pooled_row" not in DataAugmentation(CHAIN, CHAIN_STATES, cpts, N).moves
    da = DataAugmentation(CHAIN, CHAIN_STATES, releases, N, moves=POOLED)
    assert da.moves == POOLED
    _, stats, _ = da.run_chain(draws=5, tune=25, seed=2)
    assert set(stats) == {"accept_gibbs", "accept_subtree", "accept_pooled_row"}


@pytest.mark.parametrize("diffuse", [False, True])
def test_pooled_moves_run_from_the_decision_for_the_diffuse_parents_only(monkeypatch, diffuse):
    """With adaptation the pooled moves wait for the tuning iteration that fixes the diffuse
    nodes, then run over the edges of those nodes: b → c when b is found diffuse (every kept
    iteration proposes, and the kernel is first called at that iteration), none when only a
    and c are (every kept iteration records NaN and the kernel is never called)."""
    from pymc_rdp.distributions import augmentation_subtree as kt
    from pymc_rdp.distributions import compile_ahead as ahead

    monkeypatch.setattr(ahead, "compile_ahead", lambda calls: ahead._NoHelper())
    mask = np.array([True, diffuse, True])
    monkeypatch.setattr(augmentation_chain, "diffuse_nodes", lambda tally: mask)
    calls: list[int] = []
    sweep = kt.child_row_sweep

    def counting(*args):
        calls.append(1)
        return sweep(*args)

    monkeypatch.setattr(kt, "child_row_sweep", counting)
    da = DataAugmentation(CHAIN, CHAIN_STATES, _chain_releases("gaussian"), 40, moves=POOLED)
    _, stats, _ = da.run_chain(draws=30, tune=25, seed=2)
    rates = stats["accept_pooled_row"]
    if diffuse:
        assert np.isfinite(rates).all() and rates.mean() > 0.05
        # from the iteration that fixes the diffuse nodes on, one edge
        assert len(calls) == 25 - augmentation_chain.DIFFUSE_AFTER + 30
    else:
        assert np.isnan(rates).all() and not calls


def test_without_adaptation_the_pooled_moves_use_every_pooling_edge():
    """Records given (no adaptation): every node counts as visited, so b → c moves from the
    first iteration."""
    da = DataAugmentation(CHAIN, CHAIN_STATES, _chain_releases("gaussian"), 40, moves=POOLED)
    records = np.zeros((40, 3), dtype=np.int64)
    _, stats, _ = da.run_chain(draws=10, tune=0, seed=2, records=records)
    assert np.isfinite(stats["accept_pooled_row"]).all()


@pytest.mark.parametrize("mechanism", ["gaussian", "laplace"])
@pytest.mark.parametrize(
    "moves", [("gibbs", "pooled_row"), ("gibbs", "gibbs", "subtree", "pooled_row")]
)
def test_pooled_moves_match_enumeration(mechanism, moves):
    """After one heat-bath sweep (no diffuse nodes decided: the edge from the first iteration;
    the sweep makes the chain irreducible, as the pooled moves never change a) and in the
    default's shape (the edge once b is found diffuse, if it is): the exact posterior."""
    releases = _chain_releases(mechanism)
    da = DataAugmentation(CHAIN, CHAIN_STATES, releases, N, moves=moves, row_moves=2)
    idata = da.sample(draws=4000, tune=200, chains=2, random_seed=23)
    rates = idata["sample_stats"]["accept_pooled_row"].to_numpy()
    if moves == ("gibbs", "pooled_row"):
        assert np.isfinite(rates).all() and float(rates.mean()) > 0.05
    assert max_z(idata, exact_moments(CHAIN, CHAIN_STATES, releases, N)) < 4.5
