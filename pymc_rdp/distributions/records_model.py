"""The PyMC model of a network fitted by randomized response: the released rows' exact likelihood.

:meth:`pymc_rdp.BayesianNetwork.fit` with ``mechanism="randomized_response"`` releases one row
per record, each node's value randomised on its own through its matrix
``M_v[k, k'] = P(k' released | k true)`` (``p`` on the diagonal, ``q = (1 − p)/(K_v − 1)`` off
it). The records are independent draws from the network, so the released rows are independent
draws from

.. math:: λ(y) = \\sum_x p_θ(x) \\prod_v M_v[x_v, y_v],
          \\qquad p_θ(x) = \\prod_v θ_v[x_{\\mathrm{pa}(v)}, x_v],

and the table ``n`` of released rows over the joint states of all nodes is
``Multinomial(N, λ)``: the exact observed-data likelihood, with the true records summed out.
:func:`records_model` builds it densely over the ``∏_v K_v`` joint states: ``p_θ`` as the
product of the CPTs broadcast onto the joint axes, then ``λ`` by contracting each axis with its
``M_v`` (one ``tensordot`` per node, which cycles the axes back into their order). Each CPT row
has the ``Dirichlet(α₀)`` prior of the other models, so NUTS samples the same posterior as data
augmentation, in θ's space, where its mixing does not depend on how much information the
randomization leaves (data augmentation's does: :func:`pymc_rdp.models.network_randomized.
iterations_per_draw`). Its cost grows with the joint state space, so it is built only up to
:data:`MAX_JOINT_STATES`, and is the default sampler up to :data:`NUTS_DEFAULT_JOINT_STATES`.

Measured (``docs/performance.md``, "Randomized response at Adult's scale"): on four nodes of
Adult (age, sex, education, income: 640 joint states, N = 32,561, ε = 8), NUTS reached a
minimum bulk ESS of 1,049 and 879 over 2 × 1,000 draws in 34–38 s wall, compilation included;
data augmentation 15 and 67 over 2 × 2,000 in 58–63 s (``benchmarks/bench_randomized_records.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = [
    "MAX_JOINT_STATES",
    "NUTS_DEFAULT_JOINT_STATES",
    "joint_states",
    "records_model",
    "released_table",
]

#: the largest joint state space (∏ K_v) of a randomized-response fit modelled for NUTS
MAX_JOINT_STATES = 1_000_000
#: up to this joint state space ``sample()`` of a randomized-response fit runs NUTS by default
NUTS_DEFAULT_JOINT_STATES = 100_000


def joint_states(cards: Sequence[int]) -> int:
    """``∏ K_v``: the number of joint states of the nodes (exact, as a Python int)."""
    return int(np.prod(np.asarray(cards, dtype=object)))


def released_table(
    values: Mapping[str, np.ndarray], nodes: Sequence[str], cards: Sequence[int]
) -> np.ndarray:
    """The released rows' counts over the joint states, int64 of shape ``cards`` (C order)."""
    flat = np.zeros(len(values[nodes[0]]), dtype=np.int64)
    for v, k in zip(nodes, cards, strict=True):
        flat = flat * k + np.asarray(values[v], dtype=np.int64)
    return np.bincount(flat, minlength=joint_states(cards)).reshape(tuple(cards))


def records_model(
    nodes: Sequence[str],
    parents: Mapping[str, Sequence[str]],
    cards: Mapping[str, int],
    matrices: Mapping[str, np.ndarray],
    values: Mapping[str, np.ndarray],
    alpha0: float,
    coords: Mapping[str, Any],
) -> Any:
    """A PyMC model: ``Dirichlet(alpha0)`` CPT rows and the released rows' exact likelihood.

    Parameters
    ----------
    nodes : sequence of str
        The nodes, in the order of the joint axes.
    parents : dict
        ``node -> parents`` (the CPT's configurations enumerate them row-major, the first
        slowest).
    cards : dict
        ``node -> number of states``.
    matrices : dict
        ``node -> (K, K)`` randomization matrix ``M[k, k'] = P(k' | k)``.
    values : dict
        ``node -> released codes`` (int, one per record, the same record order for every node).
    alpha0 : float
        The Dirichlet concentration of every CPT row.
    coords : dict
        The model's coordinates (the CPTs' ``{node}_cell`` dims among them).

    Returns
    -------
    pymc.Model
        Variables ``{node}_cpt`` (flat, dim ``{node}_cell``) and the observed
        ``released_records`` (the flattened joint table of released rows).

    Raises
    ------
    ValueError
        The joint state space exceeds :data:`MAX_JOINT_STATES`.
    """
    import pymc as pm
    import pytensor.tensor as pt

    from pymc_rdp.distributions.bn_models import cell_dim, cpt_name
    from pymc_rdp.distributions.flat_cpt import flat_cpt

    ks = [int(cards[v]) for v in nodes]
    size = joint_states(ks)
    if size > MAX_JOINT_STATES:
        raise ValueError(
            f"the nodes' joint states number {size:,} (over {MAX_JOINT_STATES:,}): the exact "
            "likelihood of randomised records is modelled for NUTS only up to that size; use "
            "sampler='augmentation'"
        )
    axis = {v: i for i, v in enumerate(nodes)}
    table = released_table(values, nodes, ks)
    with pm.Model(coords=dict(coords)) as model:
        joint: Any = None
        for v in nodes:
            pars = list(parents[v])
            rows = int(np.prod([cards[u] for u in pars], dtype=np.int64))
            flat = flat_cpt(cpt_name(v), np.full((rows, ks[axis[v]]), alpha0), dims=cell_dim(v))
            family = [*pars, v]
            theta = flat.reshape(tuple(int(cards[u]) for u in family))
            order = np.argsort([axis[u] for u in family])  # the family's axes in joint order
            theta = theta.transpose(tuple(int(i) for i in order))
            present = sorted(axis[u] for u in family)
            pattern = [present.index(i) if i in present else "x" for i in range(len(nodes))]
            term = theta.dimshuffle(pattern)
            joint = term if joint is None else joint * term
        released = joint
        for v in nodes:  # contract axis 0 each time: the axes come back in their order
            m = pt.as_tensor_variable(np.asarray(matrices[v], dtype=np.float64))
            released = pt.tensordot(released, m, axes=[[0], [0]])
        released = pt.specify_shape(released, tuple(ks))
        pm.Multinomial(
            "released_records",
            n=int(table.sum()),
            p=released.reshape((-1,)),
            observed=table.reshape(-1),
        )
    return model
