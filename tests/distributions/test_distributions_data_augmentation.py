"""The data-augmentation sampler against exact posteriors.

The oracle enumerates every table of joint-configuration counts of N records (stars and bars) and
weights it by the Dirichlet–multinomial marginal of the records times the mechanism's density of
the released family tables; the posterior moments of every CPT entry are then exact mixtures of
Dirichlet moments. The sampler's means and second moments must agree within Monte-Carlo error
(ESS-aware), and the same comparison must reject a sampler run on a wrong density.
"""

from __future__ import annotations

import itertools
import json
import math
from functools import partial

import numpy as np
import pytest
from scipy.special import gammaln

from pymc_rdp.distributions import _augmentation_kernels as kernels
from pymc_rdp.distributions.data_augmentation import (
    MOVES,
    OBSERVATIONS,
    RECORD_DTYPE,
    DataAugmentation,
    sample_augmentation,
)
from pymc_rdp.privacy.mechanisms import DirichletMechanism, GaussianMechanism, LaplaceMechanism

STRUCTURE = {"a": [], "b": ["a"], "c": ["a", "b"]}
STATES = {"a": [0, 1], "b": [0, 1, 2], "c": [0, 1]}
N = 5


# ------------------------------------------------------------------------------- the oracle


def _compositions(n: int, parts: int):
    for bars in itertools.combinations(range(n + parts - 1), parts - 1):
        prev = -1
        out = []
        for b in (*bars, n + parts - 1):
            out.append(b - prev - 1)
            prev = b
        yield np.array(out)


def _family_tables(joint: np.ndarray, structure, cards) -> dict[str, np.ndarray]:
    nodes = list(structure)
    axes = {v: i for i, v in enumerate(nodes)}
    arr = joint.reshape([cards[v] for v in nodes])
    out = {}
    for v in nodes:
        keep = [*structure[v], v]
        other = tuple(i for u, i in axes.items() if u not in keep)
        marg = arr.sum(axis=other)
        kept = [u for u in nodes if u in keep]
        marg = np.transpose(marg, [kept.index(u) for u in keep])
        out[v] = marg.reshape(-1, cards[v])
    return out


def _log_eta(tables, releases) -> float:
    total = 0.0
    for v, (values, mech) in releases.items():
        s = tables[v]
        if mech.name == "gaussian":
            total -= float(np.sum((np.asarray(values).reshape(s.shape) - s) ** 2)) / (
                2 * mech.sigma**2
            )
        elif mech.name == "laplace":
            total -= float(np.sum(np.abs(np.asarray(values).reshape(s.shape) - s))) / mech.scale
        else:
            conc = float(mech.r) * s + np.asarray(mech.alpha, dtype=np.float64)
            theta = np.asarray(values)
            total += float(
                np.sum(gammaln(conc.sum(axis=1)))
                - np.sum(gammaln(conc))
                + np.sum((conc - 1) * np.log(theta))
            )
    return total


def exact_moments(structure, states, releases, n, alpha0=1.0):
    """Exact E[θ] and E[θ²] of every CPT entry: node -> (mean, second moment) arrays."""
    cards = {v: len(s) for v, s in states.items()}
    j = int(np.prod(list(cards.values())))
    logw, first, second = [], [], []
    for joint in _compositions(n, j):
        tables = _family_tables(joint, structure, cards)
        score, m1, m2 = score_and_moments(tables, cards, alpha0)
        lw = gammaln(n + 1) - np.sum(gammaln(joint + 1)) + score
        logw.append(lw + _log_eta(tables, releases))
        first.append(m1)
        second.append(m2)
    return mixed_moments(logw, first, second, structure)


def score_and_moments(tables, cards, alpha0):
    """The Bayesian-Dirichlet log marginal of ordered records with these family tables, and
    each CPT entry's first and second moments given them: ``(score, m1, m2)``."""
    score, m1, m2 = 0.0, {}, {}
    for v, s in tables.items():
        a = alpha0 + s
        big = a.sum(axis=1, keepdims=True)
        score += float(
            np.sum(gammaln(a))
            - np.sum(gammaln(big))
            - s.shape[0] * (cards[v] * gammaln(alpha0) - gammaln(cards[v] * alpha0))
        )
        m1[v] = a / big
        m2[v] = a * (a + 1) / (big * (big + 1))
    return score, m1, m2


def mixed_moments(logw, first, second, nodes):
    """The moments of the mixture with log weights ``logw``: node -> (mean, second moment)."""
    w = np.exp(np.array(logw) - np.max(logw))
    w /= w.sum()
    return {
        v: (
            sum(wi * f[v] for wi, f in zip(w, first, strict=True)),
            sum(wi * s[v] for wi, s in zip(w, second, strict=True)),
        )
        for v in nodes
    }


def _ess(draws: np.ndarray) -> np.ndarray:
    """Bulk ESS of every entry of (chain, draw, ...) draws."""
    import arviz as az

    out = np.empty(draws.shape[2:])
    for idx in np.ndindex(*draws.shape[2:]):
        out[idx] = float(az.ess(draws[(slice(None), slice(None), *idx)]))
    return out


def max_z(idata, exact) -> float:
    """Largest |z| of the sampler's first and second moments against the exact ones."""
    worst = 0.0
    for v, (m1, m2) in exact.items():
        flat = idata["posterior"][f"{v}_cpt"].to_numpy()  # (chain, draw, cells)
        draws = flat.reshape(*flat.shape[:2], *np.shape(m1))
        sd1 = np.sqrt(np.maximum(m2 - m1**2, 1e-12))
        z1 = (draws.mean(axis=(0, 1)) - m1) / (sd1 / np.sqrt(_ess(draws)))
        sq = draws**2
        sd2 = sq.reshape(-1, *sq.shape[2:]).std(axis=0) + 1e-12
        z2 = (sq.mean(axis=(0, 1)) - m2) / (sd2 / np.sqrt(_ess(sq)))
        worst = max(worst, float(np.max(np.abs(z1))), float(np.max(np.abs(z2))))
    return worst


# ------------------------------------------------------------------------------ releases


def _gaussian_releases():
    g = GaussianMechanism(1.2, math.sqrt(2))
    # fixed released values: the test is about the posterior, not the noise
    return {
        "a": (np.array([3.6, 0.7]), g),
        "b": (np.array([[0.4, 1.9, 1.2], [-0.6, 0.3, 1.1]]), g),
        "c": (
            np.array([[0.2, 1.4], [0.8, -0.3], [1.7, 0.1], [0.0, 0.6], [1.3, -0.2], [0.4, 0.9]]),
            g,
        ),
    }


def _laplace_releases():
    lap = LaplaceMechanism(0.9, 2.0)
    rel = _gaussian_releases()
    return {v: (y, lap) for v, (y, _) in rel.items()}


def _dirichlet_releases():
    mech = DirichletMechanism(0.6, 1.5, math.sqrt(2), 1.0)
    return {
        "a": (np.array([[0.8, 0.2]]), mech),
        "b": (np.array([[0.1, 0.6, 0.3], [0.3, 0.3, 0.4]]), mech),
        "c": (
            np.array([[0.5, 0.5], [0.7, 0.3], [0.9, 0.1], [0.4, 0.6], [0.2, 0.8], [0.5, 0.5]]),
            mech,
        ),
    }


