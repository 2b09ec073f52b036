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
  ``tests/distributions/test_distributions_discrete_noise.py``.

Modules: :mod:`~pymc_rdp.distributions.noisy_counts_op` (the Op
:class:`~pymc_rdp.distributions.noisy_counts_op.NoisyCountsRV` and its log-density),
:mod:`~pymc_rdp.distributions.noisy_counts_modes` (the choice of the likelihood mode and the
noise variances), :mod:`~pymc_rdp.distributions.noisy_counts_checks` (argument checks) and this
one, the distribution.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions.distribution import Distribution
from pytensor.graph.basic import Variable

from pymc_rdp.curation.release import Release, check_sensitivity
from pymc_rdp.distributions import likelihoods as lik
from pymc_rdp.distributions.noisy_counts_checks import (
    _batch_shape,
    _check_n,
    _check_p,
    _check_values,
    _noise_of,
)
from pymc_rdp.distributions.noisy_counts_modes import (
    DISCRETE,
    MAX_STATES,
    MODES,
    noise_variance,
    resolve_mode,
    surrogate_scale,
)
from pymc_rdp.distributions.noisy_counts_op import NoisyCountsRV
from pymc_rdp.privacy.mechanisms import (
    Mechanism,
)
from pymc_rdp.privacy.neighbours import check_neighbours

__all__ = ["MODES", "NoisyCounts", "NoisyCountsRV"]


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
