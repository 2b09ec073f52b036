"""Argument checks of :class:`~pymc_rdp.distributions.noisy_counts.NoisyCounts`.

The totals ``n``, the cell probabilities ``p``, the released values and the mechanism's noise law
are read and validated here; a bad argument raises a ValueError or TypeError naming it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.basic import Constant, Variable

from pymc_rdp.distributions.noise_models import noise_model_of


def _is_symbolic(x: Any) -> bool:
    return isinstance(x, Variable) and not isinstance(x, Constant)


def _check_n(n: Any) -> tuple[Any, np.ndarray | None]:
    """(n as given or as int64 array, the concrete totals or None when n is a model variable)."""
    if _is_symbolic(n):
        if n.type.dtype.startswith(("int", "uint")):
            raise TypeError(
                "n as a model variable is read as the expected total μ of Poissonised counts and "
                "must be continuous (e.g. pm.Gamma or pm.LogNormal), got an integer variable"
            )
        return pt.cast(n, "float64"), None
    if isinstance(n, Constant):
        n = n.data
    if isinstance(n, (bool, np.bool_)) or isinstance(n, (str, bytes)) or n is None:
        raise TypeError(
            f"n must be a whole number, an array of them or a model variable, got {n!r}"
        )
    try:
        arr = np.asarray(n, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"n must be a whole number or an array of them, got {n!r}") from exc
    if np.isnan(arr).any() or not np.isfinite(arr).all():
        raise ValueError("n must be finite (no NaN)")
    if (arr < 0).any() or (arr != np.round(arr)).any():
        raise ValueError(f"n must hold non-negative whole numbers, got {n!r}")
    if arr.ndim > 1:
        raise ValueError(f"n must be a scalar or have shape (rows,), got shape {arr.shape}")
    ints = arr.astype(np.int64)
    return ints, ints


def _check_p(p: Any) -> tuple[Any, int | None, tuple | None]:
    """(p as a float64 tensor, K if known, batch shape if known)."""
    if _is_symbolic(p):
        if p.type.ndim < 1:
            raise ValueError("p must have a category axis (shape (K,) or (rows, K))")
        if not p.type.dtype.startswith("float"):
            raise TypeError(f"p must be a float tensor, got dtype {p.type.dtype}")
        shp = p.type.shape
        batch = tuple(shp[:-1]) if all(s is not None for s in shp[:-1]) else None
        return pt.cast(p, "float64"), shp[-1], batch
    if isinstance(p, Constant):
        p = p.data
    if isinstance(p, (str, bytes)) or p is None:
        raise TypeError(f"p must be an array of probabilities, got {p!r}")
    try:
        arr = np.asarray(p, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError("p must be an array of probabilities") from exc
    if arr.ndim not in (1, 2):
        raise ValueError(f"p must have shape (K,) or (rows, K), got {arr.shape}")
    if np.isnan(arr).any():
        raise ValueError("p contains NaN")
    if (arr < 0).any() or not np.allclose(arr.sum(axis=-1), 1.0, rtol=0, atol=1e-8):
        raise ValueError("p must lie on the probability simplex (non-negative, rows summing to 1)")
    return pt.constant(arr), arr.shape[-1], arr.shape[:-1]


def _check_values(values: Any, clamped: bool, rounded: bool, from_release: bool) -> np.ndarray:
    if isinstance(values, (str, bytes)):
        raise TypeError("observed must be an array of released values")
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError("observed must be an array of released values") from exc
    if arr.ndim not in (1, 2) or arr.size == 0:
        raise ValueError(f"observed must have shape (K,) or (rows, K), got {arr.shape}")
    if np.isnan(arr).any():
        raise ValueError("observed contains NaN")
    if not np.isfinite(arr).all():
        raise ValueError("observed must be finite")
    if clamped and (arr < 0).any():
        raise ValueError("observed has negative values but the release is marked clamped at zero")
    if rounded and (arr != np.round(arr)).any():
        raise ValueError("observed has non-integer values but the release is marked rounded")
    if (
        not from_release
        and arr.min() >= 0
        and arr.max() <= 1
        and (arr != np.round(arr)).any()
        and np.allclose(arr.sum(axis=-1), 1.0, atol=1e-6)
    ):
        raise ValueError(
            "observed looks normalised (proportions summing to 1): a normalised or projected "
            "release is no longer the mechanism's output and cannot be modelled; use the raw "
            "noisy counts"
        )
    return arr


def _noise_of(mechanism: Any) -> tuple[str, float]:
    """The noise law and its parameter, from the mechanism's registered likelihood."""
    model = noise_model_of(mechanism)
    return model.kind, model.scale(mechanism)


def _batch_shape(*shapes: tuple | None) -> tuple | None:
    known = [s for s in shapes if s is not None]
    try:
        return tuple(np.broadcast_shapes(*known)) if known else None
    except ValueError:
        return None
