"""bn/ holds graph algorithms only: importing it loads no PyMC, PyTensor or other role."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

BN = Path(__file__).resolve().parents[2] / "pymc_rdp" / "bn"
ORDER = ["graph", "tables", "elimination", "sampling", "structure"]


def test_importing_bn_loads_no_pymc_pytensor_or_other_roles() -> None:
    code = (
        "import sys\n"
        + "".join(f"import pymc_rdp.bn.{m}\n" for m in ORDER)
        + "roles = ('pymc_rdp.privacy', 'pymc_rdp.curation', 'pymc_rdp.distributions',"
        " 'pymc_rdp.models', 'pymc_rdp.cli')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pymc', 'pytensor')"
        " or m.startswith(roles)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"


def test_bn_modules_import_one_way() -> None:
    """Each module imports only modules listed before it in ORDER (no circle, none lazily)."""
    for i, name in enumerate(ORDER):
        tree = ast.parse((BN / f"{name}.py").read_text(encoding="utf-8"))
        used = {
            node.module.rsplit(".", 1)[1]
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.startswith("pymc_rdp.bn.")
        }
        assert used <= set(ORDER[:i]), (name, used)
        others = {
            node.module
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.startswith("pymc_rdp.")
            and not node.module.startswith("pymc_rdp.bn.")
        }
        assert not others, (name, others)
