"""Exact vectorised draws from uniform bits: words, Bernoulli of a float, uniform below m."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from pymc_rdp.privacy.mechanisms.exact_bits import bernoulli_float, uniform_below, uniform_words
from pymc_rdp.privacy.mechanisms.noise import NoiseSource, UnsafeNoiseSeed


class _Words(NoiseSource):
    """Hands out the given 64-bit words in order, then fails."""

    secure = False

    def __init__(self, words: list[int]) -> None:
        self.words = list(words)

    def randbits(self, k: int) -> int:
        assert k % 64 == 0
        n = k // 64
        take, self.words = self.words[:n], self.words[n:]
        assert len(take) == n, "the sampler drew more words than the test provided"
        return int.from_bytes(np.array(take, dtype="<u8").tobytes(), "little")


def test_words_are_the_source_bits_in_order():
    src = UnsafeNoiseSeed(5)
    big = UnsafeNoiseSeed(5).randbits(64 * 3)
    words = uniform_words(src, 3)
    assert words.dtype == np.uint64
    assert [int(w) for w in words] == [(big >> (64 * i)) & (2**64 - 1) for i in range(3)]
    assert uniform_words(src, 0).shape == (0,)


@pytest.mark.parametrize("p", [0.75, 0.1, 1 / 3, 0.5 + 2**-52])
def test_bernoulli_over_every_top_pattern_is_exactly_p(p):
    frac = Fraction(p)
    b = frac.denominator.bit_length() - 1
    if b > 12:
        # too many patterns to enumerate: check the boundary words instead
        a = frac.numerator
        edge = [(a - 1) << (64 - b), a << (64 - b), ((a - 1) << (64 - b)) | ((1 << (64 - b)) - 1)]
        out = bernoulli_float(_Words(edge), p, 3)
        assert out.tolist() == [True, False, True]
        return
    words = [i << (64 - b) for i in range(2**b)]
    out = bernoulli_float(_Words(words), p, len(words))
    assert Fraction(int(out.sum()), out.size) == frac


def test_bernoulli_of_a_float_is_exact_past_64_bits():
    # p = 2^-20 + 2^-72 (a float: 2^-20 (1 + 2^-52)) has a 72-bit denominator. Where the word
    # ties with p's top 64 bits (2^44), the eight bits drawn after it decide, and over every
    # pattern of them the share is exactly p's remainder (1 in 256).
    p = 2.0**-20 + 2.0**-72
    assert Fraction(p).denominator == 2**72
    top = np.array([1 << 44], dtype="<u8")

    class _Tie(NoiseSource):
        secure = False

        def __init__(self, rest: int) -> None:
            self.rest = rest

        def randbits(self, k: int) -> int:
            return int.from_bytes(top.tobytes(), "little") if k == 64 else self.rest

    kept = [bool(bernoulli_float(_Tie(r), p, 1)[0]) for r in range(256)]
    assert kept == [r < 1 for r in range(256)]
    with pytest.raises(ValueError, match="p"):
        bernoulli_float(_Tie(0), 1.0, 1)


def test_uniform_below_rejects_and_is_uniform_over_every_pattern():
    # m = 5 uses the top three bits; patterns 5, 6, 7 are redrawn from the next words
    words = [i << 61 for i in range(8)] + [i << 61 for i in range(3)]
    out = uniform_below(_Words(words), 5, 8)
    assert sorted(out.tolist()) == [0, 0, 1, 1, 2, 2, 3, 4]
    assert uniform_below(_Words([]), 1, 4).tolist() == [0, 0, 0, 0]
    with pytest.raises(ValueError, match="m"):
        uniform_below(_Words([]), 0, 1)


@pytest.mark.parametrize(
    ("call", "err", "word"),
    [
        (lambda: bernoulli_float(UnsafeNoiseSeed(1), float("nan"), 3), ValueError, "p"),
        (lambda: bernoulli_float(UnsafeNoiseSeed(1), float("inf"), 3), ValueError, "p"),
        (lambda: bernoulli_float(UnsafeNoiseSeed(1), 0.0, 3), ValueError, "p"),
        (lambda: bernoulli_float(UnsafeNoiseSeed(1), "0.5", 3), TypeError, "p"),
        (lambda: bernoulli_float(UnsafeNoiseSeed(1), 0.5, -1), ValueError, "n"),
        (lambda: uniform_words(UnsafeNoiseSeed(1), -2), ValueError, "n"),
        (lambda: uniform_words(UnsafeNoiseSeed(1), 2.0), ValueError, "n"),
        (lambda: uniform_below(UnsafeNoiseSeed(1), 3, -1), ValueError, "n"),
        (lambda: uniform_below(UnsafeNoiseSeed(1), 2.5, 1), ValueError, "m"),
    ],
)
def test_bad_input_is_refused_naming_the_argument(call, err, word):
    with pytest.raises(err, match=rf"\b{word}\b"):
        call()
