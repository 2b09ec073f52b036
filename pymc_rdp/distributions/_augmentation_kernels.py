"""Compiled (numba, nopython, float64) kernels of the data-augmentation sampler.

The state is a table of latent categorical records ``x`` (records × nodes, integer codes, nodes in
topological order) and the family tables of those records, kept up to date move by move:
``cell_n`` (every family's cells, flat) and ``row_n`` (every family's parent-configuration totals,
flat). Cell ``cell_off[v] + c * card[v] + k`` is state ``k`` of node ``v`` under parent
configuration ``c``; row ``row_off[v] + c`` is that configuration's total.

The log target of a move is evaluated as a sum of *cell terms* ``f_v(n_cell)`` and *row terms*
``g_v(n_row)`` (constants dropped):

* the released family table's mechanism density ``log η_v(y_v | s_v)``:
  Gaussian ``−(y − n)² / (2σ²)`` and Laplace ``−|y − n| / b`` per cell (the discrete Gaussian and
  discrete Laplace have the same ratios, their normalisers do not depend on ``n``); a Dirichlet-
  mechanism release ``θ̃_c ~ Dirichlet(r s_c + α_c)`` gives the cell term
  ``r n log θ̃ − log Γ(r n + α)`` and the row term ``log Γ(r n_c + Σ_k α_ck)``;
* with the CPTs integrated out ("collapsed"), the Bayesian-Dirichlet score of the records
  (Heckerman, Geiger & Chickering 1995, "Learning Bayesian networks: the combination of knowledge
  and statistical data"): cell term ``log Γ(α₀ + n)`` and row term ``−log Γ(K α₀ + n_c)``, read
  from tables ``lg_cell[v, n]`` and ``lg_row[v, n]``.

Changing one record changes one cell per family, so a move's log ratio is a handful of term
differences; moves apply their changes to the tables as they go and undo them when rejected.

The tuples passed to every kernel:

``net = (card, n_par, par, stride, cell_off, row_off, n_ch, ch)``
    int64 arrays: states per node; number of parents, parents (padded) and their strides in the
    configuration index (first parent slowest); offsets of each family's cells and rows; number
    of children and children (padded).
``obs = (kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row)``
    ``kind[v]``: 0 no release, 1 Gaussian (``coef = 1/(2σ²)``), 2 Laplace (``coef = 1/b``),
    3 Dirichlet (``r[v]``, ``logt`` = log θ̃ per cell, ``acell`` = α per cell, ``arow`` = Σα
    per row), 4 Dirichlet with one α over the table, whose terms ``log Γ(r n + α)`` and
    ``log Γ(r n + K α)`` are read from ``lgd_cell[v, n]`` and ``lgd_row[v, n]``
    (``n = 0..N``; shape ``(nodes, 1)`` when no node has kind 4); ``y`` the released values per
    cell; the BD tables.

Random numbers come from numba's own generator, seeded by :func:`seed` (in nopython mode
numba offers the legacy ``np.random`` functions, hence the NPY002 exemption).
"""

# ruff: noqa: NPY002
from __future__ import annotations

import math

import numpy as np
from numba import njit

#: Decorator of the helpers that moves call per record. Numba counts references to every array
#: passed to a compiled function, with an atomic increment and decrement per array per call; on
#: Adult that was about 60% of a heat-bath sweep. These helpers never allocate, so they are
#: compiled without numba's runtime (``_nrt=False``): the arrays are borrowed for the call.
#: Numba compiles a helper once per distinct literal argument (``-1``, ``0``, ``1``); callers pass
#: such constants as ``np.int64(...)`` so that each helper compiles once (on Adult, compiling
#: five versions of :func:`_add_terms_from` took 4.6 of the first call's 19 s).
per_record = njit(cache=True, nogil=True, _nrt=False)

#: Decorator of small helpers that numba inlines into each caller's code before typing it. A
#: separately compiled function is optimised and turned into machine code together with every
#: function it calls, so each level of calls compiles its callees' code again; inlining the
#: grouping's key and sorting helpers and the set-up of the row-block and subtree moves took
#: about 1.2 s of CPU off compiling the sampler's default moves on Adult
#: (``benchmarks/bench_da.py --cold``), their machine code as fast. Helpers called per proposal
#: stay calls where inlining them slowed the moves (the row-block proposals and bookkeeping: the
#: subtree moves 3 % slower on insurance). Not for helpers of more than 30 arguments: CPython
#: passes those as one tuple (``CALL_FUNCTION_EX``), which numba's inliner refuses.
inlined = njit(cache=True, nogil=True, inline="always")

