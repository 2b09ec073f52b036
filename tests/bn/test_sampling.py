"""Forward sampling and the per-record log-likelihood against the network's exact joint law."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from pymc_rdp.bn.graph import parse_structure
from pymc_rdp.bn.sampling import forward_sample, record_log_likelihood

STRUCTURE = {"a": [], "b": ["a"], "c": ["a", "b"]}
CARDS = {"a": 2, "b": 3, "c": 2}
CPTS = {
    "a": np.array([[0.4, 0.6]]),
    "b": np.array([[0.7, 0.2, 0.1], [0.2, 0.3, 0.5]]),
    "c": np.array([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.8, 0.2], [0.5, 0.5], [0.1, 0.9]]),
}


def _joint(a: int, b: int, c: int) -> float:
    return CPTS["a"][0, a] * CPTS["b"][a, b] * CPTS["c"][a * 3 + b, c]


def test_forward_sample_frequencies_fit_the_joint_law() -> None:
    """Pearson's chi-square test of the 12 joint states (a fixed seed; p-value well above 1e-3)."""
    st, _ = parse_structure(STRUCTURE)
    n = 60_000
    codes = forward_sample(st, CPTS, CARDS, n, np.random.default_rng(5))
    assert all(codes[v].dtype == np.int64 and codes[v].shape == (n,) for v in STRUCTURE)
    cells = (codes["a"] * 3 + codes["b"]) * 2 + codes["c"]
    observed = np.bincount(cells, minlength=12)
    expected = n * np.array([_joint(a, b, c) for a in range(2) for b in range(3) for c in range(2)])
    assert math.isclose(expected.sum(), n)
    assert stats.chisquare(observed, expected).pvalue > 1e-3


def test_record_log_likelihood_is_the_log_of_the_joint() -> None:
    st, _ = parse_structure(STRUCTURE)
    codes = {"a": np.array([0, 1, 1]), "b": np.array([2, 0, 1]), "c": np.array([1, 1, 0])}
    got = record_log_likelihood(st, CPTS, CARDS, codes)
    want = [math.log(_joint(*x)) for x in zip(codes["a"], codes["b"], codes["c"], strict=True)]
    np.testing.assert_allclose(got, want, rtol=1e-14)
    zero = {**CPTS, "c": np.array([[1.0, 0.0]] * 6)}
    assert record_log_likelihood(st, zero, CARDS, codes)[0] == -np.inf
