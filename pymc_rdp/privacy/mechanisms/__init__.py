"""Privacy mechanisms with Rényi-DP curves: discrete Gaussian and Laplace (integer queries),
Gaussian, Laplace, randomized response (binary and k-ary), Dirichlet, the exponential-mechanism
quantile.

A mechanism describes itself to the rest of the package (no caller tests its type):
``sensitivity_norm`` and :meth:`Mechanism.sensitivity_checks` (what sensitivity its curve needs),
``for_counts`` (integer noise, may release a count table), ``releases_probabilities`` (its
output is a table on the simplex), ``calibrate_table`` / ``with_noise`` (calibration for a count
table of given sensitivities). The charged releases of several quantiles
(``private_quantiles``, ``private_bins``) are the curator's: :mod:`pymc_rdp.curation.quantiles`.

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
from pymc_rdp.privacy.mechanisms.categorical_randomized_response import (
    CategoricalRandomizedResponse,
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
from pymc_rdp.privacy.mechanisms.quantiles import ExponentialQuantile
from pymc_rdp.privacy.mechanisms.randomized_response import RandomizedResponse

__all__ = [
    "CategoricalRandomizedResponse",
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
    "register_mechanism",
    "resolve_noise_source",
]


def __getattr__(name: str):
    if name in ("private_bins", "private_quantiles"):
        from pymc_rdp.privacy.mechanisms import quantiles

        return getattr(quantiles, name)  # warns: moved to pymc_rdp.curation.quantiles
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
