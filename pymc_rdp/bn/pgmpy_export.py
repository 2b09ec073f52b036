"""Export of a discrete Bayesian network with given CPTs to pgmpy."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["to_pgmpy"]


def to_pgmpy(
    structure: Any,
    cpts: Mapping[str, np.ndarray],
    cards: Mapping[str, int],
    states: Mapping[str, Sequence[Hashable]],
) -> Any:
    """A pgmpy ``DiscreteBayesianNetwork`` holding ``cpts`` (node -> (configurations, states)),
    with state names."""
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.models import DiscreteBayesianNetwork

    net = DiscreteBayesianNetwork()
    net.add_nodes_from(structure.order)
    net.add_edges_from(structure.edges())
    for v in structure.order:
        pars = list(structure.parents[v])
        net.add_cpds(
            TabularCPD(
                v,
                cards[v],
                cpts[v].T,
                evidence=pars or None,
                evidence_card=[cards[p] for p in pars] or None,
                state_names={u: list(states[u]) for u in [v, *pars]},
            )
        )
    net.check_model()
    return net
