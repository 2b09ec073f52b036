"""Argument checks shared by every public function.

Each helper takes the argument's public name so that the error message names it, and returns the
value converted to float64 (scalars as Python floats where that is what callers expect).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = [
    "as_float_array",
    "as_positive",
    "check_broadcast",
    "check_count",
    "check_delta",
    "check_orders",
    "check_positive",
    "check_positive_scalar",
    "check_probability_open",
    "check_scalar",
]

_INF = math.inf
_F64 = np.float64


def as_float_array(value: Any, name: str, *, allow_inf: bool = False) -> np.ndarray:
    """Convert ``value`` to a float64 array, refusing NaN (and infinities unless allowed)."""
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{name} must be a number or an array of numbers, got {value!r}")
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a number or an array of numbers, got {value!r}") from exc
    if np.isnan(arr).any():
        raise ValueError(f"{name} contains NaN")
    if not allow_inf and np.isinf(arr).any():
        raise ValueError(f"{name} must be finite")
    return arr


def check_positive(value: Any, name: str, *, allow_inf: bool = False) -> np.ndarray:
    """``value`` as float64, every element > 0."""
    arr = as_float_array(value, name, allow_inf=allow_inf)
    if (arr <= 0).any():
        raise ValueError(f"{name} must be > 0, got {_show(arr)}")
    return arr


def as_positive(value: Any, name: str) -> Any:
    """:func:`check_positive`, with plain finite positive Python numbers returned as floats.

    The fast path of the curves and the accountant, which are called with scalars most of the time.
    """
    cls = value.__class__
    if cls is float or cls is _F64:
        if 0.0 < value < _INF:  # False for NaN, infinities and non-positive values
            return float(value)
    elif cls is int and value > 0:
        x = float(value)  # OverflowError for huge ints, as on the general path
        if x < _INF:
            return x
    if isinstance(value, float | int) and not isinstance(value, bool):  # subclasses
        if math.isfinite(value) and value > 0:
            return float(value)
    return check_positive(value, name)


def check_scalar(value: Any, name: str, *, allow_inf: bool = False) -> float:
    """A real scalar as a Python float (booleans and NaN refused, infinities unless allowed)."""
    # fast path: plain Python floats and ints (and NumPy float64 scalars); the same result as the
    # general path below, which gives the errors
    cls = value.__class__
    if cls is float or cls is _F64 or cls is int:
        x = float(value)  # OverflowError for huge ints, as on the general path
        if x - x == 0.0 or (allow_inf and x == x):  # finite; or infinite where allowed
            return x
    return _check_scalar(value, name, allow_inf)


def _check_scalar(value: Any, name: str, allow_inf: bool) -> float:
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    arr = as_float_array(value, name, allow_inf=allow_inf)
    if arr.ndim != 0:
        raise ValueError(f"{name} must be a scalar, got an array of shape {arr.shape}")
    return float(arr)


def check_positive_scalar(value: Any, name: str) -> float:
    """A finite real scalar > 0 as a Python float."""
    cls = value.__class__
    if cls is float or cls is _F64 or cls is int:
        x = float(value)
        if 0.0 < x < _INF:  # False for NaN, infinities and non-positive values
            return x
    x = check_scalar(value, name)
    if not x > 0:
        raise ValueError(f"{name} must be > 0, got {x!r}")
    return x


def check_broadcast(*named: tuple[Any, str]) -> list[Any]:
    """Check that the arguments, given as ``(value, name)`` pairs, broadcast together.

    Returns the values unchanged; the ValueError names every argument and its shape.
    """
    shapes = [np.shape(a) for a, _ in named]
    if any(shapes):
        try:
            np.broadcast_shapes(*shapes)
        except ValueError as exc:
            names = ", ".join(n for _, n in named)
            raise ValueError(
                f"{names} have shapes {', '.join(map(str, shapes))} that do not broadcast"
            ) from exc
    return [a for a, _ in named]


def check_orders(orders: Any, name: str = "orders", *, allow_inf: bool = True) -> np.ndarray:
    """Rényi orders as a float64 array, every element > 1 (``inf`` allowed by default)."""
    arr = as_float_array(orders, name, allow_inf=allow_inf)
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if (arr <= 1).any():
        raise ValueError(f"{name} must all be > 1, got {_show(arr)}")
    return arr


def check_delta(delta: Any, name: str = "delta") -> np.ndarray:
    """δ as float64, every element in the open interval (0, 1)."""
    arr = as_float_array(delta, name)
    if ((arr <= 0) | (arr >= 1)).any():
        raise ValueError(f"{name} must lie in the open interval (0, 1), got {_show(arr)}")
    return arr


def check_probability_open(
    value: Any, name: str, low: float = 0.0, high: float = 1.0
) -> np.ndarray:
    """A probability in the open interval (low, high)."""
    arr = as_float_array(value, name)
    if ((arr <= low) | (arr >= high)).any():
        raise ValueError(f"{name} must lie in the open interval ({low}, {high}), got {_show(arr)}")
    return arr


def check_count(value: Any, name: str = "count") -> int:
    """A whole number >= 1."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            value = int(value)
        else:
            raise TypeError(f"{name} must be a whole number >= 1, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return int(value)


def _show(arr: np.ndarray) -> str:
    if arr.ndim == 0:
        return repr(float(arr))
    if arr.size <= 6:
        return np.array2string(arr, separator=", ")
    return f"an array of shape {arr.shape} (min {arr.min():g}, max {arr.max():g})"
