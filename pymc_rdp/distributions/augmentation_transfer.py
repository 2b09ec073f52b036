"""Transfer moves: one block of records changes state one way in one row and another the other
way in a second row of the same node's table, descendants redrawn.

The state and the log target are those of :mod:`pymc_rdp.distributions._augmentation_kernels`
(latent records, their family tables, the Bayesian-Dirichlet score of the records with the CPTs
integrated out times the releases' densities ``η``); the redraws of the descendants are those of
:mod:`pymc_rdp.distributions.augmentation_subtree`.

Why
---
Where a node's children's tables pool its rows (a child whose parents leave out some of the
node's parents), the releases of those tables pin how many records hold each state of the node
summed over its rows more tightly than the node's own table pins each row. The slow directions
of the chain are then contrasts between rows. On insurance (N = 10⁴, Gaussian tables at ε = 1,
the default moves, one chain pair of 2 × 1,000 draws), the number of records with
``MakeModel = SportsCar`` summed over MakeModel's rows (SocioEcon × RiskAversion; its children
Antilock, Airbag, CarValue and RuggedAuto have neither parent) had a bulk ESS of about 1,650,
where that state's entries in the rows had 430–1,300, and the slowest combination of the rows
weighed them with both signs. A subtree move changes one row at a time, so it changes the sum
as well and the children's tables hold it back. A transfer move changes two rows by the same
block in opposite directions and leaves the sum where it is.

The move
--------
For node ``v`` with ``R ≥ 2`` non-empty rows: an ordered pair of rows ``(c₁, c₂)`` uniformly
among the non-empty rows, an ordered pair of states ``(a, b)`` uniformly among the ``K(K − 1)``,
then ``m`` uniformly in ``1..min(M, n₁, n₂)`` (``n₁`` the records in cell ``(c₁, a)``, ``n₂``
in ``(c₂, b)``; no move when that range is empty), an ordered ``m``-tuple ``S₁`` of the records
of cell ``(c₁, a)`` and one ``S₂`` of cell ``(c₂, b)``. The records of ``S₁`` go to ``b`` and
those of ``S₂`` to ``a``, in that order, each record's descendants whose parents changed
redrawn from the collapsed predictive as in a subtree move.

Exactness
---------
A move keeps every row's total, so the non-empty rows, and ``R``, are the same after it. The
reverse move picks the same rows ``(c₁, c₂)``, the states ``(b, a)`` (the same probabilities)
and the same tuples from cells ``(c₁, b)`` and ``(c₂, a)``, which then hold
``n₁' = n_{c₁ b} + m`` and ``n₂' = n_{c₂ a} + m`` records. The selection's Hastings ratio is

.. math:: \\frac{q(\\text{reverse})}{q(\\text{forward})} =
          \\frac{\\min(M, n_1, n_2)\\, \\binom{n_1}{m} \\binom{n_2}{m}}
               {\\min(M, n_1', n_2')\\, \\binom{n_1'}{m} \\binom{n_2'}{m}}

(ordered tuples: the ``m!`` of each cancels). The rest of the ratio, the target and the
redraws, is that of a subtree move of the ``2m`` records in the order ``S₁`` then ``S₂``: the
reverse move redraws the same descendants in the same order, and
:mod:`pymc_rdp.distributions.augmentation_subtree` computes its probability by undoing the
forward steps in that order. Each proposal is a Metropolis–Hastings kernel (Hastings 1970) and
a sweep their composition (Tierney 1994).

The move keeps each row's total and each state's count summed over the rows, so it is not
irreducible on its own: it runs beside moves that are (heat-bath sweeps, subtree moves).
"""

# ruff: noqa: NPY002
from __future__ import annotations

import math

import numpy as np
from numba import njit

from pymc_rdp.distributions._augmentation_kernels import _log_choose
from pymc_rdp.distributions.augmentation_moves import _buckets, _relocate, _take
from pymc_rdp.distributions.augmentation_subtree import (
    _forward,
    _reverse,
    _subtree_set,
    move_buffers,
)

__all__ = ["transfer_nodes", "transfer_sweep"]


def transfer_nodes(parents: dict[int, list[int]]) -> list[bool]:
    """Per node (``parents`` maps each node index ``0..d − 1`` to its parents' indices), whether
    its transfer moves can gain anything: it has parents, so rows to pair, and a child that
    lacks one of them, whose table pools the rows (module notes). Elsewhere a transfer changes
    every table a pair of subtree moves would and keeps nothing a release pins."""
    out = []
    for v in range(len(parents)):
        own = set(parents[v])
        kids = [w for w in range(len(parents)) if v in parents[w]]
        out.append(bool(own) and any(not own <= set(parents[w]) for w in kids))
    return out


