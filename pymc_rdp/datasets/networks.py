"""Classic discrete Bayesian networks read from the BIF files inside pgmpy's wheel."""

from __future__ import annotations

import functools
import gzip
import importlib.resources
from typing import Any

import numpy as np
import pandas as pd

# ---------------------------------------------------------------------------------------------
# Classic Bayesian networks shipped with pgmpy
# ---------------------------------------------------------------------------------------------


def _example_models_dir() -> Any:
    return importlib.resources.files("pgmpy") / "utils" / "example_models"


@functools.lru_cache(maxsize=1)
def _network_files() -> dict[str, Any]:
    files = {}
    for entry in _example_models_dir().iterdir():
        name = entry.name
        if name.endswith(".bif.gz"):
            files[name[: -len(".bif.gz")]] = entry
        elif name.endswith(".bif"):
            files[name[: -len(".bif")]] = entry
    return files


def list_networks() -> list[str]:
    """Names of the discrete Bayesian networks available offline (BIF files in pgmpy's wheel).

    Returns
    -------
    list of str
        Sorted names, e.g. ``"alarm"``, ``"asia"``, ``"cancer"``, ``"child"``, ``"earthquake"``,
        ``"insurance"``, ``"sachs"``, ``"survey"``, ``"water"``.
    """
    return sorted(_network_files())


@functools.lru_cache(maxsize=32)
def _parse_network(name: str) -> Any:
    from pgmpy.readwrite import BIFReader

    entry = _network_files()[name]
    data = entry.read_bytes()
    if entry.name.endswith(".gz"):
        data = gzip.decompress(data)
    # BIFReader reads a path or a string, not a gzip stream: parse the decompressed text.
    return BIFReader(string=data.decode("utf-8")).get_model()


def load_network(name: str) -> Any:
    """Load a classic discrete Bayesian network offline.

    The BIF file shipped inside pgmpy's wheel is decompressed and parsed with
    ``pgmpy.readwrite.BIFReader``; no download is ever attempted. Parsed networks are cached, and
    each call returns an independent copy.

    Parameters
    ----------
    name : str
        One of :func:`list_networks` (case-insensitive).

    Returns
    -------
    pgmpy.models.DiscreteBayesianNetwork
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, got {type(name).__name__}")
    key = name.lower()
    if key not in _network_files():
        raise ValueError(f"name must be one of {list_networks()}, got {name!r}")
    return _parse_network(key).copy()


@functools.lru_cache(maxsize=32)
def _sampler_plan(name: str) -> list[tuple[str, list[int], np.ndarray, list[str], list[int]]]:
    return _build_plan(_parse_network(name))


def _build_plan(model: Any) -> list[tuple[str, list[int], np.ndarray, list[str], list[int]]]:
    """Topologically ordered (node, parent positions, cumulative CPT, states, parent cards)."""
    import networkx as nx

    order = list(nx.topological_sort(nx.DiGraph(model.edges())))
    order += [n for n in model.nodes() if n not in order]
    position = {node: i for i, node in enumerate(order)}
    plan = []
    for node in order:
        cpd = model.get_cpds(node)
        if cpd is None:
            raise ValueError(f"model has no CPD for node {node!r}")
        evidence = list(cpd.variables[1:])
        card = int(cpd.cardinality[0])
        table = np.asarray(cpd.values, dtype=np.float64).reshape(card, -1).T  # (configs, states)
        table = table / table.sum(axis=1, keepdims=True)
        cumulative = np.cumsum(table, axis=1)
        cumulative[:, -1] = 1.0
        states = [str(s) for s in cpd.state_names[node]]
        ev_cards = [int(c) for c in cpd.cardinality[1:]]
        plan.append((node, [position[e] for e in evidence], cumulative, states, ev_cards))
    return plan


def sample_network(
    network: str | Any,
    n: int,
    random_state: int | np.random.Generator | None = None,
) -> pd.DataFrame:
    """Draw ``n`` independent records from a discrete Bayesian network (ancestral sampling).

    Nodes are visited in topological order; each node's state is drawn from the CPT row of its
    parents' sampled states, for all records at once (inverse-CDF sampling on the cumulative CPT
    rows), so the cost is linear in ``n`` times the number of nodes.

    Parameters
    ----------
    network : str or pgmpy.models.DiscreteBayesianNetwork
        A name from :func:`list_networks` or a model with a CPD for every node.
    n : int
        Number of records (>= 0).
    random_state : int, numpy.random.Generator or None
        Seed or generator.

    Returns
    -------
    pandas.DataFrame
        One ``category`` column per node (in the model's node order), categories = the node's
        state names in CPT order.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be an integer >= 0, got {n!r}")
    if isinstance(network, str):
        key = network.lower()
        if key not in _network_files():
            raise ValueError(f"network must be one of {list_networks()}, got {network!r}")
        plan = _sampler_plan(key)
        node_order = list(_parse_network(key).nodes())
    else:
        if not hasattr(network, "get_cpds"):
            raise TypeError("network must be a network name or a pgmpy DiscreteBayesianNetwork")
        plan = _build_plan(network)
        node_order = list(network.nodes())
    rng = np.random.default_rng(random_state)
    n = int(n)
    codes: list[np.ndarray] = []
    for _node, parents, cumulative, _states, ev_cards in plan:
        if parents:
            config = np.ravel_multi_index(tuple(codes[p] for p in parents), tuple(ev_cards))
        else:
            config = np.zeros(n, dtype=np.int64)
        u = rng.random(n)
        rows = cumulative[config]  # (n, states)
        drawn = (u[:, None] >= rows).sum(axis=1)
        codes.append(np.minimum(drawn, cumulative.shape[1] - 1).astype(np.int64))
    columns = {}
    for (node, _parents, _cum, states, _ev), node_codes in zip(plan, codes, strict=True):
        columns[node] = pd.Categorical.from_codes(node_codes, categories=states)
    return pd.DataFrame({node: columns[node] for node in node_order})
