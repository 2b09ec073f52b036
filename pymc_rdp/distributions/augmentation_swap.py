"""Swap moves: two records exchange their value of one node, which only that node's table sees.

The state and the log target are those of :mod:`pymc_rdp.distributions._augmentation_kernels`
(latent records ``x``, their family tables ``cell_n``/``row_n``, the Bayesian-Dirichlet score of
the records with the CPTs integrated out times the releases' densities ``η``).

Why
---
Where a node ``v``'s parent configurations (the rows of its table) split records that its
children's tables pool, the children's releases pin the composition of ``v``'s values summed
over those rows, while each row's own composition is pinned only by its own noisy cells. On
Adult, ``capital-gain`` (parents sex, education, occupation) has children ``capital-loss``
(sex, occupation, capital-gain) and ``income`` (occupation, capital-gain, capital-loss): the
number of records with a non-zero capital gain in one education's row moves against another
education's with nothing but that row's cells to hold it. Heat-bath updates move such a count
by ±1 per changed record, a random walk whose steps are the row's few rare records, and the
count drifted over hundreds of iterations. A swap moves it directly.

The move
--------
The *context* of ``v`` is every node other than ``v`` in the families of its children,
``C(v) = ⋃_{w ∈ ch(v)} ({w} ∪ pa(w)) \\ {v}``. Two records ``A``, ``B`` that agree on ``C(v)``
and exchange their values of ``v`` leave every child's table as it was (each child's family
holds the same multiset of values), and ``v``'s own table changes in four cells:
``(c_A, k_A) − 1``, ``(c_A, k_B) + 1``, ``(c_B, k_B) − 1``, ``(c_B, k_A) + 1``, with row totals
unchanged. Only a node with a parent outside ``C(v)`` can have ``c_A ≠ c_B`` in a group; the
others are skipped.

Proposal: a record ``A`` uniformly among all ``N``, then ``B`` uniformly among the records of
``A``'s context group whose value of ``v`` differs from ``k_A``. A swap keeps every record's
context and the number of each value of ``v`` in each group (``g_k``), so the pair ``{A, B}``
is proposed with probability ``(1/N)(1/(g − g_{k_A}) + 1/(g − g_{k_B}))`` before and after it:
the proposal is symmetric (Metropolis et al. 1953) and the acceptance ratio is the target's,
four cell terms of ``v``'s family. A pair in the same row changes no table and is accepted.

Each proposal is a Metropolis kernel that leaves the target invariant; a sweep composes them.
Records are grouped by a radix sort of their context key (:func:`~pymc_rdp.distributions.
augmentation_gibbs.radix_order`), with the value of ``v`` as the last digit, so each group's
records of one value are contiguous; an accepted swap exchanges the two records' places.
"""

# ruff: noqa: NPY002
from __future__ import annotations

import math

import numpy as np
from numba import njit

from pymc_rdp.distributions._augmentation_kernels import _config, _shift
from pymc_rdp.distributions.augmentation_gibbs import KEY_SPACE_LIMIT, radix_order

__all__ = ["swap_contexts", "swap_sweep"]


