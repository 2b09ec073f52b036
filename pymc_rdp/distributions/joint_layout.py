"""Where every family's cells sit in the stacked release vector of a Bayesian network.

The joint likelihood (:mod:`pymc_rdp.distributions.joint_likelihood`) stacks the ``K`` family
tables of a network into one vector of ``M`` cells, each family ``F_v = (pa(v)..., v)`` flattened
row-major (parent configuration, child state) in topological order. Its second moments need the
joint marginal ``P(F_a ∪ F_b)`` of every pair of families; :class:`FamilyLayout` records which
entry of those marginals fills each cell pair of ``Q diag(p) Qᵀ`` (zero where the two cells
disagree on a shared node). Pure numpy; build it once per network.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from pymc_rdp.bn.elimination import MAX_ENUMERATION_STATES, is_symbolic
from pymc_rdp.bn.graph import NetworkStructure, parse_structure

__all__ = ["METHODS", "FamilyLayout", "check_cpts", "family_layout", "resolve_method"]

#: Marginalisation methods: enumeration of the joint table or a junction tree.
METHODS = ("auto", "enumeration", "junction_tree")


@dataclass(frozen=True, eq=False)
class FamilyLayout:
    """Where every family's cells sit in the stacked release vector, and how to fill the moments.

    Attributes
    ----------
    structure : NetworkStructure
    cards : dict
        ``node -> number of states``.
    families : tuple of tuple of str
        ``F_v = (*parents, v)`` for every node in topological order.
    offsets : numpy.ndarray
        int64, length ``K + 1``: family ``k`` occupies cells ``offsets[k]:offsets[k+1]``.
    pairs : list of (int, int)
        The family pairs ``a <= b`` whose joint marginal is needed.
    unions : list of tuple of str
        The nodes of ``F_a ∪ F_b`` (``F_a``'s, then ``F_b``'s new ones), the axis order of the
        pair's marginal.
    gather : numpy.ndarray
        int64 ``(M, M)``: index of every second-moment entry in the concatenated flattened pair
        marginals, or the index of an appended zero where the two cells disagree on a shared node.
    diag_index : numpy.ndarray
        int64 ``(M,)``: the first moments ``P(F_v)`` inside the same concatenation (the pairs
        ``(a, a)``).
    """

    structure: NetworkStructure
    cards: dict[str, int]
    families: tuple[tuple[str, ...], ...]
    offsets: np.ndarray
    pairs: list[tuple[int, int]]
    unions: list[tuple[str, ...]]
    gather: np.ndarray
    diag_index: np.ndarray

    @property
    def n_cells(self) -> int:
        """``M``, the total number of cells of all family tables."""
        return int(self.offsets[-1])

    @property
    def n_families(self) -> int:
        """``K``."""
        return len(self.families)

    def family_slice(self, node: str) -> slice:
        """The cells of ``node``'s family table in the stacked vector."""
        k = self.structure.order.index(node)
        return slice(int(self.offsets[k]), int(self.offsets[k + 1]))

    def joint_states(self) -> float:
        """Number of joint states of the whole network."""
        return float(np.prod([float(c) for c in self.cards.values()]))


def _structure_and_cards(
    structure: Any, cardinalities: Mapping[str, int]
) -> tuple[NetworkStructure, dict[str, int]]:
    if isinstance(structure, NetworkStructure):
        st = structure
    else:
        st, _ = parse_structure(structure)
    if not isinstance(cardinalities, Mapping):
        raise TypeError(
            f"cardinalities must be a dict node -> number of states, got {type(cardinalities)}"
        )
    missing = [v for v in st.order if v not in cardinalities]
    if missing:
        raise ValueError(f"cardinalities has no entry for the node(s) {missing}")
    cards = {}
    for v in st.order:
        c = cardinalities[v]
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or c < 1:
            raise ValueError(f"cardinalities[{v!r}] must be an integer >= 1, got {c!r}")
        cards[v] = int(c)
    return st, cards


