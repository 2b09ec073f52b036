"""Collapsed row-block moves that carry the moved records' descendants along.

The state and the log target are those of :mod:`pymc_rdp.distributions._augmentation_kernels`
(latent records, their family tables, the Bayesian-Dirichlet score of the records with the CPTs
integrated out times the releases' densities ``η``).

Why descendants
---------------
A row-block move (:func:`pymc_rdp.distributions.augmentation_moves.row_block_sweep`) changes the
state of ``m`` records of node ``v`` within one parent configuration and keeps their other
attributes. For a node with children, the moved records then sit in their children's rows for
the new state with the children's values of the old one, and the Bayesian-Dirichlet score of
those rows resists: on Adult the cells of the upper nodes (education, occupation) were the
slowest to mix. Here the moved records' values at every descendant of ``v`` are redrawn, node by
node in topological order and record by record, from the collapsed predictive

.. math:: q(x_{jw} = k) = \\frac{n_{w, c, k} + α_w}{n_{w, c} + K_w α_w},

``c`` the record's (new) parent configuration of ``w`` and ``n`` the counts of the records
already placed. By the chain rule of the Dirichlet-multinomial marginal likelihood, that is
the factor the score gains when the record joins, so the descendants' part of the score cancels
against the proposal and the acceptance rests on the releases' densities ``η`` and ``v``'s own
row.

Exactness
---------
Write ``D`` for ``v`` and its descendants and ``S = (j_1, …, j_m)`` for the moved records in the
order drawn. Only the families of ``D`` change (a node with a parent in ``D`` is in ``D``). With
``n⁻`` the tables without the records of ``S`` in those families, the forward proposal places
``j_1, …, j_m`` in turn, each at every node of ``D`` in topological order, ``v`` at the new state
``k₂`` and the descendants drawn from ``q``; its probability is the product of those ``q`` terms
and of the selection (source cell among the row's non-empty cells, target state, ``m``, the
ordered records), the selection's Hastings ratio being the one of
:func:`~pymc_rdp.distributions.augmentation_moves.row_block_sweep`. The reverse move selects the
same ordered records in cell ``k₂`` and proposes their old values by the same sequential
predictive from ``n⁻``, so ``q(reverse)`` is computed by replaying the old values from ``n⁻``.
The acceptance probability is

.. math:: \\min\\Bigl(1, \\frac{π(x')\\, q(x' → x)}{π(x)\\, q(x → x')}\\Bigr),

a Metropolis–Hastings kernel (Hastings 1970); the target ratio is computed in full (score and
``η``) rather than relying on the cancellation, so the kernel is exact whatever ``q`` is.
"""

# ruff: noqa: NPY002
from __future__ import annotations

import math

import numpy as np
from numba import njit

from pymc_rdp.distributions._augmentation_kernels import (
    _config,
    _shift,
    _swap,
    per_record,
)
from pymc_rdp.distributions.augmentation_moves import _buckets, _relocate, row_proposal

__all__ = ["descendants", "subtree_sweep"]


