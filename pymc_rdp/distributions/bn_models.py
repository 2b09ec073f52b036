"""The PyMC models of a :class:`~pymc_rdp.BayesianNetwork`: point, conjugate and noise-aware.

Built from a fitted network's releases (never from raw data, except the conjugate model of a
fit without privacy):

* :func:`point_model` — the released CPTs (Dirichlet mechanism) or the naive clip-and-normalise
  CPTs as ``pm.Data``;
* :func:`conjugate_model` — no privacy: ``Dirichlet(alpha0)`` rows observed through the exact
  family tables;
* :func:`noise_aware_model` — the per-family model: priors on the CPTs and one
  :class:`~pymc_rdp.NoisyCounts` term per released family table.

The per-family likelihood
-------------------------
For family ``v`` the model takes its table to be ``Multinomial(N, p_v)`` with

.. math:: p_v(c, k) = \\pi_v(c)\\, \\theta_v[c, k],

observed through :class:`pymc_rdp.NoisyCounts` (one term per family). The tables are built from
the same records, and the model multiplies their likelihoods as if they were independent. What
``π_v`` is decides how that approximation behaves (``fit(..., margins=...)``):

* ``"free"`` (default): ``π_v`` is a separate nuisance vector of family ``v``, so a table informs
  only its own CPT. The model samples the whole family table ``φ_v(c, k) = π_v(c) θ_v[c, k]``
  (``{v}_family``, ``Dirichlet(alpha0)`` over the cells) and keeps the CPT as the
  deterministic ``{v}_cpt``; this gives every CPT row the same ``Dirichlet(alpha0)`` prior as the
  other models, with ``π_v ~ Dirichlet(K_v alpha0)``. The information that a child's
  table carries about its parents' distribution (the same records again) is discarded; the
  posterior is calibrated, slightly conservative.
* ``"network"``: ``π_v(c) = P(pa(v) = c)``, the network's own marginal over the ancestors of
  ``v``'s parents, exact by variable elimination (Koller & Friedman 2009, Sec. 9.3). The parents'
  margin then enters once per table that contains it, which over-states the evidence when the
  noise is small compared with the counts.

Measured (``tests/models/test_bayesian_network.py::test_per_family_approximation_coverage``, slow):
network a -> b, θ from the Dirichlet(1) prior, N = 500, Gaussian releases at ε = 1 (λ = 5),
16 replicates, coverage of 80% central intervals: ``"network"`` 0.50 for the root's CPT and 0.72
for the child's; ``"free"`` 0.88 and 0.72 when the free parent weights had a ``Dirichlet(1)``
prior, 0.81 and 0.66 with the whole-table parameterisation below (binomial standard errors about
0.1 and 0.07). ``docs/calibration.md`` has the larger study on asia, sachs and child.

The names of variables and dims (``{node}_cpt`` over ``{node}_cell``, the tables'
``{node}_parent_config`` × ``{node}_state``) are defined here once.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from pymc_rdp.bn.structure import cell_labels, family_marginal
from pymc_rdp.distributions.noise_models import noise_model_of

__all__ = [
    "AUTO_MULTINOMIAL_CELLS",
    "CoordsDict",
    "base_model",
    "cell_dim",
    "cell_labels",
    "conjugate_model",
    "cpt_name",
    "noise_aware_model",
    "point_model",
    "table_dims",
]

#: largest family table (cells) that ``likelihood="auto"`` models with the multinomial
AUTO_MULTINOMIAL_CELLS = 64


class CoordsDict(dict):
    """The coordinates dict; calling it (the former method) still works, with a warning."""

    def __call__(self) -> dict[str, list[str]]:
        warnings.warn(
            "BayesianNetwork.coords is a property: use bn.coords instead of bn.coords()",
            DeprecationWarning,
            stacklevel=2,
        )
        return dict(self)


def table_dims(node: str) -> tuple[str, str]:
    """The dims of ``node``'s observed family table: (parent configuration, state)."""
    return f"{node}_parent_config", f"{node}_state"


def cpt_name(node: str) -> str:
    """The model variable of ``node``'s CPT."""
    return f"{node}_cpt"


def cell_dim(node: str) -> str:
    """The one posterior dim of ``node``'s CPT: its cells, configuration-major."""
    return f"{node}_cell"


def base_model(bn: Any) -> Any:
    """An empty model with the network's coordinates (CPT cells and table dims)."""
    import pymc as pm

    return pm.Model(coords={**bn.coords, **bn._table_coords()})


def point_model(bn: Any, cpts: Mapping[str, np.ndarray]) -> Any:
    """The released (or naive) CPTs as ``pm.Data``: nothing to infer."""
    import pymc as pm

    with base_model(bn) as model:
        for v in bn.nodes:
            pm.Data(cpt_name(v), np.asarray(cpts[v]).reshape(-1), dims=cell_dim(v))
    return model


