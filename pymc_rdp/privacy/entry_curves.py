"""The RDP curves of ledger entries on an accountant's orders: one mechanism, or a batch.

One mechanism's curve is ``mechanism.rdp(orders)`` times its count, checked (the shape of the
orders, every value >= 0, no NaN) and read-only; curves of repeated mechanisms (same class and
parameters) are reused from a bounded cache. A batch is evaluated vectorised per mechanism class
(``Mechanism.batch_rdp``, equal to ``rdp(orders)`` up to rounding) into the rows of one array.

The built-in Gaussian and Laplace mechanisms (exactly those classes, not subclasses, which may
override ``rdp``) whose parameters are plain finite positive floats take a shorter path to the
same floats: the kernel that ``rdp`` ends in (:func:`~pymc_rdp.privacy.curves.gaussian_checked`,
:func:`~pymc_rdp.privacy.curves.laplace_checked`) is called on the accountant's checked orders,
without re-checking the orders, the parameters or the fresh array the kernel returns, and the
cache is keyed by the two parameters. (Their sequential single spends usually do not come here
at all: :mod:`pymc_rdp.privacy.deferred_curves` evaluates their curves together.)
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from pymc_rdp.privacy.curves import gaussian_checked, laplace_checked
from pymc_rdp.privacy.mechanisms.base import Mechanism
from pymc_rdp.privacy.mechanisms.gaussian import GaussianMechanism
from pymc_rdp.privacy.mechanisms.laplace import LaplaceMechanism

__all__ = ["CACHE_SIZE", "CurveCache", "batch_curves"]

#: Curves kept for repeated mechanisms (the cache is emptied when it is full).
CACHE_SIZE = 4096
_MIN = np.minimum.reduce  # the ufunc itself: without ndarray.min's Python-level wrapper
_INF = float("inf")
#: exact class -> (name of its noise attribute, the curve kernel of ``rdp``)
_KERNELS: dict[type, tuple[str, Any]] = {
    GaussianMechanism: ("sigma", gaussian_checked),
    LaplaceMechanism: ("scale", laplace_checked),
}


class CurveCache:
    """Checked, read-only curves of mechanisms on fixed orders, reused for repeated ones.

    Parameters
    ----------
    orders : numpy.ndarray
        The accountant's orders (sorted, distinct, read-only).
    """

    def __init__(self, orders: np.ndarray) -> None:
        self.orders = orders
        self._cache: dict[type, dict[Any, np.ndarray]] = {}  # class -> params key -> curve
        self._size = 0

    def copy(self) -> CurveCache:
        """An independent cache with the same curves (curves are read-only: shared)."""
        new = CurveCache(self.orders)
        new._cache = {c: dict(d) for c, d in self._cache.items()}
        new._size = self._size
        return new

    def curve(self, mechanism: Mechanism, count: int, params: Any = None) -> np.ndarray:
        """``count`` times the mechanism's curve on the orders, read-only (maybe shared)."""
        # Curves are determined by the class and params(): reuse them for repeated mechanisms.
        # One dictionary per class, keyed by the flat tuple (names..., values...) when it is
        # hashable (floats, ints, strings), else by repr(params) (lists, nested values). A flat
        # tuple of atoms is dropped from the garbage collector's lists at its first pass, so a
        # long ledger does not make full collections more frequent.
        kernel = _KERNELS.get(mechanism.__class__)
        if kernel is not None:
            curve = self._built_in(mechanism, kernel)
            if curve is not None:
                if count == 1:
                    return curve
                curve = curve * count
                curve.setflags(write=False)
                return curve
        if params is None:
            params = mechanism.params()
        per_class = self._cache.get(mechanism.__class__)
        if per_class is None:
            per_class = self._cache[mechanism.__class__] = {}
        try:
            key: Any = (*params, *params.values())
            curve = per_class.get(key)
        except TypeError:
            key = repr(params)
            curve = per_class.get(key)
        if curve is None:
            curve = self.fresh(mechanism)
            if self._size >= CACHE_SIZE:
                for d in self._cache.values():  # dropping the oldest key is O(size) in a dict
                    d.clear()
                self._size = 0
            per_class[key] = curve
            self._size += 1
        if count == 1:
            return curve  # read-only: safe to share with the cache and the ledger
        curve = curve * count
        curve.setflags(write=False)
        return curve

    def _built_in(self, mechanism: Mechanism, kernel: tuple[str, Any]) -> np.ndarray | None:
        """The cached or fresh curve of a built-in additive mechanism; None where its parameters
        are not plain finite positive floats or the kernel declines (the general path decides)."""
        noise = getattr(mechanism, kernel[0])
        sens = mechanism.sensitivity
        if noise.__class__ is not float or sens.__class__ is not float:
            return None
        per_class = self._cache.get(mechanism.__class__)
        if per_class is None:
            per_class = self._cache[mechanism.__class__] = {}
        key = (noise, sens)  # distinct from the general path's keys, which start with a name
        curve = per_class.get(key)
        if curve is not None:
            return curve
        if not (0.0 < noise < _INF and 0.0 < sens < _INF):
            return None
        curve = kernel[1](self.orders, noise, sens)
        # a fresh array of the orders' shape that nobody else holds, >= 0 for valid parameters;
        # checked all the same (NaN fails the comparison)
        if curve is None or not _MIN(curve) >= 0:
            return None
        curve.setflags(write=False)
        if self._size >= CACHE_SIZE:
            for d in self._cache.values():
                d.clear()
            self._size = 0
        per_class[key] = curve
        self._size += 1
        return curve

    def fresh(self, mechanism: Mechanism) -> np.ndarray:
        """The mechanism's curve, evaluated now, checked, exclusively owned and read-only."""
        curve = np.asarray(mechanism.rdp(self.orders), dtype=np.float64)
        # The ledger keeps the curve, so nobody else may hold it: a mechanism could keep (and
        # later change) the array it returns. An array that owns its data and is referenced
        # only here (this name and getrefcount's argument) is exclusively ours; anything else
        # is copied. Benchmark note: not copying the fresh arrays that the built-in curves
        # return saves about 1 µs of the 10–15 µs of a spend (benchmarks/bench_accountant.py,
        # one at a time).
        if curve.base is not None or sys.getrefcount(curve) > 2:
            curve = curve.copy()
        if curve.shape != self.orders.shape:
            raise ValueError(
                f"mechanism.rdp(orders) returned shape {curve.shape}, expected "
                f"{self.orders.shape}: a mechanism holding several settings must be spent one "
                "setting at a time (or through spend_batch)"
            )
        if not _MIN(curve) >= 0:  # also catches NaN (every comparison with NaN is False)
            raise ValueError(f"mechanism {mechanism!r} returned an invalid RDP curve")
        curve.setflags(write=False)
        return curve


