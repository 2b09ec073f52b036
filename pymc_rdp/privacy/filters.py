r"""Privacy filters: budgets that stay valid when each release is chosen from the previous outputs.

An accountant's budget check (``Accountant(budget=(ε, δ))``) refuses a spend when the composed
ledger's bound would exceed ε. That refusal is a valid guarantee when the sequence of mechanisms
is fixed in advance (as in a network or naive-Bayes fit: the plan does not depend on any output),
and for an RDP budget at one fixed order (``Accountant.at_order``; Feldman & Zrnic 2021). When the
next mechanism is chosen from earlier outputs, the best-order (or PLD, or exact) bound of the
realised sequence is *not* a guarantee: the order, and the stopping time, then depend on the data.
The filters here are valid for fully adaptive choices (Rogers, Roth, Ullman & Vadhan 2016's
filter setting: the analyst picks each mechanism and its parameters from the past outputs; the
filter accepts or refuses from the parameters alone).

:class:`RenyiFilter` with ``order=λ`` (Feldman & Zrnic 2021, "Individual Privacy Accounting via a
Rényi Filter")
    Accept while Σᵢ εᵢ(λ) ≤ B with B the largest RDP budget at λ that converts to (ε, δ)
    (Balle et al. 2020, Theorem 21: B = ε − log((λ−1)/λ) + (log δ + log λ)/(λ−1)). The adaptively
    composed, filtered interaction is (λ, B)-RDP, hence (ε, δ)-DP.

:class:`RenyiFilter` with ``orders=[λ₁..λ_m]`` (a union bound over orders, as in Whitehouse,
Ramdas, Rogers & Wu 2023, "Fully-Adaptive Composition in Differential Privacy")
    δ is split as δⱼ = δ/m and Bⱼ = ε − log(1/δⱼ)/(λⱼ − 1). Accept a mechanism while *some* order
    still has Sⱼ + εᵢ(λⱼ) ≤ Bⱼ. Why it is valid: with L the privacy loss of the transcript,
    Mⱼ = exp((λⱼ−1)(L − Sⱼ)) is a non-negative supermartingale (E[e^{(λ−1)Lᵢ} | past] =
    e^{(λ−1)D_λ} ≤ e^{(λ−1)εᵢ(λ)}, the εᵢ predictable), so P(L > ε, Sⱼ ≤ Bⱼ) ≤
    E[Mⱼ] e^{−(λⱼ−1)(ε−Bⱼ)} ≤ δⱼ. Every accepted transcript ends with some j having Sⱼ ≤ Bⱼ,
    so P(L > ε) ≤ Σⱼ δⱼ = δ, and δ(ε) ≤ P(L > ε): (ε, δ)-DP. The tail bound uses Mironov's
    conversion (log(1/δⱼ)/(λⱼ − 1)), not Theorem 21's.

:class:`GaussianFilter` (Smith & Thakurta 2022, "Fully Adaptive Composition for Gaussian
Differential Privacy"; Koskela, Tobaben & Honkela 2023)
    Gaussian mechanisms only: accept while Σᵢ Δᵢ²/σᵢ² ≤ μ*² with μ* the largest μ for which a
    μ-GDP mechanism is (ε, δ)-DP (:func:`pymc_rdp.privacy.gaussian_profile.gaussian_mu`). The
    filtered
    adaptive composition is μ*-GDP, so the exact Gaussian bound holds under adaptivity.

A refused proposal releases nothing and the analyst may propose another; the decision depends
only on the parameters of the accepted mechanisms, which are functions of past outputs.
Parallel groups are not supported here (which partition a record lies in must not depend on
outputs); every accepted release composes sequentially.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pymc_rdp.privacy import rdp as _rdp
from pymc_rdp.privacy.accountant import Accountant, BudgetExceededError
from pymc_rdp.privacy.mechanisms.base import Mechanism

__all__ = ["GaussianFilter", "RenyiFilter"]


def _check_budget(epsilon: Any, delta: Any) -> tuple[float, float]:
    eps = float(epsilon)
    if not (eps > 0 and math.isfinite(eps)):
        raise ValueError(f"epsilon must be finite and > 0, got {epsilon!r}")
    d = float(delta)
    if not 0.0 < d < 1.0:
        raise ValueError(f"delta must lie in the open interval (0, 1), got {delta!r}")
    return eps, d


def _check_mechanism(mechanism: Any) -> Mechanism:
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a Mechanism instance, got {type(mechanism)!r}")
    return mechanism


def _check_count(count: Any) -> int:
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
        raise ValueError(f"count must be an integer >= 1, got {count!r}")
    return int(count)


class _Filter:
    """Shared parts: the ledger of accepted releases (an accountant without a budget)."""

    def __init__(self, epsilon: float, delta: float) -> None:
        self.epsilon, self.delta = _check_budget(epsilon, delta)
        self.accountant = Accountant()

    def can_spend(self, mechanism: Mechanism, count: int = 1) -> bool:
        raise NotImplementedError

    def _commit(self, mechanism: Mechanism, count: int) -> None:
        raise NotImplementedError

    def spend(self, mechanism: Mechanism, count: int = 1, tag: str | None = None) -> Any:
        """Record ``count`` uses of ``mechanism`` if the filter accepts; else raise.

        Raises
        ------
        BudgetExceededError
            The filter refuses; nothing is recorded (another proposal may follow).
        """
        mechanism, count = _check_mechanism(mechanism), _check_count(count)
        if not self.can_spend(mechanism, count):
            raise BudgetExceededError(
                f"the filter refuses {mechanism!r} x{count}: it would leave the "
                f"(ε, δ) = ({self.epsilon:g}, {self.delta:g}) guarantee"
            )
        entry = self.accountant.spend(mechanism, count=count, tag=tag)
        self._commit(mechanism, count)
        return entry

    def __len__(self) -> int:
        return len(self.accountant)


class RenyiFilter(_Filter):
    """An (ε, δ) filter on RDP curves at one fixed order or, by a union bound, several.

    Parameters
    ----------
    epsilon, delta : float
        The guarantee of the whole adaptive interaction.
    order : float, optional
        One fixed order λ > 1 (finite), chosen before any release: the Feldman–Zrnic filter at
        the RDP budget that converts to (ε, δ) by Balle et al. 2020, Theorem 21.
    orders : array_like, optional
        Several orders (finite, > 1): the union-bound filter with δ split evenly.

    Give exactly one of ``order`` and ``orders``. See the module notes for the validity argument.
    """

    def __init__(
        self, epsilon: float, delta: float, *, order: Any = None, orders: Any = None
    ) -> None:
        super().__init__(epsilon, delta)
        if (order is None) == (orders is None):
            raise ValueError("give exactly one of order (one fixed order) and orders (a union)")
        lam = np.atleast_1d(np.asarray(order if order is not None else orders, dtype=np.float64))
        if lam.ndim != 1 or lam.size == 0 or not np.isfinite(lam).all() or (lam <= 1).any():
            raise ValueError("order(s) must be finite and > 1")
        self.orders = np.unique(lam)
        self.orders.flags.writeable = False
        self.fixed = order is not None
        eps, d = self.epsilon, self.delta
        if order is not None:
            a = float(self.orders[0])
            b = eps - math.log1p(-1.0 / a) + (math.log(d) + math.log(a)) / (a - 1.0)
            self.budgets = np.array([b])
        else:
            d_j = d / self.orders.size
            self.budgets = eps - math.log(1.0 / d_j) / (self.orders - 1.0)
        self.budgets = self.budgets * (1.0 - 1e-12)  # rounding margin: never above the bound
        if not (self.budgets > 0).any():
            raise ValueError(
                f"no order has a positive RDP budget for (ε, δ) = ({eps!r}, {d!r}); "
                "use larger orders"
            )
        self.spent = np.zeros(self.orders.size)

    def can_spend(self, mechanism: Mechanism, count: int = 1) -> bool:
        """Whether some order still has room for ``count`` uses of ``mechanism``."""
        mechanism, count = _check_mechanism(mechanism), _check_count(count)
        curve = np.asarray(mechanism.rdp(self.orders), dtype=np.float64) * count
        return bool(((self.spent + curve) <= self.budgets).any())

    def _commit(self, mechanism: Mechanism, count: int) -> None:
        self.spent = self.spent + np.asarray(mechanism.rdp(self.orders), dtype=np.float64) * count

    def guarantee(self) -> float:
        """The ε the accepted releases are certified for at δ (never above ``epsilon``).

        Fixed order: the Theorem-21 conversion of the spent RDP at λ. Union: the least over
        orders j with Sⱼ ≤ Bⱼ of Sⱼ + log(m/δ)/(λⱼ − 1) (the bound that the tail argument
        certifies); ``inf`` when none (not reachable through :meth:`spend`).
        """
        if self.fixed:
            return float(_rdp.to_dp(self.orders, self.spent, self.delta)[0])
        d_j = self.delta / self.orders.size
        ok = self.spent <= self.budgets
        if not ok.any():
            return math.inf
        return float((self.spent + math.log(1.0 / d_j) / (self.orders - 1.0))[ok].min())


class GaussianFilter(_Filter):
    """An (ε, δ) filter for adaptively chosen continuous Gaussian mechanisms (μ-GDP).

    Accepts while Σ count·Δ²/σ² ≤ μ*², μ* = ``gaussian_mu(ε, δ)`` (Smith & Thakurta 2022).
    """

    def __init__(self, epsilon: float, delta: float) -> None:
        super().__init__(epsilon, delta)
        from pymc_rdp.privacy.gaussian_profile import gaussian_mu

        self.mu2_budget = gaussian_mu(self.epsilon, self.delta) ** 2 * (1.0 - 1e-12)
        self.mu2 = 0.0

    @staticmethod
    def _mu2(mechanism: Mechanism, count: int) -> float:
        if mechanism.name != "gaussian":
            raise TypeError(
                f"GaussianFilter accepts continuous Gaussian mechanisms only, got {mechanism!r}"
            )
        p = mechanism.params()
        return count * (float(p["sensitivity"]) / float(p["sigma"])) ** 2

    def can_spend(self, mechanism: Mechanism, count: int = 1) -> bool:
        """Whether ``count`` more uses keep Σ μᵢ² within μ*²."""
        mechanism, count = _check_mechanism(mechanism), _check_count(count)
        return self.mu2 + self._mu2(mechanism, count) <= self.mu2_budget

    def _commit(self, mechanism: Mechanism, count: int) -> None:
        self.mu2 += self._mu2(mechanism, count)

    def guarantee(self) -> float:
        """The exact ε at δ of the accepted releases' μ = √Σμᵢ² (≤ ``epsilon``)."""
        from pymc_rdp.privacy.gaussian_profile import gaussian_epsilon

        return gaussian_epsilon(self.delta, math.sqrt(self.mu2))