@njit(cache=True, nogil=True)
def _nonempty_rows(size, n_rows, kv):
    """The rows of a node's table (buckets ``kv`` cells wide) that hold a record:
    ``(rows, how many)``."""
    rows = np.empty(n_rows, dtype=np.int64)
    found = 0
    for c in range(n_rows):
        total = 0
        for k in range(kv):
            total += size[c * kv + k]
        if total > 0:
            rows[found] = c
            found += 1
    return rows, found


@njit(cache=True, nogil=True)
def transfer_sweep(v, proposals, max_m, prior, desc, n_desc, x, net, obs, cell_n, row_n):
    """``proposals`` transfer moves of node ``v`` (module notes), blocks of at most ``max_m``
    records. ``prior`` is ``(alpha, logs, num_of, den_of)`` as for
    :func:`~pymc_rdp.distributions.augmentation_subtree.subtree_sweep`. Returns (accepted,
    proposed); a proposal whose cells leave no block counts as proposed and not accepted."""
    card, n_par, par, stride, cell_off, row_off, n_ch, ch = net
    kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row = obs
    alpha, logs, num_of, den_of = prior
    kv = card[v]
    if kv < 2 or x.shape[0] == 0 or proposals < 1 or max_m < 1:
        return 0, 0
    order, pos, start, size = _buckets(v, x, card, n_par, par, stride, cell_off, cell_n)
    rows, n_ne = _nonempty_rows(size, (cell_off[v + 1] - cell_off[v]) // kv, kv)
    if n_ne < 2:
        return 0, 0
    dset, n_d = _subtree_set(v, desc, n_desc)
    sel1 = np.empty(max_m, dtype=np.int64)
    sel2 = np.empty(max_m, dtype=np.int64)
    step, old, moved, pending, flag, e_of, where, n_kid, kid = move_buffers(
        dset, n_d, 2 * max_m * n_d, card, n_ch, ch
    )
    accepted = 0
    for _ in range(proposals):
        i2 = np.random.randint(0, n_ne - 1)
        i1 = np.random.randint(0, n_ne)
        c1 = rows[i1]
        c2 = rows[i2 + 1 if i2 >= i1 else i2]
        a = np.random.randint(0, kv)
        b = np.random.randint(0, kv - 1)
        b += b >= a
        l1a, l1b, l2a, l2b = c1 * kv + a, c1 * kv + b, c2 * kv + a, c2 * kv + b
        n1 = size[l1a]
        n2 = size[l2b]
        lim = min(max_m, n1, n2)
        if lim == 0:
            continue
        m = np.random.randint(1, lim + 1)
        back = min(max_m, size[l1b] + m, size[l2a] + m)
        log_ratio = (
            math.log(lim) - math.log(back) + _log_choose(n1, m) + _log_choose(n2, m)
            - _log_choose(size[l1b] + m, m) - _log_choose(size[l2a] + m, m)
        )  # fmt: skip
        _take(order, pos, start, size, l1a, m, sel1)
        _take(order, pos, start, size, l2b, m, sel2)
        forward1, e1 = _forward(
            x, sel1, m, b, dset, n_d, where, n_kid, kid, alpha, logs, num_of, den_of, pending,
            flag, e_of, step, old, moved,
            card, n_par, par, stride, cell_off, row_off,
            kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row,
            cell_n, row_n,
        )  # fmt: skip
        forward2, e2 = _forward(
            x, sel2, m, a, dset, n_d, where, n_kid, kid, alpha, logs, num_of, den_of, pending,
            flag, e_of, step[e1:], old[e1:], moved[e1:],
            card, n_par, par, stride, cell_off, row_off,
            kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row,
            cell_n, row_n,
        )  # fmt: skip
        log_ratio += forward1 + forward2
        log_ratio += _reverse(e1 + e2, step, logs, num_of, den_of, dset, moved, cell_n, row_n)
        if math.log(1.0 - np.random.random()) < log_ratio:  # the tables back at x': re-apply
            for e in range(e1 + e2):
                cell_n[moved[e, 0]] -= 1
                cell_n[moved[e, 2]] += 1
                if step[e, 1] > 0:
                    row_n[moved[e, 1]] -= 1
                    row_n[moved[e, 3]] += 1
            accepted += 1
            for t in range(m):
                _relocate(order, pos, start, size, pos[sel1[t]], l1a, l1b)
            for t in range(m):
                _relocate(order, pos, start, size, pos[sel2[t]], l2b, l2a)
        else:  # the tables are at x already
            for e in range(e1):
                x[sel1[step[e, 0]], dset[step[e, 1]]] = old[e]
            for e in range(e1, e1 + e2):
                x[sel2[step[e, 0]], dset[step[e, 1]]] = old[e]
    return accepted, proposals
