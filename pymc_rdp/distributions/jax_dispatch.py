"""JAX implementations of the package's PyTensor Ops, for PyTensor's JAX backend.

Imported only when JAX is (by :mod:`pymc_rdp.distributions._jax_loader`, right after the first
import of ``pytensor.link.jax.dispatch``), so that models holding these Ops compile with
``mode="JAX"``, ``pm.sample(nuts_sampler="numpyro")`` and nutpie's JAX backend. Every
implementation is also differentiable by JAX itself (nutpie's ``gradient_backend="jax"``
differentiates the JAX logp instead of PyTensor's gradient graph).

* :class:`~pymc_rdp.distributions.ops.Polygamma` (ψ′, ψ″, ψ‴): the kernel of
  :func:`pymc_rdp.privacy._kernels.polygamma_pos` written in ``jax.numpy``: the recurrence
  ψ⁽ⁿ⁾(x) = ψ⁽ⁿ⁾(x + m) + (−1)ⁿ⁺¹ n! Σₖ₌₀^{m−1} (x + k)⁻⁽ⁿ⁺¹⁾ lifts x to x + m ≥ 10 and the
  asymptotic series (Abramowitz & Stegun 6.4.11) gives ψ⁽ⁿ⁾(x + m); the same terms in the same
  order as the numba kernel, masked instead of looped. NaN for x ≤ 0, 0 at +∞.
* :class:`~pymc_rdp.distributions.ops.CalibrateR`: the numba kernel itself through
  ``jax.pure_callback`` (a safeguarded Newton iteration with data-dependent exits), with the
  implicit-function derivative of :mod:`pymc_rdp.distributions.ops` as its JAX JVP.
* ``MvNormalLogp`` / ``MvNormalLogpGrad`` (:mod:`pymc_rdp.distributions.mvnormal_chol`):
  log N(y; μ, Σ) through ``jnp.linalg.cholesky`` and a triangular solve, −∞ (and a zero
  gradient) when Σ is not numerically positive definite; the gradient is the closed form
  ∂_μ = Σ⁻¹r, ∂_y = −Σ⁻¹r, ∂_Σ = ½(Σ⁻¹rrᵀΣ⁻¹ − Σ⁻¹), r = y − μ (Petersen & Pedersen, "The Matrix
  Cookbook", eqs. 57 and 61), also used as the JAX VJP of the density.
* ``FamilyMomentsOp`` / ``FamilyMomentsGradOp`` (:mod:`pymc_rdp.distributions.joint_moments`):
  the recorded ``einsum``/``reshape`` tape replayed in ``jax.numpy``; its vector-Jacobian
  product is ``jax.vjp`` of that replay.
* :class:`~pymc_rdp.distributions.dirichlet_release.RefuseForwardDraw`: raises
  :class:`~pymc_rdp.distributions.dirichlet_release.RefusedDrawError` when traced, as under numba.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from pytensor.link.jax.dispatch import jax_funcify

from pymc_rdp.distributions.dirichlet_release import RefusedDrawError, RefuseForwardDraw
from pymc_rdp.distributions.joint_moments import _moments_ops
from pymc_rdp.distributions.mvnormal_chol import _mvnormal_ops
from pymc_rdp.distributions.ops import CalibrateR, Polygamma
from pymc_rdp.privacy import _kernels

__all__ = ["calibrate_r_jax", "family_moments_jax", "mvnormal_logp_jax", "polygamma_jax"]

_SERIES = np.asarray(_kernels._SERIES, dtype=np.float64)
_LIFT = float(_kernels._LIFT)
_MAX_STEPS = int(_LIFT) + 1  # the recurrence takes at most int(_LIFT - x) + 1 ≤ 10 steps
_LOG_2PI = math.log(2.0 * math.pi)


# ---------------------------------------------------------------------------------- polygamma


def polygamma_jax(n: int, x: Any) -> Any:
    """ψ⁽ⁿ⁾(x), n ∈ {1, 2, 3}, elementwise in ``jax.numpy`` (the numba kernel's arithmetic)."""
    if n not in (1, 2, 3):
        raise ValueError(f"n must be 1, 2 or 3, got {n!r}")
    x = jnp.asarray(x, dtype=jnp.float64)
    valid = x > 0.0
    finite = valid & jnp.isfinite(x)
    xs = jnp.where(finite, x, 1.0)
    m = jnp.where(xs < _LIFT, jnp.floor(_LIFT - xs) + 1.0, 0.0)
    t = 1.0 / (xs + m)
    t2 = t * t
    q = jnp.zeros_like(xs)
    for k in range(_SERIES.shape[1] - 1, -1, -1):
        q = q * t2 + _SERIES[n - 1, k]
    fact_nm1 = 1.0 if n < 3 else 2.0
    fact_n = {1: 1.0, 2: 2.0, 3: 6.0}[n]
    tn = {1: t, 2: t2, 3: t2 * t}[n]
    s = tn * (fact_nm1 + t * (0.5 * fact_n + t * q))
    for k in range(_MAX_STEPS - 1, -1, -1):
        y = xs + k
        if n == 1:
            term = 1.0 / (y * y)
        elif n == 2:
            term = 2.0 / (y * y * y)
        else:
            y2 = y * y
            term = 6.0 / (y2 * y2)
        s = s + jnp.where(k < m, term, 0.0)
    if n == 2:
        s = -s
    s = jnp.where(x == jnp.inf, 0.0, s)
    return jnp.where(valid, s, jnp.nan)


@jax_funcify.register(Polygamma)
def _jax_funcify_polygamma(op: Polygamma, node: Any = None, **kwargs: Any) -> Callable:
    n = op.n

    def polygamma(x: Any) -> Any:
        return polygamma_jax(n, x)

    return polygamma


# ------------------------------------------------------------------------------ calibrate_r


def _calibrate_host(c: float) -> Callable:
    def solve(*args: np.ndarray) -> np.ndarray:
        return np.asarray(_kernels.calibrate_many(*args, c), dtype=np.float64)

    return solve


def calibrate_r_jax(c: float) -> Callable:
    """The calibration ``(ε, λ, α, Δ₂, Δ∞) -> r`` for scheme coefficient ``c`` as a JAX function.

    The value is the numba kernel's (``jax.pure_callback``); the JVP is the implicit-function
    derivative dr = −(Σ ∂h/∂θᵢ dθᵢ)/(∂h/∂r) of h(r, θ) = log g(r; θ) − log ε (the formulas of
    :mod:`pymc_rdp.distributions.ops`), with ψ′ and ψ″ from :func:`polygamma_jax`.
    """
    host = _calibrate_host(float(c))

    @jax.custom_jvp
    def calibrate(eps: Any, lam: Any, alpha: Any, l2: Any, linf: Any) -> Any:
        args = [jnp.asarray(v, dtype=jnp.float64) for v in (eps, lam, alpha, l2, linf)]
        shape = jnp.broadcast_shapes(*(a.shape for a in args))
        out = jax.ShapeDtypeStruct(shape, jnp.float64)
        return jax.pure_callback(host, out, *args, vmap_method="broadcast_all")

    @calibrate.defjvp
    def calibrate_jvp(primals: Any, tangents: Any) -> Any:
        eps, lam, alpha, l2, linf = (jnp.asarray(v, dtype=jnp.float64) for v in primals)
        r = calibrate(eps, lam, alpha, l2, linf)
        a = alpha + c * (lam - 1.0) * linf * r
        q = polygamma_jax(2, a) / polygamma_jax(1, a)
        dh_dr = 2.0 / r + c * (lam - 1.0) * linf * q
        partials = (
            -1.0 / eps,
            1.0 / lam + c * linf * r * q,
            q,
            2.0 / l2,
            c * (lam - 1.0) * r * q,
        )
        dh = sum(
            p * jnp.asarray(t, dtype=jnp.float64)
            for p, t in zip(partials, tangents, strict=True)
            if not isinstance(t, jax.custom_derivatives.SymbolicZero)
        )
        return r, -dh / dh_dr

    return calibrate


@jax_funcify.register(CalibrateR)
def _jax_funcify_calibrate_r(op: CalibrateR, node: Any = None, **kwargs: Any) -> Callable:
    return calibrate_r_jax(op.c)


# ------------------------------------------------------------------------- multivariate normal


def _mvnormal_factor(y: Any, mean: Any, cov: Any) -> tuple[Any, Any, Any]:
    """(lower Cholesky factor or the identity, positive definite?, r = y − μ)."""
    chol = jnp.linalg.cholesky(cov)
    ok = jnp.all(jnp.isfinite(chol))
    chol = jnp.where(ok, chol, jnp.eye(cov.shape[-1], dtype=cov.dtype))
    return chol, ok, y - mean


def _mvnormal_value(y: Any, mean: Any, cov: Any) -> Any:
    chol, ok, resid = _mvnormal_factor(y, mean, cov)
    z = jax.scipy.linalg.solve_triangular(chol, resid, lower=True)
    m = resid.shape[-1]
    val = -0.5 * jnp.dot(z, z) - jnp.sum(jnp.log(jnp.diagonal(chol))) - 0.5 * m * _LOG_2PI
    return jnp.where(ok, val, -jnp.inf)


def _mvnormal_gradient(y: Any, mean: Any, cov: Any) -> tuple[Any, Any, Any]:
    chol, ok, resid = _mvnormal_factor(y, mean, cov)
    inv = jax.scipy.linalg.cho_solve((chol, True), jnp.eye(cov.shape[-1], dtype=cov.dtype))
    inv = 0.5 * (inv + inv.T)
    a = inv @ resid
    g_cov = 0.5 * (jnp.outer(a, a) - inv)
    zero = jnp.zeros_like
    return (
        jnp.where(ok, -a, zero(y)),
        jnp.where(ok, a, zero(mean)),
        jnp.where(ok, g_cov, zero(cov)),
    )


@jax.custom_vjp
def mvnormal_logp_jax(y: Any, mean: Any, cov: Any) -> Any:
    """log N(y; mean, cov) (−∞ off the positive-definite cone), with the closed-form VJP."""
    return _mvnormal_value(y, mean, cov)


def _mvnormal_fwd(y: Any, mean: Any, cov: Any) -> tuple[Any, Any]:
    return _mvnormal_value(y, mean, cov), (y, mean, cov)


def _mvnormal_bwd(res: Any, g: Any) -> tuple[Any, Any, Any]:
    g_y, g_mean, g_cov = _mvnormal_gradient(*res)
    return g * g_y, g * g_mean, g * g_cov


mvnormal_logp_jax.defvjp(_mvnormal_fwd, _mvnormal_bwd)

_MvNormalLogp, _MvNormalLogpGrad = _mvnormal_ops()


@jax_funcify.register(_MvNormalLogp)
def _jax_funcify_mvnormal(op: Any, node: Any = None, **kwargs: Any) -> Callable:
    def mvnormal_logp(y: Any, mean: Any, cov: Any) -> Any:
        return mvnormal_logp_jax(y, mean, cov)

    return mvnormal_logp


@jax_funcify.register(_MvNormalLogpGrad)
def _jax_funcify_mvnormal_grad(op: Any, node: Any = None, **kwargs: Any) -> Callable:
    def mvnormal_logp_grad(y: Any, mean: Any, cov: Any) -> Any:
        return _mvnormal_gradient(y, mean, cov)

    return mvnormal_logp_grad


# ---------------------------------------------------------------------------- family moments


def family_moments_jax(plan: Any) -> Callable:
    """``(cpts...) -> (Qp, Q diag(p) Qᵀ)``: ``plan``'s tape replayed in ``jax.numpy``."""
    tape = plan.tape
    steps = list(tape.steps)
    shapes = list(tape.shapes)
    constants = {k: jnp.asarray(v) for k, v in tape.constants.items()}
    pieces = list(plan.pieces)
    diag_index = np.asarray(plan.layout.diag_index)
    gather = np.asarray(plan.layout.gather)

    def moments(*cpts: Any) -> tuple[Any, Any]:
        regs: list[Any] = [None] * len(shapes)
        for i, x in enumerate(cpts):
            regs[i] = jnp.asarray(x, dtype=jnp.float64)
        for k, v in constants.items():
            regs[k] = v
        for kind, ins, out, spec in steps:
            if kind == "reshape":
                regs[out] = jnp.reshape(regs[ins[0]], shapes[out])
            else:
                regs[out] = jnp.einsum(spec, *(regs[i] for i in ins))
        flat = jnp.concatenate(
            [jnp.reshape(regs[i], (-1,)) for i in pieces] + [jnp.zeros(1, dtype=jnp.float64)]
        )
        return flat[diag_index], flat[gather]

    return moments


_FamilyMomentsOp, _FamilyMomentsGradOp = _moments_ops()


@jax_funcify.register(_FamilyMomentsOp)
def _jax_funcify_family_moments(op: Any, node: Any = None, **kwargs: Any) -> Callable:
    return family_moments_jax(op.plan)


@jax_funcify.register(_FamilyMomentsGradOp)
def _jax_funcify_family_moments_grad(op: Any, node: Any = None, **kwargs: Any) -> Callable:
    moments = family_moments_jax(op.plan)
    n_cpts = len(op.plan.input_shapes)

    def family_moments_vjp(*inputs: Any) -> tuple[Any, ...]:
        cpts, (g_mean, g_second) = inputs[:n_cpts], inputs[n_cpts:]
        _, pull = jax.vjp(moments, *cpts)
        return tuple(pull((g_mean, g_second)))

    return family_moments_vjp


# ------------------------------------------------------------------------ refused forward draw


@jax_funcify.register(RefuseForwardDraw)
def _jax_funcify_refuse(op: RefuseForwardDraw, node: Any = None, **kwargs: Any) -> Callable:
    msg = op.message()

    def refuse(x: Any) -> Any:
        raise RefusedDrawError(msg)

    return refuse
