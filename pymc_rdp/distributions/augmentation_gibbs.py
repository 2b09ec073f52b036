"""Heat-bath updates of single attributes under the collapsed target, grouped by Markov blanket.

The state and the log target are those of :mod:`pymc_rdp.distributions._augmentation_kernels`
(latent records ``x``, their family tables ``cell_n``/``row_n``, the Bayesian-Dirichlet score of
the records with the CPTs integrated out times the releases' densities ``η``).

The update
----------
For a record ``j`` and a node ``v``, the full conditional of ``x_{jv}`` under the collapsed
target involves only ``v``'s family and its children's (Geman & Geman 1984):

.. math:: p(x_{jv} = k \\mid x_{-jv}) ∝ \\exp W_k, \\qquad
          W_k = Δ_v(c, k) + \\sum_{w ∈ ch(v)} Δ_w\\bigl(c_w(k), x_{jw}\\bigr),

``Δ_w(c, k)`` the log change of family ``w``'s terms when the record (taken out of the tables)
joins cell ``(c, k)``, ``c`` the record's parent configuration of ``v`` and ``c_w(k)`` its row
of child ``w`` with ``v`` in state ``k``.

Why groups
----------
``W_k`` depends on the record only through its *key*: ``c`` and, per child, the child's state
and its other parents' states. Records that share a key have the same conditional. ``W_k`` reads
only the cells of state ``k`` (``(c, k)`` in ``v``'s table, row ``c_w(k)`` in a child's table,
and these differ between states, ``v``'s stride in a child's configuration index being ≥ 1).
So within a group, with the weights ``A_k`` of the current tables kept:

* for record ``j`` in state ``k₀``, taking ``j`` out of the tables changes the cells of ``k₀``
  only: its conditional weights are ``A_k`` for ``k ≠ k₀`` and ``W_{k₀}`` recomputed once, read
  from the tables with one record fewer in the cells of ``k₀`` (nothing is written unless the
  record moves; the draws are those of taking it out and putting it back);
* after the draw ``k₁ ≠ k₀``, the cells of ``k₀`` are those without ``j`` (``A_{k₀}`` is the
  value just computed) and only ``A_{k₁}`` is recomputed;
* the weight ``B_k`` of state ``k`` with one record out of its cells is kept per state: it stays
  valid while records stay, is the old ``A_{k₁}`` once a record joins ``k₁`` (the cells then
  hold one more, so one out is what they held), and is recomputed only after a record has left
  ``k``. The next record in a state reads it instead of evaluating ``W``.

A record then costs at most two evaluations of ``W`` instead of ``K`` (none when it stays in a
state whose ``B_k`` is kept: on alarm, where 91 % stay, a sweep took 22 ms before and 16 ms with
it, on Adult 28 and 24), and as many exponentials:
the group keeps ``P_k = exp(A_k − ref)`` for one reference ``ref`` (the largest ``A_k`` when the
group starts, re-anchored only if ``Σ_k P_k`` leaves 10^±250) and draws the state from
``P_k / Σ P``. On Adult (education and occupation with 16 and 15 states) the ``K`` exponentials
per record were about half of a sweep. The draws are exactly those of the record-by-record
update.

Records that rarely share a key
-------------------------------
When ``v``'s key space is far larger than the number of records (over ``_ONE_BY_ONE`` times
it), groups are single records and each costs ``K`` evaluations of ``W`` of ``1 + |ch(v)|``
terms: hailfinder's Scenario, 11 states and 16 children over a key space of 8 · 10¹⁰, took a
third of a sweep. ``W_k`` is a sum of factor terms, ``Δ_v(c, k)`` and per child
``Δ_w(c_w(k), x_{jw})``, and each depends on the record through a much smaller key: ``c``, or
the child's state and its other parents' states. Such nodes are updated record by record in
index order with each factor's vector over ``k`` cached under its own key. The record's own
state is weighed afresh, as if it were out of the tables (as in a group); for the other
states the cached terms are exact, since they read only the cells of those states. When a
record moves from ``k₀`` to ``k₁``, the cells and rows of both change: the cached terms of
``v``'s row ``c`` and, per child, those of every child state in the rows the record left and
joined are dropped. The weights are sums of the same terms in the same order as ``W``
evaluated directly, so the draws are those of the record-by-record update.

Scan order
----------
Node by node; within a node, records sorted by key, or in index order when updated one by one.
The order depends on ``x`` only through the attributes other than ``v``, which the node's
updates do not change, so for every value of those the node's scan is a composition of Gibbs
kernels of ``π(x_v | x_{-v})`` and leaves ``π`` invariant.
"""