def swap_contexts(
    n_par: np.ndarray, par: np.ndarray, n_ch: np.ndarray, ch: np.ndarray, card: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every node's context ``C(v)`` (module notes) and whether swaps of ``v`` can move its table.

    Returns
    -------
    n_ctx : numpy.ndarray
        (nodes,) int64, the size of each context.
    ctx : numpy.ndarray
        (nodes, width) int64, the context's nodes (padded with −1).
    useful : numpy.ndarray
        (nodes,) bool: ``v`` has two or more states, a parent outside ``C(v)`` and a key
        space (the states of ``C(v)`` and ``v``) below
        :data:`~pymc_rdp.distributions.augmentation_gibbs.KEY_SPACE_LIMIT`.
    """
    d = int(card.shape[0])
    sets = []
    for v in range(d):
        s: set[int] = set()
        for i in range(int(n_ch[v])):
            w = int(ch[v, i])
            s.add(w)
            s.update(int(p) for p in par[w, : n_par[w]])
        s.discard(v)
        sets.append(sorted(s))
    width = max(1, max((len(s) for s in sets), default=1))
    ctx = np.full((d, width), -1, dtype=np.int64)
    n_ctx = np.zeros(d, dtype=np.int64)
    useful = np.zeros(d, dtype=bool)
    for v, s in enumerate(sets):
        n_ctx[v] = len(s)
        ctx[v, : len(s)] = s
        parents = {int(p) for p in par[v, : n_par[v]]}
        space = float(card[v]) * math.prod(float(card[w]) for w in s)
        useful[v] = card[v] >= 2 and bool(parents - set(s)) and space < KEY_SPACE_LIMIT
    return n_ctx, ctx, useful


@njit(cache=True, nogil=True)
def _groups(v, x, card, n_ctx, ctx):
    """Records sorted by (context key, value of ``v``): ``order``, each record's place ``pos``,
    and per place the bounds of its group and of its group's records with its value."""
    n = x.shape[0]
    keys = np.empty(n, dtype=np.int64)
    space = 1.0
    for i in range(n_ctx[v]):
        space *= card[ctx[v, i]]
    space *= card[v]
    for j in range(n):
        key = 0
        for i in range(n_ctx[v]):
            w = ctx[v, i]
            key = key * card[w] + x[j, w]
        keys[j] = key * card[v] + x[j, v]
    order = radix_order(keys, space)
    pos = np.empty(n, dtype=np.int64)
    g_lo = np.empty(n, dtype=np.int64)
    g_hi = np.empty(n, dtype=np.int64)
    k_lo = np.empty(n, dtype=np.int64)
    k_hi = np.empty(n, dtype=np.int64)
    kv = card[v]
    t = 0
    while t < n:
        group = keys[order[t]] // kv
        e = t
        while e < n and keys[order[e]] // kv == group:
            e += 1
        s = t
        while s < e:
            value = keys[order[s]]
            f = s
            while f < e and keys[order[f]] == value:
                f += 1
            for q in range(s, f):
                pos[order[q]] = q
                g_lo[q] = t
                g_hi[q] = e
                k_lo[q] = s
                k_hi[q] = f
            s = f
        t = e
    return order, pos, g_lo, g_hi, k_lo, k_hi


@njit(cache=True, nogil=True)
def swap_sweep(v, n_moves, n_ctx, ctx, x, net, obs, cell_n, row_n):
    """``n_moves`` swap proposals of node ``v`` (module notes). Returns (accepted, proposed):
    proposals whose pair changes a table, and those accepted."""
    card, n_par, par, stride, cell_off, _row_off, _n_ch, _ch = net
    kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row = obs
    n = x.shape[0]
    if n < 2 or card[v] < 2:
        return 0, 0
    order, pos, g_lo, g_hi, k_lo, k_hi = _groups(v, x, card, n_ctx, ctx)
    kv = card[v]
    cells = np.empty(4, dtype=np.int64)  # v's cells of the pair: out of, into, out of, into
    accepted = 0
    proposed = 0
    for _ in range(n_moves):
        a = np.random.randint(0, n)
        p = pos[a]
        lo, hi, klo, khi = g_lo[p], g_hi[p], k_lo[p], k_hi[p]
        others = (hi - lo) - (khi - klo)
        if others == 0:
            continue
        t = lo + np.random.randint(0, others)
        if t >= klo:
            t += khi - klo
        b = order[t]
        ka = x[a, v]
        kb = x[b, v]
        ca = _config(x, a, v, n_par, par, stride)
        cb = _config(x, b, v, n_par, par, stride)
        if ca != cb:
            proposed += 1
            base_a = cell_off[v] + ca * kv
            base_b = cell_off[v] + cb * kv
            cells[0], cells[1], cells[2], cells[3] = (
                base_a + ka,
                base_a + kb,
                base_b + kb,
                base_b + ka,
            )
            delta = 0.0
            for q in range(4):
                delta += _shift(
                    v, cells[q], np.int64(-1), -1 if q % 2 == 0 else 1, True, cell_n, row_n, kind,
                    coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row,
                )  # fmt: skip
            if math.log(1.0 - np.random.random()) >= delta:
                cell_n[base_a + ka] += 1
                cell_n[base_a + kb] -= 1
                cell_n[base_b + kb] += 1
                cell_n[base_b + ka] -= 1
                continue
            accepted += 1
        # accepted (or a same-row pair, which changes no table): exchange values and places
        x[a, v] = kb
        x[b, v] = ka
        order[p] = b
        order[t] = a
        pos[a] = t
        pos[b] = p
    return accepted, proposed
