"""k-ary randomized response on one categorical value per record, sampled exactly.

Each value of ``k`` is reported as itself with probability ``p`` and as each of the ``k − 1``
others with probability ``q = (1 − p)/(k − 1)`` (Warner 1965 for ``k = 2``; Kairouz, Oh &
Viswanath 2016, "Extremal mechanisms for local differential privacy", for ``k`` values). Two
neighbouring inputs (the record's value changes) give output distributions that differ at two
values only, so the mechanism is (α, ε(α))-RDP with the curve of
:func:`pymc_rdp.privacy.curves.categorical_randomized_response` and ε(∞) = log(p/q).

Exact sampling
--------------
A float ``p`` in (0, 1) is a dyadic rational ``a / 2^b``, so "keep the value" is an event of
exactly that probability when a uniform ``b``-bit integer falls below ``a``; the replacement is
a uniform integer below ``k − 1`` (by rejection), shifted past the true value. The released
values have exactly the distribution the curve is stated for, with no floating-point rounding of
``p`` in between. The draws are vectorised (:mod:`pymc_rdp.privacy.mechanisms.exact_bits`): all
keep events first, then the replacements of the values not kept.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from pymc_rdp.privacy import curves as _curves
from pymc_rdp.privacy.calibration import least_noise
from pymc_rdp.privacy.mechanisms.base import CalibrationTarget, Mechanism, resolve_orders
from pymc_rdp.privacy.mechanisms.exact_bits import bernoulli_float, uniform_below
from pymc_rdp.privacy.mechanisms.noise import NoiseSource, resolve_noise_source

__all__ = ["CategoricalRandomizedResponse", "randomize_codes"]


def randomize_codes(source: NoiseSource, codes: np.ndarray, p: float, k: int) -> np.ndarray:
    """k-ary randomized response of 1-D int64 ``codes`` in ``0 .. k − 1``, sampled exactly.

    Each code is kept with probability ``p`` (exactly the float's value) and otherwise replaced
    by a uniform one of the ``k − 1`` other codes. Returns a new int64 array.
    """
    keep = bernoulli_float(source, p, codes.size)
    out = codes.copy()
    moved = np.flatnonzero(~keep)
    other = uniform_below(source, k - 1, moved.size)
    out[moved] = other + (other >= codes[moved])
    return out


class CategoricalRandomizedResponse(Mechanism):
    """k-ary randomized response: keep a value with probability ``p``, else report one of the
    ``k − 1`` others uniformly.

    Parameters
    ----------
    p : float
        Probability of reporting the true value, in the open interval (1/k, 1).
    k : int
        Number of values (states), ≥ 2. Values are the integer codes ``0 .. k − 1``.

    Notes
    -----
    RDP curve (Mironov 2017, Definition 3, summed over the ``k`` outputs):
    ε(α) = log[p^α q^{1−α} + q^α p^{1−α} + (k − 2) q]/(α − 1), ``q = (1 − p)/(k − 1)``;
    ε(1) = (p − q) log(p/q), ε(∞) = log(p/q). Each released value is one use of the mechanism
    on one record; values of different records compose in parallel, values of one record's
    attributes add their curves.
    """

    name: ClassVar[str] = "categorical_randomized_response"
    noise_label: ClassVar[str | None] = "randomized response"

    def __init__(self, p: float, k: int) -> None:
        self.k, self.p = _curves.check_categorical_rr(p, k)

    @property
    def q(self) -> float:
        """Probability of reporting one given other value, ``(1 − p)/(k − 1)``."""
        return (1.0 - self.p) / (self.k - 1)

    def matrix(self) -> np.ndarray:
        """The ``k × k`` matrix ``M[v, w] = P(w released | v true)``: ``p`` on the diagonal,
        ``q`` off it (float64; each row sums to one)."""
        out = np.full((self.k, self.k), self.q)
        np.fill_diagonal(out, self.p)
        return out

    def rdp(self, orders: Any = None) -> np.ndarray:
        """The k-ary randomized-response RDP curve at ``orders`` (default ``DEFAULT_ORDERS``)."""
        return _curves.categorical_randomized_response(resolve_orders(orders), self.p, self.k)

    def params(self) -> dict[str, Any]:
        return {"p": self.p, "k": self.k}

    def release(self, value: Any, noise_source: Any = None) -> np.ndarray:
        """Randomize each value: itself with probability ``p``, else a uniform other value.

        Parameters
        ----------
        value : array_like of int
            The true values, integer codes ``0 .. k − 1``, any shape.
        noise_source : None or NoiseSource
            ``None``: OS entropy. ``UnsafeNoiseSeed(s)``: reproducible and **not private**
            (tests only). An int or a NumPy generator is refused (TypeError).

        Returns
        -------
        numpy.ndarray
            int64 codes, the shape of ``value``.

        Raises
        ------
        TypeError
            ``value`` is not integer-valued, or ``noise_source`` is not a noise source.
        ValueError
            A value lies outside ``0 .. k − 1``.
        """
        if isinstance(value, (str, bytes)) or value is None:
            raise TypeError(f"value must hold integer codes 0..{self.k - 1}, got {value!r}")
        x = np.asarray(value)
        if x.dtype == np.bool_ or not np.issubdtype(x.dtype, np.integer):
            raise TypeError(f"value must hold integer codes 0..{self.k - 1}, got dtype {x.dtype}")
        if x.size and (x.min() < 0 or x.max() >= self.k):
            raise ValueError(f"value must hold integer codes 0..{self.k - 1}")
        source = resolve_noise_source(noise_source)
        flat = x.reshape(-1).astype(np.int64)
        return randomize_codes(source, flat, self.p, self.k).reshape(x.shape)

    @classmethod
    def calibrate(
        cls,
        epsilon: float,
        k: int,
        order: float | None = None,
        delta: float | None = None,
        *,
        orders: Any = None,
    ) -> CategoricalRandomizedResponse:
        """The largest ``p`` (least noise) of k-ary randomized response meeting a target.

        Parameters
        ----------
        epsilon : float
            Target ε > 0.
        k : int
            Number of values, ≥ 2.
        order : float, optional
            Target (λ, ε)-RDP at this order; ``inf`` is pure ε-DP, met by
            ``p = e^ε / (e^ε + k − 1)`` (Kairouz, Oh & Viswanath 2016).
        delta : float, optional
            Target (ε, δ)-DP through ``rdp.to_dp`` on ``orders``.
        orders : array_like, optional
            Orders of the (ε, δ) conversion (default ``rdp.DEFAULT_ORDERS``).

        Notes
        -----
        Exactly one of ``order`` and ``delta`` must be given. The noise is parametrised by
        ``x = 1 / log(p/q)``; the curve decreases in ``x`` and the least ``x`` is found by
        bisection, then ``p`` is raised float by float while the target still holds.
        """
        kk = _curves.check_value_count(k)
        target = CalibrationTarget(epsilon, order, delta, orders)

        def p_of(x: float) -> float:
            # log(p/q) = 1/x with q = (1 − p)/(k − 1): p = e^{1/x} / (e^{1/x} + k − 1)
            return 1.0 / (1.0 + (kk - 1) * math.exp(-1.0 / x))

        def meets_p(p: float) -> bool:
            if not 1.0 / kk < p < 1.0:
                return p <= 1.0 / kk
            return target.met_by(_curves.categorical_randomized_response(target.orders, p, kk))

        x = least_noise(lambda x: meets_p(p_of(x)), 1.0 / target.epsilon)
        p = p_of(x)
        for _ in range(64):
            up = math.nextafter(p, 1.0)
            if up >= 1.0 or not meets_p(up):
                break
            p = up
        return cls(p, kk)
