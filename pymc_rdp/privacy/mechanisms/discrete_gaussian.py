"""The discrete Gaussian mechanism (Canonne, Kamath & Steinke 2020).

Release ``value + Y`` element-wise for an integer query, Y_j independent N_ℤ(0, σ²) with
P[Y = y] ∝ exp(−y²/(2σ²)) on ℤ, sampled exactly (:func:`~.exact_sampling.discrete_gaussian`).
For a query with integer shifts of ℓ2 norm at most Δ₂ it is (α, ε(α))-RDP with

    ε(α) = α Δ₂² / (2 σ²)          for every α > 1

(:func:`pymc_rdp.privacy.rdp.discrete_gaussian`, with the proof; Canonne, Kamath & Steinke 2020,
Section 2). Unbounded at α = ∞.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from pymc_rdp._validation import check_positive_scalar
from pymc_rdp.privacy import rdp as _rdp
from pymc_rdp.privacy.mechanisms.base import CalibrationTarget
from pymc_rdp.privacy.mechanisms.discrete import DiscreteNoiseMechanism
from pymc_rdp.privacy.mechanisms.exact_sampling import discrete_gaussian as _sample

__all__ = ["DiscreteGaussianMechanism", "discrete_gaussian_variance"]


def discrete_gaussian_variance(sigma: float) -> float:
    """Var N_ℤ(0, σ²) = Σ_x x² e^{−x²/(2σ²)} / Σ_x e^{−x²/(2σ²)}, summed in float64.

    The sums run over |x| ≤ ⌈40σ⌉ + 2 (the omitted tail is below e^{−800} relative) with
    the terms added from the smallest. It is below σ² (Canonne, Kamath & Steinke 2020 show
    Var < σ²): 0.215 at σ = 0.5, σ² (1 − 2.1e-7) at σ = 1, and equal to σ² in float64 from
    σ ≈ 1.5 on.
    """
    s = check_positive_scalar(sigma, "sigma")
    m = math.ceil(40.0 * s) + 2
    x = np.arange(m, 0, -1, dtype=np.float64)
    w = np.exp(-(x * x) / (2.0 * s * s))
    z = 1.0 + 2.0 * w.sum()
    return float(2.0 * (x * x * w).sum() / z)


class DiscreteGaussianMechanism(DiscreteNoiseMechanism):
    """Exactly sampled discrete Gaussian noise N_ℤ(0, σ²) on integer queries.

    Parameters
    ----------
    sigma : float
        The scale σ (pmf ∝ exp(−x²/(2σ²))), finite and > 0; used as the exact rational value
        of the float. The noise variance is slightly below σ² (:meth:`variance`).
    sensitivity : float, default 1.0
        ℓ2 sensitivity Δ₂ of the integer query (√2 for a count table under replace-one
        neighbours, 1 under add/remove), finite and > 0.

    Notes
    -----
    RDP curve ε(α) = αΔ₂²/(2σ²) (:func:`pymc_rdp.privacy.rdp.discrete_gaussian`). The output is
    int64:
    there are no floating-point artefacts for an observer to read (Mironov 2012).
    """

    name: ClassVar[str] = "discrete_gaussian"
    sensitivity_norm: ClassVar[str | None] = "l2"
    for_counts: ClassVar[bool] = True
    noise_label: ClassVar[str | None] = "discrete Gaussian"

    noise_parameter: ClassVar[str] = "sigma"
    curve = staticmethod(_rdp.discrete_gaussian)
    sampler = staticmethod(_sample)

    def __init__(self, sigma: float, sensitivity: float = 1.0) -> None:
        super().__init__(sigma, sensitivity)

    def variance(self) -> float:
        """Var N_ℤ(0, σ²), by summation (:func:`discrete_gaussian_variance`)."""
        return discrete_gaussian_variance(self.sigma)

    @classmethod
    def calibrate(
        cls,
        epsilon: float,
        order: float | None = None,
        delta: float | None = None,
        sensitivity: float = 1.0,
        *,
        orders: Any = None,
    ) -> DiscreteGaussianMechanism:
        """The discrete Gaussian mechanism with the least σ that meets a privacy target.

        Parameters
        ----------
        epsilon : float
            Target ε > 0.
        order : float, optional
            Target (λ, ε)-RDP at this order: σ = Δ₂ √(λ/(2ε)), adjusted to the last ulp so
            that the curve meets ε.
        delta : float, optional
            Target (ε, δ)-DP through ``rdp.to_dp`` of the discrete Gaussian curve on
            ``orders``: the least σ (bisection in log σ).
        sensitivity : float, default 1.0
            ℓ2 sensitivity Δ₂.
        orders : array_like, optional
            Orders used for the (ε, δ) conversion (default ``rdp.DEFAULT_ORDERS``).

        Exactly one of ``order`` and ``delta`` must be given.
        """
        target = CalibrationTarget(epsilon, order, delta, orders, allow_inf_order=False)
        sens = check_positive_scalar(sensitivity, "sensitivity")
        return cls(target.least_gaussian_sigma(_rdp.discrete_gaussian, sens), sens)