def batch_curves(mechs: list[Mechanism], counts: list[int], orders: np.ndarray) -> np.ndarray:
    """The curves of ``mechs`` (times ``counts``) in rows ``1..n`` of an ``(n + 1, k)`` array.

    Row 0 is left for the caller (:meth:`ComposedCurve.plan_batch` puts the running sum there).
    Each class is evaluated once, vectorised (``cls.batch_rdp``); its rows are checked.
    """
    k = orders.size
    buf = np.empty((len(mechs) + 1, k))
    curves = buf[1:]
    for cls, where in _by_class(mechs):
        members = mechs if where is None else [mechs[i] for i in where]
        block = np.asarray(cls.batch_rdp(members, orders), np.float64)
        if block.shape != (len(members), k):
            raise ValueError(f"{cls.__name__}.batch_rdp returned shape {block.shape}")
        if not block.min() >= 0:  # also catches NaN
            raise ValueError("a mechanism of the batch returned an invalid RDP curve")
        if where is None:
            curves[:] = block
        else:
            curves[where] = block  # integer rows: faster than a boolean mask
    if any(c != 1 for c in counts):
        curves *= np.asarray(counts, dtype=np.float64)[:, None]
    return buf


def _by_class(mechs: list[Mechanism]) -> list[tuple[type, np.ndarray | None]]:
    """(class, rows of its members) per distinct class, in order of first appearance; the rows
    are None when every mechanism is of one class."""
    classes = [m.__class__ for m in mechs]
    distinct = list(dict.fromkeys(classes))
    if len(distinct) == 1:
        return [(distinct[0], None)]
    code = {c: j for j, c in enumerate(distinct)}
    codes = np.fromiter(map(code.__getitem__, classes), np.intp, len(classes))
    return [(c, np.flatnonzero(codes == j)) for j, c in enumerate(distinct)]
