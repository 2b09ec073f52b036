"""Randomized response on one bit per record.

Each bit is reported truthfully with probability p and flipped with probability 1 − p. For two
neighbouring inputs (the record's bit changes) the output distributions are Bernoulli(p) and
Bernoulli(1 − p), so the mechanism is (α, ε(α))-RDP with

    ε(α) = 1/(α−1) · log[ p^α (1−p)^{1−α} + (1−p)^α p^{1−α} ],   ε(∞) = log(p / (1−p))

(Mironov 2017, "Rényi Differential Privacy", Proposition 5 / Table II).

A bit is kept when a uniform ``b``-bit integer falls below ``a``, where ``p = a / 2^b`` exactly
(the float's binary value), so the released bits have exactly the law the curve is stated for.
The sampler is k-ary randomized response's with two values (``randomize_codes``).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from pymc_rdp._validation import check_scalar
from pymc_rdp.privacy import rdp as _rdp
from pymc_rdp.privacy.calibration import least_noise
from pymc_rdp.privacy.mechanisms.base import CalibrationTarget, Mechanism, resolve_orders
from pymc_rdp.privacy.mechanisms.categorical_randomized_response import randomize_codes
from pymc_rdp.privacy.mechanisms.noise import resolve_noise_source

__all__ = ["RandomizedResponse"]


class RandomizedResponse(Mechanism):
    """Binary randomized response: keep each bit with probability ``p``, flip it otherwise.

    Parameters
    ----------
    p : float
        Probability of reporting the true bit, in the open interval (1/2, 1).

    Notes
    -----
    RDP curve ε(α) = log[p^α(1−p)^{1−α} + (1−p)^α p^{1−α}]/(α−1), ε(∞) = log(p/(1−p))
    (Mironov 2017, Proposition 5). Each released bit is one use of the mechanism on one record.
    """

    name: ClassVar[str] = "randomized_response"

    def __init__(self, p: float) -> None:
        x = check_scalar(p, "p")
        if not 0.5 < x < 1.0:
            raise ValueError(f"p must lie in the open interval (0.5, 1), got {x!r}")
        self.p = x

    def rdp(self, orders: Any = None) -> np.ndarray:
        """The randomized-response RDP curve at ``orders`` (default ``rdp.DEFAULT_ORDERS``)."""
        return np.asarray(_rdp.randomized_response(resolve_orders(orders), self.p), np.float64)

    @classmethod
    def batch_rdp(cls, mechanisms: list[Mechanism], orders: np.ndarray) -> np.ndarray:
        """Curves of several randomized-response mechanisms as rows (vectorised)."""
        p = np.array([m.p for m in mechanisms], dtype=np.float64)[:, None]
        try:
            out = np.asarray(_rdp.randomized_response(orders[None, :], p), dtype=np.float64)
        except (TypeError, ValueError):
            out = None
        if out is None or out.shape != (len(mechanisms), orders.size):
            return super().batch_rdp(mechanisms, orders)
        return out

    def params(self) -> dict[str, Any]:
        return {"p": self.p}

    def release(self, value: Any, noise_source: Any = None) -> np.ndarray:
        """Flip each bit of ``value`` with probability exactly 1 − p.

        Parameters
        ----------
        value : array_like of bool or of 0/1
            The true bits. Any other value is refused.
        noise_source : None or NoiseSource
            ``None``: randomness from the operating system's entropy. ``UnsafeNoiseSeed(k)``:
            reproducible and **not private** (tests only). An int or a NumPy generator is
            refused (TypeError).

        Returns
        -------
        numpy.ndarray
            float64 array of 0.0/1.0, the same shape as ``value``.
        """
        if isinstance(value, (str, bytes)) or value is None:
            raise TypeError(f"value must be booleans or 0/1 numbers, got {value!r}")
        try:
            x = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"value must be booleans or 0/1 numbers, got {value!r}") from exc
        if not np.all((x == 0.0) | (x == 1.0)):
            raise ValueError("value must contain only booleans or the numbers 0 and 1")
        source = resolve_noise_source(noise_source)
        bits = x.reshape(-1).astype(np.int64)
        out = randomize_codes(source, bits, self.p, 2)
        return out.astype(np.float64).reshape(x.shape)

    @classmethod
    def calibrate(
        cls,
        epsilon: float,
        order: float | None = None,
        delta: float | None = None,
        *,
        orders: Any = None,
    ) -> RandomizedResponse:
        """The randomized response with the largest p (least noise) that meets a privacy target.

        Parameters
        ----------
        epsilon : float
            Target ε > 0.
        order : float, optional
            Target (λ, ε)-RDP at this order (``inf`` allowed: pure ε-DP, p = e^ε / (1 + e^ε)).
        delta : float, optional
            Target (ε, δ)-DP through ``rdp.to_dp`` on ``orders``.
        orders : array_like, optional
            Orders used for the (ε, δ) conversion (default ``rdp.DEFAULT_ORDERS``).

        Notes
        -----
        The noise is parametrised by x = 1 / log(p / (1−p)) (larger x, more noise); the curve
        decreases in x and the least x is found by bisection in log x. Exactly one of ``order``
        and ``delta`` must be given.
        """
        target = CalibrationTarget(epsilon, order, delta, orders)

        def p_of(x: float) -> float:
            return 1.0 / (1.0 + math.exp(-1.0 / x))

        def meets(x: float) -> bool:
            p = p_of(x)
            if not 0.5 < p < 1.0:
                return p <= 0.5
            return target.met_by(_rdp.randomized_response(target.orders, p))

        # x = 1/ε gives pure ε-DP, hence (λ, ε)-RDP at every λ: a valid start.
        x = least_noise(meets, 1.0 / target.epsilon)
        p = p_of(x)
        # x maps to p with rounding: take the largest float p that still meets the target.
        for _ in range(64):
            up = math.nextafter(p, 1.0)
            if up >= 1.0 or not target.met_by(_rdp.randomized_response(target.orders, up)):
                break
            p = up
        return cls(p)
