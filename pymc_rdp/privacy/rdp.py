"""Rényi differential privacy: curves, conversion to (ε, δ)-DP and what a guarantee means.

A mechanism M is (α, ε)-RDP when D_α(M(D) ‖ M(D′)) ≤ ε for every pair of neighbouring data sets
(Mironov 2017, "Rényi Differential Privacy", CSF; arXiv:1702.07476). Its *RDP curve* is the map
α ↦ ε(α). Curves of adaptively composed mechanisms add order by order, so an accountant only needs
the curves on a common grid of orders and a conversion to (ε, δ)-DP at the end.

Every curve function here takes an array of orders (any shape, broadcast against the parameters)
and returns float64. Orders must be ≥ 1: the order 1 means the limit α → 1 (a Kullback–Leibler
bound) and ``inf`` means the limit α → ∞ (a pure-DP bound, ``inf`` where the mechanism has none).
All curves are evaluated in log space (``log1p``/``expm1``) and stay finite and warning-free up to
α = 1e6.

This module depends on numpy and scipy only. The mathematics, with sources, is in ``docs/rdp.md``.
"""

from __future__ import annotations

import bisect
import math
import weakref
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
from scipy import optimize, special

from pymc_rdp._validation import (
    as_float_array,
    check_delta,
    check_orders,
    check_positive,
    check_probability_open,
)

__all__ = [
    "DEFAULT_ORDERS",
    "advanced_composition",
    "best_event_probability_bound",
    "dirichlet",
    "event_probability_bounds",
    "gaussian",
    "group_privacy",
    "laplace",
    "posterior_odds_bound",
    "pure_dp",
    "randomized_response",
    "to_delta",
    "to_dp",
    "zcdp",
]

ArrayLike = Any
Curve = np.ndarray | Callable[[np.ndarray], ArrayLike]


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


# --------------------------------------------------------------------------------------------------
# Validation helpers local to this module
# --------------------------------------------------------------------------------------------------

# Read-only arrays of orders already validated here, by id (a weak reference guards against reuse
# of the id by another object after the array is gone).
_VALIDATED: dict[int, weakref.ref] = {}


def _frozen(arr: np.ndarray) -> bool:
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


def _curve_orders(orders: ArrayLike, name: str = "orders") -> np.ndarray:
    """Orders for a curve: float64, ≥ 1 (1 = the α → 1 limit), ``inf`` allowed."""
    if type(orders) is np.ndarray:
        ref = _VALIDATED.get(id(orders))
        if ref is not None and ref() is orders and not orders.flags.writeable:
            return orders
    arr = as_float_array(orders, name, allow_inf=True)
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if (arr < 1).any():
        raise ValueError(f"{name} must all be >= 1 (1 means the limit α → 1), got min {arr.min()}")
    if arr is orders and _frozen(arr):
        if len(_VALIDATED) >= 256:
            _VALIDATED.clear()
        _VALIDATED[id(arr)] = weakref.ref(arr)
    return arr


def _broadcast(*named: tuple[Any, str]) -> list[Any]:
    """Check that the arguments broadcast together and return them unchanged."""
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


def _positive(value: Any, name: str) -> Any:
    """Fast path of ``check_positive`` for plain finite floats (the common case in accounting)."""
    if isinstance(value, float | int) and not isinstance(value, bool):
        if math.isfinite(value) and value > 0:
            return float(value)
    return check_positive(value, name)


def _out(arr: np.ndarray) -> np.ndarray:
    """float64 array (0-d arrays are returned as 0-d arrays, never as Python scalars)."""
    return np.asarray(arr, dtype=np.float64)


