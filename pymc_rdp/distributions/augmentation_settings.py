"""Settings of the data-augmentation sampler: the states, the moves and the move sizes, checked
and defaulted.

:class:`~pymc_rdp.distributions.data_augmentation.DataAugmentation` takes categorical states per
node, a schedule of moves (:data:`MOVES`, each listed as often as it runs per iteration; by
default two heat-bath sweeps (the second over the diffuse nodes only), subtree moves, then pair
moves over the diffuse nodes, ``("gibbs", "gibbs", "subtree", "diffuse_pair")``,
for a known ``N`` (one sweep, pair, subtree and child-row moves when every release is a
Dirichlet-mechanism release), ``("record",)`` for an unknown one, as the collapsed moves need a
fixed ``N``), and the
block sizes, the proposals per iteration and the birth/death proposals either as one integer,
as a dict per node or not at all; this module resolves those to one integer >= 1 per node (or
per chain):

* block size ``m``: about the standard deviation of a cell count given its release, the noise
  sd for additive noise; for a Dirichlet release ``θ̃_c ~ Dirichlet(r s_c + α)`` a cell's
  probability ``p`` has variance about ``p(1 − p)/(r n_c)``, which in counts is
  ``sqrt(n_c p(1 − p)/r) ≤ sqrt(N / (cells · r))`` at an even table;
* birth/death proposals (unknown ``N``): ``max(20, 2 sd)``, ``sd`` the largest noise sd of a
  released total (a table's total sums its cells' noise, sd ``σ sqrt(cells)``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from pymc_rdp.distributions.augmentation_observations import FamilyObservation

__all__ = [
    "MOVES",
    "birth_death_setting",
    "check_moves",
    "check_states",
    "default_block_size",
    "per_node_flag",
    "per_node_setting",
]

#: the moves of an iteration, in the order they run
MOVES = (
    "record",
    "site",
    "block",
    "row_block",
    "gibbs",
    "subtree",
    "child_row",
    "pooled_row",
    "ancillary",
    "swap",
    "soma",
    "pair",
    "diffuse_pair",
    "transfer",
)
_DEFAULT_MOVES = ("gibbs", "gibbs", "subtree", "diffuse_pair")


def check_states(states: Any, nodes: Sequence[str]) -> dict[str, list[Any]]:
    """``node -> list of states`` for every node of ``nodes``, each categorical and non-empty.

    Raises
    ------
    TypeError
        ``states`` is not a dict, or a node's states are a scalar (a continuous node).
    ValueError
        A node without states, or with none.
    """
    if not isinstance(states, Mapping):
        raise TypeError("states must be a dict node -> list of states")
    missing = [v for v in nodes if v not in states]
    if missing:
        raise ValueError(f"states: no states for nodes {missing}")
    bad_states = [v for v in nodes if isinstance(states[v], (str, bytes, float, int))]
    if bad_states:
        raise TypeError(
            f"states: nodes {bad_states} are not categorical (a list of states each); "
            "data augmentation handles discrete nodes only, not continuous ones"
        )
    out = {v: list(states[v]) for v in nodes}
    if any(len(s) < 1 for s in out.values()):
        raise ValueError("states: every node needs at least one state")
    return out


def check_moves(moves: Sequence[str] | None, known_total: bool) -> tuple[str, ...]:
    """The schedule of moves: ``moves`` checked, or the default for a known or unknown ``N``.

    Raises
    ------
    ValueError
        An empty schedule, an unknown move, or a collapsed move with an unknown ``N``.
    """
    if moves is None:  # the collapsed moves need a fixed N; an unknown N runs record moves
        moves = _DEFAULT_MOVES if known_total else ("record",)
    moves = tuple(moves)
    bad = [m for m in moves if m not in MOVES]
    if bad or not moves:
        raise ValueError(f"moves must be a non-empty subset of {MOVES}, got {moves!r}")
    if not known_total and moves != ("record",):
        raise ValueError(
            f"moves={moves!r}: with an unknown N only the record move runs (with birth/death "
            "moves); the collapsed moves need a fixed N"
        )
    return moves


def default_block_size(obs: FamilyObservation, cells: int, n_scale: int) -> int:
    """Default largest block ``m`` of a node: the sd of a cell count given its release, in
    ``1..n_scale`` (``cells`` the node's family table's cells, ``n_scale`` the largest ``N``)."""
    if obs.count_sd is not None:
        sd = obs.count_sd
    elif obs.record_logp is not None:
        # randomized response: the sd of a cell's count read back from the released values,
        # sqrt(n p (1 − p)) / (p − q) at a cell's mean count n
        p, q = math.exp(obs.record_logp[0, 0]), math.exp(obs.record_logp[0, 1])
        sd = math.sqrt(max(1.0, n_scale / cells) * p * (1.0 - p)) / (p - q)
    else:
        sd = math.sqrt(max(1.0, n_scale / cells) / obs.r)
    return int(max(1, min(n_scale, round(sd))))


def _per_node(value: Any, name: str, default: Callable[[str], Any], nodes: Sequence[str]) -> dict:
    """``node -> value`` from one value, a dict over some nodes (the others take
    ``default(node)``) or None (all take the default), before the values are checked.

    Raises
    ------
    ValueError
        A dict key that is not a node (``name`` named).
    """
    if value is None:
        return {v: default(v) for v in nodes}
    if isinstance(value, Mapping):
        known = set(nodes)
        unknown = [v for v in value if v not in known]
        if unknown:
            raise ValueError(f"{name}: {unknown} are not nodes")
        out = {v: default(v) for v in nodes}
        out.update({v: value[v] for v in value})
        return out
    return dict.fromkeys(nodes, value)


def per_node_setting(
    value: Any, name: str, default: Callable[[str], int], nodes: Sequence[str]
) -> dict[str, int]:
    """``node -> integer >= 1`` from one integer, a dict over some nodes (the others take
    ``default(node)``) or None (all take the default).

    Raises
    ------
    ValueError
        A dict key that is not a node, or a value that is not an integer >= 1 (``name`` named).
    """
    out = _per_node(value, name, lambda v: int(default(v)), nodes)
    for v, m in out.items():
        if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
            raise ValueError(f"{name} must be an integer >= 1 (node {v!r}), got {m!r}")
    return {v: int(m) for v, m in out.items()}


def per_node_flag(
    value: Any, name: str, default: Callable[[str], bool], nodes: Sequence[str]
) -> dict[str, bool]:
    """``node -> bool`` from one bool, a dict over some nodes (the others take
    ``default(node)``) or None (all take the default).

    Raises
    ------
    ValueError
        A dict key that is not a node.
    TypeError
        A value that is not a bool (``name`` named).
    """
    out = _per_node(value, name, lambda v: bool(default(v)), nodes)
    for v, flag in out.items():
        if not isinstance(flag, (bool, np.bool_)):
            raise TypeError(f"{name} must be True or False (node {v!r}), got {flag!r}")
    return {v: bool(flag) for v, flag in out.items()}


def birth_death_setting(
    value: int | None, observations: Iterable[FamilyObservation], cells: Iterable[int]
) -> int:
    """Birth/death proposals per iteration: ``value``, or by default ``max(20, ceil(2 sd))``
    with ``sd`` the largest cell-count sd times the square root of the largest table's
    ``cells`` (10 when no release has an additive noise sd).

    Raises
    ------
    ValueError
        ``value`` is not an integer >= 1.
    """
    if value is None:
        sds = [o.count_sd for o in observations if o.count_sd is not None]
        largest = max(cells)
        sd = max(sds) * math.sqrt(largest) if sds else 10.0
        value = max(20, math.ceil(2 * sd))
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"birth_death_moves must be an integer >= 1, got {value!r}")
    return int(value)
