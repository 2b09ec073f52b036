"""pymc-rdp: private Bayesian inference in PyMC under Rényi differential privacy.

The package is laid out by role: :mod:`pymc_rdp.privacy` (curves, mechanisms, accountant; no PyMC),
:mod:`pymc_rdp.curation` (counting and charged releases), :mod:`pymc_rdp.bn` (graph algorithms),
:mod:`pymc_rdp.distributions` (the analyst's PyMC components), :mod:`pymc_rdp.models` (estimators)
and
:mod:`pymc_rdp.cli`. Everything loads on first use, so that ``import pymc_rdp`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from pymc_rdp import _deprecated

_deprecated.install()

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # RDP core and accounting
    "BudgetExceededError": "pymc_rdp.privacy.accountant",
    "Accountant": "pymc_rdp.privacy.accountant",
    "LedgerEntry": "pymc_rdp.privacy.accountant",
    "RenyiFilter": "pymc_rdp.privacy.filters",
    "GaussianFilter": "pymc_rdp.privacy.filters",
    # mechanisms
    "Mechanism": "pymc_rdp.privacy.mechanisms",
    "GaussianMechanism": "pymc_rdp.privacy.mechanisms",
    "LaplaceMechanism": "pymc_rdp.privacy.mechanisms",
    "RandomizedResponse": "pymc_rdp.privacy.mechanisms",
    "CategoricalRandomizedResponse": "pymc_rdp.privacy.mechanisms",
    "DirichletMechanism": "pymc_rdp.privacy.mechanisms",
    "DiscreteGaussianMechanism": "pymc_rdp.privacy.mechanisms",
    "DiscreteLaplaceMechanism": "pymc_rdp.privacy.mechanisms",
    "DirichletTableMechanism": "pymc_rdp.privacy.mechanisms",
    "mechanism_from_dict": "pymc_rdp.privacy.mechanisms",
    "CustomCurve": "pymc_rdp.privacy.mechanisms",
    "SystemNoise": "pymc_rdp.privacy.mechanisms",
    "UnsafeNoiseSeed": "pymc_rdp.privacy.mechanisms",
    # private domains: quantiles and bin edges of numeric columns
    "ExponentialQuantile": "pymc_rdp.privacy.mechanisms",
    "private_quantiles": "pymc_rdp.curation.quantiles",
    "private_bins": "pymc_rdp.curation.quantiles",
    # budget helpers
    "split_budget": "pymc_rdp.privacy.calibration",
    "calibrate_dirichlet": "pymc_rdp.privacy.calibration",
    # PyMC components
    "privatize": "pymc_rdp.distributions",
    "Release": "pymc_rdp.distributions",
    "NoisyCounts": "pymc_rdp.distributions",
    "DirichletRelease": "pymc_rdp.distributions",
    "release": "pymc_rdp.distributions",
    "release_dirichlet": "pymc_rdp.distributions",
    "RefusedDrawError": "pymc_rdp.distributions",
    "ledger": "pymc_rdp.distributions",
    "sample": "pymc_rdp.distributions",
    "attach_ledger": "pymc_rdp.distributions",
    "read_ledger": "pymc_rdp.distributions",
    "DataAugmentation": "pymc_rdp.distributions.data_augmentation",
    "sample_augmentation": "pymc_rdp.distributions.data_augmentation",
    # counting contingency tables on any engine
    "count_table": "pymc_rdp.curation.counting",
    "count_tables": "pymc_rdp.curation.counting",
    # models
    "NaiveBayes": "pymc_rdp.models.naive_bayes",
    "BayesianNetwork": "pymc_rdp.models.bayesian_network",
    "rubins_rules": "pymc_rdp.models.synthesis",
}

# the packages, by role
_SUBMODULES = {
    "privacy",
    "curation",
    "bn",
    "distributions",
    "models",
    "cli",
    "datasets",
    "plots",
}

# first-class short names for modules deeper in the tree
_ALIASES = {"rdp": "pymc_rdp.privacy.rdp"}

# attribute names of the earlier flat layout -> their modules now (deprecated)
_MOVED_ATTRS = {
    old.rsplit(".", 1)[1]: old
    for old in _deprecated.MOVED
    if old.count(".") == 1 and old not in _deprecated.STABLE
}

__all__ = sorted([*_EXPORTS, *_SUBMODULES, *_ALIASES, "__version__"])


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"pymc_rdp.{name}")
    if name in _ALIASES:
        return importlib.import_module(_ALIASES[name])
    if name in _MOVED_ATTRS:
        return importlib.import_module(_MOVED_ATTRS[name])  # warns through the finder
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pymc_rdp' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover - for static analysers only
    from pymc_rdp import bn, cli, curation, datasets, distributions, models, plots, privacy  # noqa: F401
    from pymc_rdp.privacy.accountant import Accountant, BudgetExceededError, LedgerEntry  # noqa: F401
    from pymc_rdp.privacy.mechanisms import (  # noqa: F401
        CategoricalRandomizedResponse,
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
