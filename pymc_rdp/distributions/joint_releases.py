"""The joint likelihood of a network's noisy family tables as an observed private random variable.

:func:`joint_noisy_counts_logp` is the log-density of the stacked releases under the linear-query
model (see :mod:`pymc_rdp.distributions.joint_likelihood`). :class:`JointReleases` puts it in a
PyMC model as one observed node whose Op, a :class:`JointReleasesRV`, carries the privacy record
of every release it observes, so that :func:`pymc_rdp.ledger` lists them; its log-density is
registered through PyMC's ``_logprob`` dispatch.

The node has no forward draw: its law is a Gaussian (central-limit) approximation of how the
released tables vary, used to weigh the CPTs, not the mechanism that produced the releases. A
draw (``pm.draw``, prior or posterior predictive sampling) raises
:class:`~pymc_rdp.distributions.dirichlet_release.RefusedDrawError` before anything is drawn.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.distribution import Distribution
from pymc.distributions.shape_utils import implicit_size_from_params, rv_size_is_none
from pymc.logprob.abstract import _logprob
from pymc.pytensorf import normalize_rng_param
from pytensor.tensor.random.utils import normalize_size_param

from pymc_rdp._validation import check_positive
from pymc_rdp.bn.elimination import is_symbolic
from pymc_rdp.bn.graph import NetworkStructure
from pymc_rdp.distributions.dirichlet_release import RefuseForwardDraw
from pymc_rdp.distributions.joint_layout import FamilyLayout, family_layout
from pymc_rdp.distributions.joint_moments import family_moments
from pymc_rdp.distributions.likelihoods import constant_value
from pymc_rdp.distributions.mvnormal_chol import mvnormal_logp_chol
from pymc_rdp.distributions.private_nodes import PrivateRandomVariable

__all__ = ["JointReleases", "JointReleasesRV", "joint_noisy_counts_logp"]


def _noise_variance(sigma: Any, layout: FamilyLayout, name: str = "sigma") -> Any:
    """Per-cell noise variances from a scalar, per-family (K,) or per-cell (M,) σ."""
    m, k = layout.n_cells, layout.n_families
    sizes = np.diff(layout.offsets)
    if is_symbolic(sigma):
        s = pt.as_tensor(sigma, dtype="float64")
        if s.ndim == 0:
            return pt.ones((m,)) * s**2
        if s.type.shape[0] == k and k != m:
            return pt.repeat(s**2, sizes)
        return s**2
    s = check_positive(sigma, name)
    if s.ndim == 0:
        return np.full(m, float(s) ** 2)
    if s.shape == (k,):
        return np.repeat(s**2, sizes)
    if s.shape == (m,):
        return s**2
    raise ValueError(f"{name} must be a scalar, one value per family ({k}) or per cell ({m})")


def joint_noisy_counts_logp(
    y: Any,
    n: Any,
    structure: Any,
    cardinalities: Mapping[str, int],
    cpts: Mapping[str, Any],
    sigma: Any = None,
    *,
    noise_variance: Any = None,
    method: Literal["auto", "enumeration", "junction_tree"] = "auto",
    layout: FamilyLayout | None = None,
) -> Any:
    """Log-likelihood of the stacked noisy family tables under the joint (linear-query) model.

    .. math:: y \\sim \\mathcal N\\big(N\\,Qp,\\;
              N(Q\\,\\mathrm{diag}(p)\\,Q^\\top - Qpp^\\top Q^\\top)
              + \\mathrm{diag}(σ^2)\\big)

    (Räisä et al. 2023, NAPSU-MQ; Bernstein & Sheldon 2018), evaluated with a Cholesky factor.

    Parameters
    ----------
    y : array_like, shape (M,)
        The released family tables, each flattened row-major (parent configuration, child
        state), concatenated in topological order (``family_layout(...).structure.order``).
    n : float or tensor
        The number of records ``N`` (may be a latent variable).
    structure, cardinalities, cpts, method, layout
        As in :func:`family_moments`.
    sigma : float or array_like or tensor
        Gaussian noise standard deviation: a scalar, one per family (K,) or one per cell (M,).
    noise_variance : tensor, optional
        Per-cell noise variances instead of ``sigma`` (e.g. the latent ``ω`` of the Laplace
        scale mixture).

    Returns
    -------
    TensorVariable
        A scalar log-density (``-inf`` if the covariance is not numerically positive definite).
    """
    if layout is None:
        layout = family_layout(structure, cardinalities)
    if (sigma is None) == (noise_variance is None):
        raise ValueError("give exactly one of sigma and noise_variance")
    var = _noise_variance(sigma, layout) if noise_variance is None else noise_variance
    if not is_symbolic(y):
        y = np.asarray(y, dtype=np.float64)
        if y.shape != (layout.n_cells,):
            raise ValueError(f"y must have shape ({layout.n_cells},), got {y.shape}")
        if not np.isfinite(y).all():
            raise ValueError("y must be finite")
    if not is_symbolic(n):
        n = float(check_positive(n, "n"))
    mean, second = family_moments(structure, cardinalities, cpts, method=method, layout=layout)
    mean = pt.as_tensor(mean)
    second = pt.as_tensor(second)
    n_t = pt.as_tensor(n, dtype="float64")
    # a known noise variance as a constant matrix: folding PyTensor's AllocDiag at compile time
    # would build and compile its inner graph
    known_var = constant_value(var)
    noise_cov = (
        pt.diag(pt.as_tensor(var, dtype="float64"))
        if known_var is None
        else pt.constant(np.diag(known_var.astype(np.float64)))
    )
    cov = n_t * (second - pt.outer(mean, mean)) + noise_cov
    return mvnormal_logp_chol(y, n_t * mean, cov)


# --------------------------------------------------------------------------- the private node


def network_key(layout: FamilyLayout) -> tuple:
    """A hashable description of a layout's network: (order, parents, cards), all tuples."""
    st = layout.structure
    return (
        tuple(st.order),
        tuple(tuple(st.parents[v]) for v in st.order),
        tuple(layout.cards[v] for v in st.order),
    )