KIND_NONE = 0
KIND_GAUSSIAN = 1
KIND_LAPLACE = 2
KIND_DIRICHLET = 3
#: a Dirichlet-mechanism release with one α over its table: the same density, its log Γ terms
#: read from the tables ``lgd_cell``/``lgd_row`` (a heat-bath sweep called ``math.lgamma`` about
#: a million times per sweep on Adult)
KIND_DIRICHLET_TABLED = 4


@njit(cache=True, nogil=True)
def seed(value):
    """Seed numba's generator (one per thread, separate from numpy's)."""
    np.random.seed(value)


# The helpers take scalars or arrays, never the parameter tuples: unpacking a tuple inside a
# helper called per record cost about 100x (reference counting of every array it holds).
@inlined
def _cell_term(kv, coef_v, r_v, y_c, logt_c, acell_c, n):
    if kv == 1:
        d = y_c - n
        return -coef_v * d * d
    if kv == 2:
        return -coef_v * abs(y_c - n)
    if kv == 3:
        rn = r_v * n
        return rn * logt_c - math.lgamma(rn + acell_c)
    if kv == 4:  # its log Γ terms are tabulated (:func:`_add_terms`)
        return r_v * n * logt_c
    return 0.0


@inlined
def _row_term(kv, r_v, arow_r, n):
    if kv == 3:
        return math.lgamma(r_v * n + arow_r)
    return 0.0


@inlined
def _cell_value(v, cell, n, bd, kind, coef, r, y, logt, acell, lg_cell, lgd_cell):
    """The whole cell term of ``v``'s family at count ``n``: the release's, with the BD score's
    if ``bd`` (the tabulated Dirichlet kind's log Γ term read from ``lgd_cell``)."""
    kv = kind[v]
    t = _cell_term(kv, coef[v], r[v], y[cell], logt[cell], acell[cell], n)
    if bd:
        t += lg_cell[v, n]
    if kv == 4:
        t -= lgd_cell[v, n]
    return t


@inlined
def _row_value(v, row, n, bd, kind, r, arow, lg_row, lgd_row):
    """The whole row term of ``v``'s family at total ``n`` (:func:`_cell_value`'s pair)."""
    kv = kind[v]
    t = _row_term(kv, r[v], arow[row], n)
    if bd:
        t -= lg_row[v, n]
    if kv == 4:
        t += lgd_row[v, n]
    return t


@per_record
def _add_terms(
    v, cell, row, d, bd, kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell,
    lgd_row, cell_n, row_n,
):  # fmt: skip
    """Log change of the target when ``d`` (±1) records join (cell, row) of family ``v`` (row
    unchanged if ``row < 0``; ``bd``: with the Bayesian-Dirichlet terms); tables not modified."""
    return _add_terms_from(
        v, cell, row, d, bd, np.int64(0), kind, coef, r, y, logt, acell, arow, lg_cell, lg_row,
        lgd_cell, lgd_row, cell_n, row_n,
    )  # fmt: skip


@per_record
def _add_terms_from(
    v, cell, row, d, bd, off, kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell,
    lgd_row, cell_n, row_n,
):  # fmt: skip
    """:func:`_add_terms` from the tables with ``off`` records added to the cell and the row
    (``off = −1``: as if one record of them were out), without writing them."""
    kv = kind[v]
    na = cell_n[cell] + off
    nb = na + d
    delta = _cell_term(kv, coef[v], r[v], y[cell], logt[cell], acell[cell], nb) - _cell_term(
        kv, coef[v], r[v], y[cell], logt[cell], acell[cell], na
    )
    if bd:
        delta += lg_cell[v, nb] - lg_cell[v, na]
    if kv == 4:
        delta -= lgd_cell[v, nb] - lgd_cell[v, na]
    if row >= 0:
        ma = row_n[row] + off
        mb = ma + d
        delta += _row_term(kv, r[v], arow[row], mb) - _row_term(kv, r[v], arow[row], ma)
        if bd:
            delta -= lg_row[v, mb] - lg_row[v, ma]
        if kv == 4:
            delta += lgd_row[v, mb] - lgd_row[v, ma]
    return delta


