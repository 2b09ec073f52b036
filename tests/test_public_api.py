"""The public API: every exported name resolves, and the RDP core imports without PyMC."""

from __future__ import annotations

import subprocess
import sys

import pytest

import pymc_rdp as pmr


@pytest.mark.parametrize("name", pmr.__all__)
def test_every_exported_name_resolves(name):
    assert getattr(pmr, name) is not None


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        pmr.nonexistent  # noqa: B018


def test_core_imports_without_pymc():
    code = (
        "import sys, pymc_rdp as pmr\n"
        "acc = pmr.Accountant(budget=(1.0, 1e-6))\n"
        "acc.spend(pmr.GaussianMechanism(sigma=5.0), tag='q')\n"
        "pmr.DirichletMechanism.calibrate(1.0, 5.0, 2 ** 0.5, 1.0)\n"
        "assert acc.epsilon() <= 1.0\n"
        "print(sorted(m for m in ('pymc', 'pytensor', 'arviz') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
