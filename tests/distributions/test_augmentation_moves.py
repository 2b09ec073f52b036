"""Row-block selections: the pair of states drawn in proportion to its records, with the
Hastings ratio of the selection, against frequencies and against the enumerated posterior."""

from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import pytest
from test_distributions_data_augmentation import (
    RELEASES,
    STATES,
    STRUCTURE,
    N,
    exact_moments,
    max_z,
)

from pymc_rdp.distributions import _augmentation_kernels as kernels
from pymc_rdp.distributions.augmentation_chain import ChainMoves
from pymc_rdp.distributions.augmentation_moves import guided_row_proposal, weighted_row_proposal
from pymc_rdp.distributions.data_augmentation import DataAugmentation
from pymc_rdp.privacy.mechanisms import DirichletMechanism, GaussianMechanism


def _log_selection(size, k1, k2, m, max_m):
    """log q(reverse) − log q(forward) of the weighted selection, from the module's formula:
    the pair's probability cancels, the direction's is 1 towards an empty cell and 1/2
    otherwise, both ways."""
    n1, n2 = int(size[k1]), int(size[k2])
    d_forward = 1.0 if n2 == 0 else 0.5
    d_reverse = 1.0 if m == n1 else 0.5
    return (
        math.log(d_reverse / d_forward)
        + math.log(min(max_m, n1) / min(max_m, n2 + m))
        + math.log(math.comb(n1, m) / math.comb(n2 + m, m))
    )


@pytest.mark.parametrize("sizes", [[50, 3, 0, 7], [0, 12, 0, 0, 1], [4, 4, 4]])
def test_pairs_are_drawn_in_proportion_to_their_records(sizes):
    """Each unordered pair {a, b} with frequency (n_a + n_b) / ((K − 1) n_c), the direction
    forced towards an empty cell and a coin otherwise, m uniform in 1..min(M, n₁), and the
    returned log ratio equal to the formula's."""
    size = np.array([0, *sizes, 0], dtype=np.int64)  # the row's cells start at local cell 1
    kv, first, max_m = len(sizes), 1, 5
    nonempty = int(np.count_nonzero(sizes))
    n_c = sum(sizes)
    kernels.seed(3)
    draws = 40_000
    pairs: Counter = Counter()
    directed: Counter = Counter()
    for _ in range(draws):
        l1, l2, m, after, log_sel = weighted_row_proposal(size, first, kv, nonempty, max_m)
        k1, k2 = l1 - first, l2 - first
        assert k1 != k2 and sizes[k1] > 0
        assert 1 <= m <= min(max_m, sizes[k1])
        assert after == nonempty - (m == sizes[k1]) + (sizes[k2] == 0)
        assert log_sel == pytest.approx(_log_selection(sizes, k1, k2, m, max_m), abs=1e-12)
        pairs[frozenset((k1, k2))] += 1
        directed[k1, k2] += 1
    for a in range(kv):
        for b in range(a + 1, kv):
            p = (sizes[a] + sizes[b]) / ((kv - 1) * n_c)
            got = pairs[frozenset((a, b))]
            assert abs(got - draws * p) <= 5 * math.sqrt(draws * p * (1 - p)) + 1
            if p and sizes[a] and sizes[b]:  # both non-empty: either way, half the time
                assert abs(directed[a, b] - got / 2) <= 5 * math.sqrt(got / 4) + 1
            elif p:  # towards the empty cell only
                assert directed[(a, b) if sizes[b] else (b, a)] == 0


@pytest.mark.parametrize("sizes", [[50, 3, 0, 7], [0, 12, 0, 0, 1], [4, 4, 4]])
def test_guided_pairs_follow_their_directions(sizes):
    """Each unordered pair {a, b} drawn in proportion to n_a + n_b, its direction read from the
    row's block of ``dirs`` (0: the lower state is the source), no move (m = 0) when that
    source is empty, and the log ratio the weighted one's without the directions' coins."""
    size = np.array([0, *sizes, 0], dtype=np.int64)
    kv, first, max_m, row = len(sizes), 1, 5, 2
    nonempty = int(np.count_nonzero(sizes))
    n_c = sum(sizes)
    rng = np.random.default_rng(5)
    dirs = rng.integers(0, 2, size=(row + 1) * kv * kv).astype(np.int8)
    before = dirs.copy()
    kernels.seed(4)
    draws = 40_000
    pairs: Counter = Counter()
    for _ in range(draws):
        l1, l2, m, after, log_sel, at = guided_row_proposal(
            size, first, kv, nonempty, max_m, dirs, row
        )
        k1, k2 = l1 - first, l2 - first
        lo, hi = min(k1, k2), max(k1, k2)
        assert at == (row * kv + lo) * kv + hi
        assert (k1, k2) == ((lo, hi) if dirs[at] == 0 else (hi, lo))
        pairs[frozenset((k1, k2))] += 1
        if sizes[k1] == 0:
            assert m == 0
            continue
        assert 1 <= m <= min(max_m, sizes[k1])
        assert after == nonempty - (m == sizes[k1]) + (sizes[k2] == 0)
        n1, n2 = sizes[k1], sizes[k2]
        expected = math.log(min(max_m, n1) / min(max_m, n2 + m)) + math.log(
            math.comb(n1, m) / math.comb(n2 + m, m)
        )
        assert log_sel == pytest.approx(expected, abs=1e-12)
    np.testing.assert_array_equal(dirs, before)  # the proposal reads the directions only
    for a in range(kv):
        for b in range(a + 1, kv):
            p = (sizes[a] + sizes[b]) / ((kv - 1) * n_c)
            got = pairs[frozenset((a, b))]
            assert abs(got - draws * p) <= 5 * math.sqrt(draws * p * (1 - p)) + 1