# ruff: noqa: NPY002
from __future__ import annotations

import math

import numpy as np
from numba import njit

from pymc_rdp.distributions._augmentation_kernels import (
    _add_terms_from,
    _config,
    inlined,
    per_record,
)

__all__ = [
    "KEY_SPACE_LIMIT",
    "factor_sweep",
    "gibbs_sweep",
    "group_order",
    "grouped_sweep",
    "node_major",
    "one_by_one_nodes",
    "radix_order",
]

#: largest key space grouped (keys are int64); beyond it records are updated one by one
#: (:func:`_factor_scan`)
KEY_SPACE_LIMIT = 2.0**62


#: inlined into the sweep at numba's IR level: as a call, each of the one or two per record passed
#: its twenty-odd arrays field by field, and a sweep on Adult took 41 ms instead of 28
@inlined
def _weight(
    v, k, base, cw0, xw, cs, card, cell_off, row_off, n_ch, ch,
    kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row,
    cell_n, row_n, off,
):  # fmt: skip
    """``W_k`` of the module notes for a record of ``v``'s row ``base`` (first cell), children's
    rows without ``v`` ``cw0`` and children's states ``xw``, the record out of the tables: the
    tables as they are (``off = 0``) or, for the record's own state, as if it were taken out
    (``off = −1``, nothing written)."""
    t = _add_terms_from(
        v, base + k, np.int64(-1), np.int64(1), True, np.int64(off), kind, coef, r, y, logt,
        acell, arow, lg_cell, lg_row, lgd_cell, lgd_row, cell_n, row_n,
    )  # fmt: skip
    for i in range(n_ch[v]):
        w = ch[v, i]
        cw = cw0[i] + k * cs[v, i]
        t += _add_terms_from(
            w, cell_off[w] + cw * card[w] + xw[i], row_off[w] + cw, np.int64(1), True,
            np.int64(off), kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row,
            cell_n, row_n,
        )  # fmt: skip
    return t


@per_record
def _shift_record(v, k, d, base, cw0, xw, cs, card, cell_off, row_off, n_ch, ch, cell_n, row_n):
    """Add (``d = 1``) or take out (``d = −1``) a record of the group in state ``k``."""
    cell_n[base + k] += d
    for i in range(n_ch[v]):
        w = ch[v, i]
        cw = cw0[i] + k * cs[v, i]
        cell_n[cell_off[w] + cw * card[w] + xw[i]] += d
        row_n[row_off[w] + cw] += d


#: a group's cached weights ``exp(W_k - ref)`` are re-anchored when their sum leaves this range
_LOW = 1e-250
_HIGH = 1e250


@njit(cache=True, nogil=True)
def _rebase(a, p, kv):
    """``p[k] = exp(a[k] − ref)`` for ``ref = max_k a[k]``; returns ``ref``."""
    ref = a[0]
    for k in range(1, kv):
        ref = max(ref, a[k])
    for k in range(kv):
        p[k] = math.exp(a[k] - ref)
    return ref


@per_record
def _inverse_cdf(p, kv, u):
    """The first state ``k`` with ``u < p[0] + … + p[k]`` (``u`` uniform on ``[0, Σ p)``), the
    last state if rounding leaves ``u`` past every partial sum."""
    acc = 0.0
    for k in range(kv - 1):
        acc += p[k]
        if u < acc:
            return k
    return kv - 1


@njit(cache=True, nogil=True)
def _child_strides(card, n_par, par, stride, n_ch, ch):
    """``cs[v, i]``: the stride of ``v`` in the configuration index of its ``i``-th child."""
    cs = np.zeros(ch.shape, dtype=np.int64)
    for v in range(card.shape[0]):
        for i in range(n_ch[v]):
            w = ch[v, i]
            for p in range(n_par[w]):
                if par[w, p] == v:
                    cs[v, i] = stride[w, p]
    return cs


