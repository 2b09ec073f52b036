"""Exact samplers for integer noise: Bernoulli(exp(−γ)), discrete Laplace, discrete Gaussian.

The algorithms are those of Canonne, Kamath & Steinke 2020, "The Discrete Gaussian for
Differential Privacy" (NeurIPS; arXiv:2004.00010), Section 5:

* **Bernoulli(exp(−γ))** for a rational γ ≥ 0 (their Algorithm 1). For γ ∈ [0, 1] draw
  A₁ ~ Bernoulli(γ), A₂ ~ Bernoulli(γ/2), A₃ ~ Bernoulli(γ/3), … until the first failure, at
  trial K; then P[K is odd] = Σ_k (−1)^k γ^k / k! = e^{−γ}. For γ > 1, e^{−γ} = (e^{−1})^{⌊γ⌋}
  e^{−(γ − ⌊γ⌋)}: ⌊γ⌋ independent Bernoulli(e^{−1}) trials and one Bernoulli(e^{−(γ−⌊γ⌋)}),
  all of which must succeed.
* **Discrete Laplace** with scale t/s (pmf ∝ e^{−|x| s/t} on ℤ, integers s, t ≥ 1; their
  Algorithm 2). U uniform on {0, …, t − 1}, accepted with probability e^{−U/t}, and V ≥ 0 with
  P[V ≥ v] = e^{−v} (a run of Bernoulli(e^{−1}) successes) make X = U + tV geometric with
  P[X = x] ∝ e^{−x/t}; then Y = ⌊X/s⌋ is geometric with P[Y = y] ∝ e^{−ys/t}. A fair sign B
  makes it two-sided; the draw (B = 1, Y = 0) is rejected so that 0 is not counted twice.
* **Discrete Gaussian** N_ℤ(0, σ²) (pmf ∝ e^{−x²/(2σ²)}; their Algorithm 3) by rejection from
  the discrete Laplace of integer scale t = ⌊σ⌋ + 1: accept Y with probability
  exp(−(|Y| − σ²/t)² / (2σ²)). The ratio of the two pmfs is, up to a constant,
  exp(−y²/(2σ²) + |y|/t) = exp(σ²/(2t²)) · exp(−(|y| − σ²/t)²/(2σ²)), so accepting with the
  second factor (≤ 1) leaves exactly N_ℤ(0, σ²).

Everything is integer or rational arithmetic on Python ``int`` (arbitrary precision): no floating
point is involved in a draw. A float parameter is converted exactly (``Fraction(0.1)`` is the
binary value of the float), so the sampled distribution is the one of the parameter the RDP curve
is computed for. The only randomness is uniform bits from a
:class:`~pymc_rdp.privacy.mechanisms.noise.NoiseSource` (OS entropy by default).

Bernoulli(n/d) trials compare a lazily generated uniform U ∈ [0, 1) with n/d bit by bit
(two random bits on average whatever the size of d), so that the 100-bit denominators of a
float σ² cost no more than small ones.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from pymc_rdp.privacy.mechanisms.noise import NoiseSource, resolve_noise_source

__all__ = [
    "BitStream",
    "bernoulli_exp",
    "discrete_gaussian",
    "discrete_laplace",
    "exact_fraction",
    "sample_discrete_gaussian",
    "sample_discrete_laplace",
]

#: Random bits fetched from the noise source at a time.
_BLOCK = 4096


class BitStream:
    """Uniform random bits from a :class:`NoiseSource`, fetched in blocks of 4096.

    Bits of a block are used once, in order, and the stream lives only for one release, so no
    state is shared between releases. Concatenated blocks of uniform bits are uniform bits.
    """

    __slots__ = ("_avail", "_buf", "_source")

    def __init__(self, source: NoiseSource) -> None:
        self._source = source
        self._buf = 0
        self._avail = 0

    def _refill(self, need: int) -> None:
        while self._avail < need:
            self._buf |= self._source.randbits(_BLOCK) << self._avail
            self._avail += _BLOCK

    def bit(self) -> int:
        """One uniform bit."""
        if not self._avail:
            self._refill(1)
        b = self._buf & 1
        self._buf >>= 1
        self._avail -= 1
        return b

    def bits(self, k: int) -> int:
        """A uniform integer in [0, 2**k)."""
        if k <= 0:
            return 0
        if self._avail < k:
            self._refill(k)
        r = self._buf & ((1 << k) - 1)
        self._buf >>= k
        self._avail -= k
        return r

    def below(self, n: int) -> int:
        """A uniform integer in [0, n), n ≥ 1, by rejection of k-bit draws (k = bits of n − 1)."""
        if n == 1:
            return 0
        k = (n - 1).bit_length()
        while True:
            r = self.bits(k)
            if r < n:
                return r

    def bernoulli(self, num: int, den: int) -> bool:
        """True with probability num/den (0 ≤ num ≤ den, den ≥ 1), exactly.

        A uniform U = 0.b₁b₂… is compared with num/den one binary digit at a time: the first
        digit where they differ decides U < num/den. Each step succeeds in deciding with
        probability ½, so two bits are used on average.
        """
        if num <= 0:
            return False
        if num >= den:
            return True
        while True:
            num <<= 1
            p_digit = num >= den
            if p_digit:
                num -= den
            if self.bit() != p_digit:
                return p_digit  # U's digit is 0 where p's is 1: U < p; and vice versa
            if num == 0:  # p's expansion ended: U ≥ p from here on
                return False


def exact_fraction(value: Any, name: str) -> Fraction:
    """A finite, positive int/float/Fraction as the exact rational it represents."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a positive number, got {value!r}")
    if isinstance(value, Fraction):
        out = value
    elif isinstance(value, (int, np.integer)):
        out = Fraction(int(value))
    elif isinstance(value, (float, np.floating)):
        if not math.isfinite(float(value)):
            raise ValueError(f"{name} must be finite, got {value!r}")
        out = Fraction(float(value))
    else:
        raise TypeError(f"{name} must be an int, float or Fraction, got {type(value).__name__}")
    if out <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return out


