"""Contingency tables counted where the data are: pandas, Polars, PyArrow, DuckDB, Spark, Ibis.

:func:`count_table` counts one family table, :func:`count_tables` all the family tables of a
network. A frame is anything `narwhals <https://narwhals-dev.github.io/narwhals/>`_ supports:
a pandas, Polars (eager or lazy) or PyArrow frame, a DuckDB relation, a PySpark DataFrame, an
Ibis table. An in-memory pandas frame is counted with ``np.bincount`` on integer codes (the fast
default); every other frame is grouped and counted by its own engine, and only the aggregate (at
most one row per cell, however many records there are) comes back
(:mod:`pymc_rdp.curation.counting._engine`). A Parquet or CSV file larger than memory is counted by
DuckDB or Polars streaming through it (:func:`pymc_rdp.curation.counting.files.read_frame`).

The table of a child ``v`` with parents ``p_1, ..., p_m`` has the package's family-table layout
(:func:`pymc_rdp.bn.structure.family_table`): an int64 array of shape
``(∏ K_{p_i}, K_v)``, parent configurations in row-major order over the parents as listed (the
first parent varies slowest), states in the declared order. Declared states that no record takes
are zero cells.

Every column's states are declared (the public domain). A record outside the declared states or
with a missing value refuses the whole count with a ValueError naming the column; its message
holds neither the bad values nor how many there are (both come from the sensitive records).
A missing column, a column whose type cannot hold the declared states, an unsupported frame:
ValueError or TypeError naming the column or the frame. No PyMC here.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from pymc_rdp.curation.counting.domain import check_states

__all__ = ["count_table", "count_tables", "infer_states", "is_pandas"]


def is_pandas(frame: Any) -> bool:
    """Whether ``frame`` is an in-memory pandas DataFrame (counted by ``np.bincount``)."""
    import pandas as pd

    return isinstance(frame, pd.DataFrame)


def _narwhals(frame: Any, name: str) -> Any:
    import narwhals as nw

    if isinstance(frame, (nw.DataFrame, nw.LazyFrame)):
        return frame
    try:
        return nw.from_native(frame)
    except TypeError:
        raise TypeError(
            f"{name} must be a pandas DataFrame or another data frame narwhals supports "
            f"(Polars, PyArrow, DuckDB, PySpark, Ibis), got {type(frame).__name__}"
        ) from None


def _schema(nwf: Any, columns: Sequence[str], name: str) -> dict[str, Any]:
    """Types of ``columns`` from the frame's schema (no data read); missing columns refused."""
    schema = nwf.collect_schema()
    absent = [c for c in columns if c not in schema]
    if absent:
        raise ValueError(f"{name} has no column(s) {absent}")
    return {c: schema[c] for c in columns}


def _families(parents: Any) -> dict[str, tuple[str, ...]]:
    raw = getattr(parents, "parents", parents)
    if not isinstance(raw, Mapping):
        raise TypeError(
            "parents must be a dict child -> list of parents (or a NetworkStructure), "
            f"got {type(parents).__name__}"
        )
    out: dict[str, tuple[str, ...]] = {}
    for child, pars in raw.items():
        out[child] = _family(child, pars)
    return out


def _family(child: Any, parents: Any) -> tuple[str, ...]:
    if not isinstance(child, str) or not child:
        raise TypeError(f"child must be a column name (a non-empty string), got {child!r}")
    if isinstance(parents, str) or not isinstance(parents, Sequence):
        raise TypeError(f"parents of {child!r} must be a list of column names, got {parents!r}")
    pars = tuple(parents)
    for p in pars:
        if not isinstance(p, str) or not p:
            raise TypeError(f"parents of {child!r} must be column names, got {p!r}")
    if len(set(pars)) != len(pars) or child in pars:
        raise ValueError(f"the family of {child!r} lists a column twice: {[*pars, child]}")
    return pars


