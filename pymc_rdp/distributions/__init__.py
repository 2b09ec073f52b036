"""PyMC components for private releases and noise-aware inference.

* :func:`privatize` / :class:`Release` — the curator releases a count table once, charged.
* :class:`NoisyCounts` — the analyst observes a release through its noise-aware likelihood.
* :class:`DirichletRelease` / :func:`release_dirichlet` — the Dirichlet mechanism as a model
  component, with exact, charged draws (``release`` is its deprecated name).
* :func:`ledger`, :func:`sample`, :func:`attach_ledger`, :func:`read_ledger` — the private nodes
  of a model and the accountant carried into its results (:mod:`.private_nodes`).
* :func:`register_likelihood` — which likelihood observes a mechanism's releases
  (:mod:`.noise_models`).
* :class:`DataAugmentation` / :func:`sample_augmentation` — exact posteriors of Bayesian-network
  CPTs from released family tables, with the confidential records as latent state.
"""

import sys
import types

from pymc_rdp.curation.release import (
    NEIGHBOURS,
    Release,
    check_sensitivity,
    privatize,
    table_sensitivity,
)
from pymc_rdp.distributions import likelihoods
from pymc_rdp.distributions.data_augmentation import DataAugmentation, sample_augmentation
from pymc_rdp.distributions.dirichlet_release import (
    DirichletRelease,
    DirichletReleaseRV,
    RefusedDrawError,
    read_releases,
    release,
    release_dirichlet,
)
from pymc_rdp.distributions.kernel_cache import drop_stale_kernels
from pymc_rdp.distributions.noise_models import NoiseModel, noise_model_of, register_likelihood
from pymc_rdp.distributions.noisy_counts import MODES, NoisyCounts, NoisyCountsRV
from pymc_rdp.distributions.private_nodes import (
    ACCOUNTANT_ATTR,
    LEDGER_ATTR,
    PrivateRandomVariable,
    attach_ledger,
    ledger,
    read_ledger,
    sample,
)

# before any kernel is loaded (none is at import): numba's cache does not follow a kernel's
# callees into other modules (kernel_cache)
drop_stale_kernels()

__all__ = [
    "ACCOUNTANT_ATTR",
    "LEDGER_ATTR",
    "MODES",
    "NEIGHBOURS",
    "DataAugmentation",
    "DirichletRelease",
    "DirichletReleaseRV",
    "NoiseModel",
    "NoisyCounts",
    "NoisyCountsRV",
    "PrivateRandomVariable",
    "RefusedDrawError",
    "Release",
    "attach_ledger",
    "check_sensitivity",
    "ledger",
    "likelihoods",
    "noise_model_of",
    "privatize",
    "read_ledger",
    "read_releases",
    "register_likelihood",
    "release",
    "release_dirichlet",
    "sample",
    "sample_augmentation",
    "table_sensitivity",
]


#: functions of this package whose names are also old module paths
#: (``pymc_rdp.distributions.ledger`` is now :mod:`.private_nodes`,
#: ``pymc_rdp.distributions.release`` is :mod:`pymc_rdp.curation.release`): importing an old path
#: must not replace the function
_SHADOWED = frozenset({"ledger", "release"})


class _Package(types.ModuleType):
    """Keeps the functions named in ``_SHADOWED`` when their old module paths are imported."""

    def __setattr__(self, name: str, value: object) -> None:
        if name in _SHADOWED and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if name in _SHADOWED and not isinstance(vars(self).get(name), types.ModuleType):
            return  # the function stays (only an old module alias could be forgotten)
        super().__delattr__(name)


sys.modules[__name__].__class__ = _Package
