"""The multivariate normal log-density through a LAPACK Cholesky factor, with its exact gradient.

.. math:: \\log \\mathcal N(y; μ, Σ) = -\\tfrac12 \\lVert L^{-1}(y-μ)\\rVert^2
          - \\sum_i \\log L_{ii} - \\tfrac M2 \\log 2π, \\qquad Σ = L L^\\top.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pymc_rdp.distributions._numba_fallback import register_object_mode

__all__ = ["mvnormal_logp_chol"]


def mvnormal_logp_chol(y: Any, mean: Any, cov: Any, analytic_gradient: bool = True) -> Any:
    """Log-density of ``N(mean, cov)`` at ``y`` through a Cholesky factor ``cov = L Lᵀ``.

    .. math:: \\log p(y) = -\\tfrac12 \\lVert L^{-1}(y-μ)\\rVert^2 - \\sum_i \\log L_{ii}
              - \\tfrac M2 \\log 2π.

    With ``analytic_gradient`` (default) the density is one Op (LAPACK ``potrf``) whose gradient
    is the closed form (Petersen & Pedersen, "The Matrix Cookbook", eqs. 57 and 61)

    .. math:: \\partial_μ = Σ^{-1} r, \\quad \\partial_y = -Σ^{-1} r, \\quad
              \\partial_Σ = \\tfrac12 (Σ^{-1} r r^\\top Σ^{-1} - Σ^{-1}), \\quad r = y - μ,

    with ``Σ⁻¹`` from ``potri``: about three times cheaper than differentiating PyTensor's
    Cholesky and triangular solves for the 752 cells of alarm. ``∂_Σ`` is the symmetric
    gradient, exact for covariances that are symmetric by construction (as here). Otherwise the
    density is built from PyTensor's ``cholesky`` and ``solve_triangular``.

    A covariance that is not numerically positive definite gives ``-inf`` instead of an
    exception (and a zero gradient), so that a sampler rejects the point.
    """
    import pytensor.tensor as pt

    y = pt.as_tensor(y, dtype="float64")
    mean = pt.as_tensor(mean, dtype="float64")
    cov = pt.as_tensor(cov, dtype="float64")
    if analytic_gradient:
        return _mvnormal_ops()[0]()(y, mean, cov)
    from pytensor.tensor.linalg import cholesky, solve_triangular

    resid = y - mean
    chol = cholesky(cov, lower=True, on_error="nan")
    z = solve_triangular(chol, resid, lower=True)
    m = resid.shape[-1]
    logp = (
        -0.5 * pt.sum(z**2)
        - pt.sum(pt.log(pt.diagonal(chol)))
        - 0.5 * pt.cast(m, "float64") * np.log(2.0 * np.pi)
    )
    return pt.switch(pt.isnan(logp), -np.inf, logp)


class _CholeskyCache:
    """The last factorisation, shared by the density and its gradient at the same point."""

    def __init__(self) -> None:
        self.cov: np.ndarray | None = None
        self.chol: np.ndarray | None = None
        self.ok = False

    def factor(self, cov: np.ndarray) -> tuple[np.ndarray | None, bool]:
        from scipy.linalg import lapack

        if self.cov is not None and self.cov.shape == cov.shape and np.array_equal(self.cov, cov):
            return self.chol, self.ok
        chol, info = lapack.dpotrf(cov, lower=1, clean=1)
        self.cov = np.array(cov, copy=True)
        self.ok = info == 0 and bool(np.all(np.isfinite(chol)))
        self.chol = chol if self.ok else None
        return self.chol, self.ok


_CHOL_CACHE = _CholeskyCache()


def _mvnormal_ops() -> tuple[type, type]:
    global _MVN_OPS
    if _MVN_OPS is not None:
        return _MVN_OPS
    import pytensor.tensor as pt
    from pytensor.graph.basic import Apply
    from pytensor.graph.op import Op
    from scipy.linalg import lapack, solve_triangular

    log2pi = float(np.log(2.0 * np.pi))

    class MvNormalLogp(Op):
        """``(y, mean, cov) -> log N(y; mean, cov)`` through LAPACK's Cholesky."""

        __props__ = ()

        def make_node(self, y: Any, mean: Any, cov: Any) -> Any:
            ins = [pt.as_tensor(x, dtype="float64") for x in (y, mean, cov)]
            return Apply(self, ins, [pt.scalar(dtype="float64")])

        def perform(self, node: Any, inputs: Any, outputs: Any) -> None:
            y, mean, cov = inputs
            chol, ok = _CHOL_CACHE.factor(cov)
            if not ok:
                outputs[0][0] = np.array(-np.inf)
                return
            z = solve_triangular(chol, y - mean, lower=True, check_finite=False)
            val = -0.5 * z @ z - np.sum(np.log(np.diagonal(chol))) - 0.5 * len(y) * log2pi
            outputs[0][0] = np.array(val, dtype=np.float64)

        def infer_shape(self, node: Any, shapes: Any) -> list:
            return [()]

        def pullback(self, inputs: Any, outputs: Any, cotangents: Any) -> list:
            (g,) = cotangents
            g_y, g_mean, g_cov = MvNormalLogpGrad()(*inputs)
            return [g * g_y, g * g_mean, g * g_cov]

    class MvNormalLogpGrad(Op):
        """The closed-form gradient of :class:`MvNormalLogp` in ``(y, mean, cov)``."""

        __props__ = ()

        def make_node(self, y: Any, mean: Any, cov: Any) -> Any:
            ins = [pt.as_tensor(x, dtype="float64") for x in (y, mean, cov)]
            outs = [ins[0].type(), ins[1].type(), ins[2].type()]
            return Apply(self, ins, outs)

        def perform(self, node: Any, inputs: Any, outputs: Any) -> None:
            y, mean, cov = inputs
            chol, ok = _CHOL_CACHE.factor(cov)
            if not ok:
                outputs[0][0] = np.zeros_like(y)
                outputs[1][0] = np.zeros_like(mean)
                outputs[2][0] = np.zeros_like(cov)
                return
            inv, _ = lapack.dpotri(chol, lower=1)
            inv = np.tril(inv) + np.tril(inv, -1).T
            a = inv @ (y - mean)
            outputs[0][0] = -a
            outputs[1][0] = a.copy()
            outputs[2][0] = 0.5 * (np.outer(a, a) - inv)

        def infer_shape(self, node: Any, shapes: Any) -> list:
            return list(shapes)

    _MVN_OPS = (MvNormalLogp, MvNormalLogpGrad)
    register_object_mode(_MVN_OPS)
    return _MVN_OPS


_MVN_OPS: tuple[type, type] | None = None