def _dirichlet_cell_alpha_releases():
    """The Dirichlet releases with an α of their own per state (no tabulated log Γ terms)."""
    rel = _dirichlet_releases()
    alphas = {"a": np.array([1.5, 0.8]), "b": np.array([1.2, 2.0, 0.7]), "c": np.array([0.6, 2.4])}
    return {
        v: (values, DirichletMechanism(0.6, alphas[v], math.sqrt(2), 1.0))
        for v, (values, _) in rel.items()
    }


RELEASES = {
    "gaussian": _gaussian_releases,
    "laplace": _laplace_releases,
    "dirichlet": _dirichlet_releases,
    "dirichlet_cell_alpha": _dirichlet_cell_alpha_releases,
}

CASES = [
    ("gaussian", ("record",)),
    ("gaussian", ("site",)),
    ("gaussian", ("block",)),
    ("gaussian", ("record", "site", "block")),
    ("laplace", ("site", "block")),
    ("laplace", ("record",)),
    ("dirichlet", ("site", "block")),
    ("dirichlet", ("record",)),
    ("gaussian", ("row_block",)),
    ("laplace", ("row_block",)),
    ("dirichlet", ("row_block",)),
    ("gaussian", ("gibbs",)),
    ("laplace", ("gibbs",)),
    ("dirichlet", ("gibbs",)),
    ("gaussian", ("gibbs", "row_block")),
    ("gaussian", ("subtree",)),
    ("gaussian", ("gibbs", "gibbs", "subtree", "diffuse_pair")),  # the default (count releases)
    ("laplace", ("gibbs", "gibbs", "subtree", "diffuse_pair")),  # a move run twice
    ("laplace", ("subtree",)),
    ("dirichlet", ("subtree",)),
    ("dirichlet", ("gibbs", "subtree")),
    ("dirichlet_cell_alpha", ("record",)),
    ("dirichlet_cell_alpha", ("gibbs", "subtree", "child_row")),  # the earlier default
    ("dirichlet_cell_alpha", ("gibbs", "pair", "subtree", "child_row")),  # the default
    ("dirichlet", ("gibbs", "pair", "subtree", "child_row")),
    ("gaussian", ("gibbs", "pair", "subtree")),
    ("gaussian", ("ancillary",)),
    ("laplace", ("ancillary",)),
    ("dirichlet", ("ancillary",)),
    ("dirichlet_cell_alpha", ("gibbs", "ancillary")),
    ("gaussian", ("gibbs", "swap")),
    ("laplace", ("gibbs", "swap")),
    ("dirichlet", ("gibbs", "swap")),
    ("dirichlet_cell_alpha", ("gibbs", "swap")),
    ("gaussian", ("soma",)),
    ("laplace", ("soma",)),
    ("dirichlet", ("soma",)),
    ("dirichlet_cell_alpha", ("gibbs", "soma")),
]


@pytest.fixture(scope="module")
def exact():
    return {name: exact_moments(STRUCTURE, STATES, make(), N) for name, make in RELEASES.items()}


@pytest.mark.parametrize(
    ("mechanism", "moves"), CASES, ids=[f"{m}-{'+'.join(moves)}" for m, moves in CASES]
)
def test_posterior_matches_enumeration(exact, mechanism, moves):
    da = DataAugmentation(
        STRUCTURE,
        STATES,
        RELEASES[mechanism](),
        N,
        moves=moves,
        block_size=3,
        block_moves=4,
        row_moves=2,
    )
    idata = da.sample(draws=4000, tune=200, chains=2, random_seed=11)
    assert max_z(idata, exact[mechanism]) < 4.5


#: a v-structure, where the child-row moves apply: a and b move within rows of c
V_STRUCTURE = {"a": [], "b": [], "c": ["a", "b"]}
V_STATES = {"a": [0, 1], "b": [0, 1, 2], "c": [0, 1]}


def _v_releases(mechanism: str):
    if mechanism == "gaussian":
        g = GaussianMechanism(1.2, math.sqrt(2))
        return {
            "a": (np.array([3.6, 0.7]), g),
            "b": (np.array([1.4, 2.9, -0.2]), g),
            "c": (_gaussian_releases()["c"][0], g),
        }
    mech = DirichletMechanism(0.6, 1.5, math.sqrt(2), 1.0)
    return {
        "a": (np.array([[0.8, 0.2]]), mech),
        "b": (np.array([[0.1, 0.6, 0.3]]), mech),
        "c": (
            np.array([[0.5, 0.5], [0.7, 0.3], [0.9, 0.1], [0.4, 0.6], [0.2, 0.8], [0.5, 0.5]]),
            mech,
        ),
    }


@pytest.mark.parametrize("mechanism", ["gaussian", "dirichlet"])
@pytest.mark.parametrize(
    "moves",
    [("child_row",), ("gibbs", "child_row"), ("gibbs", "pair", "subtree", "child_row")],  # the
)  # last: the default for Dirichlet releases
def test_child_row_moves_match_enumeration(mechanism, moves):
    """Parents' values moved within rows of their child (both edges of the v-structure)."""
    from pymc_rdp.distributions.augmentation_subtree import child_row_edges, descendants

    desc, n_desc = descendants({0: [2], 1: [2]}, 3)
    assert child_row_edges({0: [], 1: [], 2: [0, 1]}, desc, n_desc) == [(0, 2), (1, 2)]
    releases = _v_releases(mechanism)
    da = DataAugmentation(V_STRUCTURE, V_STATES, releases, N, moves=moves, row_moves=2)
    idata = da.sample(draws=4000, tune=200, chains=2, random_seed=17)
    assert float(idata["sample_stats"]["accept_child_row"].mean()) > 0.05
    assert max_z(idata, exact_moments(V_STRUCTURE, V_STATES, releases, N)) < 4.5


@pytest.mark.parametrize("mechanism", ["gaussian", "dirichlet"])
def test_soma_on_subsets_matches_enumeration(mechanism):
    """Each offer tried against 2 of the 5 records, drawn at random: still the exact posterior."""
    releases = RELEASES[mechanism]()
    da = DataAugmentation(STRUCTURE, STATES, releases, N, moves=("soma",), soma_attempts=2)
    idata = da.sample(draws=4000, tune=200, chains=2, random_seed=23)
    assert max_z(idata, exact_moments(STRUCTURE, STATES, releases, N)) < 4.5
    assert float(idata["sample_stats"]["accept_soma"].mean()) > 0.05


#: a chain, where swaps of b move records between a's rows and c's table does not see them
CHAIN = {"a": [], "b": ["a"], "c": ["b"]}
CHAIN_STATES = {"a": [0, 1, 2], "b": [0, 1, 2], "c": [0, 1]}


