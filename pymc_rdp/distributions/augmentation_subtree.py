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
slowest to mix. Here each moved record's values below ``v`` follow it: node by node in
topological order, a descendant whose parent configuration the move changed (a parent's value
changed) is redrawn from the collapsed predictive

.. math:: q(x_{jw} = k) = \\frac{n_{w, c, k} + α_w}{n_{w, c} + K_w α_w},

``c`` the record's new parent configuration of ``w`` and ``n`` the tables as they stand, the
record out of ``w``'s family. By the chain rule of the Dirichlet-multinomial marginal
likelihood that is the factor the score gains when the record joins, so the descendants' part
of the score largely cancels against the proposal and the acceptance rests on the releases'
densities ``η`` and ``v``'s own row. A descendant whose parents kept their values keeps its own
and its family's tables are not touched, so a move costs what it changes: on alarm
(N = 10⁴), where a root has about 30 descendants, redrawing them all made the subtree moves
26 ms of an iteration's 41, this 17.

Exactness
---------
Write ``D = (d_0 = v, d_1, …)`` for ``v`` and its descendants in topological order and
``S = (j_1, …, j_m)`` for the moved records in the order drawn; only the families of ``D``
change (a node with a parent in ``D`` is in ``D``). The forward proposal visits
``(j_1, d_0), (j_1, d_1), …, (j_m, d_…)`` in turn: ``v`` goes to ``k₂``; a descendant is in the
redrawn set ``R`` when one of its parents' values differs between ``x`` and the proposal ``x'``,
and is then taken out of its family, drawn from ``q`` and put back. Its probability is the
product of the ``q`` terms over ``R`` and of the selection (source cell among the row's
non-empty cells, target state, ``m``, the ordered records), the selection's Hastings ratio
being the one of :func:`~pymc_rdp.distributions.augmentation_moves.row_block_sweep`. Whether a
value differs between ``x`` and ``x'`` is symmetric, so the reverse move (the same records,
selected in cell ``k₂``, in the same order) has the same ``R`` and proposes the old values by
the same rule; ``q(x' → x)`` is computed by undoing the forward steps on the tables in the same
order, weighing each old value by the predictive of its old row. The acceptance probability is

.. math:: \\min\\Bigl(1, \\frac{π(x')\\, q(x' → x)}{π(x)\\, q(x → x')}\\Bigr),

a Metropolis–Hastings kernel (Hastings 1970); the target ratio is computed in full (score and
``η``, as the sum of the forward steps' changes) rather than relying on the cancellation, so
the kernel is exact whatever ``q`` is. After the reverse pass the tables hold ``x``: a rejected
move only restores the records' values, an accepted one re-applies the recorded changes.

Observed values
---------------
A node whose values are released record by record (randomized response,
:mod:`pymc_rdp.distributions.augmentation_records`) enters the records as an extra child whose
values are fixed, marked by ``num_of[w] < 0`` in :func:`predictive_logs`'s index. When a
parent's value changes, such a child keeps its value and moves to its new row; nothing is drawn
for it either way, so the forward and reverse proposals have no factor from it and its family's
change of the target (the released values' likelihood) enters ``π(x')/π(x)`` in full.

Child-row moves
---------------
A subtree move of ``p`` picks its records from one cell of ``p``'s own table. A child-row move
picks them from one row of a child ``w``'s table instead: for an edge ``p → w`` and a
configuration ``u`` of ``w``'s other parents, the ``K_p`` rows of ``w`` with those parents and
``p = 0, …, K_p − 1`` play the part of a row's cells. The source row ``k₁`` is drawn uniformly
among the non-empty ones, ``k₂`` among the other states, ``m`` uniformly in ``1..min(M, n₁)``
(``n₁`` the records in ``w``'s row ``(u, k₁)``) and an ordered ``m``-tuple of those records;
their ``p`` becomes ``k₂`` and their descendants of ``p`` are redrawn as above. Such a move
shifts records between ``w``'s rows (and between the cells of ``p``'s table that those records
occupy, across ``p``'s own rows) in one step, where subtree moves of ``p`` would need one
coordinated step in each of ``p``'s rows.

The reverse move picks the same records from row ``(u, k₂)``, which they have all joined if no
other parent of ``w`` is a descendant of ``p`` (those are redrawn, and a record would leave
``u``); only such edges are used. The selection's Hastings ratio is then that of a row-block
move with rows for cells, and the rest is the subtree move's. Edges where ``w``'s other parents
are exactly ``p``'s parents are skipped: their rows of ``w`` are the cells of ``p``'s table,
and the move would be ``p``'s subtree move.

Pooled child rows
-----------------
Where ``w``'s other parents are a proper subset of ``p``'s parents, each row of ``w`` pools
several of ``p``'s rows (on Adult, capital-gain's row (sex, education, occupation) pools
occupation's rows (age, sex, education) over the ten ages). The number of records in such a
row of ``w`` is a sum of ``p``'s cells across the pooled rows; where ``p``'s records change
state easily (a *diffuse* node, whose cells the releases pin loosely), that sum drifts slowly
under moves that change one of ``p``'s rows at a time, and a child-row move over the edge
shifts up to a block of records between two of ``w``'s rows in one step. These edges
(:func:`pooling_edges`) are a subset of :func:`child_row_edges`: a parent of ``p`` is never a
descendant of ``p``.
"""

# ruff: noqa: NPY002
from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
from numba import njit

from pymc_rdp.distributions._augmentation_kernels import (
    _config,
    _shift,
    inlined,
    per_record,
)
from pymc_rdp.distributions.augmentation_moves import (
    _buckets,
    _relocate,
    _take,
    guided_row_proposal,
    row_proposal,
    weighted_row_proposal,
)

__all__ = [
    "child_row_edges",
    "child_row_sweep",
    "descendants",
    "pooling_edges",
    "predictive_logs",
    "subtree_sweep",
]


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


@njit(cache=True, nogil=True)
def predictive_logs(
    alpha: np.ndarray, card: np.ndarray, n_scale: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The logarithms of the collapsed predictive's numerator and denominator (module notes),
    tabulated once per chain: ``(logs, num_of, den_of)`` with
    ``logs[num_of[w], n] = log(n + α_w)`` and ``logs[den_of[w], n] = log(n + K_w α_w)`` for
    ``n = 0..n_scale``, so that
    ``log q(x_jw = k) = logs[num_of[w], n_wck] − logs[den_of[w], n_wc]``.

    ``logs`` holds one row per distinct offset ``α_w`` or ``K_w α_w`` (with one α over the
    network, one row plus one per number of states), not one per node: at ``N = 10⁶`` a row is
    8 MB. Each entry is the logarithm of the double the moves would compute (``n`` converted,
    then the offset added), so a table read gives the same value bit for bit as the logarithm
    it replaces; a redrawn family costs four table reads instead of four logarithms.
    """
    d = card.shape[0]
    offsets = np.empty(2 * d)
    num_of = np.empty(d, dtype=np.int64)
    den_of = np.empty(d, dtype=np.int64)
    rows = 0
    for w in range(2 * d):
        offset = alpha[w] if w < d else card[w - d] * alpha[w - d]
        at = rows
        for t in range(rows):
            if offsets[t] == offset:
                at = t
                break
        if at == rows:
            offsets[rows] = offset
            rows += 1
        if w < d:
            num_of[w] = at
        else:
            den_of[w - d] = at
    logs = np.empty((rows, n_scale + 1))
    for t in range(rows):
        for n in range(n_scale + 1):
            logs[t, n] = math.log(n + offsets[t])
    return logs, num_of, den_of


@per_record
def _forward(
    x, sel, m, k2, dset, n_d, where, n_kid, kid, alpha, logs, num_of, den_of, pending, flag,
    e_of, step, old, moved,
    card, n_par, par, stride, cell_off, row_off,
    kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row,
    cell_n, row_n,
):  # fmt: skip
    """The forward proposal of a subtree move (module notes), applied to ``x`` and the tables:
    ``dset[0]`` set to ``k2`` for the records ``sel[:m]``, in turn, and each descendant whose
    parent configuration changed redrawn from the predictive. A descendant is visited only if
    a parent's value changed (``pending``, set from the ``kid`` positions in ``dset`` of each
    node's children); the predictive's logarithms are read from ``logs``
    (:func:`predictive_logs`) and the draw is scaled by the row's total ``n_wc + K_w α_w``
    (the sum of the ``K_w`` weights; the same double when ``α`` is a whole number, as by
    default). Each changed family is listed in visiting order: ``step[e]`` its record's
    place in ``sel`` and its node's in ``dset``, ``old[e]`` its old value, ``moved[e]`` its old
    and new (cell, row). A descendant ``w`` with ``num_of[w] < 0`` holds observed values (module
    notes, "Observed values"): it moves to its new row with its value kept, and no factor of
    ``q`` is drawn or counted. Returns ``(log π(x') − log π(x) − log q(x → x'), entries)``."""
    log_ratio = 0.0
    e = 0
    for t in range(m):
        j = sel[t]
        for i in range(n_d):
            pending[i] = False
            flag[i] = False
        pending[0] = True
        for i in range(n_d):
            if not pending[i]:  # same parents, same cell: nothing to redraw
                continue
            w = dset[i]
            ow = x[j, w]
            if i == 0:  # the moved node: to k2 within its row (the row is unchanged: -1)
                o_base = n_base = cell_off[w] + _config(x, j, w, n_par, par, stride) * card[w]
                o_row = n_row = -1
                kw = k2
            else:
                o_cfg = 0
                for q in range(n_par[w]):
                    p = par[w, q]
                    ip = where[p]
                    if ip >= 0 and flag[ip]:
                        o_cfg += old[e_of[ip]] * stride[w, q]
                    else:
                        o_cfg += x[j, p] * stride[w, q]
                n_cfg = _config(x, j, w, n_par, par, stride)
                o_base = cell_off[w] + o_cfg * card[w]
                n_base = cell_off[w] + n_cfg * card[w]
                o_row = row_off[w] + o_cfg
                n_row = row_off[w] + n_cfg
            o_cell = o_base + ow
            log_ratio += _shift(
                w, o_cell, o_row, np.int64(-1), True, cell_n, row_n,
                kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row,
            )  # fmt: skip
            if i > 0 and num_of[w] < 0:  # an observed value (released record): it stays
                kw = ow
            elif i > 0:  # draw from the predictive of the new row; −log q(forward)
                # the new row holds row_n[n_row] records (this one is out of the family)
                u = np.random.random() * (row_n[n_row] + card[w] * alpha[w])
                kw = card[w] - 1
                acc = 0.0
                for k in range(card[w] - 1):
                    acc += cell_n[n_base + k] + alpha[w]
                    if u < acc:
                        kw = k
                        break
                log_ratio -= logs[num_of[w], cell_n[n_base + kw]] - logs[den_of[w], row_n[n_row]]
            log_ratio += _shift(
                w, n_base + kw, n_row, np.int64(1), True, cell_n, row_n,
                kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row,
            )  # fmt: skip
            x[j, w] = kw
            step[e, 0] = t
            step[e, 1] = i
            old[e] = ow
            moved[e, 0] = o_cell
            moved[e, 1] = o_row
            moved[e, 2] = n_base + kw
            moved[e, 3] = n_row
            e_of[i] = e
            e += 1
            if kw != ow:
                flag[i] = True
                for c in range(n_kid[i]):
                    pending[kid[i, c]] = True
    return log_ratio, e


@per_record
def _reverse(e_n, step, logs, num_of, den_of, dset, moved, cell_n, row_n):
    """Undo the forward proposal on the tables in the same order, each redrawn family's old
    value weighed by the predictive of its old row: returns ``log q(x' → x)``."""
    lq = 0.0
    for e in range(e_n):
        cell_n[moved[e, 2]] -= 1
        cell_n[moved[e, 0]] += 1
        if step[e, 1] > 0:
            w = dset[step[e, 1]]
            row_n[moved[e, 3]] -= 1
            o_cell = moved[e, 0]
            o_row = moved[e, 1]
            # the record is out of both rows while its old value is weighed (an observed value
            # was kept, not drawn: no factor)
            if num_of[w] >= 0:
                lq += logs[num_of[w], cell_n[o_cell] - 1] - logs[den_of[w], row_n[o_row]]
            row_n[o_row] += 1
    return lq


@per_record
def _redraw_accept(
    x, sel, m, k2, dset, n_d, where, n_kid, kid, alpha, logs, num_of, den_of, pending, flag,
    e_of, step, old, moved, log_ratio,
    card, n_par, par, stride, cell_off, row_off,
    kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row,
    cell_n, row_n,
):  # fmt: skip
    """The Metropolis–Hastings step of a subtree move (module notes) once its records
    ``sel[:m]`` are chosen. ``log_ratio`` enters holding the selection's log Hastings ratio.
    Returns True if accepted (``x`` and the tables then hold the proposal, else the old
    state)."""
    forward, e_n = _forward(
        x, sel, m, k2, dset, n_d, where, n_kid, kid, alpha, logs, num_of, den_of, pending, flag,
        e_of, step, old, moved,
        card, n_par, par, stride, cell_off, row_off,
        kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row,
        cell_n, row_n,
    )  # fmt: skip
    log_ratio += forward
    log_ratio += _reverse(e_n, step, logs, num_of, den_of, dset, moved, cell_n, row_n)
    if math.log(1.0 - np.random.random()) < log_ratio:  # the tables back at x': re-apply
        for e in range(e_n):
            cell_n[moved[e, 0]] -= 1
            cell_n[moved[e, 2]] += 1
            if step[e, 1] > 0:
                row_n[moved[e, 1]] -= 1
                row_n[moved[e, 3]] += 1
        return True
    for e in range(e_n):  # the tables are at x already
        x[sel[step[e, 0]], dset[step[e, 1]]] = old[e]
    return False


@inlined
def _subtree_set(v, desc, n_desc):
    """``v`` and its descendants: ``(dset, n_d)``."""
    n_d = 1 + n_desc[v]
    dset = np.empty(n_d, dtype=np.int64)
    dset[0] = v
    for i in range(n_desc[v]):
        dset[1 + i] = desc[v, i]
    return dset, n_d


@inlined
def _child_places(dset, n_d, where, n_ch, ch):
    """Per place ``i`` in ``dset``, the places of its node's children (all in ``dset``, which
    holds a node's descendants): ``kid[i, :n_kid[i]]``."""
    n_kid = np.zeros(n_d, dtype=np.int64)
    kid = np.zeros((n_d, max(1, ch.shape[1])), dtype=np.int64)
    for i in range(n_d):
        for c in range(n_ch[dset[i]]):
            kid[i, n_kid[i]] = where[ch[dset[i], c]]
            n_kid[i] += 1
    return n_kid, kid


@inlined
def move_buffers(dset, n_d, entries, card, n_ch, ch):
    """The working arrays of a subtree-type move of ``v = dset[0]`` (with its descendants
    ``dset[1:n_d]``) whose proposals change at most ``entries`` (record, node) values:
    ``(step, old, moved, pending, flag, e_of, where, n_kid, kid)``, those of
    :func:`_forward` and :func:`_reverse`, ``where`` each node's place in ``dset`` (−1 for the
    others) and :func:`_child_places`."""
    step = np.empty((entries, 2), dtype=np.int64)
    old = np.empty(entries, dtype=np.int64)
    moved = np.empty((entries, 4), dtype=np.int64)
    pending = np.zeros(n_d, dtype=np.bool_)
    flag = np.zeros(n_d, dtype=np.bool_)
    e_of = np.zeros(n_d, dtype=np.int64)
    where = np.full(card.shape[0], -1, dtype=np.int64)
    for i in range(n_d):
        where[dset[i]] = i
    n_kid, kid = _child_places(dset, n_d, where, n_ch, ch)
    return step, old, moved, pending, flag, e_of, where, n_kid, kid


@njit(cache=True, nogil=True)
def _scan_rows(
    order, pos, start, size, n_rows, kv, per_row, max_m, dset, n_d, prior,
    x, net, obs, cell_n, row_n, weighted, dirs,
):  # fmt: skip
    """``per_row`` subtree proposals in every non-empty row of buckets ``kv`` cells wide (the
    records of bucket ``l`` at ``order[start[l]:start[l] + size[l]]``), moving ``dset[0]``
    to the state of the target cell; the pair of states drawn uniformly (the source among the
    non-empty cells) or, if ``weighted``, in proportion to its records, or, if ``dirs`` is
    not empty, in proportion to its records with its direction kept in ``dirs`` and reversed
    on every rejection (:func:`~pymc_rdp.distributions.augmentation_moves.guided_row_proposal`).
    Returns (accepted, proposed)."""
    card, n_par, par, stride, cell_off, row_off, n_ch, ch = net
    kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row = obs
    alpha, logs, num_of, den_of = prior
    sel = np.empty(max_m, dtype=np.int64)
    step, old, moved, pending, flag, e_of, where, n_kid, kid = move_buffers(
        dset, n_d, max_m * n_d, card, n_ch, ch
    )
    accepted = 0
    proposed = 0
    for c in range(n_rows):
        first = c * kv
        nonempty = np.int64(0)
        for k in range(kv):
            if size[first + k] > 0:
                nonempty += 1
        if nonempty == 0:
            continue
        for _ in range(per_row):
            proposed += 1
            at = -1
            if dirs.size > 0:
                l1, l2, m, after, log_ratio, at = guided_row_proposal(
                    size, first, kv, nonempty, max_m, dirs, c
                )
                if m == 0:  # the direction's source cell is empty: rejected, reversed
                    dirs[at] ^= 1
                    continue
            elif weighted:
                l1, l2, m, after, log_ratio = weighted_row_proposal(
                    size, first, kv, nonempty, max_m
                )
            else:
                l1, l2, m, after, log_ratio = row_proposal(size, first, kv, nonempty, max_m)
            _take(order, pos, start, size, l1, m, sel)  # an ordered uniform m-tuple
            if _redraw_accept(
                x, sel, m, l2 - first, dset, n_d, where, n_kid, kid, alpha, logs, num_of, den_of,
                pending, flag, e_of, step, old, moved, log_ratio,
                card, n_par, par, stride, cell_off, row_off,
                kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row,
                cell_n, row_n,
            ):  # fmt: skip
                accepted += 1
                nonempty = after
                for t in range(m):
                    _relocate(order, pos, start, size, pos[sel[t]], l1, l2)
            elif at >= 0:
                dirs[at] ^= 1
    return accepted, proposed


@njit(cache=True, nogil=True)
def subtree_sweep(
    v, weighted, dirs, per_row, max_m, prior, desc, n_desc, x, net, obs, cell_n, row_n
):  # fmt: skip
    """Collapsed row-block moves of node ``v`` with its descendants redrawn (module notes),
    ``per_row`` proposals in every non-empty row, each pair of states drawn uniformly or, if
    ``weighted``, in proportion to its records
    (:func:`~pymc_rdp.distributions.augmentation_moves.weighted_row_proposal`), or, if
    ``dirs`` (``int8``, a ``K × K`` block per row of ``v``) is not empty, in proportion to its
    records along the direction ``dirs`` keeps for it, reversed on every rejection
    (:func:`~pymc_rdp.distributions.augmentation_moves.guided_row_proposal`). ``prior`` is
    ``(alpha, logs, num_of, den_of)``: the Dirichlet prior's α per node and
    :func:`predictive_logs`. Returns (accepted, proposed)."""
    card, n_par, par, stride, cell_off, _row_off, _n_ch, _ch = net
    kv = card[v]
    if kv < 2 or x.shape[0] == 0 or per_row < 1:
        return 0, 0
    dset, n_d = _subtree_set(v, desc, n_desc)
    return _scan_rows(
        *_buckets(v, x, card, n_par, par, stride, cell_off, cell_n),
        (cell_off[v + 1] - cell_off[v]) // kv, kv, per_row, max_m, dset, n_d, prior,
        x, net, obs, cell_n, row_n, weighted, dirs,
    )  # fmt: skip


def child_row_edges(
    parents: dict[int, list[int]], desc: np.ndarray, n_desc: np.ndarray
) -> list[tuple[int, int]]:
    """The edges ``(p, w)`` a child-row move uses: ``p`` a parent of ``w`` none of whose
    descendants is another parent of ``w`` (module notes), and whose other parents are not
    exactly ``p``'s (then the move would be ``p``'s subtree move), in node order."""
    out = []
    for w in sorted(parents):
        for p in parents[w]:
            below = set(desc[p, : n_desc[p]].tolist())
            others = {q for q in parents[w] if q != p}
            # the same selection as p's own subtree moves when the others are p's parents
            if others != set(parents.get(p, ())) and not others & below:
                out.append((p, w))
    return out


def pooling_edges(parents: Mapping[Hashable, Sequence[Hashable]]) -> list[tuple[Any, Any]]:
    """The edges ``(p, w)`` whose child's rows pool several of the parent's rows (module notes):
    ``w``'s parents other than ``p`` a proper subset of ``p``'s parents, in the order of
    ``parents`` and of each node's parents. ``parents`` maps every node to its parents (node
    names or indices alike).

    On the Adult network that is occupation → capital-gain, capital-gain → capital-loss and
    capital-loss → income; a root has no such edge (no proper subset of no parents)."""
    out = []
    for w, ws in parents.items():
        for p in ws:
            if {q for q in ws if q != p} < set(parents.get(p, ())):
                out.append((p, w))
    return out


@per_record
def _local_row(c, sp, kp):
    """Row ``c`` of a child's table as ``u K_p + k``: ``k`` the parent's digit (stride ``sp``,
    ``kp`` states) and ``u`` the configuration of the other parents."""
    return ((c // (sp * kp)) * sp + c % sp) * kp + (c // sp) % kp


@njit(cache=True, nogil=True)
def _child_buckets(p, w, x, card, n_par, par, stride, cell_off, row_off, row_n):
    """Records sorted by their row of family ``w`` re-indexed ``u K_p + x_p`` (``u`` the
    configuration of ``w``'s other parents): ``order``, ``pos``, ``start``, ``size`` per
    local row, as :func:`~pymc_rdp.distributions.augmentation_moves._buckets`."""
    sp = 1
    for i in range(n_par[w]):
        if par[w, i] == p:
            sp = stride[w, i]
    kp = card[p]
    n_cfg = (cell_off[w + 1] - cell_off[w]) // card[w]
    size = np.empty(n_cfg, dtype=np.int64)
    for c in range(n_cfg):
        size[_local_row(c, sp, kp)] = row_n[row_off[w] + c]
    start = np.empty(n_cfg + 1, dtype=np.int64)
    acc = 0
    for l in range(n_cfg):
        start[l] = acc
        acc += size[l]
    start[n_cfg] = acc
    fill = start[:n_cfg].copy()
    n = x.shape[0]
    order = np.empty(n, dtype=np.int64)
    pos = np.empty(n, dtype=np.int64)
    for j in range(n):
        l = _local_row(_config(x, j, w, n_par, par, stride), sp, kp)
        order[fill[l]] = j
        pos[j] = fill[l]
        fill[l] += 1
    return order, pos, start, size


@njit(cache=True, nogil=True)
def child_row_sweep(p, w, per_row, max_m, prior, desc, n_desc, x, net, obs, cell_n, row_n):
    """Subtree moves of parent ``p`` whose records are chosen from one row of its child
    ``w`` (module notes): for every configuration of ``w``'s other parents, ``per_row``
    proposals that move ``m`` records from ``w``'s row with ``p = k₁`` to its row with
    ``p = k₂``, redrawing their descendants of ``p``. ``prior`` as for
    :func:`subtree_sweep`. Returns (accepted, proposed)."""
    card, n_par, par, stride, cell_off, row_off, _n_ch, _ch = net
    n = x.shape[0]
    kp = card[p]
    if kp < 2 or n == 0 or per_row < 1:
        return 0, 0
    order, pos, start, size = _child_buckets(
        p, w, x, card, n_par, par, stride, cell_off, row_off, row_n
    )
    n_super = ((cell_off[w + 1] - cell_off[w]) // card[w]) // kp
    dset, n_d = _subtree_set(p, desc, n_desc)
    return _scan_rows(
        order, pos, start, size, n_super, kp, per_row, max_m, dset, n_d, prior,
        x, net, obs, cell_n, row_n, False, np.empty(0, dtype=np.int8),
    )  # fmt: skip
