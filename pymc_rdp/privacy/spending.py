r"""The budget of an accountant and the test that admits or refuses a spend.

A budget is either an (ε, δ)-DP pair, met when ``to_dp(orders, curve, δ) <= ε``
(:func:`pymc_rdp.privacy.rdp.to_dp`), or an RDP budget ε at one order λ, met when
``curve(λ) <= ε``. For an (ε, δ) budget a spend the RDP conversion refuses is still admitted
when the tightest valid bound of the ledger with the pending entries meets it
(:mod:`pymc_rdp.privacy.tight_accounting`; ``docs/guide.md`` says when a refusal is a valid
privacy filter).

The test of an (ε, δ) budget is exact and cheap. The conversion (Balle, Barthe, Gaboardi, Hsu &
Sato 2020, Theorem 21) is ε_δ = max(0, min_α [ε(α) + c(α)]) with, before its KL rule (which only
lowers values to 0),

.. math:: c(\alpha) = \log\frac{\alpha-1}{\alpha} - \frac{\log\delta + \log\alpha}{\alpha-1},

so ``ε(α*) + c(α*) <= ε`` at any single order α* already implies ``to_dp(...) <= ε``. The test
reads the curve at one order first: the order that minimised ε(α) + c(α) at the last full test,
which stays the minimiser, or close to it, while a ledger grows; only when that single value
exceeds the budget are all orders compared, and only when their minimum exceeds it does the
full conversion (and then the tight bound) decide. The answer is always that of
``to_dp(orders, total, δ)[0] <= ε`` (or of the tight bound): each shortcut only ever says
"within" when the full test would.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from pymc_rdp._validation import as_float_array
from pymc_rdp.privacy import rdp as _rdp

__all__ = ["Budget", "check_delta", "check_epsilon", "conversion_offset", "scalar"]


def scalar(value: Any, name: str, *, allow_inf: bool = False) -> float:
    """A real scalar as a float (ValueError naming ``name`` otherwise)."""
    arr = as_float_array(value, name, allow_inf=allow_inf)
    if arr.ndim != 0:
        raise ValueError(f"{name} must be a scalar, got an array of shape {arr.shape}")
    return float(arr)


def check_epsilon(value: Any) -> float:
    """ε > 0, finite."""
    eps = scalar(value, "epsilon")
    if not eps > 0:
        raise ValueError(f"epsilon must be > 0, got {eps!r}")
    return eps


def check_delta(value: Any) -> float:
    """δ in (0, 1)."""
    d = scalar(value, "delta")
    if not 0 < d < 1:
        raise ValueError(f"delta must lie in the open interval (0, 1), got {d!r}")
    return d


class Budget:
    """An (ε, δ) budget or an RDP budget at one order, on a fixed grid of orders.

    Parameters
    ----------
    kind : {"dp", "rdp"}
    epsilon : float
    orders : numpy.ndarray
        The accountant's orders (sorted, distinct, read-only).
    delta : float, optional
        For ``kind="dp"``.
    order : float, optional
        For ``kind="rdp"``: λ, one of ``orders``.
    """

    def __init__(
        self,
        kind: str,
        epsilon: float,
        orders: np.ndarray,
        *,
        delta: float | None = None,
        order: float | None = None,
    ) -> None:
        self.kind = kind
        self.epsilon = epsilon
        self.orders = orders
        self.delta = delta
        self.order = order
        if kind == "dp":
            self.offset = conversion_offset(orders, epsilon, delta)
            self.index = int(np.argmin(self.offset))  # the best order of an empty ledger
        else:
            self.offset = None
            self.index = int(np.searchsorted(orders, order))

    @classmethod
    def dp(cls, budget: Any, orders: np.ndarray) -> Budget:
        """An (ε, δ) budget from the pair ``budget``."""
        if isinstance(budget, (str, bytes)) or not isinstance(budget, Sequence):
            raise TypeError(f"budget must be None or a pair (epsilon, delta), got {budget!r}")
        if len(budget) != 2:
            raise ValueError(f"budget must be a pair (epsilon, delta), got {budget!r}")
        eps = check_epsilon(budget[0])
        return cls("dp", eps, orders, delta=check_delta(budget[1]))

    def admits(self, total: np.ndarray, rows: Callable[[], Iterable[tuple]] | None = None) -> bool:
        """Whether the composed curve ``total`` meets the budget.

        ``rows()``, when given, returns the rows (mechanism name, params, count, group,
        partition) of the whole ledger with the entries being planned, for the tight bound.
        """
        if self.kind == "rdp":
            return bool(total[self.index] <= self.epsilon)
        j = self.index
        if total[j] + self.offset[j] <= self.epsilon:  # one order: sufficient
            return True
        bound = total + self.offset
        j = self.index = int(bound.argmin())
        if bound[j] <= self.epsilon:  # every order: sufficient
            return True
        eps = _rdp.to_dp(self.orders, total, self.delta)[0]
        if eps <= self.epsilon:
            return True
        if rows is None:
            return False
        from pymc_rdp.privacy.tight_accounting import ledger_epsilon

        return bool(ledger_epsilon(rows(), float(eps), self.delta, "best").epsilon <= self.epsilon)

    def overspend_message(self, total: np.ndarray, what: str) -> str:
        """The message of a refused spend."""
        if self.kind == "rdp":
            return (
                f"{what} would bring ε at order {self.order:g} to "
                f"{total[self.index]:.6g} > budget {self.epsilon:.6g}"
            )
        eps = _rdp.to_dp(self.orders, total, self.delta)[0]
        return f"{what} would bring ε at δ={self.delta:g} to {eps:.6g} > budget {self.epsilon:.6g}"

    def to_doc(self) -> dict[str, Any]:
        """The budget as stored in a ledger file."""
        if self.kind == "dp":
            return {"kind": "dp", "epsilon": self.epsilon, "delta": self.delta}
        return {"kind": "rdp", "epsilon": self.epsilon, "order": self.order}


def conversion_offset(orders: np.ndarray, epsilon: float, delta: float) -> np.ndarray:
    r"""The per-order term c(α) of the sufficient test of an (ε, δ) budget, read-only.

    .. math:: \varepsilon_\delta(\alpha) = \varepsilon(\alpha) + \log\frac{\alpha-1}{\alpha}
              - \frac{\log\delta + \log\alpha}{\alpha-1} = \varepsilon(\alpha) + c(\alpha),

    and ε_δ(∞) = ε(∞) (Balle et al. 2020, Theorem 21, the conversion of
    :func:`pymc_rdp.privacy.rdp.to_dp`). Hence ``min_α [ε(α) + c(α)] <= ε`` implies
    ``to_dp(...) <= ε`` for ε > 0. The returned c(α) carries a margin of
    1e-12 · (1 + ε + |log(1 − 1/α) − log α/(α − 1)| + |log δ/(α − 1)|), far above the few ulps
    by which two roundings of the sum can differ, so the implication holds for the
    floating-point values as well; a curve within that margin of the budget goes to the full
    conversion.
    """
    at_inf = np.isinf(orders)
    a = np.where(at_inf, 2.0, orders)
    inv = np.where(at_inf, 0.0, 1.0 / (a - 1.0))
    shift = np.where(at_inf, 0.0, np.log1p(-1.0 / a) - np.log(a) * inv)
    ld_inv = math.log(delta) * inv
    margin = 1e-12 * (1.0 + epsilon + np.abs(shift) + np.abs(ld_inv))
    out = (shift - ld_inv) + margin
    out.flags.writeable = False
    return out
