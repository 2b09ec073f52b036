"""Declared domains: the public list of states of every column, and numeric cut points.

The states of a variable fix the shape of every table released about it. Read from the private
records, they are themselves a release that no mechanism covers: one record with a new value adds
a row or column to the published table (a perfect distinguisher of two neighbouring datasets),
and a float or identifier column publishes its values verbatim. So the domain is part of the
contract and is *declared*:

* a mapping ``column -> ordered list of states`` (``BayesianNetwork(structure, states=...)``,
  ``NaiveBayes(categories=..., classes=...)``), or the state names of a BIF / pgmpy model;
* a schema (:func:`parse_schema`, :func:`load_schema`, the CLI's ``--schema``) that gives, per
  column, its states in order or the cut points of a numeric column (:func:`bin_column`);
* public cut points can also be estimated privately with :func:`pymc_rdp.private_bins`.

Reading states from the data is an explicit opt-in (:data:`FROM_DATA`); the fits that use it
record ``accountant.declare("states_from_data", ..., outside_guarantee=True)``. Even then, a column
with more distinct values than a domain can sensibly have (:func:`states_from_data`) is refused
with a message that says how to bin it. Values outside a declared domain are refused before
anything is counted, charged or released (:func:`check_within`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "FROM_DATA",
    "MAX_STATES",
    "bin_column",
    "bin_labels",
    "check_states",
    "check_within",
    "declare_from_data",
    "load_schema",
    "parse_schema",
    "states_from_data",
]

#: the opt-in value that reads states from the private records (outside the guarantee)
FROM_DATA = "from-data"
#: the most distinct values a column read from the data may have
MAX_STATES = 100
#: a column of at least this many values, all distinct, is taken for an identifier
MIN_ID_VALUES = 20

_BIN_ADVICE = (
    'bin it with public cut points (a schema entry {"cuts": [...]}, or '
    "pymc_rdp.curation.domains.bin_column(values, cuts)), or estimate cut points privately with "
    "pymc_rdp.private_bins(values, n_bins, lower, upper, epsilon=..., accountant=...), then "
    "declare the bins as its states"
)


def _py(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def check_states(
    states: Any, known: Sequence[str] | None = None, name: str = "states"
) -> dict[str, list[Hashable]]:
    """Validate a mapping ``column -> ordered list of states``.

    Parameters
    ----------
    states : mapping
        Each value a list or tuple of distinct, hashable, non-missing states (at least one).
    known : sequence of str, optional
        The columns that may be named; another key is refused.
    name : str
        The argument's name in error messages.

    Returns
    -------
    dict
        ``column -> list of states`` (numpy scalars as Python scalars).

    Raises
    ------
    TypeError
        ``states`` is not a mapping, or a value is not a list/tuple (a string is refused: list
        its states).
    ValueError
        An unknown column, an empty list, a repeated or missing state.
    """
    if not isinstance(states, Mapping):
        raise TypeError(
            f"{name} must be a dict column -> list of states, got {type(states).__name__}"
        )
    out: dict[str, list[Hashable]] = {}
    if known is not None:
        unknown = [k for k in states if k not in known]
        if unknown:
            raise ValueError(
                f"{name}: {unknown} are not nodes (columns) of the model {list(known)}"
            )
    for col, vals in states.items():
        if isinstance(vals, (str, bytes)) or not isinstance(vals, (list, tuple, np.ndarray)):
            raise TypeError(
                f"{name}[{col!r}] must be a list of states, got {type(vals).__name__} ({vals!r})"
            )
        vals = [_py(v) for v in vals]
        if not vals:
            raise ValueError(f"{name}[{col!r}] has no states")
        for v in vals:
            if not isinstance(v, Hashable) or (isinstance(v, float) and math.isnan(v)) or v is None:
                raise ValueError(f"{name}[{col!r}]: {v!r} is not a valid state")
        if len(set(vals)) != len(vals):
            seen: set = set()
            dup = next(v for v in vals if v in seen or seen.add(v))  # type: ignore[func-returns-value]
            raise ValueError(f"{name}[{col!r}] lists the state {dup!r} twice")
        out[col] = vals
    return out


def states_from_data(
    frame: pd.DataFrame,
    columns: Sequence[Any],
    max_states: int = MAX_STATES,
    name: str = "df",
) -> dict[Any, list[Hashable]]:
    """States read from the records (the :data:`FROM_DATA` opt-in; outside the guarantee).

    A categorical column keeps its categories, another column gives its sorted distinct values
    (missing values are not a state). Refused, with advice to bin:

    * a float column with a non-integral value (a measurement, not a category);
    * more than ``max_states`` distinct values;
    * at least :data:`MIN_ID_VALUES` values, all distinct (an identifier).

    Raises
    ------
    ValueError
        A refused column (named), or a column with no value.
    """
    out: dict[Any, list[Hashable]] = {}
    for col in columns:
        series = frame[col]
        if isinstance(series.dtype, pd.CategoricalDtype):
            vals = list(series.cat.categories)
        else:
            present = series.dropna()
            kind = pd.api.types.infer_dtype(present, skipna=True)
            if kind in ("floating", "mixed-integer-float", "decimal"):
                arr = present.to_numpy(dtype=np.float64)
                if not np.all(np.isfinite(arr) & (arr == np.round(arr))):
                    raise ValueError(
                        f"{name}: column {col!r} holds non-integral numbers and cannot be a "
                        f"domain read from the data; {_BIN_ADVICE}"
                    )
            vals = list(pd.unique(present))
            if len(vals) >= MIN_ID_VALUES and len(vals) == len(present):
                raise ValueError(
                    f"{name}: column {col!r} looks like an identifier (every value distinct) and "
                    f"cannot be a domain read from the data; drop it, or {_BIN_ADVICE}"
                )
            try:
                vals = sorted(vals)
            except TypeError:
                vals = sorted(vals, key=lambda v: (type(v).__name__, str(v)))
        if len(vals) > max_states:
            raise ValueError(
                f"{name}: column {col!r} has more than {max_states} distinct values, too many "
                f"for a domain read from the data; {_BIN_ADVICE}"
            )
        if not vals:
            raise ValueError(f"{name}: column {col!r} has no observed state (all missing)")
        out[col] = [_py(v) for v in vals]
    return out


def check_within(frame: pd.DataFrame, states: Mapping[Any, Sequence[Hashable]], name: str = "df"):
    """Refuse values outside the declared states (missing values are left to the caller).

    The message names the column and what to do; it says nothing about how many records or which
    values are outside (the curator reads it, but it may travel into logs).

    Raises
    ------
    ValueError
        A column has a value outside its declared states.
    """
    for col, vals in states.items():
        series = frame[col]
        values = series.to_numpy(dtype=object)
        inside = pd.Index(list(vals), dtype=object).get_indexer(values) >= 0
        bad = ~inside & ~pd.isna(values)
        if bad.any():
            shown = list(vals)[:20]
            more = " ..." if len(vals) > 20 else ""
            raise ValueError(
                f"{name}: column {col!r} has values outside its declared states {shown}{more}. "
                "Nothing was released or charged. Declare the full public domain of "
                f"{col!r} (states/schema), or map or remove those values with a public rule "
                "before fitting."
            )


def declare_from_data(accountant: Any, columns: Sequence[Any], where: str) -> None:
    """Record in the ledger that ``columns``' states were read from the private records."""
    if accountant is None or not columns:
        return
    accountant.declare(
        "states_from_data",
        f"{where}: the states of {', '.join(map(str, columns))} were read from the private "
        "records (states='from-data'); which values occur is not covered by the guarantee",
        outside_guarantee=True,
    )


