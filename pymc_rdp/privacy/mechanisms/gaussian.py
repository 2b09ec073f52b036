"""The Gaussian mechanism.

Release ``value + N(0, σ² I)``. For a query with ℓ2 sensitivity Δ₂ it is (α, ε(α))-RDP with

    ε(α) = α Δ₂² / (2 σ²)          for every α > 1

(Mironov 2017, "Rényi Differential Privacy", Proposition 7 / Table II). It is unbounded at α = ∞.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from pymc_rdp._validation import check_positive_scalar
from pymc_rdp.privacy import rdp as _rdp
from pymc_rdp.privacy.mechanisms.additive import AdditiveNoiseMechanism
from pymc_rdp.privacy.mechanisms.base import CalibrationTarget

__all__ = ["GaussianMechanism"]


class GaussianMechanism(AdditiveNoiseMechanism):
    """Additive Gaussian noise of standard deviation ``sigma``.

    Parameters
    ----------
    sigma : float
        Noise standard deviation, finite and > 0.
    sensitivity : float, default 1.0
        ℓ2 sensitivity Δ₂ of the released query between neighbouring datasets (see
        :mod:`pymc_rdp.privacy.mechanisms.base` for the choice of neighbours), finite and > 0.

    Notes
    -----
    RDP curve ε(α) = α Δ₂² / (2σ²) (Mironov 2017, Proposition 7).
    """

    name: ClassVar[str] = "gaussian"
    sensitivity_norm: ClassVar[str | None] = "l2"
    discrete_twin: ClassVar[str | None] = "DiscreteGaussianMechanism"

    noise_parameter: ClassVar[str] = "sigma"
    curve = staticmethod(_rdp.gaussian)

    def __init__(self, sigma: float, sensitivity: float = 1.0) -> None:
        # AdditiveNoiseMechanism.__init__ with the attribute named (a spend builds one per release)
        self.sigma = check_positive_scalar(sigma, "sigma")
        self.sensitivity = check_positive_scalar(sensitivity, "sensitivity")

    def params(self) -> dict[str, Any]:
        return {"sigma": self.sigma, "sensitivity": self.sensitivity}

    @staticmethod
    def draw_noise(gen: np.random.Generator, noise: float, shape: tuple[int, ...]) -> np.ndarray:
        return gen.normal(0.0, noise, size=shape)

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
    ) -> GaussianMechanism:
        """The Gaussian mechanism with the least σ that meets a privacy target.

        Parameters
        ----------
        epsilon : float
            Target ε > 0.
        order : float, optional
            Target (λ, ε)-RDP at this order: σ = Δ₂ √(λ / (2ε)) (the closed form of
            ε(λ) = λΔ₂²/(2σ²), Mironov 2017), adjusted to the last ulp so that the curve meets ε.
        delta : float, optional
            Target (ε, δ)-DP. With ``method="rdp"`` through ``rdp.to_dp`` on ``orders``: the
            least σ (bisection in log σ) with ``to_dp(orders, curve, delta) <= epsilon``. With
            ``"best"`` or ``"exact"`` (default) the analytic Gaussian mechanism (Balle & Wang
            2018, Theorem 8): the least σ with Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ) ≤ δ
            (:func:`pymc_rdp.privacy.tight_accounting.gaussian_sigma`), which is what an accountant
            with an (ε, δ) budget admits; it needs less noise than any RDP conversion.
        sensitivity : float, default 1.0
            ℓ2 sensitivity Δ₂.
        orders : array_like, optional
            Orders used for the (ε, δ) conversion (default ``rdp.DEFAULT_ORDERS``).
        method : {"best", "exact", "rdp"}, default "best"
            The (ε, δ) bound calibrated to (only with ``delta``); "best" is "exact" here.

        Exactly one of ``order`` and ``delta`` must be given.
        """
        if method not in ("best", "exact", "rdp"):
            raise ValueError(f"method must be 'best', 'exact' or 'rdp', got {method!r}")
        target = CalibrationTarget(epsilon, order, delta, orders, allow_inf_order=False)
        sens = check_positive_scalar(sensitivity, "sensitivity")
        if target.delta is not None and method != "rdp":
            from pymc_rdp.privacy.gaussian_profile import gaussian_sigma

            return cls(gaussian_sigma(target.epsilon, target.delta, sens), sens)
        return cls(target.least_gaussian_sigma(_rdp.gaussian, sens), sens)
