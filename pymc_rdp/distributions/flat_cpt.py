"""A CPT as one flat vector: independent Dirichlet rows stored cell by cell.

ArviZ stacks every non-sample dimension of a posterior into one array (``az.summary``), and
NumPy broadcasts at most 32 dimensions, so two distinct dims per CPT break whole-network summaries
beyond 15 nodes. :func:`flat_cpt` keeps one dim per CPT: cell ``c·K + k`` holds ``θ[c, k]``
(configuration-major, as :meth:`numpy.ndarray.reshape` in C order).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["RowSimplex", "flat_cpt"]


def _rows(value: Any, rows: int) -> Any:
    return value.reshape((rows, -1))


class RowSimplex:
    """Factory of the row-wise simplex transform of a flat ``(rows · K,)`` vector.

    Each row of ``value.reshape(rows, K)`` goes through PyMC's simplex (additive log-ratio)
    transform; the log-Jacobian is the sum over rows (the rows are transformed independently).
    """

    def __new__(cls, rows: int) -> Any:
        from pymc.distributions.transforms import Transform, simplex

        class _RowSimplex(Transform):
            name = "row_simplex"

            def forward(self, value, *inputs):
                return simplex.forward(_rows(value, rows), *inputs).reshape((-1,))

            def backward(self, value, *inputs):
                return simplex.backward(_rows(value, rows), *inputs).reshape((-1,))

            def log_jac_det(self, value, *inputs):
                return simplex.log_jac_det(_rows(value, rows), *inputs).sum()

        return _RowSimplex()


def flat_cpt(name: str, alpha: np.ndarray, dims: str, **kwargs: Any) -> Any:
    """Register ``name`` ~ independent ``Dirichlet(alpha[c, :])`` rows, stored flat.

    .. math:: \\log p(\\theta) = \\sum_c \\log \\mathrm{Dir}(\\theta[c, :] \\mid \\alpha[c, :])

    Parameters
    ----------
    name : str
        Variable name in the current PyMC model.
    alpha : numpy.ndarray
        ``(rows, K)`` concentrations (all > 0).
    dims : str
        The one dim of the flat variable (length ``rows · K``).
    """
    import pymc as pm

    alpha = np.asarray(alpha, dtype=np.float64)
    if alpha.ndim != 2 or not np.all(alpha > 0):
        raise ValueError(f"alpha must be a 2-D array of positive values, got shape {alpha.shape}")
    rows, k = alpha.shape

    def _dist(a: Any, size: Any) -> Any:
        return pm.Dirichlet.dist(a=a).reshape((-1,))

    def _logp(value: Any, a: Any) -> Any:
        return pm.logp(pm.Dirichlet.dist(a=a), _rows(value, rows)).sum()

    return pm.CustomDist(
        name,
        alpha,
        dist=_dist,
        logp=_logp,
        signature="(m,k)->(n)",
        shape=(rows * k,),
        dims=dims,
        default_transform=RowSimplex(rows),
        **kwargs,
    )
