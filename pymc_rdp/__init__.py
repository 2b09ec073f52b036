"""pymc-rdp: private Bayesian inference in PyMC under Rényi differential privacy.

The RDP core (:mod:`pymc_rdp.rdp`), the mechanisms and the accountant import without PyMC; the PyMC
components, models and datasets load on first use, so that ``import pymc_rdp`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # RDP core and accounting
    "BudgetExceededError": "pymc_rdp.accountant",
    "Accountant": "pymc_rdp.accountant",
    "LedgerEntry": "pymc_rdp.accountant",
    "RenyiFilter": "pymc_rdp.filters",
    "GaussianFilter": "pymc_rdp.filters",
    # mechanisms
    "Mechanism": "pymc_rdp.mechanisms",
    "GaussianMechanism": "pymc_rdp.mechanisms",
    "LaplaceMechanism": "pymc_rdp.mechanisms",
    "RandomizedResponse": "pymc_rdp.mechanisms",
    "DirichletMechanism": "pymc_rdp.mechanisms",
    "DiscreteGaussianMechanism": "pymc_rdp.mechanisms",
    "DiscreteLaplaceMechanism": "pymc_rdp.mechanisms",
    "DirichletTableMechanism": "pymc_rdp.mechanisms",
    "mechanism_from_dict": "pymc_rdp.mechanisms",
    "CustomCurve": "pymc_rdp.mechanisms",
    "SystemNoise": "pymc_rdp.mechanisms",
    "UnsafeNoiseSeed": "pymc_rdp.mechanisms",
    # private domains: quantiles and bin edges of numeric columns
    "ExponentialQuantile": "pymc_rdp.mechanisms",
    "private_quantiles": "pymc_rdp.mechanisms",
    "private_bins": "pymc_rdp.mechanisms",
    # budget helpers
    "split_budget": "pymc_rdp.budget",
    "calibrate_dirichlet": "pymc_rdp.budget",
    # PyMC components
    "privatize": "pymc_rdp.distributions",
    "Release": "pymc_rdp.distributions",
    "NoisyCounts": "pymc_rdp.distributions",
    "DirichletRelease": "pymc_rdp.distributions",
    "release": "pymc_rdp.distributions",
    "RefusedDrawError": "pymc_rdp.distributions",
    "ledger": "pymc_rdp.distributions",
    "sample": "pymc_rdp.distributions",
    "attach_ledger": "pymc_rdp.distributions",
    "read_ledger": "pymc_rdp.distributions",
    "DataAugmentation": "pymc_rdp.distributions.data_augmentation",
    "sample_augmentation": "pymc_rdp.distributions.data_augmentation",
    # counting contingency tables on any engine
    "count_table": "pymc_rdp.counting",
    "count_tables": "pymc_rdp.counting",
    # models
    "NaiveBayes": "pymc_rdp.models.naive_bayes",
    "BayesianNetwork": "pymc_rdp.models.bayesian_network",
}

_SUBMODULES = {
    "rdp",
    "accountant",
    "mechanisms",
    "datasets",
    "models",
    "budget",
    "counting",
    "dirichlet_divergence",
    "ops",
    "distributions",
    "plots",
    "tight_accounting",
    "filters",
    "dp_events",
    "domains",
}

__all__ = sorted([*_EXPORTS, *_SUBMODULES, "__version__"])


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"pymc_rdp.{name}")
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pymc_rdp' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover - for static analysers only
    from pymc_rdp import accountant, mechanisms, rdp  # noqa: F401
    from pymc_rdp.accountant import Accountant, BudgetExceededError, LedgerEntry  # noqa: F401
    from pymc_rdp.mechanisms import (  # noqa: F401
        DirichletMechanism,
        DirichletTableMechanism,
        DiscreteGaussianMechanism,
        DiscreteLaplaceMechanism,
        GaussianMechanism,
        LaplaceMechanism,
        Mechanism,
        RandomizedResponse,
        mechanism_from_dict,
    )