@pytest.mark.parametrize("name", ["weighted_pairs", "guided_pairs"])
def test_pair_settings_are_stored_and_checked(name):
    """Either per-node setting is stored in the attrs; a dict key that is not a node is a
    ValueError and a value that is not a bool a TypeError, both naming the setting."""
    many, many_states, _, releases = _many_states()
    setting = {"a": False, "b": True, "c": False}  # each default differs on some node
    idata = DataAugmentation(STRUCTURE, STATES, RELEASES["gaussian"](), N, **{name: setting})
    idata = idata.sample(draws=2, tune=0, chains=1, random_seed=0)
    assert json.loads(idata.attrs[name]) == setting
    with pytest.raises(ValueError, match=rf"{name}: \['zz'\] are not nodes"):
        DataAugmentation(many, many_states, releases, N, **{name: {"zz": True}})
    for bad in (1, "yes"):
        with pytest.raises(TypeError, match=f"{name} must be True or False"):
            DataAugmentation(many, many_states, releases, N, **{name: bad})


@pytest.mark.parametrize(
    ("mechanism", "moves"),
    [
        ("gaussian", ("subtree",)),
        ("laplace", ("subtree",)),
        ("dirichlet", ("subtree",)),
        ("gaussian", ("gibbs", "gibbs", "subtree", "diffuse_pair")),  # the count releases'
    ],  # default moves
)
@pytest.mark.parametrize("name", ["weighted_pairs", "guided_pairs"])
def test_weighted_and_guided_pairs_match_enumeration(name, mechanism, moves):
    """Subtree moves with every node's pairs weighted by their records, or also keeping their
    directions until a rejection (N = 5 records over two and three states: empty cells,
    forced directions, emptied sources and reversed directions are frequent)."""
    releases = RELEASES[mechanism]()
    da = DataAugmentation(
        STRUCTURE, STATES, releases, N, moves=moves, block_size=3, row_moves=2, **{name: True}
    )
    assert set(getattr(da, name).values()) == {True}
    idata = da.sample(draws=4000, tune=200, chains=2, random_seed=13)
    assert json.loads(idata.attrs[name]) == getattr(da, name)
    assert float(idata["sample_stats"]["accept_subtree"].mean()) > 0.05
    assert max_z(idata, exact_moments(STRUCTURE, STATES, releases, N)) < 4.5


def _many_states():
    """Three nodes with 8, 7 and 20 states (``c`` a child of ``b``) and Gaussian releases of
    their tables: ``(structure, states, table shapes, releases)``."""
    g = GaussianMechanism(1.2, math.sqrt(2))
    many = {"a": [], "b": [], "c": ["b"]}
    many_states = {"a": list(range(8)), "b": list(range(7)), "c": list(range(20))}
    shapes = {"a": (8,), "b": (7,), "c": (7, 20)}
    return many, many_states, shapes, {v: (np.zeros(shape), g) for v, shape in shapes.items()}


def test_default_weighted_pairs():
    """By default the nodes with more than seven states weigh their pairs, for count releases;
    none for Dirichlet releases."""
    many, many_states, _, releases = _many_states()
    da = DataAugmentation(many, many_states, releases, N)
    assert da.weighted_pairs == {"a": True, "b": False, "c": True}
    da = DataAugmentation(many, many_states, releases, N, weighted_pairs={"a": False})
    assert da.weighted_pairs == {"a": False, "b": False, "c": True}
    assert DataAugmentation(many, many_states, releases, N, weighted_pairs=True).weighted_pairs == (
        dict.fromkeys(many, True)
    )
    dirichlet = DataAugmentation(STRUCTURE, STATES, RELEASES["dirichlet"](), N)
    assert dirichlet.weighted_pairs == dict.fromkeys(STRUCTURE, False)


def test_default_guided_pairs():
    """By default every node of a count release keeps its pairs' directions, and gets a block
    of them (rows × K × K); a node switched off gets none; no node when every release is a
    Dirichlet release, one when any is not."""
    many, many_states, shapes, releases = _many_states()
    da = DataAugmentation(many, many_states, releases, N)
    assert da.guided_pairs == dict.fromkeys(many, True)
    chain = ChainMoves(da, da._chain_start(0), tune=0, adapt=False)
    assert [len(dirs) for _, _, dirs in chain._trees] == [8 * 8, 7 * 7, 7 * 20 * 20]
    da = DataAugmentation(many, many_states, releases, N, guided_pairs={"b": False})
    assert da.guided_pairs == {"a": True, "b": False, "c": True}
    chain = ChainMoves(da, da._chain_start(0), tune=0, adapt=False)
    assert [len(dirs) for _, _, dirs in chain._trees] == [8 * 8, 0, 7 * 20 * 20]
    assert DataAugmentation(many, many_states, releases, N, guided_pairs=False).guided_pairs == (
        dict.fromkeys(many, False)
    )
    d = DirichletMechanism(0.6, 1.5, math.sqrt(2), 1.0)
    rows = {v: np.full(shape, 1.0 / shape[-1]) for v, shape in shapes.items()}
    dirichlet = DataAugmentation(many, many_states, {v: (rows[v], d) for v in many}, N)
    assert dirichlet.guided_pairs == dict.fromkeys(many, False)  # more than seven states too
    mixed = DataAugmentation(many, many_states, {**releases, "a": (rows["a"], d)}, N)
    assert mixed.guided_pairs == dict.fromkeys(many, True)
