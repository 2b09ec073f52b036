"""Old module paths, kept importable with a :class:`DeprecationWarning`.

The package was laid out by role (``privacy``, ``curation``, ``bn``, ``distributions``, ``models``,
``cli``). Code written against the earlier flat layout — ``import pymc_rdp.rdp``,
``from pymc_rdp.accountant import Accountant``, ``pymc_rdp.budget`` — keeps working: the old name
resolves to the very module object at its new path, so there is one module, not a copy.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

#: old dotted path -> new dotted path
MOVED: dict[str, str] = {
    "pymc_rdp.rdp": "pymc_rdp.privacy.rdp",
    "pymc_rdp.accountant": "pymc_rdp.privacy.accountant",
    "pymc_rdp.budget": "pymc_rdp.privacy.calibration",
    "pymc_rdp.dirichlet_divergence": "pymc_rdp.privacy.dirichlet_divergence",
    "pymc_rdp.tight_accounting": "pymc_rdp.privacy.tight_accounting",
    "pymc_rdp.dp_events": "pymc_rdp.privacy.dp_events",
    "pymc_rdp.filters": "pymc_rdp.privacy.filters",
    "pymc_rdp.mechanisms": "pymc_rdp.privacy.mechanisms",
    "pymc_rdp.counting": "pymc_rdp.curation.counting",
    "pymc_rdp.domains": "pymc_rdp.curation.domains",
    "pymc_rdp.ops": "pymc_rdp.distributions.ops",
    "pymc_rdp.report_posterior": "pymc_rdp.cli.report_posterior",
    "pymc_rdp.models.bn_structure": "pymc_rdp.bn.structure",
    "pymc_rdp.models.variable_elimination": "pymc_rdp.bn.elimination",
    "pymc_rdp.models.joint_likelihood": "pymc_rdp.distributions.joint_likelihood",
    "pymc_rdp.models.flat_cpt": "pymc_rdp.distributions.flat_cpt",
    "pymc_rdp.models.simplex_transform": "pymc_rdp.distributions.simplex_transform",
    "pymc_rdp.distributions.release": "pymc_rdp.curation.release",
}


#: old paths that stay first-class (no warning): ``pmr.rdp`` is the RDP calculus namespace
STABLE: frozenset[str] = frozenset({"pymc_rdp.rdp"})


def new_path(old: str) -> str | None:
    """The current dotted path of module ``old``, or ``None`` if it did not move.

    Submodules of a moved package follow it (``pymc_rdp.mechanisms.base`` ->
    ``pymc_rdp.privacy.mechanisms.base``).
    """
    if old in MOVED:
        return MOVED[old]
    for prefix, target in MOVED.items():
        if old.startswith(prefix + "."):
            return target + old[len(prefix) :]
    return None


def _warn(old: str, new: str, stacklevel: int) -> None:
    warnings.warn(
        f"{old} moved to {new}; the old path will be removed in a future release",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec):
        return importlib.import_module(self.new)

    def exec_module(self, module) -> None:
        return None


class MovedModuleFinder(importlib.abc.MetaPathFinder):
    """Resolve an old module path to the module at its new path, with a DeprecationWarning."""

    def find_spec(self, fullname, path=None, target=None):
        new = new_path(fullname)
        if new is None:
            return None
        if fullname not in STABLE and new_path(fullname.rsplit(".", 1)[0]) is None:
            _warn(fullname, new, stacklevel=4)
        module = importlib.import_module(new)
        spec = importlib.util.spec_from_loader(
            fullname, _AliasLoader(new), is_package=hasattr(module, "__path__")
        )
        if hasattr(module, "__path__"):
            spec.submodule_search_locations = list(module.__path__)
        return spec


def install() -> None:
    """Put :class:`MovedModuleFinder` on ``sys.meta_path`` once."""
    if not any(isinstance(f, MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, MovedModuleFinder())
