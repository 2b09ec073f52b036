"""The arrays the data-augmentation kernels read: the network's layout and its releases.

:func:`network_arrays` lays a Bayesian network and its releases' :class:`FamilyObservation`\\ s
out as the tuples ``net`` and ``obs`` of :mod:`pymc_rdp.distributions._augmentation_kernels`
(see there for their fields): parents with their strides in the configuration index (first
parent slowest), children, the offsets of every family's cells and rows, the releases' density
parameters per node and cell, and the tables of the Bayesian-Dirichlet score
``lg_cell[v, n] = log Γ(α₀ + n)`` and ``lg_row[v, n] = log Γ(K_v α₀ + n)`` for
``n = 0..N`` (Heckerman, Geiger & Chickering 1995, "Learning Bayesian networks: the combination
of knowledge and statistical data"), and, for a Dirichlet-mechanism release with one α over its
table, its density's terms ``lgd_cell[v, n] = log Γ(r n + α)`` and
``lgd_row[v, n] = log Γ(r n + K_v α)`` (kind ``KIND_DIRICHLET_TABLED``). A family marked
``fixed`` (a released node's extra child, :mod:`pymc_rdp.distributions.augmentation_records`)
has every score and log Γ term zero, leaving the linear term ``Σ n log M``.
:data:`RECORD_DTYPE` is the dtype of a chain's latent records, :func:`draws_array` the array a
chain writes its draws into.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from pymc_rdp.distributions.augmentation_observations import FamilyObservation

__all__ = ["RECORD_DTYPE", "draws_array", "network_arrays"]

#: the dtype of a chain's latent records (records × nodes, state codes): half the bytes of
#: int64, so the kernels' passes over the records read half the memory (the same draws; on
#: alarm, N = 10⁴, an iteration about 6 % shorter, on Adult about 4 %; int16 and int8 were
#: slower than int64 there, numba widening each code it reads)
RECORD_DTYPE = np.int32


def network_arrays(
    structure: Any,
    cards: Mapping[str, int],
    configs: Mapping[str, Sequence[Any]],
    observations: Mapping[str, FamilyObservation],
    alpha0: float,
    n_scale: int,
) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...], np.ndarray, dict[str, int]]:
    """The kernels' ``net`` and ``obs`` tuples of a network and its releases.

    Parameters
    ----------
    structure : NetworkStructure
        The DAG (``order`` topological, ``parents`` per node).
    cards : dict
        ``node -> number of states``.
    configs : dict
        ``node -> parent configurations`` (only their number is used).
    observations : dict
        ``node -> FamilyObservation`` of its family table's release.
    alpha0 : float
        Concentration of the ``Dirichlet(α₀)`` prior of every CPT row.
    n_scale : int
        Largest number of records the chain holds (the score tables cover ``0..n_scale``).

    Returns
    -------
    net : tuple
        ``(card, n_par, par, stride, cell_off, row_off, n_ch, ch)``.
    obs : tuple
        ``(kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row)``.
    alpha : numpy.ndarray
        ``α₀`` per node.
    index : dict
        ``node -> position`` in ``structure.order``.
    """
    from scipy.special import gammaln

    from pymc_rdp.distributions import _augmentation_kernels as k

    nodes = structure.order
    index = {v: i for i, v in enumerate(nodes)}
    d = len(nodes)
    parents = [[index[p] for p in structure.parents[v]] for v in nodes]
    children: list[list[int]] = [[] for _ in nodes]
    for i, ps in enumerate(parents):
        for p in ps:
            children[p].append(i)
    card = np.array([cards[v] for v in nodes], dtype=np.int64)
    n_cfg = np.array([len(configs[v]) for v in nodes], dtype=np.int64)
    width_p = max(1, max(len(p) for p in parents))
    width_c = max(1, max(len(c) for c in children))
    par = np.zeros((d, width_p), dtype=np.int64)
    stride = np.zeros((d, width_p), dtype=np.int64)
    ch = np.zeros((d, width_c), dtype=np.int64)
    for i in range(d):
        s = 1
        for q in range(len(parents[i]) - 1, -1, -1):
            par[i, q] = parents[i][q]
            stride[i, q] = s
            s *= card[parents[i][q]]
        ch[i, : len(children[i])] = children[i]
    cell_off = np.zeros(d + 1, dtype=np.int64)
    cell_off[1:] = np.cumsum(n_cfg * card)
    row_off = np.zeros(d + 1, dtype=np.int64)
    row_off[1:] = np.cumsum(n_cfg)
    net = (
        card,
        np.array([len(p) for p in parents], dtype=np.int64),
        par,
        stride,
        cell_off,
        row_off,
        np.array([len(c) for c in children], dtype=np.int64),
        ch,
    )
    n_cells, n_rows = int(cell_off[-1]), int(row_off[-1])
    kind = np.zeros(d, dtype=np.int64)
    coef = np.zeros(d)
    r = np.zeros(d)
    y = np.zeros(n_cells)
    logt = np.zeros(n_cells)
    acell = np.ones(n_cells)
    arow = np.ones(n_rows)
    for i, v in enumerate(nodes):
        o = observations[v]
        sl = slice(cell_off[i], cell_off[i + 1])
        kind[i] = o.kind
        coef[i] = o.coef
        r[i] = o.r
        y[sl] = o.y
        if o.logt is not None:
            logt[sl] = o.logt
            acell[sl] = o.alpha
            arow[row_off[i] : row_off[i + 1]] = o.alpha.reshape(n_cfg[i], -1).sum(axis=1)
    counts = np.arange(n_scale + 1, dtype=np.float64)
    lg_cell = np.broadcast_to(gammaln(alpha0 + counts), (d, counts.size)).copy()
    lg_row = gammaln(card[:, None] * alpha0 + counts[None, :])
    # a released node's extra child: its CPT is known, so its family has no score terms
    fixed = [i for i, v in enumerate(nodes) if observations[v].fixed]
    lg_cell[fixed] = 0.0
    lg_row[fixed] = 0.0
    # a Dirichlet release with one α over its table: its log Γ terms as tables of n = 0..N
    tabled = [
        i
        for i in range(d)
        if kind[i] == k.KIND_DIRICHLET
        and np.all(acell[cell_off[i] : cell_off[i + 1]] == acell[cell_off[i]])
    ]
    width = counts.size if tabled or fixed else 1  # the extra children read zero terms
    lgd_cell = np.zeros((d, width))
    lgd_row = np.zeros((d, width))
    for i in tabled:
        a = float(acell[cell_off[i]])
        kind[i] = k.KIND_DIRICHLET_TABLED
        lgd_cell[i] = gammaln(r[i] * counts + a)
        lgd_row[i] = gammaln(r[i] * counts + card[i] * a)
    obs = (kind, coef, r, y, logt, acell, arow, lg_cell, lg_row, lgd_cell, lgd_row)
    return net, obs, np.full(d, alpha0), index


def draws_array(out: np.ndarray | None, draws: int, n_cells: int) -> np.ndarray:
    """The (``draws``, ``n_cells``) float64 array a chain writes its kept draws into: ``out``,
    checked, or a new one when ``out`` is None.

    Raises
    ------
    TypeError
        ``out`` is not a float64 numpy array.
    ValueError
        ``out`` has another shape or is read-only.
    """
    if out is None:
        return np.empty((draws, n_cells))
    if not isinstance(out, np.ndarray) or out.dtype != np.float64:
        raise TypeError(f"out must be a float64 numpy array, got {type(out).__name__}")
    if out.shape != (draws, n_cells):
        raise ValueError(f"out must have shape {(draws, n_cells)} (draws, cells), got {out.shape}")
    if not out.flags.writeable:
        raise ValueError("out must be writeable")
    return out
