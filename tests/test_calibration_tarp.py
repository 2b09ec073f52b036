"""TARP expected coverage (Lemos et al. 2023) of the calibration study (experiments/).

Exact cases: a conjugate normal model whose posterior draws are exact gives the diagonal within
Monte-Carlo error; a posterior that is too narrow falls below it at high credibility, one that is
too wide rises above it; hand-placed points give the fractions by counting.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str) -> ModuleType:
    full = f"_experiments_{name}"
    if full in sys.modules:
        return sys.modules[full]
    spec = importlib.util.spec_from_file_location(full, ROOT / "experiments" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[full] = module
    spec.loader.exec_module(module)
    return module


tarp = _load("calibration_augmentation")

SIMS = 2000
DRAWS = 200
DIM = 3
SIGMA = 0.7  # observation noise of x | θ ~ N(θ, σ² I), θ ~ N(0, I)


def _fractions(rng: np.random.Generator, scale: float) -> np.ndarray:
    """TARP fractions of SIMS simulations of the conjugate normal model; the posterior draws have
    the exact mean and ``scale`` times the exact standard deviation."""
    post_var = SIGMA**2 / (1.0 + SIGMA**2)
    out = np.empty(SIMS)
    for i in range(SIMS):
        theta = rng.normal(size=DIM)
        x = theta + SIGMA * rng.normal(size=DIM)
        mean = x / (1.0 + SIGMA**2)
        draws = mean + scale * np.sqrt(post_var) * rng.normal(size=(DRAWS, DIM))
        ref = rng.uniform(-3.0, 3.0, size=(1, DIM))  # independent of θ
        out[i] = tarp.tarp_fractions(draws, theta, ref)[0]
    return out


def test_exact_posterior_gives_the_diagonal():
    rng = np.random.default_rng(20261201)
    ecp = tarp.expected_coverage(_fractions(rng, 1.0))
    # binomial sd at most 0.5/sqrt(2000) = 0.011, plus 1/(DRAWS + 1) from the finite draws
    sd = np.sqrt(tarp.TARP_GRID * (1 - tarp.TARP_GRID) / SIMS)
    assert np.all(np.abs(ecp - tarp.TARP_GRID) <= 4 * sd + 1.0 / (DRAWS + 1))
    assert np.all(np.diff(ecp) >= 0) and ecp[0] == 0.0


def test_too_narrow_posterior_falls_below_and_too_wide_rises_above():
    rng = np.random.default_rng(7)
    levels = np.array([0.8, 0.9, 0.95])
    narrow = tarp.expected_coverage(_fractions(rng, 0.5), levels)
    wide = tarp.expected_coverage(_fractions(rng, 2.0), levels)
    assert np.all(narrow < levels - 0.05), narrow
    assert np.all(wide > levels + 0.02), wide


def test_fractions_by_counting():
    # reference at the origin: draws at distances 1, 2, 3, 4; the truth at distance 2.5
    samples = np.array([[1.0, 0.0], [0.0, -2.0], [3.0, 0.0], [0.0, 4.0]])
    refs = np.array([[0.0, 0.0], [10.0, 0.0]])
    f = tarp.tarp_fractions(samples, np.array([2.5, 0.0]), refs)
    # from (10, 0): draws at 9, sqrt(104), 7, sqrt(116); the truth at 7.5: one draw closer
    np.testing.assert_array_equal(f, [0.5, 0.25])
    np.testing.assert_array_equal(tarp.expected_coverage(f, [0.25, 0.3, 0.6]), [0.0, 0.5, 1.0])


def test_prior_references_are_cpt_rows():
    from pymc_rdp.bn.structure import parse_structure

    st, _ = parse_structure({"a": [], "b": ["a"]})
    refs = tarp.prior_references(st, {"a": 3, "b": 2}, 5, np.random.default_rng(1))
    assert refs.shape == (5, 3 + 3 * 2)
    np.testing.assert_allclose(refs[:, :3].sum(axis=1), 1.0)
    np.testing.assert_allclose(refs[:, 3:].reshape(5, 3, 2).sum(axis=-1), 1.0)


def test_bad_input_is_refused():
    good = np.zeros((4, 2))
    with pytest.raises(ValueError, match="samples"):
        tarp.tarp_fractions(np.zeros(4), np.zeros(2), np.zeros((1, 2)))
    with pytest.raises(ValueError, match="truth"):
        tarp.tarp_fractions(good, np.zeros(3), np.zeros((1, 2)))
    with pytest.raises(ValueError, match="references"):
        tarp.tarp_fractions(good, np.zeros(2), np.zeros((1, 3)))
    with pytest.raises(ValueError, match="fractions"):
        tarp.expected_coverage([])
    with pytest.raises(ValueError, match="fractions"):
        tarp.expected_coverage([0.5, 1.5])
