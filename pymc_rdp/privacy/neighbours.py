"""The neighbouring relations and the sensitivities of a count table under each.

Differential privacy compares neighbouring data sets (Dwork & Roth 2014, "The Algorithmic
Foundations of Differential Privacy", §2.3). Two relations are understood:

* ``"replace-one"`` — the data sets have the same number of records and differ in one of them.
  In a count table one record moves from one cell to another: two cells change by 1, so
  Δ₁ = 2, Δ₂ = √2 and Δ∞ = 1 (the same for a batch of tables, where the record may move
  between rows: still two cells).
* ``"add-remove"`` — one data set has one record more. One cell changes by 1:
  Δ₁ = Δ₂ = Δ∞ = 1.
"""

from __future__ import annotations

import math

__all__ = ["NEIGHBOURS", "check_neighbours", "table_sensitivity"]

#: The neighbouring relations understood by the package.
NEIGHBOURS = ("replace-one", "add-remove")

_TABLE_SENSITIVITY = {
    "replace-one": {"l1": 2.0, "l2": math.sqrt(2.0), "linf": 1.0},
    "add-remove": {"l1": 1.0, "l2": 1.0, "linf": 1.0},
}


def check_neighbours(value: object, name: str = "neighbours") -> str:
    """``value`` if it is one of :data:`NEIGHBOURS`, else a ValueError naming ``name``."""
    if not isinstance(value, str) or value not in NEIGHBOURS:
        raise ValueError(f"{name} must be one of {NEIGHBOURS}, got {value!r}")
    return value


def table_sensitivity(neighbours: str) -> dict[str, float]:
    """Sensitivities of a count table (or batch of tables) under a neighbouring relation.

    Returns
    -------
    dict
        ``{"l1": Δ₁, "l2": Δ₂, "linf": Δ∞}``: (2, √2, 1) for ``"replace-one"``, (1, 1, 1) for
        ``"add-remove"`` (module docstring).
    """
    return dict(_TABLE_SENSITIVITY[check_neighbours(neighbours)])
