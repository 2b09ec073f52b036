"""Ancillary moves: a CPT row moved with its records carried along by their uniforms.

The state and the log target are those of :mod:`pymc_rdp.distributions._augmentation_kernels`
(latent records ``x``, their family tables ``cell_n``/``row_n``, the releases' densities ``η``).

Why
---
Every other move keeps the CPTs integrated out and changes records. Where a release is noisy
against a cell's count (the fraction of missing information near one), the records' tables and
the CPTs hold each other in place: a table only moves as far as the CPTs let it, and the CPTs
only as far as the table. The remedy of Yu & Meng (2011, "To center or not to center: that is
not the question — an ancillarity-sufficiency interweaving strategy (ASIS) for boosting MCMC
efficiency", JCGS 20(3)) is to alternate the *sufficient* augmentation (records given CPTs, the
moves above) with an *ancillary* one, in which the latent variables do not depend on the
parameters and the parameters move freely against the data.

The ancillary augmentation
--------------------------
Write every record's value at node ``w`` as an inverse-CDF draw
``x_jw = F⁻¹(u_jw; θ_w[c_jw])``, the states in their code order, ``c_jw`` the record's parent
configuration and ``u_jw ~ Uniform(0, 1)`` independent of ``θ``. The joint density of
``(θ, u)`` given the releases is ``p(θ) η(y | s(x(θ, u)))``: the records' probabilities
``θ_w[c, x_jw]`` cancel against the density of ``u`` given ``x``, uniform on
``[F(x − 1), F(x))``.

One ``"ancillary"`` move, from the collapsed state ``x``:

1. ``θ ~ p(θ | x)`` (rows ``Dirichlet(α₀ + n_c)``) and ``u ~ p(u | x, θ)`` (uniform in each
   record's interval): together with ``x`` an exact draw of the joint posterior.
2. Node by node in topological order, in every non-empty row ``c`` of node ``v``, ``per_row``
   Metropolis proposals on ``θ_v[c]`` with ``u`` held fixed: two adjacent states ``a, a + 1``
   chosen uniformly, ``θ'_a = θ_a + δ`` and ``θ'_{a+1} = θ_{a+1} − δ`` with ``δ`` uniform on
   ``(−h, h)``, ``h = min(M / n_c, θ_a + θ_{a+1})`` (``M`` the node's step in records, adapted
   during tuning; ``n_c`` the row's total and ``θ_a + θ_{a+1}`` the pair's mass, both of which
   the move keeps, so ``h`` is the same for the reverse proposal). Only the boundary between
   ``a`` and ``a + 1`` moves, so exactly the records of the row whose ``u`` lies between its
   old and new place change state, and each changed record's descendants are mapped again by
   their own ``u`` under their new parent configuration (a descendant whose configuration did
   not change keeps its value). The proposal is symmetric in ``θ`` (a translation within the
   simplex), so the record terms cancel and the acceptance ratio is
   ``p(θ') η(y | s') / (p(θ) η(y | s))``, the prior's part
   ``(α₀ − 1) log(θ'_a θ'_{a+1} / (θ_a θ_{a+1}))``. A proposal that would change more records
   than the move's capacity is rejected; the reverse proposal changes the same records, so the
   rule is symmetric.
3. ``θ`` and ``u`` are dropped: the records are a draw of ``p(x | y)`` again.

Step 2 is a Gibbs-type update of ``θ`` given ``u`` in the ancillary parameterisation, so each
proposal leaves ``p(θ, u | y)`` and hence ``p(θ, x | y)`` invariant; with steps 1 and 3 the move
leaves the collapsed target invariant. It is checked against enumeration in
``tests/distributions/test_distributions_data_augmentation.py``.
"""

# ruff: noqa: NPY002
from __future__ import annotations

import math

import numpy as np
from numba import njit

from pymc_rdp.distributions._augmentation_kernels import _config, _move, _unmove, per_record

__all__ = ["ancillary_sweep", "draw_uniforms"]


@njit(cache=True, nogil=True)
def draw_uniforms(x, theta, net, u):
    """``u[j, w]`` uniform on record j's interval ``[F(x_jw − 1), F(x_jw))`` of node ``w``
    under ``θ_w`` of its parent configuration (the CDF summed in state order, as
    :func:`_inverse_cdf` sums it)."""
    card, n_par, par, stride, cell_off, _row_off, _n_ch, _ch = net
    n, d = x.shape
    for j in range(n):
        for w in range(d):
            base = cell_off[w] + _config(x, j, w, n_par, par, stride) * card[w]
            k = x[j, w]
            lo = 0.0
            for i in range(k):
                lo += theta[base + i]
            u[j, w] = lo + np.random.random() * theta[base + k]


@per_record
def _inverse_cdf(theta, base, kw, uu):
    """The state ``k`` whose interval of the CDF (summed in state order) holds ``uu``."""
    cum = 0.0
    for k in range(kw - 1):
        cum += theta[base + k]
        if uu < cum:
            return k
    return kw - 1


