"""The package's layout by role: imports point one way, old module paths still resolve.

Roles, from the bottom: ``privacy`` (curves, mechanisms, accountant) ← ``bn`` (graph algorithms)
and ``curation`` (counting and releases) ← ``distributions`` (the analyst's PyMC components) ←
``models`` (estimators) ← ``cli``. A module may import its own role and the roles below it, never
one above; every import counts, including those deferred into functions.
"""

from __future__ import annotations

import ast
import importlib
import sys
import warnings
from pathlib import Path

import pytest

import pymc_rdp
from pymc_rdp import _deprecated

PACKAGE = Path(pymc_rdp.__file__).parent

#: role -> the roles it may import (besides itself and the shared leaf modules)
ALLOWED: dict[str, set[str]] = {
    "privacy": set(),
    "bn": set(),
    "curation": {"privacy", "bn"},
    "distributions": {"privacy", "bn", "curation"},
    "models": {"privacy", "bn", "curation", "distributions"},
    "cli": {"privacy", "bn", "curation", "distributions", "models", "datasets", "plots"},
    "datasets": {"bn", "curation"},
    "plots": {"privacy"},
}
#: leaf modules (and the version) every role may use
SHARED = {"_validation", "__version__"}


def _role(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "pymc_rdp" or len(parts) < 2:
        return None
    return parts[1]


def _imports(path: Path) -> set[str]:
    """Every pymc_rdp module ``path`` imports (module level and inside functions)."""
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    package = parts[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("pymc_rdp"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.startswith("pymc_rdp"):
                found.add(mod)
                if mod == "pymc_rdp":  # from pymc_rdp import datasets
                    found.update(f"{mod}.{a.name}" for a in node.names)
    return found


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_point_one_way(path: Path) -> None:
    rel = path.relative_to(PACKAGE)
    if rel.name in ("__init__.py", "_deprecated.py") and len(rel.parts) == 1:
        pytest.skip("the top-level package re-exports every role lazily")
    role = rel.parts[0].removesuffix(".py")
    if role in SHARED:
        return
    allowed = ALLOWED[role] | {role} | SHARED
    wrong = sorted(m for m in _imports(path) if (r := _role(m)) is not None and r not in allowed)
    assert not wrong, f"{rel} ({role}) imports {wrong}; {role} may import only {sorted(allowed)}"


def test_the_rules_have_no_circle() -> None:
    import networkx as nx

    graph = nx.DiGraph([(a, b) for a, bs in ALLOWED.items() for b in bs])
    assert nx.is_directed_acyclic_graph(graph)


def _forget(old: str) -> None:
    """Drop an old path's alias so that the next import goes through the finder again."""
    for name in [m for m in sys.modules if m == old or m.startswith(old + ".")]:
        del sys.modules[name]
    parent, _, leaf = old.rpartition(".")
    if parent in sys.modules and leaf in vars(sys.modules[parent]):
        delattr(sys.modules[parent], leaf)


@pytest.mark.parametrize("old", sorted(_deprecated.MOVED))
def test_old_module_paths_resolve_to_the_moved_module(old: str) -> None:
    new = importlib.import_module(_deprecated.MOVED[old])
    _forget(old)
    if old in _deprecated.STABLE:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert importlib.import_module(old) is new
    else:
        with pytest.warns(DeprecationWarning, match="moved to"):
            assert importlib.import_module(old) is new


def test_old_submodule_paths_follow_their_package() -> None:
    _forget("pymc_rdp.mechanisms")
    with pytest.warns(DeprecationWarning):
        from pymc_rdp.mechanisms.base import Mechanism
    assert Mechanism is pymc_rdp.Mechanism


def test_moved_top_level_names_warn() -> None:
    _forget("pymc_rdp.budget")
    with pytest.warns(DeprecationWarning):
        module = pymc_rdp.budget
    assert module is importlib.import_module("pymc_rdp.privacy.calibration")


def test_pmr_rdp_is_first_class() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert pymc_rdp.rdp.gaussian([2.0], 1.0)[0] == pytest.approx(1.0)
