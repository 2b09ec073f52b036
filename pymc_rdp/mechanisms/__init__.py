"""Privacy mechanisms with Rényi-DP curves: Gaussian, Laplace, randomized response, Dirichlet,
the exponential-mechanism quantile.

Every mechanism exposes ``rdp(orders)``, ``params()``, ``release(value, noise_source=None)``,
``to_dict()`` and a classmethod ``calibrate(...)``; :func:`mechanism_from_dict` rebuilds one from
``to_dict()``. Privacy noise comes from :mod:`.noise` (OS entropy unless an explicit, non-private
``UnsafeNoiseSeed`` is given).
"""

from .base import CustomCurve, Mechanism, mechanism_from_dict, register_mechanism
from .dirichlet import DirichletMechanism
from .dirichlet_table import DirichletTableMechanism
from .gaussian import GaussianMechanism
from .laplace import LaplaceMechanism
from .noise import NoiseSource, SystemNoise, UnsafeNoiseSeed, resolve_noise_source
from .quantiles import ExponentialQuantile, private_bins, private_quantiles
from .randomized_response import RandomizedResponse

__all__ = [
    "CustomCurve",
    "DirichletMechanism",
    "DirichletTableMechanism",
    "ExponentialQuantile",
    "GaussianMechanism",
    "LaplaceMechanism",
    "Mechanism",
    "NoiseSource",
    "RandomizedResponse",
    "SystemNoise",
    "UnsafeNoiseSeed",
    "mechanism_from_dict",
    "private_bins",
    "private_quantiles",
    "register_mechanism",
    "resolve_noise_source",
]
