"""Collapsed row-scanning block moves of the data-augmentation sampler.

The state and the log target are those of :mod:`pymc_rdp.distributions._augmentation_kernels`
(latent records ``x``, their family tables ``cell_n``/``row_n``, the Bayesian-Dirichlet score
of the records with the CPTs integrated out times the releases' densities ``η``); the moves here
reuse its term functions.

Why rows
--------
A block move of node ``v`` changes the state of ``m`` records within one parent configuration
``c`` (one row of ``v``'s table). Picking the first record uniformly among all ``N`` records
visits a row in proportion to its size: a row of 20 records out of 32,561 is proposed about
once per 1,600 moves, so the cells of small rows, whose counts the release leaves most
uncertain, barely move. The moves here visit every non-empty row of ``v`` in turn and make
``per_row`` proposals in each, so every row's counts random-walk at the same rate.

Exactness
---------
In row ``c`` (``e`` non-empty cells) the proposal draws the source state ``k₁`` uniformly among
the non-empty cells (count ``n₁``), another state ``k₂`` uniformly among the other ``K − 1``
(count ``n₂``), ``m`` uniformly in ``1..min(M, n₁)`` and a uniform ``m``-subset ``S`` of the
cell's records. The reverse move stays in row ``c`` (a node's state is not one of its own
parents) and draws the same ``S`` from cell ``k₂`` (``n₂ + m`` records) with the number of
non-empty cells after the move, ``e' = e − [m = n₁] + [n₂ = 0]``. The Hastings ratio is

.. math:: \\frac{q(\\text{reverse})}{q(\\text{forward})} = \\frac{e\\, \\min(M, n_1)\\,
          \\binom{n_1}{m}}{e'\\, \\min(M, n_2 + m)\\, \\binom{n_2 + m}{m}}.

Each row's update is a Metropolis–Hastings kernel that leaves the target invariant; a scan over
rows is their composition (Tierney 1994, "Markov chains for exploring posterior
distributions").

State pairs weighted by their counts
------------------------------------
The uniform source state visits every pair of states about equally often. In a row where one
cell holds most records (a node that copies its parent, whose diagonal cell holds most of each
row, or a mostly-zero share), only the pairs that involve that cell change its count, and they
are about ``2 / K`` of the proposals. :func:`weighted_row_proposal` draws the unordered pair
``{a, b}`` with probability proportional to ``n_a + n_b`` instead: a record of the row
uniformly (its state ``a``), then ``b`` uniformly among the other ``K − 1`` states, which gives

.. math:: P(\\{a, b\\}) = \\frac{n_a + n_b}{(K - 1)\\, n_c}.

A move between ``a`` and ``b`` keeps ``n_a + n_b`` and the row's total ``n_c``, so the reverse
move draws the same pair with the same probability and the pair's factor cancels from the
Hastings ratio. The direction is then ``a → b`` when cell ``b`` is empty, and otherwise either
way with probability 1/2; with ``m``, ``S`` and the reverse move as above, the ratio is

.. math:: \\frac{q(\\text{reverse})}{q(\\text{forward})} = \\frac{d'\\, \\min(M, n_1)\\,
          \\binom{n_1}{m}}{d\\, \\min(M, n_2 + m)\\, \\binom{n_2 + m}{m}},

``d`` the forward direction's probability (1 or 1/2) and ``d'`` the reverse one's (1 when the
move empties the source cell, else 1/2). The pairs that involve a large cell are then proposed
in proportion to its share of the row.

Persistent directions
---------------------
Where the releases pin a row's counts loosely, those counts drift like a random walk: an
accepted block move goes one way or the other about equally often, so a count needs about
``(s/m)²`` accepted moves of ``m`` records to cross its posterior's spread ``s``.
:func:`guided_row_proposal` draws the pair ``{a, b}`` as above and keeps its direction (``a → b``
or ``b → a``) in the chain's state, one per row and pair: the records move along it, and it is
reversed when the proposal is rejected, or proposes nothing because its source cell is empty,
and kept when the proposal is accepted (the guided walk of Gustafson 1998, "A guided walk
Metropolis algorithm", Statistics and Computing 8; the lifting of Diaconis, Holmes & Neal 2000,
"Analysis of a nonreversible Markov chain sampler"). Between rejections a count then keeps
moving one way, about ``s/m`` moves to cross its spread instead of ``(s/m)²``.

The chain's state is ``(x, σ)``, ``σ`` the directions, and its target ``π(x)`` times the
uniform distribution over ``σ``. A proposal from ``x`` to ``x'`` along ``σ`` and its reverse
from ``x'`` along the opposite direction draw the same pair with the same probability, and
without the directions' coins the selection's ratio is

.. math:: \\frac{q_{-σ}(x' → x)}{q_σ(x → x')} = \\frac{\\min(M, n_1)\\, \\binom{n_1}{m}}
          {\\min(M, n_2 + m)\\, \\binom{n_2 + m}{m}}.

The move is accepted with the Metropolis–Hastings probability ``α_σ(x, x')`` for this pair of
proposals, so ``π(x) q_σ(x → x') α_σ(x, x') = π(x') q_{-σ}(x' → x) α_{-σ}(x', x)``. Summed over
``x'``, the accepted moves into ``(x, σ)`` then carry ``π(x)/2`` times the probability that a
move from ``x`` along ``-σ`` is accepted, and the rejected moves from ``(x, -σ)``, which reverse
it, carry ``π(x)/2`` times the rest: ``π × uniform`` is invariant. Each pair's kernel reads and
reverses only its own direction and the other moves leave ``σ`` alone, so their composition
keeps the same target, whose marginal over ``x`` is the posterior.

The heat-bath updates of single attributes are in
:mod:`pymc_rdp.distributions.augmentation_gibbs`.
"""