@pytest.mark.parametrize("mechanism", ["gaussian", "dirichlet"])
def test_swap_moves_match_enumeration(mechanism):
    """Swaps of b (context {c}, parent a outside it) and of c (no children: one group) with
    heat-bath sweeps: the posterior of the chain's CPTs is the enumerated one, and the swaps
    are accepted."""
    from pymc_rdp.distributions.augmentation_swap import swap_contexts

    if mechanism == "gaussian":
        g = GaussianMechanism(1.2, math.sqrt(2))
        releases = {
            "a": (np.array([2.6, 0.7, 1.9]), g),
            "b": (np.array([[1.4, -0.3, 0.2], [0.4, 0.9, -0.6], [0.1, 0.2, 1.7]]), g),
            "c": (np.array([[1.1, 0.2], [0.3, 1.4], [-0.5, 1.2]]), g),
        }
    else:
        mech = DirichletMechanism(0.6, 1.5, math.sqrt(2), 1.0)
        releases = {
            "a": (np.array([[0.5, 0.2, 0.3]]), mech),
            "b": (np.array([[0.6, 0.1, 0.3], [0.2, 0.5, 0.3], [0.3, 0.3, 0.4]]), mech),
            "c": (np.array([[0.7, 0.3], [0.4, 0.6], [0.2, 0.8]]), mech),
        }
    da = DataAugmentation(CHAIN, CHAIN_STATES, releases, N, moves=("gibbs", "swap"))
    net = da._net
    n_ctx, ctx, useful = swap_contexts(net[1], net[2], net[6], net[7], net[0])
    assert useful.tolist() == [False, True, True]  # a has no parents
    assert ctx[1, : n_ctx[1]].tolist() == [2] and n_ctx[2] == 0
    idata = da.sample(draws=4000, tune=200, chains=2, random_seed=23)
    assert float(idata["sample_stats"]["accept_swap"].mean()) > 0.05
    assert max_z(idata, exact_moments(CHAIN, CHAIN_STATES, releases, N)) < 4.5


def test_swap_contexts_of_the_adult_network():
    """On Adult, swaps apply to capital-gain (education outside its context), occupation (age),
    capital-loss (sex) and income (a leaf, one group); not to the roots or to education, whose
    parent age is in its children's families."""
    from pymc_rdp import datasets
    from pymc_rdp.distributions.augmentation_swap import swap_contexts

    structure = dict(datasets.ADULT_DAG)
    nodes = list(structure)
    order = {v: i for i, v in enumerate(nodes)}
    kids = {v: [w for w in nodes if v in structure[w]] for v in nodes}
    card = np.full(len(nodes), 3, dtype=np.int64)
    n_par = np.array([len(structure[v]) for v in nodes], dtype=np.int64)
    n_ch = np.array([len(kids[v]) for v in nodes], dtype=np.int64)
    par = np.full((len(nodes), n_par.max()), -1, dtype=np.int64)
    ch = np.full((len(nodes), n_ch.max()), -1, dtype=np.int64)
    for v in nodes:
        par[order[v], : n_par[order[v]]] = [order[p] for p in structure[v]]
        ch[order[v], : n_ch[order[v]]] = [order[w] for w in kids[v]]
    n_ctx, ctx, useful = swap_contexts(n_par, par, n_ch, ch, card)
    swappable = {v for v in nodes if useful[order[v]]}
    assert swappable == {"occupation", "capital-gain", "capital-loss", "income"}
    cg = order["capital-gain"]
    assert {nodes[i] for i in ctx[cg, : n_ctx[cg]]} == {
        "sex", "occupation", "capital-loss", "income",
    }  # fmt: skip


def test_child_row_edges_skip_what_subtree_moves_cover():
    """No edge whose other parents are the parent's own (the subtree move's selection) or
    hold one of its descendants (the moved records would leave the row)."""
    from pymc_rdp.distributions.augmentation_subtree import child_row_edges, descendants

    parents = {0: [], 1: [0], 2: [0, 1]}  # the test network a -> b, (a, b) -> c
    desc, n_desc = descendants({0: [1, 2], 1: [2]}, 3)
    assert child_row_edges(parents, desc, n_desc) == []


def test_child_row_edges_of_the_adult_network():
    """On Adult: an edge p -> w whose other parents hold a descendant of p is left out (age ->
    occupation: education is below age), and so is one whose other parents are p's own (age ->
    education); parents pooled over one of their own parents stay (occupation -> capital-gain
    pools the ages)."""
    from pymc_rdp import datasets
    from pymc_rdp.bn.structure import parse_structure
    from pymc_rdp.distributions.augmentation_subtree import child_row_edges, descendants

    structure, _ = parse_structure(dict(datasets.ADULT_DAG))
    order = list(structure.order)
    parents = {order.index(w): [order.index(q) for q in structure.parents[w]] for w in order}
    children = {i: [w for w, ps in parents.items() if i in ps] for i in parents}
    desc, n_desc = descendants(children, len(order))
    edges = {(order[p], order[w]) for p, w in child_row_edges(parents, desc, n_desc)}
    assert edges == {
        ("sex", "occupation"),
        ("education", "occupation"),
        ("occupation", "capital-gain"),
        ("capital-gain", "capital-loss"),
        ("capital-loss", "income"),
    }


@pytest.mark.parametrize("mechanism", ["gaussian", "dirichlet"])
def test_record_by_record_heat_bath_matches_enumeration(exact, mechanism):
    """The heat-bath sweep with no grouping (every Markov-blanket key space over the limit):
    records one at a time, their weights summed from cached factor terms."""
    da = DataAugmentation(STRUCTURE, STATES, RELEASES[mechanism](), N, moves=("gibbs",))
    da._key_space_limit = 0.0
    idata = da.sample(draws=4000, tune=200, chains=2, random_seed=13)
    assert max_z(idata, exact[mechanism]) < 4.5


@pytest.mark.parametrize("mechanism", ["gaussian", "dirichlet"])
def test_later_sweeps_over_some_nodes_match_enumeration(exact, mechanism, monkeypatch):
    """An iteration's later heat-bath sweeps restricted to the nodes found diffuse (here forced
    to node b alone): the scan is still a composition of Gibbs kernels of the target."""
    from pymc_rdp.distributions import augmentation_chain

    only_b = np.array([False, True, False])
    monkeypatch.setattr(augmentation_chain, "diffuse_nodes", lambda tally: only_b)
    da = DataAugmentation(
        STRUCTURE, STATES, RELEASES[mechanism](), N, moves=("gibbs", "gibbs", "subtree")
    )
    idata = da.sample(draws=4000, tune=200, chains=2, random_seed=19)
    assert max_z(idata, exact[mechanism]) < 4.5


def _one_free_node_releases() -> dict:
    """Releases of 30 records where b's table says nothing (σ = 10⁶), so its records move
    freely, and a's and c's tables hold theirs (every record at a = 0, b's three states 10 each
    under it, c = 0)."""
    c_table = np.array([[10.0, 0], [10, 0], [10, 0], [0, 0], [0, 0], [0, 0]])
    return {
        "a": (np.array([30.0, 0.0]), GaussianMechanism(0.5, math.sqrt(2))),
        "b": (np.zeros((2, 3)), GaussianMechanism(1e6, math.sqrt(2))),
        "c": (c_table, GaussianMechanism(3.0, math.sqrt(2))),
    }


