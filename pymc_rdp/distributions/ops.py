"""PyTensor Ops for the Dirichlet mechanism: a numba-native trigamma and the calibration of r.

Both are scalar Ops wrapped in :class:`~pytensor.tensor.elemwise.Elemwise`, so they broadcast like
any other elementwise function. Their numba implementation (PyTensor's default linker) is the
compiled kernel of :mod:`pymc_rdp.privacy._kernels`, registered with
``register_funcify_and_cache_key``; their Python implementation (used by the C and Python
linkers, these Ops have no C code) calls numpy ufuncs compiled from the same kernels. PyTensor's
own ``tri_gamma`` falls back to object mode under numba. Their JAX implementations
(:mod:`pymc_rdp.distributions.jax_dispatch`) are registered when PyTensor's JAX backend loads.

Gradients
---------
``trigamma`` differentiates to ``tetragamma`` (ψ″) and that to ``pentagamma`` (ψ‴), all
numba-native. ``calibrate_r`` differentiates by the implicit-function theorem: r(θ) solves
h(r, θ) = log g(r; θ) − log ε = 0 with g(r) = (λ r² Δ₂²/2) ψ′(a), a = α + c(λ−1)Δ∞ r
(c = 3 for the "paper" scheme, c = −1 for "fixed-alpha"; Ponnoprat, TMLR 2023), hence
dr/dθ = −(∂h/∂θ)/(∂h/∂r) with, writing q = ψ″(a)/ψ′(a),

    ∂h/∂r = 2/r + c(λ−1)Δ∞ q          ∂h/∂ε = −1/ε          ∂h/∂λ = 1/λ + cΔ∞ r q
    ∂h/∂α = q                          ∂h/∂Δ₂ = 2/Δ₂         ∂h/∂Δ∞ = c(λ−1) r q.
"""

from __future__ import annotations

from hashlib import sha256
from pathlib import Path
from typing import Any, ClassVar

import pytensor.scalar as ps
import pytensor.tensor as pt
from pytensor.gradient import grad_not_implemented
from pytensor.link.numba.dispatch.basic import register_funcify_and_cache_key
from pytensor.scalar.basic import ScalarOp, UnaryScalarOp
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.variable import TensorVariable

from pymc_rdp.distributions._jax_loader import register_jax_when_loaded
from pymc_rdp.privacy import _kernels

__all__ = [
    "CalibrateR",
    "Polygamma",
    "calibrate_r",
    "pentagamma",
    "tetragamma",
    "trigamma",
]

_CACHE_VERSION = 1
# PyTensor's numba cache stores compiled graphs with the kernels inlined: key them on the kernels'
# source so that an edited kernel is never served from a stale cache.
_KERNEL_SOURCE_HASH = sha256(Path(_kernels.__file__).read_bytes()).hexdigest()


def _float64_out(*types: Any) -> tuple[Any]:
    return (ps.float64,)


class Polygamma(UnaryScalarOp):
    """ψ⁽ⁿ⁾(x) for n ∈ {1, 2, 3} on float64 (numba-native; NaN for x ≤ 0).

    Series and recurrence as in :func:`pymc_rdp.privacy._kernels.polygamma_pos` (Abramowitz & Stegun
    6.4.6, 6.4.11); the gradient of order n is order n + 1 (order 3 has none).
    """

    _KERNELS: ClassVar[dict[int, str]] = {1: "trigamma", 2: "tetragamma", 3: "pentagamma"}

    def __init__(self, n: int) -> None:
        if n not in self._KERNELS:
            raise ValueError(f"n must be 1, 2 or 3, got {n!r}")
        self.n = n
        name = self._KERNELS[n]
        super().__init__(output_types_preference=_float64_out, name=f"rdp_{name}")
        self.nfunc_spec = (f"pymc_rdp.privacy._kernels.{name}_ufunc", 1, 1)

    @property
    def kernel(self) -> Any:
        return getattr(_kernels, self._KERNELS[self.n])

    def impl(self, x: float) -> float:
        return float(self.kernel(float(x)))

    def pullback(self, inputs, outputs, output_gradients):
        (x,) = inputs
        (gz,) = output_gradients
        if self.n == 3:
            return [grad_not_implemented(self, 0, x, "the derivative of pentagamma")]
        return [gz * _SCALAR_POLYGAMMA[self.n + 1](x)]

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.n == other.n

    def __hash__(self) -> int:
        return hash((type(self), self.n))


_SCALAR_POLYGAMMA = {n: Polygamma(n) for n in (1, 2, 3)}
_ELEMWISE_POLYGAMMA = {
    n: Elemwise(op, name=op.name.removeprefix("rdp_")) for n, op in _SCALAR_POLYGAMMA.items()
}


@register_funcify_and_cache_key(Polygamma)
def _numba_funcify_polygamma(op: Polygamma, node: Any = None, **kwargs: Any):
    key = sha256(
        str(("pymc_rdp.Polygamma", op.n, _CACHE_VERSION, _KERNEL_SOURCE_HASH)).encode()
    ).hexdigest()
    return op.kernel, key


