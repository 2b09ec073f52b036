"""Structure, domains and count tables of discrete Bayesian networks (numpy, pandas and networkx).

A discrete Bayesian network over nodes :math:`X_1, \\dots, X_d` factorises the joint distribution as

.. math:: P(x_1, \\dots, x_d) = \\prod_v P(x_v \\mid x_{\\mathrm{pa}(v)}),

(Koller & Friedman 2009, "Probabilistic Graphical Models", Def. 3.5). The *family* of a node
``v`` is ``v`` with its parents; its sufficient statistic is the contingency table of counts
``n[c, k]`` = number of records whose parents take configuration ``c`` and whose ``v`` takes state
``k``. Parent configurations are enumerated in row-major order over the parents, in the order the
structure lists them (the first parent varies slowest), which is also pgmpy's column order of a
``TabularCPD``.

Everything here is deterministic bookkeeping without privacy: parsing and validating the structure,
the state domains, integer encoding of a data frame, the family tables, the family marginals
``P(parents = c)`` by variable elimination (numpy or PyTensor), forward sampling and log-likelihood.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "NetworkStructure",
    "cell_labels",
    "config_labels",
    "encode_frame",
    "family_marginal",
    "family_table",
    "forward_sample",
    "infer_states",
    "parse_structure",
    "record_log_likelihood",
    "validate_frame",
]

ROOT_LABEL = "(none)"


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


def _find_cycle(nodes: Sequence[str], parents: Mapping[str, Sequence[str]]) -> list[str] | None:
    """Return one directed cycle ``[a, b, ..., a]`` (edges parent -> child) or None."""
    children: dict[str, list[str]] = {v: [] for v in nodes}
    for v in nodes:
        for p in parents[v]:
            children[p].append(v)
    colour = dict.fromkeys(nodes, 0)  # 0 new, 1 on the stack, 2 done
    for start in nodes:
        if colour[start]:
            continue
        path = [start]
        iters = [iter(children[start])]
        colour[start] = 1
        while iters:
            nxt = next(iters[-1], None)
            if nxt is None:
                colour[path.pop()] = 2
                iters.pop()
                continue
            if colour[nxt] == 1:
                return [*path[path.index(nxt) :], nxt]
            if colour[nxt] == 0:
                colour[nxt] = 1
                path.append(nxt)
                iters.append(iter(children[nxt]))
    return None


def _topological_order(nodes: Sequence[str], parents: Mapping[str, Sequence[str]]) -> list[str]:
    """Kahn's algorithm, taking ready nodes in their listed order (stable, deterministic)."""
    placed: set[str] = set()
    order: list[str] = []
    remaining = list(nodes)
    while remaining:
        ready = [v for v in remaining if all(p in placed for p in parents[v])]
        for v in ready:
            placed.add(v)
            order.append(v)
        remaining = [v for v in remaining if v not in placed]
    return order


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


def validate_frame(df: Any, nodes: Sequence[str], name: str = "df") -> pd.DataFrame:
    """Check a data frame: a DataFrame, non-empty, one column per node, no missing values.

    Missing values are refused rather than dropped or imputed: which records have them can itself be
    sensitive, and a silent drop would change the neighbouring relation. Drop or impute them (on
    public information) before fitting.
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"{name} must be a pandas DataFrame, got {type(df).__name__}")
    missing = [v for v in nodes if v not in df.columns]
    if missing:
        raise ValueError(f"{name} has no column for the node(s) {missing}")
    if len(df) == 0:
        raise ValueError(f"{name} is empty: it has no records")
    sub = df[list(nodes)]
    na = sub.isna().any()
    if na.any():
        cols = list(na.index[na.to_numpy()])
        raise ValueError(
            f"{name} has missing values in column(s) {cols}; drop or impute them before fitting "
            f"(missing values are not a state)"
        )
    return sub


def infer_states(
    df: pd.DataFrame,
    nodes: Sequence[str],
    given: Mapping[str, Sequence[Hashable]] | None = None,
) -> dict[str, list[Hashable]]:
    """State names of every node: ``given[node]`` when supplied, else from the data.

    From the data, a categorical column keeps all its categories (unseen ones included); other
    columns give their sorted distinct values (order of appearance if they do not sort). Note that
    states read from the data are not covered by the privacy guarantee: pass a public domain.
    """
    states: dict[str, list[Hashable]] = {}
    given = dict(given or {})
    unknown = [k for k in given if k not in nodes]
    if unknown:
        raise ValueError(f"states: {unknown} are not nodes of the structure")
    for v in nodes:
        if v in given:
            vals = list(given[v])
            if not vals:
                raise ValueError(f"states: node {v!r} has no states")
            if len(set(vals)) != len(vals):
                raise ValueError(f"states: node {v!r} lists a state twice")
        else:
            col = df[v]
            if isinstance(col.dtype, pd.CategoricalDtype):
                vals = list(col.cat.categories)
            else:
                uniq = list(pd.unique(col))
                try:
                    vals = sorted(uniq)
                except TypeError:
                    vals = uniq
        states[v] = [_py(s) for s in vals]
    return states


def _py(value: Hashable) -> Hashable:
    """A numpy scalar as the matching Python scalar (readable labels, JSON, pgmpy)."""
    return value.item() if isinstance(value, np.generic) else value


def encode_frame(
    df: pd.DataFrame, states: Mapping[str, Sequence[Hashable]], name: str = "df"
) -> dict[str, np.ndarray]:
    """Integer codes (int64, 0..K-1) of each node's column; a value outside the domain raises."""
    codes: dict[str, np.ndarray] = {}
    for v, vals in states.items():
        c = np.asarray(pd.Index(list(vals)).get_indexer(df[v]), dtype=np.int64)
        bad = c < 0
        if bad.any():
            unseen = [_py(x) for x in pd.unique(df[v][bad])][:5]
            raise ValueError(
                f"{name}: column {v!r} has value(s) {unseen} outside its states {vals}"
            )
        codes[v] = c
    return codes