@inlined
def _blanket(v, n_par, par, n_ch, ch, mb):
    """``v``'s Markov blanket written into ``mb``: its parents, then per child the child and
    its other parents, each node once. Returns their number."""
    m = 0
    for p in range(n_par[v]):
        mb[m] = par[v, p]
        m += 1
    for i in range(n_ch[v]):
        w = ch[v, i]
        for t in range(-1, n_par[w]):
            u = w if t < 0 else par[w, t]
            seen = u == v
            for s in range(m):
                seen = seen or mb[s] == u
            if not seen:
                mb[m] = u
                m += 1
    return m


@inlined
def _key_space(card, mb, m):
    """The number of keys over the blanket ``mb[:m]`` (a float: it can exceed int64)."""
    space = 1.0
    for s in range(m):
        space *= float(card[mb[s]])
    return space


@inlined
def _keys(v, xt, card, n_par, par, n_ch, ch, keys, limit):
    """Every record's key for node ``v``: its states at ``v``'s Markov blanket in mixed radix
    (parents most significant), read from the records stored node-major (``xt[u, j]``, record
    ``j``'s state at node ``u``). Returns the key space (every key is below it), or 0, keys
    unset, if it exceeds ``limit``.

    The key holds what ``W_k`` reads: ``v``'s row, and per child its state and its other
    parents' states. Each blanket node counts once, so the key space is their product (on
    Adult 2.6 · 10⁵ for sex, where a key of ``v``'s row and each child's cell would span
    7.6 · 10¹⁰), and the radix sort needs fewer and narrower passes. The keys are built one
    blanket node at a time over contiguous rows of ``xt``: on alarm (N = 10⁴, 37 nodes) that
    took 0.66 ms of CPU a sweep, the copy into ``xt`` included, where building each record's
    key from its row of the records took 2.8."""
    mb = np.empty(card.shape[0], dtype=np.int64)
    m = _blanket(v, n_par, par, n_ch, ch, mb)
    space = _key_space(card, mb, m)
    if space > limit:
        return 0.0
    n = xt.shape[1]
    for j in range(n):
        keys[j] = 0
    for s in range(m):
        u = mb[s]
        c = card[u]
        for j in range(n):
            keys[j] = keys[j] * c + xt[u, j]
    return space


@inlined
def radix_order(keys, space):
    """Indices that sort ``keys`` (non-negative, below ``space``), stably: a least-significant-
    digit radix sort in as few passes of at most 16 bits as ``space`` needs, the bits shared
    evenly between them, each pass ``O(N + 2^bits)`` (Knuth, TAOCP vol. 3, §5.2.5). A small key
    space gets a small count array: on alarm (N = 10⁴, most key spaces under 2^10) counts of
    2^16 each pass were about half the grouping's time."""
    n = keys.shape[0]
    order = np.arange(n)
    spare = np.empty(n, dtype=np.int64)
    bits = 1
    while bits < 63 and space > 2.0**bits:
        bits += 1
    passes = (bits + 15) // 16
    width = (bits + passes - 1) // passes
    mask = (1 << width) - 1
    count = np.empty((1 << width) + 1, dtype=np.int64)
    for pass_ in range(passes):
        shift = pass_ * width
        count[:] = 0
        for t in range(n):
            count[((keys[order[t]] >> shift) & mask) + 1] += 1
        for b in range(1 << width):
            count[b + 1] += count[b]
        for t in range(n):
            j = order[t]
            digit = (keys[j] >> shift) & mask
            spare[count[digit]] = j
            count[digit] += 1
        order, spare = spare, order
    return order


#: nodes whose key space exceeds this many times the number of records are updated one by one
#: with cached factor terms (:func:`_factor_scan`) instead of in groups. Per node and sweep on
#: alarm, child, insurance, hailfinder (N = 10⁴) and Adult, groups were faster at every key
#: space up to 23 N (insurance's Accident: 1.25 ms against 1.63) and the factor terms only at
#: hailfinder's Scenario (8 · 10⁶ N: 5.5 ms against 19.7)
_ONE_BY_ONE = 1024.0

