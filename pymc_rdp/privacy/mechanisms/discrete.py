"""The shared shape of the discrete additive-noise mechanisms (discrete Gaussian and Laplace).

Both release ``value + noise`` element-wise on an integer query, with integer noise sampled
exactly (:mod:`pymc_rdp.privacy.mechanisms.exact_sampling`): the output is an int64 array, so it
carries
no floating-point artefacts (Mironov 2012, "On Significance of the Least Significant Bits for
Differential Privacy"). The randomness comes only from a
:class:`~pymc_rdp.privacy.mechanisms.noise.NoiseSource` (OS entropy unless the caller passes
:class:`~pymc_rdp.privacy.mechanisms.noise.UnsafeNoiseSeed`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from pymc_rdp.privacy.mechanisms.additive import AdditiveNoiseMechanism

__all__ = ["DiscreteNoiseMechanism", "check_integer_array"]

#: Largest magnitude of an input value (so that value + noise stays inside int64).
_MAX_ABS = 2**62


def check_integer_array(value: Any, name: str = "value") -> np.ndarray:
    """An integer-valued array as int64: integer dtype, or floats that are whole numbers.

    Raises
    ------
    TypeError
        Not numbers (strings, objects, booleans).
    ValueError
        NaN, infinities, non-integer values or magnitudes of 2**62 or more.
    """
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{name} must be an array of integers, got {value!r}")
    arr = np.asarray(value)
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be an array of integers, got dtype {arr.dtype}")
    if arr.dtype.kind == "f":
        if np.isnan(arr).any():
            raise ValueError(f"{name} contains NaN")
        if not np.isfinite(arr).all():
            raise ValueError(f"{name} must be finite")
        if (arr != np.round(arr)).any():
            raise ValueError(
                f"{name} must hold integers: the discrete mechanisms release integer queries "
                "(counts); use GaussianMechanism/LaplaceMechanism for non-integer statistics"
            )
        if (np.abs(arr) >= _MAX_ABS).any():
            raise ValueError(f"{name} must have magnitude below 2**62")
        return arr.astype(np.int64)
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) >= _MAX_ABS:
        raise ValueError(f"{name} must have magnitude below 2**62")
    out = arr.astype(np.int64)
    if out.size and int(np.abs(out).max()) >= _MAX_ABS:
        raise ValueError(f"{name} must have magnitude below 2**62")
    return out


class DiscreteNoiseMechanism(AdditiveNoiseMechanism):
    """``value + noise`` on integers, with exactly sampled integer noise; int64 output.

    Subclasses set ``name``, ``noise_parameter``, ``curve`` and ``sampler`` (a function
    ``sampler(scale, shape, noise_source) -> int64 array``).
    """

    sampler: ClassVar[Callable[..., np.ndarray]]

    def release(self, value: Any, noise_source: Any = None) -> np.ndarray:  # type: ignore[override]
        """``value`` plus independent integer noise, element-wise; int64, the shape of ``value``.

        Parameters
        ----------
        value : array_like of int
            The exact integer query answer (integer dtype, or floats holding whole numbers).
        noise_source : NoiseSource, optional
            Source of the random bits: ``None`` for OS entropy (the default and the only private
            choice), :class:`~pymc_rdp.UnsafeNoiseSeed` for reproducible, non-private noise.

        Raises
        ------
        ValueError
            ``value`` holds non-integer values, NaN or infinities.
        TypeError
            ``noise_source`` is an int seed or a NumPy generator.
        """
        x = check_integer_array(value, "value")
        noise = type(self).sampler(self.noise, x.shape, noise_source)
        if noise.size and int(np.abs(noise).max()) >= _MAX_ABS:  # pragma: no cover - p < 1e-300
            raise OverflowError("the noise does not fit into int64")
        return x + noise

    def variance(self) -> float:
        """The variance of one coordinate's noise (exact formula or summation)."""
        raise NotImplementedError
