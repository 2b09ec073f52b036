"""The shared argument checks name the argument and refuse NaN, infinities and bad ranges."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


# The scalar checks have a fast path for plain floats and ints; the general path (the array
# checks, then a shape check) is the reference: same value, same exception type and message.

_SCALARS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.booleans(),
    st.floats(allow_nan=True, allow_infinity=True).map(np.float64),
    st.sampled_from(
        ["1.0", None, [1.0], [1.0, 2.0], np.ones((1, 1)), np.float32(2.5), np.int64(3)]
    ),
)


def _outcome(fn, *args, **kwargs):
    try:
        out = fn(*args, **kwargs)
    except (TypeError, ValueError, OverflowError) as exc:
        return ("raises", type(exc), str(exc))
    return ("value", type(out), np.asarray(out).tobytes(), np.shape(out))


def _general_scalar(value, name, allow_inf=False):
    return v._check_scalar(value, name, allow_inf)


def _general_positive_scalar(value, name):
    x = _general_scalar(value, name)
    if not x > 0:
        raise ValueError(f"{name} must be > 0, got {x!r}")
    return x


def _general_as_positive(value, name):
    if isinstance(value, float | int) and not isinstance(value, bool):
        if math.isfinite(value) and value > 0:
            return float(value)
    return v.check_positive(value, name)


@settings(max_examples=400, deadline=None)
@given(_SCALARS, st.booleans())
def test_check_scalar_fast_path_agrees_with_general_path(value, allow_inf):
    fast = _outcome(v.check_scalar, value, "x", allow_inf=allow_inf)
    assert fast == _outcome(_general_scalar, value, "x", allow_inf)
    if fast[0] == "value":
        assert fast[1] is float


@settings(max_examples=400, deadline=None)
@given(_SCALARS)
def test_check_positive_scalar_fast_path_agrees_with_general_path(value):
    assert _outcome(v.check_positive_scalar, value, "sigma") == _outcome(
        _general_positive_scalar, value, "sigma"
    )


@settings(max_examples=400, deadline=None)
@given(_SCALARS)
def test_as_positive_fast_path_agrees_with_general_path(value):
    assert _outcome(v.as_positive, value, "scale") == _outcome(_general_as_positive, value, "scale")


@pytest.mark.parametrize(
    ("bad", "exc", "match"),
    [
        (np.nan, ValueError, "sigma contains NaN"),
        (np.inf, ValueError, "sigma must be finite"),
        (-np.inf, ValueError, "sigma must be finite"),
        (True, TypeError, "sigma must be a real number"),
        ("2.0", TypeError, "sigma must be a number"),
        ([1.0, 2.0], ValueError, r"sigma must be a scalar, got an array of shape \(2,\)"),
        (0.0, ValueError, "sigma must be > 0"),
        (-3, ValueError, "sigma must be > 0"),
    ],
)
def test_positive_scalar_errors_name_the_argument(bad, exc, match):
    with pytest.raises(exc, match=match):
        v.check_positive_scalar(bad, "sigma")


def test_scalar_fast_path_values():
    assert v.check_scalar(3, "x") == 3.0 and type(v.check_scalar(3, "x")) is float
    assert v.check_scalar(np.inf, "x", allow_inf=True) == np.inf
    assert v.check_positive_scalar(np.float64(0.25), "x") == 0.25
    assert v.as_positive(7, "x") == 7.0 and type(v.as_positive(7, "x")) is float