#: key spaces up to this size are grouped by one counting pass (:func:`_counting_order`)
_COUNTING_SPACE = 64


@inlined
def _counting_order(keys, space, sorted_keys):
    """Indices that sort ``keys`` (non-negative, below ``space``) stably, by counting, with the
    records split into four contiguous quarters scanned side by side, each with its own counts
    and fill pointers; ``sorted_keys`` gets the keys in that order.

    A single scan's fill pointer ``count[key]`` is read right after it is written whenever two
    successive records share a key, which with few keys is most of the time: on random keys
    over 2–16 values and N = 10⁴, the radix sort took 65–72 µs of CPU, the four scans, whose
    pointers are independent, 21–30 µs. From about 100 values on the radix sort was as fast
    or faster (at 256 values, 23 µs against 32). Stable because quarter ``s``'s records of a
    key are placed after those of quarters ``< s``."""
    n = keys.shape[0]
    q = (n + 3) // 4
    count = np.zeros((4, space), dtype=np.int64)
    for s in range(4):
        for t in range(s * q, min(n, (s + 1) * q)):
            count[s, keys[t]] += 1
    start = 0
    for b in range(space):
        for s in range(4):
            c = count[s, b]
            count[s, b] = start
            start += c
    order = np.empty(n, dtype=np.int64)
    for t in range(q):
        for s in range(4):  # four chains of fill pointers, independent of each other
            u = t + s * q
            if u < n:
                b = keys[u]
                at = count[s, b]
                order[at] = u
                sorted_keys[at] = b
                count[s, b] = at + 1
    return order


@njit(cache=True, nogil=True)
def group_order(v, xt, card, n_par, par, n_ch, ch, keys, limit):
    """The records in the order that groups them for node ``v``, and their keys in that order.

    ``xt`` holds the records node-major (``xt[u, j]``); ``keys`` is scratch space for the
    records' keys (:func:`_keys`). Key spaces up to ``_COUNTING_SPACE`` are sorted by one
    counting pass (:func:`_counting_order`), larger ones by :func:`radix_order`; when the key
    space exceeds ``limit``, every record is its own group (keys ``0, 1, …``, index order).
    Returns ``(order, group_keys)``: ``group_keys[t]`` is the key of record ``order[t]``."""
    n = xt.shape[1]
    group_keys = np.empty(n, dtype=np.int64)
    space = _keys(v, xt, card, n_par, par, n_ch, ch, keys, limit)
    if space == 0.0:
        order = np.arange(n)
        for j in range(n):
            group_keys[j] = j
        return order, group_keys
    if space <= _COUNTING_SPACE:
        return _counting_order(keys, int(space), group_keys), group_keys
    order = radix_order(keys, space)
    for t in range(n):
        group_keys[t] = keys[order[t]]
    return order, group_keys


@njit(cache=True, nogil=True)
def node_major(x):
    """The records ``x`` (records × nodes) stored node-major: ``xt[u, j] = x[j, u]``."""
    return np.ascontiguousarray(x.T)