class CalibrateR(ScalarOp):
    """r > 0 solving (λ r² Δ₂²/2) ψ′(α + c(λ−1)Δ∞ r) = ε, as a scalar Op on float64.

    Inputs ``(epsilon, order, alpha, l2_sensitivity, linf_sensitivity)``; ``scheme`` "paper"
    (c = 3, α the base concentration α₀; Ponnoprat TMLR 2023, Algorithm 1) or "fixed-alpha"
    (c = −1, α the concentration used for sampling). Invalid inputs give NaN.
    """

    nin = 5
    nout = 1

    def __init__(self, scheme: str = "paper") -> None:
        if scheme not in _kernels.SCHEME_COEFFICIENTS:
            raise ValueError(f"scheme must be 'paper' or 'fixed-alpha', got {scheme!r}")
        self.scheme = scheme
        self.c = _kernels.SCHEME_COEFFICIENTS[scheme]
        tag = "paper" if scheme == "paper" else "fixed"
        super().__init__(output_types_preference=_float64_out, name=f"calibrate_r_{tag}")
        self.nfunc_spec = (f"pymc_rdp.privacy._kernels.calibrate_r_{tag}_ufunc", 5, 1)

    @property
    def kernel(self) -> Any:
        return _kernels.calibrate_r_paper if self.scheme == "paper" else _kernels.calibrate_r_fixed

    def impl(self, epsilon, order, alpha, l2, linf) -> float:
        return float(
            self.kernel(float(epsilon), float(order), float(alpha), float(l2), float(linf))
        )

    def pullback(self, inputs, outputs, output_gradients):
        eps, lam, alpha, l2, linf = inputs
        (r,) = outputs
        (gz,) = output_gradients
        c = ps.constant(self.c, dtype="float64")
        one = ps.constant(1.0, dtype="float64")
        two = ps.constant(2.0, dtype="float64")
        lam_m1 = lam - one
        a = alpha + c * lam_m1 * linf * r
        q = _SCALAR_POLYGAMMA[2](a) / _SCALAR_POLYGAMMA[1](a)
        dh_dr = two / r + c * lam_m1 * linf * q
        w = -gz / dh_dr
        return [
            w * (-one / eps),
            w * (one / lam + c * linf * r * q),
            w * q,
            w * (two / l2),
            w * (c * lam_m1 * r * q),
        ]

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.scheme == other.scheme

    def __hash__(self) -> int:
        return hash((type(self), self.scheme))


_SCALAR_CALIBRATE = {s: CalibrateR(s) for s in _kernels.SCHEME_COEFFICIENTS}
_ELEMWISE_CALIBRATE = {
    s: Elemwise(op, name=f"calibrate_r[{s}]") for s, op in _SCALAR_CALIBRATE.items()
}


@register_funcify_and_cache_key(CalibrateR)
def _numba_funcify_calibrate_r(op: CalibrateR, node: Any = None, **kwargs: Any):
    key = sha256(
        str(("pymc_rdp.CalibrateR", op.scheme, _CACHE_VERSION, _KERNEL_SOURCE_HASH)).encode()
    ).hexdigest()
    return op.kernel, key


def _as_float64(x: Any) -> TensorVariable:
    if isinstance(x, pt.variable.Variable):
        var = pt.as_tensor_variable(x)
        return var if var.dtype == "float64" else pt.cast(var, "float64")
    import numpy as np

    return pt.as_tensor_variable(np.asarray(x, dtype=np.float64))


def trigamma(x: Any) -> TensorVariable:
    """ψ′(x), elementwise, float64, numba-native, differentiable (gradient ψ″).

    ψ′(x) = Σₖ₌₀^∞ 1/(x+k)² (Abramowitz & Stegun 6.4.10); relative error below 1e-13 against
    ``scipy.special.polygamma(1, x)`` on [1e-8, 1e8]. NaN for x ≤ 0.
    """
    return _ELEMWISE_POLYGAMMA[1](_as_float64(x))


def tetragamma(x: Any) -> TensorVariable:
    """ψ″(x) = −2 Σₖ 1/(x+k)³, elementwise, float64, numba-native (gradient ψ‴)."""
    return _ELEMWISE_POLYGAMMA[2](_as_float64(x))


def pentagamma(x: Any) -> TensorVariable:
    """ψ‴(x) = 6 Σₖ 1/(x+k)⁴, elementwise, float64, numba-native (no gradient)."""
    return _ELEMWISE_POLYGAMMA[3](_as_float64(x))


def calibrate_r(
    epsilon: Any,
    order: Any,
    alpha0: Any,
    l2_sensitivity: Any,
    linf_sensitivity: Any,
    scheme: str = "paper",
) -> TensorVariable:
    """The Dirichlet mechanism's r for an RDP target ε at order λ, elementwise and differentiable.

    Solves g(r) = (λ r² Δ₂²/2) ψ′(α₀ + 3(λ−1) r Δ∞) = ε (``scheme="paper"``, Ponnoprat TMLR
    2023, Algorithm 1; sample with α = α₀ + 4(λ−1) r Δ∞) or (λ r² Δ₂²/2) ψ′(α − (λ−1) r Δ∞) = ε
    on 0 < r < α/((λ−1)Δ∞) (``scheme="fixed-alpha"``, ``alpha0`` is then the sampling α) by a
    safeguarded Newton method; g is increasing with g(0) = 0, so the root is unique. The
    gradient to all five inputs follows from the implicit-function theorem (module docstring).

    Parameters
    ----------
    epsilon, order, alpha0, l2_sensitivity, linf_sensitivity : tensor-like
        ε > 0, λ > 1, α₀ (or α) > 0, Δ₂ > 0, Δ∞ > 0; broadcast against each other; cast to
        float64. Invalid values give NaN (no symbolic checks).
    scheme : {"paper", "fixed-alpha"}

    Returns
    -------
    TensorVariable
        r, float64, of the broadcast shape.
    """
    if scheme not in _ELEMWISE_CALIBRATE:
        raise ValueError(f"scheme must be 'paper' or 'fixed-alpha', got {scheme!r}")
    args = [_as_float64(v) for v in (epsilon, order, alpha0, l2_sensitivity, linf_sensitivity)]
    return _ELEMWISE_CALIBRATE[scheme](*args)


register_jax_when_loaded()
