"""Pair moves: how many records of a Markov-blanket group hold each of two states, redrawn.

The state and the log target are those of :mod:`pymc_rdp.distributions._augmentation_kernels`
(latent records ``x``, their family tables ``cell_n``/``row_n``, the Bayesian-Dirichlet score of
the records with the CPTs integrated out times the releases' densities ``η``); the groups are
those of the heat-bath sweep (:mod:`pymc_rdp.distributions.augmentation_gibbs`): records that
share node ``v``'s parent configuration and, per child, the child's state and its other parents'.

Why
---
Within a group the records are exchangeable for ``v``: the target depends on their states only
through the group's count per state. A heat-bath sweep moves those counts one record at a time,
each record drawn given the others, so a count whose posterior is wide (a Dirichlet-mechanism
release pins a row's proportions only loosely) random-walks by about ``sqrt(n p (1 − p))`` per
sweep. A pair move redraws the split of two states' records in one step from its conditional
distribution. Where the children's tables pin each group's split (additive noise on every
family table), the slow direction runs across groups and pair moves gain little; where they do
not, at the *diffuse* nodes whose records change state in most of their heat-bath updates
(hailfinder's Date, whose records only Scenario's table tells apart), the split is wide again,
and count releases run pair moves over those nodes only (``"diffuse_pair"``). The numbers are
in the ``moves`` docstring of :class:`pymc_rdp.DataAugmentation`.

The move
--------
For node ``v`` and a group ``g``, the states are paired by a uniformly random permutation
(``(π₀, π₁), (π₂, π₃), …``; with an odd number of states the last one sits out). For a pair
``(a, b)`` holding ``T`` of the group's records, ``m`` of them in ``a``, the count ``m`` has the
conditional probability

.. math:: w(m) ∝ \\binom{T}{m} \\exp L(m),

``L`` the log target with the tables of ``v``'s family and its children's families at the
group's split ``(m, T − m)`` (the binomial counts the assignments of the ``T`` labelled records
with that split, all of equal target). Within a window ``W(m) = [m − h, m + h] ∩ [0, T]`` the move
draws ``m'`` from ``w`` restricted to ``W(m)`` and accepts it with probability
``min(1, Z(m) / Z(m'))``, ``Z(m) = Σ_{W(m)} w`` (a Metropolis–Hastings step whose proposal is
``w`` normalised on the window around the current value; the ratio of the forward and reverse
proposals cancels ``w`` and leaves the normalisers). When the window holds the whole range,
``Z(m) = Z(m')`` and the step is the exact Gibbs draw of the split. Then ``|m' − m|`` records
drawn uniformly from the source state move to the other. Given ``m'``, every assignment of that
split is then equally likely when every one was before: the number of ways to reach an
assignment ``A'`` from those of split ``m`` by adding records is
``binom(m', m)`` and each is taken with probability ``1 / binom(T − m, m' − m)``, and
``binom(m', m) / (binom(T, m) binom(T − m, m' − m)) = 1 / binom(T, m')``. So each pair's step
leaves the target invariant (the labelled records' conditional given that they stay in ``{a, b}``,
a partition of the state space that the step keeps).

The groups (and which of them are too small to visit) and the pairing depend on ``x`` only
through the attributes other than ``v``, and the steps of one group read and write only the
states of their pair, so the sweep is a composition of such kernels (Tierney 1994).

The move's rate in the sampler's statistics is the fraction of pairs whose split changed. The
cost of a pair is ``O(min(T, 2 h))`` evaluations of ``L`` (the current split's window, then
the part of the new split's window outside it; each the ``v``-family's two cells and, per
child, two cells and two rows), about a heat-bath sweep over the group for all of its pairs.
"""

# ruff: noqa: NPY002
from __future__ import annotations

import math

import numpy as np
from numba import njit
from scipy.special import gammaln

from pymc_rdp.distributions._augmentation_kernels import (
    _cell_value,
    _config,
    _row_value,
    inlined,
    per_record,
)
from pymc_rdp.distributions.augmentation_gibbs import _child_strides, group_order, node_major

__all__ = ["log_factorials", "pair_sweep"]