@njit(cache=True, nogil=True)
def _factor_scan(
    v, x, xt, cs, card, n_par, par, stride, cell_off, row_off, n_ch, ch,
    kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row,
    cell_n, row_n, a, p, cw0, xw,
):  # fmt: skip
    """Heat-bath updates of node ``v``'s records one by one, in index order, with ``W_k``
    summed from cached factor terms (module notes, "Records that rarely share a key").
    Returns the number of records that changed state."""
    n = x.shape[0]
    kv = card[v]
    nc = n_ch[v]
    n_rows = (cell_off[v + 1] - cell_off[v]) // kv
    own = np.empty(n_rows * kv)
    own_ok = np.zeros(n_rows, dtype=np.bool_)
    slot0 = np.empty(nc + 1, dtype=np.int64)  # child i's slots: slot0[i] + cell of w
    slot0[0] = 0
    for i in range(nc):
        w = ch[v, i]
        slot0[i + 1] = slot0[i] + cell_off[w + 1] - cell_off[w]
    term = np.empty(slot0[nc] * kv)
    term_ok = np.zeros(slot0[nc], dtype=np.bool_)
    changed = 0
    for j in range(n):
        c = _config(x, j, v, n_par, par, stride)
        base = cell_off[v] + c * kv
        if not own_ok[c]:
            for k in range(kv):
                own[c * kv + k] = _add_terms_from(
                    v, base + k, np.int64(-1), np.int64(1), True, np.int64(0), kind, coef, r, y,
                    logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row, cell_n, row_n,
                )  # fmt: skip
            own_ok[c] = True
        for k in range(kv):
            a[k] = own[c * kv + k]
        k0 = xt[v, j]
        for i in range(nc):
            w = ch[v, i]
            cw0[i] = _config(x, j, w, n_par, par, stride) - k0 * cs[v, i]
            xw[i] = x[j, w]
            slot = slot0[i] + cw0[i] * card[w] + xw[i]
            if not term_ok[slot]:
                for k in range(kv):
                    cw = cw0[i] + k * cs[v, i]
                    term[slot * kv + k] = _add_terms_from(
                        w, cell_off[w] + cw * card[w] + xw[i], row_off[w] + cw, np.int64(1), True,
                        np.int64(0), kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell,
                        lgd_row, cell_n, row_n,
                    )  # fmt: skip
                term_ok[slot] = True
            for k in range(kv):
                a[k] += term[slot * kv + k]
        # the record's own state, weighed as if it were out of the tables
        a[k0] = _weight(
            v, k0, base, cw0, xw, cs, card, cell_off, row_off, n_ch, ch,
            kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row,
            cell_n, row_n, -1,
        )  # fmt: skip
        _rebase(a, p, kv)
        total = 0.0
        for k in range(kv):
            total += p[k]
        k1 = _inverse_cdf(p, kv, np.random.random() * total)
        if k1 == k0:
            continue
        changed += 1
        x[j, v] = k1
        xt[v, j] = k1
        _shift_record(
            v, np.int64(k0), np.int64(-1), base, cw0, xw, cs, card, cell_off, row_off, n_ch, ch,
            cell_n, row_n,
        )  # fmt: skip
        _shift_record(
            v, np.int64(k1), np.int64(1), base, cw0, xw, cs, card, cell_off, row_off, n_ch, ch,
            cell_n, row_n,
        )  # fmt: skip
        # the cached terms that read a changed cell or row: v's row c, and per child every
        # state's slot of the rows the record left and joined
        own_ok[c] = False
        for i in range(nc):
            w = ch[v, i]
            first = slot0[i] + cw0[i] * card[w]
            for s in range(card[w]):
                term_ok[first + s] = False
    return changed


def one_by_one_nodes(net: tuple, n: int, key_space_limit: float = KEY_SPACE_LIMIT) -> np.ndarray:
    """Per node, whether :func:`gibbs_sweep` updates its records one by one with cached factor
    terms: its Markov blanket's key space (:func:`_blanket`, :func:`_key_space`) exceeds
    ``key_space_limit`` or ``_ONE_BY_ONE`` times the number of records ``n``. It depends on the
    network and ``n`` only: a chain computes it once, in a Python loop over the nodes that runs
    the helpers' Python functions (as a kernel of its own, its compilation took 0.4 s of the
    first run; calling the compiled helpers from Python, 0.3 s)."""
    card, n_par, par, _, _, _, n_ch, ch = net
    limit = min(key_space_limit, _ONE_BY_ONE * n)
    # numba's dispatchers keep the Python function (with NUMBA_DISABLE_JIT they are it)
    blanket = getattr(_blanket, "py_func", _blanket)
    key_space = getattr(_key_space, "py_func", _key_space)
    mb = np.empty(len(card), dtype=np.int64)
    out = np.zeros(len(card), dtype=np.bool_)
    for v in range(len(card)):
        m = blanket(v, n_par, par, n_ch, ch, mb)
        out[v] = key_space(card, mb, m) > limit
    return out


