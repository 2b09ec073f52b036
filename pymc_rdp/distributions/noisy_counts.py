"""``NoisyCounts``: a privatized count table observed through its noise-aware likelihood.

The analyst's side of the noisy-sufficient-statistics path. The latent true counts
s ~ Multinomial(n, p) (or Poissonised cells when the total is unknown) are marginalised out of
y = s + w, w the mechanism's noise, so that NUTS samples p (and n) directly. The likelihood
modes are described in :mod:`pymc_rdp.distributions.likelihoods`; ``mode="auto"`` picks:

* ``"exact"`` when the total is known and the number of count vectors per row,
  C(n+K−1, K−1), is at most ``max_states`` (Laplace noise only; Gaussian noise defaults to the
  multivariate normal below);
* for Gaussian noise, ``"convolution"``: y ~ MvNormal(n p, n(diag p − p pᵀ) + σ² I)
  (Bernstein & Sheldon 2018) for a known total and an uncensored release, independent normal
  cells otherwise;
* for Laplace noise, ``"convolution"`` (independent cells, closed-form normal–Laplace) when the
  total is unknown or the largest count variance n/4 is at most 2% of the noise variance 2b²,
  and ``"mixture"`` otherwise: Bernstein & Sheldon's scale mixture w_k | ω_k ~ N(0, ω_k),
  ω_k ~ Exponential(mean 2b²), with ω latent in the model and y | ω ~ MvNormal(n p,
  n(diag p − p pᵀ) + diag ω).

Discrete noise (the default mechanisms for count tables,
:class:`~pymc_rdp.DiscreteGaussianMechanism` and :class:`~pymc_rdp.DiscreteLaplaceMechanism`): the
released values are integers and

* ``"exact"`` (the default when the sum has at most ``max_states`` terms per row) sums the
  multinomial pmf against the discrete noise pmf over every integer count vector: no
  approximation at all;
* beyond it the noise is replaced by a continuous surrogate with its *exact* variance (the
  discrete Gaussian's by summation, slightly below σ²; the discrete Laplace's 2r/(1 − r)²,
  r = e^{−1/t}): the multivariate normal for the discrete Gaussian, and for the discrete Laplace
  the continuous Laplace of that variance through the same per-cell or scale-mixture rule as
  above. Evaluating a continuous density at integer points is the usual lattice (continuity)
  approximation of the CLT; the error against the exact integer sum is measured in
  ``tests/test_distributions_discrete_noise.py``.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions.distribution import Distribution, _support_point
from pymc.distributions.shape_utils import implicit_size_from_params, rv_size_is_none
from pymc.logprob.abstract import _logprob
from pymc.pytensorf import normalize_rng_param
from pytensor.graph.basic import Constant, Variable
from pytensor.tensor.random.utils import normalize_size_param

from pymc_rdp.curation.release import Release, check_sensitivity
from pymc_rdp.distributions import likelihoods as lik
from pymc_rdp.distributions.ledger import PrivateRandomVariable
from pymc_rdp.privacy.mechanisms import (
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    Mechanism,
)
from pymc_rdp.privacy.mechanisms.discrete_gaussian import discrete_gaussian_variance
from pymc_rdp.privacy.mechanisms.discrete_laplace import discrete_laplace_variance
from pymc_rdp.privacy.neighbours import check_neighbours

__all__ = ["MODES", "NoisyCounts", "NoisyCountsRV"]

#: Likelihood modes accepted by :class:`NoisyCounts`.
MODES = ("auto", "exact", "convolution", "mixture")
#: Default largest number of count vectors per row for the exact sum.
MAX_STATES = 10_000


class NoisyCountsRV(PrivateRandomVariable):
    """The Op of a :class:`NoisyCounts` node: y = s + w with s latent counts, w the noise.

    Static attributes (part of equality): ``noise`` ("laplace"/"gaussian", the noise *given* the
    Op's scale input — "gaussian" with per-cell variances for the scale mixture — or
    "discrete_laplace"/"discrete_gaussian" for the exact integer sum), ``likelihood``
    ("exact", "convolution", "mvnormal"), ``poissonised``, ``clamped``, ``rounded``,
    ``exact_n`` (the known totals, for the exact sum) and the privacy ``record``.
    """

    extended_signature = "[rng],[size],(),(k),(k)->[rng],(k)"
    _print_name = ("NoisyCounts", "\\operatorname{NoisyCounts}")

    def __init__(
        self,
        *args: Any,
        noise: str = "laplace",
        likelihood: str = "convolution",
        poissonised: bool = False,
        clamped: bool = False,
        rounded: bool = False,
        exact_n: tuple | None = None,
        **kwargs: Any,
    ) -> None:
        self.noise = noise
        self.likelihood = likelihood
        self.poissonised = poissonised
        self.clamped = clamped
        self.rounded = rounded
        self.exact_n = exact_n
        super().__init__(*args, **kwargs)

    def _static(self) -> tuple:
        return (
            self.record,
            self.noise,
            self.likelihood,
            self.poissonised,
            self.clamped,
            self.rounded,
            self.exact_n,
        )

    def _meta(self) -> dict[str, Any]:
        return {
            "noise": self.noise,
            "likelihood": self.likelihood,
            "poissonised": self.poissonised,
            "clamped": self.clamped,
            "rounded": self.rounded,
            "exact_n": self.exact_n,
            "record": self.record,
        }

    def rebuild_rv(self, *args: Any, **kwargs: Any) -> Any:
        return self.rv_op(*args, **self._meta(), **kwargs)

    @classmethod
    def rv_op(
        cls,
        n: Any,
        p: Any,
        scale: Any,
        *,
        noise: str,
        likelihood: str,
        poissonised: bool,
        clamped: bool,
        rounded: bool,
        exact_n: tuple | None,
        record: str,
        size: Any = None,
        rng: Any = None,
    ) -> Any:
        n = pt.as_tensor(n, dtype="float64" if poissonised else "int64")
        p = pt.as_tensor(p, dtype="float64")
        scale = pt.as_tensor(scale, dtype="float64")
        rng = normalize_rng_param(rng)
        size = normalize_size_param(size)
        if rv_size_is_none(size):
            size = implicit_size_from_params(n, p, scale, ndims_params=cls.ndims_params)
        k = p.shape[-1]
        full = pt.concatenate([size, pt.atleast_1d(k).astype("int64")])
        if poissonised:
            rate = (n[..., None] * p) + pt.zeros(full, dtype="float64")
            rng1, counts = pt.random.poisson(rate, rng=rng, return_next_rng=True)
        else:
            rng1, counts = pt.random.multinomial(n, p, size=size, rng=rng, return_next_rng=True)
        if noise == "laplace":
            rng2, w = pt.random.laplace(0.0, scale, size=full, rng=rng1, return_next_rng=True)
        elif noise == "discrete_laplace":
            # the difference of two geometric variables on {1, 2, ...} with success 1 − e^{−1/t}
            q = -pt.expm1(-1.0 / scale) + pt.zeros(full, dtype="float64")
            rng_a, g1 = pt.random.geometric(q, rng=rng1, return_next_rng=True)
            rng2, g2 = pt.random.geometric(q, rng=rng_a, return_next_rng=True)
            w = pt.cast(g1 - g2, "float64")
        elif noise == "discrete_gaussian":
            # simulation only (never a release): a rounded normal stands in for N_Z(0, σ²)
            rng2, w = pt.random.normal(0.0, scale, size=full, rng=rng1, return_next_rng=True)
            w = pt.round(w)
        else:
            rng2, w = pt.random.normal(0.0, scale, size=full, rng=rng1, return_next_rng=True)
        y = pt.cast(counts, "float64") + w
        if rounded:
            y = pt.round(y)
        if clamped:
            y = pt.maximum(y, 0.0)
        return cls(
            inputs=[rng, size, n, p, scale],
            outputs=[rng2, y],
            noise=noise,
            likelihood=likelihood,
            poissonised=poissonised,
            clamped=clamped,
            rounded=rounded,
            exact_n=exact_n,
            record=record,
        )(rng, size, n, p, scale)


@_logprob.register(NoisyCountsRV)
def _noisy_counts_logprob(op: NoisyCountsRV, values: Any, *inputs: Any, **kwargs: Any) -> Any:
    [value] = values
    _rng, _size, n, p, scale = inputs
    if op.likelihood == "exact":
        shape, flat = op.exact_n
        n_values = np.asarray(flat, dtype=np.int64).reshape(shape)
        return lik.exact_logp(
            value,
            n_values,
            p,
            op.noise,
            scale,
            clamped=op.clamped,
            rounded=op.rounded,
            k=value.type.shape[-1],
        )
    if op.likelihood == "mvnormal":
        return lik.mvnormal_logp(value, n, p, pt.sqr(scale))
    return lik.convolution_logp(
        value,
        n,
        p,
        op.noise,
        scale,
        poissonised=op.poissonised,
        clamped=op.clamped,
        rounded=op.rounded,
    )


@_support_point.register(NoisyCountsRV)
def _noisy_counts_support_point(op: NoisyCountsRV, rv: Any, *inputs: Any) -> Any:
    _rng, _size, n, p, _scale = inputs
    mean = pt.cast(n, "float64")[..., None] * p
    return pt.broadcast_to(mean, rv.shape)


# ---------------------------------------------------------------------------------------------
# argument checks
# ---------------------------------------------------------------------------------------------


def _is_symbolic(x: Any) -> bool:
    return isinstance(x, Variable) and not isinstance(x, Constant)


def _check_n(n: Any) -> tuple[Any, np.ndarray | None]:
    """(n as given or as int64 array, the concrete totals or None when n is a model variable)."""
    if _is_symbolic(n):
        if n.type.dtype.startswith(("int", "uint")):
            raise TypeError(
                "n as a model variable is read as the expected total μ of Poissonised counts and "
                "must be continuous (e.g. pm.Gamma or pm.LogNormal), got an integer variable"
            )
        return pt.cast(n, "float64"), None
    if isinstance(n, Constant):
        n = n.data
    if isinstance(n, (bool, np.bool_)) or isinstance(n, (str, bytes)) or n is None:
        raise TypeError(
            f"n must be a whole number, an array of them or a model variable, got {n!r}"
        )
    try:
        arr = np.asarray(n, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"n must be a whole number or an array of them, got {n!r}") from exc
    if np.isnan(arr).any() or not np.isfinite(arr).all():
        raise ValueError("n must be finite (no NaN)")
    if (arr < 0).any() or (arr != np.round(arr)).any():
        raise ValueError(f"n must hold non-negative whole numbers, got {n!r}")
    if arr.ndim > 1:
        raise ValueError(f"n must be a scalar or have shape (rows,), got shape {arr.shape}")
    ints = arr.astype(np.int64)
    return ints, ints


def _check_p(p: Any) -> tuple[Any, int | None, tuple | None]:
    """(p as a float64 tensor, K if known, batch shape if known)."""
    if _is_symbolic(p):
        if p.type.ndim < 1:
            raise ValueError("p must have a category axis (shape (K,) or (rows, K))")
        if not p.type.dtype.startswith("float"):
            raise TypeError(f"p must be a float tensor, got dtype {p.type.dtype}")
        shp = p.type.shape
        batch = tuple(shp[:-1]) if all(s is not None for s in shp[:-1]) else None
        return pt.cast(p, "float64"), shp[-1], batch
    if isinstance(p, Constant):
        p = p.data
    if isinstance(p, (str, bytes)) or p is None:
        raise TypeError(f"p must be an array of probabilities, got {p!r}")
    try:
        arr = np.asarray(p, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError("p must be an array of probabilities") from exc
    if arr.ndim not in (1, 2):
        raise ValueError(f"p must have shape (K,) or (rows, K), got {arr.shape}")
    if np.isnan(arr).any():
        raise ValueError("p contains NaN")
    if (arr < 0).any() or not np.allclose(arr.sum(axis=-1), 1.0, rtol=0, atol=1e-8):
        raise ValueError("p must lie on the probability simplex (non-negative, rows summing to 1)")
    return pt.constant(arr), arr.shape[-1], arr.shape[:-1]


def _check_values(values: Any, clamped: bool, rounded: bool, from_release: bool) -> np.ndarray:
    if isinstance(values, (str, bytes)):
        raise TypeError("observed must be an array of released values")
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError("observed must be an array of released values") from exc
    if arr.ndim not in (1, 2) or arr.size == 0:
        raise ValueError(f"observed must have shape (K,) or (rows, K), got {arr.shape}")
    if np.isnan(arr).any():
        raise ValueError("observed contains NaN")
    if not np.isfinite(arr).all():
        raise ValueError("observed must be finite")
    if clamped and (arr < 0).any():
        raise ValueError("observed has negative values but the release is marked clamped at zero")
    if rounded and (arr != np.round(arr)).any():
        raise ValueError("observed has non-integer values but the release is marked rounded")
    if (
        not from_release
        and arr.min() >= 0
        and arr.max() <= 1
        and (arr != np.round(arr)).any()
        and np.allclose(arr.sum(axis=-1), 1.0, atol=1e-6)
    ):
        raise ValueError(
            "observed looks normalised (proportions summing to 1): a normalised or projected "
            "release is no longer the mechanism's output and cannot be modelled; use the raw "
            "noisy counts"
        )
    return arr


def _noise_of(mechanism: Any) -> tuple[str, float]:
    if isinstance(mechanism, LaplaceMechanism):
        return "laplace", float(mechanism.scale)
    if isinstance(mechanism, GaussianMechanism):
        return "gaussian", float(mechanism.sigma)
    if isinstance(mechanism, DiscreteLaplaceMechanism):
        return "discrete_laplace", float(mechanism.scale)
    if isinstance(mechanism, DiscreteGaussianMechanism):
        return "discrete_gaussian", float(mechanism.sigma)
    if isinstance(mechanism, Mechanism):
        raise TypeError(
            "mechanism must be a DiscreteGaussianMechanism, DiscreteLaplaceMechanism, "
            "GaussianMechanism or LaplaceMechanism (additive noise on counts), "
            f"got {type(mechanism).__name__}"
        )
    raise TypeError(f"mechanism must be a Mechanism, got {type(mechanism).__name__}")


def resolve_mode(
    mode: str,
    noise: str,
    n_values: np.ndarray | None,
    k: int | None,
    scale: float,
    *,
    censored: bool,
    max_states: int,
    can_add_latent: bool,
) -> tuple[str, str]:
    """(user-facing mode, likelihood kind of the Op) for the arguments of a node."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    known = n_values is not None
    n_max = int(np.max(n_values)) if known and np.size(n_values) else 0
    states = lik.number_of_compositions(n_max, k) if known and k else None
    if mode == "exact":
        if not known:
            raise ValueError("mode='exact' needs a known total n (whole numbers), not a variable")
        if k is None:
            raise ValueError("mode='exact' needs the number of cells K to be known from p")
        return "exact", "exact"
    if noise in DISCRETE:
        return _resolve_discrete(
            mode, noise, n_values, k, scale, states, max_states, censored, can_add_latent
        )
    if mode == "mixture":
        if noise != "laplace":
            raise ValueError("mode='mixture' is the scale mixture of Laplace noise")
        if not can_add_latent:
            raise ValueError("mode='mixture' adds latent variables: use it inside a pm.Model")
        return "mixture", "mvnormal" if known and not censored else "convolution"
    if mode == "convolution":
        if noise == "gaussian" and known and not censored:
            return "convolution", "mvnormal"
        return "convolution", "convolution"
    # auto
    if noise == "gaussian":
        return resolve_mode(
            "convolution",
            noise,
            n_values,
            k,
            scale,
            censored=censored,
            max_states=max_states,
            can_add_latent=can_add_latent,
        )
    if states is not None and states <= max_states:
        return "exact", "exact"
    # Independent cells are accurate (posterior TV ≲ 1% from exact) when the largest count
    # variance n/4 is at most 2% of the noise variance 2b²; otherwise the scale mixture.
    if not known or n_max / 4.0 <= 0.02 * 2.0 * scale**2 or not can_add_latent:
        return "convolution", "convolution"
    return "mixture", "mvnormal" if not censored else "convolution"


