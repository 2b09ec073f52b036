"""The composed RDP curve of a ledger, kept incrementally on a fixed grid of orders.

Composition rules (Mironov 2017, "Rényi Differential Privacy", Proposition 1, and the parallel
composition of mechanisms on disjoint records):

* Sequential (adaptive, heterogeneous) composition adds the curves order by order:
  ε(α) = Σᵢ εᵢ(α).
* Entries of one group with distinct partition keys touch disjoint sets of records: the group
  contributes the order-wise maximum over its partitions of each partition's sequential sum,
  ε_g(α) = max_p Σ_{i ∈ p} εᵢ(α). Entries without a group, or without a partition, compose
  sequentially with everything else.

Curves are added in ledger order, one addition per entry and order, so that a ledger replayed
entry by entry (a reload, a batch against successive spends) composes to the same floats.
A change is first *planned* (the new state computed, nothing changed) and then *committed*, so
that a refused spend leaves the state exactly as it was.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = ["ComposedCurve", "Plan", "recompose"]

#: A planned change: (sequential sum, new partition sums, group, its new max row, Σ_g max, total).
Plan = tuple


class ComposedCurve:
    """The sequential sum, the per-group partition sums and their maxima, and the total.

    Parameters
    ----------
    size : int
        The number of orders.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.base = np.zeros(size)  # sequential sum
        self.spare = np.zeros(size)  # the buffer of the next sequential sum (referenced nowhere)
        self.partitions: dict[Any, dict[Any, np.ndarray]] = {}  # group -> partition -> sum
        self.group_rows: dict[Any, int] = {}  # group -> row of gmax
        self.gmax = np.zeros((4, size))  # per group: the order-wise max over its partitions
        self.gpart = np.zeros(size)  # Σ_g gmax_g
        self.total = np.zeros(size)  # base + gpart

    def copy(self) -> ComposedCurve:
        """An independent copy."""
        new = ComposedCurve.__new__(ComposedCurve)
        new.size = self.size
        new.base = self.base.copy()
        new.spare = np.zeros(self.size)
        new.partitions = {g: dict(p) for g, p in self.partitions.items()}
        new.group_rows = dict(self.group_rows)
        new.gmax = self.gmax.copy()
        new.gpart = self.gpart.copy()
        new.total = self.total.copy()
        return new

    # ------------------------------------------------------------------ one curve

    def plan(self, curve: np.ndarray, group: Any = None, partition: Any = None) -> Plan:
        """The state after adding ``curve`` (under ``group``/``partition``); its last item is
        the new total. Nothing is changed."""
        if group is None or partition is None:
            # the new sum goes to the spare buffer (no allocation); commit swaps the two
            base = np.add(self.base, curve, out=self.spare)
            # without parallel groups the group part is all zeros and base + 0 == base exactly
            # (base is never -0.0: it starts at +0.0 and curves are >= 0)
            total = base + self.gpart if self.group_rows else base
            return (base, None, None, None, None, total)
        parts = self.partitions.get(group)
        old = None if parts is None else parts.get(partition)
        s_new = curve.copy() if old is None else old + curve
        row = self.group_rows.get(group)
        gmax = s_new if row is None else np.maximum(self.gmax[row], s_new)
        gpart = self._gpart_with(group, gmax)
        return (self.base, {partition: s_new}, group, gmax, gpart, self.base + gpart)

    # ------------------------------------------------------------------ many curves

    def plan_batch(
        self, buf: np.ndarray, group: Any = None, partitions: list[Any] | None = None
    ) -> Plan:
        """The state after adding the curves ``buf[1:]`` in row order; ``buf[0]`` is scratch.

        ``partitions`` holds one key (or None: sequential) per curve, all under ``group``.
        Sequential curves are added in row order with one reduction (``buf[0]`` is set to the
        current sequential sum), exactly as successive :meth:`plan`/:meth:`commit` calls would.
        """
        curves = buf[1:]
        if partitions is None:
            seq = None
        else:
            seq = np.fromiter((p is None for p in partitions), bool, len(partitions))
            if seq.all():
                seq = None
        if seq is None:
            buf[0] = self.base
            base = np.add.reduce(buf, axis=0)
        elif seq.any():
            stacked = np.empty((int(seq.sum()) + 1, self.size))
            stacked[0] = self.base
            stacked[1:] = curves[seq]
            base = np.add.reduce(stacked, axis=0)
        else:
            base = self.base
        if seq is None:
            total = base + self.gpart if self.group_rows else base
            return (base, None, None, None, None, total)
        parts = self.partitions.get(group, {})
        row = self.group_rows.get(group)
        gmax = None if row is None else self.gmax[row].copy()
        new_parts: dict[Any, np.ndarray] = {}
        for i in np.flatnonzero(~seq):
            key = partitions[i]
            old = new_parts.get(key, parts.get(key))
            s_new = curves[i].copy() if old is None else old + curves[i]
            new_parts[key] = s_new
            gmax = s_new if gmax is None else np.maximum(gmax, s_new)
        gpart = self._gpart_with(group, gmax)
        return (base, new_parts, group, gmax, gpart, base + gpart)

    # ------------------------------------------------------------------ commit

    def commit(self, plan: Plan) -> None:
        """Make a planned state the current one."""
        base, new_parts, group, gmax, gpart, total = plan
        if base is self.spare:
            self.spare = self.base
        self.base = base
        if new_parts is not None:
            self.partitions.setdefault(group, {}).update(new_parts)
            row = self.group_rows.get(group)
            if row is None:
                row = self.group_rows[group] = len(self.group_rows)
                if row >= self.gmax.shape[0]:
                    grown = np.zeros((2 * self.gmax.shape[0], self.size))
                    grown[:row] = self.gmax[:row]
                    self.gmax = grown
            self.gmax[row] = gmax
            self.gpart = gpart
        self.total = total

    def _gpart_with(self, group: Any, gmax_row: np.ndarray) -> np.ndarray:
        """Σ_g gmax_g with the row of ``group`` replaced (or added) by ``gmax_row``."""
        n = len(self.group_rows)
        row = self.group_rows.get(group, n)
        mat = np.empty((max(n, row + 1), self.size))
        mat[:n] = self.gmax[:n]
        mat[row] = gmax_row
        return mat.sum(axis=0)


def recompose(items: Iterable[tuple[np.ndarray, Any, Any]], size: int) -> np.ndarray:
    """The composed curve of ``(curve, group, partition)`` items on ``size`` orders.

    The same rules as :class:`ComposedCurve`, for curves evaluated on other orders.
    """
    base = np.zeros(size)
    parts: dict[Any, dict[Any, np.ndarray]] = {}
    for curve, group, partition in items:
        if group is None or partition is None:
            base = base + curve
        else:
            g = parts.setdefault(group, {})
            g[partition] = g[partition] + curve if partition in g else curve
    total = base
    for g in parts.values():
        total = total + np.max(np.stack(list(g.values())), axis=0)
    return total
