"""The Gaussian mechanism.

Release ``value + N(0, σ² I)``. For a query with ℓ2 sensitivity Δ₂ it is (α, ε(α))-RDP with

    ε(α) = α Δ₂² / (2 σ²)          for every α > 1

(Mironov 2017, "Rényi Differential Privacy", Proposition 7 / Table II). It is unbounded at α = ∞.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from .. import rdp as _rdp
from .._validation import as_float_array
from .base import (
    CalibrationTarget,
    Mechanism,
    as_generator,
    check_positive_scalar,
    least_noise,
    resolve_orders,
)

__all__ = ["GaussianMechanism"]


class GaussianMechanism(Mechanism):
    """Additive Gaussian noise of standard deviation ``sigma``.

    Parameters
    ----------
    sigma : float
        Noise standard deviation, finite and > 0.
    sensitivity : float, default 1.0
        ℓ2 sensitivity Δ₂ of the released query between neighbouring datasets (see
        :mod:`pymc_rdp.mechanisms.base` for the choice of neighbours), finite and > 0.

    Notes
    -----
    RDP curve ε(α) = α Δ₂² / (2σ²) (Mironov 2017, Proposition 7).
    """

    name: ClassVar[str] = "gaussian"

    def __init__(self, sigma: float, sensitivity: float = 1.0) -> None:
        self.sigma = check_positive_scalar(sigma, "sigma")
        self.sensitivity = check_positive_scalar(sensitivity, "sensitivity")

    def rdp(self, orders: Any = None) -> np.ndarray:
        """ε(α) = α Δ₂² / (2σ²) at ``orders`` (default ``rdp.DEFAULT_ORDERS``)."""
        return np.asarray(
            _rdp.gaussian(resolve_orders(orders), self.sigma, self.sensitivity), dtype=np.float64
        )

    @classmethod
    def batch_rdp(cls, mechanisms: list[Mechanism], orders: np.ndarray) -> np.ndarray:
        """Curves of several Gaussian mechanisms as rows (vectorised)."""
        sig = np.array([m.sigma for m in mechanisms], dtype=np.float64)[:, None]
        sens = np.array([m.sensitivity for m in mechanisms], dtype=np.float64)[:, None]
        try:
            out = np.asarray(_rdp.gaussian(orders[None, :], sig, sens), dtype=np.float64)
        except (TypeError, ValueError):
            out = None
        if out is None or out.shape != (len(mechanisms), orders.size):
            return super().batch_rdp(mechanisms, orders)
        return out

    def params(self) -> dict[str, Any]:
        return {"sigma": self.sigma, "sensitivity": self.sensitivity}

    def release(self, value: Any, rng: Any = None) -> np.ndarray:
        """``value + N(0, σ²)`` element-wise; float64, the same shape as ``value``.

        Parameters
        ----------
        value : array_like
            The exact query answer (finite numbers).
        rng : None, int or numpy.random.Generator
            Source of randomness.
        """
        x = as_float_array(value, "value")
        gen = as_generator(rng)
        return np.asarray(x + gen.normal(0.0, self.sigma, size=x.shape), dtype=np.float64)

    @classmethod
    def calibrate(
        cls,
        epsilon: float,
        order: float | None = None,
        delta: float | None = None,
        sensitivity: float = 1.0,
        *,
        orders: Any = None,
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
            Target (ε, δ)-DP through ``rdp.to_dp`` on ``orders``: the least σ (bisection in log σ)
            with ``to_dp(orders, curve, delta) <= epsilon``.
        sensitivity : float, default 1.0
            ℓ2 sensitivity Δ₂.
        orders : array_like, optional
            Orders used for the (ε, δ) conversion (default ``rdp.DEFAULT_ORDERS``).

        Exactly one of ``order`` and ``delta`` must be given.
        """
        target = CalibrationTarget(epsilon, order, delta, orders, allow_inf_order=False)
        sens = check_positive_scalar(sensitivity, "sensitivity")

        def meets(sigma: float) -> bool:
            return target.met_by(_rdp.gaussian(target.orders, sigma, sens))

        if target.order is not None:
            sigma = sens * math.sqrt(target.order / (2.0 * target.epsilon))
            while not meets(sigma):
                sigma = math.nextafter(sigma, math.inf)
            while meets(down := math.nextafter(sigma, 0.0)):
                sigma = down
        else:
            sigma = least_noise(meets, sens / target.epsilon)
        return cls(sigma, sens)
