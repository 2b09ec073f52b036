"""Rényi orders: the default grid and the checks every curve and conversion applies to orders.

An order α ≥ 1 indexes the Rényi divergence D_α (Mironov 2017, "Rényi Differential Privacy", CSF;
arXiv:1702.07476). Curves accept the order 1 (the limit α → 1, a Kullback–Leibler bound) and
``inf`` (the limit α → ∞, a pure-DP bound); conversions to (ε, δ)-DP need every order > 1.

Accounting evaluates curves on the same read-only grid again and again, so a read-only array that
passed a check is remembered (by identity, guarded by a weak reference) and not checked again.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from pymc_rdp._validation import as_float_array, check_orders

__all__ = [
    "DEFAULT_ORDERS",
    "conversion_orders",
    "curve_orders",
    "is_frozen",
    "split_orders",
]


def _default_orders() -> np.ndarray:
    # dp-accounting's default RDP orders, built with the same float expressions so that every one of
    # them is contained bit for bit: 1.1, 1.2, ..., 10.9, 11, ..., 63, 128, 256, 512, 1024.
    dp_accounting_orders = (
        [1 + x / 10.0 for x in range(1, 100)] + list(range(11, 64)) + [128, 256, 512, 1024]
    )
    near_one = 1.0 + np.array([1e-3, 2e-3, 5e-3, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08])
    large = np.round(np.geomspace(64.0, 1e6, 60))
    orders = np.unique(np.concatenate([near_one, np.asarray(dp_accounting_orders, float), large]))
    orders.setflags(write=False)
    return orders


#: Default grid of Rényi orders: every one of dp-accounting's 156 default orders, a fine grid near 1
#: (1.001 … 1.08), and 60 log-spaced integer orders from 64 to 1e6. Sorted, float64, read-only.
DEFAULT_ORDERS: np.ndarray = _default_orders()


def is_frozen(arr: np.ndarray) -> bool:
    """Whether neither ``arr`` nor any array it is a view of can be written to."""
    while True:
        if arr.flags.writeable:
            return False
        base = arr.base
        if base is None:
            return True
        if not isinstance(base, np.ndarray):
            return False
        arr = base


class IdentityCache:
    """Values attached to read-only arrays, by identity.

    A weak reference to the array guards against reuse of its id by another object after it is
    gone; arrays that are, or view, writable memory are never remembered. At ``size`` entries
    the cache is emptied.
    """

    def __init__(self, size: int = 256) -> None:
        self._size = size
        self._items: dict[int, tuple[weakref.ref, Any]] = {}

    def get(self, arr: Any) -> Any:
        """The value remembered for the array ``arr`` (``None`` if none)."""
        hit = self._items.get(id(arr))
        if hit is not None and hit[0]() is arr and not arr.flags.writeable:
            return hit[1]
        return None

    def put(self, arr: np.ndarray, value: Any = True) -> None:
        """Remember ``value`` for ``arr`` if it is frozen (:func:`is_frozen`)."""
        if is_frozen(arr):
            if len(self._items) >= self._size:
                self._items.clear()
            self._items[id(arr)] = (weakref.ref(arr), value)


_CURVE_ORDERS = IdentityCache()
_CONVERSION_ORDERS = IdentityCache()


def curve_orders(orders: Any, name: str = "orders") -> np.ndarray:
    """Orders for a curve: float64, ≥ 1 (1 = the α → 1 limit), ``inf`` allowed, any shape."""
    if type(orders) is np.ndarray and _CURVE_ORDERS.get(orders):
        return orders
    arr = as_float_array(orders, name, allow_inf=True)
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if (arr < 1).any():
        raise ValueError(f"{name} must all be >= 1 (1 means the limit α → 1), got min {arr.min()}")
    if arr is orders:
        _CURVE_ORDERS.put(arr)
    return arr


def conversion_orders(orders: Any) -> np.ndarray:
    """Orders for a conversion to (ε, δ)-DP: a one-dimensional float64 array, every order > 1."""
    if _CONVERSION_ORDERS.get(orders):
        a = orders
    else:
        a = check_orders(orders, "orders")
        if a is orders and a.ndim <= 1:
            _CONVERSION_ORDERS.put(a)
    if a.ndim == 0:
        a = a.reshape(1)
    if a.ndim != 1:
        raise ValueError(f"orders must be one-dimensional, got shape {a.shape}")
    return a


def split_orders(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Masks for α = 1 and α = ∞ and a copy of α with those entries replaced by a harmless 2."""
    at_one = a == 1.0
    at_inf = np.isinf(a)
    safe = np.where(at_one | at_inf, 2.0, a)
    return at_one, at_inf, safe