def test_later_sweeps_visit_the_nodes_whose_records_moved_in_half_their_updates(monkeypatch):
    """With adaptation, an iteration's first heat-bath sweep visits every node and the later ones
    the nodes whose records changed state in at least half of their updates over the first 20
    tuning iterations (the sweeps' own tallies, recorded here); without it every sweep visits
    every node."""
    from pymc_rdp.distributions import augmentation_gibbs as kg

    calls: list[tuple[np.ndarray, np.ndarray]] = []
    sweep = kg.gibbs_sweep

    def recording(x, net, obs, cell_n, row_n, limit, active, tally, one_by_one):
        before = x.copy()
        out = sweep(x, net, obs, cell_n, row_n, limit, active, tally, one_by_one)
        calls.append((active.copy(), (x != before).sum(axis=0)))
        return out

    monkeypatch.setattr(kg, "gibbs_sweep", recording)
    releases = _one_free_node_releases()
    da = DataAugmentation(STRUCTURE, STATES, releases, 30, moves=("gibbs", "gibbs", "gibbs"))
    da.run_chain(3, 25, seed=4)
    assert len(calls) == 3 * 28
    moved = np.sum([m for _, m in calls[: 3 * 20]], axis=0)
    share = moved / (3 * 20 * 30)
    assert share[1] >= 0.5 > max(share[0], share[2])  # the case is what it says
    for i, (active, _) in enumerate(calls):
        if i % 3 == 0 or i < 3 * 20:
            assert active.all()
        else:
            np.testing.assert_array_equal(active, share >= 0.5)
    calls.clear()
    da.run_chain(3, 25, seed=4, records=np.zeros((30, 3), dtype=np.int64))  # no adaptation
    assert all(active.all() for active, _ in calls)


@pytest.mark.parametrize("mechanism", ["gaussian", "dirichlet"])
def test_pair_moves_over_the_diffuse_nodes_match_enumeration(exact, mechanism, monkeypatch):
    """The default schedule's shape (two heat-bath sweeps, subtree moves, then pair moves over
    the diffuse nodes, here forced to node b alone): each pair move keeps the target, so pair
    moves over any fixed set of nodes give the enumerated posterior."""
    from pymc_rdp.distributions import augmentation_chain

    only_b = np.array([False, True, False])
    monkeypatch.setattr(augmentation_chain, "diffuse_nodes", lambda tally: only_b)
    moves = ("gibbs", "gibbs", "subtree", "diffuse_pair")
    da = DataAugmentation(STRUCTURE, STATES, RELEASES[mechanism](), N, moves=moves)
    idata = da.sample(draws=4000, tune=200, chains=2, random_seed=23)
    assert 0.0 < float(idata["sample_stats"]["accept_diffuse_pair"].mean()) < 1.0
    assert max_z(idata, exact[mechanism]) < 4.5


@pytest.mark.parametrize("moves", [("gibbs", "gibbs", "diffuse_pair"), ("gibbs", "diffuse_pair")])
def test_pair_moves_over_the_diffuse_nodes_visit_those_nodes_only(monkeypatch, moves):
    """``"diffuse_pair"`` makes no move before the diffuse nodes are known (tuning iteration 20),
    then visits them only, and leaves the other nodes' records as they were (after one heat-bath
    sweep per iteration as after two); without adaptation it visits every node from the first
    iteration; with no diffuse node it makes no move and records a NaN rate."""
    from pymc_rdp.distributions import augmentation_pairs as kp
    from pymc_rdp.distributions import compile_ahead as ahead

    monkeypatch.setattr(ahead, "compile_ahead", lambda calls: ahead._NoHelper())
    calls: list[tuple[np.ndarray, np.ndarray]] = []
    sweep = kp.pair_sweep

    def recording(x, net, obs, cell_n, row_n, widths, log_fact, limit, visit, min_group):
        before = x.copy()
        out = sweep(x, net, obs, cell_n, row_n, widths, log_fact, limit, visit, min_group)
        calls.append((visit.copy(), (x != before).sum(axis=0)))
        return out

    monkeypatch.setattr(kp, "pair_sweep", recording)
    releases = _one_free_node_releases()
    da = DataAugmentation(STRUCTURE, STATES, releases, 30, moves=moves)
    _, stats, _ = da.run_chain(3, 25, seed=4)
    assert len(calls) == 25 + 3 - 20  # from the iteration that fixes the diffuse nodes on
    for visit, moved in calls:
        np.testing.assert_array_equal(visit, [False, True, False])
        assert moved[0] == moved[2] == 0
    assert sum(moved[1] for _, moved in calls) > 0
    assert np.isfinite(stats["accept_diffuse_pair"]).all()
    calls.clear()
    da.run_chain(3, 25, seed=4, records=np.zeros((30, 3), dtype=np.int64))  # no adaptation
    assert len(calls) == 28
    assert all(visit.all() for visit, _ in calls)
    # every release pins its table: no node is diffuse, so no pair move is made
    calls.clear()
    releases["b"] = (np.array([[10.0, 10, 10], [0, 0, 0]]), GaussianMechanism(0.5, math.sqrt(2)))
    da = DataAugmentation(STRUCTURE, STATES, releases, 30, moves=moves)
    _, stats, _ = da.run_chain(3, 25, seed=4)
    assert calls == []
    assert np.isnan(stats["accept_diffuse_pair"]).all()


def test_the_comparison_rejects_a_wrong_density(exact):
    """A sampler whose Gaussian density is too sharp (σ/2, i.e. an acceptance ratio raised to
    the 4th power) must fail the comparison that the correct one passes."""
    da = DataAugmentation(STRUCTURE, STATES, _gaussian_releases(), N, moves=("record",))
    kind, coef, *rest = da._obs
    da._obs = (kind, coef * 4.0, *rest)
    idata = da.sample(draws=4000, tune=200, chains=2, random_seed=11)
    assert max_z(idata, exact["gaussian"]) > 6.0