def descendants(children: dict[int, list[int]], n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Every node's descendants in topological (index) order, padded: ``(desc, n_desc)``.

    ``children`` maps a node index to its children's indices; nodes are indexed in a
    topological order, so sorting a node's descendants by index orders them topologically.
    """
    found: list[list[int]] = []
    for v in range(n_nodes):
        seen: set[int] = set()
        stack = list(children.get(v, ()))
        while stack:
            w = stack.pop()
            if w not in seen:
                seen.add(w)
                stack.extend(children.get(w, ()))
        found.append(sorted(seen))
    width = max(1, max((len(d) for d in found), default=0))
    desc = np.zeros((n_nodes, width), dtype=np.int64)
    n_desc = np.zeros(n_nodes, dtype=np.int64)
    for v, d in enumerate(found):
        desc[v, : len(d)] = d
        n_desc[v] = len(d)
    return desc, n_desc


@per_record
def _place(x, j, w, card, n_par, par, stride, cell_off, row_off):
    """Record j's (cell, row) of family ``w`` under its current values."""
    c = _config(x, j, w, n_par, par, stride)
    return cell_off[w] + c * card[w] + x[j, w], row_off[w] + c


@per_record
def _take_out(x, sel, m, dset, n_d, card, n_par, par, stride, cell_off, row_off, cell_n, row_n):
    """Remove the records ``sel[:m]`` from the families of ``dset[:n_d]`` (counts only)."""
    for t in range(m):
        j = sel[t]
        for i in range(n_d):
            cell, row = _place(x, j, dset[i], card, n_par, par, stride, cell_off, row_off)
            cell_n[cell] -= 1
            row_n[row] -= 1


@per_record
def _replay(
    x, sel, m, dset, n_d, alpha, card, n_par, par, stride, cell_off, row_off, cell_n, row_n
):
    """Put the records back with their current values, in order; the log probability of the
    sequential predictive proposing their descendants' values (``dset[0]`` is ``v``)."""
    lq = 0.0
    for t in range(m):
        j = sel[t]
        for i in range(n_d):
            w = dset[i]
            cell, row = _place(x, j, w, card, n_par, par, stride, cell_off, row_off)
            if i > 0:
                lq += math.log(cell_n[cell] + alpha[w]) - math.log(row_n[row] + card[w] * alpha[w])
            cell_n[cell] += 1
            row_n[row] += 1
    return lq


@njit(cache=True, nogil=True)
def subtree_sweep(v, per_row, max_m, alpha, desc, n_desc, x, net, obs, cell_n, row_n):
    """Collapsed row-block moves of node ``v`` with its descendants redrawn (module notes),
    ``per_row`` proposals in every non-empty row. Returns (accepted, proposed)."""
    card, n_par, par, stride, cell_off, row_off, _n_ch, _ch = net
    kind, coef, r, y, logt, acell, arow, lg_cell, lg_row = obs
    n = x.shape[0]
    kv = card[v]
    if kv < 2 or n == 0 or per_row < 1:
        return 0, 0
    order, pos, start, size = _buckets(v, x, card, n_par, par, stride, cell_off, cell_n)
    n_cfg = (cell_off[v + 1] - cell_off[v]) // kv
    n_d = 1 + n_desc[v]
    dset = np.empty(n_d, dtype=np.int64)
    dset[0] = v
    for i in range(n_desc[v]):
        dset[1 + i] = desc[v, i]
    kmax = 1
    for i in range(n_d):
        kmax = max(kmax, card[dset[i]])
    wts = np.empty(kmax)
    sel = np.empty(max_m, dtype=np.int64)
    old = np.empty((max_m, n_d), dtype=np.int64)
    accepted = 0
    proposed = 0
    for c in range(n_cfg):
        if row_n[row_off[v] + c] == 0:
            continue
        first = c * kv
        nonempty = 0
        for k in range(kv):
            if size[first + k] > 0:
                nonempty += 1
        for _ in range(per_row):
            proposed += 1
            l1, l2, m, after, log_ratio = row_proposal(size, first, kv, nonempty, max_m)
            n1 = size[l1]
            k2 = l2 - first
            s0 = start[l1]
            for t in range(m):  # an ordered uniform m-tuple of the cell's records
                _swap(order, pos, s0 + t, s0 + t + np.random.randint(0, n1 - t))
                sel[t] = order[s0 + t]
                for i in range(n_d):
                    old[t, i] = x[sel[t], dset[i]]
            # q(reverse): replay the old values from the tables without S
            _take_out(
                x, sel, m, dset, n_d, card, n_par, par, stride, cell_off, row_off, cell_n, row_n
            )
            log_ratio += _replay(
                x,
                sel,
                m,
                dset,
                n_d,
                alpha,
                card,
                n_par,
                par,
                stride,
                cell_off,
                row_off,
                cell_n,
                row_n,
            )
            # π(x') / π(x): take S out again (scored), then place the new values (scored)
            for t in range(m):
                j = sel[t]
                for i in range(n_d):
                    w = dset[i]
                    cell, row = _place(x, j, w, card, n_par, par, stride, cell_off, row_off)
                    log_ratio += _shift(
                        w,
                        cell,
                        row,
                        -1,
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
                    )
            for t in range(m):
                j = sel[t]
                x[j, v] = k2
                for i in range(n_d):
                    w = dset[i]
                    if i > 0:  # draw from the sequential predictive; -log q(forward)
                        cw = _config(x, j, w, n_par, par, stride)
                        base = cell_off[w] + cw * card[w]
                        total = 0.0
                        for k in range(card[w]):
                            wts[k] = cell_n[base + k] + alpha[w]
                            total += wts[k]
                        u = np.random.random() * total
                        kw = card[w] - 1
                        acc = 0.0
                        for k in range(card[w] - 1):
                            acc += wts[k]
                            if u < acc:
                                kw = k
                                break
                        x[j, w] = kw
                        log_ratio -= math.log(wts[kw]) - math.log(total)
                    cell, row = _place(x, j, w, card, n_par, par, stride, cell_off, row_off)
                    log_ratio += _shift(
                        w,
                        cell,
                        row,
                        1,
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
                    )
            if math.log(1.0 - np.random.random()) < log_ratio:
                accepted += 1
                nonempty = after
                for t in range(m):
                    _relocate(order, pos, start, size, pos[sel[t]], l1, l2)
            else:
                _take_out(
                    x, sel, m, dset, n_d, card, n_par, par, stride, cell_off, row_off, cell_n, row_n
                )
                for t in range(m):
                    for i in range(n_d):
                        x[sel[t], dset[i]] = old[t, i]
                for t in range(m):
                    for i in range(n_d):
                        cell, row = _place(
                            x, sel[t], dset[i], card, n_par, par, stride, cell_off, row_off
                        )
                        cell_n[cell] += 1
                        row_n[row] += 1
    return accepted, proposed
