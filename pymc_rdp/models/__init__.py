"""Private models: :class:`BayesianNetwork` (PyMC) and :class:`NaiveBayes` (scikit-learn API).

The classes load on first use, so that importing the naive Bayes classifier does not import PyMC.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "BayesianNetwork": "pymc_rdp.models.bayesian_network",
    "NaiveBayes": "pymc_rdp.models.naive_bayes",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pymc_rdp.models' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover - for static analysers only
    from pymc_rdp.models.bayesian_network import BayesianNetwork  # noqa: F401
    from pymc_rdp.models.naive_bayes import NaiveBayes  # noqa: F401
