"""The refusals of a count: one message per bad column, naming it and nothing read from the data.

A message never holds a count of bad records or the bad values themselves: both are read from
the sensitive records. It names the column and, for values outside the domain, the declared
(public) states.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import NoReturn

from pymc_rdp.curation.counting.domain import shown

__all__ = ["refuse_missing", "refuse_outside"]


def refuse_missing(name: str, column: str) -> NoReturn:
    """Missing values in ``column``: refused, never dropped (which records miss is private)."""
    raise ValueError(
        f"{name}: column {column!r} has missing values; drop or impute them before counting "
        "(missing values are not a state)"
    )


def refuse_outside(name: str, column: str, states: Sequence[Hashable]) -> NoReturn:
    """Values of ``column`` outside its declared states: refused, never dropped."""
    raise ValueError(
        f"{name}: column {column!r} has values outside its declared states {shown(list(states))}"
    )
