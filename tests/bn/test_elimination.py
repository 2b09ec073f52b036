"""Marginals by variable elimination and the junction tree, against brute-force joint tables."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from pymc_rdp import datasets
from pymc_rdp.bn.elimination import JunctionTree, contract, enumeration_marginals, family_marginal
from pymc_rdp.bn.graph import parse_structure


def test_family_marginal_matches_brute_force_joint() -> None:
    """P(parents) by variable elimination equals summing the full joint (asia)."""
    model = datasets.load_network("asia")
    s, states = parse_structure(model)
    cards = {v: len(states[v]) for v in s.order}
    cpts = {}
    for v in s.order:
        cpd = model.get_cpds(v).copy()
        if s.parents[v]:
            cpd.reorder_parents(list(s.parents[v]))
        cpts[v] = np.asarray(cpd.get_values(), dtype=np.float64).T
    joint = np.ones([cards[v] for v in s.order])
    for v in s.order:
        idx = [s.order.index(p) for p in s.parents[v]] + [s.order.index(v)]
        shape = [1] * len(s.order)
        for ax in idx:
            shape[ax] = cards[s.order[ax]]
        t = cpts[v].reshape([cards[p] for p in s.parents[v]] + [cards[v]])
        perm = np.argsort(idx)
        joint = joint * np.transpose(t, perm).reshape(shape)
    assert joint.sum() == pytest.approx(1.0)
    for v in s.order:
        pars = s.parents[v]
        if not pars:
            continue
        axes = tuple(i for i, u in enumerate(s.order) if u not in pars)
        brute = joint.sum(axis=axes)
        order = sorted(pars, key=s.order.index)
        brute = np.transpose(brute, [order.index(p) for p in pars]).reshape(-1)
        got = family_marginal(s, v, cpts, cards)
        np.testing.assert_allclose(got, brute, rtol=1e-12, atol=1e-15)


def test_family_marginal_symbolic_on_alarm_matches_numpy() -> None:
    """The deepest ancestral closures of alarm contract pairwise (no exhaustive order search)."""
    import pytensor

    st, states = parse_structure(datasets.load_network("alarm"))
    cards = {v: len(states[v]) for v in st.order}
    rng = np.random.default_rng(0)
    cpts = {
        v: rng.dirichlet(np.ones(cards[v]), size=math.prod(cards[p] for p in st.parents[v]))
        for v in st.order
    }
    deepest = max(st.order, key=lambda v: len(st.ancestors(st.parents[v])))
    assert len(st.ancestors(st.parents[deepest])) >= 20
    sym = {v: pytensor.shared(c) for v, c in cpts.items()}
    got = pytensor.function([], family_marginal(st, deepest, sym, cards, backend="pytensor"))()
    expected = family_marginal(st, deepest, cpts, cards)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert expected.sum() == pytest.approx(1.0)


# a loop in the moral graph (two parents shared by two children) and a disconnected node
LOOPY = {"a": [], "b": [], "c": ["a", "b"], "d": ["b", "a"], "e": ["c", "d"], "f": []}
LOOPY_CARDS = {"a": 2, "b": 3, "c": 2, "d": 2, "e": 3, "f": 2}


def _joint_by_products(structure, cards, cpts) -> tuple[list[str], np.ndarray]:
    """The full joint table, one state at a time (an oracle without einsum)."""
    order = list(structure)
    joint = np.zeros([cards[v] for v in order])
    for x in itertools.product(*[range(cards[v]) for v in order]):
        xs = dict(zip(order, x, strict=True))
        prob = 1.0
        for v in order:
            row = 0
            for p in structure[v]:
                row = row * cards[p] + xs[p]
            prob *= cpts[v][row, xs[v]]
        joint[x] = prob
    return order, joint


def _marginal(order, joint, nodes) -> np.ndarray:
    keep = [order.index(u) for u in nodes]
    summed = joint.sum(axis=tuple(i for i in range(len(order)) if i not in keep))
    return np.transpose(summed, np.argsort(np.argsort(keep)))


def test_junction_tree_and_enumeration_equal_the_brute_force_joint(rng) -> None:
    st, _ = parse_structure(LOOPY)
    cpts = {
        v: rng.dirichlet(np.ones(LOOPY_CARDS[v]), size=math.prod(LOOPY_CARDS[p] for p in ps))
        for v, ps in LOOPY.items()
    }
    order, joint = _joint_by_products(LOOPY, LOOPY_CARDS, cpts)
    fams = [(*st.parents[v], v) for v in st.order]
    pairs = [(a, b) for a in range(len(fams)) for b in range(a, len(fams))]
    unions = [(*fams[a], *[u for u in fams[b] if u not in fams[a]]) for a, b in pairs]
    tree = JunctionTree(st, LOOPY_CARDS)
    # moralising marries a, b (parents of c and d) and c, d (parents of e): {a, b, c, d} is a clique
    assert tree.width == 3 and len(tree.bags) >= 2
    for v in st.order:
        assert {*st.parents[v], v} <= set(tree.bags[tree.host[v]])
    by_tree = tree.pairwise_marginals(cpts, pairs, unions)
    by_enum = enumeration_marginals(st, LOOPY_CARDS, cpts, unions)
    for union, got_tree, got_enum in zip(unions, by_tree, by_enum, strict=True):
        want = _marginal(order, joint, union)
        np.testing.assert_allclose(got_tree, want, rtol=0, atol=1e-14)
        np.testing.assert_allclose(got_enum, want, rtol=0, atol=1e-14)


def test_contract_checks_its_labels() -> None:
    x = np.ones((2, 3))
    np.testing.assert_array_equal(contract([(x, ("u", "v"))], ("v",)), np.full(3, 2.0))
    with pytest.raises(ValueError, match="at least one factor"):
        contract([], ("u",))
    with pytest.raises(ValueError, match=r"output nodes \['w'\] occur in no factor"):
        contract([(x, ("u", "v"))], ("w",))
