"""The calibration study's modules (experiments/): loading by path, and the cost table.

Each module of the study loads on its own by its path in a fresh interpreter; the command line
re-exports the report's functions; the cost table counts the (ε, N) settings present in the
records and multiplies the mean wall time per fit by replicates × settings.
"""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULES = (
    "calibration_augmentation",
    "calibration_templates",
    "calibration_replicates",
    "calibration_report",
    "calibration_study",
)


def _load(name: str) -> ModuleType:
    full = f"_experiments_{name}"
    if full in sys.modules:
        return sys.modules[full]
    spec = importlib.util.spec_from_file_location(full, ROOT / "experiments" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[full] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", MODULES)
def test_each_module_loads_alone_by_its_path(name):
    path = ROOT / "experiments" / f"{name}.py"
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('alone', {str(path)!r})\n"
        "module = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(module)\n"
        "print(sorted(k for k in sys.modules if k.startswith('_experiments_')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr
    loaded = ast.literal_eval(out.stdout.strip())  # the siblings it loaded
    assert f"_experiments_{name}" not in loaded
    if name == "calibration_study":
        assert set(loaded) == {f"_experiments_{m}" for m in MODULES[:-1]}


def test_the_command_line_reexports_the_report_and_the_replicates():
    study = _load("calibration_study")
    report = _load("calibration_report")
    replicates = _load("calibration_replicates")
    for name in ("summarise", "load_records", "group", "paired", "markdown_table", "report"):
        assert getattr(study, name) is getattr(report, name)
    assert study.time_table is report.time_table
    assert study.Setting is replicates.Setting
    assert study.aug is replicates.aug is report.aug
    assert study.NOISE_KINDS == ("gaussian", "laplace", *replicates.aug.KIND_MECHANISM)


def _record(network, noise, epsilon, n, method, wall_s, sample_s):
    return {
        "key": f"{network}|{noise}|{epsilon:g}|{n}",
        "network": network,
        "noise": noise,
        "method": method,
        "wall_s": wall_s,
        "sample_s": sample_s,
    }


def test_time_table_counts_the_settings_in_the_records():
    report = _load("calibration_report")
    records = [
        _record("asia", "gaussian", eps, n, "joint", 36.0, 30.0)
        for eps in (0.1, 1.0)
        for n in (100, 1000, 10000)
    ]
    # sachs: one timed fit, and a setting present only through an untimed method
    records.append(_record("sachs", "laplace", 1.0, 100, "per-family", 72.0, 60.0))
    records.append(_record("sachs", "laplace", 0.1, 100, "non-private", 0.5, None))
    lines = report.time_table(records, replicates=50).splitlines()
    assert lines[0] == (
        "| network | noise | method | fits | settings | sampling s / fit | wall s / fit "
        "| 50 replicates × settings, hours |"
    )
    assert lines[1] == "|---" * 8 + "|"
    # hours = wall s per fit × replicates × settings / 3600
    assert (
        lines[2] == f"| asia | gaussian | joint | 6 | 6 | 30.0 | 36.0 | {36 * 50 * 6 / 3600:.1f} |"
    )
    assert lines[3] == (
        f"| sachs | laplace | per-family | 1 | 2 | 60.0 | 72.0 | {72 * 50 * 2 / 3600:.1f} |"
    )
    assert len(lines) == 4
