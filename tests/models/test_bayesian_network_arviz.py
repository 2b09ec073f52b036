"""ArviZ on a whole network: the flat ``{node}_cell`` posterior layout and the coords property."""

from __future__ import annotations

import warnings

import matplotlib
import numpy as np
import pandas as pd
import pytest

from pymc_rdp import BayesianNetwork
from pymc_rdp.datasets import load_network, sample_network

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def insurance():
    model = load_network("insurance")  # 27 nodes: 2 dims per CPT would make 54 + chain, draw
    df = sample_network(model, 400, random_state=0)
    bn = BayesianNetwork(model).fit(df, mechanism="none")
    idata = bn.sample(draws=40, chains=2, random_seed=1)
    return bn, idata, df


def test_whole_network_summary_ess_rhat_forest(insurance) -> None:
    import arviz as az
    import matplotlib.pyplot as plt

    bn, idata, _ = insurance
    post = idata["posterior"]
    assert len(bn.nodes) == 27
    for v in bn.nodes:
        assert post[f"{v}_cpt"].dims == ("chain", "draw", f"{v}_cell")
    summary = az.summary(idata)  # raised "only supports up to 32 dimensions" with 2 dims per CPT
    cells = sum(len(bn.parent_configurations(v)) * bn.cards[v] for v in bn.nodes)
    assert summary.shape[0] == cells
    # readable labels: the root and a child's first cell, in declared state order
    age = [str(s) for s in bn.states["Age"]]
    assert list(summary.index[:3]) == [f"Age_cpt[Age={s}]" for s in age]
    first = bn.parent_configurations("PropCost")[0]
    label = f"PropCost_cpt[{first} | PropCost={bn.states['PropCost'][0]}]"
    assert label in summary.index
    # the summary's means are the exact draws' means, cell by cell
    draws = bn.cpt_draws(idata, "PropCost")
    np.testing.assert_allclose(
        summary.loc[label, "mean"], draws[:, 0, 0].mean(), atol=10**-2 + 1e-12
    )
    ess, rhat = az.ess(idata), az.rhat(idata)
    for v in bn.nodes:
        assert np.all(np.isfinite(ess[f"{v}_cpt"].to_numpy()))
        assert rhat[f"{v}_cpt"].dims == (f"{v}_cell",)
    assert float(max(rhat[k].max() for k in rhat.data_vars)) < 1.5
    az.plot_forest(idata, var_names=["Age_cpt", "ThisCarCost_cpt"])
    plt.close("all")


def test_cpt_draws_keep_the_table_shape(insurance) -> None:
    bn, idata, _ = insurance
    for v in ("Age", "PropCost", "MedCost"):
        draws = bn.cpt_draws(idata, v)
        assert draws.shape == (80, len(bn.parent_configurations(v)), bn.cards[v])
        np.testing.assert_allclose(draws.sum(axis=-1), 1.0, atol=1e-12)
        # the flat cell c·K + k is the table's (c, k)
        flat = idata["posterior"][f"{v}_cpt"].to_numpy().reshape(80, -1)
        np.testing.assert_array_equal(flat, draws.reshape(80, -1))
    frame = bn.cpt_frame("PropCost")
    assert list(frame.index) == bn.parent_configurations("PropCost")
    assert list(frame.columns) == [str(s) for s in bn.states["PropCost"]]


def test_posterior_predictive_on_the_whole_network(insurance) -> None:
    import pymc as pm

    bn, idata, df = insurance
    pp = pm.sample_posterior_predictive(
        idata, model=bn.model, var_names=["Age_counts", "PropCost_counts"], progressbar=False
    )
    counts = pp["posterior_predictive"]["Age_counts"].to_numpy()  # (chain, draw, 1, 3)
    assert counts.shape == (2, 40, 1, bn.cards["Age"])
    assert np.all(counts.sum(axis=-1) == len(df))
    # predictive frequencies follow the posterior draws of that CPT, not the prior
    theta = bn.cpt_draws(idata, "Age")[:, 0, :]
    freq = counts.reshape(80, -1) / len(df)
    assert np.max(np.abs(freq.mean(axis=0) - theta.mean(axis=0))) < 0.03


def test_coords_is_a_property_and_the_call_is_deprecated() -> None:
    states = {"a": ["lo", "hi"], "b": [0, 1, 2]}
    bn = BayesianNetwork({"a": [], "b": ["a"]}, states=states)
    # before a fit, from the declared states
    assert bn.parent_configurations("b") == ["a=lo", "a=hi"]
    assert bn.coords["a_cell"] == ["a=lo", "a=hi"]
    assert bn.coords["b_cell"][:4] == ["a=lo | b=0", "a=lo | b=1", "a=lo | b=2", "a=hi | b=0"]
    with pytest.warns(DeprecationWarning, match="coords is a property"):
        called = bn.coords()
    assert called == dict(bn.coords)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _ = bn.coords["b_cell"]


def test_parent_configurations_need_states_before_a_fit() -> None:
    bn = BayesianNetwork({"a": [], "b": ["a"]}, states={"b": [0, 1]})
    with pytest.raises(RuntimeError):
        bn.parent_configurations("b")  # a's states are unknown until a fit reads them
    with pytest.raises(RuntimeError):
        _ = bn.coords
    bn2 = BayesianNetwork({"a": [], "b": ["a"]}, states={"a": ["x", "y"]})
    assert bn2.parent_configurations("b") == ["a=x", "a=y"]  # b's own states are not needed
    df = pd.DataFrame({"a": ["x", "y", "x"], "b": [0, 1, 1]})
    bn.fit(df, mechanism="none")
    assert bn.parent_configurations("b") == ["a=x", "a=y"]
