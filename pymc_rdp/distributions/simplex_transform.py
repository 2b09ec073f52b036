"""A log-ratio transform of the simplex against a chosen reference cell, for NUTS.

PyMC maps a Dirichlet variable to unconstrained space with centred log-ratios
(``log x_k − mean_j log x_j``, the last coordinate dropped). For a large table whose cells are
known to very different precision — a few cells with thousands of records, many with a handful
or none — the mean of the logs is dominated by the poorly known cells, so every well-known
coordinate inherits their uncertainty: the coordinates are strongly correlated, a diagonal mass
matrix cannot undo it, and NUTS needs tiny steps and deep trees.

:class:`ReferenceLogRatio` uses the additive log-ratio against one reference cell ``r``
(Aitchison 1986, "The Statistical Analysis of Compositional Data", Sec. 6.2),

.. math:: z_k = \\log x_k - \\log x_r \\quad (k \\ne r), \\qquad
          x = \\operatorname{softmax}(z \\text{ with } 0 \\text{ inserted at } r),

whose Jacobian determinant is :math:`\\prod_{k=1}^{K} x_k` (Aitchison 1986, Sec. 6.3). With
the reference chosen as the cell the data pin down best (for a noisy count table: the largest
released count), the coordinates are close to independent. The transform only changes how the
sampler moves: the model's distribution is unchanged.
"""

from __future__ import annotations

from typing import Any

import pytensor.tensor as pt
from pymc.logprob.transforms import Transform

__all__ = ["ReferenceLogRatio"]


class ReferenceLogRatio(Transform):
    """Additive log-ratio of a simplex (last axis) against the cell ``reference``.

    Parameters
    ----------
    reference : int
        Index of the reference cell along the last axis (negative indices count from the end).
    """

    name = "reference_log_ratio"
    ndim_supp = 1

    def __init__(self, reference: int):
        if isinstance(reference, bool) or not isinstance(reference, int):
            raise TypeError(f"reference must be an int, got {type(reference).__name__}")
        self.reference = reference

    def _index(self, size: Any) -> Any:
        return self.reference % size if self.reference < 0 else self.reference

    def forward(self, value: Any, *inputs: Any) -> Any:
        value = pt.as_tensor(value)
        log_x = pt.log(value)
        r = self._index(value.shape[-1])
        ratio = log_x - pt.expand_dims(log_x[..., r], -1)
        return pt.concatenate([ratio[..., :r], ratio[..., r + 1 :]], axis=-1)

    def _full(self, value: Any) -> Any:
        value = pt.as_tensor(value)
        r = self._index(value.shape[-1] + 1)
        zero = pt.zeros_like(value[..., :1])
        return pt.concatenate([value[..., :r], zero, value[..., r:]], axis=-1)

    def backward(self, value: Any, *inputs: Any) -> Any:
        return pt.special.softmax(self._full(value), axis=-1)

    def log_jac_det(self, value: Any, *inputs: Any) -> Any:
        return pt.special.log_softmax(self._full(value), axis=-1).sum(axis=-1)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ReferenceLogRatio) and other.reference == self.reference

    def __hash__(self) -> int:
        return hash((type(self), self.reference))

    def __repr__(self) -> str:
        return f"ReferenceLogRatio(reference={self.reference})"
