"""The shared argument checks name the argument and refuse NaN, infinities and bad ranges."""

from __future__ import annotations

import numpy as np
import pytest

from pymc_rdp import _validation as v


@pytest.mark.parametrize("bad", [np.nan, [1.0, np.nan]])
def test_nan_refused_with_name(bad):
    with pytest.raises(ValueError, match="sigma contains NaN"):
        v.check_positive(bad, "sigma")


def test_inf_refused_unless_allowed():
    with pytest.raises(ValueError, match="scale must be finite"):
        v.check_positive(np.inf, "scale")
    assert v.check_positive(np.inf, "order", allow_inf=True) == np.inf


@pytest.mark.parametrize("bad", [0.0, -1.0, [1.0, 0.0]])
def test_non_positive_refused(bad):
    with pytest.raises(ValueError, match="epsilon must be > 0"):
        v.check_positive(bad, "epsilon")


@pytest.mark.parametrize("bad", [1.0, 0.5, [2.0, 1.0]])
def test_orders_must_exceed_one(bad):
    with pytest.raises(ValueError, match="orders must all be > 1"):
        v.check_orders(bad)


def test_orders_empty_refused():
    with pytest.raises(ValueError, match="orders must not be empty"):
        v.check_orders([])


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 1.5])
def test_delta_open_interval(bad):
    with pytest.raises(ValueError, match=r"delta must lie in the open interval \(0, 1\)"):
        v.check_delta(bad)


def test_probability_bounds():
    assert v.check_probability_open(0.75, "p", 0.5, 1.0) == 0.75
    with pytest.raises(ValueError, match="p must lie"):
        v.check_probability_open(0.5, "p", 0.5, 1.0)


@pytest.mark.parametrize("bad", ["1", None, b"x", object()])
def test_non_numbers_are_type_errors(bad):
    with pytest.raises(TypeError, match="sigma must be a number"):
        v.as_float_array(bad, "sigma")


def test_count():
    assert v.check_count(3) == 3
    assert v.check_count(np.int64(2)) == 2
    assert v.check_count(4.0) == 4
    with pytest.raises(ValueError, match="count must be >= 1"):
        v.check_count(0)
    with pytest.raises(TypeError, match="count must be a whole number"):
        v.check_count(1.5)
    with pytest.raises(TypeError, match="count must be a whole number"):
        v.check_count(True)


def test_returns_float64():
    out = v.as_float_array([1, 2, 3], "x")
    assert out.dtype == np.float64