def test_dirichlet_single_table_matches_grid():
    """K = 2, one table: θ ~ Beta(1, 1), s ~ Binomial(N, θ), θ̃ ~ Beta(r s + α, r (N − s) + α)."""
    n, r, alpha, released = 40, 0.3, 2.0, 0.72
    mech = DirichletMechanism(r, alpha, math.sqrt(2), 1.0)
    da = DataAugmentation(
        {"a": []}, {"a": ["x", "y"]}, {"a": (np.array([[released, 1 - released]]), mech)}, n
    )
    idata = da.sample(draws=4000, tune=200, chains=2, random_seed=3)
    draws = idata["posterior"]["a_cpt"].to_numpy()[:, :, 0]  # cell (config 0, state 0)
    grid = (np.arange(20000) + 0.5) / 20000
    s = np.arange(n + 1)
    log_binom = gammaln(n + 1) - gammaln(s + 1) - gammaln(n - s + 1)
    a, b = r * s + alpha, r * (n - s) + alpha
    log_eta = (
        gammaln(a + b)
        - gammaln(a)
        - gammaln(b)
        + (a - 1) * np.log(released)
        + (b - 1) * np.log(1 - released)
    )
    lik = np.exp(
        log_binom[None, :]
        + s[None, :] * np.log(grid[:, None])
        + (n - s)[None, :] * np.log1p(-grid[:, None])
        + log_eta[None, :]
    ).sum(axis=1)
    dens = lik / lik.sum()
    cdf = np.cumsum(dens)
    mean = float(np.sum(dens * grid))
    sd = float(np.sqrt(np.sum(dens * grid**2) - mean**2))
    ess = _ess(draws[:, :, None])[0]
    assert abs(draws.mean() - mean) < 4.5 * sd / math.sqrt(ess)
    for q in (0.1, 0.5, 0.9):
        cut = grid[np.searchsorted(cdf, q)]
        below = (draws <= cut).astype(float)
        ess_q = _ess(below[:, :, None])[0]
        assert abs(below.mean() - q) < 4.5 * math.sqrt(q * (1 - q) / ess_q)
    # the data say something beyond the prior: the posterior sd is below the Beta(1, 1)'s 0.289
    assert sd < 0.2


# ------------------------------------------------------------------------ kernel invariants


def test_moves_keep_the_tables_consistent_with_the_records():
    da = DataAugmentation(STRUCTURE, STATES, _dirichlet_releases(), 30, moves=MOVES_ALL)
    _, _, x = da.run_chain(draws=20, tune=0, seed=5)
    cell_n = np.zeros(int(da._net[4][-1]), dtype=np.int64)
    row_n = np.zeros(int(da._net[5][-1]), dtype=np.int64)
    kernels.tabulate(x, da._net, cell_n, row_n)
    # tables recomputed from the final records equal the ones kept move by move
    codes = {v: x[:, i] for i, v in enumerate(da.nodes)}
    from pymc_rdp.bn.structure import family_table

    off = da._net[4]
    for i, v in enumerate(da.nodes):
        table = family_table(codes, v, STRUCTURE[v], da.cards)
        np.testing.assert_array_equal(cell_n[off[i] : off[i + 1]], table.reshape(-1))
    assert x.min() >= 0
    assert all(x[:, i].max() < da.cards[v] for i, v in enumerate(da.nodes))


@pytest.mark.parametrize("n", [0, 1, 57])
def test_tabulate_counts_every_cell_and_row_of_the_records(n):
    """The family tables of records counted by ``tabulate`` against a count record by record,
    cells and rows (rows indexed by the parents' states in mixed radix, first parent slowest)."""
    da = DataAugmentation(STRUCTURE, STATES, _dirichlet_releases(), 30)
    card, n_par, par, stride, cell_off, row_off, _, _ = da._net
    rng = np.random.default_rng(n)
    x = np.stack([rng.integers(0, k, n) for k in card], axis=1).astype(RECORD_DTYPE)
    # stale values: tabulate writes every entry
    cell_n = np.full(int(cell_off[-1]), 7, dtype=np.int64)
    row_n = np.full(int(row_off[-1]), 7, dtype=np.int64)
    kernels.tabulate(x, da._net, cell_n, row_n)
    want_cell = np.zeros_like(cell_n)
    want_row = np.zeros_like(row_n)
    for j in range(n):
        for v in range(len(card)):
            c = sum(int(x[j, par[v, p]]) * int(stride[v, p]) for p in range(n_par[v]))
            want_cell[cell_off[v] + c * card[v] + x[j, v]] += 1
            want_row[row_off[v] + c] += 1
    np.testing.assert_array_equal(cell_n, want_cell)
    np.testing.assert_array_equal(row_n, want_row)
    assert row_n.sum() == cell_n.sum() == n * len(card)


MOVES_ALL = MOVES


@pytest.mark.parametrize("releases", [_dirichlet_releases, _laplace_releases])
def test_records_held_as_int32_give_the_draws_of_int64_records(releases, monkeypatch):
    """A chain keeps its records as ``RECORD_DTYPE`` (int32); every move draws from them what
    it would draw from int64 records, the codes being widened before any arithmetic."""
    from pymc_rdp.distributions import data_augmentation

    da = DataAugmentation(STRUCTURE, STATES, releases(), 30, moves=MOVES_ALL)
    theta, stats, x = da.run_chain(draws=12, tune=4, seed=5)
    assert x.dtype == data_augmentation.RECORD_DTYPE == np.int32
    monkeypatch.setattr(data_augmentation, "RECORD_DTYPE", np.int64)
    theta64, stats64, x64 = da.run_chain(draws=12, tune=4, seed=5)
    assert x64.dtype == np.int64
    np.testing.assert_array_equal(theta, theta64)
    np.testing.assert_array_equal(x, x64)
    for move in stats:
        np.testing.assert_array_equal(stats[move], stats64[move])


@pytest.mark.parametrize(
    "records, error, match",
    [
        (np.zeros((30, 2), dtype=np.int64), ValueError, "shape"),
        (np.zeros((30, 3)), TypeError, "integer state codes"),
        (np.full((30, 3), -1), ValueError, "state codes from 0"),
        (np.tile([1, 3, 1], (30, 1)), ValueError, "state codes from 0"),  # b has 3 states
    ],
)
def test_records_given_to_a_chain_are_checked(records, error, match):
    da = DataAugmentation(STRUCTURE, STATES, _gaussian_releases(), 30)
    with pytest.raises(error, match=match):
        da.run_chain(2, 0, seed=1, records=records)


@pytest.mark.parametrize("known_n", [True, False])
def test_a_chain_writes_its_draws_into_the_array_given(known_n):
    """``out`` receives the draws the chain returns without it (``sample`` hands each chain its
    slice of one array); the unknown-N chain does the same."""
    from pymc_rdp.distributions.unknown_total import run_chain_unknown_total

    kw = {"n_records": N} if known_n else {"n_records": None, "n_prior": np.ones(9)}
    da = DataAugmentation(STRUCTURE, STATES, _gaussian_releases(), **kw)
    run = da.run_chain if known_n else partial(run_chain_unknown_total, da)
    theta, _, _ = run(6, 2, 4)
    out = np.full((6, theta.shape[1]), np.nan)
    given, _, _ = run(6, 2, 4, out=out)
    assert given is out
    np.testing.assert_array_equal(out, theta)
    idata = da.sample(draws=6, tune=2, chains=2, random_seed=8, cores=2)
    seeds = np.random.SeedSequence(8).generate_state(2)
    np.testing.assert_array_equal(
        idata["posterior"]["a_cpt"].to_numpy()[1], run(6, 2, int(seeds[1]))[0][:, :2]
    )


