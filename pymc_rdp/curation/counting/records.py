"""Every record's state codes, read from any frame, for mechanisms that randomise each record.

Randomized response releases one value per record and node, so the curator needs the records'
codes in memory, in one common row order across the columns (record ``i`` is row ``i`` of every
column). A pandas frame is encoded in place, as for counting. Any other frame narwhals supports
(Polars, PyArrow, DuckDB, PySpark, Ibis) is coded by its own engine in one selection:
``0 .. K − 1`` for a declared state, ``K`` for a value outside the states and ``K + 1`` for a
missing one. Only those integer columns are collected. A missing value or a value outside the
states refuses the frame by column, with nothing read from the data in the message.

The collected codes are the sensitive records themselves: they stay in the curator's process and
only their randomised values are released. Memory is ``N × nodes`` 64-bit integers.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from pymc_rdp.curation.counting import _narwhals, _schema, is_pandas
from pymc_rdp.curation.counting.domain import check_states
from pymc_rdp.curation.counting.errors import refuse_missing, refuse_outside

__all__ = ["encode_records"]


def encode_records(
    frame: Any, states: Mapping[str, Sequence[Hashable]], *, name: str = "frame"
) -> dict[str, np.ndarray]:
    """Each record's code (int64, ``0 .. K − 1``) of every column of ``states``, row-aligned.

    Parameters
    ----------
    frame : data frame
        One record per row: pandas, Polars (eager or lazy), PyArrow, DuckDB, PySpark, Ibis or any
        frame narwhals supports.
    states : dict
        ``column -> declared states``; the columns coded, in this order.
    name : str
        The frame's name in error messages.

    Returns
    -------
    dict
        ``column -> int64 array`` of length N, entry ``i`` the code of record ``i``'s value (the
        frame's row order, the same for every column).

    Raises
    ------
    ValueError
        A column is missing, has missing values or values outside its declared states (named).
    TypeError
        ``frame`` is not a supported frame, or a column's type cannot hold its states (named).
    """
    columns = list(states)
    declared = check_states(columns, states)
    nwf = _narwhals(frame, name)
    dtypes = _schema(nwf, columns, name)
    if is_pandas(frame):
        from pymc_rdp.curation.counting._pandas import encode_column

        return {c: encode_column(frame, c, dtypes[c], declared[c], name) for c in columns}
    from pymc_rdp.curation.counting._engine import _code, _collect

    coded = nwf.select(*[_code(c, dtypes[c], declared[c], name).alias(c) for c in columns])
    out = _collect(coded)
    codes: dict[str, np.ndarray] = {}
    for c in columns:
        k = len(declared[c])
        values = np.asarray(out.get_column(c).to_numpy(), dtype=np.int64)
        if values.size and values.max() == k + 1:
            refuse_missing(name, c)
        if values.size and values.max() >= k:
            refuse_outside(name, c, declared[c])
        codes[c] = values
    return codes
