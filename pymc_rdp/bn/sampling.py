"""Forward (ancestral) sampling and the per-record log-likelihood of a discrete Bayesian network.

Both read the conditional probability tables ``cpts[v]`` of shape (parent configurations, states)
with the parent configurations in row-major order (:func:`pymc_rdp.bn.tables.config_index`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from pymc_rdp.bn.graph import NetworkStructure
from pymc_rdp.bn.tables import config_index

__all__ = ["forward_sample", "record_log_likelihood"]


def forward_sample(
    structure: NetworkStructure,
    cpts: Mapping[str, np.ndarray],
    cards: Mapping[str, int],
    n: int,
    rng: np.random.Generator,
) -> dict[str, np.ndarray]:
    """Ancestral (forward) sampling of ``n`` records: integer codes per node.

    Nodes are drawn in topological order; each record's state of ``v`` is drawn from the row of
    ``cpts[v]`` selected by its parents' states, by inverting the row's cumulative distribution
    (Koller & Friedman 2009, "Probabilistic Graphical Models", Alg. 12.1).
    """
    codes: dict[str, np.ndarray] = {}
    for v in structure.order:
        table = np.asarray(cpts[v], dtype=np.float64)
        idx = config_index(codes, structure.parents[v], cards, n)
        cum = np.cumsum(table, axis=1)[idx]
        u = rng.random(n) * cum[:, -1]
        codes[v] = np.minimum((u[:, None] >= cum).sum(axis=1), cards[v] - 1).astype(np.int64)
    return codes


def record_log_likelihood(
    structure: NetworkStructure,
    cpts: Mapping[str, np.ndarray],
    cards: Mapping[str, int],
    codes: Mapping[str, np.ndarray],
) -> np.ndarray:
    """Log-probability of every record: ``sum_v log P(x_v | x_pa(v))`` (float64, one per record)."""
    n = len(next(iter(codes.values())))
    total = np.zeros(n, dtype=np.float64)
    with np.errstate(divide="ignore"):
        for v in structure.order:
            idx = config_index(codes, structure.parents[v], cards, n)
            total += np.log(np.asarray(cpts[v], dtype=np.float64)[idx, codes[v]])
    return total
