"""Which likelihood observes a mechanism's releases: the registry keyed on the mechanism class.

A release of additive noise is modelled by the noise law it was drawn from. Each mechanism class
registers its :class:`NoiseModel` here (:func:`register_likelihood`), so that
:class:`~pymc_rdp.NoisyCounts` and the joint likelihood
(:mod:`pymc_rdp.distributions.joint_likelihood`) look it up instead of testing types:

* ``kind`` — the noise law of :class:`~pymc_rdp.NoisyCounts` (``"gaussian"``, ``"laplace"``,
  ``"discrete_gaussian"``, ``"discrete_laplace"``) and ``scale`` — its parameter (σ or b);
* ``family`` / ``surrogate_scale`` — the continuous law with the same variance, for the models
  that need one (the joint linear-query likelihood): the discrete Gaussian's variance by
  summation as a normal, the discrete Laplace's variance 2r/(1 − r)² as a Laplace of scale
  √(var/2) (Canonne, Kamath & Steinke 2020, "The Discrete Gaussian for Differential Privacy").

A new additive mechanism registers itself with one call next to its likelihood.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pymc_rdp.privacy.mechanisms import (
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    Mechanism,
)

__all__ = ["NoiseModel", "noise_model_of", "register_likelihood", "registered_likelihoods"]


@dataclass(frozen=True)
class NoiseModel:
    """How a release of one mechanism class is observed.

    Attributes
    ----------
    kind : str
        The noise law of :class:`~pymc_rdp.NoisyCounts`.
    scale : callable
        ``mechanism -> float``: the law's parameter (σ or b).
    family : {"gaussian", "laplace"}
        The continuous law of the same variance.
    surrogate_scale : callable
        ``mechanism -> float``: that law's parameter.
    """

    kind: str
    scale: Callable[[Any], float]
    family: str
    surrogate_scale: Callable[[Any], float]


_REGISTRY: dict[type, NoiseModel] = {}


def register_likelihood(mechanism_class: type, model: NoiseModel) -> None:
    """Register the :class:`NoiseModel` of a mechanism class (and of its subclasses).

    Raises
    ------
    TypeError
        ``mechanism_class`` is not a Mechanism subclass or ``model`` not a NoiseModel.
    """
    if not (isinstance(mechanism_class, type) and issubclass(mechanism_class, Mechanism)):
        raise TypeError(f"mechanism_class must be a Mechanism subclass, got {mechanism_class!r}")
    if not isinstance(model, NoiseModel):
        raise TypeError(f"model must be a NoiseModel, got {type(model).__name__}")
    if model.family not in ("gaussian", "laplace"):
        raise ValueError(f"model.family must be 'gaussian' or 'laplace', got {model.family!r}")
    _REGISTRY[mechanism_class] = model


def registered_likelihoods() -> dict[type, NoiseModel]:
    """A copy of the registry: mechanism class -> NoiseModel."""
    return dict(_REGISTRY)


def noise_model_of(mechanism: Any) -> NoiseModel:
    """The :class:`NoiseModel` of ``mechanism`` (its class, or the nearest registered base).

    Raises
    ------
    TypeError
        ``mechanism`` is not a Mechanism, or no likelihood is registered for its class.
    """
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a Mechanism, got {type(mechanism).__name__}")
    for cls in type(mechanism).__mro__:
        model = _REGISTRY.get(cls)
        if model is not None:
            return model
    names = sorted(c.__name__ for c in _REGISTRY)
    known = " or ".join([", ".join(names[:-1]), names[-1]]) if len(names) > 1 else names[0]
    raise TypeError(
        f"mechanism must be a {known} (a registered additive-noise likelihood), got "
        f"{type(mechanism).__name__}; a release of mechanism {mechanism.name!r} has no "
        "additive-noise likelihood"
    )


def _sigma(m: Any) -> float:
    return float(m.sigma)


def _scale(m: Any) -> float:
    return float(m.scale)


register_likelihood(GaussianMechanism, NoiseModel("gaussian", _sigma, "gaussian", _sigma))
register_likelihood(LaplaceMechanism, NoiseModel("laplace", _scale, "laplace", _scale))
register_likelihood(
    DiscreteGaussianMechanism,
    NoiseModel("discrete_gaussian", _sigma, "gaussian", lambda m: math.sqrt(float(m.variance()))),
)
register_likelihood(
    DiscreteLaplaceMechanism,
    NoiseModel(
        "discrete_laplace", _scale, "laplace", lambda m: math.sqrt(float(m.variance()) / 2.0)
    ),
)
