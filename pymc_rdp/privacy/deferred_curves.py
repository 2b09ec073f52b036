r"""Curves of sequential Gaussian and Laplace spends, held back and evaluated together.

A single spend of the built-in :class:`~pymc_rdp.privacy.mechanisms.GaussianMechanism` or
:class:`~pymc_rdp.privacy.mechanisms.LaplaceMechanism` (exactly those classes, parameters that
are plain finite positive floats, no parallel group) does not evaluate its curve: it records the
curve's one parameter (c = Δ₂²/(2σ²) for the Gaussian, t = Δ₁/b for the Laplace mechanism) and
its entry holds a :class:`~pymc_rdp.privacy.ledger.DeferredCurve`. The first reader of the
composed curve (every query of the accountant goes through ``Accountant._curve``) or of such an
entry's ``curve`` calls :meth:`DeferredCurves.flush`, which evaluates all of them as the rows of
one array and adds them to the composed curve in ledger order.

Nothing changes but the time it takes:

* every row holds the floats a spend evaluating its curve at once would hold: the Gaussian rows
  are the products c·α (one rounding each, as in :func:`~pymc_rdp.privacy.curves.gaussian`), the
  Laplace rows come from :func:`~pymc_rdp.privacy.curves.laplace_rows_checked`, which rounds each
  element as :func:`~pymc_rdp.privacy.curves.laplace` does;
* the rows are added to the sequential sum one after another (one reduction over the rows: the
  same floats as one addition per spend, :meth:`ComposedCurve.plan_batch`);
* with a budget, each spend is still decided on its own, before it is recorded, and exactly as
  before. :class:`~pymc_rdp.privacy.spending.Budget` first tests the composed curve at one order
  α_j (sufficient for the budget). Here that test is made on an upper bound of the composed
  value at α_j, so when it passes, the test on the exact value passes too; when it does not, the
  held-back curves are evaluated and the spend is decided by the full test on the exact curve.

The bound. Rounding to nearest is monotone, so a sum of upper bounds, added in the same order
with the same roundings, bounds the rounded sum. The Gaussian value at α_j is computed exactly
as its row will hold it (c·α_j). The Laplace mechanism is t-DP, hence ε(α) ≤ t, and
t²/2-zCDP (Bun & Steinke 2016, Proposition 3.3), hence ε(α) ≤ α t²/2; the evaluated curve is
within about 1e-14 relative of the exact one (:mod:`pymc_rdp.privacy._series`: ≤ 17 · 5e-16 for
the closed form, 2e-19 for the series), so min(t, α t²/2)·(1 + 2⁻³⁰) bounds the row's value.
The bound exceeds the curve by about t/3 + (αt)²/8 relative where αt is small (at the
budget's order, usually below 20, and for the weak mechanisms of long ledgers), which only
makes the one-order test fall back to the exact computation a little earlier. (Were it ever
short by less than 1e-12 relative, the decision would still be the exact one:
:func:`~pymc_rdp.privacy.spending.conversion_offset` carries that margin.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pymc_rdp.privacy.composition import ComposedCurve
from pymc_rdp.privacy.curves import (
    gaussian_coefficient,
    gaussian_of_coefficient,
    laplace_of_ratio,
    laplace_ratio,
    laplace_rows_checked,
)
from pymc_rdp.privacy.ledger import _CURVE_SLOT, DeferredCurve, Ledger, LedgerEntry, new_entry
from pymc_rdp.privacy.mechanisms.gaussian import GaussianMechanism
from pymc_rdp.privacy.mechanisms.laplace import LaplaceMechanism
from pymc_rdp.privacy.spending import Budget

__all__ = ["DEFERRED_CLASSES", "DeferredCurves"]

#: The classes whose single sequential spends are held back.
DEFERRED_CLASSES = (GaussianMechanism, LaplaceMechanism)

_INF = float("inf")
_LAPLACE_SLACK = 1.0 + 2.0**-30  # covers the evaluation error of the Laplace curve (above)
_TINY = 1e-100  # below this t the Laplace bound is not used (t² would lose its precision)
_SET_CURVE = _CURVE_SLOT.__set__
_ONE_BY_ONE = 4  # flushes of at most this many curves evaluate them one by one


class DeferredCurves:
    """The held-back curves of an accountant, and the bound of the composed curve at one order.

    Parameters
    ----------
    orders : numpy.ndarray
        The accountant's orders (sorted, distinct, read-only).
    composed : ComposedCurve
        The accountant's composed curve, to which :meth:`flush` adds the rows.
    """

    def __init__(self, orders: np.ndarray, composed: ComposedCurve) -> None:
        self.orders = orders
        self.alphas = orders.tolist()
        self.composed = composed
        self.placeholder = DeferredCurve(self)
        self._reset()

    def _reset(self) -> None:
        self.entries: list[LedgerEntry] = []
        self.gauss_rows: list[int] = []
        self.gauss: list[float] = []
        self.laplace_rows: list[int] = []
        self.laplace: list[float] = []
        self.counts: list[int] = []
        self.bound: float | None = None  # upper bound of composed.base at budget order `index`
        self.index = -1

    def __len__(self) -> int:
        return len(self.entries)

    def spend(
        self,
        mechanism: Any,
        count: int,
        tag: str | None,
        ledger: Ledger,
        budget: Budget | None,
    ) -> LedgerEntry | None:
        """Record a checked sequential spend with its curve held back; None when it must take
        the general path (parameters that are not plain finite positive floats, or a budget the
        one-order bound cannot show to be met). Nothing is recorded then."""
        gaussian = mechanism.__class__ is GaussianMechanism
        noise = mechanism.sigma if gaussian else mechanism.scale
        sens = mechanism.sensitivity
        if noise.__class__ is not float or sens.__class__ is not float:
            return None
        if not (0.0 < noise < _INF and 0.0 < sens < _INF):
            return None
        if gaussian:
            value = gaussian_coefficient(noise, sens)
            if not 0.0 < value < _INF:
                return None
        else:
            value = laplace_ratio(noise, sens)
            if not _TINY < value < _INF:
                return None
        if budget is not None and not self._admits(budget, gaussian, value, count):
            return None
        params = mechanism.params()
        n = len(self.entries)
        entry = new_entry(
            tag, mechanism.name, params, count, None, None, self.placeholder, len(ledger)
        )
        if gaussian:
            self.gauss_rows.append(n)
            self.gauss.append(value)
        else:
            self.laplace_rows.append(n)
            self.laplace.append(value)
        self.counts.append(count)
        self.entries.append(entry)
        ledger.append(entry)
        return entry

    def _admits(self, budget: Budget, gaussian: bool, value: float, count: int) -> bool:
        """Whether the one-order test of ``budget`` passes on an upper bound of the composed
        curve with the spend; if so the bound is kept."""
        j = budget.index
        bound = self.bound
        if bound is None or self.index != j:
            if self.entries:  # the order changed with curves held back: decide exactly
                return False
            bound = float(self.composed.base[j])
            self.index = j
        alpha = self.alphas[j]
        if gaussian:
            v = alpha * value  # the row's value itself
        else:
            v = min(value, alpha * value * value / 2.0) * _LAPLACE_SLACK
        if count != 1:
            v = v * count
        new = bound + v
        composed = self.composed
        total = new + composed.gpart[j] if composed.group_rows else new
        if budget.kind == "dp":
            ok = total + budget.offset[j] <= budget.epsilon
        else:
            ok = total <= budget.epsilon
        if ok:
            self.bound = new
        return bool(ok)

    def flush(self) -> None:
        """Evaluate the held-back curves, write them into their entries and add them to the
        composed curve in ledger order. Called before anything reads or changes the composed
        curve (it forgets the bound)."""
        self.bound = None  # the caller may change the composed curve next
        n = len(self.entries)
        if n == 0:
            return
        if n <= _ONE_BY_ONE:
            self._flush_one_by_one()
            return
        orders = self.orders
        buf = np.empty((n + 1, orders.size))
        rows = buf[1:]
        if self.gauss:
            block = np.multiply(np.array(self.gauss)[:, None], orders)
            if len(self.gauss) == n:
                rows[:] = block
            else:
                rows[self.gauss_rows] = block
        if self.laplace:
            block = laplace_rows_checked(orders, np.array(self.laplace))
            if block is None:  # unsorted orders: never those of an accountant
                raise ValueError("deferred Laplace curves need sorted orders")
            if len(self.laplace) == n:
                rows[:] = block
            else:
                rows[self.laplace_rows] = block
        counts = self.counts
        if any(c != 1 for c in counts):
            rows *= np.array(counts, dtype=np.float64)[:, None]
        composed = self.composed
        composed.commit(composed.plan_batch(buf))
        buf.flags.writeable = False
        rows.flags.writeable = False  # a view made before: it keeps its own flag
        for entry, row in zip(self.entries, rows, strict=True):
            _SET_CURVE(entry, row)
        self._reset()

    def _flush_one_by_one(self) -> None:
        """:meth:`flush` for a few curves: each evaluated alone and added in turn (the same
        floats as the rows of :meth:`flush`, without its fixed cost of some twenty array
        operations; a ledger that interleaves other mechanisms flushes a few at a time)."""
        orders = self.orders
        composed = self.composed
        kinds = dict.fromkeys(self.gauss_rows, True) | dict.fromkeys(self.laplace_rows, False)
        values = iter(self.gauss), iter(self.laplace)
        for i, (entry, count) in enumerate(zip(self.entries, self.counts, strict=True)):
            if kinds[i]:
                curve = gaussian_of_coefficient(orders, next(values[0]))
            else:
                curve = laplace_of_ratio(orders, next(values[1]))
                if curve is None:  # unsorted orders: never those of an accountant
                    raise ValueError("deferred Laplace curves need sorted orders")
            if count != 1:
                curve = curve * count
            curve.flags.writeable = False
            composed.commit(composed.plan(curve))
            _SET_CURVE(entry, curve)
        self._reset()