@per_record
def _shift(
    v, cell, row, d, bd, cell_n, row_n, kind, coef, r, y, logt, acell, arow, lg_cell, lg_row,
    lgd_cell, lgd_row,
):  # fmt: skip
    """Add ``d`` (±1) records to one cell of family ``v`` (row unchanged if ``row < 0``);
    returns the log change of the target (:func:`_add_terms`)."""
    delta = _add_terms(
        v, cell, row, d, bd, kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell,
        lgd_row, cell_n, row_n,
    )  # fmt: skip
    cell_n[cell] += d
    if row >= 0:
        row_n[row] += d
    return delta


@per_record
def _move(
    v, row_a, cell_a, row_b, cell_b, bd, cell_n, row_n, kind, coef, r, y, logt, acell, arow,
    lg_cell, lg_row, lgd_cell, lgd_row,
):  # fmt: skip
    """Move one record of family ``v`` from (row_a, cell_a) to (row_b, cell_b); the log ratio."""
    if cell_a == cell_b:
        return 0.0
    same = row_a == row_b
    delta = _shift(
        v,
        cell_a,
        -1 if same else row_a,
        np.int64(-1),
        bd,
        cell_n,
        row_n,
        kind,
        coef,
        r,
        y,
        logt,
        acell,
        arow,
        lg_cell,
        lg_row,
        lgd_cell,
        lgd_row,
    )
    delta += _shift(
        v,
        cell_b,
        -1 if same else row_b,
        np.int64(1),
        bd,
        cell_n,
        row_n,
        kind,
        coef,
        r,
        y,
        logt,
        acell,
        arow,
        lg_cell,
        lg_row,
        lgd_cell,
        lgd_row,
    )
    return delta


@per_record
def _unmove(row_a, cell_a, row_b, cell_b, cell_n, row_n):
    """Undo :func:`_move` (counts only)."""
    if cell_a == cell_b:
        return
    cell_n[cell_b] -= 1
    cell_n[cell_a] += 1
    if row_a != row_b:
        row_n[row_b] -= 1
        row_n[row_a] += 1


@per_record
def _config(x, j, v, n_par, par, stride):
    c = 0
    for p in range(n_par[v]):
        c += x[j, par[v, p]] * stride[v, p]
    return c


@per_record
def _locate(x, j, v, card, n_par, par, stride, cell_off, row_off, rows, cells, at):
    """Write record j's row and cell of family ``v`` into ``rows[at]`` and ``cells[at]``."""
    c = _config(x, j, v, n_par, par, stride)
    rows[at] = row_off[v] + c
    cells[at] = cell_off[v] + c * card[v] + x[j, v]


@per_record
def _other_state(k, kv):
    """A state of a node with ``kv`` states other than ``k``, uniformly."""
    other = np.random.randint(0, kv - 1)
    if other >= k:
        other += 1
    return other


@per_record
def _undo(log_ra, log_a, log_rb, log_b, used, cell_n, row_n):
    """Undo the first ``used`` logged moves, last first."""
    for q in range(used - 1, -1, -1):
        _unmove(log_ra[q], log_a[q], log_rb[q], log_b[q], cell_n, row_n)


def tabulate(x: np.ndarray, net: tuple, cell_n: np.ndarray, row_n: np.ndarray) -> None:
    """Fill ``cell_n`` and ``row_n`` with the family tables of the records ``x`` (one column
    per node of ``net``), each counted by :func:`pymc_rdp.bn.tables.family_table` (parent
    configurations in mixed radix, first parent slowest, as the kernels index rows).

    Called from Python once per chain, so it is counted by numpy rather than compiled: as a
    kernel its compilation (0.3 s on Adult) delayed every chain's first move and the start of
    the helper that compiles the later moves' kernels (:mod:`compile_ahead`)."""
    # imported here: the helper that compiles kernels imports this module, and pandas with bn
    from pymc_rdp.bn.tables import family_table

    card, n_par, par, _stride, cell_off, row_off, _n_ch, _ch = net
    codes = dict(enumerate(x.T))  # node index -> its column of the records
    cards = dict(enumerate(card.tolist()))
    for v in range(x.shape[1]):
        table = family_table(codes, v, par[v, : n_par[v]].tolist(), cards)
        cell_n[cell_off[v] : cell_off[v + 1]] = table.ravel()
        row_n[row_off[v] : row_off[v + 1]] = table.sum(axis=1)


