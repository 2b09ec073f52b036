"""The ledger of private nodes: model transforms, results, netCDF round trip, attach/read."""

from __future__ import annotations

import json
import math

import numpy as np
import pymc as pm
import pytest
import xarray as xr
from pymc.model.fgraph import clone_model
from pymc.model.transform.conditioning import do, observe
from pymc.model.transform.optimization import freeze_dims_and_data

import pymc_rdp.distributions as D
from pymc_rdp.privacy.accountant import Accountant
from pymc_rdp.privacy.mechanisms import (
    DirichletMechanism,
    DiscreteLaplaceMechanism,
    UnsafeNoiseSeed,
)

LAP = DiscreteLaplaceMechanism(scale=4.0, sensitivity=2.0)
DIR = DirichletMechanism(r=0.5, alpha=20.0, l2_sensitivity=math.sqrt(2.0), linf_sensitivity=1.0)


@pytest.fixture
def private_model():
    acc = Accountant()
    rel = D.privatize(
        np.array([[3, 5], [6, 2]]), LAP, acc, "family-ab", noise_source=UnsafeNoiseSeed(0)
    )
    with pm.Model(coords={"row": ["r0", "r1"], "cell": ["c0", "c1"]}) as model:
        x = pm.Data("x", np.array([1.0, 2.0]))
        p = pm.Dirichlet("p", np.ones(2), dims=("row", "cell"))
        D.NoisyCounts("y", np.array([8, 8]), p, rel, dims=("row", "cell"))
        D.NoisyCounts("sim", 10, p[0], mechanism=LAP)  # free: simulates a release
        D.DirichletRelease("theta", np.array([4, 9, 2]), DIR)
        pm.Normal("z", x.sum(), 1.0)
    return model, acc


def _names(model):
    return sorted((e["name"], e["kind"], e["tag"]) for e in D.ledger(model))


EXPECTED = [
    ("sim", "noisy_counts", "sim"),
    ("theta", "dirichlet_release", "theta"),
    ("y", "noisy_counts", "family-ab"),
]


def test_ledger_lists_free_and_observed_private_nodes(private_model):
    model, _ = private_model
    entries = {e["name"]: e for e in D.ledger(model)}
    assert _names(model) == EXPECTED
    assert entries["y"]["observed"] and not entries["sim"]["observed"]
    assert entries["y"]["mechanism"] == LAP.to_dict()
    assert entries["y"]["neighbours"] == "replace-one"
    assert entries["y"]["entry"]["tag"] == "family-ab"
    assert entries["theta"]["mechanism"] == DIR.to_dict()
    with model:
        assert _names(None) == EXPECTED  # from the context


@pytest.mark.parametrize(
    "transform",
    [
        pytest.param(lambda m: m.copy(), id="copy"),
        pytest.param(clone_model, id="clone_model"),
        pytest.param(lambda m: do(m, {"z": 0.5}), id="do"),
        pytest.param(lambda m: do(m, {"p": np.full((2, 2), 0.5)}), id="do-parent"),
        pytest.param(lambda m: observe(m, {"sim": np.array([4.0, 6.0])}), id="observe"),
        pytest.param(freeze_dims_and_data, id="freeze_dims_and_data"),
        pytest.param(lambda m: freeze_dims_and_data(observe(m.copy(), {"z": 1.0})), id="chain"),
    ],
)
def test_ledger_survives_model_transforms(private_model, transform):
    model, _ = private_model
    new = transform(model)
    assert new is not model
    assert _names(new) == EXPECTED
    old = {e["name"]: e for e in D.ledger(model)}
    for e in D.ledger(new):
        same = {k: v for k, v in e.items() if k != "observed"}
        assert same == {k: v for k, v in old[e["name"]].items() if k != "observed"}
    # the transformed model still evaluates
    assert np.isfinite(new.compile_logp(mode="FAST_COMPILE")(new.initial_point()))


def test_observe_turns_a_simulated_node_into_an_observed_one(private_model):
    model, _ = private_model
    new = observe(model, {"sim": np.array([4.0, 6.0])})
    assert {e["name"]: e["observed"] for e in D.ledger(new)}["sim"] is True