def conjugate_model(bn: Any, tables: Mapping[str, np.ndarray]) -> Any:
    """No privacy: ``Dirichlet(alpha0)`` CPT rows observed through the exact family tables."""
    import pymc as pm

    from pymc_rdp.distributions.flat_cpt import flat_cpt

    with base_model(bn) as model:
        for v in bn.nodes:
            shape = tables[v].shape
            theta = flat_cpt(cpt_name(v), np.full(shape, bn.alpha0), dims=cell_dim(v))
            pm.Multinomial(
                f"{v}_counts",
                n=tables[v].sum(axis=1),
                p=theta.reshape(shape),
                observed=tables[v],
                dims=table_dims(v),
            )
    return model


def noise_aware_model(bn: Any, likelihood: str, margins: str) -> Any:
    """The per-family model: priors on the CPTs, one :class:`NoisyCounts` term per family.

    With ``margins="free"`` a family with parents is parameterised by its whole table
    ``φ_v ~ Dirichlet(alpha0)`` over (configuration, state) cells (variable
    ``{v}_family``), and its CPT is the deterministic
    ``θ_v[c, k] = φ_v[c, k] / Σ_k φ_v[c, k]``. By the aggregation property of the Dirichlet
    distribution the rows ``θ_v[c, :]`` are independent ``Dirichlet(alpha0)`` (the CPT prior
    of every other model here), independent of the row sums ``π_v ~ Dirichlet(K_v ·
    alpha0)``, the family's own parent weights (Frigyik, Kapila & Gupta 2010, "Introduction
    to the Dirichlet distribution", Sec. 2.3). The likelihood is linear in ``φ_v``.

    NUTS moves ``φ_v`` in log-ratios to the cell with the largest released count
    (:class:`~pymc_rdp.distributions.simplex_transform.ReferenceLogRatio`): PyMC's default
    centred
    log-ratios, the product ``π_v(c) θ_v[c, k]`` of two simplex variables and normalised
    Gamma variables all tie every coordinate to an average over many poorly known cells,
    and sampled alarm 4–25× slower (``docs/calibration.md``, sampling speed).
    """
    import pymc as pm
    import pytensor.tensor as pt

    from pymc_rdp.distributions import NoisyCounts
    from pymc_rdp.distributions.flat_cpt import flat_cpt
    from pymc_rdp.distributions.simplex_transform import ReferenceLogRatio

    with base_model(bn) as model:
        theta: dict[str, Any] = {}
        cell_p: dict[str, Any] = {}
        for v in bn.nodes:
            # an explicit static shape: dims-derived shapes are symbolic, and a batched
            # Dirichlet with a symbolic length-1 batch dimension fails to compile in numba
            configs = bn.parent_configurations(v)
            shape = (len(configs), bn.cards[v])
            cells = shape[0] * shape[1]
            if margins == "network" or not bn.structure.parents[v]:
                flat = flat_cpt(cpt_name(v), np.full(shape, bn.alpha0), dims=cell_dim(v))
                theta[v] = pt.specify_shape(flat.reshape(shape), shape)
                continue
            # the family table has the same cells as the CPT: one shared dim
            cells_dim = cell_dim(v)
            # the best-known cell (largest released count) anchors the log-ratios
            ref = int(np.argmax(bn.releases[v].values))
            phi = pm.Dirichlet(
                f"{v}_family",
                a=np.full(cells, bn.alpha0),
                shape=(cells,),
                dims=cells_dim,
                default_transform=ReferenceLogRatio(ref),
            )
            table = phi.reshape(shape)
            theta[v] = table / table.sum(axis=1, keepdims=True)
            pm.Deterministic(cpt_name(v), theta[v].reshape((-1,)), dims=cells_dim)
            cell_p[v] = phi
        total = None
        gaussian = noise_model_of(bn.family_mechanism).family == "gaussian"
        for v in bn.nodes:
            cells = int(np.prod(theta[v].type.shape))
            if v in cell_p:
                p = cell_p[v]
            else:
                pc = family_marginal(bn.structure, v, theta, bn.cards, backend="pytensor")
                p = pt.specify_shape((pc[:, None] * theta[v]).reshape((-1,)), (cells,))
            kind = likelihood
            if kind == "auto":
                small = cells <= AUTO_MULTINOMIAL_CELLS
                kind = "multinomial" if small or gaussian else "poissonised"
            if kind == "multinomial":
                n: Any = bn.n_records
            else:
                if total is None:
                    total = pm.Data("n_records", np.float64(bn.n_records))
                n = total
            NoisyCounts(f"{v}_release", n=n, p=p, release=bn.releases[v])
    return model