@pytest.mark.parametrize(
    "make, error, match",
    [
        (lambda cells: np.zeros((6, cells - 1)), ValueError, "shape"),
        (lambda cells: np.zeros((5, cells)), ValueError, "shape"),
        (lambda cells: np.zeros((6, cells), dtype=np.float32), TypeError, "float64"),
        (lambda cells: [[0.0] * cells] * 6, TypeError, "float64 numpy array"),
        (lambda cells: np.broadcast_to(np.zeros(cells), (6, cells)), ValueError, "writeable"),
    ],
)
def test_a_bad_array_for_the_draws_is_refused(make, error, match):
    da = DataAugmentation(STRUCTURE, STATES, _gaussian_releases(), N)
    with pytest.raises(error, match=match):
        da.run_chain(6, 0, seed=1, out=make(int(da._net[4][-1])))


@pytest.mark.parametrize(
    "records, error, match",
    [
        (np.zeros((4, 2), dtype=np.int64), ValueError, "shape"),
        (np.zeros((9, 3), dtype=np.int64), ValueError, "N <= 8"),  # n_prior covers 0..8
        (np.zeros((4, 3)), TypeError, "integer state codes"),
        (np.full((4, 3), -1), ValueError, "state codes from 0"),
        (np.tile([0, 3, 0], (4, 1)), ValueError, "state codes from 0"),  # b has 3 states
    ],
)
def test_records_given_to_an_unknown_n_chain_are_checked(records, error, match):
    """The unknown-N chain checks records it is given as the known-N chain does: its kernels
    index the tables with them unchecked."""
    from pymc_rdp.distributions.unknown_total import run_chain_unknown_total

    da = DataAugmentation(STRUCTURE, STATES, _gaussian_releases(), None, n_prior=np.ones(9))
    with pytest.raises(error, match=match):
        run_chain_unknown_total(da, 2, 0, 1, records=records)


def test_an_unknown_n_chain_holds_int32_records_with_the_draws_of_int64_ones():
    from pymc_rdp.distributions.unknown_total import run_chain_unknown_total

    da = DataAugmentation(STRUCTURE, STATES, _gaussian_releases(), None, n_prior=np.ones(9))
    start = np.array([[0, 1, 0], [1, 2, 1], [0, 0, 1], [1, 1, 0]])
    runs = [
        run_chain_unknown_total(da, 30, 5, 2, records=start.astype(dtype))
        for dtype in (np.int64, np.int32)
    ]
    assert all(x.dtype == RECORD_DTYPE for _, _, x in runs)
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1]["n_records"], runs[1][1]["n_records"])
    assert len(set(runs[0][1]["n_records"].tolist())) > 1  # births and deaths happened


def test_tabulated_dirichlet_terms_are_the_log_gamma_terms():
    """One α over a table: its log Γ terms come from tables of n = 0..N; the target and the
    heat-bath draws are those of the per-cell ``math.lgamma`` terms."""
    from pymc_rdp.distributions import augmentation_gibbs as gibbs

    n = 30
    da = DataAugmentation(STRUCTURE, STATES, _dirichlet_releases(), n, moves=("gibbs",))
    kind = da._obs[0]
    assert set(kind.tolist()) == {kernels.KIND_DIRICHLET_TABLED}
    assert da._obs[-1].shape == (len(da.nodes), n + 1)
    untabled = (np.full_like(kind, kernels.KIND_DIRICHLET), *da._obs[1:])
    rng = np.random.default_rng(4)
    x = np.stack([rng.integers(0, da.cards[v], n) for v in da.nodes], axis=1)
    tables = []
    for obs in (da._obs, untabled):
        cell_n = np.zeros(int(da._net[4][-1]), dtype=np.int64)
        row_n = np.zeros(int(da._net[5][-1]), dtype=np.int64)
        kernels.tabulate(x, da._net, cell_n, row_n)
        tables.append((cell_n, row_n))
        for bd in (True, False):
            assert kernels.log_target(cell_n, row_n, bd, da._net, obs) == pytest.approx(
                kernels.log_target(cell_n, row_n, bd, da._net, untabled), rel=1e-12
            )
    # the same generator state gives the same sweeps under either form of the terms
    runs = []
    for obs, (cell_n, row_n) in zip((da._obs, untabled), tables, strict=True):
        y = x.copy()
        kernels.seed(17)
        for _ in range(5):
            gibbs.gibbs_sweep(y, da._net, obs, cell_n, row_n)
        runs.append(y)
    np.testing.assert_array_equal(runs[0], runs[1])
    # an α of its own per state keeps the log Γ terms per cell (no tables)
    cells = DataAugmentation(STRUCTURE, STATES, _dirichlet_cell_alpha_releases(), n)
    assert set(cells._obs[0].tolist()) == {kernels.KIND_DIRICHLET}
    assert cells._obs[-1].shape == (len(cells.nodes), 1)


def test_result_layout_matches_bayesian_network_names():
    da = DataAugmentation(STRUCTURE, STATES, _gaussian_releases(), N, moves=("site", "block"))
    idata = da.sample(draws=30, tune=5, chains=3, random_seed=0)
    post = idata["posterior"]
    assert set(post.data_vars) == {"a_cpt", "b_cpt", "c_cpt"}
    assert post["c_cpt"].dims == ("chain", "draw", "c_cell")  # one flat dim per CPT
    assert post.sizes["chain"] == 3 and post.sizes["draw"] == 30
    labels = list(post["c_cell"].values)
    assert labels[:2] == [f"a=0,b=0 | c={s}" for s in STATES["c"][:2]]
    rows = post["c_cpt"].to_numpy().reshape(3, 30, -1, len(STATES["c"]))
    np.testing.assert_allclose(rows.sum(axis=-1), 1.0, rtol=1e-12)
    assert {"accept_site", "accept_block"} <= set(idata["sample_stats"].data_vars)
    rates = idata["sample_stats"]["accept_site"].to_numpy()
    assert ((rates >= 0) & (rates <= 1)).all()


def test_chains_are_reproducible_from_the_mcmc_seed():
    da = DataAugmentation(STRUCTURE, STATES, _gaussian_releases(), N)
    a = da.sample(draws=20, tune=5, chains=2, random_seed=4)["posterior"]["b_cpt"].to_numpy()
    b = da.sample(draws=20, tune=5, chains=2, random_seed=4)["posterior"]["b_cpt"].to_numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a[0], a[1])


@pytest.mark.parametrize("moves", [("gibbs", "subtree"), ("record",)])
def test_chains_in_threads_give_the_draws_of_chains_in_turn(moves):
    """Each chain seeds numba's generator of its own thread: the draws do not depend on how
    many chains run at once (an unknown N runs the record move with birth/death moves)."""
    kw = {"n_records": N} if moves != ("record",) else {"n_records": None, "n_prior": np.ones(9)}
    da = DataAugmentation(STRUCTURE, STATES, _gaussian_releases(), moves=moves, **kw)
    one = da.sample(draws=15, tune=5, chains=3, random_seed=8, cores=1)["posterior"]
    three = da.sample(draws=15, tune=5, chains=3, random_seed=8, cores=3)["posterior"]
    np.testing.assert_array_equal(one["c_cpt"].to_numpy(), three["c_cpt"].to_numpy())