# ruff: noqa: NPY002
from __future__ import annotations

import math

import numpy as np
from numba import njit

from pymc_rdp.distributions._augmentation_kernels import (
    _config,
    _flip,
    _log_choose,
    _other_state,
    _swap,
    _undo,
    inlined,
    per_record,
)

__all__ = ["guided_row_proposal", "row_block_sweep", "row_proposal", "weighted_row_proposal"]


@inlined
def _buckets(v, x, card, n_par, par, stride, cell_off, cell_n):
    """Records sorted by their local cell ``c K + k`` of family ``v`` (a counting sort):
    ``order`` (records), ``pos`` (each record's place), ``start`` and ``size`` per cell."""
    n = x.shape[0]
    kv = card[v]
    n_local = cell_off[v + 1] - cell_off[v]
    start = np.empty(n_local + 1, dtype=np.int64)
    size = np.empty(n_local, dtype=np.int64)
    acc = 0
    for l in range(n_local):
        start[l] = acc
        size[l] = cell_n[cell_off[v] + l]
        acc += size[l]
    start[n_local] = acc
    fill = start[:n_local].copy()
    order = np.empty(n, dtype=np.int64)
    pos = np.empty(n, dtype=np.int64)
    for j in range(n):
        l = _config(x, j, v, n_par, par, stride) * kv + x[j, v]
        order[fill[l]] = j
        pos[j] = fill[l]
        fill[l] += 1
    return order, pos, start, size


@per_record
def _take(order, pos, start, size, cell, m, sel):
    """An ordered uniform ``m``-tuple of the records of cell ``cell`` (buckets of
    :func:`_buckets`) into ``sel[:m]``, moved to the front of the cell."""
    s0 = start[cell]
    n = size[cell]
    for t in range(m):
        _swap(order, pos, s0 + t, s0 + t + np.random.randint(0, n - t))
        sel[t] = order[s0 + t]


@per_record
def _relocate(order, pos, start, size, p, l1, l2):
    """Move the record at place ``p`` (in cell ``l1``) into cell ``l2``, keeping cells
    contiguous (one swap per cell boundary crossed)."""
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


@per_record
def _block_of_pair(size, first, k1, k2, nonempty, max_m, log_sel):
    """The rest of a selection once its source state ``k1`` and target ``k2`` are drawn:
    ``m`` uniformly in ``1..min(max_m, n₁)``, and ``log_sel`` plus the log Hastings ratio of
    ``m`` and of the records' choice (module notes). Returns (l1, l2, m, non-empty cells after
    the move, log_sel)."""
    l1 = first + k1
    l2 = first + k2
    n1 = size[l1]
    n2 = size[l2]
    top = min(max_m, n1)
    m = 1 + np.random.randint(0, top)
    after = nonempty - (1 if m == n1 else 0) + (1 if n2 == 0 else 0)
    log_sel += _log_choose(n1, m) - _log_choose(n2 + m, m)
    log_sel += math.log(top) - math.log(min(max_m, n2 + m))
    return l1, l2, m, after, log_sel


@per_record
def row_proposal(size, first, kv, nonempty, max_m):
    """The selection of a row-block move in the row whose cells start at local cell ``first``
    (module notes): the source cell ``l1`` uniformly among the row's ``nonempty`` non-empty
    cells, the target ``l2`` uniformly among the other states, ``m`` uniformly in
    ``1..min(max_m, n₁)``. Returns (l1, l2, m, non-empty cells after the move, log Hastings
    ratio of the selection, records' choice included)."""
    pick = np.random.randint(0, nonempty)
    k1 = 0
    for k in range(kv):
        if size[first + k] > 0:
            if pick == 0:
                k1 = k
                break
            pick -= 1
    k2 = _other_state(k1, kv)
    l1, l2, m, after, log_sel = _block_of_pair(size, first, k1, k2, nonempty, max_m, 0.0)
    log_sel += math.log(nonempty) - math.log(after)
    return l1, l2, m, after, log_sel


@per_record
def _weighted_pair(size, first, kv):
    """An unordered pair of states drawn with probability ``(n_a + n_b) / ((K − 1) n_c)``
    (module notes): ``a`` the state of a record of the row drawn uniformly, ``b`` uniformly
    among the other states. Returns ``(a, b)``."""
    n_c = 0
    for k in range(kv):
        n_c += size[first + k]
    pick = np.random.randint(0, n_c)  # a record of the row: its state is a
    ka = 0
    for k in range(kv):
        if pick < size[first + k]:
            ka = k
            break
        pick -= size[first + k]
    return ka, _other_state(ka, kv)