_LAYOUTS: dict[tuple, FamilyLayout] = {}


def layout_of(key: tuple) -> FamilyLayout:
    """The :class:`FamilyLayout` of a :func:`network_key` (built once per network)."""
    if key not in _LAYOUTS:
        order, parents, cards = key
        st = NetworkStructure(order, dict(zip(order, parents, strict=True)))
        _LAYOUTS[key] = family_layout(st, dict(zip(order, cards, strict=True)))
    return _LAYOUTS[key]


class RefuseJointDraw(RefuseForwardDraw):
    """Identity on the joint node's noise variances whose evaluation always raises."""

    def message(self) -> str:
        return (
            f"a forward draw of the joint likelihood {self.tag!r} (pm.draw, prior or posterior "
            "predictive sampling) is refused: its law is a Gaussian approximation of the "
            "released family tables, used to evaluate their likelihood, not the mechanism that "
            "released them, and a draw from it would pass for a release. Simulate records with "
            "BayesianNetwork.sample and release them with pymc_rdp.privatize. Nothing was drawn."
        )


class JointReleasesRV(PrivateRandomVariable):
    """The Op of a :class:`JointReleases` node: the stacked family tables of a network.

    Inputs: the number of records ``N`` (scalar), the per-cell noise variances (M,) and every
    CPT flattened row-major and concatenated in the network's topological order (P,). Static
    attributes (part of equality): ``network`` (:func:`network_key`), ``method``
    ("enumeration" or "junction_tree") and the privacy ``record``.
    """

    extended_signature = "[rng],[size],(),(m),(p)->[rng],(m)"
    _print_name = ("JointReleases", "\\operatorname{JointReleases}")

    def __init__(
        self, *args: Any, network: tuple = (), method: str = "enumeration", **kwargs: Any
    ) -> None:
        self.network = network
        self.method = method
        super().__init__(*args, **kwargs)

    def _static(self) -> tuple:
        return (self.record, self.network, self.method)

    def rebuild_rv(self, *args: Any, **kwargs: Any) -> Any:
        return self.rv_op(
            *args, network=self.network, method=self.method, record=self.record, **kwargs
        )

    def cpts(self, flat: Any) -> dict[str, Any]:
        """The CPTs ``node -> (configurations, states)`` from the concatenated input."""
        layout = layout_of(self.network)
        out, start = {}, 0
        for v, fam in zip(layout.structure.order, layout.families, strict=True):
            rows = int(np.prod([layout.cards[u] for u in fam[:-1]], dtype=np.int64))
            size = rows * layout.cards[v]
            out[v] = flat[start : start + size].reshape((rows, layout.cards[v]))
            start += size
        return out

    @classmethod
    def rv_op(
        cls,
        n: Any,
        noise_variance: Any,
        cpts: Any,
        *,
        network: tuple,
        method: str,
        record: str,
        size: Any = None,
        rng: Any = None,
    ) -> Any:
        n = pt.as_tensor(n, dtype="float64")
        noise_variance = pt.as_tensor(noise_variance, dtype="float64")
        cpts = pt.as_tensor(cpts, dtype="float64")
        rng = normalize_rng_param(rng)
        size = normalize_size_param(size)
        if rv_size_is_none(size):
            size = implicit_size_from_params(n, noise_variance, cpts, ndims_params=cls.ndims_params)
        full = pt.concatenate([size, pt.atleast_1d(noise_variance.shape[-1]).astype("int64")])
        # forward draws are refused (the guard raises before the normal is drawn)
        guarded = RefuseJointDraw(str(json.loads(record).get("tag")))(noise_variance)
        next_rng, y = pt.random.normal(
            0.0, pt.sqrt(guarded), size=full, rng=rng, return_next_rng=True
        )
        return cls(
            inputs=[rng, size, n, noise_variance, cpts],
            outputs=[next_rng, y],
            network=network,
            method=method,
            record=record,
        )(rng, size, n, noise_variance, cpts)


