"""The family tables of a Bayesian network, counted from the records on their declared states.

The curator's first step of :meth:`BayesianNetwork.fit <pymc_rdp.BayesianNetwork.fit>`: every node
needs declared (public) states for a private fit — ``states="from-data"`` (or per node) is the
explicit opt-in to read them from the records, outside the guarantee — and the family tables
``n_v[c, k]`` (records whose parents of ``v`` are in configuration ``c`` and whose ``v`` is in
state ``k``) are counted on those states: in memory for a pandas frame
(:func:`pymc_rdp.bn.structure.family_table`), by the frame's own engine otherwise
(:func:`pymc_rdp.curation.counting.count_tables`).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from pymc_rdp.bn.structure import (
    NetworkStructure,
    encode_frame,
    family_table,
    infer_states,
    validate_frame,
)
from pymc_rdp.curation.domains import check_within, states_from_data

__all__ = ["FamilyTables", "check_public_total", "count_family_tables", "undeclared_nodes"]


@dataclass(frozen=True)
class FamilyTables:
    """The counted tables: ``states`` and ``tables`` by node, the number of records (private:
    never published unless declared public), and the nodes whose states were read from data."""

    states: dict[str, list[Hashable]]
    tables: dict[str, np.ndarray]
    n_records: int
    from_data: list[str]

    @property
    def cards(self) -> dict[str, int]:
        return {v: len(s) for v, s in self.states.items()}


def undeclared_nodes(
    structure: NetworkStructure,
    given: Mapping[str, Sequence[Hashable]],
    *,
    private: bool,
    from_data_nodes: set[str],
    all_from_data: bool,
) -> list[str]:
    """The nodes without declared states; refused unless opted in (or without privacy)."""
    missing = [v for v in structure.order if v not in given]
    if not private:
        return []
    refused = [v for v in missing if v not in from_data_nodes]
    if refused and not all_from_data:
        raise ValueError(
            f"states: no declared states for the node(s) {refused}. Pass "
            "states={node: [states, ...]} (the public domain; bin numeric columns with "
            "public cut points or pmr.private_bins), or states='from-data' to read them "
            "from the records, which the ledger flags as outside the privacy guarantee"
        )
    return missing


def count_family_tables(
    df: Any,
    structure: NetworkStructure,
    given: Mapping[str, Sequence[Hashable]],
    *,
    private: bool,
    from_data_nodes: set[str],
    all_from_data: bool,
) -> FamilyTables:
    """States and family tables of every node of ``structure``, counted from ``df``.

    Without privacy (``private=False``) undeclared states are read from the data; with privacy
    only for the opted-in nodes (:func:`undeclared_nodes`), through
    :func:`pymc_rdp.curation.domains.states_from_data`. A value outside a node's states is
    refused (nothing is counted).
    """
    nodes = structure.order
    if isinstance(df, pd.DataFrame):
        sub = validate_frame(df, nodes)
        if not private:  # no privacy: undeclared states come from the data
            states, from_data = infer_states(sub, nodes, given), []
        else:
            from_data = undeclared_nodes(
                structure,
                given,
                private=True,
                from_data_nodes=from_data_nodes,
                all_from_data=all_from_data,
            )
            read = states_from_data(sub, from_data)
            states = {v: given.get(v) or read[v] for v in nodes}
        check_within(sub, states)
        codes = encode_frame(sub, states)
        cards = {v: len(states[v]) for v in nodes}
        tables = {v: family_table(codes, v, structure.parents[v], cards) for v in nodes}
        return FamilyTables(states, tables, len(sub), from_data)
    # Polars, DuckDB, Spark...: counted by the frame's own engine
    from_data = undeclared_nodes(
        structure,
        given,
        private=private,
        from_data_nodes=from_data_nodes,
        all_from_data=all_from_data,
    )
    states, tables = _count_on_engine(df, structure, given)
    return FamilyTables(states, tables, int(tables[nodes[0]].sum()), from_data)


def check_public_total(public_total: Any, n: int) -> int | None:
    """``None``, or the caller's public number of records after checking it is ``len(df)``."""
    if public_total is None:
        return None
    if isinstance(public_total, (bool, np.bool_)) or not isinstance(
        public_total, (int, np.integer)
    ):
        raise TypeError(f"public_total must be None or an int, got {public_total!r}")
    if int(public_total) != n:
        raise ValueError(
            "public_total does not equal the number of records of df: declare only a total "
            "that is known outside the data and matches it"
        )
    return int(public_total)


def _count_on_engine(
    df: Any, structure: NetworkStructure, given: Mapping[str, Sequence[Hashable]]
) -> tuple[dict[str, list[Hashable]], dict[str, np.ndarray]]:
    """States and family tables of a non-pandas frame
    (:func:`pymc_rdp.curation.counting.count_tables`).

    Nodes without given states take them from the data
    (:func:`pymc_rdp.curation.counting.infer_states`),
    which the guarantee does not cover. An empty frame is refused as in the pandas path.
    """
    from pymc_rdp.curation.counting import count_tables
    from pymc_rdp.curation.counting import infer_states as engine_states

    states = {v: list(given[v]) for v in structure.order if v in given}
    unknown = [v for v in structure.order if v not in states]
    if unknown:
        states.update(engine_states(df, unknown, name="df"))
        empty = [v for v in unknown if not states[v]]
        if empty:
            raise ValueError(f"df has no values in column(s) {empty}: no records, or all missing")
    states = {v: states[v] for v in structure.order}
    tables = count_tables(df, structure.parents, states, name="df")
    if int(tables[structure.order[0]].sum()) == 0:
        raise ValueError("df is empty: it has no records")
    return states, tables
