"""Transfer moves of the data-augmentation sampler: invariants and the exact posterior."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_distributions_data_augmentation import exact_moments, max_z

from pymc_rdp.distributions.augmentation_transfer import transfer_nodes
from pymc_rdp.distributions.data_augmentation import DataAugmentation
from pymc_rdp.privacy.mechanisms import DirichletMechanism, GaussianMechanism, LaplaceMechanism

#: a network where c's rows (a × b) are pooled by its child d's table: c makes transfer moves
POOLED = {"a": [], "b": [], "c": ["a", "b"], "d": ["c"]}
POOLED_STATES = {"a": [0, 1], "b": [0, 1, 2], "c": [0, 1, 2], "d": [0, 1]}
#: the same with two states each, small enough to enumerate at N = 5
BINARY = {v: [0, 1] for v in POOLED}
N = 5


def _count_releases(mechanism):
    """Fixed released tables of the binary network (the test is about the posterior)."""
    values = {
        "a": np.array([3.6, 0.7]),
        "b": np.array([1.9, 2.4]),
        "c": np.array([[0.2, 1.4], [0.8, -0.3], [1.7, 0.1], [0.0, 0.6]]),
        "d": np.array([[2.1, 0.4], [-0.2, 1.3]]),
    }
    return {v: (y, mechanism) for v, y in values.items()}


def _dirichlet_releases():
    mech = DirichletMechanism(0.6, 1.5, math.sqrt(2), 1.0)
    values = {
        "a": np.array([[0.8, 0.2]]),
        "b": np.array([[0.4, 0.6]]),
        "c": np.array([[0.5, 0.5], [0.7, 0.3], [0.9, 0.1], [0.4, 0.6]]),
        "d": np.array([[0.2, 0.8], [0.6, 0.4]]),
    }
    return {v: (y, mech) for v, y in values.items()}


RELEASES = {
    "gaussian": lambda: _count_releases(GaussianMechanism(1.2, math.sqrt(2))),
    "laplace": lambda: _count_releases(LaplaceMechanism(0.9, 2.0)),
    "dirichlet": _dirichlet_releases,
}


def test_transfer_nodes_are_those_whose_rows_a_child_pools():
    """c's child d lacks both of c's parents; d has no child; the roots have no rows to pair;
    where every child holds the node's parents (b → c with c's parents a, b), none."""
    assert transfer_nodes({0: [], 1: [], 2: [0, 1], 3: [2]}) == [False, False, True, False]
    assert transfer_nodes({0: [], 1: [0], 2: [0, 1]}) == [False, False, False]
    assert transfer_nodes({0: [], 1: [0], 2: [1]}) == [False, True, False]


def _tables(records: np.ndarray, da: DataAugmentation) -> dict[str, np.ndarray]:
    """Each node's family table of the records (its parents' configurations in mixed radix ×
    its states; the rows' order does not matter to the sums compared)."""
    out = {}
    for i, v in enumerate(da.nodes):
        config = np.zeros(len(records), dtype=np.int64)
        rows = 1
        for p in POOLED[v]:
            config = config * da.cards[p] + records[:, da.nodes.index(p)]
            rows *= da.cards[p]
        table = np.zeros((rows, da.cards[v]), dtype=np.int64)
        np.add.at(table, (config, records[:, i]), 1)
        out[v] = table
    return out


def test_transfers_keep_row_totals_and_state_sums():
    """Alone, the moves keep every row's total and every state's count summed over the rows of
    the node moved; the records and the rows' splits do change. A node's descendants are
    redrawn, so their tables change and only the totals the move keeps are compared for c."""
    g = GaussianMechanism(1.0, 30.0)
    n = 400
    shapes = {"a": (2,), "b": (3,), "c": (6, 3), "d": (3, 2)}
    releases = {v: (np.zeros(shape), g) for v, shape in shapes.items()}
    da = DataAugmentation(POOLED, POOLED_STATES, releases, n, moves=("transfer",))
    start = da._records(np.random.default_rng(0))
    before = _tables(start, da)
    _, stats, end = da.run_chain(draws=30, tune=0, seed=4, records=start.copy(), adapt=False)
    after = _tables(end, da)
    assert float(np.mean(stats["accept_transfer"])) > 0.05
    # a and b are roots without a parent: one row each, which a transfer cannot pair
    for v in ("a", "b"):
        np.testing.assert_array_equal(after[v], before[v])
    np.testing.assert_array_equal(after["c"].sum(axis=1), before["c"].sum(axis=1))
    np.testing.assert_array_equal(after["c"].sum(axis=0), before["c"].sum(axis=0))
    assert not np.array_equal(after["c"], before["c"])
    assert not np.array_equal(end, start)


@pytest.mark.parametrize(
    ("mechanism", "moves"),
    [
        ("gaussian", ("gibbs", "transfer")),
        ("laplace", ("gibbs", "transfer")),
        ("dirichlet", ("gibbs", "transfer")),
        ("gaussian", ("site", "transfer")),
        ("dirichlet", ("subtree", "transfer")),
    ],
)
def test_transfers_match_enumeration(mechanism, moves):
    """Transfer moves beside an irreducible move against the enumerated posterior (N = 5 over
    16 joint states: small cells, so the selection's Hastings ratio matters on every proposal;
    8 subtree proposals per row, so 8 transfers per sweep of c's four rows)."""
    releases = RELEASES[mechanism]()
    da = DataAugmentation(POOLED, BINARY, releases, N, moves=moves, block_size=3, row_moves=8)
    idata = da.sample(draws=20000, tune=200, chains=2, random_seed=13)
    assert float(idata["sample_stats"]["accept_transfer"].mean()) > 0.05
    assert max_z(idata, exact_moments(POOLED, BINARY, releases, N)) < 4.5


def test_no_transfer_node_records_a_nan_rate():
    """Where every child holds its parents' parents (a → b → c with c's parents a, b), no node
    pairs rows: the sweep proposes nothing and its rate is NaN, as for the other idle moves."""
    structure = {"a": [], "b": ["a"], "c": ["a", "b"]}
    states = {"a": [0, 1], "b": [0, 1], "c": [0, 1]}
    g = GaussianMechanism(1.0, 2.0)
    releases = {"a": (np.zeros(2), g), "b": (np.zeros((2, 2)), g), "c": (np.zeros((4, 2)), g)}
    da = DataAugmentation(structure, states, releases, N, moves=("gibbs", "transfer"))
    idata = da.sample(draws=5, tune=0, chains=1, random_seed=0)
    assert np.isnan(idata["sample_stats"]["accept_transfer"].to_numpy()).all()
    assert np.isfinite(idata["sample_stats"]["accept_gibbs"].to_numpy()).all()