@_logprob.register(JointReleasesRV)
def _joint_releases_logprob(op: JointReleasesRV, values: Any, *inputs: Any, **kwargs: Any) -> Any:
    [value] = values
    _rng, _size, n, noise_variance, cpts = inputs
    layout = layout_of(op.network)
    return joint_noisy_counts_logp(
        value,
        n,
        layout.structure,
        layout.cards,
        op.cpts(cpts),
        noise_variance=noise_variance,
        method=op.method,
        layout=layout,
    )


class JointReleases(Distribution):
    """The stacked noisy family tables of a network, observed through the joint likelihood.

    ``JointReleases(name, n, noise_variance, cpts, layout=..., method=..., record=...,
    observed=y)`` adds the observed node whose log-density is :func:`joint_noisy_counts_logp`
    with per-cell noise variances ``noise_variance``. It is built by
    :func:`pymc_rdp.distributions.joint_likelihood.build_joint_model`, which also writes the
    ``record`` (JSON: the mechanism, tag, neighbouring relation and ledger entry of every release
    it observes).

    Parameters
    ----------
    n : float or tensor
        The number of records ``N``.
    noise_variance : array_like or tensor, shape (M,)
        Per-cell noise variances (σ², or the latent ``ω`` of the Laplace scale mixture).
    cpts : dict
        ``node -> CPT tensor (configurations, states)`` for every node of the layout.
    layout : FamilyLayout
    method : {"enumeration", "junction_tree"}
    record : str
        The privacy record (JSON).
    """

    rv_type = JointReleasesRV
    rv_op = JointReleasesRV.rv_op

    def __new__(cls, name: str, *args: Any, observed: Any = None, **kwargs: Any) -> Any:
        if observed is None:
            raise ValueError("JointReleases is the likelihood of released tables: give observed=")
        return super().__new__(cls, name, *args, observed=observed, **kwargs)

    @classmethod
    def dist(
        cls,
        n: Any,
        noise_variance: Any,
        cpts: Mapping[str, Any],
        *,
        layout: FamilyLayout,
        method: Literal["enumeration", "junction_tree"],
        record: str,
        **kwargs: Any,
    ) -> Any:
        """The unnamed distribution (its forward draw is refused)."""
        if method not in ("enumeration", "junction_tree"):
            raise ValueError(f"method must be 'enumeration' or 'junction_tree', got {method!r}")
        key = network_key(layout)
        _LAYOUTS.setdefault(key, layout)
        flat = pt.concatenate(
            [pt.reshape(pt.as_tensor(cpts[v], dtype="float64"), (-1,)) for v in key[0]]
        )
        return super().dist(
            [n, noise_variance, flat], network=key, method=method, record=record, **kwargs
        )


def release_record(tag: str, noise: str, method: str, releases: Sequence[dict[str, Any]]) -> str:
    """The JSON privacy record of a :class:`JointReleases` node observing ``releases``."""
    return json.dumps(
        {
            "kind": "joint_releases",
            "tag": tag,
            "noise": noise,
            "method": method,
            "releases": list(releases),
        },
        allow_nan=False,
        sort_keys=True,
    )