@njit(cache=True, nogil=True)
def log_target(cell_n, row_n, bd, net, obs):
    """The whole log target (up to a constant): Σ cell terms + Σ row terms (tests only)."""
    card, _n_par, _par, _stride, cell_off, row_off, _n_ch, _ch = net
    kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row = obs
    total = 0.0
    for v in range(card.shape[0]):
        n_cfg = (cell_off[v + 1] - cell_off[v]) // card[v]
        for c in range(n_cfg):
            row = row_off[v] + c
            total += _row_value(v, row, row_n[row], bd, kind, r, arow, lg_row, lgd_row)
            for k in range(card[v]):
                cell = cell_off[v] + c * card[v] + k
                total += _cell_value(
                    v, cell, cell_n[cell], bd, kind, coef, r, y, logt, acell, lg_cell, lgd_cell
                )
    return total


@per_record
def _log_gamma_variate(a):
    """log of a Gamma(a, 1) variate, safe for small ``a`` (Marsaglia & Tsang 2000 boost)."""
    if a >= 1.0:
        return math.log(np.random.gamma(a, 1.0))
    u = 1.0 - np.random.random()
    return math.log(np.random.gamma(a + 1.0, 1.0)) + math.log(u) / a


@njit(cache=True, nogil=True)
def draw_theta(cell_n, alpha0, net, theta, buf):
    """θ | x: every CPT row ``Dirichlet(α₀ + n_c)``, into ``theta`` (flat like ``cell_n``)."""
    card, _n_par, _par, _stride, cell_off, _row_off, _n_ch, _ch = net
    for v in range(card.shape[0]):
        kv = card[v]
        n_cfg = (cell_off[v + 1] - cell_off[v]) // kv
        for c in range(n_cfg):
            base = cell_off[v] + c * kv
            top = -np.inf
            for k in range(kv):
                buf[k] = _log_gamma_variate(alpha0[v] + cell_n[base + k])
                if buf[k] > top:
                    top = buf[k]
            s = 0.0
            for k in range(kv):
                buf[k] = math.exp(buf[k] - top)
                s += buf[k]
            for k in range(kv):
                theta[base + k] = buf[k] / s


@per_record
def forward_record(theta, net, z, rows, cells):
    """Draw one record ``z ~ p(x | θ)`` by forward sampling (nodes in topological order), with
    its row and cell of every family in ``rows`` and ``cells``."""
    card, n_par, par, stride, cell_off, row_off, _n_ch, _ch = net
    for v in range(card.shape[0]):
        c = 0
        for p in range(n_par[v]):
            c += z[par[v, p]] * stride[v, p]
        base = cell_off[v] + c * card[v]
        u = np.random.random()
        cum = 0.0
        k = card[v] - 1
        for kk in range(card[v] - 1):
            cum += theta[base + kk]
            if u < cum:
                k = kk
                break
        z[v] = k
        cells[v] = base + k
        rows[v] = row_off[v] + c


@per_record
def move_record(old_row, old_cell, new_row, new_cell, apply, net, obs, cell_n, row_n):
    """Log ratio of the releases' densities ``η`` when one record moves from (``old_row``,
    ``old_cell``) to (``new_row``, ``new_cell``), one entry per family; the tables keep the
    move if ``apply``, else are restored."""
    kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row = obs
    d = old_row.shape[0]
    delta = 0.0
    for v in range(d):
        delta += _move(
            v, old_row[v], old_cell[v], new_row[v], new_cell[v], False, cell_n, row_n, kind,
            coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row,
        )  # fmt: skip
    if not apply:
        for v in range(d):
            _unmove(old_row[v], old_cell[v], new_row[v], new_cell[v], cell_n, row_n)
    return delta


