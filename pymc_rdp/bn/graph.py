"""The directed acyclic graph of a discrete Bayesian network: parsing, cycles, topological order.

A discrete Bayesian network over nodes :math:`X_1, \\dots, X_d` factorises the joint distribution as

.. math:: P(x_1, \\dots, x_d) = \\prod_v P(x_v \\mid x_{\\mathrm{pa}(v)}),

(Koller & Friedman 2009, "Probabilistic Graphical Models", Def. 3.5). The order in which a node's
parents are listed is kept: it defines the row-major enumeration of the parent configurations
(the first parent varies slowest), which is also pgmpy's column order of a ``TabularCPD``.

Cycle detection and the topological order are networkx's (``find_cycle``,
``topological_generations``).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx

__all__ = ["NetworkStructure", "parse_structure"]


@dataclass(frozen=True)
class NetworkStructure:
    """A validated DAG: nodes in a topological order and the ordered parents of each node.

    Attributes
    ----------
    order : tuple of str
        The nodes, every parent before its children (ties keep the order the structure lists them).
    parents : dict
        ``node -> tuple of parents`` in the order that defines the parent configurations.
    """

    order: tuple[str, ...]
    parents: dict[str, tuple[str, ...]]

    @property
    def n_families(self) -> int:
        """Number of families (one per node)."""
        return len(self.order)

    def ancestors(self, nodes: Sequence[str]) -> list[str]:
        """The ancestral closure of ``nodes`` (with all their ancestors), topologically ordered."""
        closed: set[str] = set()
        stack = list(nodes)
        while stack:
            v = stack.pop()
            if v in closed:
                continue
            closed.add(v)
            stack.extend(self.parents[v])
        return [v for v in self.order if v in closed]

    def edges(self) -> list[tuple[str, str]]:
        """The edges ``(parent, child)``."""
        return [(p, v) for v in self.order for p in self.parents[v]]


def _check_name(name: Any, what: str) -> str:
    if not isinstance(name, str) or not name:
        raise TypeError(f"structure: {what} must be non-empty strings, got {name!r}")
    return name


def _digraph(nodes: Sequence[str], parents: Mapping[str, Sequence[str]]) -> nx.DiGraph:
    """The graph with edges parent -> child, nodes and each node's in-edges in listed order."""
    graph = nx.DiGraph()
    graph.add_nodes_from(nodes)
    graph.add_edges_from((p, v) for v in nodes for p in parents[v])
    return graph


def _find_cycle(nodes: Sequence[str], parents: Mapping[str, Sequence[str]]) -> list[str] | None:
    """Return one directed cycle ``[a, b, ..., a]`` (edges parent -> child) or None.

    The depth-first search of ``networkx.find_cycle`` starts from the nodes in their listed order.
    """
    try:
        edges = nx.find_cycle(_digraph(nodes, parents))
    except nx.NetworkXNoCycle:
        return None
    return [edges[0][0], *(child for _, child in edges)]


def _topological_order(nodes: Sequence[str], parents: Mapping[str, Sequence[str]]) -> list[str]:
    """Nodes by generation (longest path from a root), each generation in the listed order.

    This is Kahn's algorithm taking every ready node per round in its listed order (stable,
    deterministic); the generations are ``networkx.topological_generations``.
    """
    rank = {v: i for i, v in enumerate(nodes)}
    return [
        v
        for generation in nx.topological_generations(_digraph(nodes, parents))
        for v in sorted(generation, key=rank.__getitem__)
    ]


def parse_structure(structure: Any) -> tuple[NetworkStructure, dict[str, list[Hashable]] | None]:
    """Validate a network structure and return it with the state names it carries, if any.

    Parameters
    ----------
    structure : dict, networkx.DiGraph or pgmpy model
        ``{child: [parents, ...]}`` (every parent must itself be a key; roots map to ``[]``), a
        ``networkx.DiGraph`` with edges parent -> child, or a pgmpy ``DiscreteBayesianNetwork`` /
        ``DAG``. A pgmpy model that holds CPDs also supplies each node's state names.

    Returns
    -------
    NetworkStructure, dict or None
        The structure and, for a pgmpy model with CPDs, ``node -> state names``.

    Raises
    ------
    ValueError
        A directed cycle (named in the message), a parent that is not a node, a repeated parent.
    TypeError
        An unsupported structure object or a non-string node name.
    """
    states: dict[str, list[Hashable]] | None = None
    if isinstance(structure, Mapping):
        raw: dict[str, list[str]] = {}
        for child, pars in structure.items():
            child = _check_name(child, "node names")
            if isinstance(pars, str) or pars is None:
                pars = [] if pars is None else [pars]
            raw[child] = [_check_name(p, "parent names") for p in pars]
        for child, pars in raw.items():
            for p in pars:
                if p not in raw:
                    raise ValueError(
                        f"structure: parent {p!r} of {child!r} is not a node of the structure; "
                        f"add it as a key (with parents [] if it is a root)"
                    )
    elif hasattr(structure, "get_parents") and hasattr(structure, "nodes"):
        # pgmpy DiscreteBayesianNetwork / DAG (checked by duck typing to keep pgmpy optional here)
        raw = {
            _check_name(v, "node names"): [
                _check_name(p, "parent names") for p in structure.get_parents(v)
            ]
            for v in structure.nodes()
        }
        get_cpds = getattr(structure, "get_cpds", None)
        cpds = get_cpds() if callable(get_cpds) else []
        if cpds:
            states = {}
            for cpd in cpds:
                states[cpd.variable] = list(cpd.state_names[cpd.variable])
    elif hasattr(structure, "predecessors") and hasattr(structure, "nodes"):
        # networkx.DiGraph
        if not getattr(structure, "is_directed", lambda: False)():
            raise TypeError("structure: a networkx graph must be directed (a DiGraph)")
        raw = {
            _check_name(v, "node names"): [
                _check_name(p, "parent names") for p in structure.predecessors(v)
            ]
            for v in structure.nodes()
        }
    else:
        raise TypeError(
            "structure must be a dict child -> parents, a networkx.DiGraph or a pgmpy "
            f"DiscreteBayesianNetwork, got {type(structure).__name__}"
        )
    if not raw:
        raise ValueError("structure: the network has no nodes")
    for child, pars in raw.items():
        if len(set(pars)) != len(pars):
            raise ValueError(f"structure: node {child!r} lists a parent twice: {pars}")
    nodes = list(raw)
    cycle = _find_cycle(nodes, raw)
    if cycle is not None:
        raise ValueError("structure: the graph has a directed cycle " + " -> ".join(cycle))
    order = _topological_order(nodes, raw)
    return NetworkStructure(tuple(order), {v: tuple(raw[v]) for v in order}), states