#: Noise kinds of the discrete mechanisms (integer noise on integer counts).
DISCRETE = ("discrete_gaussian", "discrete_laplace")


def _resolve_discrete(
    mode: str,
    noise: str,
    n_values: np.ndarray | None,
    k: int | None,
    scale: float,
    states: int | None,
    max_states: int,
    censored: bool,
    can_add_latent: bool,
) -> tuple[str, str]:
    """(user mode, likelihood kind) for discrete noise.

    ``"exact"``: the integer convolution Σ_s Multinomial(s) Π_k q(y_k − s_k) with the discrete
    pmf q (the default when it has at most ``max_states`` terms per row). Otherwise a Gaussian
    surrogate of the noise with its exact variance (:meth:`variance`): for the discrete Gaussian
    the multivariate normal (``"convolution"``; independent cells when the total is unknown);
    for the discrete Laplace the continuous Laplace of the same variance, either per cell
    (normal–Laplace, ``"convolution"``) or as the exponential scale mixture of normals
    (``"mixture"``), by the rule of the continuous Laplace.
    """
    known = n_values is not None
    if censored:
        raise ValueError(
            "clamped or rounded releases are not supported with the discrete mechanisms (their "
            "output is already integer; release unclamped counts)"
        )
    if mode == "exact":
        if not known:
            raise ValueError("mode='exact' needs a known total n (whole numbers), not a variable")
        if states is None:
            raise ValueError("mode='exact' needs the number of cells K to be known from p")
        return "exact", "exact"
    if mode == "auto" and states is not None and states <= max_states:
        return "exact", "exact"
    if noise == "discrete_gaussian":
        if mode == "mixture":
            raise ValueError("mode='mixture' is the scale mixture of (discrete) Laplace noise")
        return "convolution", "mvnormal" if known else "convolution"
    if mode == "mixture":
        if not can_add_latent:
            raise ValueError("mode='mixture' adds latent variables: use it inside a pm.Model")
        return "mixture", "mvnormal" if known else "convolution"
    if mode == "convolution":
        return "convolution", "convolution"
    # auto beyond the exact sum: the continuous Laplace rule, on the surrogate's scale
    return resolve_mode(
        "auto",
        "laplace",
        n_values,
        k,
        surrogate_scale(noise, scale),
        censored=False,
        max_states=-1,
        can_add_latent=can_add_latent,
    )


