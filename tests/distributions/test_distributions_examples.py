"""The component examples run end to end in their fast mode and write what they promise."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import pymc_rdp.distributions as D
from pymc_rdp.privacy.accountant import Accountant

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.filterwarnings("ignore:.*(rhat|effective sample size).*:UserWarning")
def test_noisy_counts_example(tmp_path, capsys):
    out = _load("noisy_counts").main(["--fast", "--out", str(tmp_path)])
    assert out == tmp_path
    assert {"release.json", "posterior.nc", "smoking_rate.png"} <= {p.name for p in out.iterdir()}
    release = D.Release.from_json((out / "release.json").read_text())
    # discrete noise: the release is an integer table as drawn (no clamping, nothing to round)
    assert not release.clamped and not release.rounded and release.values.shape == (3, 2)
    assert release.mechanism.name == "discrete_laplace"
    np.testing.assert_array_equal(release.values, np.round(release.values))
    tree = xr.open_datatree(out / "posterior.nc", engine="h5netcdf")
    nodes = json.loads(tree.attrs[D.LEDGER_ATTR])
    assert [n["tag"] for n in nodes] == ["age x smoking"]
    acc = Accountant.from_json(tree.attrs[D.ACCOUNTANT_ATTR])
    assert len(acc.ledger) == 1  # one release; sampling charged nothing
    assert tree.posterior["smoking_rate"].shape[:2] == (2, 300)
    tree.close()
    assert "smoking_rate[18-34, yes]" in capsys.readouterr().out


def test_dirichlet_release_example(tmp_path, capsys):
    out = _load("dirichlet_release").main(["--fast", "--out", str(tmp_path)])
    assert {"released.nc", "accountant.json", "released_cpt.png"} <= {p.name for p in out.iterdir()}
    tree = xr.open_datatree(out / "released.nc", engine="h5netcdf")
    assert tree.posterior["activity_given_weather"].shape == (1, 2, 3, 3)
    acc = Accountant.from_json((out / "accountant.json").read_text())
    assert tree.attrs[D.ACCOUNTANT_ATTR] == acc.to_json()
    # k draws of the whole CPT: one table entry (a move across rows is charged as such)
    assert [(e.mechanism, e.count) for e in acc.ledger] == [("dirichlet_table", 2)]
    tree.close()
    assert "refused before drawing" in capsys.readouterr().out
