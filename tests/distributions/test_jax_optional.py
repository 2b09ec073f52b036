"""JAX is optional: without it the package imports, compiles and never looks for it again."""

from __future__ import annotations

import subprocess
import sys

BLOCK_JAX = """
import importlib.abc, sys

class NoJax(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "jax" or name.startswith("jax."):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None

sys.meta_path.insert(0, NoJax())
"""

CHECK = """
import numpy as np
import pymc as pm
import pymc_rdp.distributions as D
from pymc_rdp.distributions._jax_loader import _AfterJaxDispatch
from pymc_rdp.distributions.ops import trigamma
from pymc_rdp.privacy.mechanisms import LaplaceMechanism

assert "jax" not in sys.modules
assert not any(isinstance(f, _AfterJaxDispatch) for f in sys.meta_path), "hook without jax"
with pm.Model() as model:
    p = pm.Dirichlet("p", np.ones(3))
    D.NoisyCounts("t", 30, p, mechanism=LaplaceMechanism(2.0, 2.0), observed=[9.0, 11.5, 8.0])
    pm.Potential("psi", trigamma(p).sum())
value = model.compile_logp(mode="FAST_COMPILE")(model.initial_point())
assert np.isfinite(value), value
print("ok")
"""


def test_package_works_without_jax():
    out = subprocess.run(
        [sys.executable, "-c", BLOCK_JAX + CHECK], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("ok")