# --------------------------------------------------------------------------- numeric cut points


def _fmt(x: float) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() else f"{x:.10g}"


def _check_cuts(cuts: Any, atoms: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(cuts, (str, bytes)) or not isinstance(cuts, (list, tuple, np.ndarray)):
        raise TypeError(f"{name}: cuts must be a list of numbers, got {type(cuts).__name__}")
    if isinstance(atoms, (str, bytes)) or not isinstance(atoms, (list, tuple, np.ndarray)):
        raise TypeError(f"{name}: atoms must be a list of numbers, got {type(atoms).__name__}")
    try:
        c = np.asarray(cuts, dtype=np.float64).reshape(-1)
        a = np.asarray(atoms, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise TypeError(f"{name}: cuts and atoms must be numbers") from None
    if not (np.all(np.isfinite(c)) and np.all(np.isfinite(a))):
        raise ValueError(f"{name}: cuts and atoms must be finite numbers")
    if c.size == 0 and a.size == 0:
        raise ValueError(f"{name}: give at least one cut point")
    if np.any(np.diff(c) <= 0):
        raise ValueError(f"{name}: cuts must be strictly increasing, got {c.tolist()}")
    if np.unique(a).size != a.size:
        raise ValueError(f"{name}: atoms must be distinct, got {a.tolist()}")
    return c, np.sort(a)


def bin_labels(cuts: Sequence[float], atoms: Sequence[float] = (), name: str = "bins") -> list:
    """The states of a binned numeric column, ordered by their smallest value.

    Cut points ``c_1 < ... < c_m`` give the right-closed bins ``(-inf, c_1]``, ``(c_1, c_2]``,
    ..., ``(c_m, inf)`` (as :func:`pandas.cut`), labelled ``"<=c_1"``, ``"(c_1, c_2]"``, ...,
    ``">c_m"``. Each atom ``a`` (a value kept as its own state, e.g. a capital gain of 0) is
    labelled ``"a"`` and is taken out of the bin that holds it, which keeps its label.
    """
    c, a = _check_cuts(cuts, atoms, name)
    lows = [-math.inf, *c.tolist()]
    highs = [*c.tolist(), math.inf]
    keyed: list[tuple[float, int, str]] = []
    for lo, hi in zip(lows, highs, strict=True):
        if math.isinf(lo) and math.isinf(hi):
            label = "all"
        elif math.isinf(lo):
            label = f"<={_fmt(hi)}"
        elif math.isinf(hi):
            label = f">{_fmt(lo)}"
        else:
            label = f"({_fmt(lo)}, {_fmt(hi)}]"
        keyed.append((lo, 1, label))  # the bin's values lie just above lo
    keyed += [(float(x), 0, _fmt(x)) for x in a]  # an atom is exactly its value
    return [lab for _, _, lab in sorted(keyed)]


def bin_column(
    values: Any, cuts: Sequence[float], atoms: Sequence[float] = (), name: str = "column"
) -> pd.Categorical:
    """Bin a numeric column by public cut points: a categorical with :func:`bin_labels` states.

    Missing values stay missing; a non-numeric or infinite value is refused.
    """
    c, a = _check_cuts(cuts, atoms, name)
    series = pd.Series(values)
    try:
        x = pd.to_numeric(series, errors="raise").to_numpy(dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"{name}: has non-numeric values and cannot be binned by cut points; declare its "
            "states instead"
        ) from None
    if np.isinf(x).any():
        raise ValueError(f"{name}: has infinite values")
    labels = bin_labels(c, a, name)
    bins = [lab for lab in labels if lab not in {_fmt(v) for v in a}]
    out = np.empty(x.shape, dtype=object)
    out[:] = np.nan
    ok = ~np.isnan(x)
    idx = np.searchsorted(c, x[ok], side="left")
    out[ok] = np.asarray(bins, dtype=object)[idx]
    if a.size:
        is_atom = ok & np.isin(x, a)
        out[is_atom] = [_fmt(v) for v in x[is_atom]]
    return pd.Categorical(out, categories=labels)


# --------------------------------------------------------------------------- schema files


def parse_schema(doc: Any, name: str = "schema") -> dict[str, dict[str, Any]]:
    """Validate a schema document: per column, its states in order or numeric cut points.

    Accepted forms (JSON or YAML)::

        {"sex": ["female", "male"],                       # states in order
         "smoker": {"states": ["no", "yes"]},
         "age": {"cuts": [25, 35, 45, 55, 65]},           # bins (-inf, 25], (25, 35], ...
         "capital-gain": {"cuts": [5000], "atoms": [0]}}  # 0 as its own state

    A top-level ``{"columns": {...}}`` is also accepted.

    Returns
    -------
    dict
        ``column -> {"states": [...]}`` or ``{"cuts": [...], "atoms": [...], "states": labels}``.

    Raises
    ------
    TypeError, ValueError
        A malformed entry, named by its column.
    """
    if isinstance(doc, Mapping) and set(doc) == {"columns"} and isinstance(doc["columns"], Mapping):
        doc = doc["columns"]
    if not isinstance(doc, Mapping) or not doc:
        raise TypeError(
            f"{name} must map each column to its states (a list) or to "
            '{"states": [...]} / {"cuts": [...]}, got ' + type(doc).__name__
        )
    out: dict[str, dict[str, Any]] = {}
    for col, entry in doc.items():
        col = str(col)
        where = f"{name}[{col!r}]"
        if isinstance(entry, Mapping):
            keys = set(entry)
            if "states" in keys and keys <= {"states"}:
                out[col] = {"states": check_states({col: entry["states"]}, name=name)[col]}
            elif "cuts" in keys and keys <= {"cuts", "atoms"}:
                cuts = entry["cuts"]
                atoms = entry.get("atoms", [])
                c, a = _check_cuts(cuts, atoms, where)
                out[col] = {
                    "cuts": c.tolist(),
                    "atoms": a.tolist(),
                    "states": bin_labels(c, a, where),
                }
            else:
                raise ValueError(
                    f"{where} must have the key 'states' or 'cuts' (optionally 'atoms'), got "
                    f"{sorted(map(str, keys))}"
                )
        else:
            out[col] = {"states": check_states({col: entry}, name=name)[col]}
    return out


def load_schema(path: str | Path) -> dict[str, dict[str, Any]]:
    """Read a schema from a ``.json`` or ``.yaml``/``.yml`` file (see :func:`parse_schema`)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(2, "schema file not found", str(path))
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() in (".yaml", ".yml"):
        import yaml

        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ValueError(f"schema file {path} is not valid YAML: {exc}") from None
    else:
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"schema file {path} is not valid JSON: {exc}") from None
    return parse_schema(doc, name=f"schema file {path.name}")


def apply_schema(
    frame: pd.DataFrame, schema: Mapping[str, Mapping[str, Any]], name: str = "df"
) -> tuple[pd.DataFrame, dict[str, list[Hashable]]]:
    """Bin the schema's numeric columns and return the frame with the declared states.

    Columns with ``cuts`` are binned (:func:`bin_column`); the states of every schema column
    that the frame has are returned. Values outside declared states are left for
    :func:`check_within`.
    """
    out = frame.copy()
    states: dict[str, list[Hashable]] = {}
    for col, entry in schema.items():
        if col not in out.columns:
            continue
        if "cuts" in entry:
            out[col] = bin_column(
                out[col], entry["cuts"], entry.get("atoms", ()), f"{name}[{col!r}]"
            )
        states[col] = list(entry["states"])
    return out, states