def log_factorials(n: int) -> np.ndarray:
    """``log k! = log Γ(k + 1)`` for ``k = 0..n`` (float64, :func:`scipy.special.gammaln`), the
    pair moves' table.

    Raises
    ------
    TypeError
        ``n`` not an integer.
    ValueError
        ``n`` negative.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"n must be an integer, got {n!r}")
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    return gammaln(np.arange(1, int(n) + 2, dtype=np.float64))


@per_record
def _pair_cells(
    v, ka, kb, base, cw0, xw, cs, card, cell_off, row_off, ch, nc, cell_n, row_n, cells, rows,
    cell0, row0,
):  # fmt: skip
    """The cells (and children's rows) whose counts follow a group's split between states
    ``a`` and ``b`` of ``v``, with their counts now: ``cells[0]``/``cells[1]`` are ``v``'s
    cells of ``a`` and ``b``, then per child ``i`` its cells of ``a`` and ``b``
    (``cells[2 + 2i]``, ``cells[3 + 2i]``) and rows (``rows[2i]``, ``rows[2i + 1]``)."""
    cells[0] = base + ka
    cells[1] = base + kb
    for i in range(nc):
        w = ch[v, i]
        ra = cw0[i] + ka * cs[v, i]
        rb = cw0[i] + kb * cs[v, i]
        cells[2 + 2 * i] = cell_off[w] + ra * card[w] + xw[i]
        cells[3 + 2 * i] = cell_off[w] + rb * card[w] + xw[i]
        rows[2 * i] = row_off[w] + ra
        rows[2 * i + 1] = row_off[w] + rb
    for i in range(2 * (1 + nc)):
        cell0[i] = cell_n[cells[i]]
    for i in range(2 * nc):
        row0[i] = row_n[rows[i]]


@per_record
def _pair_weights(
    lw, lo, first, last, m, total, v, nc, cells, cell0, rows, row0, ch, kind, coef, r, y, logt,
    acell, arow, lg_cell, lg_row, lgd_cell, lgd_row, log_fact,
):  # fmt: skip
    """``lw[i] = log binom(T, lo + i) + L(lo + i)`` for ``i`` in ``first..last``: the pair's
    cells at the split with ``lo + i − m`` records moved from state ``b`` to ``a``."""
    for i in range(first, last + 1):
        mm = lo + i
        s = mm - m
        t = log_fact[total] - log_fact[mm] - log_fact[total - mm]
        t += _cell_value(
            v, cells[0], cell0[0] + s, True, kind, coef, r, y, logt, acell, lg_cell, lgd_cell
        )
        t += _cell_value(
            v, cells[1], cell0[1] - s, True, kind, coef, r, y, logt, acell, lg_cell, lgd_cell
        )
        for q in range(nc):
            w = ch[v, q]
            t += _cell_value(
                w, cells[2 + 2 * q], cell0[2 + 2 * q] + s, True, kind, coef, r, y, logt, acell,
                lg_cell, lgd_cell,
            )  # fmt: skip
            t += _cell_value(
                w, cells[3 + 2 * q], cell0[3 + 2 * q] - s, True, kind, coef, r, y, logt, acell,
                lg_cell, lgd_cell,
            )  # fmt: skip
            t += _row_value(w, rows[2 * q], row0[2 * q] + s, True, kind, r, arow, lg_row, lgd_row)
            t += _row_value(
                w, rows[2 * q + 1], row0[2 * q + 1] - s, True, kind, r, arow, lg_row, lgd_row
            )
        lw[i] = t


@inlined
def _log_sum(lw, lo, hi):
    """``log Σ exp(lw[lo..hi])``."""
    top = lw[lo]
    for i in range(lo + 1, hi + 1):
        top = max(top, lw[i])
    s = 0.0
    for i in range(lo, hi + 1):
        s += math.exp(lw[i] - top)
    return top + math.log(s)


@njit(cache=True, nogil=True)
def pair_sweep(
    x, net, obs, cell_n, row_n, half_width, log_fact, key_space_limit, visit, min_group=2
):
    """Pair moves (module notes) of every node ``v`` with ``visit[v]`` and two or more states,
    in every group of at least ``min_group`` records (a group's size does not depend on ``v``'s
    states), one per pair of a random pairing of the states; ``half_width[v]`` the window ``h``
    of node ``v``. A node whose key space exceeds ``key_space_limit`` makes groups of one
    record. Each pair move leaves the collapsed target invariant on its own, so any fixed
    ``visit`` gives an exact sweep. Returns (pairs whose split changed, pairs proposed)."""
    card, n_par, par, stride, cell_off, row_off, n_ch, ch = net
    kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row = obs
    n, d = x.shape
    cs = _child_strides(card, n_par, par, stride, n_ch, ch)
    kmax = 1
    hmax = 1
    for v in range(d):
        kmax = max(kmax, card[v])
        hmax = max(hmax, half_width[v])
    width = max(1, ch.shape[1])
    cw0 = np.empty(width, dtype=np.int64)
    xw = np.empty(width, dtype=np.int64)
    cells = np.empty(2 * (1 + width), dtype=np.int64)  # (a, b) cells of v, then per child
    rows = np.empty(2 * width, dtype=np.int64)
    cell0 = np.empty(2 * (1 + width), dtype=np.int64)
    row0 = np.empty(2 * width, dtype=np.int64)
    keys = np.empty(n, dtype=np.int64)
    xt = node_major(x)  # the keys' columns; kept in step with x as records move
    bucket = np.empty(n, dtype=np.int64)
    cnt = np.zeros(kmax, dtype=np.int64)
    start = np.zeros(kmax + 1, dtype=np.int64)
    perm = np.empty(kmax, dtype=np.int64)
    lw = np.empty(4 * hmax + 1)
    pw = np.empty(4 * hmax + 1)
    changed = 0
    proposed = 0
    for v in range(d):
        kv = card[v]
        if kv < 2 or n == 0 or not visit[v]:
            continue
        h_v = half_width[v]
        nc = n_ch[v]
        order, group_keys = group_order(v, xt, card, n_par, par, n_ch, ch, keys, key_space_limit)
        g = 0
        while g < n:
            j0 = order[g]
            h = g
            while h < n and group_keys[h] == group_keys[g]:
                h += 1
            if h - g < min_group:
                g = h
                continue
            base = cell_off[v] + _config(x, j0, v, n_par, par, stride) * kv
            for i in range(nc):
                w = ch[v, i]
                cw0[i] = _config(x, j0, w, n_par, par, stride) - x[j0, v] * cs[v, i]
                xw[i] = x[j0, w]
            # the group's records bucketed by state
            for k in range(kv):
                cnt[k] = 0
            for t in range(g, h):
                cnt[x[order[t], v]] += 1
            start[0] = 0
            for k in range(kv):
                start[k + 1] = start[k] + cnt[k]
            for k in range(kv):
                perm[k] = start[k]  # fill pointers
            for t in range(g, h):
                j = order[t]
                k = x[j, v]
                bucket[perm[k]] = j
                perm[k] += 1
            # a uniformly random pairing of the states
            for k in range(kv):
                perm[k] = k
            for k in range(kv - 1, 0, -1):
                q = np.random.randint(0, k + 1)
                perm[k], perm[q] = perm[q], perm[k]
            for p in range(kv // 2):
                ka = perm[2 * p]
                kb = perm[2 * p + 1]
                total = cnt[ka] + cnt[kb]
                if total == 0:
                    continue
                proposed += 1
                m = cnt[ka]
                _pair_cells(
                    v, ka, kb, base, cw0, xw, cs, card, cell_off, row_off, ch, nc, cell_n,
                    row_n, cells, rows, cell0, row0,
                )  # fmt: skip
                lo = max(0, m - 2 * h_v)  # lw[i] holds L at m = lo + i
                a0 = max(0, m - h_v) - lo
                b0 = min(total, m + h_v) - lo
                _pair_weights(
                    lw, lo, a0, b0, m, total, v, nc, cells, cell0, rows, row0, ch, kind, coef,
                    r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row, log_fact,
                )  # fmt: skip
                # m' ∝ w on W(m), accepted with probability Z(m) / Z(m')
                top = lw[a0]
                for i in range(a0 + 1, b0 + 1):
                    top = max(top, lw[i])
                z = 0.0
                for i in range(a0, b0 + 1):
                    pw[i] = math.exp(lw[i] - top)
                    z += pw[i]
                u = np.random.random() * z
                new = b0
                acc = 0.0
                for i in range(a0, b0):
                    acc += pw[i]
                    if u < acc:
                        new = i
                        break
                m1 = new + lo
                if m1 == m:
                    continue
                a1 = max(0, m1 - h_v) - lo
                b1 = min(total, m1 + h_v) - lo
                if a1 != a0 or b1 != b0:  # the part of W(m') outside W(m), then Z(m')
                    if a1 < a0:
                        _pair_weights(
                            lw, lo, a1, a0 - 1, m, total, v, nc, cells, cell0, rows, row0, ch,
                            kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell,
                            lgd_row, log_fact,
                        )  # fmt: skip
                    if b1 > b0:
                        _pair_weights(
                            lw, lo, b0 + 1, b1, m, total, v, nc, cells, cell0, rows, row0, ch,
                            kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell,
                            lgd_row, log_fact,
                        )  # fmt: skip
                    log_ratio = top + math.log(z) - _log_sum(lw, a1, b1)
                    if math.log(1.0 - np.random.random()) >= log_ratio:
                        continue
                s = m1 - m
                # |s| records of the source state, drawn uniformly, move to the other
                src = kb if s > 0 else ka
                dst = ka if s > 0 else kb
                first = start[src]
                size = cnt[src]
                for t in range(abs(s)):
                    q = first + t + np.random.randint(0, size - t)
                    bucket[first + t], bucket[q] = bucket[q], bucket[first + t]
                    x[bucket[first + t], v] = dst
                    xt[v, bucket[first + t]] = dst
                changed += 1
                cell_n[cells[0]] += s
                cell_n[cells[1]] -= s
                for i in range(nc):
                    cell_n[cells[2 + 2 * i]] += s
                    cell_n[cells[3 + 2 * i]] -= s
                    row_n[rows[2 * i]] += s
                    row_n[rows[2 * i + 1]] -= s
            g = h
    return changed, proposed