def cards_of(states: Mapping[str, Sequence[Hashable]]) -> dict[str, int]:
    """Number of states of every node."""
    return {v: len(s) for v, s in states.items()}


def config_index(
    codes: Mapping[str, np.ndarray], parents: Sequence[str], cards: Mapping[str, int], n: int
) -> np.ndarray:
    """Row-major parent-configuration index of every record (first parent slowest)."""
    idx = np.zeros(n, dtype=np.int64)
    for p in parents:
        idx = idx * cards[p] + codes[p]
    return idx


def family_table(
    codes: Mapping[str, np.ndarray], node: str, parents: Sequence[str], cards: Mapping[str, int]
) -> np.ndarray:
    """Contingency table of a family: int64 array (parent configurations, states of ``node``)."""
    n = len(codes[node])
    n_configs = int(np.prod([cards[p] for p in parents], dtype=np.int64))
    flat = config_index(codes, parents, cards, n) * cards[node] + codes[node]
    counts = np.bincount(flat, minlength=n_configs * cards[node])
    return counts.reshape(n_configs, cards[node]).astype(np.int64)


def config_labels(parents: Sequence[str], states: Mapping[str, Sequence[Hashable]]) -> list[str]:
    """Readable labels of the parent configurations, e.g. ``"age=3,sex=Male"``.

    A root node has one configuration, labelled ``"(none)"``.
    """
    if not parents:
        return [ROOT_LABEL]
    return [
        ",".join(f"{p}={s}" for p, s in zip(parents, combo, strict=True))
        for combo in itertools.product(*(states[p] for p in parents))
    ]


def cell_labels(
    node: str, parents: Sequence[str], states: Mapping[str, Sequence[Hashable]]
) -> list[str]:
    """Labels of a flattened CPT's cells, ``"parent=a,other=b | node=x"`` (``"node=x"`` for a
    root), configuration-major as ``table.reshape(-1)``."""
    names = [f"{node}={s}" for s in states[node]]
    if not parents:
        return names
    return [f"{c} | {k}" for c in config_labels(parents, states) for k in names]


def family_marginal(
    structure: NetworkStructure,
    node: str,
    cpts: Mapping[str, Any],
    cards: Mapping[str, int],
    backend: str = "numpy",
) -> Any:
    """``P(parents of node = c)`` for every parent configuration ``c`` (flat, row-major).

    The marginal of a set of nodes only involves their ancestral closure ``A``:

    .. math:: P(x_{\\mathrm{pa}}) = \\sum_{x_{A \\setminus \\mathrm{pa}}} \\prod_{u \\in A}
              P(x_u \\mid x_{\\mathrm{pa}(u)}),

    (Koller & Friedman 2009, Sec. 9.3: variable elimination after pruning barren nodes),
    evaluated as a sequence of two-operand contractions in numpy's greedy order
    (:func:`pymc_rdp.bn.elimination.contract`; one many-operand ``einsum`` would
    search its contraction order exhaustively, which takes minutes for the closures of alarm).
    ``cpts[u]`` has shape (configurations of u's parents, states of u). Works on numpy arrays or
    PyTensor tensors (``backend="pytensor"``), so the same code gives the model's symbolic
    probabilities.
    """
    from pymc_rdp.bn.elimination import _cpt_factors, contract

    pars = structure.parents[node]
    if not pars:
        return np.ones(1) if backend == "numpy" else _pt().ones((1,), dtype="float64")
    closure = structure.ancestors(pars)
    factors = _cpt_factors(structure, cards, cpts, nodes=closure).values()
    out = contract(list(factors), pars, symbolic=backend != "numpy")
    if backend == "numpy":
        return np.asarray(out, dtype=np.float64).reshape(-1)
    return out.reshape((-1,))


def _pt() -> Any:
    import pytensor.tensor as pt

    return pt


def forward_sample(
    structure: NetworkStructure,
    cpts: Mapping[str, np.ndarray],
    cards: Mapping[str, int],
    n: int,
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """Ancestral (forward) sampling of ``n`` records: integer codes per node.

    Nodes are drawn in topological order; each record's state of ``v`` is drawn from the row of
    ``cpts[v]`` selected by its parents' states, by inverting the row's cumulative distribution.
    """
    codes: dict[str, np.ndarray] = {}
    for v in structure.order:
        table = np.asarray(cpts[v], dtype=np.float64)
        idx = config_index(codes, structure.parents[v], cards, n)
        cum = np.cumsum(table, axis=1)[idx]
        u = rng.random(n) * cum[:, -1]
        codes[v] = np.minimum((u[:, None] >= cum).sum(axis=1), cards[v] - 1).astype(np.int64)
    return codes


def record_log_likelihood(
    structure: NetworkStructure,
    cpts: Mapping[str, np.ndarray],
    cards: Mapping[str, int],
    codes: Mapping[str, np.ndarray],
) -> np.ndarray:
    """Log-probability of every record: ``sum_v log P(x_v | x_pa(v))`` (float64, one per record)."""
    n = len(next(iter(codes.values())))
    total = np.zeros(n, dtype=np.float64)
    with np.errstate(divide="ignore"):
        for v in structure.order:
            idx = config_index(codes, structure.parents[v], cards, n)
            total += np.log(np.asarray(cpts[v], dtype=np.float64)[idx, codes[v]])
    return total