def test_default_moves_follow_the_releases():
    """Additive noise: two Gibbs sweeps, subtree moves and pair moves over the diffuse nodes;
    Dirichlet releases: one Gibbs sweep,
    pair moves, subtree moves and child-row moves; an unknown N: record moves (with birth/death
    moves)."""
    assert DataAugmentation(STRUCTURE, STATES, _gaussian_releases(), N).moves == (
        "gibbs",
        "gibbs",
        "subtree",
        "diffuse_pair",
    )
    assert DataAugmentation(STRUCTURE, STATES, _dirichlet_releases(), N).moves == (
        "gibbs",
        "pair",
        "subtree",
        "child_row",
    )
    unknown = DataAugmentation(STRUCTURE, STATES, _gaussian_releases(), None, n_prior=np.ones(9))
    assert unknown.moves == ("record",)


@pytest.mark.parametrize(
    ("releases", "factor"),
    [(_gaussian_releases, 1), (_laplace_releases, 1), (_dirichlet_releases, 4)],
)
def test_block_sizes_adapt_up_to_the_block_size_for_count_releases(monkeypatch, releases, factor):
    """During tuning every row-block size adapts within 1..block_size for Gaussian and Laplace
    releases and within 1..4 block_size for Dirichlet releases: the caps the chain hands to
    each adaptation step, recorded, and the sizes it returns never above them."""
    from pymc_rdp.distributions import augmentation_chain

    seen: list[tuple[float, int]] = []
    step = augmentation_chain.adapted

    def recording(size: float, rate: float, it: int, cap: int) -> float:
        out = step(size, rate, it, cap)
        seen.append((out, cap))
        return out

    monkeypatch.setattr(augmentation_chain, "adapted", recording)
    da = DataAugmentation(
        STRUCTURE, STATES, releases(), N, moves=("subtree", "row_block"), block_size=3
    )
    da.run_chain(2, 10, seed=1)
    assert seen
    assert {cap for _, cap in seen} == {3 * factor}
    assert all(1.0 <= size <= cap for size, cap in seen)


def test_default_row_moves_cap_a_node_with_few_rows():
    """max(2, min(C, ceil(B / rows))) per non-empty row, B = 1000, C = min(30, max(15, 2 K)),
    for additive noise (a root would make 1000 proposals without the cap; a wide table keeps to
    the budget, not one proposal per state); max(K, ceil(20 / rows)) for Dirichlet releases,
    whose budget is under the cap; stored in the attrs."""
    da = DataAugmentation(STRUCTURE, STATES, _gaussian_releases(), N)
    assert da.row_moves == {"a": 15, "b": 15, "c": 15}  # rows 1, 2, 6: 1000, 500, 167 uncapped
    wide = {
        "a": [], "b": [], "c": ["a", "b"], "d": ["a", "b", "c"], "e": ["a", "b", "c", "d"],
        "f": ["a", "b", "c", "d", "e"],
    }  # fmt: skip
    states = {
        "a": list(range(6)), "b": list(range(6)), "c": [0, 1], "d": [0, 1, 2],
        "e": list(range(7)), "f": [0, 1, 2],
    }  # fmt: skip
    g = GaussianMechanism(1.2, math.sqrt(2))
    shapes = {"a": (6,), "b": (6,), "c": (36, 2), "d": (72, 3), "e": (216, 7), "f": (1512, 3)}
    releases = {v: (np.zeros(shape), g) for v, shape in shapes.items()}
    da = DataAugmentation(wide, states, releases, N)
    # rows 1, 1, 36, 72, 216 and 1512: c capped (ceil(1000 / 36) = 28), d takes 14, e
    # ceil(1000 / 216) = 5 < K = 7, f the floor 2
    assert da.row_moves == {"a": 15, "b": 15, "c": 15, "d": 14, "e": 5, "f": 2}
    # a node with more than 7 states: two proposals per state, at most 30
    many = {"a": [], "b": [], "c": ["b"]}
    many_states = {"a": list(range(12)), "b": list(range(20)), "c": [0, 1]}
    many_shapes = {"a": (12,), "b": (20,), "c": (20, 2)}
    releases = {v: (np.zeros(shape), g) for v, shape in many_shapes.items()}
    da = DataAugmentation(many, many_states, releases, N)
    assert da.row_moves == {"a": 24, "b": 30, "c": 15}  # c: 20 rows, ceil(1000 / 20) = 50
    dirichlet = DataAugmentation(STRUCTURE, STATES, _dirichlet_releases(), N)
    assert dirichlet.row_moves == {"a": 20, "b": 10, "c": 4}  # ceil(20 / rows), at least K
    idata = DataAugmentation(STRUCTURE, STATES, _gaussian_releases(), N).sample(
        draws=2, tune=0, chains=1, random_seed=0
    )
    assert json.loads(idata.attrs["row_moves"]) == {"a": 15, "b": 15, "c": 15}


@pytest.mark.parametrize("known_n", [True, False])
def test_a_time_limit_keeps_the_first_draws_of_the_same_chains(known_n):
    """A limit that has passed before the first kept draw leaves each chain one draw: the first
    draw of the chain without a limit (an unknown N runs its own chain loop)."""
    kw = {"n_records": N} if known_n else {"n_records": None, "n_prior": np.ones(9)}
    moves = None if known_n else ("record",)
    da = DataAugmentation(STRUCTURE, STATES, _gaussian_releases(), moves=moves, **kw)
    full = da.sample(draws=12, tune=4, chains=1, random_seed=5)
    with pytest.warns(
        UserWarning, match=r"time_limit=1e-09 s passed .* cut to 1 draw of the 12"
    ) as caught:
        cut = da.sample(draws=12, tune=4, chains=1, random_seed=5, time_limit=1e-9)
    assert [w.filename for w in caught] == [__file__]  # points at the caller's line
    assert cut["posterior"].sizes["draw"] == 1 and cut.attrs["time_limit"] == 1e-9
    for name in full["posterior"].data_vars:
        first = full["posterior"][name].to_numpy()[:, :1]
        np.testing.assert_array_equal(cut["posterior"][name].to_numpy(), first)
    for name in full["sample_stats"].data_vars:
        first = full["sample_stats"][name].to_numpy()[:, :1]
        np.testing.assert_array_equal(cut["sample_stats"][name].to_numpy(), first)
    roomy = da.sample(draws=12, tune=4, chains=1, random_seed=5, time_limit=3600)
    np.testing.assert_array_equal(
        roomy["posterior"]["c_cpt"].to_numpy(), full["posterior"]["c_cpt"].to_numpy()
    )
    assert "time_limit" not in full.attrs
    # one draw asked for is one draw kept: nothing to warn of (warnings fail the suite)
    assert da.sample(draws=1, tune=4, chains=1, time_limit=1e-9)["posterior"].sizes["draw"] == 1


def test_chains_cut_by_the_clock_are_cut_to_the_shortest(monkeypatch):
    """Chains that stop after different numbers of draws are all cut to the shortest."""
    da = DataAugmentation(STRUCTURE, STATES, _gaussian_releases(), N)
    real = DataAugmentation.run_chain
    lengths = iter([7, 4, 9])

    def uneven(self, draws, tune, seed, records=None, adapt=None, deadline=None, out=None):
        theta, stats, x = real(self, draws, tune, seed, records, adapt, out=out)
        kept = next(lengths)
        return theta[:kept], {key: v[:kept] for key, v in stats.items()}, x

    monkeypatch.setattr(DataAugmentation, "run_chain", uneven)
    idata = da.sample(draws=10, tune=2, chains=3, random_seed=1, cores=1, time_limit=60)
    assert idata["posterior"].sizes["draw"] == 4
    assert idata["sample_stats"].sizes["draw"] == 4


