"""The example scripts run end to end (in their fast modes) and print what they promise."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run_example(name: str, *args: str, timeout: float = 600) -> str:
    env = {**os.environ, "MPLBACKEND": "Agg"}
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_compose_mechanisms():
    out = run_example("compose_mechanisms.py")
    assert "refused:" in out  # the over-budget release is refused
    assert "all releases together: (2.8" in out
    assert "region (4 partitions)" in out


def test_naive_bayes_adult_fast():
    out = run_example("naive_bayes_adult.py", "--fast")
    for mechanism in ("dirichlet", "gaussian", "laplace"):
        assert mechanism in out.lower()


@pytest.mark.slow
def test_bayesian_network_adult_fast():
    out = run_example("bayesian_network_adult.py", "--fast")
    assert "income_cpt" in out
