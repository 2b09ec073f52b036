"""The in-memory pandas path: integer codes of each column, then one ``np.bincount`` per table."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
import pandas as pd

from pymc_rdp.curation.counting.domain import matching_states
from pymc_rdp.curation.counting.errors import refuse_missing, refuse_outside

__all__ = ["encode_column"]


def encode_column(
    frame: pd.DataFrame, column: str, dtype: object, states: Sequence[Hashable], name: str
) -> np.ndarray:
    """Cell index (int64, 0..K-1) of every record's value of ``column``.

    A missing value or a value outside ``states`` refuses the whole frame (ValueError naming the
    column). A categorical column is encoded through its categories (one look-up per category,
    not per record).
    """
    col = frame[column]
    obj = str(dtype) == "Object"
    if obj:  # mixed Python objects: compare them as they are
        values, cells = list(states), list(range(len(states)))
    else:
        values, cells = matching_states(column, dtype, states, name)
    lut = np.asarray(cells, dtype=np.int64)
    index = pd.Index(values, dtype=object) if obj else pd.Index(values)
    if isinstance(col.dtype, pd.CategoricalDtype):
        pos = index.get_indexer(col.cat.categories.astype(object))
        raw = col.cat.codes.to_numpy()
        if (raw < 0).any():
            refuse_missing(name, column)
        pos = pos[raw]
    else:
        # one pass over the records (factorize), then a look-up per distinct value
        raw, uniques = pd.factorize(col, use_na_sentinel=True)
        if (raw < 0).any():
            refuse_missing(name, column)
        pos = index.get_indexer(np.asarray(uniques, dtype=object) if obj else uniques)[raw]
    if (pos < 0).any():
        refuse_outside(name, column, states)
    return lut[pos]
