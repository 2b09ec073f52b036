"""The faithful joint likelihood of a Bayesian network's noisy family tables.

Model
-----
Each of ``N`` records is one draw ``x`` of a discrete Bayesian network with joint distribution
``p`` (a function of the CPTs). The family table of node ``v`` counts the records in each joint
state of ``F_v = (pa(v)..., v)``; stacked over the ``K`` families the tables are linear queries
``Q s`` of the full joint count table ``s ~ Multinomial(N, p)``. Every cell receives independent
noise, ``y = Q s + w``. By the central limit theorem for ``s`` (the linear-query model of
Räisä et al. 2023, "Noise-aware statistical inference with differentially private synthetic
data" (NAPSU-MQ); Bernstein & Sheldon 2018, "Differentially private Bayesian inference for
exponential families") and independent Gaussian noise ``w ~ N(0, diag(σ²))``,

.. math:: y \\sim \\mathcal N\\big(N\\,Qp,\\;
          N\\,(Q\\,\\mathrm{diag}(p)\\,Q^\\top - Qp\\,p^\\top Q^\\top)
          + \\mathrm{diag}(\\sigma^2)\\big).

``Qp`` stacks the family marginals ``P(F_v)``; the block ``(a, b)`` of ``Q diag(p) Qᵀ`` is
``P(F_a = u, F_b = w)``, the marginal of the network over ``F_a ∪ F_b`` where ``u`` and ``w``
agree on the shared nodes and zero where they disagree. Unlike the per-family approximation of
:class:`pymc_rdp.BayesianNetwork` (one independent ``NoisyCounts`` term per family), this model
knows that a node's table and its parents' tables count the *same* records.

Marginals are computed exactly by :mod:`pymc_rdp.bn.elimination` (enumeration of the
joint for small networks, a min-fill junction tree with carried messages beyond). The log-density
uses a Cholesky factor of the covariance; no jitter is added: the noise variance ``σ² > 0`` makes
the covariance positive definite (``Q(diag p − ppᵀ)Qᵀ`` is positive semi-definite).

Releases of the discrete mechanisms (the default for count tables) enter with the exact variance
of their integer noise: the discrete Gaussian as Gaussian noise of that variance, the discrete
Laplace as the Laplace scale mixture below with ``E ω_k`` equal to it.

Laplace noise is not moment-matched (see the design notes): each cell's Laplace noise of scale
``b`` is written as the scale mixture ``w_k | ω_k ~ N(0, ω_k)``, ``ω_k ~ Exponential(mean 2b²)``
(Andrews & Mallows 1974; used for private inference by Bernstein & Sheldon 2018) with ``ω``
latent in the model, so that ``y | ω`` has the normal law above with ``diag(ω)`` in place of
``diag(σ²)``.

Parent configurations follow :mod:`pymc_rdp.bn.structure`: row-major over the parents in
the order the structure lists them (the first parent varies slowest), child state last, so a
family block is the table ``(parent configurations, child states)`` flattened row by row, exactly
as :class:`pymc_rdp.BayesianNetwork` releases it.

Modules: :mod:`~pymc_rdp.distributions.joint_layout` (where the cells sit),
:mod:`~pymc_rdp.distributions.joint_moments` (``Qp`` and ``Q diag(p) Qᵀ`` and their Ops),
:mod:`~pymc_rdp.distributions.mvnormal_chol` (the Cholesky log-density),
:mod:`~pymc_rdp.distributions.joint_releases` (the log-likelihood and the observed private node
:class:`~pymc_rdp.distributions.joint_releases.JointReleases` that :func:`pymc_rdp.ledger` lists)
and this one, the model builder.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pymc as pm

from pymc_rdp._validation import check_positive
from pymc_rdp.bn.tables import config_labels
from pymc_rdp.distributions.joint_layout import FamilyLayout, family_layout, resolve_method
from pymc_rdp.distributions.joint_moments import family_moments
from pymc_rdp.distributions.joint_releases import (
    JointReleases,
    JointReleasesRV,
    joint_noisy_counts_logp,
    release_record,
)
from pymc_rdp.distributions.mvnormal_chol import mvnormal_logp_chol

__all__ = [
    "FamilyLayout",
    "JointReleases",
    "JointReleasesRV",
    "build_joint_model",
    "family_layout",
    "family_moments",
    "joint_model_from_network",
    "joint_noisy_counts_logp",
    "mvnormal_logp_chol",
]

#: Name of the observed node of the stacked releases in a joint model.
NODE = "joint_releases"


def _release_values(release: Any) -> np.ndarray:
    return np.asarray(getattr(release, "values", release), dtype=np.float64).reshape(-1)


def _release_scale(release: Any, noise: str | None, scale: Any) -> tuple[str, float]:
    mech = getattr(release, "mechanism", None)
    if mech is not None:
        name = getattr(mech, "name", None)
        if name == "gaussian":
            return "gaussian", float(mech.sigma)
        if name == "laplace":
            return "laplace", float(mech.scale)
        if name in ("discrete_gaussian", "discrete_laplace"):
            # integer noise: its continuous surrogate with the exact variance (the discrete
            # Gaussian's by summation; the discrete Laplace's 2r/(1 − r)² as the Laplace scale
            # √(var/2), i.e. the mixing variances ω ~ Exponential(mean var))
            var = float(mech.variance())
            if name == "discrete_gaussian":
                return "gaussian", math.sqrt(var)
            return "laplace", math.sqrt(var / 2.0)
        raise TypeError(f"a release of mechanism {name!r} has no additive-noise likelihood")
    if noise not in ("gaussian", "laplace") or scale is None:
        raise ValueError("plain arrays need noise='gaussian' or 'laplace' and its scale (σ or b)")
    return noise, scale


def _release_entry(node: str, release: Any, noise: str, scale: float) -> dict[str, Any]:
    """What the ledger shows of one observed release (its curve left out, as for NoisyCounts)."""
    mech = getattr(release, "mechanism", None)
    if mech is None:  # a plain array: the noise declared by the caller
        return {"node": node, "tag": None, "mechanism": None, "noise": noise, "scale": scale}
    entry = getattr(release, "entry", None) or {}
    return {
        "node": node,
        "tag": getattr(release, "tag", None),
        "mechanism": mech.to_dict(),
        "neighbours": getattr(release, "neighbours", None),
        "clamped": bool(getattr(release, "clamped", False)),
        "rounded": bool(getattr(release, "rounded", False)),
        "entry": {k: v for k, v in entry.items() if k != "curve"},
    }


def build_joint_model(
    structure: Any,
    cardinalities: Mapping[str, int],
    releases: Mapping[str, Any],
    n: float | Literal["released"] | None = None,
    *,
    noise: Literal["gaussian", "laplace"] | None = None,
    scale: float | Mapping[str, float] | None = None,
    alpha0: float = 1.0,
    method: Literal["auto", "enumeration", "junction_tree"] = "auto",
    states: Mapping[str, Sequence[Any]] | None = None,
    n_prior_sigma: float = 1.0,
) -> Any:
    """A PyMC model of the CPTs given every family's noisy table, with the joint likelihood.

    Priors: every CPT row ``θ_v[c, :] ~ Dirichlet(alpha0)`` (variables ``f"{v}_cpt"``, dims
    ``f"{v}_parent_config"``, ``f"{v}_state"``, as in :class:`pymc_rdp.BayesianNetwork`).
    Likelihood: :func:`joint_noisy_counts_logp` of the stacked releases (the data
    ``"releases"``), observed by the private node ``"joint_releases"``
    (:class:`~pymc_rdp.distributions.joint_releases.JointReleases`), whose record lists every
    release: :func:`pymc_rdp.ledger` of the model shows them, and a forward draw of the node is
    refused.

    * Gaussian noise of standard deviation ``σ_v`` per family: the normal law with
      ``diag(σ²)``.
    * Laplace noise of scale ``b_v``: latent per-cell variances ``ω ~ Exponential(mean 2b²)``
      (variable ``"releases_omega"``) and the normal law given ``ω`` with ``diag(ω)``.

    Parameters
    ----------
    structure : dict, networkx.DiGraph, pgmpy model or NetworkStructure
    cardinalities : dict
        ``node -> number of states``.
    releases : dict
        ``node -> release`` (a :class:`pymc_rdp.distributions.Release`, whose mechanism gives the
        noise, or an array with ``noise`` and ``scale``), each of shape (configurations, states)
        or flattened row-major.
    n : float, "released" or None
        The number of records. A number: known (declared public by the curator). The
        string ``"released"``: the mean of the released family totals, a plug-in estimate (post-
        processing, no privacy cost). ``None``: a latent ``n_records ~ LogNormal(log n̂,
        n_prior_sigma)`` centred on that estimate, a continuous relaxation of the integer count
        that the family totals pin down (their mean has standard deviation about
        ``σ √(M/K²)``).
    noise, scale
        For plain-array releases: the noise family and its σ (Gaussian) or b (Laplace), a
        number or ``node -> number``.
    alpha0 : float
        Dirichlet prior concentration of every CPT row.
    method : {"auto", "enumeration", "junction_tree"}
    states : dict, optional
        ``node -> state labels`` for the coordinates (default ``0..card-1``).
    n_prior_sigma : float
        Log-scale standard deviation of the prior on a latent ``N``.

    Returns
    -------
    pymc.Model
    """
    layout = family_layout(structure, cardinalities)
    st = layout.structure
    alpha0 = float(check_positive(alpha0, "alpha0"))
    if not isinstance(releases, Mapping):
        raise TypeError(f"releases must be a dict node -> release, got {type(releases).__name__}")
    missing = [v for v in st.order if v not in releases]
    if missing:
        raise ValueError(f"releases has no table for the node(s) {missing}")
    method = resolve_method(layout, method)
    ys, kinds, scales, entries = [], [], [], []
    for v in st.order:
        vals = _release_values(releases[v])
        size = layout.family_slice(v).stop - layout.family_slice(v).start
        if vals.size != size:
            raise ValueError(f"releases[{v!r}] must have {size} cells, got {vals.size}")
        if not np.isfinite(vals).all():
            raise ValueError(f"releases[{v!r}] must be finite")
        sc = scale[v] if isinstance(scale, Mapping) else scale
        kind, s = _release_scale(releases[v], noise, sc)
        ys.append(vals)
        kinds.append(kind)
        scales.append(float(check_positive(s, "scale")))
        entries.append(_release_entry(v, releases[v], kind, scales[-1]))
    if len(set(kinds)) != 1:
        raise ValueError("all releases must carry the same kind of noise (gaussian or laplace)")
    kind = kinds[0]
    y = np.concatenate(ys)
    totals = np.array([v.sum() for v in ys])
    n_hat = max(1.0, float(totals.mean()))

    labels = states or {v: list(range(layout.cards[v])) for v in st.order}
    coords = {}
    for v in st.order:
        coords[f"{v}_parent_config"] = config_labels(st.parents[v], labels)
        coords[f"{v}_state"] = [str(s) for s in labels[v]]
    with pm.Model(coords=coords) as model:
        theta = {}
        for v in st.order:
            shape = (len(coords[f"{v}_parent_config"]), layout.cards[v])
            theta[v] = pm.Dirichlet(
                f"{v}_cpt",
                a=np.full(shape, alpha0),
                shape=shape,
                dims=(f"{v}_parent_config", f"{v}_state"),
            )
        data = pm.Data("releases", y)
        if n is None:
            n_var: Any = pm.LogNormal(
                "n_records", mu=math.log(n_hat), sigma=float(check_positive(n_prior_sigma, "n"))
            )
        elif isinstance(n, str):
            if n != "released":
                raise ValueError(f"n must be a number, 'released' or None, got {n!r}")
            n_var = n_hat
        else:
            n_var = float(check_positive(n, "n"))
        per_cell = np.repeat(np.asarray(scales), np.diff(layout.offsets))
        if kind == "gaussian":
            noise_variance: Any = per_cell**2
        else:
            noise_variance = pm.Exponential(
                "releases_omega", scale=2.0 * per_cell**2, shape=(layout.n_cells,)
            )
        JointReleases(
            NODE,
            n_var,
            noise_variance,
            theta,
            layout=layout,
            method=method,
            record=release_record(NODE, kind, method, entries),
            observed=data,
        )
    return model


def joint_model_from_network(
    network: Any,
    n: float | Literal["released"] | Literal["fitted"] | None = "fitted",
    method: Literal["auto", "enumeration", "junction_tree"] = "auto",
) -> Any:
    """The joint model of a :class:`pymc_rdp.BayesianNetwork` fitted with Gaussian/Laplace noise.

    Uses the network's releases, states, prior concentration and (``n="fitted"``) its record
    count (``N`` when the curator declared it public with ``fit(..., public_total=N)``, else the
    network's estimate from the releases). The CPT variables have the same names and dims as the
    network's own model, so ``network.cpt_draws(idata, node)`` reads draws of this model too.
    """
    if getattr(network, "mechanism", None) not in ("gaussian", "laplace"):
        raise ValueError("network must be fitted with mechanism='gaussian' or 'laplace'")
    n_use = network.n_records if n == "fitted" else n
    return build_joint_model(
        network.structure,
        network.cards,
        network.releases,
        n=n_use,
        alpha0=getattr(network, "alpha0", 1.0),
        method=method,
        states=network.states,
    )
