"""The Laplace mechanism.

Release ``value + Lap(0, b)`` element-wise. For a query with ℓ1 sensitivity Δ₁ and t = Δ₁ / b it is
(α, ε(α))-RDP with

    ε(α) = 1/(α−1) · log[ α/(2α−1) · e^{(α−1)t} + (α−1)/(2α−1) · e^{−αt} ],   ε(∞) = t

(Mironov 2017, "Rényi Differential Privacy", Proposition 6 / Table II).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from pymc_rdp._validation import check_positive_scalar
from pymc_rdp.privacy import rdp as _rdp
from pymc_rdp.privacy.calibration import least_noise
from pymc_rdp.privacy.mechanisms.additive import AdditiveNoiseMechanism
from pymc_rdp.privacy.mechanisms.base import CalibrationTarget

__all__ = ["LaplaceMechanism"]


class LaplaceMechanism(AdditiveNoiseMechanism):
    """Additive Laplace noise of scale ``scale`` (density ∝ exp(−|x| / b)).

    Parameters
    ----------
    scale : float
        Noise scale b, finite and > 0.
    sensitivity : float, default 1.0
        ℓ1 sensitivity Δ₁ of the released query between neighbouring datasets, finite and > 0.

    Notes
    -----
    RDP curve (Mironov 2017, Proposition 6), with t = Δ₁/b:
    ε(α) = log[α/(2α−1) e^{(α−1)t} + (α−1)/(2α−1) e^{−αt}] / (α−1), and ε(∞) = t (pure t-DP).
    """

    name: ClassVar[str] = "laplace"
    sensitivity_norm: ClassVar[str | None] = "l1"
    discrete_twin: ClassVar[str | None] = "DiscreteLaplaceMechanism"

    noise_parameter: ClassVar[str] = "scale"
    curve = staticmethod(_rdp.laplace)

    def __init__(self, scale: float, sensitivity: float = 1.0) -> None:
        # AdditiveNoiseMechanism.__init__ with the attribute named (a spend builds one per release)
        self.scale = check_positive_scalar(scale, "scale")
        self.sensitivity = check_positive_scalar(sensitivity, "sensitivity")

    def params(self) -> dict[str, Any]:
        return {"scale": self.scale, "sensitivity": self.sensitivity}

    @staticmethod
    def draw_noise(gen: np.random.Generator, noise: float, shape: tuple[int, ...]) -> np.ndarray:
        return gen.laplace(0.0, noise, size=shape)

    @classmethod
    def calibrate(
        cls,
        epsilon: float,
        order: float | None = None,
        delta: float | None = None,
        sensitivity: float = 1.0,
        *,
        orders: Any = None,
        method: str = "best",
    ) -> LaplaceMechanism:
        """The Laplace mechanism with the least scale b that meets a privacy target.

        Parameters
        ----------
        epsilon : float
            Target ε > 0.
        order : float, optional
            Target (λ, ε)-RDP at this order (``inf`` allowed: pure ε-DP, b = Δ₁/ε). The curve is
            decreasing in b; the least b is found by bisection in log b to the last few ulps.
        delta : float, optional
            Target (ε, δ)-DP through ``rdp.to_dp`` on ``orders``.
        sensitivity : float, default 1.0
            ℓ1 sensitivity Δ₁.
        orders : array_like, optional
            Orders used for the (ε, δ) conversion (default ``rdp.DEFAULT_ORDERS``).
        method : {"best", "pld", "rdp"}, default "best"
            The (ε, δ) bound calibrated to (only with ``delta``): the RDP conversion,
            dp-accounting's pessimistic PLD bound, or the least of the two ("best"; RDP alone
            without dp-accounting), computed as an accountant computes it
            (:func:`pymc_rdp.privacy.tight_accounting.planned_epsilon`).

        Exactly one of ``order`` and ``delta`` must be given.
        """
        if method not in ("best", "pld", "rdp"):
            raise ValueError(f"method must be 'best', 'pld' or 'rdp', got {method!r}")
        target = CalibrationTarget(epsilon, order, delta, orders)
        sens = check_positive_scalar(sensitivity, "sensitivity")

        def meets(scale: float) -> bool:
            if target.delta is not None and method != "rdp":
                from pymc_rdp.privacy.tight_accounting import planned_epsilon

                plan = [(cls(scale, sens), 1)]
                eps = planned_epsilon(plan, target.delta, method, target.orders)
                return eps <= target.epsilon
            return target.met_by(_rdp.laplace(target.orders, scale, sens))

        # At b = Δ₁/ε the mechanism is ε-DP, hence (λ, ε)-RDP at every λ: a valid start.
        return cls(least_noise(meets, sens / target.epsilon), sens)
