"""The discrete Laplace (two-sided geometric) mechanism.

Release ``value + Y`` element-wise for an integer query, Y_j independent with
P[Y = y] = tanh(1/(2t)) e^{−|y|/t} on ℤ (scale t), sampled exactly
(:func:`~.exact_sampling.discrete_laplace`; Canonne, Kamath & Steinke 2020, Algorithm 2). For
integer shifts of ℓ1 norm at most Δ₁ its RDP curve is :func:`pymc_rdp.privacy.rdp.discrete_laplace`
(the exact worst case over shift vectors, from the closed-form divergence of one coordinate);
it is pure (⌊Δ₁⌋/t)-DP.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from pymc_rdp._validation import check_positive_scalar
from pymc_rdp.privacy import rdp as _rdp
from pymc_rdp.privacy.calibration import least_noise
from pymc_rdp.privacy.mechanisms.base import CalibrationTarget
from pymc_rdp.privacy.mechanisms.discrete import DiscreteNoiseMechanism
from pymc_rdp.privacy.mechanisms.exact_sampling import discrete_laplace as _sample

__all__ = ["DiscreteLaplaceMechanism", "discrete_laplace_variance"]


def discrete_laplace_variance(scale: float) -> float:
    """Var of the discrete Laplace of scale t: 2r/(1 − r)² with r = e^{−1/t} (closed form).

    From Σ_{x≥1} x² r^x = r(1 + r)/(1 − r)³ and the normaliser (1 − r)/(1 + r); evaluated as
    2r / expm1(−1/t)² without cancellation.
    """
    t = check_positive_scalar(scale, "scale")
    u = 1.0 / t
    return float(2.0 * math.exp(-u) / math.expm1(-u) ** 2)


class DiscreteLaplaceMechanism(DiscreteNoiseMechanism):
    """Exactly sampled discrete Laplace noise (pmf ∝ exp(−|x|/t)) on integer queries.

    Parameters
    ----------
    scale : float
        The scale t, finite and > 0; used as the exact rational value of the float.
    sensitivity : float, default 1.0
        ℓ1 sensitivity Δ₁ ≥ 1 of the integer query (2 for a count table under replace-one
        neighbours, 1 under add/remove).

    Notes
    -----
    RDP curve: :func:`pymc_rdp.privacy.rdp.discrete_laplace`; ε(∞) = ⌊Δ₁⌋/t. The output is int64.
    """

    name: ClassVar[str] = "discrete_laplace"
    sensitivity_norm: ClassVar[str | None] = "l1"
    for_counts: ClassVar[bool] = True
    noise_label: ClassVar[str | None] = "discrete Laplace"

    noise_parameter: ClassVar[str] = "scale"
    curve = staticmethod(_rdp.discrete_laplace)
    sampler = staticmethod(_sample)

    def __init__(self, scale: float, sensitivity: float = 1.0) -> None:
        super().__init__(scale, sensitivity)
        if self.sensitivity < 1.0 - 1e-9:
            raise ValueError(
                f"sensitivity must be >= 1 for an integer query, got {self.sensitivity!r}"
            )

    def variance(self) -> float:
        """2e^{−1/t}/(1 − e^{−1/t})² (:func:`discrete_laplace_variance`)."""
        return discrete_laplace_variance(self.scale)

    @classmethod
    def calibrate(
        cls,
        epsilon: float,
        order: float | None = None,
        delta: float | None = None,
        sensitivity: float = 1.0,
        *,
        orders: Any = None,
    ) -> DiscreteLaplaceMechanism:
        """The discrete Laplace mechanism with the least scale t that meets a privacy target.

        Parameters
        ----------
        epsilon : float
            Target ε > 0.
        order : float, optional
            Target (λ, ε)-RDP at this order (``inf`` allowed: pure ε-DP, t = ⌊Δ₁⌋/ε). The
            curve decreases in t; the least t is found by bisection in log t.
        delta : float, optional
            Target (ε, δ)-DP through ``rdp.to_dp`` of the discrete Laplace curve on ``orders``.
        sensitivity : float, default 1.0
            ℓ1 sensitivity Δ₁ ≥ 1.
        orders : array_like, optional
            Orders used for the (ε, δ) conversion (default ``rdp.DEFAULT_ORDERS``).

        Exactly one of ``order`` and ``delta`` must be given.
        """
        target = CalibrationTarget(epsilon, order, delta, orders)
        sens = check_positive_scalar(sensitivity, "sensitivity")
        if sens < 1.0 - 1e-9:
            raise ValueError(f"sensitivity must be >= 1 for an integer query, got {sens!r}")

        def meets(scale: float) -> bool:
            return target.met_by(_rdp.discrete_laplace(target.orders, scale, sens))

        # at t = ⌊Δ₁⌋/ε the mechanism is ε-DP, hence (λ, ε)-RDP at every λ: a valid start
        start = max(1.0, math.floor(sens + 1e-9)) / target.epsilon
        return cls(least_noise(meets, start), sens)