@per_record
def _carry(
    x, j, v, knew, theta, u, desc, n_desc, old_cfg, card, n_par, par, stride, cell_off,
    row_off, kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row,
    cell_n, row_n, log_j, log_w, log_k, log_ra, log_a, log_rb, log_b, used,
):  # fmt: skip
    """Set record j's state at ``v`` to ``knew`` and map its descendants again by their
    uniforms; tables updated, every change logged from ``used``. Returns (log η ratio, used)."""
    for i in range(n_desc[v]):
        old_cfg[i] = _config(x, j, desc[v, i], n_par, par, stride)
    c = _config(x, j, v, n_par, par, stride)
    row = row_off[v] + c
    base = cell_off[v] + c * card[v]
    log_j[used] = j
    log_w[used] = v
    log_k[used] = x[j, v]
    log_ra[used] = row
    log_a[used] = base + x[j, v]
    log_rb[used] = row
    log_b[used] = base + knew
    delta = _move(
        v, row, base + x[j, v], row, base + knew, False, cell_n, row_n,
        kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row,
    )  # fmt: skip
    x[j, v] = knew
    used += 1
    for i in range(n_desc[v]):
        w = desc[v, i]
        cw = _config(x, j, w, n_par, par, stride)
        if cw == old_cfg[i]:
            continue  # its interval, and so its state, did not move
        new_base = cell_off[w] + cw * card[w]
        kw = _inverse_cdf(theta, new_base, card[w], u[j, w])
        log_j[used] = j
        log_w[used] = w
        log_k[used] = x[j, w]
        log_ra[used] = row_off[w] + old_cfg[i]
        log_a[used] = cell_off[w] + old_cfg[i] * card[w] + x[j, w]
        log_rb[used] = row_off[w] + cw
        log_b[used] = new_base + kw
        delta += _move(
            w, log_ra[used], log_a[used], log_rb[used], log_b[used], False, cell_n, row_n,
            kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row,
        )  # fmt: skip
        x[j, w] = kw
        used += 1
    return delta, used


@njit(cache=True, nogil=True)
def ancillary_sweep(theta, u, v, per_row, step, alpha, desc, n_desc, x, net, obs, cell_n, row_n):
    """Ancillary proposals on every non-empty row of node ``v``'s CPT (module notes), ``per_row``
    each, the boundary moving by up to ``step`` records. ``theta`` (flat, like ``cell_n``) and
    ``u`` (records × nodes) must be a joint draw given ``x`` (:func:`draw_uniforms`); both are
    kept consistent with ``x``. Returns (accepted, proposed)."""
    card, n_par, par, stride, cell_off, row_off, _n_ch, _ch = net
    kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row = obs
    n = x.shape[0]
    kv = card[v]
    if kv < 2 or n == 0 or per_row < 1:
        return 0, 0
    # records by row of v (a counting sort): v's rows depend only on its parents, which the
    # move does not change
    n_cfg = (cell_off[v + 1] - cell_off[v]) // kv
    start = np.zeros(n_cfg + 1, dtype=np.int64)
    for c in range(n_cfg):
        start[c + 1] = start[c] + row_n[row_off[v] + c]
    fill = start[:n_cfg].copy()
    order = np.empty(n, dtype=np.int64)
    for j in range(n):
        c = _config(x, j, v, n_par, par, stride)
        order[fill[c]] = j
        fill[c] += 1
    cap = max(8, 4 * step)  # records a proposal may change (symmetric: module notes)
    width = cap * (1 + n_desc[v])
    log_j = np.empty(width, dtype=np.int64)
    log_w = np.empty(width, dtype=np.int64)
    log_k = np.empty(width, dtype=np.int64)
    log_ra = np.empty(width, dtype=np.int64)
    log_a = np.empty(width, dtype=np.int64)
    log_rb = np.empty(width, dtype=np.int64)
    log_b = np.empty(width, dtype=np.int64)
    old_cfg = np.empty(max(1, n_desc[v]), dtype=np.int64)
    sel = np.empty(cap, dtype=np.int64)
    shift = alpha[v] - 1.0
    accepted = 0
    proposed = 0
    for c in range(n_cfg):
        n_c = start[c + 1] - start[c]
        if n_c == 0:
            continue
        base = cell_off[v] + c * kv
        for _ in range(per_row):
            proposed += 1
            a = np.random.randint(0, kv - 1)
            # the pair's mass is what the move keeps, so a step bounded by it stays symmetric
            h = min(step / n_c, theta[base + a] + theta[base + a + 1])
            d = (2.0 * np.random.random() - 1.0) * h
            ta = theta[base + a] + d
            tb = theta[base + a + 1] - d
            if ta <= 0.0 or tb <= 0.0:
                continue
            lo = 0.0
            for k in range(a):
                lo += theta[base + k]
            edge = lo + ta  # the new boundary between a and a + 1, summed as the CDF is
            m = 0
            full = False
            for t in range(start[c], start[c + 1]):
                j = order[t]
                k = x[j, v]
                if (k == a + 1 and u[j, v] < edge) or (k == a and u[j, v] >= edge):
                    if m == cap:
                        full = True
                        break
                    sel[m] = j
                    m += 1
            if full:
                continue
            log_ratio = 0.0
            if shift != 0.0:
                log_ratio += shift * (
                    math.log(ta) + math.log(tb)
                    - math.log(theta[base + a]) - math.log(theta[base + a + 1])
                )  # fmt: skip
            used = 0
            for t in range(m):
                j = sel[t]
                knew = a if x[j, v] == a + 1 else a + 1
                delta, used = _carry(
                    x, j, v, knew, theta, u, desc, n_desc, old_cfg, card, n_par, par, stride,
                    cell_off, row_off, kind, coef, r, y, logt, acell, arow, lg_cell, lg_row,
                    lgd_cell, lgd_row, cell_n, row_n, log_j, log_w, log_k, log_ra, log_a,
                    log_rb, log_b, used,
                )  # fmt: skip
                log_ratio += delta
            if math.log(1.0 - np.random.random()) < log_ratio:
                accepted += 1
                theta[base + a] = ta
                theta[base + a + 1] = tb
            else:
                for q in range(used - 1, -1, -1):
                    _unmove(log_ra[q], log_a[q], log_rb[q], log_b[q], cell_n, row_n)
                    x[log_j[q], log_w[q]] = log_k[q]
    return accepted, proposed
