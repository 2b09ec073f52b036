"""The report's posterior section: populated configurations by released values, diagnostics."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pymc_rdp import BayesianNetwork, UnsafeNoiseSeed
from pymc_rdp.bn.structure import family_marginal
from pymc_rdp.cli.report_posterior import diagnostics, populated_configs, posterior_section

STRUCTURE = {"a": [], "c": ["a"]}
STATES = {"a": ["lo", "mid", "hi"], "c": ["yes", "no"]}  # not alphabetical on purpose


@pytest.fixture
def records() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    a = rng.choice(STATES["a"], size=600, p=[0.6, 0.3, 0.1])
    c = np.where(rng.random(600) < 0.7, "yes", "no")
    return pd.DataFrame({"a": a, "c": c})


def test_populated_configs_follow_the_released_counts_not_the_raw_ones(records) -> None:
    bn = BayesianNetwork(STRUCTURE, states=STATES).fit(
        records,
        mechanism="laplace",
        epsilon=0.05,  # coarse noise: released and raw row sums can differ in order
        order=5.0,
        noise_aware=False,
        noise_source=UnsafeNoiseSeed(5),
    )
    released = np.asarray(bn.releases["c"].values, dtype=float).reshape(3, 2).sum(axis=1)
    expected = [int(i) for i in np.argsort(-released, kind="stable")]
    assert populated_configs(bn, "c", k=3) == expected
    assert populated_configs(bn, "c", k=2) == expected[:2]
    assert populated_configs(bn, "a", k=3) == [0]  # a root has one configuration


def test_populated_configs_of_released_cpts_use_the_released_network(records) -> None:
    bn = BayesianNetwork(STRUCTURE, states=STATES).fit(
        records, mechanism="dirichlet", epsilon=1.0, order=5.0, noise_source=UnsafeNoiseSeed(2)
    )
    weight = family_marginal(bn.structure, "c", bn.cpts, bn.cards)
    assert populated_configs(bn, "c", k=3) == [int(i) for i in np.argsort(-weight, kind="stable")]
    bn.sample(sampler="nuts")  # the released CPTs as one draw
    text = "\n".join(posterior_section(bn, bn.idata))
    assert "Convergence diagnostics: none" in text
    assert "| parent configuration | yes | no |" in text  # declared order
    assert "[" not in text.split("**c**")[1]  # one released value: no interval


def _idata(shift: float, diverging: int = 0):
    import arviz as az

    rng = np.random.default_rng(1)
    x = rng.normal(size=(4, 500, 2)) + shift * np.arange(4)[:, None, None]
    div = np.zeros((4, 500), dtype=bool)
    div.flat[:diverging] = True
    return az.from_dict(
        {"posterior": {"x": x}, "sample_stats": {"diverging": div}}, dims={"x": ["k"]}
    )


def test_diagnostics_pass_on_independent_chains_and_fail_with_a_warning() -> None:
    good = diagnostics(_idata(0.0))
    assert good["ok"] and good["max_rhat"] < 1.01 and good["min_ess_bulk"] > 1000
    assert good["divergences"] == 0
    stuck = diagnostics(_idata(3.0))  # chains in different places
    assert not stuck["ok"] and stuck["max_rhat"] > 1.5
    diverged = diagnostics(_idata(0.0, diverging=3))
    assert diverged["divergences"] == 3 and not diverged["ok"]
    # per variable: the entries, how many miss the r̂ bar, and the entry of lowest ESS
    assert good["per_variable"]["x"]["entries"] == 2
    assert good["per_variable"]["x"]["over_rhat"] == 0
    assert stuck["per_variable"]["x"]["over_rhat"] == 2
    assert stuck["per_variable"]["x"]["max_rhat"] == stuck["max_rhat"]


def test_section_shows_means_intervals_and_the_warning(records) -> None:
    import arviz as az

    bn = BayesianNetwork(STRUCTURE, states=STATES).fit(records, mechanism="none")
    idata = bn.sample(draws=1000, chains=4, random_seed=0)  # exact independent draws
    text = "\n".join(posterior_section(bn, idata))
    assert "max r̂" in text and "Warning" not in text
    assert "| variable | entries | max r̂ |" in text
    assert "| c_cpt | 6 | " in text
    draws = bn.cpt_draws(idata, "c")
    top = populated_configs(bn, "c", 1)[0]
    lo, hi = np.quantile(draws[:, top, 0], [0.03, 0.97])
    row = f"| {bn.parent_configurations('c')[top]} | {draws[:, top, 0].mean():.3f} "
    assert row + f"[{lo:.3f}, {hi:.3f}]" in text
    # chains that disagree get the warning
    post = idata["posterior"]
    data = {k: post[k].to_numpy() + 0.2 * np.arange(4)[:, None, None] for k in post.data_vars}
    bad = az.from_dict(
        {"posterior": data},
        coords=dict(bn.coords),
        dims={f"{v}_cpt": [f"{v}_cell"] for v in bn.nodes},
    )
    warned = "\n".join(posterior_section(bn, bad))
    assert "**Warning: the sampler has not converged**" in warned
    assert "run longer (`--draws`, `--tune`, `--chains`)." in warned
    # chains cut by a time limit: the advice names the limit first
    bad.attrs["time_limit"] = 12.5
    warned = "\n".join(posterior_section(bn, bad))
    assert "run longer (a longer `--time-limit` than 12.5 s, or more `--draws`" in warned
