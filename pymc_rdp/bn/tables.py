"""Domains, integer encoding and family count tables of a discrete Bayesian network (numpy, pandas).

The *family* of a node ``v`` is ``v`` with its parents; its sufficient statistic is the contingency
table of counts ``n[c, k]`` = number of records whose parents take configuration ``c`` and whose
``v`` takes state ``k`` (Koller & Friedman 2009, "Probabilistic Graphical Models", Sec. 17.2).
Parent configurations are enumerated in row-major order over the parents, in the order the
structure lists them (the first parent varies slowest), which is also pgmpy's column order of a
``TabularCPD``.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "ROOT_LABEL",
    "cell_labels",
    "config_index",
    "config_labels",
    "encode_frame",
    "family_table",
    "infer_states",
    "validate_frame",
]

#: Label of the single parent configuration of a root node.
ROOT_LABEL = "(none)"


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
