"""The network's DAG: the structure forms, the topological order, cycles named by networkx."""

from __future__ import annotations

import itertools

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymc_rdp import datasets
from pymc_rdp.bn.graph import NetworkStructure, parse_structure

STRUCTURE = {"a": [], "b": ["a"], "c": ["a", "b"]}


def test_structure_forms_agree() -> None:
    g = nx.DiGraph([("a", "b"), ("a", "c"), ("b", "c")])
    s_dict, _ = parse_structure(STRUCTURE)
    s_graph, _ = parse_structure(g)
    assert s_dict.order == ("a", "b", "c")
    assert s_dict.parents == s_graph.parents
    assert set(s_dict.edges()) == set(g.edges())


def test_structure_from_pgmpy_takes_state_names() -> None:
    model = datasets.load_network("cancer")
    s, states = parse_structure(model)
    assert set(s.order) == set(model.nodes())
    for v in s.order:
        assert set(s.parents[v]) == set(model.get_parents(v))
        assert states is not None and states[v] == list(model.get_cpds(v).state_names[v])


def test_topological_order_puts_parents_first() -> None:
    s, _ = parse_structure({"z": ["y"], "y": ["x"], "x": [], "w": ["x", "z"]})
    pos = {v: i for i, v in enumerate(s.order)}
    for v, ps in s.parents.items():
        assert all(pos[p] < pos[v] for p in ps)


def test_topological_order_is_by_generation_in_listed_order() -> None:
    """Roots first in their listed order, then each node one step after its deepest parent."""
    s, _ = parse_structure({"c": ["a"], "b": [], "a": [], "d": ["c", "b"], "e": ["b"]})
    assert s.order == ("b", "a", "c", "e", "d")
    assert s.parents == {"b": (), "a": (), "c": ("a",), "e": ("b",), "d": ("c", "b")}


@pytest.mark.parametrize(
    ("structure", "named"),
    [
        ({"a": ["c"], "b": ["a"], "c": ["b"]}, "a -> b -> c -> a"),
        ({"s": ["s"]}, "s -> s"),
        ({"r": [], "u": ["r", "v"], "v": ["u"]}, "u -> v -> u"),
        (nx.DiGraph([("u", "v"), ("v", "u")]), "u -> v -> u"),
        # a cycle behind an acyclic part: the search runs through the listed nodes
        ({"x": [], "y": ["x"], "p": ["y", "q"], "q": ["p"]}, "p -> q -> p"),
    ],
)
def test_cycle_is_named(structure, named: str) -> None:
    with pytest.raises(ValueError, match=f"^structure: the graph has a directed cycle {named}$"):
        parse_structure(structure)


def _named_cycle(structure) -> list[str]:
    with pytest.raises(ValueError, match="directed cycle") as info:
        parse_structure(structure)
    return str(info.value).rsplit("cycle ", 1)[1].split(" -> ")


@settings(max_examples=200, deadline=None)
@given(
    st.integers(2, 7).flatmap(
        lambda k: st.tuples(
            st.just(k), st.lists(st.tuples(st.integers(0, k - 1), st.integers(0, k - 1)))
        )
    )
)
def test_cycle_or_order_agrees_with_an_independent_check(case) -> None:
    """Either a valid topological order or a named cycle whose every step is an edge."""
    k, edges = case
    nodes = [f"n{i}" for i in range(k)]
    parents = {v: [] for v in nodes}
    for p, c in edges:
        if nodes[p] not in parents[nodes[c]]:
            parents[nodes[c]].append(nodes[p])
    # acyclic iff repeatedly removing nodes without remaining parents empties the graph
    left = set(nodes)
    while True:
        free = {v for v in left if not set(parents[v]) & left}
        if not free:
            break
        left -= free
    if left:
        cycle = _named_cycle(parents)
        assert cycle[0] == cycle[-1] and len(cycle) >= 2
        assert len(set(cycle[:-1])) == len(cycle) - 1
        for a, b in itertools.pairwise(cycle):
            assert a in parents[b]
    else:
        s, _ = parse_structure(parents)
        assert sorted(s.order) == sorted(nodes)
        pos = {v: i for i, v in enumerate(s.order)}
        assert all(pos[p] < pos[v] for v in nodes for p in parents[v])


def test_bad_structures() -> None:
    with pytest.raises(ValueError, match="parent 'q' of 'a' is not a node"):
        parse_structure({"a": ["q"]})
    with pytest.raises(TypeError, match="structure must be"):
        parse_structure([("a", "b")])
    with pytest.raises(ValueError, match="no nodes"):
        parse_structure({})
    with pytest.raises(ValueError, match="twice"):
        parse_structure({"a": [], "b": ["a", "a"]})
    with pytest.raises(TypeError, match="structure must be"):
        parse_structure(nx.Graph([("a", "b")]))  # undirected: no predecessors
    with pytest.raises(TypeError, match="node names must be non-empty strings"):
        parse_structure({1: []})


def test_ancestors_and_edges() -> None:
    s = NetworkStructure(("a", "b", "c", "d"), {"a": (), "b": ("a",), "c": (), "d": ("b",)})
    assert s.ancestors(["d"]) == ["a", "b", "d"]
    assert s.ancestors(["c", "b"]) == ["a", "b", "c"]
    assert s.edges() == [("a", "b"), ("b", "d")]
    assert s.n_families == 4
