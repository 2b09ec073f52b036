"""The Op of :class:`~pymc_rdp.distributions.noisy_counts.NoisyCounts` and its log-density.

:class:`NoisyCountsRV` draws y = s + w (latent counts s, the mechanism's noise w) for simulation;
its registered log-density calls the likelihood named by the Op's static ``likelihood`` attribute
(:mod:`pymc_rdp.distributions.likelihoods`). The support point is the mean n p.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.distribution import _support_point
from pymc.distributions.shape_utils import implicit_size_from_params, rv_size_is_none
from pymc.logprob.abstract import _logprob
from pymc.pytensorf import normalize_rng_param
from pytensor.tensor.random.utils import normalize_size_param

from pymc_rdp.distributions import likelihoods as lik
from pymc_rdp.distributions._jax_loader import register_jax_when_loaded
from pymc_rdp.distributions.private_nodes import PrivateRandomVariable

__all__ = ["NoisyCountsRV"]


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


# the package's custom Ops compile under JAX once PyTensor's JAX backend is loaded
register_jax_when_loaded()