@njit(cache=True, nogil=True)
def record_sweep(x, theta, net, obs, cell_n, row_n):
    """Record-level data augmentation given θ (Ju, Awan, Gong & Rao 2022, Algorithm 1).

    For each record j: propose x*_j ~ p(x | θ) by forward sampling and accept with probability
    min(1, η(y | s − t(x_j) + t(x*_j)) / η(y | s)). Returns the number of accepted records.
    """
    card, n_par, par, stride, cell_off, row_off, _n_ch, _ch = net
    n, d = x.shape
    xnew = np.empty(d, dtype=np.int64)
    old_cell = np.empty(d, dtype=np.int64)
    old_row = np.empty(d, dtype=np.int64)
    new_cell = np.empty(d, dtype=np.int64)
    new_row = np.empty(d, dtype=np.int64)
    accepted = 0
    for j in range(n):
        forward_record(theta, net, xnew, new_row, new_cell)
        for v in range(d):
            _locate(x, j, v, card, n_par, par, stride, cell_off, row_off, old_row, old_cell, v)
        delta = move_record(old_row, old_cell, new_row, new_cell, True, net, obs, cell_n, row_n)
        if math.log(1.0 - np.random.random()) < delta:
            accepted += 1
            for v in range(d):
                x[j, v] = xnew[v]
        else:
            for v in range(d):
                _unmove(old_row[v], old_cell[v], new_row[v], new_cell[v], cell_n, row_n)
    return accepted


@per_record
def _flip(
    x, j, v, knew, card, n_par, par, stride, cell_off, row_off, n_ch, ch, kind, coef, r, y,
    logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row, cell_n, row_n, log_a, log_ra, log_b,
    log_rb, start,
):  # fmt: skip
    """Set x[j, v] = knew, updating v's family and its children's; log ratio of the collapsed
    target. Writes its 1 + (number of children) moves into the logs from position ``start``."""
    c = _config(x, j, v, n_par, par, stride)
    row = row_off[v] + c
    base = cell_off[v] + c * card[v]
    log_ra[start] = row
    log_a[start] = base + x[j, v]
    log_rb[start] = row
    log_b[start] = base + knew
    kold = x[j, v]
    for i in range(n_ch[v]):
        w = ch[v, i]
        _locate(x, j, w, card, n_par, par, stride, cell_off, row_off, log_ra, log_a, start + 1 + i)
    x[j, v] = knew
    for i in range(n_ch[v]):
        w = ch[v, i]
        _locate(x, j, w, card, n_par, par, stride, cell_off, row_off, log_rb, log_b, start + 1 + i)
    x[j, v] = kold  # the caller decides
    delta = 0.0
    for i in range(1 + n_ch[v]):
        q = start + i
        delta += _move(
            v if i == 0 else ch[v, i - 1],
            log_ra[q],
            log_a[q],
            log_rb[q],
            log_b[q],
            True,
            cell_n,
            row_n,
            kind,
            coef,
            r,
            y,
            logt,
            acell,
            arow,
            lg_cell,
            lg_row,
            lgd_cell,
            lgd_row,
        )
    return delta


@njit(cache=True, nogil=True)
def site_sweep(x, net, obs, cell_n, row_n):
    """Collapsed single-attribute moves: for every record and node, propose a uniformly chosen
    other state and accept by the collapsed target (BD score × η) over its Markov blanket
    (the node's family cell and its children's). Returns (accepted, proposed)."""
    card, n_par, par, stride, cell_off, row_off, n_ch, ch = net
    kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row = obs
    n, d = x.shape
    width = 1 + ch.shape[1]
    log_a = np.empty(width, dtype=np.int64)
    log_ra = np.empty(width, dtype=np.int64)
    log_b = np.empty(width, dtype=np.int64)
    log_rb = np.empty(width, dtype=np.int64)
    accepted = 0
    proposed = 0
    for j in range(n):
        for v in range(d):
            kv = card[v]
            if kv < 2:
                continue
            kold = x[j, v]
            knew = _other_state(kold, kv)
            proposed += 1
            delta = _flip(
                x,
                j,
                v,
                knew,
                card,
                n_par,
                par,
                stride,
                cell_off,
                row_off,
                n_ch,
                ch,
                kind,
                coef,
                r,
                y,
                logt,
                acell,
                arow,
                lg_cell,
                lg_row,
                lgd_cell,
                lgd_row,
                cell_n,
                row_n,
                log_a,
                log_ra,
                log_b,
                log_rb,
                0,
            )
            if math.log(1.0 - np.random.random()) < delta:
                x[j, v] = knew
                accepted += 1
            else:
                _undo(log_ra, log_a, log_rb, log_b, 1 + n_ch[v], cell_n, row_n)
    return accepted, proposed


@per_record
def _log_choose(n, k):
    return math.lgamma(n + 1.0) - math.lgamma(k + 1.0) - math.lgamma(n - k + 1.0)


@per_record
def _swap(order, pos, p, q):
    a = order[p]
    b = order[q]
    order[p] = b
    order[q] = a
    pos[b] = p
    pos[a] = q