@njit(cache=True, nogil=True)
def factor_sweep(v, x, net, obs, cell_n, row_n):
    """Heat-bath updates of node ``v``'s records one by one with cached factor terms
    (:func:`_factor_scan`, module notes). Returns the number of records that changed state.

    A kernel of its own, called only for the nodes that need it: as a branch of
    :func:`grouped_sweep` its code was compiled on every first run, 1.7 of the 6.5 s that
    compiling the sweep took on Adult, which has no such node."""
    card, n_par, par, stride, cell_off, row_off, n_ch, ch = net
    kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row = obs
    kmax = 1
    for u in range(card.shape[0]):
        kmax = max(kmax, card[u])
    width = max(1, ch.shape[1])
    return _factor_scan(
        v, x, node_major(x), _child_strides(card, n_par, par, stride, n_ch, ch), card, n_par,
        par, stride, cell_off, row_off, n_ch, ch, kind, coef, r, y, logt, acell, arow, lg_cell,
        lg_row, lgd_cell, lgd_row, cell_n, row_n, np.empty(kmax), np.empty(kmax),
        np.empty(width, dtype=np.int64), np.empty(width, dtype=np.int64),
    )  # fmt: skip


def gibbs_sweep(
    x: np.ndarray,
    net: tuple,
    obs: tuple,
    cell_n: np.ndarray,
    row_n: np.ndarray,
    key_space_limit: float = KEY_SPACE_LIMIT,
    active: np.ndarray | None = None,
    tally: np.ndarray | None = None,
    one_by_one: np.ndarray | None = None,
) -> tuple[int, int]:
    """Collapsed heat-bath updates of every record at every node with two or more states,
    node by node, grouped by key (module notes); a node whose key space exceeds
    ``key_space_limit`` or ``_ONE_BY_ONE`` times the number of records updates its records one
    by one with cached factor terms (:func:`factor_sweep`).

    ``active`` (bool per node, default all) restricts the sweep to the nodes it marks (a scan
    over fewer nodes is still a composition of Gibbs kernels); ``tally`` (int64, nodes × 2), when
    given, gains each visited node's records changed and updated; ``one_by_one`` is
    :func:`one_by_one_nodes` of ``net``, ``len(x)`` and ``key_space_limit`` (computed if not
    given). Returns (changed, updated).

    Runs of consecutive grouped nodes go to :func:`grouped_sweep` in one call and each other node
    to :func:`factor_sweep`, in node order, so the updates and the draws are those of one scan."""
    n, d = x.shape
    one = one_by_one_nodes(net, n, key_space_limit) if one_by_one is None else one_by_one
    if not one.any():
        return grouped_sweep(x, net, obs, cell_n, row_n, key_space_limit, active, tally)
    visit = np.ones(d, dtype=np.bool_) if active is None else np.asarray(active, dtype=np.bool_)
    card = net[0]
    changed = updated = 0
    v = 0
    while v < d:
        if one[v]:
            if visit[v] and card[v] >= 2 and n > 0:
                c = int(factor_sweep(v, x, net, obs, cell_n, row_n))
                changed += c
                updated += n
                if tally is not None:
                    tally[v, 0] += c
                    tally[v, 1] += n
            v += 1
            continue
        end = v
        while end < d and not one[end]:
            end += 1
        run = np.zeros(d, dtype=np.bool_)
        run[v:end] = visit[v:end]
        if run.any():
            c, u = grouped_sweep(x, net, obs, cell_n, row_n, key_space_limit, run, tally)
            changed += int(c)
            updated += int(u)
        v = end
    return changed, updated