def _split_orders(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Masks for α = 1 and α = ∞ and a copy of α with those entries replaced by a harmless 2."""
    at_one = a == 1.0
    at_inf = np.isinf(a)
    safe = np.where(at_one | at_inf, 2.0, a)
    return at_one, at_inf, safe


# Taylor coefficients: e^{−x} − 1 + x = x² Σ_j (−x)^j/(j + 2)!  and  log1p(u) − u = u² Σ_j (−u)^j
# · (−1)/(j + 2), truncated where the next term is below 1e-17 relative on the ranges used.
_EXP_COEF = np.array([1.0 / math.factorial(j + 2) for j in range(12)])
_LOG_COEF = np.array([-1.0 / (j + 2) for j in range(13)])


def _series(x: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """x² Σ_j coef[j] (−x)^j, vectorised without a Python loop over the terms."""
    powers = np.cumprod(np.broadcast_to(-x[:, None], (x.size, coef.size - 1)), axis=1)
    return x * x * (coef[0] + powers @ coef[1:])


def _exp_m1_plus(s: ArrayLike) -> np.ndarray:
    """e^{−s} − 1 + s for s ≥ 0 without cancellation (Taylor series below 0.1)."""
    s = np.asarray(s, dtype=np.float64)
    flat = s.reshape(-1)
    out = np.expm1(-flat) + flat
    small = flat < 0.1
    if small.any():
        out[small] = _series(flat[small], _EXP_COEF)
    return out.reshape(s.shape)


def _log1p_minus(u: ArrayLike) -> np.ndarray:
    """log(1 + u) − u for u ∈ (−1/2, 0] without cancellation (Taylor series for |u| < 0.05)."""
    u = np.asarray(u, dtype=np.float64)
    flat = u.reshape(-1)
    out = np.log1p(flat) - flat
    small = flat > -0.05
    if small.any():
        out[small] = _series(flat[small], _LOG_COEF)
    return out.reshape(u.shape)


# --------------------------------------------------------------------------------------------------
# Series for weak mechanisms, and per-grid constants
# --------------------------------------------------------------------------------------------------
#
# Both the Laplace and the randomized-response curve are cumulant generating functions of a
# two-point distribution, shifted so that it is a Bernoulli(q) variable B:
#
#   Laplace (Mironov 2017, Prop. 6), t = Δ₁/b, b = 2α − 1, q = (α − 1)/(2α − 1):
#       (α − 1) ε(α) = log E e^{tX},  X = (α − 1) − bB,
#   randomized response (Prop. 5), L = log(p/(1 − p)), λ = α − 1, q = 1 − p:
#       λ ε(α) = log E e^{λY},  Y = L − 2LB.
#
# With κₙ(q) the cumulants of Bernoulli(q) (κ₁ = q, κ_{n+1} = q(1 − q) dκₙ/dq), and d = 1 − 2q,
# κₙ = (1 − d²) Rₙ(d) where R₂ = 1/4 and R_{n+1}(d) = d Rₙ(d) − (1 − d²) Rₙ′(d)/2. Hence
#
#   Laplace:   ε(α) = Σ_{k≥2} a_k(α) t^k,   a_k(α) = 4α (−1)^k b^{k−2} R_k(1/b) / k!
#              (a polynomial in α: a₂ = α/2, a₃ = −α/6, ...),
#   RR:        ε(α) = (p − q)L + Σ_{n≥2} c_n(p) λ^{n−1},  c_n = 4pq Rₙ(p − q) (−2L)^n / n!.
#
# The series converge for |bt| < π and |2λL| < π (the nearest zero of 1 − q + q e^z), so on
# bt < 1/4 and 2λL < 1/4 the first _N_TERMS terms leave a remainder of about (1/(4π))^17 ≈ 2e-19
# relative. That is where the direct forms lose digits to cancellation: their relative error is
# about 5e-16 t/ε(α), resp. 5e-16 L/ε(α), and elsewhere t/ε ≤ 17 (Laplace, bt ≥ 1/4) and
# L/ε ≤ 16 (randomized response, (p − q) + λL/2 ≥ 1/16, as ε ≈ L((p − q) + λL/2) for small λL).
#
# The Laplace coefficients depend on the order only: they are computed once per grid of orders,
# exactly (integer arithmetic, one rounding). The randomized-response coefficients depend on p only
# and are well conditioned where they are used (|p − q| < 1/16); the powers λ^{n−1} are per grid.

_N_TERMS = 18  # series terms: powers 2 … 19 of t (Laplace), 1 … 18 of λ (randomized response)
_LAPLACE_S_MAX = 0.25  # series where (2α − 1) t < this
_RR_GAP_MAX = 0.0625  # series where (p − q) + (α − 1) L / 2 < this
_TABLE_MAX_ORDER = 1e12  # series tables stop here (coefficients grow like (2α)^k)
_MAX_GRID = 4096  # larger arrays of orders are evaluated elementwise, without cached tables
_T_POWERS = np.arange(2, _N_TERMS + 2, dtype=np.float64)
_LAM_POWERS = np.arange(1, _N_TERMS + 1, dtype=np.float64)
_D_POWERS = np.arange(_N_TERMS, dtype=np.float64)


def _cumulant_polynomials(n_max: int) -> list[list[Fraction]]:
    """Coefficients (in powers of d) of Rₙ(d) for n = 2 … n_max, exact."""
    polys = [[Fraction(1, 4)]]
    for _ in range(n_max - 2):
        r = polys[-1]
        deriv = [j * r[j] for j in range(1, len(r))]
        nxt = [Fraction(0)] * (len(r) + 1)
        for j, c in enumerate(r):  # d Rₙ
            nxt[j + 1] += c
        for j, c in enumerate(deriv):  # −(1 − d²) Rₙ′ / 2
            nxt[j] -= c / 2
            nxt[j + 2] += c / 2
        polys.append(nxt)
    return polys


_R_POLYS = _cumulant_polynomials(_N_TERMS + 1)
# randomized response: rows n = 2 … _N_TERMS + 1, columns powers of d = p − q
_RR_RMAT = np.array(
    [[float(c) for c in r] + [0.0] * (_N_TERMS - len(r)) for r in _R_POLYS], dtype=np.float64
)
_RR_SCALE = np.array(
    [(-2.0) ** n / math.factorial(n) for n in range(2, _N_TERMS + 2)], dtype=np.float64
)
# Laplace: the same polynomials over a common denominator, for exact integer evaluation
_R_INT: list[tuple[int, list[tuple[int, int]]]] = []
for _r in _R_POLYS:
    _den = math.lcm(*(c.denominator for c in _r))
    _R_INT.append((_den, [(j, int(c * _den)) for j, c in enumerate(_r) if c != 0]))


def _laplace_coefficients(alpha: float) -> list[float]:
    """a_k(α), k = 2 … _N_TERMS + 1, each correctly rounded (exact rational arithmetic)."""
    num, den = alpha.as_integer_ratio()  # α = num/den, den a power of 2
    big_b = 2 * num - den  # 2α − 1 = big_b/den
    pow_b = [1]
    pow_d = [1]
    for _ in range(_N_TERMS):
        pow_b.append(pow_b[-1] * big_b)
        pow_d.append(pow_d[-1] * den)
    out = []
    for i, (rden, terms) in enumerate(_R_INT):
        k = i + 2
        s = sum(c * pow_b[k - 2 - j] * pow_d[j] for j, c in terms)
        val = 4 * num * s / (math.factorial(k) * rden * pow_d[k - 1])
        out.append(-val if k % 2 else val)
    return out


class _Grid:
    """Order-dependent constants of a flat array of orders, kept in sorted order."""

    def __init__(self, flat: np.ndarray) -> None:
        perm = np.argsort(flat, kind="stable")
        a = flat[perm]
        self.perm: np.ndarray | None = None if np.all(perm == np.arange(a.size)) else perm
        self.size = a.size
        at_one = a == 1.0
        at_inf = np.isinf(a)
        self.has_one = bool(at_one[0])
        am = np.where(at_one | at_inf, 2.0, a)
        lam = am - 1.0
        b = 2.0 * am - 1.0
        self.inv = np.where(at_one | at_inf, 0.0, 1.0 / lam)  # 1/(α − 1), 0 at α = 1, ∞
        self.c1 = np.where(at_one, 0.0, np.where(at_inf, 0.5, lam / b))  # (α − 1)/(2α − 1)
        self.neg_b = np.where(at_one, -1.0, np.where(at_inf, -np.inf, -b))  # −(2α − 1)
        self.neg_2lam = np.where(at_one, 0.0, np.where(at_inf, -np.inf, -2.0 * lam))
        self.b_sorted = -self.neg_b  # 2α − 1, sorted
        self.lam_sorted = np.where(at_one, 0.0, np.where(at_inf, np.inf, lam))
        self.b_list = self.b_sorted.tolist()
        self.lam_list = self.lam_sorted.tolist()
        # series tables only for moderate grids (built at about 0.1 ms per order)
        self.n_table = (
            int(np.searchsorted(a, _TABLE_MAX_ORDER, side="right")) if a.size <= _MAX_GRID else 0
        )
        self.sorted_orders = a
        self._laplace: tuple[np.ndarray, int] = (np.empty((0, _N_TERMS)), 0)
        self._laplace_t: np.ndarray | None = None
        self._rr_t: np.ndarray | None = None
        self._rr: np.ndarray | None = None

    def laplace_table(self, rows: int) -> np.ndarray:
        """The Laplace coefficients a_k(α) of the first ``rows`` sorted orders (built lazily).

        The table and its row count are replaced together (one attribute), so a concurrent
        reader never sees rows that are not filled in yet.
        """
        table, done = self._laplace
        if rows <= done:
            return table[:rows]
        grown = np.empty((self.n_table, _N_TERMS))
        grown[:done] = table[:done]
        for i in range(done, rows):
            grown[i] = _laplace_coefficients(float(self.sorted_orders[i]))
        self._laplace = (grown, rows)
        return grown[:rows]

    def laplace_table_t(self, rows: int) -> np.ndarray:
        """Transpose of :meth:`laplace_table`, C-contiguous (fast right operand of a product)."""
        table_t = self._laplace_t
        if table_t is None or table_t.shape[1] < rows:
            table_t = np.ascontiguousarray(self.laplace_table(rows).T)
            self._laplace_t = table_t
        return table_t

    @property
    def rr_table(self) -> np.ndarray:
        """Powers λ^1 … λ^_N_TERMS of the sorted orders within the table range (rows)."""
        table = self._rr
        if table is None:
            lam = self.lam_sorted[: self.n_table]
            table = self._rr = lam[:, None] ** _LAM_POWERS
        return table

    @property
    def rr_table_t(self) -> np.ndarray:
        """Transpose of :attr:`rr_table`, C-contiguous."""
        table_t = self._rr_t
        if table_t is None:
            table_t = self._rr_t = np.ascontiguousarray(self.rr_table.T)
        return table_t

    def unsort(self, vals: np.ndarray) -> np.ndarray:
        """Values computed in sorted order, put back in the caller's order (last axis)."""
        if self.perm is None:
            return vals
        out = np.empty_like(vals)
        out[..., self.perm] = vals
        return out


_GRIDS: dict[bytes, _Grid] = {}
_GRIDS_BY_ID: dict[int, tuple[weakref.ref, _Grid]] = {}


def _grid_of(a: np.ndarray) -> _Grid:
    """Cached constants for the orders ``a`` (any shape, flattened), by identity or content."""
    hit = _GRIDS_BY_ID.get(id(a))
    if hit is not None and hit[0]() is a and not a.flags.writeable:
        return hit[1]
    flat = a.reshape(-1)
    if flat.size > _MAX_GRID:
        return _Grid(flat)
    key = flat.tobytes()
    grid = _GRIDS.get(key)
    if grid is None:
        grid = _Grid(flat)
        if len(_GRIDS) >= 64:
            del _GRIDS[next(iter(_GRIDS))]
        _GRIDS[key] = grid
    if _frozen(a):
        if len(_GRIDS_BY_ID) >= 256:
            _GRIDS_BY_ID.clear()
        _GRIDS_BY_ID[id(a)] = (weakref.ref(a), grid)
    return grid


def _laplace_on_grid(g: _Grid, t: float) -> np.ndarray | None:
    """Laplace curve for one scalar t on a grid (sorted order); ``None`` if out of table range."""
    m = bisect.bisect_left(g.b_list, _LAPLACE_S_MAX / t)  # orders with (2α − 1) t < 1/4
    if m > g.n_table:
        return None
    # direct form on the whole grid (cheaper than slicing), then the series on the first m orders
    v = np.multiply(g.neg_b, t)
    np.exp(v, out=v)  # e^{−s} − 1 is accurate to 4 ulp for s ≥ 1/4
    v -= 1.0
    v *= g.c1
    np.log1p(v, out=v)
    v *= g.inv
    v += t
    if m:
        np.matmul(g.laplace_table(m), t**_T_POWERS, out=v[:m])
    elif g.has_one:
        v[0] = t + math.expm1(-t)
    return v


_BLOCK_ROWS = 256  # rows per block in the batch paths (keeps the working set in cache)


def _laplace_outer(g: _Grid, t: np.ndarray) -> np.ndarray | None:
    """Laplace curves for a vector of t (rows) on a grid (columns, sorted order).

    Rows are processed in blocks of similar t, so that each block evaluates the direct form only
    right of its first series column and the series (one matrix product) only left of its last.
    """
    m = np.searchsorted(g.b_sorted, _LAPLACE_S_MAX / t)  # per row: orders using the series
    width = int(m.max())
    if width > g.n_table:
        return None
    # transposed table: products with a C-contiguous right operand avoid a slow BLAS path
    table_t = g.laplace_table_t(width)
    order = np.argsort(m, kind="stable")
    m_sorted = m[order]
    t_sorted = t[order]
    out = np.empty((t.size, g.size))
    scratch = np.empty((min(_BLOCK_ROWS, t.size), g.size))
    for r0 in range(0, t.size, _BLOCK_ROWS):
        r1 = min(r0 + _BLOCK_ROWS, t.size)
        v = scratch[: r1 - r0]
        tb = t_sorted[r0:r1, None]
        mb = m_sorted[r0:r1]
        lo, hi = int(mb[0]), int(mb[-1])
        if lo < g.size:
            d = v[:, lo:]
            np.multiply(tb, g.neg_b[lo:], out=d)
            np.exp(d, out=d)
            d -= 1.0
            d *= g.c1[lo:]
            np.log1p(d, out=d)
            d *= g.inv[lo:]
            d += tb
            if lo == 0 and g.has_one:
                v[:, 0] = tb[:, 0] + np.expm1(-tb[:, 0])
        if hi:
            # rows without series terms get t = 0 (no overflow in the powers; masked out below)
            series = (np.where(mb > 0, tb[:, 0], 0.0)[:, None] ** _T_POWERS) @ table_t[:, :hi]
            np.copyto(v[:, :hi], series, where=np.arange(hi) < mb[:, None])
        out[order[r0:r1]] = v
    return out


def _rr_coefficients(
    p: np.ndarray, q: np.ndarray, gap: np.ndarray, big_l: np.ndarray
) -> np.ndarray:
    """c_n(p), n = 2 … _N_TERMS + 1, for each p (rows)."""
    r = (gap[:, None] ** _D_POWERS) @ _RR_RMAT.T
    return (4.0 * p * q)[:, None] * r * _RR_SCALE * big_l[:, None] ** _T_POWERS


def _rr_on_grid(g: _Grid, p: float) -> np.ndarray | None:
    """Randomized-response curve for one scalar p on a grid (sorted order)."""
    q = 1.0 - p
    gap = 2.0 * p - 1.0  # p − q, exact for p in (1/2, 1)
    big_l = math.log1p(gap / q)
    m = 0
    if gap < _RR_GAP_MAX:  # series where (p − q) + λL/2 < 1/16
        m = bisect.bisect_left(g.lam_list, 2.0 * (_RR_GAP_MAX - gap) / big_l)
        if m > g.n_table:
            return None
    # direct form on the whole grid, then the series on the first m orders
    v = np.multiply(g.neg_2lam, big_l)
    np.expm1(v, out=v)
    v *= q
    np.log1p(v, out=v)
    v *= g.inv
    v += big_l
    if m:
        c = _RR_RMAT @ (gap**_D_POWERS)  # Rₙ(p − q)
        c *= big_l**_T_POWERS
        c *= _RR_SCALE * (4.0 * p * q)
        head = v[:m]
        np.matmul(g.rr_table[:m], c, out=head)
        head += gap * big_l
    elif g.has_one:
        v[0] = gap * big_l
    return v


def _rr_outer(g: _Grid, p: np.ndarray) -> np.ndarray | None:
    """Randomized-response curves for a vector of p (rows) on a grid (columns, sorted order).

    Blocks of rows with similar series ranges, as in :func:`_laplace_outer`.
    """
    q = 1.0 - p
    gap = 2.0 * p - 1.0
    big_l = np.log1p(gap / q)
    kl = gap * big_l
    # per row: orders using the series, (p − q) + λL/2 < 1/16 (none when p − q ≥ 1/16)
    m = np.searchsorted(g.lam_sorted, 2.0 * np.maximum(_RR_GAP_MAX - gap, 0.0) / big_l)
    width = int(m.max())
    if width > g.n_table:
        return None
    lam_pow_t = g.rr_table_t  # C-contiguous right operand (see _laplace_outer)
    order = np.argsort(m, kind="stable")
    m_sorted = m[order]
    out = np.empty((p.size, g.size))
    scratch = np.empty((min(_BLOCK_ROWS, p.size), g.size))
    for r0 in range(0, p.size, _BLOCK_ROWS):
        r1 = min(r0 + _BLOCK_ROWS, p.size)
        rows = order[r0:r1]
        v = scratch[: r1 - r0]
        mb = m_sorted[r0:r1]
        lo, hi = int(mb[0]), int(mb[-1])
        lb = big_l[rows, None]
        if lo < g.size:
            d = v[:, lo:]
            np.multiply(lb, g.neg_2lam[lo:], out=d)
            np.expm1(d, out=d)
            d *= q[rows, None]
            np.log1p(d, out=d)
            d *= g.inv[lo:]
            d += lb
            if lo == 0 and g.has_one:
                v[:, 0] = kl[rows]
        if hi:
            sel = rows[mb > 0]
            c = np.zeros((rows.size, _N_TERMS))
            c[mb > 0] = _rr_coefficients(p[sel], q[sel], gap[sel], big_l[sel])
            series = c @ lam_pow_t[:, :hi]
            series += kl[rows, None]
            np.copyto(v[:, :hi], series, where=np.arange(hi) < mb[:, None])
        out[rows] = v
    return out


# --------------------------------------------------------------------------------------------------
# Curves
# --------------------------------------------------------------------------------------------------


def gaussian(orders: ArrayLike, sigma: ArrayLike, sensitivity: ArrayLike = 1.0) -> np.ndarray:
    r"""RDP curve of the Gaussian mechanism.

    .. math:: \varepsilon(\alpha) = \frac{\alpha\,\Delta_2^2}{2\sigma^2}

    (Mironov 2017, Proposition 7 / Table II). The α → 1 limit is the KL divergence Δ₂²/(2σ²);
    at α = ∞ the curve is ``inf`` (the Gaussian mechanism is not pure-DP).

    Parameters
    ----------
    orders : array_like
        Rényi orders, ≥ 1 (``inf`` allowed).
    sigma : array_like
        Standard deviation of the noise, > 0.
    sensitivity : array_like, default 1.0
        ℓ2 sensitivity Δ₂ of the query, > 0.

    Returns
    -------
    numpy.ndarray
        ε(α), float64, of the broadcast shape of the inputs.
    """
    a = _curve_orders(orders)
    s = _positive(sigma, "sigma")
    d = _positive(sensitivity, "sensitivity")
    if isinstance(s, float) and isinstance(d, float):
        out = np.multiply(a, (d / s) ** 2 / 2.0)
        return out if a.ndim else np.asarray(out)
    a, s, d = _broadcast((a, "orders"), (s, "sigma"), (d, "sensitivity"))
    # the parameter part first: one full-size product when a batch of curves is evaluated
    return _out(a * ((d / s) ** 2 / 2.0))


def laplace(orders: ArrayLike, scale: ArrayLike, sensitivity: ArrayLike = 1.0) -> np.ndarray:
    r"""RDP curve of the Laplace mechanism with scale b and ℓ1 sensitivity Δ₁.

    With t = Δ₁ / b (Mironov 2017, Proposition 6 / Table II),

    .. math::
        \varepsilon(\alpha) = \frac{1}{\alpha-1}\log\Big[\frac{\alpha}{2\alpha-1}e^{(\alpha-1)t}
            + \frac{\alpha-1}{2\alpha-1}e^{-\alpha t}\Big]
          = t + \frac{1}{\alpha-1}\,\mathrm{log1p}\Big[\frac{\alpha-1}{2\alpha-1}\,
            \mathrm{expm1}\big(-(2\alpha-1)t\big)\Big],

    the second form being the one evaluated (no overflow for any α) where (2α − 1) t ≥ 1/4.
    Below, where that form cancels, the curve is the power series Σ_k a_k(α) t^k of the cumulant
    generating function of a shifted Bernoulli variable (18 terms; coefficients computed exactly
    once per grid of orders), so weak mechanisms keep full relative precision. Limits: α → 1
    gives t + e^{−t} − 1, α = ∞ gives t (the pure-DP guarantee).

    A scalar parameter costs a few vector operations on the grid; rows of parameters against a
    row of orders (shapes (n, 1) and (k,)) are evaluated as one batch.

    Parameters
    ----------
    orders : array_like
        Rényi orders, ≥ 1 (``inf`` allowed).
    scale : array_like
        Laplace scale b, > 0.
    sensitivity : array_like, default 1.0
        ℓ1 sensitivity Δ₁, > 0.

    Returns
    -------
    numpy.ndarray
        ε(α), float64, of the broadcast shape of the inputs.
    """
    a = _curve_orders(orders)
    b = _positive(scale, "scale")
    d = _positive(sensitivity, "sensitivity")
    if isinstance(b, float) and isinstance(d, float):
        t = d / b
        grid = _grid_of(a)
        val = _laplace_on_grid(grid, t)
        if val is not None:
            return grid.unsort(val).reshape(a.shape)
        return _laplace_elementwise(a, t)
    a, b, d = _broadcast((a, "orders"), (b, "scale"), (d, "sensitivity"))
    t = np.asarray(d / b, dtype=np.float64)
    return _dispatch(a, t, _laplace_on_grid, _laplace_outer, _laplace_elementwise)


def _dispatch(
    a: np.ndarray,
    x: np.ndarray,
    on_grid: Callable[[_Grid, float], np.ndarray | None],
    outer: Callable[[_Grid, np.ndarray], np.ndarray | None],
    elementwise: Callable[[np.ndarray, Any], np.ndarray],
) -> np.ndarray:
    """Evaluate a one-parameter curve for orders ``a`` and parameter array ``x`` (broadcast).

    One parameter value: the grid path. Orders along the last axis only and parameters constant
    along it (the layout of a batch of curves): the outer-product path. Otherwise elementwise.
    """
    shape = np.broadcast_shapes(a.shape, x.shape)
    if x.size == 1:
        grid = _grid_of(a)
        val = on_grid(grid, float(x.reshape(-1)[0]))
        if val is not None:
            return grid.unsort(val).reshape(shape)
    elif x.size > 1 and a.ndim >= 1 and a.size == a.shape[-1] and x.ndim >= 1 and x.shape[-1] == 1:
        grid = _grid_of(a)
        val = outer(grid, x.reshape(-1))
        if val is not None:
            return grid.unsort(val).reshape(shape)
    return elementwise(a, x)


def _laplace_elementwise(a: np.ndarray, t: Any) -> np.ndarray:
    """Laplace curve elementwise for any broadcastable orders and t (no per-grid tables)."""
    at_one, at_inf, am = _split_orders(a)
    am1 = am - 1.0
    two_am1 = 2.0 * am - 1.0
    s = two_am1 * t
    u = am1 / two_am1 * np.expm1(-s)
    if np.all(t >= 0.05):
        # relative rounding error of the direct form is about 1e-16 t/ε(α) ≤ 1e-14 here
        val = t + np.log1p(u) / am1
        kl = t + np.expm1(-t)
    else:
        # t + log1p(u)/(α−1) = [e^{−s} − 1 + s]/(2α − 1) + [log1p(u) − u]/(α − 1): both brackets
        # are evaluated without cancellation, so small t keeps full relative precision.
        val = _exp_m1_plus(s) / two_am1 + _log1p_minus(u) / am1
        kl = _exp_m1_plus(t)
    val = np.where(at_one, kl, val)
    val = np.where(at_inf, t, val)
    return _out(val)


def randomized_response(orders: ArrayLike, p: ArrayLike) -> np.ndarray:
    r"""RDP curve of binary randomized response that reports the truth with probability p.

    With L = log(p / (1 − p)) (Mironov 2017, Proposition 5 / Table II),

    .. math::
        \varepsilon(\alpha) = \frac{1}{\alpha-1}\log\big[p^\alpha(1-p)^{1-\alpha}
            + (1-p)^\alpha p^{1-\alpha}\big]
          = L + \frac{1}{\alpha-1}\,\mathrm{log1p}\big[(1-p)\,\mathrm{expm1}(-2(\alpha-1)L)\big].

    The second form is evaluated except where p − q and (α − 1) L are both small: there the
    curve is (p − q) L + Σ_n c_n(p) (α − 1)^{n−1}, the power series of the cumulant generating
    function of the privacy loss (18 terms), which keeps full relative precision for p near 1/2.
    Limits: α → 1 gives (2p − 1) L, α = ∞ gives L.

    Parameters
    ----------
    orders : array_like
        Rényi orders, ≥ 1 (``inf`` allowed).
    p : array_like
        Probability of reporting the true bit, in the open interval (1/2, 1).

    Returns
    -------
    numpy.ndarray
        ε(α), float64, of the broadcast shape of the inputs.
    """
    a = _curve_orders(orders)
    if isinstance(p, float) and 0.5 < p < 1.0:
        grid = _grid_of(a)
        val = _rr_on_grid(grid, p)
        if val is not None:
            return grid.unsort(val).reshape(a.shape)
        return _rr_elementwise(a, p)
    pp = check_probability_open(p, "p", 0.5, 1.0)
    a, pp = _broadcast((a, "orders"), (pp, "p"))
    return _dispatch(a, pp, _rr_on_grid, _rr_outer, _rr_elementwise)


def _rr_elementwise(a: np.ndarray, pp: Any) -> np.ndarray:
    """Randomized-response curve elementwise for any broadcastable orders and p."""
    q = 1.0 - pp
    gap = 2.0 * pp - 1.0  # p − q, exact for p in (1/2, 1)
    big_l = np.log1p(gap / q)
    at_one, at_inf, am = _split_orders(a)
    am1 = am - 1.0
    w = 2.0 * am1 * big_l
    u = q * np.expm1(-w)
    if np.all(gap >= 0.05):
        # relative rounding error of the direct form is about 1e-16 L/ε(α) ≤ 1e-14 here
        val = big_l + np.log1p(u) / am1
    else:
        # L + log1p(u)/(α−1) = (p − q)L + [q(e^{−w} − 1 + w) + log1p(u) − u]/(α − 1), a sum of
        # terms without cancellation (the bracket is ≈ 2pq(α − 1)²L² > 0).
        val = gap * big_l + (q * _exp_m1_plus(w) + _log1p_minus(u)) / am1
    val = np.where(at_one, gap * big_l, val)
    val = np.where(at_inf, big_l, val)
    return _out(val)


def pure_dp(orders: ArrayLike, epsilon: ArrayLike) -> np.ndarray:
    r"""RDP curve implied by pure ε-DP.

    .. math:: \varepsilon(\alpha) = \min\big(\varepsilon,\ \alpha\varepsilon^2/2\big)

    The first term is monotonicity of D_α in α (D_α ≤ D_∞ ≤ ε, Mironov 2017 Prop. 1); the second
    follows from ε-DP ⇒ (ε²/2)-zCDP (Bun & Steinke 2016, Proposition 3.3).

    Parameters
    ----------
    orders : array_like
        Rényi orders, ≥ 1 (``inf`` allowed; the value there is ε).
    epsilon : array_like
        Pure-DP parameter, > 0.

    Returns
    -------
    numpy.ndarray
        ε(α), float64, of the broadcast shape of the inputs.
    """
    a = _curve_orders(orders)
    e = _positive(epsilon, "epsilon")
    a, e = _broadcast((a, "orders"), (e, "epsilon"))
    return _out(np.minimum(e, a * e * e / 2.0))


def zcdp(orders: ArrayLike, rho: ArrayLike) -> np.ndarray:
    r"""RDP curve of a ρ-zCDP mechanism: ε(α) = ρα (Bun & Steinke 2016, Definition 1.1).

    Parameters
    ----------
    orders : array_like
        Rényi orders, ≥ 1 (``inf`` allowed; the value there is ``inf``).
    rho : array_like
        zCDP parameter, > 0.

    Returns
    -------
    numpy.ndarray
        ε(α), float64, of the broadcast shape of the inputs.
    """
    a = _curve_orders(orders)
    r = _positive(rho, "rho")
    a, r = _broadcast((a, "orders"), (r, "rho"))
    return _out(r * a)


def dirichlet(
    orders: ArrayLike,
    r: ArrayLike,
    alpha: ArrayLike,
    l2_sensitivity: ArrayLike,
    linf_sensitivity: ArrayLike,
) -> np.ndarray:
    r"""RDP bound of the Dirichlet mechanism y ~ Dirichlet(r f(x) + α) (Ponnoprat 2023, Theorem 1).

    .. math::
        \varepsilon(\lambda) = \frac{\lambda r^2 \Delta_2^2}{2}\,
            \psi'\big(\alpha - (\lambda-1)\, r\, \Delta_\infty\big)
        \quad\text{if } \alpha > (\lambda-1) r \Delta_\infty, \qquad +\infty \text{ otherwise},

    where ψ′ is the trigamma function and α the smallest concentration of the base measure.
    At λ = 1 the bound is r²Δ₂²ψ′(α)/2; at λ = ∞ it is ``inf``.

    Parameters
    ----------
    orders : array_like
        Rényi orders λ, ≥ 1 (``inf`` allowed).
    r : array_like
        Scale of the sufficient statistic, > 0.
    alpha : array_like
        Smallest concentration parameter of the base measure, > 0.
    l2_sensitivity, linf_sensitivity : array_like
        ℓ2 and ℓ∞ sensitivities Δ₂ and Δ∞ of f, > 0.

    Returns
    -------
    numpy.ndarray
        ε(λ), float64, of the broadcast shape of the inputs; ``inf`` where the bound does not hold.
    """
    lam = _curve_orders(orders)
    rr = _positive(r, "r")
    al = _positive(alpha, "alpha")
    d2 = _positive(l2_sensitivity, "l2_sensitivity")
    dinf = _positive(linf_sensitivity, "linf_sensitivity")
    lam, rr, al, d2, dinf = _broadcast(
        (lam, "orders"),
        (rr, "r"),
        (al, "alpha"),
        (d2, "l2_sensitivity"),
        (dinf, "linf_sensitivity"),
    )
    finite = np.isfinite(lam)
    lam_safe = np.where(finite, lam, 1.0)
    x = al - (lam_safe - 1.0) * rr * dinf
    valid = finite & (x > 0)
    trigamma = special.polygamma(1, np.where(valid, x, 1.0))
    val = np.where(valid, lam_safe * (rr * d2) ** 2 / 2.0 * trigamma, np.inf)
    return _out(val)


# --------------------------------------------------------------------------------------------------
# Conversion to (ε, δ)-DP
# --------------------------------------------------------------------------------------------------

_METHODS = ("bbghs", "mironov")


# Read-only arrays already accepted as conversion orders (every order > 1), by id.
_VALIDATED_CONVERSION: dict[int, weakref.ref] = {}


def _conversion_inputs(orders: ArrayLike, rdp: Curve) -> tuple[np.ndarray, np.ndarray]:
    # read-only grids already checked here (the shared default one included) skip the checks
    ref = _VALIDATED_CONVERSION.get(id(orders))
    if ref is not None and ref() is orders and not orders.flags.writeable:
        a = orders
    else:
        a = check_orders(orders, "orders")
        if a is orders and a.ndim <= 1 and _frozen(a):
            if len(_VALIDATED_CONVERSION) >= 256:
                _VALIDATED_CONVERSION.clear()
            _VALIDATED_CONVERSION[id(a)] = weakref.ref(a)
    if a.ndim == 0:
        a = a.reshape(1)
    if a.ndim != 1:
        raise ValueError(f"orders must be one-dimensional, got shape {a.shape}")
    if callable(rdp):
        r = as_float_array(rdp(a), "rdp", allow_inf=True)
    else:
        r = as_float_array(rdp, "rdp", allow_inf=True)
        if r.ndim == 0 and a.size == 1:
            r = r.reshape(1)
    if r.shape != a.shape:
        raise ValueError(f"rdp must have the same shape as orders: {r.shape} vs {a.shape}")
    if (r < 0).any():
        raise ValueError(f"rdp must be >= 0 at every order, got min {r.min()}")
    return a, r


_ORDER_TERMS: dict[bytes, tuple[np.ndarray, np.ndarray, np.ndarray, bool]] = {}


def _order_terms(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """Order-only terms of the conversion, cached per grid of orders (grids are reused a lot).

    Returns 1/(α − 1), log(1 − 1/α) − log(α)/(α − 1) (0 at α = ∞), the α = ∞ mask and whether any
    order is infinite.
    """
    key = a.tobytes()
    terms = _ORDER_TERMS.get(key)
    if terms is None:
        at_inf = np.isinf(a)
        am = np.where(at_inf, 2.0, a)
        inv = np.where(at_inf, 0.0, 1.0 / (am - 1.0))
        shift = np.where(at_inf, 0.0, np.log1p(-1.0 / am) - np.log(am) * inv)
        for arr in (inv, shift, at_inf):
            arr.setflags(write=False)
        terms = (inv, shift, at_inf, bool(at_inf.any()))
        if len(_ORDER_TERMS) > 64:
            _ORDER_TERMS.clear()
        _ORDER_TERMS[key] = terms
    return terms


def _epsilons(a: np.ndarray, r: np.ndarray, log_delta: np.ndarray, method: str) -> np.ndarray:
    """ε at every (δ, order) pair: shape (len(log_delta), len(a)). No minimisation."""
    inv, shift, _, _ = _order_terms(a)
    ld = log_delta[:, None]
    if method == "bbghs":
        # ε(α) + log(1 − 1/α) − (log δ + log α)/(α − 1); at α = ∞ this is ε(∞).
        eps = (r + shift) - ld * inv
        # KL fallback (dp-accounting): δ ≥ sqrt(1 − e^{−KL}) ⇒ (0, δ)-DP, and KL ≤ ε(α).
        eps = np.where(np.exp(2.0 * ld) + np.expm1(-r) > 0, 0.0, eps)
    else:
        eps = r - ld * inv
    return eps


def _single_epsilon(alpha: float, rdp_value: float, log_delta: float, method: str) -> float:
    """ε of the conversion at one finite order α > 1 (scalar version of :func:`_epsilons`)."""
    if not math.isfinite(rdp_value):
        return math.inf
    if method == "bbghs":
        if math.exp(2.0 * log_delta) + math.expm1(-rdp_value) > 0:
            return 0.0
        return rdp_value + math.log1p(-1.0 / alpha) - (log_delta + math.log(alpha)) / (alpha - 1.0)
    return rdp_value - log_delta / (alpha - 1.0)


def _refine(
    a: np.ndarray,
    r: np.ndarray,
    rdp: Curve,
    i: int,
    log_delta: float,
    method: str,
) -> tuple[float, float]:
    """Minimise the conversion over α continuously on the grid cells next to a[i].

    With a callable curve it is evaluated exactly. With an array it is bounded between grid orders
    through the convexity of α ↦ (α − 1) D_α (the log-moment-generating function of the privacy
    loss): linear interpolation of (α − 1) ε(α) between neighbouring grid orders is a valid bound.
    """
    best = (math.inf, float(a[i]))
    for j0, j1 in ((i - 1, i), (i, i + 1)):
        if j0 < 0 or j1 >= a.size:
            continue
        lo, hi = float(a[j0]), float(a[j1])
        if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
            continue
        if callable(rdp):

            def objective(x: float) -> float:
                val = float(np.asarray(rdp(np.array([x])), dtype=np.float64).reshape(-1)[0])
                return _single_epsilon(x, val, log_delta, method)

        else:
            k0, k1 = (lo - 1.0) * float(r[j0]), (hi - 1.0) * float(r[j1])
            if not (math.isfinite(k0) and math.isfinite(k1)):
                continue

            def objective(x: float, lo=lo, hi=hi, k0=k0, k1=k1) -> float:
                w = (x - lo) / (hi - lo)
                kx = (1.0 - w) * k0 + w * k1
                return _single_epsilon(x, kx / (x - 1.0), log_delta, method)

        res = optimize.minimize_scalar(
            objective, bounds=(lo, hi), method="bounded", options={"xatol": 1e-10 * hi}
        )
        if res.fun < best[0]:
            best = (float(res.fun), float(res.x))
    return best


def to_dp(
    orders: ArrayLike,
    rdp: Curve,
    delta: ArrayLike,
    method: str = "bbghs",
    refine: bool = False,
) -> tuple[Any, Any]:
    r"""Convert an RDP curve to (ε, δ)-DP, minimising over the orders.

    ``method="bbghs"`` (default) is Balle, Barthe, Gaboardi, Hsu & Sato 2020 (Theorem 21),
    equivalently Canonne, Kamath & Steinke 2020 (Proposition 12 in v4 of arXiv:2004.00010):

    .. math:: \varepsilon = \min_\alpha\ \varepsilon(\alpha) + \log\frac{\alpha-1}{\alpha}
              - \frac{\log\delta + \log\alpha}{\alpha-1},

    with dp-accounting's additional rule ε = 0 where δ² + expm1(−ε(α)) > 0 (a KL-divergence bound:
    δ ≥ sqrt(1 − e^{−KL}) ≥ total variation). It is used at every order > 1 and is never looser than
    dp-accounting's ``compute_epsilon`` on the same curve and orders. ``method="mironov"`` is
    Mironov 2017, Proposition 3: ε = min_α ε(α) + log(1/δ)/(α − 1). At α = ∞ both give ε(∞).

    Parameters
    ----------
    orders : array_like
        One-dimensional array of orders, all > 1 (``inf`` allowed).
    rdp : array_like or callable
        The curve on ``orders`` (same shape, ≥ 0, ``inf`` allowed), or a callable mapping an array
        of orders to the curve there.
    delta : float or array_like
        Target δ in (0, 1); an array gives arrays back.
    method : {"bbghs", "mironov"}
        Conversion rule.
    refine : bool, default False
        Also minimise continuously over the order on the two grid cells next to the best grid
        order. A callable curve is evaluated exactly there; an array curve is bounded between grid
        orders by the convexity of (α − 1) ε(α) in α (see ``docs/rdp.md``). Never worse than the
        grid result.

    Returns
    -------
    epsilon, best_order : float or numpy.ndarray
        The smallest ε found (≥ 0) and the order that attains it, shaped like ``delta``.
    """
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    a, r = _conversion_inputs(orders, rdp)
    if isinstance(delta, float) and 0.0 < delta < 1.0:  # fast path for the common scalar case
        d = np.asarray(delta)
    else:
        d = check_delta(delta)
    log_d = np.log(d.reshape(-1))
    if refine:
        order_idx = np.argsort(a, kind="stable")
        a, r = a[order_idx], r[order_idx]
    eps = _epsilons(a, r, log_d, method)
    idx = np.argmin(eps, axis=1)
    rows = np.arange(idx.size)
    best_eps = np.maximum(eps[rows, idx], 0.0)
    best_ord = a[idx]
    if refine:
        for k in range(idx.size):
            if best_eps[k] == 0.0 or not np.isfinite(best_eps[k]):
                continue
            e_ref, a_ref = _refine(a, r, rdp, int(idx[k]), float(log_d[k]), method)
            if e_ref < best_eps[k]:
                best_eps[k], best_ord[k] = max(e_ref, 0.0), a_ref
    if d.ndim == 0:
        return float(best_eps[0]), float(best_ord[0])
    return best_eps.reshape(d.shape), best_ord.reshape(d.shape)


def to_delta(orders: ArrayLike, rdp: Curve, epsilon: ArrayLike) -> tuple[Any, Any]:
    r"""The smallest δ such that an RDP curve implies (ε, δ)-DP, minimised over the orders.

    The inverse of the ``bbghs`` rule of :func:`to_dp` (Canonne, Kamath & Steinke 2020, Prop. 12;
    as dp-accounting's ``compute_delta``):

    .. math:: \log\delta = \min_\alpha \min\Big\{(\alpha-1)\big(\varepsilon(\alpha) - \varepsilon
              + \log(1 - 1/\alpha)\big) - \log\alpha,\ \tfrac12\log\big(1 - e^{-\varepsilon(\alpha)}
              \big)\Big\},

    the second term being the KL bound. At α = ∞, δ = 0 when ε(∞) ≤ ε. The result is capped at 1.

    Parameters
    ----------
    orders : array_like
        One-dimensional array of orders, all > 1 (``inf`` allowed).
    rdp : array_like or callable
        The curve on ``orders`` or a callable returning it.
    epsilon : float or array_like
        Target ε > 0; an array gives arrays back.

    Returns
    -------
    delta, best_order : float or numpy.ndarray
        δ in [0, 1] and the order that attains it, shaped like ``epsilon``.
    """
    a, r = _conversion_inputs(orders, rdp)
    e = np.asarray(_positive(epsilon, "epsilon"), dtype=np.float64)
    ev = e.reshape(-1)[:, None]
    at_inf = np.isinf(a)
    am = np.where(at_inf, 2.0, a)
    finite_r = np.isfinite(r)
    # Curves beyond 1e200 give δ = 1 anyway; clipping keeps the products below overflow.
    rs = np.minimum(np.where(finite_r, r, 0.0), 1e200)
    log_d = (am - 1.0) * (rs - ev + np.log1p(-1.0 / am)) - np.log(am)
    log_d = np.where(finite_r, log_d, np.inf)
    if at_inf.any():
        log_d = np.where(at_inf, np.where(r <= ev, -np.inf, np.inf), log_d)
    # KL bound δ ≤ sqrt(1 − e^{−ε(α)}): −∞ for a zero curve, 0 (δ = 1) for an infinite one.
    usable = (r > 0) & finite_r
    kl = 0.5 * np.log1p(-np.exp(-np.where(usable, r, 1.0)))
    kl = np.where(usable, kl, np.where(r > 0, 0.0, -np.inf))
    log_d = np.minimum(log_d, kl)
    idx = np.argmin(log_d, axis=1)
    rows = np.arange(idx.size)
    delta = np.minimum(np.exp(log_d[rows, idx]), 1.0)
    best = a[idx]
    if e.ndim == 0:
        return float(delta[0]), float(best[0])
    return delta.reshape(e.shape), best.reshape(e.shape)


# --------------------------------------------------------------------------------------------------
# What an RDP guarantee means: events, odds, groups, composition of pure-DP mechanisms
# --------------------------------------------------------------------------------------------------


def _event_orders(order: ArrayLike) -> np.ndarray:
    return check_orders(order, "order", allow_inf=True)


def event_probability_bounds(
    p: ArrayLike, order: ArrayLike, epsilon: ArrayLike
) -> tuple[np.ndarray, np.ndarray]:
    r"""Range of an event's probability on a neighbour, given its baseline probability p.

    For an (α, ε)-RDP mechanism, neighbours D, D′ and any event A with Pr[M(D′) ∈ A] = p
    (Mironov 2017, §VII, Proposition 10 applied in both directions),

    .. math:: e^{-\varepsilon}\, p^{\alpha/(\alpha-1)} \le \Pr[M(D) \in A]
              \le \min\big\{1, (e^{\varepsilon} p)^{(\alpha-1)/\alpha}\big\}.

    At α = ∞ this is the pure-DP range [e^{−ε} p, min(1, e^{ε} p)]. Example from the paper:
    (α, ε) = (10, 0.1) and p = 1e-6 give [1.95e-7, 4.36e-6].

    Parameters
    ----------
    p : array_like
        Baseline probability, in [0, 1].
    order : array_like
        Rényi order α > 1 (``inf`` allowed).
    epsilon : array_like
        RDP parameter at that order, > 0.

    Returns
    -------
    low, high : numpy.ndarray
        Bounds, float64, of the broadcast shape of the inputs.
    """
    pp = as_float_array(p, "p")
    if ((pp < 0) | (pp > 1)).any():
        raise ValueError("p must lie in [0, 1]")
    a = _event_orders(order)
    e = _positive(epsilon, "epsilon")
    pp, a, e = _broadcast((pp, "p"), (a, "order"), (e, "epsilon"))
    at_inf = np.isinf(a)
    am = np.where(at_inf, 2.0, a)
    frac = np.where(at_inf, 1.0, (am - 1.0) / am)  # (α − 1)/α
    positive = pp > 0
    log_p = np.log(np.where(positive, pp, 1.0))
    high = np.where(positive, np.exp(np.minimum(frac * (e + log_p), 0.0)), 0.0)
    low = np.where(positive, np.exp(-e + log_p / frac), 0.0)
    return _out(np.minimum(low, pp)), _out(high)


def best_event_probability_bound(orders: ArrayLike, rdp: Curve, p: ArrayLike) -> tuple[Any, Any]:
    r"""Smallest upper bound over the orders on an event's probability, from a whole RDP curve.

    .. math:: \min_\alpha\ \min\big\{1, \exp\big(\tfrac{\alpha-1}{\alpha}(\varepsilon(\alpha)
              + \log p)\big)\big\}

    (Mironov 2017, Proposition 10, at the best order).

    Parameters
    ----------
    orders : array_like
        One-dimensional array of orders > 1 (``inf`` allowed).
    rdp : array_like or callable
        The curve on ``orders`` or a callable returning it.
    p : float or array_like
        Baseline probabilities in (0, 1]; an array gives arrays back.

    Returns
    -------
    high, best_order : float or numpy.ndarray
        The bound and the order that attains it, shaped like ``p``.
    """
    a, r = _conversion_inputs(orders, rdp)
    pp = as_float_array(p, "p")
    if ((pp <= 0) | (pp > 1)).any():
        raise ValueError("p must lie in (0, 1]")
    at_inf = np.isinf(a)
    frac = np.where(at_inf, 1.0, (np.where(at_inf, 2.0, a) - 1.0) / np.where(at_inf, 2.0, a))
    log_high = frac * (r + np.log(pp.reshape(-1))[:, None])
    idx = np.argmin(log_high, axis=1)
    rows = np.arange(idx.size)
    high = np.exp(np.minimum(log_high[rows, idx], 0.0))
    if pp.ndim == 0:
        return float(high[0]), float(a[idx[0]])
    return high.reshape(pp.shape), a[idx].reshape(pp.shape)


def posterior_odds_bound(
    prior_odds: ArrayLike, order: ArrayLike, epsilon: ArrayLike, delta: ArrayLike
) -> np.ndarray:
    r"""Upper bound on an adversary's posterior odds that holds with probability ≥ 1 − δ.

    An adversary weighs two neighbouring data sets D (the true one) and D′ with prior odds
    O = Pr[D]/Pr[D′]. Seeing the output o its odds become O·e^{L(o)} with the privacy loss
    L(o) = log(p_D(o)/p_{D′}(o)). (α, ε)-RDP says E_{o∼M(D)}[e^{(α−1)L(o)}] ≤ e^{(α−1)ε}
    (Mironov 2017, §III and §VII: RDP bounds the (α − 1)-th moment of the change in odds), so by
    Markov's inequality

    .. math:: \Pr_{o\sim M(D)}\Big[\text{posterior odds} \ge O\,\exp\big(\varepsilon
              + \tfrac{\log(1/\delta)}{\alpha-1}\big)\Big] \le \delta .

    At α = ∞ the bound is O·e^{ε} with probability 1.

    Parameters
    ----------
    prior_odds : array_like
        Prior odds of D against D′, > 0.
    order : array_like
        Rényi order α > 1 (``inf`` allowed).
    epsilon : array_like
        RDP parameter at that order, > 0.
    delta : array_like
        Probability, over the mechanism's randomness, that the bound may fail; in (0, 1).

    Returns
    -------
    numpy.ndarray
        The bound on the posterior odds (may be ``inf`` on overflow), broadcast shape.
    """
    o = _positive(prior_odds, "prior_odds")
    a = _event_orders(order)
    e = _positive(epsilon, "epsilon")
    d = check_delta(delta)
    o, a, e, d = _broadcast((o, "prior_odds"), (a, "order"), (e, "epsilon"), (d, "delta"))
    at_inf = np.isinf(a)
    am1 = np.where(at_inf, 1.0, a - 1.0)
    log_bound = np.log(o) + e + np.where(at_inf, 0.0, -np.log(d) / am1)
    with np.errstate(over="ignore"):
        return _out(np.exp(log_bound))


def group_privacy(order: ArrayLike, epsilon: ArrayLike, c: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Group privacy for RDP (Mironov 2017, Proposition 2).

    If M is (α, ε)-RDP, g is 2^c-stable (neighbouring inputs map to inputs at distance ≤ 2^c)
    and α ≥ 2^{c+1}, then M∘g is (α/2^c, 3^c ε)-RDP.

    Parameters
    ----------
    order : array_like
        Order α, finite, ≥ 2^{c+1}.
    epsilon : array_like
        RDP parameter at α, > 0.
    c : int
        log₂ of the group size, ≥ 0.

    Returns
    -------
    order, epsilon : numpy.ndarray
        The new order α/2^c and parameter 3^c ε.
    """
    if isinstance(c, bool) or not isinstance(c, (int, np.integer)):
        raise TypeError(f"c must be a whole number >= 0, got {c!r}")
    if c < 0:
        raise ValueError(f"c must be >= 0, got {c}")
    a = check_orders(order, "order", allow_inf=False)
    e = _positive(epsilon, "epsilon")
    if (a < 2.0 ** (c + 1)).any():
        raise ValueError(f"order must be >= 2**(c+1) = {2 ** (c + 1)} for c = {c}")
    _broadcast((a, "order"), (e, "epsilon"))
    a, e = np.broadcast_arrays(a, e)
    return _out(a / 2.0**c), _out(e * 3.0**c)


def _check_n(n: ArrayLike) -> np.ndarray:
    arr = as_float_array(n, "n")
    if (arr < 1).any() or (arr != np.round(arr)).any():
        raise ValueError("n must be whole numbers >= 1")
    return arr


def advanced_composition(
    epsilon: ArrayLike, n: ArrayLike, delta: ArrayLike, method: str = "mironov"
) -> np.ndarray:
    r"""ε′ such that the n-fold composition of an ε-DP mechanism is (ε′, δ)-DP.

    ``method="mironov"``: Mironov 2017, §V, Proposition 4, the RDP route. ε-DP implies
    (α, 2αε²)-RDP; n-fold composition gives (α, 2nαε²)-RDP; Proposition 3 at the order
    α = 1 + sqrt(log(1/δ)/(2nε²)) gives ε′ = 2nε² + 2ε sqrt(2n log(1/δ)) ≤ 4ε sqrt(2n log(1/δ)),

    .. math:: \varepsilon' = 4\varepsilon\sqrt{2n\log(1/\delta)}
              \qquad\text{provided}\quad \log(1/\delta) \ge \varepsilon^2 n,

    and ``inf`` (no guarantee from this proposition) where the proviso fails.

    ``method="drv"``: Dwork, Rothblum & Vadhan 2010 (Dwork & Roth 2014, Theorem 3.20, with δ = 0
    per mechanism): ε′ = ε sqrt(2n log(1/δ)) + nε(e^ε − 1).

    ``method="kov"``: Kairouz, Oh & Viswanath 2015, Theorem 3.4 (δ = 0 per mechanism):
    ε′ = min{nε, nε(e^ε−1)/(e^ε+1) + ε sqrt(2n log(e + sqrt(nε²)/δ)),
    nε(e^ε−1)/(e^ε+1) + ε sqrt(2n log(1/δ))}.

    Parameters
    ----------
    epsilon : array_like
        Pure-DP parameter of each mechanism, > 0.
    n : array_like
        Number of compositions, whole numbers ≥ 1.
    delta : array_like
        Target δ in (0, 1).
    method : {"mironov", "drv", "kov"}

    Returns
    -------
    numpy.ndarray
        ε′, float64, of the broadcast shape of the inputs.
    """
    e = _positive(epsilon, "epsilon")
    nn = _check_n(n)
    d = check_delta(delta)
    e, nn, d = _broadcast((e, "epsilon"), (nn, "n"), (d, "delta"))
    log_inv_d = -np.log(d)
    if method == "mironov":
        val = 4.0 * e * np.sqrt(2.0 * nn * log_inv_d)
        return _out(np.where(log_inv_d >= e * e * nn, val, np.inf))
    if method == "drv":
        return _out(e * np.sqrt(2.0 * nn * log_inv_d) + nn * e * np.expm1(e))
    if method == "kov":
        lead = nn * e * np.tanh(e / 2.0)  # nε(e^ε − 1)/(e^ε + 1)
        t2 = lead + e * np.sqrt(2.0 * nn * np.log(np.e + np.sqrt(nn * e * e) / d))
        t3 = lead + e * np.sqrt(2.0 * nn * log_inv_d)
        return _out(np.minimum(nn * e, np.minimum(t2, t3)))
    raise ValueError(f"method must be one of ('mironov', 'drv', 'kov'), got {method!r}")


# --------------------------------------------------------------------------------------------------
# Discrete noise on integer queries (Canonne, Kamath & Steinke 2020)
# --------------------------------------------------------------------------------------------------


def _discrete_args(
    orders: ArrayLike, scale: ArrayLike, scale_name: str, sensitivity: ArrayLike, *, l1: bool
) -> list[Any]:
    """Checked, mutually broadcastable orders, scale and sensitivity of a discrete curve.

    With ``l1`` the sensitivity must be >= 1 (a non-zero integer shift has ℓ1 norm >= 1).
    """
    a = _curve_orders(orders)
    s = _positive(scale, scale_name)
    d = _positive(sensitivity, "sensitivity")
    if l1 and np.any(np.asarray(d) < 1.0 - 1e-9):
        raise ValueError(
            "sensitivity must be >= 1 for an integer query (a non-zero integer shift has ℓ1 "
            "norm >= 1)"
        )
    return _broadcast((a, "orders"), (s, scale_name), (d, "sensitivity"))


def discrete_gaussian(
    orders: ArrayLike, sigma: ArrayLike, sensitivity: ArrayLike = 1.0
) -> np.ndarray:
    r"""RDP curve of independent discrete Gaussian noise N_ℤ(0, σ²) on an integer vector query.

    .. math:: \varepsilon(\alpha) = \frac{\alpha\,\Delta_2^2}{2\sigma^2}

    for every integer shift vector d with ‖d‖₂ ≤ Δ₂. This is the bound of Canonne, Kamath &
    Steinke 2020 ("The Discrete Gaussian for Differential Privacy", arXiv:2004.00010, Section 2:
    the discrete Gaussian mechanism is ½(Δ/σ)²-zCDP, and with independent coordinates
    ½ Σ_j d_j²/σ²-zCDP), and it *coincides* with the continuous Gaussian's curve
    (Mironov 2017, Proposition 7), for the reason below; it is not borrowed from it.

    Proof (one coordinate, integer shift d, α > 1): with θ(c) = Σ_{x∈ℤ} e^{−(x−c)²/(2σ²)},
    completing the square in α x² + (1 − α)(x − d)² gives

    .. math:: D_\alpha\big(N_\mathbb Z(0,\sigma^2)\,\|\,N_\mathbb Z(d,\sigma^2)\big)
              = \frac{\alpha d^2}{2\sigma^2}
              + \frac{1}{\alpha-1}\log\frac{\theta((\alpha-1)d)}{\theta(0)} .

    By Poisson summation θ(c) = √(2π) σ Σ_k e^{−2π²σ²k²} cos(2πkc) ≤ θ(0) (all Fourier
    coefficients are positive), so the second term is ≤ 0, with equality when (α − 1)d is an
    integer: the curve is exact at integer orders. Rényi divergences of product distributions
    add over coordinates, so a shift vector costs α‖d‖₂²/(2σ²) ≤ αΔ₂²/(2σ²). The α → 1 limit
    is Δ₂²/(2σ²) (θ is even, so the second term's derivative vanishes at 0); α = ∞ gives ``inf``.

    Parameters
    ----------
    orders : array_like
        Rényi orders, ≥ 1 (``inf`` allowed).
    sigma : array_like
        The scale σ of N_ℤ(0, σ²) (its pmf is ∝ e^{−x²/(2σ²)}), > 0.
    sensitivity : array_like, default 1.0
        ℓ2 sensitivity Δ₂ of the integer query, > 0.

    Returns
    -------
    numpy.ndarray
        ε(α), float64, of the broadcast shape of the inputs.
    """
    a, s, d = _discrete_args(orders, sigma, "sigma", sensitivity, l1=False)
    return _out(a * ((d / s) ** 2 / 2.0))


#: Largest ℓ1 sensitivity for which the discrete Laplace curve is the exact worst case over
#: integer shift vectors (an O(m²) maximisation); beyond it the pure-DP bound is used.
DISCRETE_LAPLACE_EXACT_MAX = 64


def _exp_m1_minus(z: np.ndarray) -> np.ndarray:
    """e^z − 1 − z for any real z without cancellation (Taylor series for |z| < 0.1)."""
    z = np.asarray(z, dtype=np.float64)
    out = np.expm1(np.minimum(z, 709.0)) - z
    small = np.abs(z) < 0.1
    if small.any():
        zs = z[small]
        term = zs * zs / 2.0
        acc = term.copy()
        for k in range(3, 15):
            term = term * zs / k
            acc = acc + term
        out[small] = acc
    return out


def _discrete_laplace_shift(a: np.ndarray, u: float, d: int) -> np.ndarray:
    """D_α(DLap(t) ‖ d + DLap(t)) for a one-coordinate integer shift d ≥ 1, u = 1/t; flat a.

    The privacy loss L(x) = u(|x − d| − |x|) under P takes the value u(d − 2j) with weight
    w_0 = 1/(1 + r), w_j = tanh(u/2) r^j (0 < j < d), w_d = r^d/(1 + r), r = e^{−u}. Then
    (α − 1) D_α = log E[e^{(α−1)L}] = (α − 1) KL + log E[e^{z}] with KL = E[L] and
    z = (α − 1)(L − KL), E[z] = 0, evaluated as log1p(E[e^z − 1 − z]) (all terms ≥ 0).
    """
    at_one, at_inf, am = _split_orders(a)
    lam = am - 1.0
    r_log1p = math.log1p(math.exp(-u))
    log_c = math.log(math.tanh(u / 2.0))
    j = np.arange(d + 1, dtype=np.float64)
    log_w = log_c - j * u
    log_w[0] = -r_log1p
    log_w[d] = -d * u - r_log1p
    w = np.exp(log_w)
    # KL = E[L] = u Σ_{j < d/2} (d − 2j)(w_j − w_{d−j}), each difference without cancellation
    kl = 0.0
    for jj in range(0, (d + 1) // 2):
        k = d - 2 * jj
        if jj == 0:
            diff = -math.expm1(-d * u) / (1.0 + math.exp(-u))
        else:
            diff = -math.exp(log_c - jj * u) * math.expm1(-k * u)
        kl += k * diff
    kl *= u
    levels = u * (d - 2.0 * j)  # the values of L
    z = lam[:, None] * (levels[None, :] - kl)
    zmax = np.max(z, axis=1)
    big = zmax > 700.0
    val = np.empty(a.size)
    if (~big).any():
        v = (w[None, :] * _exp_m1_minus(z[~big])).sum(axis=1)
        val[~big] = kl + np.log1p(v) / lam[~big]
    if big.any():
        zb = z[big] + log_w[None, :]
        mb = zb.max(axis=1)
        val[big] = kl + (mb + np.log(np.exp(zb - mb[:, None]).sum(axis=1))) / lam[big]
    val = np.where(at_one, kl, val)
    val = np.where(at_inf, d * u, val)
    return np.maximum(val, 0.0)


def discrete_laplace(
    orders: ArrayLike, scale: ArrayLike, sensitivity: ArrayLike = 1.0
) -> np.ndarray:
    r"""RDP curve of independent discrete Laplace noise on an integer vector query.

    Each coordinate gets noise with pmf P(x) = tanh(1/(2t)) e^{−|x|/t} on ℤ (scale t; the
    two-sided geometric distribution of Ghosh, Roughgarden & Sundararajan 2012, sampled exactly
    by Canonne, Kamath & Steinke 2020, Algorithm 2). The neighbouring outputs differ by an
    integer shift vector d with ‖d‖₁ ≤ Δ₁.

    One coordinate, shift d ≥ 1 (exact, by summing the geometric series): with u = 1/t and
    r = e^{−u} the privacy loss L(x) = u(|x − d| − |x|) takes the values u(d − 2j), j = 0 … d,
    with probabilities w_0 = 1/(1 + r) (x ≤ 0), w_d = r^d/(1 + r) (x ≥ d) and
    w_j = tanh(u/2) r^j (x = j in between), so

    .. math:: f_d(\alpha) = D_\alpha = \frac{1}{\alpha-1}
              \log \sum_{j=0}^{d} w_j\, e^{(\alpha-1)u(d-2j)} ,

    evaluated as KL + log1p(E[e^z − 1 − z])/(α − 1) with the KL divergence E[L] and the centred
    z = (α − 1)(L − E L) so that no digits cancel; f_d(1) = E[L], f_d(∞) = d u.

    Vectors: Rényi divergences of product distributions add over coordinates, so a shift vector
    costs Σ_j f_{|d_j|}(α). The curve is the exact worst case over integer vectors with
    ‖d‖₁ ≤ m = ⌊Δ₁⌋: g(m) with g(0) = 0 and g(n) = max_{1≤k≤n} [f_k + g(n − k)] (a maximum
    over the partitions of n, order by order; g is non-decreasing since f ≥ 0). For
    m > ``DISCRETE_LAPLACE_EXACT_MAX`` the pure-DP bound is used instead: every ratio
    P(x)/P(x − d) is at most e^{‖d‖₁/t}, so the mechanism is (m/t)-DP and
    ε(α) = min(m/t, α m²/(2t²)) (:func:`pure_dp`), which is ≥ the exact worst case.

    Parameters
    ----------
    orders : array_like
        Rényi orders, ≥ 1 (``inf`` allowed; the value there is ⌊Δ₁⌋/t).
    scale : float
        The scale t > 0.
    sensitivity : float, default 1.0
        ℓ1 sensitivity Δ₁ ≥ 1 of the integer query (an integer shift of ℓ1 norm below 1 is 0).
        It is read as ⌊Δ₁ + 1e-9⌋ so that a value a rounding error below an integer counts as
        that integer.

    Returns
    -------
    numpy.ndarray
        ε(α), float64, of the broadcast shape of the inputs.
    """
    a, t_arr, d_arr = _discrete_args(orders, scale, "scale", sensitivity, l1=True)
    shape = np.broadcast_shapes(np.shape(a), np.shape(t_arr), np.shape(d_arr))
    ab = np.broadcast_to(a, shape).reshape(-1)
    tb = np.broadcast_to(t_arr, shape).reshape(-1)
    mb = np.floor(np.broadcast_to(d_arr, shape).reshape(-1) + 1e-9).astype(np.int64)
    out = np.empty(ab.size, dtype=np.float64)
    keys = np.stack([tb, mb.astype(np.float64)], axis=1)
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    for i, (t, m_f) in enumerate(uniq):
        sel = inverse == i
        m = int(m_f)
        u = 1.0 / float(t)
        orders_i = ab[sel]
        if m > DISCRETE_LAPLACE_EXACT_MAX:
            e = m * u
            out[sel] = np.minimum(e, orders_i * e * e / 2.0)
            continue
        f = [np.zeros(orders_i.size)] + [
            _discrete_laplace_shift(orders_i, u, k) for k in range(1, m + 1)
        ]
        g = [np.zeros(orders_i.size)]
        for n in range(1, m + 1):
            g.append(np.max(np.stack([f[k] + g[n - k] for k in range(1, n + 1)]), axis=0))
        out[sel] = g[m]
    return _out(out.reshape(shape))
