"""What each release says about its family table, in the data-augmentation kernels' terms.

:class:`~pymc_rdp.distributions.data_augmentation.DataAugmentation` scores its latent records
through the density ``η_v(y_v | s_v)`` of every family table's release given the table's counts
``s_v``. This module turns a release into a :class:`FamilyObservation` (one of the kernels'
density forms of :mod:`pymc_rdp.distributions._augmentation_kernels` and its parameters).

Mechanisms (the registry :data:`OBSERVATIONS`, keyed on ``mechanism.name``)
---------------------------------------------------------------------------
* ``"gaussian"``, ``"discrete_gaussian"``: ``log η = −Σ (y − s)² / (2σ²)`` (+ const);
* ``"laplace"``, ``"discrete_laplace"``: ``log η = −Σ |y − s| / b`` (+ const); the discrete
  mechanisms' normalisers do not depend on ``s``, so their ratios are the continuous ones;
* ``"dirichlet"`` (Ponnoprat, TMLR 2023): the released CPT rows as observations,
  ``η(θ̃ | s) = Π_c Dirichlet(θ̃_c; r s_c + α)``; a function of ``s`` whose normaliser depends on
  the row totals.
* ``"categorical_randomized_response"``, ``"randomized_response"``: not a table but one released
  value per record; observed through an extra child of the node
  (:mod:`pymc_rdp.distributions.augmentation_records`).

A new mechanism adds one entry (:func:`register_observation`): a function from (released
values, mechanism, table shape) to a :class:`FamilyObservation`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["OBSERVATIONS", "FamilyObservation", "register_observation"]

#: smallest log θ̃ used for a Dirichlet release that underflowed to 0 (log of the least subnormal)
_LOG_TINY = math.log(5e-324)


@dataclass(frozen=True)
class FamilyObservation:
    """What one release says about one family table, in the kernels' terms.

    Attributes
    ----------
    kind : int
        The density form (``KIND_GAUSSIAN``, ``KIND_LAPLACE``, ``KIND_DIRICHLET`` of
        :mod:`pymc_rdp.distributions._augmentation_kernels`).
    y : numpy.ndarray
        Released values per cell (row-major (configuration, state)), additive kinds; else zeros.
    coef : float
        ``1/(2σ²)`` (Gaussian) or ``1/b`` (Laplace).
    r : float
        Dirichlet: the counts' scale.
    logt : numpy.ndarray
        Dirichlet: log of the released probabilities per cell.
    alpha : numpy.ndarray
        Dirichlet: concentration per cell.
    count_sd : float or None
        Standard deviation of a cell count given its release (additive noise), or None when it
        depends on the counts (Dirichlet); sets the default block size.
    records : numpy.ndarray or None
        Values released record by record (randomized response), one state code per record;
        the family table itself is then unreleased (kind ``KIND_NONE``,
        :mod:`pymc_rdp.distributions.augmentation_records`).
    record_logp : numpy.ndarray or None
        With ``records``: ``log M[k, k']``, the log probability of releasing ``k'`` for a record
        in state ``k``.
    fixed : bool
        The family of a released node's extra child: its values are observed and its CPT known
        (no Bayesian-Dirichlet score).
    """

    kind: int
    y: np.ndarray
    coef: float = 0.0
    r: float = 0.0
    logt: np.ndarray | None = None
    alpha: np.ndarray | None = None
    count_sd: float | None = None
    records: np.ndarray | None = None
    record_logp: np.ndarray | None = None
    fixed: bool = False


def _param(mechanism: Any, *names: str) -> float:
    params = mechanism.params()
    for name in names:
        if name in params:
            value = float(params[name])
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"mechanism {mechanism!r}: {name} must be finite and > 0")
            return value
    raise ValueError(f"mechanism {mechanism!r} has none of the parameters {names}")


def _additive_values(values: Any, shape: tuple[int, int], what: str) -> np.ndarray:
    y = np.asarray(values, dtype=np.float64)
    if y.size != shape[0] * shape[1] or y.ndim not in (1, 2) or (y.ndim == 2 and y.shape != shape):
        raise ValueError(
            f"{what}: the released table has shape {y.shape}, but the structure gives "
            f"{shape[0]} parent configurations × {shape[1]} states"
        )
    if not np.isfinite(y).all():
        raise ValueError(f"{what}: the released values must be finite")
    return y.reshape(-1).copy()


def _gaussian(values: Any, mechanism: Any, shape: tuple[int, int], what: str) -> FamilyObservation:
    from pymc_rdp.distributions import _augmentation_kernels as k

    sigma = _param(mechanism, "sigma")
    y = _additive_values(values, shape, what)
    return FamilyObservation(k.KIND_GAUSSIAN, y, coef=0.5 / sigma**2, count_sd=sigma)


def _laplace(values: Any, mechanism: Any, shape: tuple[int, int], what: str) -> FamilyObservation:
    from pymc_rdp.distributions import _augmentation_kernels as k

    b = _param(mechanism, "scale", "t")
    y = _additive_values(values, shape, what)
    return FamilyObservation(k.KIND_LAPLACE, y, coef=1.0 / b, count_sd=math.sqrt(2.0) * b)


def _dirichlet(values: Any, mechanism: Any, shape: tuple[int, int], what: str) -> FamilyObservation:
    from pymc_rdp.distributions import _augmentation_kernels as k

    theta = np.asarray(values, dtype=np.float64)
    if theta.ndim == 1 and shape[0] == 1:
        theta = theta[None, :]
    if theta.shape != shape:
        raise ValueError(
            f"{what}: the released CPT has shape {theta.shape}, but the structure gives "
            f"{shape[0]} parent configurations × {shape[1]} states"
        )
    if not np.isfinite(theta).all() or (theta < 0).any():
        raise ValueError(f"{what}: released probabilities must be finite and >= 0")
    if not np.allclose(theta.sum(axis=1), 1.0, rtol=0, atol=1e-9):
        raise ValueError(f"{what}: every released row must sum to 1 (a Dirichlet draw)")
    r = np.asarray(mechanism.r, dtype=np.float64)
    if r.size != 1:
        raise ValueError(
            f"{what}: a batch of Dirichlet settings (r of shape {r.shape}) is not "
            "supported; one r per table"
        )
    alpha = np.asarray(mechanism.alpha, dtype=np.float64)
    try:
        alpha = np.broadcast_to(alpha if alpha.ndim else alpha[None], shape).copy()
    except ValueError as exc:
        raise ValueError(
            f"{what}: the mechanism's alpha of shape {alpha.shape} does not fit the table {shape}"
        ) from exc
    with np.errstate(divide="ignore"):
        logt = np.maximum(np.log(theta), _LOG_TINY)
    return FamilyObservation(
        k.KIND_DIRICHLET,
        np.zeros(theta.size),
        r=float(r.reshape(-1)[0]),
        logt=logt.reshape(-1),
        alpha=alpha.reshape(-1),
    )


#: mechanism name -> builder ``(values, mechanism, (configs, states), what) -> FamilyObservation``
OBSERVATIONS: dict[str, Callable[..., FamilyObservation]] = {
    "gaussian": _gaussian,
    "discrete_gaussian": _gaussian,
    "laplace": _laplace,
    "discrete_laplace": _laplace,
    "dirichlet": _dirichlet,
}


def _randomized(values: Any, mechanism: Any, shape: tuple[int, int], what: str) -> Any:
    from pymc_rdp.distributions.augmentation_records import randomized_observation

    return randomized_observation(values, mechanism, shape, what)


OBSERVATIONS["categorical_randomized_response"] = _randomized
OBSERVATIONS["randomized_response"] = _randomized


def register_observation(name: str, builder: Callable[..., FamilyObservation]) -> None:
    """Make releases of mechanism ``name`` usable by
    :class:`~pymc_rdp.distributions.data_augmentation.DataAugmentation`."""
    if not isinstance(name, str) or not name:
        raise TypeError("name must be a non-empty string")
    if not callable(builder):
        raise TypeError("builder must be callable")
    OBSERVATIONS[name] = builder


def _observation(node: str, release: Any, shape: tuple[int, int]) -> FamilyObservation:
    """Read one node's release: a :class:`Release`, or ``(values, mechanism)``."""
    what = f"releases[{node!r}]"
    if isinstance(release, tuple) and len(release) == 2:
        values, mechanism = release
    else:
        values = getattr(release, "values", None)
        mechanism = getattr(release, "mechanism", None)
        if values is None or mechanism is None:
            raise TypeError(
                f"{what} must be a Release or a (values, mechanism) pair, got "
                f"{type(release).__name__}"
            )
        for flag, meaning in (
            ("clamped", "clamped at zero"),
            ("rounded", "rounded"),
            ("normalised", "normalised"),
        ):
            if getattr(release, flag, False):
                raise ValueError(
                    f"{what} was {meaning} after noising: its density is not the mechanism's "
                    "and data augmentation does not model that post-processing"
                )
    name = getattr(mechanism, "name", None)
    builder = OBSERVATIONS.get(name) if isinstance(name, str) else None
    if builder is None:
        raise ValueError(
            f"{what}: mechanism {name!r} is not supported by data augmentation (supported: "
            f"{sorted(OBSERVATIONS)}); it needs a density of the family table's counts"
        )
    return builder(values, mechanism, shape, what)