@njit(cache=True, nogil=True)
def block_moves(v, n_moves, max_m, x, net, obs, cell_n, row_n):
    """Collapsed block moves of node ``v``: m records between two states within one parent
    configuration.

    Proposal: a record i uniformly, its configuration c and state k₁; another state k₂
    uniformly; m uniformly in 1..min(max_m, n₁); m − 1 further records uniformly from the other
    n₁ − 1 records of cell (c, k₁). The reverse move picks m among min(max_m, n₂ + m) and its
    companions among n₂ + m − 1, so the Hastings ratio is
    C(n₁ − 1, m − 1) min(max_m, n₁) / (C(n₂ + m − 1, m − 1) min(max_m, n₂ + m))
    (n₁, n₂ the cells' counts before the move). The log
    ratio of the target sums the moved records' changes to v's family row and to their rows of
    v's children's families. Returns (accepted, proposed).
    """
    card, n_par, par, stride, cell_off, row_off, n_ch, ch = net
    kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row = obs
    n = x.shape[0]
    kv = card[v]
    if kv < 2 or n == 0:
        return 0, 0
    n_local = cell_off[v + 1] - cell_off[v]
    # buckets of records by local cell c * K + k, contiguous (counting sort)
    start = np.empty(n_local + 1, dtype=np.int64)
    size = np.empty(n_local, dtype=np.int64)
    acc_ = 0
    for l in range(n_local):
        start[l] = acc_
        size[l] = cell_n[cell_off[v] + l]
        acc_ += size[l]
    start[n_local] = acc_
    fill = start[:n_local].copy()
    order = np.empty(n, dtype=np.int64)
    pos = np.empty(n, dtype=np.int64)
    for j in range(n):
        l = _config(x, j, v, n_par, par, stride) * kv + x[j, v]
        order[fill[l]] = j
        pos[j] = fill[l]
        fill[l] += 1
    width = 1 + ch.shape[1]
    cap = max_m * width
    log_a = np.empty(cap, dtype=np.int64)
    log_ra = np.empty(cap, dtype=np.int64)
    log_b = np.empty(cap, dtype=np.int64)
    log_rb = np.empty(cap, dtype=np.int64)
    sel = np.empty(max_m, dtype=np.int64)
    accepted = 0
    for _ in range(n_moves):
        i = np.random.randint(0, n)
        k1 = x[i, v]
        k2 = _other_state(k1, kv)
        c = _config(x, i, v, n_par, par, stride)
        l1 = c * kv + k1
        l2 = c * kv + k2
        n1 = size[l1]
        n2 = size[l2]
        top = min(max_m, n1)
        m = 1 + np.random.randint(0, top)
        s0 = start[l1]
        _swap(order, pos, pos[i], s0)
        for t in range(1, m):
            _swap(order, pos, s0 + t, s0 + t + np.random.randint(0, n1 - t))
        for t in range(m):
            sel[t] = order[s0 + t]
        delta = _log_choose(n1 - 1, m - 1) - _log_choose(n2 + m - 1, m - 1)
        delta += math.log(top) - math.log(min(max_m, n2 + m))
        used = 0
        for t in range(m):
            j = sel[t]
            delta += _flip(
                x, j, v, k2, card, n_par, par, stride, cell_off, row_off, n_ch, ch, kind, coef,
                r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row, cell_n, row_n,
                log_a, log_ra, log_b, log_rb, used,
            )  # fmt: skip
            used += 1 + n_ch[v]
            x[j, v] = k2  # later records' children see the earlier records moved
        if math.log(1.0 - np.random.random()) < delta:
            accepted += 1
            for t in range(m):
                p = pos[sel[t]]
                if l2 > l1:
                    for l in range(l1, l2):
                        e = start[l] + size[l] - 1
                        _swap(order, pos, p, e)
                        size[l] -= 1
                        start[l + 1] -= 1
                        size[l + 1] += 1
                        p = e
                else:
                    for l in range(l1, l2, -1):
                        f = start[l]
                        _swap(order, pos, p, f)
                        start[l] += 1
                        size[l] -= 1
                        size[l - 1] += 1
                        p = f
        else:
            _undo(log_ra, log_a, log_rb, log_b, used, cell_n, row_n)
            for t in range(m):
                x[sel[t], v] = k1
    return accepted, n_moves
