"""Privacy mechanisms with Rényi-DP curves: discrete Gaussian and Laplace (integer queries),
Gaussian, Laplace, randomized response, Dirichlet, the exponential-mechanism quantile.

Every mechanism exposes ``rdp(orders)``, ``params()``, ``release(value, noise_source=None)``,
``to_dict()`` and a classmethod ``calibrate(...)``; :func:`mechanism_from_dict` rebuilds one from
``to_dict()``. Privacy noise comes from :mod:`.noise` (OS entropy unless an explicit, non-private
``UnsafeNoiseSeed`` is given).
"""

from pymc_rdp.privacy.mechanisms.base import (
    CustomCurve,
    Mechanism,
    mechanism_from_dict,
    register_mechanism,
)
from pymc_rdp.privacy.mechanisms.dirichlet import DirichletMechanism
from pymc_rdp.privacy.mechanisms.dirichlet_table import DirichletTableMechanism
from pymc_rdp.privacy.mechanisms.discrete_gaussian import DiscreteGaussianMechanism
from pymc_rdp.privacy.mechanisms.discrete_laplace import DiscreteLaplaceMechanism
from pymc_rdp.privacy.mechanisms.gaussian import GaussianMechanism
from pymc_rdp.privacy.mechanisms.laplace import LaplaceMechanism
from pymc_rdp.privacy.mechanisms.noise import (
    NoiseSource,
    SystemNoise,
    UnsafeNoiseSeed,
    resolve_noise_source,
)
from pymc_rdp.privacy.mechanisms.quantiles import (
    ExponentialQuantile,
    private_bins,
    private_quantiles,
)
from pymc_rdp.privacy.mechanisms.randomized_response import RandomizedResponse

__all__ = [
    "CustomCurve",
    "DirichletMechanism",
    "DirichletTableMechanism",
    "DiscreteGaussianMechanism",
    "DiscreteLaplaceMechanism",
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