@njit(cache=True, nogil=True)
def grouped_sweep(
    x, net, obs, cell_n, row_n, key_space_limit=KEY_SPACE_LIMIT, active=None, tally=None
):
    """The heat-bath updates of :func:`gibbs_sweep` with every visited node's records grouped
    by key (module notes), whatever its key space (one past ``key_space_limit`` makes every
    record its own group: exact, but slower than :func:`factor_sweep`). Arguments and return
    as :func:`gibbs_sweep`'s."""
    card, n_par, par, stride, cell_off, row_off, n_ch, ch = net
    kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row = obs
    n, d = x.shape
    cs = _child_strides(card, n_par, par, stride, n_ch, ch)
    kmax = 1
    for v in range(d):
        kmax = max(kmax, card[v])
    width = max(1, ch.shape[1])
    a = np.empty(kmax)
    p = np.empty(kmax)
    b = np.empty(kmax)  # per state: its weight as if one of its records were out, and exp
    q = np.empty(kmax)
    b_ok = np.zeros(kmax, dtype=np.bool_)
    cw0 = np.empty(width, dtype=np.int64)
    xw = np.empty(width, dtype=np.int64)
    keys = np.empty(n, dtype=np.int64)
    xt = node_major(x)  # the keys' columns; kept in step with x as records move
    changed = 0
    updated = 0
    for v in range(d):
        kv = card[v]
        if kv < 2 or n == 0 or (active is not None and not active[v]):
            continue
        changed_before, updated_before = changed, updated
        order, group_keys = group_order(v, xt, card, n_par, par, n_ch, ch, keys, key_space_limit)
        g = 0
        while g < n:
            j0 = order[g]
            base = cell_off[v] + _config(x, j0, v, n_par, par, stride) * kv
            for i in range(n_ch[v]):
                w = ch[v, i]
                cw0[i] = _config(x, j0, w, n_par, par, stride) - x[j0, v] * cs[v, i]
                xw[i] = x[j0, w]
            for k in range(kv):
                a[k] = _weight(
                    v, k, base, cw0, xw, cs, card, cell_off, row_off, n_ch, ch,
                    kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row,
                    cell_n, row_n, 0,
                )  # fmt: skip
            ref = _rebase(a, p, kv)
            for k in range(kv):
                b_ok[k] = False
            h = g
            while h < n and group_keys[h] == group_keys[g]:
                j = order[h]
                h += 1
                updated += 1
                k0 = xt[v, j]
                full = a[k0]
                p_full = p[k0]
                # the record's own state weighed as if it were out of the tables (nothing is
                # written unless it moves: most records stay, 55 % on Adult, 91 % on alarm);
                # b[k0] is recomputed only after a record has left k0 (module notes)
                if not b_ok[k0]:
                    b[k0] = _weight(
                        v, k0, base, cw0, xw, cs, card, cell_off, row_off, n_ch, ch,
                        kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row,
                        cell_n, row_n, -1,
                    )  # fmt: skip
                    q[k0] = math.exp(b[k0] - ref)
                    b_ok[k0] = True
                a[k0] = b[k0]
                p[k0] = q[k0]
                total = 0.0
                for k in range(kv):
                    total += p[k]
                rebased = False
                if not (_LOW < total < _HIGH):  # drifted far from the reference: re-anchor
                    ref = _rebase(a, p, kv)
                    rebased = True
                    for k in range(kv):
                        if b_ok[k]:
                            q[k] = math.exp(b[k] - ref)
                    total = 0.0
                    for k in range(kv):
                        total += p[k]
                k1 = _inverse_cdf(p, kv, np.random.random() * total)
                if k1 == k0:  # the tables stay as they are
                    a[k0] = full
                    p[k0] = math.exp(full - ref) if rebased else p_full
                else:  # a[k0] is that of the tables without j, as they now are at k0
                    changed += 1
                    b_ok[k0] = False
                    # k1's cells gain j: its weight with one record out is the one before
                    b[k1] = a[k1]
                    q[k1] = p[k1]
                    b_ok[k1] = True
                    x[j, v] = k1
                    xt[v, j] = k1
                    _shift_record(
                        v, np.int64(k0), np.int64(-1), base, cw0, xw, cs, card, cell_off, row_off,
                        n_ch, ch,
                        cell_n, row_n,
                    )  # fmt: skip
                    _shift_record(
                        v, np.int64(k1), np.int64(1), base, cw0, xw, cs, card, cell_off, row_off,
                        n_ch, ch,
                        cell_n, row_n,
                    )  # fmt: skip
                    a[k1] = _weight(
                        v, k1, base, cw0, xw, cs, card, cell_off, row_off, n_ch, ch,
                        kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row,
                        cell_n, row_n, 0,
                    )  # fmt: skip
                    p[k1] = math.exp(a[k1] - ref)
            g = h
        if tally is not None:
            tally[v, 0] += changed - changed_before
            tally[v, 1] += updated - updated_before
    return changed, updated