def noise_variance(noise: str, scale: float) -> float:
    """The variance of one cell's noise: σ², 2b², or the discrete laws' exact variances."""
    if noise == "gaussian":
        return scale**2
    if noise == "laplace":
        return 2.0 * scale**2
    if noise == "discrete_gaussian":
        return discrete_gaussian_variance(scale)
    if noise == "discrete_laplace":
        return discrete_laplace_variance(scale)
    raise ValueError(f"unknown noise {noise!r}")


def surrogate_scale(noise: str, scale: float) -> float:
    """The scale of the continuous surrogate with the same variance (σ or b)."""
    var = noise_variance(noise, scale)
    return math.sqrt(var / 2.0) if noise in ("laplace", "discrete_laplace") else math.sqrt(var)


def _batch_shape(*shapes: tuple | None) -> tuple | None:
    known = [s for s in shapes if s is not None]
    try:
        return tuple(np.broadcast_shapes(*known)) if known else None
    except ValueError:
        return None


# ---------------------------------------------------------------------------------------------
# the distribution
# ---------------------------------------------------------------------------------------------


class NoisyCounts(Distribution):
    r"""A released noisy count table, with the true counts marginalised out.

    .. math::

        s \sim \operatorname{Multinomial}(n, p), \qquad y = s + w,
        \qquad w_k \overset{iid}{\sim} \text{Laplace}(0, b) \text{ or } N(0, \sigma^2)

    Parameters
    ----------
    name : str
    n : int, array of int (rows,) or a model variable
        The total count of each row when known. A (continuous, positive) model variable is read
        as the expected total μ of Poissonised counts, s_k ~ Poisson(μ p_k) independently.
    p : array_like or tensor, shape (K,) or (rows, K)
        Cell probabilities (usually a ``pm.Dirichlet``).
    release : Release, optional
        The published release: supplies the observed values, the mechanism, the neighbouring
        relation, the tag and the censoring flags. Never re-noised.
    mechanism : GaussianMechanism or LaplaceMechanism, optional
        With ``observed=`` for values released elsewhere (required then), or alone for a node
        that only simulates releases.
    observed : array_like, optional
        Released values, shape (K,) or (rows, K); not together with ``release``.
    mode : {"auto", "exact", "convolution", "mixture"}
        The likelihood (see the module docstring and the user guide for the error of each).
    neighbours : {"replace-one", "add-remove"}, optional
        Relation the mechanism was calibrated for (default: the release's, else replace-one).
    clamped, rounded : bool, optional
        Censoring of values given through ``observed`` (a release carries its own flags).
    tag : str, optional
        Label of the release (default: the release's tag, else the node's name).
    max_states : int
        Largest number of count vectors per row for which ``mode="auto"`` uses the exact sum.
    **kwargs
        Passed to :class:`pymc.Distribution` (``dims``, ``shape``, ...).

    Notes
    -----
    Sampling the model is post-processing of the release and never charges an accountant.
    ``mode="mixture"`` adds a latent ``f"{name}_omega"`` (the per-cell mixing variances).
    """

    rv_type = NoisyCountsRV
    rv_op = NoisyCountsRV.rv_op

    def __new__(
        cls,
        name: str,
        n: Any,
        p: Any,
        release: Release | None = None,
        *,
        mechanism: Mechanism | None = None,
        observed: Any = None,
        mode: str = "auto",
        neighbours: str | None = None,
        clamped: bool | None = None,
        rounded: bool | None = None,
        tag: str | None = None,
        max_states: int = MAX_STATES,
        **kwargs: Any,
    ) -> Any:
        entry: dict[str, Any] = {}
        if release is not None:
            if not isinstance(release, Release):
                raise TypeError(f"release must be a Release, got {type(release).__name__}")
            if observed is not None:
                raise ValueError("give either release= or observed=, not both")
            if mechanism is not None and mechanism != release.mechanism:
                raise ValueError("mechanism differs from the release's mechanism")
            if release.normalised:
                raise ValueError(
                    "release was normalised or projected: it is no longer the mechanism's output "
                    "and cannot be modelled as noisy counts"
                )
            for flag, value, have in (
                ("clamped", clamped, release.clamped),
                ("rounded", rounded, release.rounded),
            ):
                if value is not None and bool(value) != have:
                    raise ValueError(f"{flag}={value} contradicts the release ({flag}={have})")
            if neighbours is not None and neighbours != release.neighbours:
                raise ValueError(
                    f"neighbours={neighbours!r} contradicts the release ({release.neighbours!r})"
                )
            mechanism = release.mechanism
            observed = release.values
            clamped, rounded = release.clamped, release.rounded
            neighbours = release.neighbours
            tag = release.tag if tag is None else tag
            entry = release.entry
        elif observed is not None and mechanism is None:
            raise ValueError(
                "mechanism is required with observed= (the noise must be known to model a "
                "release); or pass release="
            )
        if mechanism is None:
            raise ValueError("mechanism (or release) is required")
        clamped = bool(clamped) if clamped is not None else False
        rounded = bool(rounded) if rounded is not None else False
        obs_shape = None
        if observed is not None and not isinstance(observed, Variable):
            observed = _check_values(observed, clamped, rounded, from_release=release is not None)
            obs_shape = observed.shape
        elif isinstance(observed, Variable):
            shp = observed.type.shape
            obs_shape = shp if all(s is not None for s in shp) else None
        noise, scale = _noise_of(mechanism)
        if (
            noise in DISCRETE
            and isinstance(observed, np.ndarray)
            and (observed != np.round(observed)).any()
        ):
            raise ValueError(
                f"observed has non-integer values but {type(mechanism).__name__} releases integers"
            )
        _, n_values = _check_n(n)
        _, k, p_batch = _check_p(p)
        if release is not None and release.total is not None and n_values is not None:
            if float(n_values.sum()) != float(release.total) and (
                n_values.ndim == 1 or release.values.ndim == 1
            ):
                raise ValueError(
                    f"n (total {int(n_values.sum())}) differs from the release's public total "
                    f"{release.total:g}"
                )
        if obs_shape is not None:
            if k is not None and obs_shape[-1] != k:
                raise ValueError(
                    f"observed has {obs_shape[-1]} cells but p has {k} (the last axis of both "
                    "is the cell axis)"
                )
            n_batch = None if n_values is None else n_values.shape
            if _batch_shape(p_batch, n_batch, tuple(obs_shape[:-1])) != tuple(obs_shape[:-1]):
                raise ValueError(
                    f"observed of shape {tuple(obs_shape)} does not match p of batch shape "
                    f"{p_batch} and n of shape {n_batch}"
                )
            k = obs_shape[-1] if k is None else k
        user_mode, _ = resolve_mode(
            mode,
            noise,
            n_values,
            k,
            scale,
            censored=clamped or rounded,
            max_states=max_states,
            can_add_latent=True,
        )
        mixture_variance = None
        if user_mode == "mixture":
            model = pm.modelcontext(None)
            shape = obs_shape if obs_shape is not None else kwargs.get("shape")
            if shape is None:
                raise ValueError("mode='mixture' needs the shape of the release (observed=)")
            mixture_variance = pm.Exponential(
                f"{name}_omega",
                scale=np.float64(noise_variance(noise, scale)),
                shape=tuple(shape),
                model=model,
            )
        return super().__new__(
            cls,
            name,
            n,
            p,
            mechanism=mechanism,
            mode=user_mode,
            neighbours=neighbours or "replace-one",
            clamped=clamped,
            rounded=rounded,
            tag=tag if tag is not None else name,
            entry=entry,
            max_states=max_states,
            mixture_variance=mixture_variance,
            observed=observed,
            **kwargs,
        )

    @classmethod
    def dist(
        cls,
        n: Any,
        p: Any,
        *,
        mechanism: Mechanism,
        mode: str = "auto",
        neighbours: str = "replace-one",
        clamped: bool = False,
        rounded: bool = False,
        tag: str | None = None,
        entry: dict[str, Any] | None = None,
        max_states: int = MAX_STATES,
        mixture_variance: Any = None,
        **kwargs: Any,
    ) -> Any:
        """The unnamed distribution (for ``pm.draw``, ``pm.logp``, ``CustomDist`` compositions)."""
        check_neighbours(neighbours)
        noise, scale = _noise_of(mechanism)
        check_sensitivity(mechanism, neighbours)
        n_t, n_values = _check_n(n)
        p_t, k, _ = _check_p(p)
        censored = bool(clamped) or bool(rounded)
        if mode == "mixture" and mixture_variance is None:
            raise ValueError("mode='mixture' adds latent variables: use it inside a pm.Model")
        user_mode, kind = resolve_mode(
            mode,
            noise,
            n_values,
            k,
            scale,
            censored=censored,
            max_states=max_states,
            can_add_latent=mixture_variance is not None,
        )
        states_max = lik.number_of_compositions(int(np.max(n_values)), k) if kind == "exact" else 0
        if states_max > 5_000_000:
            raise ValueError(
                f"mode='exact' would sum over {states_max} count vectors"
                " count vectors per row; use mode='convolution' or 'mixture'"
            )
        if user_mode == "mixture":
            op_noise = "gaussian"
            scale_t = pt.sqrt(pt.cast(mixture_variance, "float64"))
        elif noise in DISCRETE and kind != "exact":
            # Gaussian surrogate (discrete Gaussian) or Laplace surrogate (discrete Laplace) of
            # the noise with its exact variance
            op_noise = "gaussian" if noise == "discrete_gaussian" else "laplace"
            sur = surrogate_scale(noise, scale)
            scale_t = pt.constant(np.full(k if k is not None else 1, sur, dtype=np.float64))
        else:
            op_noise = noise
            scale_t = pt.constant(np.full(k if k is not None else 1, scale, dtype=np.float64))
        record = json.dumps(
            {
                "kind": "noisy_counts",
                "tag": tag,
                "mechanism": mechanism.to_dict(),
                "neighbours": neighbours,
                "mode": user_mode,
                "clamped": bool(clamped),
                "rounded": bool(rounded),
                "entry": {k_: v for k_, v in (entry or {}).items() if k_ != "curve"},
            },
            allow_nan=False,
            sort_keys=True,
        )
        exact_n = None
        if kind == "exact":
            exact_n = (tuple(n_values.shape), tuple(int(x) for x in n_values.ravel()))
        n_in = n_t if n_values is None else pt.constant(n_values)
        return super().dist(
            [n_in, p_t, scale_t],
            noise=op_noise,
            likelihood=kind,
            poissonised=n_values is None,
            clamped=bool(clamped),
            rounded=bool(rounded),
            exact_n=exact_n,
            record=record,
            **kwargs,
        )