def count_tables(
    frame: Any,
    parents: Any,
    states: Mapping[str, Sequence[Hashable]],
    *,
    name: str = "frame",
) -> dict[str, np.ndarray]:
    """All the family tables of a network, counted from ``frame``.

    Parameters
    ----------
    frame : data frame
        One record per row; pandas, Polars, PyArrow, DuckDB, PySpark, Ibis or any frame that
        narwhals supports. Columns not in the network are ignored (never read by the engines).
    parents : dict or NetworkStructure
        ``child -> [parents]`` for every node whose table is wanted.
    states : dict
        ``column -> declared states`` for every node and parent.
    name : str
        The frame's name in error messages.

    Returns
    -------
    dict
        ``node -> int64 array (parent configurations, states of node)``, in the order of
        ``parents``. Each table sums to the number of records.

    Raises
    ------
    ValueError
        A column is missing, has missing values or values outside its declared states (named);
        a state list is empty or repeats a state.
    TypeError
        ``frame`` is not a supported frame, or a column's type cannot hold its states (named).
    """
    fams = _families(parents)
    order: list[str] = []
    for child, pars in fams.items():
        for c in (*pars, child):
            if c not in order:
                order.append(c)
    declared = check_states(order, states)
    cards = {c: len(declared[c]) for c in order}
    if is_pandas(frame):
        from pymc_rdp.curation.counting._pandas import encode_column

        dtypes = _schema(_narwhals(frame, name), order, name)
        codes = {c: encode_column(frame, c, dtypes[c], declared[c], name) for c in order}
        from pymc_rdp.bn.structure import family_table

        return {v: family_table(codes, v, pars, cards) for v, pars in fams.items()}
    from pymc_rdp.curation.counting._engine import count_on_engine

    nwf = _narwhals(frame, name)
    dtypes = _schema(nwf, order, name)
    tables = {}
    for v, pars in fams.items():
        cols = [*pars, v]
        flat = count_on_engine(
            nwf, cols, [dtypes[c] for c in cols], [declared[c] for c in cols], name
        )
        tables[v] = flat.reshape(-1, cards[v])
    return tables


def count_table(
    frame: Any,
    child: str,
    parents: Sequence[str],
    states: Mapping[str, Sequence[Hashable]],
    *,
    name: str = "frame",
) -> np.ndarray:
    """The contingency table of one family: records by parent configuration and child state.

    .. math:: n[c, k] = \\#\\{i : (x_{i, p_1}, \\dots, x_{i, p_m}) = c,\\ x_{i, v} = k\\},

    with ``c`` enumerated in row-major order over ``parents`` (the first slowest), the layout of
    :func:`pymc_rdp.bn.structure.family_table` (pgmpy's column order of a CPD).

    Parameters
    ----------
    frame : data frame
        pandas, Polars (eager or lazy), PyArrow, DuckDB relation, PySpark, Ibis, or any frame
        narwhals supports.
    child : str
        The counted column.
    parents : sequence of str
        The conditioning columns (``[]`` for a root: one configuration).
    states : dict
        ``column -> declared states`` for ``child`` and every parent (extra keys are ignored).
    name : str
        The frame's name in error messages.

    Returns
    -------
    numpy.ndarray
        int64, shape ``(∏ K_p, K_child)``.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"smoker": ["yes", "no", "no"], "cancer": ["no", "no", "yes"]})
    >>> count_table(df, "cancer", ["smoker"], {"smoker": ["no", "yes"], "cancer": ["no", "yes"]})
    array([[1, 1],
           [1, 0]])
    """
    pars = _family(child, parents)
    return count_tables(frame, {child: pars}, states, name=name)[child]


def infer_states(
    frame: Any, columns: Sequence[str], *, name: str = "frame"
) -> dict[str, list[Hashable]]:
    """State lists read from the data: an Enum's or pandas categorical's categories, else the
    sorted distinct non-missing values (order of appearance where they do not sort).

    States read from the sensitive records are not covered by any privacy guarantee (which
    values occur is itself information about the records): declare public domains instead
    wherever possible. Missing values are not states.
    """
    import narwhals as nw

    if is_pandas(frame):
        import pandas as pd

        _schema(_narwhals(frame, name), columns, name)
        out_pd: dict[str, list[Hashable]] = {}
        for c in columns:
            col = frame[c]
            if isinstance(col.dtype, pd.CategoricalDtype):
                out_pd[c] = [_py(v) for v in col.cat.categories]
            else:
                out_pd[c] = _sorted([_py(v) for v in pd.unique(col.dropna())])
        return out_pd
    nwf = _narwhals(frame, name)
    dtypes = _schema(nwf, columns, name)
    out: dict[str, list[Hashable]] = {}
    for c in columns:
        dt = dtypes[c]
        if isinstance(dt, nw.Enum):
            out[c] = list(dt.categories)
            continue
        uniq = nwf.select(nw.col(c)).unique().filter(~nw.col(c).is_null())
        if isinstance(uniq, nw.LazyFrame):
            uniq = uniq.collect()
        out[c] = _sorted([_py(v) for v in uniq.get_column(c).to_list()])
    return out


def _py(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _sorted(values: list[Any]) -> list[Any]:
    try:
        return sorted(values)
    except TypeError:
        return values