@pytest.mark.parametrize(
    ("time_limit", "error"),
    [(0, ValueError), (-1.0, ValueError), (float("nan"), ValueError), (float("inf"), ValueError),
     (True, TypeError), ("60", TypeError), (1j, TypeError)],
)  # fmt: skip
def test_bad_time_limit_is_refused(time_limit, error):
    da = DataAugmentation(STRUCTURE, STATES, _gaussian_releases(), N)
    with pytest.raises(error, match="time_limit"):
        da.sample(draws=5, tune=0, chains=1, time_limit=time_limit)


@pytest.mark.parametrize("cores", [0, 1.5, True])
def test_bad_cores_are_refused(cores):
    da = DataAugmentation(STRUCTURE, STATES, _gaussian_releases(), N)
    with pytest.raises(ValueError, match="cores"):
        da.sample(draws=5, tune=0, chains=2, cores=cores)


# ------------------------------------------------------------------------------ bad input


def test_missing_release_is_refused():
    rel = _gaussian_releases()
    del rel["b"]
    with pytest.raises(ValueError, match=r"no release for nodes \['b'\]"):
        DataAugmentation(STRUCTURE, STATES, rel, N)


def test_release_of_the_wrong_shape_is_refused():
    rel = _gaussian_releases()
    rel["c"] = (np.zeros(4), rel["c"][1])
    with pytest.raises(ValueError, match=r"releases\['c'\].*6 parent configurations × 2"):
        DataAugmentation(STRUCTURE, STATES, rel, N)
    rel = _dirichlet_releases()
    rel["b"] = (np.array([[0.5, 0.5], [0.5, 0.5]]), rel["b"][1])
    with pytest.raises(ValueError, match=r"releases\['b'\].*2 parent configurations × 3"):
        DataAugmentation(STRUCTURE, STATES, rel, N)


def test_unsupported_mechanism_is_refused():
    from pymc_rdp.privacy.mechanisms import ExponentialQuantile

    rel = _gaussian_releases()
    rel["a"] = (rel["a"][0], ExponentialQuantile(1.0, 0.5, 0.0, 10.0))
    with pytest.raises(ValueError, match="not supported by data augmentation"):
        DataAugmentation(STRUCTURE, STATES, rel, N)


def test_post_processed_release_is_refused():
    from pymc_rdp.distributions import Release

    g = GaussianMechanism(2.0, math.sqrt(2))
    rel = _gaussian_releases()
    rel["a"] = Release(values=np.array([3.0, 0.0]), mechanism=g, tag="t", clamped=True)
    with pytest.raises(ValueError, match="clamped at zero"):
        DataAugmentation(STRUCTURE, STATES, rel, N)


def test_dirichlet_rows_must_be_draws():
    rel = _dirichlet_releases()
    rel["a"] = (np.array([[0.5, 0.7]]), rel["a"][1])
    with pytest.raises(ValueError, match="sum to 1"):
        DataAugmentation(STRUCTURE, STATES, rel, N)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n_records": None}, TypeError, "unknown N"),
        ({"n_records": 0}, ValueError, "n_records"),
        ({"alpha0": -1.0}, ValueError, "alpha0"),
        ({"moves": ("nuts",)}, ValueError, "moves"),
        ({"block_size": 0}, ValueError, "block_size"),
        ({"soma_attempts": 0}, ValueError, "soma_attempts"),
        ({"soma_attempts": 2.5}, ValueError, "soma_attempts"),
    ],
)
def test_bad_arguments(kwargs, error, match):
    args = {"n_records": N}
    args.update(kwargs)
    n = args.pop("n_records")
    with pytest.raises(error, match=match):
        DataAugmentation(STRUCTURE, STATES, _gaussian_releases(), n, **args)


def test_registry_covers_the_release_mechanisms():
    assert {"gaussian", "laplace", "discrete_gaussian", "discrete_laplace", "dirichlet"} <= set(
        OBSERVATIONS
    )


# ----------------------------------------------------------------------- from a network


def _frame(n: int, seed: int):
    import pandas as pd

    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    b = (a + rng.integers(0, 2, n)) % 3
    c = (b > 0).astype(int) ^ (rng.random(n) < 0.2)
    return pd.DataFrame({"a": a, "b": b, "c": c})


@pytest.mark.parametrize("mechanism", ["gaussian", "dirichlet"])
def test_from_network(mechanism):
    import pymc_rdp as pmr

    bn = pmr.BayesianNetwork(STRUCTURE, states=STATES)
    bn.fit(_frame(300, 1), mechanism=mechanism, epsilon=2.0, delta=1e-6, public_total=300)
    idata = sample_augmentation(bn, draws=200, tune=50, chains=2, random_seed=1)
    for v in bn.nodes:
        draws = bn.cpt_draws(idata, v)
        assert draws.shape[1:] == (len(bn.parent_configurations(v)), bn.cards[v])
        np.testing.assert_allclose(draws.sum(axis=-1), 1.0, rtol=1e-12)
    from pymc_rdp.distributions import read_ledger

    assert read_ledger(idata)["accountant"].to_json() == bn.accountant.to_json()


@pytest.mark.parametrize("mechanism", ["gaussian", "dirichlet"])
def test_from_network_refuses_a_private_n(mechanism):
    """Without public_total the fit's N is an estimate (or absent): conditioning on it would not
    be the posterior of the releases. Noisy tables carry noisy totals, so N becomes a parameter
    with a prior; a Dirichlet release carries none and is refused without an explicit prior."""
    import pymc_rdp as pmr

    bn = pmr.BayesianNetwork(STRUCTURE, states=STATES)
    bn.fit(_frame(100, 2), mechanism=mechanism, epsilon=2.0, delta=1e-6)
    if mechanism == "dirichlet":
        with pytest.raises(ValueError, match="not declared public"):
            DataAugmentation.from_network(bn)
        da = DataAugmentation.from_network(bn, n_prior=np.ones(201))
    else:
        da = DataAugmentation.from_network(bn)
    # never conditioned on an estimate: N is unknown, with a proper prior
    assert da.n_records is None
    assert np.isclose(np.exp(da.n_log_prior).sum(), 1.0)


def test_from_network_refuses_no_privacy():
    import pymc_rdp as pmr

    bn = pmr.BayesianNetwork(STRUCTURE, states=STATES)
    bn.fit(_frame(100, 2), mechanism="none")
    with pytest.raises(ValueError, match="no releases"):
        DataAugmentation.from_network(bn)
    with pytest.raises(ValueError, match="not fitted"):
        DataAugmentation.from_network(pmr.BayesianNetwork(STRUCTURE, states=STATES))
