"""Power series and per-grid tables behind the Laplace and randomized-response curves.

Both curves are cumulant generating functions of a shifted Bernoulli variable (Mironov 2017,
"Rényi Differential Privacy", Propositions 5 and 6). Where the closed forms of
:mod:`pymc_rdp.privacy.curves` cancel (weak mechanisms), the curves are evaluated from their power
series; the order-dependent coefficients are computed once per grid of orders and cached. The
derivation is below and in ``docs/rdp.md``.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from pymc_rdp.privacy.orders import IdentityCache

# Taylor coefficients: e^{−x} − 1 + x = x² Σ_j (−x)^j/(j + 2)!  and  log1p(u) − u = u² Σ_j (−u)^j
# · (−1)/(j + 2), truncated where the next term is below 1e-17 relative on the ranges used.
_EXP_COEF = np.array([1.0 / math.factorial(j + 2) for j in range(12)])
_LOG_COEF = np.array([-1.0 / (j + 2) for j in range(13)])


def _series(x: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """x² Σ_j coef[j] (−x)^j, vectorised without a Python loop over the terms."""
    powers = np.cumprod(np.broadcast_to(-x[:, None], (x.size, coef.size - 1)), axis=1)
    return x * x * (coef[0] + powers @ coef[1:])


def _exp_m1_plus(s: Any) -> np.ndarray:
    """e^{−s} − 1 + s for s ≥ 0 without cancellation (Taylor series below 0.1)."""
    s = np.asarray(s, dtype=np.float64)
    flat = s.reshape(-1)
    out = np.expm1(-flat) + flat
    small = flat < 0.1
    if small.any():
        out[small] = _series(flat[small], _EXP_COEF)
    return out.reshape(s.shape)


def _log1p_minus(u: Any) -> np.ndarray:
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
_GRIDS_BY_ID = IdentityCache()


def _grid_of(a: np.ndarray) -> _Grid:
    """Cached constants for the orders ``a`` (any shape, flattened), by identity or content."""
    hit = _GRIDS_BY_ID.get(a)
    if hit is not None:
        return hit
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
    _GRIDS_BY_ID.put(a, grid)
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


def _laplace_rows_on_grid(g: _Grid, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Laplace curves of the values ``t`` as rows (sorted order), each the same floats as
    :func:`_laplace_on_grid` gives for that value alone; returns ``(rows, declined)``.

    Every step rounds as the one-value evaluation does: the closed form is evaluated on the
    whole block (elementwise operations), the rows' series orders (the same count m per value,
    the same powers t^k) are then overwritten by the same matrix-vector products, one stacked
    product per distinct m (NumPy evaluates a stack of matrix-vector products one product at a
    time). ``declined`` holds the rows where :func:`_laplace_on_grid` returns None (their
    contents are unspecified).
    """
    col = t[:, None]
    v = np.multiply(col, g.neg_b)
    np.exp(v, out=v)
    v -= 1.0
    v *= g.c1
    np.log1p(v, out=v)
    v *= g.inv
    v += col
    m = np.searchsorted(g.b_sorted, _LAPLACE_S_MAX / t)  # bisect_left, as _laplace_on_grid
    declined = np.flatnonzero(m > g.n_table)
    if g.has_one:
        for i in np.flatnonzero(m == 0).tolist():
            ti = float(t[i])
            v[i, 0] = ti + math.expm1(-ti)
    series = np.flatnonzero((m > 0) & (m <= g.n_table))
    if series.size:
        order = series[np.argsort(m[series], kind="stable")]
        ms = m[order]
        powers = col[order] ** _T_POWERS
        cuts = [0, *(np.flatnonzero(np.diff(ms)) + 1).tolist(), order.size]
        for a, b in itertools.pairwise(cuts):
            k = int(ms[a])
            prods = np.matmul(g.laplace_table(k), powers[a:b, :, None])
            v[order[a:b], :k] = prods[:, :, 0]
    return v, declined


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