@pytest.mark.filterwarnings("ignore:.*(rhat|effective sample size).*:UserWarning")
def test_sample_stores_the_ledger_and_netcdf_round_trip_is_byte_exact(tmp_path):
    acc = Accountant()
    rel = D.privatize(np.array([7, 13]), LAP, acc, "counts", noise_source=UnsafeNoiseSeed(1))
    with pm.Model() as model:
        p = pm.Dirichlet("p", np.ones(2))
        D.NoisyCounts("y", 20, p, rel)
    before = acc.to_json()
    idata = D.sample(
        100,
        tune=100,
        chains=2,
        cores=1,
        model=model,
        accountant=acc,
        random_seed=2,
        progressbar=False,
        compute_convergence_checks=False,
    )
    assert acc.to_json() == before  # sampling never charges
    ledger_json = idata.attrs[D.LEDGER_ATTR]
    acc_json = idata.attrs[D.ACCOUNTANT_ATTR]
    assert isinstance(ledger_json, str) and json.loads(ledger_json) == D.ledger(model)
    assert acc_json == before

    with model:
        pm.sample_posterior_predictive(
            idata, extend_inferencedata=True, progressbar=False, random_seed=3
        )
    assert "posterior_predictive" in idata.children
    assert idata.posterior_predictive["y"].shape == (2, 100, 2)
    assert idata.attrs[D.LEDGER_ATTR] == ledger_json

    path = tmp_path / "posterior.nc"
    idata.to_netcdf(path, engine="h5netcdf")
    back = xr.open_datatree(path, engine="h5netcdf")
    assert back.attrs[D.LEDGER_ATTR].encode() == ledger_json.encode()
    assert back.attrs[D.ACCOUNTANT_ATTR].encode() == acc_json.encode()
    read = D.read_ledger(back)
    assert read["nodes"] == D.ledger(model)
    assert read["accountant"].to_json() == before
    back.close()


def test_attach_ledger_to_any_tree():
    acc = Accountant()
    D.privatize(np.array([1, 2]), LAP, acc, "t", noise_source=UnsafeNoiseSeed(0))
    with pm.Model() as model:
        D.NoisyCounts("y", 3, np.array([0.5, 0.5]), mechanism=LAP, observed=[1.0, 2.0])
    tree = xr.DataTree.from_dict(
        {"posterior": xr.Dataset({"a": (("chain", "draw"), np.ones((1, 3)))})}
    )
    assert D.attach_ledger(tree, model) is tree
    assert json.loads(tree.attrs[D.LEDGER_ATTR])[0]["name"] == "y"
    assert D.ACCOUNTANT_ATTR not in tree.attrs
    D.attach_ledger(tree, acc)
    assert tree.attrs[D.ACCOUNTANT_ATTR] == acc.to_json()
    D.attach_ledger(tree, model=model, accountant=acc)
    assert D.read_ledger(tree)["accountant"].to_json() == acc.to_json()


def test_attach_ledger_bad_input():
    tree = xr.DataTree()
    with pytest.raises(ValueError, match="nothing to attach"):
        D.attach_ledger(tree)
    with pytest.raises(TypeError, match=r"source must be a pymc\.Model or an Accountant"):
        D.attach_ledger(tree, "ledger")
    with pytest.raises(TypeError, match=r"idata must be an xarray\.DataTree"):
        D.attach_ledger({"a": 1}, Accountant())
    with pytest.raises(TypeError, match=r"model must be a pymc\.Model"):
        D.ledger("model")


def test_sample_refuses_a_free_dirichlet_release():
    with pm.Model() as model:
        D.DirichletRelease("theta", np.array([4, 9, 2]), DIR)
    with pytest.raises(ValueError, match="draws must be exact and charged"):
        D.sample(10, model=model, tune=10, progressbar=False)


def test_resizing_keeps_the_record_and_ops_with_different_records_differ():
    from pymc.distributions.shape_utils import change_dist_size

    rv = D.NoisyCounts.dist(10, np.array([0.5, 0.5]), mechanism=LAP, tag="a")
    bigger = change_dist_size(rv, (4,))
    assert bigger.owner.op.record == rv.owner.op.record
    assert pm.draw(bigger, random_seed=1).shape == (4, 2)
    other = D.NoisyCounts.dist(10, np.array([0.5, 0.5]), mechanism=LAP, tag="b")
    assert rv.owner.op != other.owner.op
    theta = D.DirichletRelease.dist(np.array([1, 2]), mechanism=DIR)
    assert change_dist_size(theta, (3,)).owner.op.record == theta.owner.op.record
