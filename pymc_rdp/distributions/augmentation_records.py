"""Values released record by record (randomized response), observed through a fixed extra child.

Where :mod:`pymc_rdp.distributions.augmentation_observations` reads a release of a family
*table*, randomized response releases every record's value of a node on its own
(:class:`pymc_rdp.CategoricalRandomizedResponse`, or :class:`pymc_rdp.RandomizedResponse` for
two states): record ``j``'s released value ``ỹ_j`` is its value ``x_jv`` with probability ``p``
and each of the ``K − 1`` others with ``q = (1 − p)/(K − 1)``. Given the records, the released
values have the likelihood

.. math:: \\prod_j M[x_{jv}, ỹ_j] = \\prod_{k, k'} M[k, k']^{\\, n_{k k'}},

``M`` the mechanism's ``K × K`` matrix (``p`` on the diagonal, ``q`` off it) and ``n_{k k'}``
the records with value ``k`` released as ``k'``. That is the likelihood of the family table of
an extra node ``v̂`` with the one parent ``v``, whose values are the released ones, observed, and
whose CPT is ``M``, known (Warner 1965; Ju, Awan, Gong & Rao 2022 treat any release whose
likelihood factors over the records this way).

So the sampler lays such a node out as that child, after every node of the network:

* its family table's term in the target is ``Σ n_{k k'} log M[k, k']``, linear in the counts,
  the form of a tabulated Dirichlet-mechanism release (kind ``KIND_DIRICHLET_TABLED`` with
  ``r = 1``, ``log θ̃ = log M`` and no log Γ terms) with no Bayesian-Dirichlet score (its CPT is
  known, not drawn): :func:`released_child_observation`;
* its values never change: no heat-bath sweep, pair move or subtree move of its own visits it,
  and a subtree-type move that changes ``v`` moves the record to its new row with its released
  value kept (:mod:`pymc_rdp.distributions.augmentation_subtree`, "Observed values");
* ``v``'s own family table has no release (kind ``KIND_NONE``): the records are what was
  released.

A heat-bath update of ``x_jv`` then weighs each state ``k`` by ``M[k, ỹ_j]`` through the child's
term, and the grouping by Markov blanket keys records by their released value as well. The
released values also fix ``N``: randomized response needs a public number of records.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np

from pymc_rdp.distributions.augmentation_observations import FamilyObservation

__all__ = [
    "RECORD_MECHANISMS",
    "RECORD_MOVES",
    "internal_layout",
    "randomized_observation",
    "released_child_observation",
    "released_columns",
]

#: mechanisms whose releases are the records' values, one per record
RECORD_MECHANISMS = ("categorical_randomized_response", "randomized_response")

#: the moves that keep such values fixed (the others rewrite every attribute of a record)
RECORD_MOVES = ("gibbs", "subtree", "pair", "diffuse_pair", "child_row", "pooled_row", "transfer")


def randomized_observation(
    values: Any, mechanism: Any, shape: tuple[int, int], what: str
) -> FamilyObservation:
    """A node's randomized-response release: its own family table unreleased (kind
    ``KIND_NONE``) and the released values with the mechanism's log matrix ``log M``.

    ``values`` holds one released code ``0 .. K − 1`` per record (for binary randomized
    response, the released bits); ``shape`` is the node's table (configurations, ``K``)."""
    from pymc_rdp.distributions import _augmentation_kernels as k

    n_states = shape[1]
    name = getattr(mechanism, "name", None)
    states = int(getattr(mechanism, "k", 2)) if name == "categorical_randomized_response" else 2
    if states != n_states:
        raise ValueError(
            f"{what}: randomized response over {states} values, but the node has {n_states} states"
        )
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{what}: released values must be one per record (1-D), got {arr.shape}")
    if arr.dtype == np.bool_:
        arr = arr.astype(np.int64)
    if np.issubdtype(arr.dtype, np.floating) and arr.size:
        if not np.isfinite(arr).all() or (arr != np.round(arr)).any():
            raise ValueError(f"{what}: released values must be integer state codes")
    elif not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"{what}: released values must be integer state codes, got {arr.dtype}")
    codes = arr.astype(np.int64)
    if codes.size and (codes.min() < 0 or codes.max() >= n_states):
        raise ValueError(f"{what}: released values must be state codes 0..{n_states - 1}")
    p = float(mechanism.p)
    q = (1.0 - p) / (n_states - 1)
    log_m = np.full((n_states, n_states), math.log(q))
    np.fill_diagonal(log_m, math.log(p))
    return FamilyObservation(
        k.KIND_NONE, np.zeros(shape[0] * shape[1]), records=codes, record_logp=log_m
    )


def released_child_observation(log_m: np.ndarray) -> FamilyObservation:
    """The family of a released node's extra child (module notes): ``r = 1``,
    ``log θ̃ = log M`` row by row, no log Γ terms and no Bayesian-Dirichlet score."""
    from pymc_rdp.distributions import _augmentation_kernels as k

    cells = log_m.size
    return FamilyObservation(
        k.KIND_DIRICHLET_TABLED,
        np.zeros(cells),
        r=1.0,
        logt=np.asarray(log_m, dtype=np.float64).reshape(-1).copy(),
        alpha=np.ones(cells),
        fixed=True,
    )


def internal_layout(
    structure: Any,
    cards: Mapping[str, int],
    configs: Mapping[str, Sequence[Any]],
    observations: Mapping[str, FamilyObservation],
) -> tuple[Any, dict[str, int], dict[str, Sequence[Any]], dict[str, FamilyObservation], list]:
    """The network the kernels run on: the nodes in ``structure.order``, then one extra child
    per node released record by record (module notes).

    Returns ``(layout, cards, configs, observations, released)``: ``layout`` has ``order`` and
    ``parents`` as a structure does, and ``released`` lists ``(node, its position, its child's
    position)``. Without such nodes the structure and mappings are returned as given."""
    nodes = list(structure.order)
    released = [v for v in nodes if observations[v].records is not None]
    if not released:
        return structure, dict(cards), dict(configs), dict(observations), []
    parents = {v: list(structure.parents[v]) for v in nodes}
    cards_in, configs_in, obs_in = dict(cards), dict(configs), dict(observations)
    order = list(nodes)
    taken = set(nodes)
    out = []
    for v in released:
        child = f"{v} (released)"
        while child in taken:
            child += "'"
        taken.add(child)
        order.append(child)
        parents[child] = [v]
        cards_in[child] = cards[v]
        configs_in[child] = list(range(cards[v]))
        log_m = observations[v].record_logp
        assert log_m is not None
        obs_in[child] = released_child_observation(log_m)
        out.append((v, nodes.index(v), len(order) - 1))
    return SimpleNamespace(order=order, parents=parents), cards_in, configs_in, obs_in, out


def released_columns(
    observations: Mapping[str, FamilyObservation], released: list, n_records: int | None
) -> np.ndarray:
    """The released values as the extra children's columns (records × released nodes).

    Raises
    ------
    ValueError
        ``N`` is unknown, or a release holds another number of values than ``N``.
    """
    if not released:
        return np.zeros((0 if n_records is None else n_records, 0), dtype=np.int64)
    if n_records is None:
        raise ValueError(
            "randomized-response releases publish one value per record, so N is public: pass "
            "n_records=N (an unknown N is for table releases under add/remove neighbours)"
        )
    cols = []
    for v, _, _ in released:
        codes = observations[v].records
        assert codes is not None
        if codes.size != n_records:
            raise ValueError(
                f"releases[{v!r}]: {codes.size} released values, but n_records = {n_records}"
            )
        cols.append(codes)
    return np.stack(cols, axis=1)
