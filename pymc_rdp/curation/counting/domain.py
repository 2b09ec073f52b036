"""Declared state domains of the counted columns, checked against a frame's column types.

A state list is the public domain of one column: the table has one cell per state (in the
listed order), whatever the data hold. Only the declared lists and the frame's schema (column
names and types, not its values) are read here.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["check_states", "column_kind", "matching_states"]

#: how many declared states an error message shows
_SHOWN = 10


def shown(states: Sequence[Hashable]) -> str:
    """The declared states for a message (public), cut after a few."""
    head = ", ".join(repr(s) for s in states[:_SHOWN])
    return f"[{head}{', ...' if len(states) > _SHOWN else ''}]"


def _py(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def check_states(
    columns: Sequence[str], states: Mapping[str, Sequence[Hashable]]
) -> dict[str, list[Hashable]]:
    """The declared states of ``columns``: non-empty lists of distinct, non-missing values.

    Raises
    ------
    TypeError
        ``states`` is not a mapping, or a state list is a string or not a sequence.
    ValueError
        A column without declared states, an empty list, a repeated or a missing (NaN/None)
        state.
    """
    if not isinstance(states, Mapping):
        raise TypeError(f"states must be a dict column -> list of states, got {type(states)}")
    out: dict[str, list[Hashable]] = {}
    for c in columns:
        if c not in states:
            raise ValueError(f"states: no declared states for column {c!r}")
        raw = states[c]
        if isinstance(raw, (str, bytes)) or not hasattr(raw, "__iter__"):
            raise TypeError(f"states[{c!r}] must be a list of states, got {type(raw).__name__}")
        vals = [_py(s) for s in raw]
        if not vals:
            raise ValueError(f"states[{c!r}] is empty: a column needs at least one state")
        for s in vals:
            if s is None or (isinstance(s, float) and math.isnan(s)):
                raise ValueError(
                    f"states[{c!r}] lists a missing value ({s!r}); missing values are not a state"
                )
        try:
            distinct = len(set(vals)) == len(vals)
        except TypeError:
            raise TypeError(f"states[{c!r}] holds unhashable values") from None
        if not distinct:
            raise ValueError(f"states[{c!r}] lists a state twice")
        out[c] = vals
    return out


def column_kind(dtype: Any) -> str | None:
    """``"string"``, ``"integer"``, ``"float"``, ``"boolean"`` or None for a narwhals dtype."""
    import narwhals as nw

    if dtype == nw.String or dtype == nw.Categorical or dtype == nw.Enum:
        return "string"
    if dtype == nw.Boolean:
        return "boolean"
    if dtype.is_integer():
        return "integer"
    if dtype.is_float():
        return "float"
    return None


def _fits(state: Any, kind: str) -> Any:
    """``state`` as a value of a column of ``kind``, or None if no such value equals it."""
    if kind == "string":
        return state if isinstance(state, str) else None
    if kind == "boolean":
        return state if isinstance(state, bool) else None
    if isinstance(state, bool) or not isinstance(state, (int, float)):
        return None
    if kind == "integer":
        if isinstance(state, float):
            return int(state) if state.is_integer() else None
        return state
    return float(state)


def matching_states(
    column: str, dtype: Any, states: Sequence[Hashable], name: str
) -> tuple[list[Any], list[int]]:
    """The declared states a column of type ``dtype`` can hold, as its values, with their cells.

    A state of another type (the string ``"1"`` for an integer column) can never be matched:
    it stays a cell that counts zero. A column of a type that cannot hold any declared state is
    refused.

    Returns
    -------
    values, cells : list
        Values to look up in the column and the index of each in ``states``.

    Raises
    ------
    TypeError
        The column's type is not countable (dates, lists, objects...) or can hold none of the
        declared states; the message names the column.
    """
    kind = column_kind(dtype)
    if kind is None:
        raise TypeError(
            f"{name}: column {column!r} has type {dtype}, which cannot be counted; use "
            "strings, categories, integers or booleans"
        )
    values: list[Any] = []
    cells: list[int] = []
    for i, s in enumerate(states):
        v = _fits(s, kind)
        if v is not None:
            values.append(v)
            cells.append(i)
    if not values:
        types = sorted({type(s).__name__ for s in states})
        raise TypeError(
            f"{name}: column {column!r} holds {kind} values ({dtype}) but its declared states "
            f"{shown(list(states))} are of type {', '.join(types)}"
        )
    return values, cells
