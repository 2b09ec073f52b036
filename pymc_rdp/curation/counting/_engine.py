"""The engine path: one grouped count per table, run where the data are (through narwhals).

The engine groups the records by the table's raw columns and returns one row per combination
of values present with its count; only that aggregate is collected, and at most
``∏ K_j + 1`` of its rows (``K_j`` declared states of column ``j``): with valid data there are
at most ``∏ K_j`` combinations, so a longer aggregate already proves a bad record. The values of
the collected rows are then looked up in the declared states and scattered into the dense table.
A missing value (a null key) or a value outside the declared states refuses the count before
anything is returned, so bad records are found in the same pass as the counts.

When the aggregate is cut, a second, bounded query names the bad column: every record gets a
code per column, ``0..K_j-1`` for its state, ``K_j`` outside the declared states and
``K_j + 1`` for a missing value, and one key in mixed radix ``B_j = K_j + 2``,
``key = Σ_j code_j ∏_{l>j} B_l``; grouped by that key the aggregate has at most ``∏ B_j`` rows.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from pymc_rdp.curation.counting.domain import matching_states
from pymc_rdp.curation.counting.errors import refuse_missing, refuse_outside

__all__ = ["count_on_engine"]

_KEY = "__pymc_rdp_key"
_N = "__pymc_rdp_n"
#: the largest key space of one table (mixed radix K + 2 per column), so that keys fit in int64
MAX_KEYS = 2**62


def _collect(frame: Any) -> Any:
    import narwhals as nw

    return frame.collect() if isinstance(frame, nw.LazyFrame) else frame


def count_on_engine(
    frame: Any,
    columns: Sequence[str],
    dtypes: Sequence[Any],
    states: Sequence[Sequence[Hashable]],
    name: str,
) -> np.ndarray:
    """Dense counts over ``columns`` (row-major, the first column slowest), int64, flat.

    ``frame`` is a narwhals DataFrame or LazyFrame; ``dtypes`` are the columns' narwhals types.
    """
    import narwhals as nw

    lookups = [
        matching_states(c, d, s, name) for c, d, s in zip(columns, dtypes, states, strict=True)
    ]
    cards = [len(s) for s in states]
    cells = int(np.prod(cards, dtype=object))
    if cells >= MAX_KEYS:
        raise ValueError(
            f"{name}: the table over {list(columns)} has too many cells to count "
            f"({' x '.join(map(str, cards))})"
        )
    agg = frame.group_by(*columns).agg(nw.len().alias(_N))
    agg = _collect(agg.head(cells + 1) if isinstance(agg, nw.LazyFrame) else agg)
    if len(agg) > cells:
        _diagnose(frame, columns, dtypes, states, name)
    counts = np.asarray(agg.get_column(_N).to_numpy(), dtype=np.int64)
    flat = np.zeros(len(counts), dtype=np.int64)
    for c, s, (values, where), k in zip(columns, states, lookups, cards, strict=True):
        keys = pd.array(agg.get_column(c).to_list(), dtype=object)
        if pd.isna(keys).any():
            refuse_missing(name, c)
        pos = pd.Index(values, dtype=object).get_indexer(np.asarray(keys, dtype=object))
        if (pos < 0).any():
            refuse_outside(name, c, s)
        flat = flat * k + np.asarray(where, dtype=np.int64)[pos]
    table = np.zeros(cells, dtype=np.int64)
    np.add.at(table, flat, counts)
    return table


def _code(column: str, dtype: Any, states: Sequence[Hashable], name: str) -> Any:
    import narwhals as nw

    values, cells = matching_states(column, dtype, states, name)
    k = len(states)
    col = nw.col(column)
    known = col.replace_strict(values, cells, default=k, return_dtype=nw.Int64)
    return nw.when(col.is_null()).then(nw.lit(k + 1, dtype=nw.Int64)).otherwise(known)


def _diagnose(
    frame: Any,
    columns: Sequence[str],
    dtypes: Sequence[Any],
    states: Sequence[Sequence[Hashable]],
    name: str,
) -> None:
    """Find and refuse the first bad column by a count over coded keys (bounded aggregate)."""
    import narwhals as nw

    radix = [len(s) + 2 for s in states]
    if int(np.prod(radix, dtype=object)) >= MAX_KEYS:
        raise ValueError(
            f"{name}: a column of {list(columns)} has missing values or values outside its "
            "declared states"
        )
    strides = [int(np.prod(radix[j + 1 :], dtype=object)) for j in range(len(radix))]
    key: Any = None
    for c, dt, s, stride in zip(columns, dtypes, states, strides, strict=True):
        term = _code(c, dt, s, name) * stride
        key = term if key is None else key + term
    agg = _collect(frame.select(key.alias(_KEY)).group_by(_KEY).agg(nw.len().alias(_N)))
    rest = np.asarray(agg.get_column(_KEY).to_numpy(), dtype=np.int64)
    digits = []
    for b in reversed(radix):
        digits.append(rest % b)
        rest = rest // b
    digits.reverse()
    for c, s, d in zip(columns, states, digits, strict=True):
        if (d == len(s) + 1).any():
            refuse_missing(name, c)
        if (d == len(s)).any():
            refuse_outside(name, c, s)
    raise AssertionError("unreachable: the aggregate was longer than the table")  # pragma: no cover
