"""Where privacy noise comes from: the operating system's entropy, or an explicit unsafe seed.

A mechanism's guarantee holds only if an observer cannot reproduce its noise. Noise drawn from a
seed the user chose, or printed in a report, can be replayed: a search over small seeds recovers
the exact counts behind a release. So every release draws from :class:`SystemNoise` (the OS's
cryptographic generator) unless the caller opts in to :class:`UnsafeNoiseSeed`, whose releases are
reproducible and are marked in the ledger as *not private*.

Integer-valued samplers (the discrete Gaussian and Laplace, randomized response) take uniform
random bits straight from :meth:`NoiseSource.randbits` (``secrets.randbits`` for the system
source). Floating-point samplers (the Dirichlet mechanism's Gamma draws, the continuous Gaussian
and Laplace) take a NumPy generator from :meth:`NoiseSource.generator`; the system source seeds a
fresh PCG64 with 256 bits of OS entropy for every call, so no state is shared between releases
and none ever leaves the process.
"""

from __future__ import annotations

import random
import secrets
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "NoiseSource",
    "SystemNoise",
    "UnsafeNoiseSeed",
    "declare_unsafe_noise",
    "resolve_noise_source",
]


class NoiseSource:
    """Base class of the two sources of privacy noise.

    Attributes
    ----------
    secure : bool
        True when the noise cannot be reproduced by anyone (OS entropy).
    """

    secure: bool = True

    def randbits(self, k: int) -> int:
        """A uniform integer in ``[0, 2**k)``."""
        raise NotImplementedError

    def randbelow(self, n: int) -> int:
        """A uniform integer in ``[0, n)`` for an integer ``n >= 1`` (exact, by rejection)."""
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        k = (n - 1).bit_length()
        while True:
            r = self.randbits(k) if k else 0
            if r < n:
                return r

    def generator(self) -> np.random.Generator:
        """A NumPy generator for floating-point samplers."""
        raise NotImplementedError


class SystemNoise(NoiseSource):
    """Noise from the operating system's cryptographic random number generator (the default)."""

    secure = True

    def randbits(self, k: int) -> int:
        return secrets.randbits(k) if k > 0 else 0

    def generator(self) -> np.random.Generator:
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence(secrets.randbits(256))))

    def __repr__(self) -> str:
        return "SystemNoise()"


@dataclass(frozen=True)
class UnsafeNoiseSeed(NoiseSource):
    """Reproducible noise from a seed: **not private**, for tests and teaching only.

    Anyone who knows (or guesses) the seed can subtract the noise and recover the exact
    statistics. Releases made with it are recorded in the ledger with ``private = False`` and the
    reports say so.

    Parameters
    ----------
    seed : int
        A non-negative integer.
    """

    seed: int
    secure = False

    def __post_init__(self) -> None:
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)):
            raise TypeError(f"seed must be a non-negative int, got {type(self.seed).__name__}")
        if self.seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {self.seed}")
        # one stream of bits and one of floats, both fixed by the seed
        object.__setattr__(self, "_bits", random.Random(int(self.seed)))
        object.__setattr__(self, "_calls", [0])

    def randbits(self, k: int) -> int:
        return self._bits.getrandbits(k) if k > 0 else 0  # type: ignore[attr-defined]

    def generator(self) -> np.random.Generator:
        calls = self._calls  # type: ignore[attr-defined]
        calls[0] += 1
        return np.random.default_rng(np.random.SeedSequence(int(self.seed), spawn_key=(calls[0],)))


def resolve_noise_source(noise_source: Any, name: str = "noise_source") -> NoiseSource:
    """Resolve a ``noise_source`` argument: None -> :class:`SystemNoise`, a source -> itself.

    An int seed or a NumPy generator is refused: privacy noise is never steered by a user seed.
    """
    if noise_source is None:
        return SystemNoise()
    if isinstance(noise_source, NoiseSource):
        return noise_source
    raise TypeError(
        f"{name} must be None (noise from OS entropy) or pmr.UnsafeNoiseSeed(seed) for "
        f"reproducible, non-private noise; got {type(noise_source).__name__}. "
        "Privacy noise is never drawn from a user seed or generator."
    )


def declare_unsafe_noise(accountant: Any, source: NoiseSource, what: str) -> None:
    """Record in ``accountant``'s ledger that ``what`` drew reproducible noise (not private).

    Nothing is recorded for a secure source. The declaration (``kind="unsafe_noise"``,
    outside the guarantee) travels in the ledger JSON and prints as "OUTSIDE THE GUARANTEE" in
    :meth:`Accountant.report`; the seed itself is not written.
    """
    if source.secure or accountant is None:
        return
    accountant.declare(
        "unsafe_noise",
        f"{what}: noise drawn from {type(source).__name__}, reproducible by anyone who knows "
        "the seed: NOT PRIVATE",
        outside_guarantee=True,
    )
