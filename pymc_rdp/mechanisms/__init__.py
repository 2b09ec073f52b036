"""Privacy mechanisms with Rényi-DP curves: discrete Gaussian and Laplace (integer queries),
Gaussian, Laplace, randomized response, Dirichlet.

Every mechanism exposes ``rdp(orders)``, ``params()``, ``release(value, rng)``, ``to_dict()`` and a
classmethod ``calibrate(...)``; :func:`mechanism_from_dict` rebuilds one from ``to_dict()``.
"""

from .base import CustomCurve, Mechanism, mechanism_from_dict, register_mechanism
from .dirichlet import DirichletMechanism
from .discrete_gaussian import DiscreteGaussianMechanism
from .discrete_laplace import DiscreteLaplaceMechanism
from .gaussian import GaussianMechanism
from .laplace import LaplaceMechanism
from .noise import NoiseSource, SystemNoise, UnsafeNoiseSeed, resolve_noise_source
from .randomized_response import RandomizedResponse

__all__ = [
    "CustomCurve",
    "DirichletMechanism",
    "DiscreteGaussianMechanism",
    "DiscreteLaplaceMechanism",
    "GaussianMechanism",
    "LaplaceMechanism",
    "Mechanism",
    "NoiseSource",
    "RandomizedResponse",
    "SystemNoise",
    "UnsafeNoiseSeed",
    "mechanism_from_dict",
    "register_mechanism",
    "resolve_noise_source",
]
