"""The privacy core stands alone: it loads no modelling stack and imports no other role.

The guarantee must be auditable, and a ledger recomputable, with NumPy and SciPy only; so
``pymc_rdp.privacy`` may import neither PyMC, PyTensor, pandas nor ArviZ (checked at run time in a
fresh interpreter) nor any module of the curator, graph, analyst, estimator or command-line roles
(checked on the source, every import statement, deferred ones included).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import pymc_rdp.privacy

PRIVACY = Path(pymc_rdp.privacy.__file__).parent
FORBIDDEN_STACK = ("pymc", "pytensor", "pandas", "arviz")
FORBIDDEN_ROLES = ("curation", "bn", "distributions", "models", "cli")

_SCRIPT = """
import json, sys
import pymc_rdp.privacy
import pymc_rdp.privacy.rdp
import pymc_rdp.privacy.mechanisms as mechanisms
import pymc_rdp.privacy.accountant as accountant
import pymc_rdp.privacy.calibration
import pymc_rdp.privacy.tight_accounting
import pymc_rdp.privacy.filters
import pymc_rdp.privacy.dp_events

mech = mechanisms.GaussianMechanism.calibrate(1.0, order=8.0, sensitivity=1.0)
acc = accountant.Accountant()
acc.spend(mech, tag="isolation")
eps = acc.epsilon(1e-6)
loaded = sorted({name.split(".")[0] for name in sys.modules})
print(json.dumps({"epsilon": eps, "sigma": mech.sigma, "loaded": loaded}))
"""


def test_privacy_loads_no_modelling_stack() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT], capture_output=True, text=True, check=True, timeout=300
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    # the mechanism was really built, charged and converted: σ from the closed form
    # σ = Δ √(λ/(2ε)) (Mironov 2017, Proposition 7) and a finite, positive (ε, δ)
    assert result["sigma"] == pytest.approx(2.0, rel=1e-12)
    assert 0.0 < result["epsilon"] < float("inf")
    loaded = [m for m in FORBIDDEN_STACK if m in result["loaded"]]
    assert loaded == [], f"importing the privacy core loaded {loaded}"


def _imported_modules(source: str, package: list[str]) -> set[str]:
    """Every module named by an import statement of ``source`` (relative imports resolved)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def _forbidden(modules: set[str]) -> list[str]:
    return sorted(
        m
        for m in modules
        if m.split(".")[0] in FORBIDDEN_STACK
        or (m.split(".")[0] == "pymc_rdp" and m.split(".")[1:2] in ([r] for r in FORBIDDEN_ROLES))
    )


def _privacy_modules() -> list[Path]:
    return sorted(p for p in PRIVACY.rglob("*.py") if "__pycache__" not in p.parts)


@pytest.mark.parametrize(
    "path", _privacy_modules(), ids=lambda p: str(p.relative_to(PRIVACY.parent))
)
def test_privacy_imports_no_other_role(path: Path) -> None:
    package = ["pymc_rdp", *path.parent.relative_to(PRIVACY.parent).parts]
    bad = _forbidden(_imported_modules(path.read_text(encoding="utf-8"), package))
    assert bad == [], f"{path.name} imports {bad}"


def test_import_scan_catches_deferred_and_relative_imports() -> None:
    source = (
        "from . import curves\n"
        "def f():\n"
        "    from ...curation import release\n"
        "    import pandas as pd\n"
        "    from pymc_rdp import models\n"
    )
    found = _imported_modules(source, ["pymc_rdp", "privacy", "mechanisms"])
    assert "pymc_rdp.privacy.mechanisms.curves" in found
    assert _forbidden(found) == [
        "pandas",
        "pymc_rdp.curation",
        "pymc_rdp.curation.release",
        "pymc_rdp.models",
    ]
