"""The likelihood mode of :class:`~pymc_rdp.distributions.noisy_counts.NoisyCounts`.

:func:`resolve_mode` turns the user's ``mode`` (see :data:`MODES`) and the node's arguments into
the user-facing mode and the likelihood kind of the Op; the rules are stated in the docstring of
:mod:`pymc_rdp.distributions.noisy_counts`. :func:`noise_variance` and :func:`surrogate_scale`
give the variance of one cell's noise and the scale of the continuous surrogate with that variance.
"""

from __future__ import annotations

import math

import numpy as np

from pymc_rdp.distributions import likelihoods as lik
from pymc_rdp.privacy.mechanisms.discrete_gaussian import discrete_gaussian_variance
from pymc_rdp.privacy.mechanisms.discrete_laplace import discrete_laplace_variance

__all__ = ["DISCRETE", "MAX_STATES", "MODES", "noise_variance", "resolve_mode", "surrogate_scale"]

#: Likelihood modes accepted by :class:`NoisyCounts`.
MODES = ("auto", "exact", "convolution", "mixture")
#: Default largest number of count vectors per row for the exact sum.
MAX_STATES = 10_000


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
