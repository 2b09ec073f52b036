"""Vectorised exact draws from uniform bits: Bernoulli(p) of a float ``p`` and uniform integers.

Randomized response needs, for every record, an event of probability ``p`` and, when it fails, a
uniform choice among the other values. Both are drawn here from uniform random bits of a
:class:`~pymc_rdp.privacy.mechanisms.noise.NoiseSource` with no floating-point rounding, in
NumPy arrays rather than one Python call per record.

* **Words.** :func:`uniform_words` takes ``64 n`` bits from the source in one call; word ``i`` is
  bits ``64 i … 64 i + 63`` of that integer (little-endian bytes). Disjoint bits of a uniform
  integer are independent and uniform.
* **Bernoulli of a float.** A float ``p`` in (0, 1) is the dyadic rational ``a / 2^b``
  (``fractions.Fraction(p)`` is exact). With ``U`` uniform on ``[0, 2^b)``, ``P[U < a] = p``
  exactly. For ``b ≤ 64`` the top ``b`` bits of a word are ``U``; for ``b > 64`` the word is
  ``U``'s top 64 bits and the rest is drawn only where the word equals ``a``'s top 64 bits
  (``U < a`` iff the top parts compare so, or they tie and the remainders do).
* **Uniform below m.** The top ``c = bitlength(m − 1)`` bits of a word are uniform on
  ``[0, 2^c)``; draws ``≥ m`` are redrawn (rejection), which leaves each of ``0 … m − 1`` with
  probability ``1/m`` exactly.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from pymc_rdp.privacy.mechanisms.noise import NoiseSource

__all__ = ["bernoulli_float", "uniform_below", "uniform_words"]

_WORD = 64


def _check_count(n: Any, name: str = "n") -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {n!r}")
    return int(n)


def uniform_words(source: NoiseSource, n: int) -> np.ndarray:
    """``n`` independent uniform 64-bit words from ``source`` (one call for all of them).

    Parameters
    ----------
    source : NoiseSource
        The noise source.
    n : int
        Number of words, ≥ 0.

    Returns
    -------
    numpy.ndarray
        uint64 array of length ``n``; word ``i`` is bits ``64 i … 64 i + 63`` of
        ``source.randbits(64 n)``.
    """
    n = _check_count(n)
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    big = source.randbits(_WORD * n)
    return np.frombuffer(big.to_bytes(8 * n, "little"), dtype="<u8").astype(np.uint64)


def bernoulli_float(source: NoiseSource, p: float, n: int) -> np.ndarray:
    """``n`` independent events of probability exactly ``p`` (the float's binary value).

    Parameters
    ----------
    source : NoiseSource
        The noise source.
    p : float
        Probability in the open interval (0, 1).
    n : int
        Number of events, ≥ 0.

    Returns
    -------
    numpy.ndarray
        Boolean array of length ``n``.

    Notes
    -----
    ``p = a / 2^b`` exactly; an event is ``U < a`` for ``U`` uniform on ``[0, 2^b)``.
    """
    if isinstance(p, bool) or not isinstance(p, (int, float, np.integer, np.floating)):
        raise TypeError(f"p must be a number in the open interval (0, 1), got {p!r}")
    if not (math.isfinite(p) and 0 < p < 1):
        raise ValueError(f"p must lie in the open interval (0, 1), got {p!r}")
    frac = Fraction(float(p))
    a = frac.numerator
    b = frac.denominator.bit_length() - 1
    words = uniform_words(source, n)
    if b <= _WORD:
        return (words >> np.uint64(_WORD - b)) < np.uint64(a)
    rest_bits = b - _WORD
    top, rest = a >> rest_bits, a & ((1 << rest_bits) - 1)
    out = words < np.uint64(top)
    for i in np.flatnonzero(words == np.uint64(top)).tolist():
        out[i] = source.randbits(rest_bits) < rest
    return out


def uniform_below(source: NoiseSource, m: int, n: int) -> np.ndarray:
    """``n`` independent uniform integers in ``[0, m)``, exactly (rejection of ``c``-bit draws).

    Parameters
    ----------
    source : NoiseSource
        The noise source.
    m : int
        Number of values, ≥ 1 and ≤ 2^63.
    n : int
        Number of draws, ≥ 0.

    Returns
    -------
    numpy.ndarray
        int64 array of length ``n``.
    """
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or not 1 <= m <= 2**63:
        raise ValueError(f"m must be an integer in 1 .. 2**63, got {m!r}")
    out = np.zeros(_check_count(n), dtype=np.int64)
    if m == 1:
        return out
    shift = np.uint64(_WORD - (m - 1).bit_length())
    todo = np.arange(n)
    while todo.size:
        draw = uniform_words(source, todo.size) >> shift
        ok = draw < np.uint64(m)
        out[todo[ok]] = draw[ok].astype(np.int64)
        todo = todo[~ok]
    return out
