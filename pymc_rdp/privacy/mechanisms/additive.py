"""The shared shape of the additive-noise mechanisms (Gaussian and Laplace).

Both release ``value + noise`` element-wise, with one noise parameter (σ or b) and one sensitivity,
and both have closed-form RDP curves in :mod:`pymc_rdp.privacy.rdp` that broadcast over parameters.
This
base holds the parts that depend only on that shape: validation, the curve at one or many
mechanisms, the parameters and the release.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from pymc_rdp._validation import as_float_array, check_positive_scalar
from pymc_rdp.privacy.mechanisms.base import Mechanism, resolve_orders
from pymc_rdp.privacy.mechanisms.noise import resolve_noise_source

__all__ = ["AdditiveNoiseMechanism"]


class AdditiveNoiseMechanism(Mechanism):
    """``value + noise`` with noise of one scale parameter; subclasses name it and its curve.

    Subclasses set ``name``, ``noise_parameter`` (the constructor's name of the scale, e.g.
    ``"sigma"``), and implement :meth:`curve` (the RDP curve of :mod:`pymc_rdp.privacy.rdp`,
    broadcasting
    over orders, scale and sensitivity) and :meth:`draw_noise`.
    """

    noise_parameter: ClassVar[str]

    def __init__(self, noise: float, sensitivity: float = 1.0) -> None:
        setattr(self, self.noise_parameter, check_positive_scalar(noise, self.noise_parameter))
        self.sensitivity = check_positive_scalar(sensitivity, "sensitivity")

    @property
    def noise(self) -> float:
        """The noise scale (σ for Gaussian noise, b for Laplace noise)."""
        return getattr(self, self.noise_parameter)

    curve: ClassVar[Callable[..., np.ndarray]]

    @staticmethod
    def draw_noise(gen: np.random.Generator, noise: float, shape: tuple[int, ...]) -> np.ndarray:
        raise NotImplementedError

    def rdp(self, orders: Any = None) -> np.ndarray:
        """The RDP curve at ``orders`` (default ``rdp.DEFAULT_ORDERS``)."""
        curve = type(self).curve
        return np.asarray(
            curve(resolve_orders(orders), self.noise, self.sensitivity), dtype=np.float64
        )

    @classmethod
    def batch_rdp(cls, mechanisms: list[Mechanism], orders: np.ndarray) -> np.ndarray:
        """Curves of several mechanisms of this class as rows (one vectorised curve call)."""
        noise = np.array([m.noise for m in mechanisms], dtype=np.float64)[:, None]
        sens = np.array([m.sensitivity for m in mechanisms], dtype=np.float64)[:, None]
        try:
            out = np.asarray(cls.curve(orders[None, :], noise, sens), dtype=np.float64)
        except (TypeError, ValueError):
            out = None
        if out is None or out.shape != (len(mechanisms), orders.size):
            return super().batch_rdp(mechanisms, orders)
        return out

    def params(self) -> dict[str, Any]:
        return {self.noise_parameter: self.noise, "sensitivity": self.sensitivity}

    def release(self, value: Any, noise_source: Any = None) -> np.ndarray:
        """``value`` plus independent noise, element-wise; float64, the same shape as ``value``.

        Parameters
        ----------
        value : array_like
            The exact query answer (finite numbers).
        noise_source : None or NoiseSource
            ``None``: noise from the operating system's entropy. ``UnsafeNoiseSeed(k)``:
            reproducible and **not private** (tests only). An int or a NumPy generator is
            refused (TypeError).
        """
        source = resolve_noise_source(noise_source)
        x = as_float_array(value, "value")
        noise = self.draw_noise(source.generator(), self.noise, x.shape)
        return np.asarray(x + noise, dtype=np.float64)
