"""PyMC components for private releases and noise-aware inference.

* :func:`privatize` / :class:`Release` — the curator releases a count table once, charged.
* :class:`NoisyCounts` — the analyst observes a release through its noise-aware likelihood.
* :class:`DirichletRelease` / :func:`release` — the Dirichlet mechanism as a model component,
  with exact, charged draws.
* :func:`ledger`, :func:`sample`, :func:`attach_ledger`, :func:`read_ledger` — the privacy
  ledger of a model and of its results.
* :class:`DataAugmentation` / :func:`sample_augmentation` — exact posteriors of Bayesian-network
  CPTs from released family tables, with the confidential records as latent state.
"""

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
    release,
)
from pymc_rdp.distributions.ledger import (
    ACCOUNTANT_ATTR,
    LEDGER_ATTR,
    PrivateRandomVariable,
    attach_ledger,
    ledger,
    read_ledger,
    sample,
)
from pymc_rdp.distributions.noisy_counts import MODES, NoisyCounts, NoisyCountsRV

__all__ = [
    "ACCOUNTANT_ATTR",
    "LEDGER_ATTR",
    "MODES",
    "NEIGHBOURS",
    "DataAugmentation",
    "DirichletRelease",
    "DirichletReleaseRV",
    "NoisyCounts",
    "NoisyCountsRV",
    "PrivateRandomVariable",
    "RefusedDrawError",
    "Release",
    "attach_ledger",
    "check_sensitivity",
    "ledger",
    "likelihoods",
    "privatize",
    "read_ledger",
    "release",
    "sample",
    "sample_augmentation",
    "table_sensitivity",
]