def bernoulli_exp(num: int, den: int, bits: BitStream) -> bool:
    """True with probability exp(−num/den) for integers num ≥ 0, den ≥ 1 (CKS 2020, Alg. 1)."""
    if num < 0 or den < 1:
        raise ValueError(f"need num >= 0 and den >= 1, got {num}/{den}")
    whole, num = divmod(num, den)
    for _ in range(whole):
        if not _bernoulli_exp_le1(1, 1, bits):
            return False
    return _bernoulli_exp_le1(num, den, bits)


def _bernoulli_exp_le1(num: int, den: int, bits: BitStream) -> bool:
    """True with probability exp(−num/den) for 0 ≤ num ≤ den: the first failing trial is odd."""
    k = 1
    while bits.bernoulli(num, den * k):
        k += 1
    return bool(k & 1)


def _geometric_exp1(bits: BitStream) -> int:
    """V ≥ 0 with P[V ≥ v] = e^{−v}: the number of Bernoulli(e^{−1}) successes before a failure."""
    v = 0
    while _bernoulli_exp_le1(1, 1, bits):
        v += 1
    return v


def sample_discrete_laplace(t: int, s: int, bits: BitStream) -> int:
    """One draw with P[Y = y] ∝ exp(−|y| s/t), y ∈ ℤ, for integers t, s ≥ 1 (CKS 2020, Alg. 2)."""
    while True:
        u = bits.below(t)
        if not _bernoulli_exp_le1(u, t, bits):
            continue
        x = u + t * _geometric_exp1(bits)
        y = x // s
        if bits.bit():
            if y == 0:
                continue
            return -y
        return y


def sample_discrete_gaussian(a: int, b: int, bits: BitStream) -> int:
    """One draw from N_ℤ(0, σ²) with σ² = a/b (integers a, b ≥ 1) (CKS 2020, Alg. 3).

    With t = ⌊σ⌋ + 1 and Y from the discrete Laplace of scale t, Y is accepted with
    probability exp(−γ), γ = (|Y| − σ²/t)²/(2σ²) = (|Y| b t − a)² / (2 a b t²).
    """
    t = math.isqrt(a // b) + 1  # ⌊√⌊σ²⌋⌋ + 1 = ⌊σ⌋ + 1
    den = 2 * a * b * t * t
    bt = b * t
    while True:
        y = sample_discrete_laplace(t, 1, bits)
        d = abs(y) * bt - a
        if bernoulli_exp(d * d, den, bits):
            return y


def _check_size(size: Any) -> tuple[int, ...]:
    if isinstance(size, (int, np.integer)) and not isinstance(size, bool):
        size = (int(size),)
    try:
        shape = tuple(int(s) for s in size)
    except TypeError as exc:
        raise TypeError(f"size must be an int or a tuple of ints, got {size!r}") from exc
    if any(s < 0 for s in shape):
        raise ValueError(f"size must be non-negative, got {size!r}")
    return shape


def _draws(size: Any, noise_source: Any, draw: Callable[[BitStream], int]) -> np.ndarray:
    """``draw(bits)`` repeated for every element of an int64 array of shape ``size``."""
    shape = _check_size(size)
    bits = BitStream(resolve_noise_source(noise_source))
    out = [draw(bits) for _ in range(math.prod(shape))]
    return np.array(out, dtype=np.int64).reshape(shape)


def discrete_laplace(scale: Any, size: Any = (), noise_source: Any = None) -> np.ndarray:
    """Independent discrete Laplace draws, P[x] ∝ exp(−|x|/scale), as an int64 array.

    Parameters
    ----------
    scale : int, float or Fraction
        The scale t > 0, used as the exact rational it represents.
    size : int or tuple of int
        Shape of the output.
    noise_source : NoiseSource, optional
        Source of the random bits (default: OS entropy).
    """
    q = exact_fraction(scale, "scale")
    t, s = q.numerator, q.denominator  # scale t/s
    return _draws(size, noise_source, lambda bits: sample_discrete_laplace(t, s, bits))


def discrete_gaussian(sigma: Any, size: Any = (), noise_source: Any = None) -> np.ndarray:
    """Independent discrete Gaussian draws N_ℤ(0, σ²), P[x] ∝ exp(−x²/(2σ²)), as int64.

    Parameters
    ----------
    sigma : int, float or Fraction
        The scale σ > 0 (not the standard deviation of the discrete law, which is slightly
        smaller), used as the exact rational it represents; σ² is computed exactly.
    size : int or tuple of int
        Shape of the output.
    noise_source : NoiseSource, optional
        Source of the random bits (default: OS entropy).
    """
    q = exact_fraction(sigma, "sigma")
    var = q * q
    a, b = var.numerator, var.denominator
    return _draws(size, noise_source, lambda bits: sample_discrete_gaussian(a, b, bits))