def family_layout(structure: Any, cardinalities: Mapping[str, int]) -> FamilyLayout:
    """Index bookkeeping of the stacked family tables (pure numpy; build it once per network).

    Parameters
    ----------
    structure : dict, networkx.DiGraph, pgmpy model or NetworkStructure
        See :func:`pymc_rdp.bn.structure.parse_structure`.
    cardinalities : dict
        ``node -> number of states``.
    """
    st, cards = _structure_and_cards(structure, cardinalities)
    families = tuple((*st.parents[v], v) for v in st.order)
    sizes = [int(np.prod([cards[u] for u in f], dtype=np.int64)) for f in families]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    m = int(offsets[-1])
    k = len(families)
    pairs = [(a, b) for a in range(k) for b in range(a, k)]
    unions = []
    for a, b in pairs:
        fa, fb = families[a], families[b]
        unions.append((*fa, *[u for u in fb if u not in fa]))
    gather = np.empty((m, m), dtype=np.int64)
    start = 0
    diag_index = np.empty(m, dtype=np.int64)
    for (a, b), union in zip(pairs, unions, strict=True):
        fa, fb = families[a], families[b]
        ucards = [cards[u] for u in union]
        size = int(np.prod(ucards, dtype=np.int64))
        sa = np.indices([cards[u] for u in fa]).reshape(len(fa), -1)  # (|F_a| nodes, cells)
        sb = np.indices([cards[u] for u in fb]).reshape(len(fb), -1)
        coords = []
        agree = np.ones((sa.shape[1], sb.shape[1]), dtype=bool)
        for u in union:
            if u in fa:
                ca = sa[fa.index(u)][:, None]
                if u in fb:
                    agree &= ca == sb[fb.index(u)][None, :]
                coords.append(np.broadcast_to(ca, agree.shape))
            else:
                coords.append(np.broadcast_to(sb[fb.index(u)][None, :], agree.shape))
        flat = np.ravel_multi_index(tuple(coords), ucards) + start
        block = np.where(agree, flat, -1)
        ra = slice(int(offsets[a]), int(offsets[a + 1]))
        rb = slice(int(offsets[b]), int(offsets[b + 1]))
        gather[ra, rb] = block
        gather[rb, ra] = block.T
        if a == b:
            diag_index[ra] = np.diagonal(block)
        start += size
    gather[gather < 0] = start  # the appended zero
    return FamilyLayout(
        structure=st,
        cards=cards,
        families=families,
        offsets=offsets,
        pairs=pairs,
        unions=unions,
        gather=gather,
        diag_index=diag_index,
    )


def resolve_method(layout: FamilyLayout, method: str) -> str:
    """``"enumeration"`` or ``"junction_tree"``; ``"auto"`` enumerates up to 4096 joint states."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if method == "auto":
        return "enumeration" if layout.joint_states() <= MAX_ENUMERATION_STATES else "junction_tree"
    return method


def check_cpts(layout: FamilyLayout, cpts: Mapping[str, Any]) -> dict[str, Any]:
    """Every node's CPT as float64 of shape (parent configurations, states), or a ValueError."""
    if not isinstance(cpts, Mapping):
        raise TypeError(f"cpts must be a dict node -> CPT, got {type(cpts).__name__}")
    out = {}
    for v, fam in zip(layout.structure.order, layout.families, strict=True):
        if v not in cpts:
            raise ValueError(f"cpts has no table for the node {v!r}")
        shape = (int(np.prod([layout.cards[u] for u in fam[:-1]], dtype=np.int64)), layout.cards[v])
        t = cpts[v]
        if is_symbolic(t):
            import pytensor.tensor as pt

            t = pt.as_tensor(t)
            if t.ndim != 2:
                raise ValueError(f"cpts[{v!r}] must be 2-D {shape}, got ndim {t.ndim}")
            t = pt.specify_shape(pt.cast(t, "float64"), shape)
        else:
            t = np.asarray(t, dtype=np.float64)
            if t.shape != shape:
                raise ValueError(f"cpts[{v!r}] must have shape {shape}, got {t.shape}")
        out[v] = t
    return out