@per_record
def weighted_row_proposal(size, first, kv, nonempty, max_m):
    """The selection of a row-block move with the pair of states drawn in proportion to its
    records (module notes, "State pairs weighted by their counts"), in the row whose cells
    start at local cell ``first``. Returns what :func:`row_proposal` returns."""
    ka, kb = _weighted_pair(size, first, kv)
    log_sel = 0.0
    if size[first + kb] == 0:  # towards the empty cell: the only direction that moves records
        k1, k2 = ka, kb
    else:
        log_sel += math.log(2.0)  # either direction, with probability 1/2
        k1, k2 = (ka, kb) if np.random.random() < 0.5 else (kb, ka)
    l1, l2, m, after, log_sel = _block_of_pair(size, first, k1, k2, nonempty, max_m, log_sel)
    if m < size[l1]:  # the reverse move's direction is a coin's too
        log_sel -= math.log(2.0)
    return l1, l2, m, after, log_sel


@per_record
def guided_row_proposal(size, first, kv, nonempty, max_m, dirs, row):
    """The selection of a row-block move with the pair of states drawn in proportion to its
    records, as :func:`weighted_row_proposal`, and its direction read from ``dirs`` (module
    notes, "Persistent directions"): ``dirs[(row K + a) K + b]`` for the pair ``a < b`` of
    row ``row``, 0 for ``a → b``. Returns (l1, l2, m, non-empty cells after the move, log
    Hastings ratio of the selection, the pair's index in ``dirs``); ``m = 0`` when the
    direction's source cell is empty (no move: a rejection)."""
    ka, kb = _weighted_pair(size, first, kv)
    lo, hi = min(ka, kb), max(ka, kb)
    at = (row * kv + lo) * kv + hi
    k1, k2 = (lo, hi) if dirs[at] == 0 else (hi, lo)
    if size[first + k1] == 0:
        return first + k1, first + k2, 0, nonempty, 0.0, at
    l1, l2, m, after, log_sel = _block_of_pair(size, first, k1, k2, nonempty, max_m, 0.0)
    return l1, l2, m, after, log_sel, at


@njit(cache=True, nogil=True)
def row_block_sweep(v, per_row, max_m, x, net, obs, cell_n, row_n):
    """Collapsed block moves of node ``v``, ``per_row`` proposals in every non-empty row.

    See the module notes for the proposal and its Hastings ratio; the log ratio of the target
    sums the moved records' changes to ``v``'s family row and to their rows of ``v``'s
    children's families. Returns (accepted, proposed).
    """
    card, n_par, par, stride, cell_off, row_off, n_ch, ch = net
    kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row = obs
    n = x.shape[0]
    kv = card[v]
    if kv < 2 or n == 0 or per_row < 1:
        return 0, 0
    order, pos, start, size = _buckets(v, x, card, n_par, par, stride, cell_off, cell_n)
    n_cfg = (cell_off[v + 1] - cell_off[v]) // kv
    width = 1 + ch.shape[1]
    cap = max_m * width
    log_a = np.empty(cap, dtype=np.int64)
    log_ra = np.empty(cap, dtype=np.int64)
    log_b = np.empty(cap, dtype=np.int64)
    log_rb = np.empty(cap, dtype=np.int64)
    sel = np.empty(max_m, dtype=np.int64)
    accepted = 0
    proposed = 0
    for c in range(n_cfg):
        n_c = row_n[row_off[v] + c]
        if n_c == 0:
            continue
        first = c * kv
        nonempty = np.int64(0)
        for k in range(kv):
            if size[first + k] > 0:
                nonempty += 1
        for _ in range(per_row):
            proposed += 1
            # the source state uniformly among the row's non-empty cells
            l1, l2, m, after, delta = row_proposal(size, first, kv, nonempty, max_m)
            n1 = size[l1]
            k1 = l1 - first
            k2 = l2 - first
            i = order[start[l1] + np.random.randint(0, n1)]
            s0 = start[l1]
            _swap(order, pos, pos[i], s0)
            for t in range(1, m):
                _swap(order, pos, s0 + t, s0 + t + np.random.randint(0, n1 - t))
            for t in range(m):
                sel[t] = order[s0 + t]
            used = 0
            for t in range(m):
                j = sel[t]
                delta += _flip(
                    x, j, v, k2, card, n_par, par, stride, cell_off, row_off, n_ch, ch, kind,
                    coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row, cell_n,
                    row_n, log_a, log_ra, log_b, log_rb, used,
                )  # fmt: skip
                used += 1 + n_ch[v]
                x[j, v] = k2  # later records' children see the earlier records moved
            if math.log(1.0 - np.random.random()) < delta:
                accepted += 1
                nonempty = after
                for t in range(m):
                    _relocate(order, pos, start, size, pos[sel[t]], l1, l2)
            else:
                _undo(log_ra, log_a, log_rb, log_b, used, cell_n, row_n)
                for t in range(m):
                    x[sel[t], v] = k1
    return accepted, proposed
