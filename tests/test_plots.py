"""Tests of pymc_rdp.plots: every plot returns a matplotlib object, writes a PNG, and draws the
numbers it claims (closed-form RDP curves, the accountant's ε(δ), posterior means)."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from pymc_rdp import Accountant, DirichletMechanism, GaussianMechanism, LaplaceMechanism, plots
from pymc_rdp.privacy import rdp as _rdp


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture
def accountant() -> Accountant:
    acc = Accountant(budget=(4.0, 1e-6))
    acc.spend(GaussianMechanism(sigma=3.0), count=2, tag="gauss")
    acc.spend(LaplaceMechanism(scale=5.0, sensitivity=1.0), tag="lap")
    acc.spend(DirichletMechanism.calibrate(0.2, 5.0, math.sqrt(2.0), 1.0), tag="dir")
    return acc


def _line(ax: Axes, label: str):
    lines = [ln for ln in ax.get_lines() if ln.get_label() == label]
    assert len(lines) == 1, [ln.get_label() for ln in ax.get_lines()]
    return lines[0]


def _png(fig: Figure, path) -> None:
    fig.savefig(path)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 5_000


# ------------------------------------------------------------------------------------- RDP curve


def test_rdp_curve_of_accountant_draws_the_composed_curve(accountant, tmp_path):
    ax = plots.plot_rdp_curve(accountant)
    assert isinstance(ax, Axes)
    line = _line(ax, "composed RDP curve")
    orders = np.asarray(accountant.orders)
    curve = accountant.rdp()
    finite = np.isfinite(curve) & (curve > 0)
    np.testing.assert_array_equal(line.get_xdata(), orders[finite])
    np.testing.assert_array_equal(line.get_ydata(), curve[finite])
    # the Dirichlet entry makes the composed curve infinite at large orders: those are left out
    assert not finite.all()
    # one dashed line per distinct ledger entry, the best order of the (ε, δ) budget marked
    labels = [ln.get_label() for ln in ax.get_lines()]
    assert sum(lab.startswith("entry:") for lab in labels) == 3
    assert any(lab.startswith("best order") for lab in labels)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    _png(ax.figure, tmp_path / "rdp.png")


def test_rdp_curve_from_orders_matches_the_gaussian_closed_form(tmp_path):
    # Mironov 2017, Prop. 7: ε(α) = α Δ² / (2σ²)
    orders = np.array([1.5, 2.0, 4.0, 8.0, 16.0, 64.0])
    sigma = 2.5
    fig, ax = plt.subplots()
    out = plots.plot_rdp_curve(orders, _rdp.gaussian(orders, sigma), ax=ax, label="gauss")
    assert out is ax
    line = _line(ax, "gauss")
    np.testing.assert_allclose(line.get_ydata(), orders / (2 * sigma**2), rtol=1e-15)
    _png(fig, tmp_path / "g.png")


def test_rdp_curve_with_an_rdp_budget_marks_the_budget():
    acc = Accountant.at_order(1.0, 5.0)
    acc.spend(GaussianMechanism(sigma=4.0))
    ax = plots.plot_rdp_curve(acc)
    star = [ln for ln in ax.get_lines() if ln.get_label().startswith("budget")]
    assert len(star) == 1
    assert star[0].get_xdata()[0] == 5.0 and star[0].get_ydata()[0] == 1.0


def test_rdp_curve_bad_input():
    orders = np.array([2.0, 3.0])
    with pytest.raises(ValueError, match="curve"):
        plots.plot_rdp_curve(orders, np.array([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="curve"):
        plots.plot_rdp_curve(orders, np.array([1.0, -2.0]))
    with pytest.raises(TypeError, match="orders and curve"):
        plots.plot_rdp_curve(orders)
    with pytest.raises(ValueError, match="orders"):
        plots.plot_rdp_curve(np.array([0.5, 2.0]), np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="curve must be None"):
        plots.plot_rdp_curve(Accountant(), np.array([1.0]))


# ------------------------------------------------------------------------------------- ε(δ)


def test_epsilon_delta_matches_the_accountant(accountant, tmp_path):
    deltas = np.array([1e-10, 1e-8, 1e-6, 1e-4, 1e-2])
    ax = plots.plot_epsilon_delta(accountant, deltas)
    assert isinstance(ax, Axes)
    line = _line(ax, "ε(δ)")
    np.testing.assert_array_equal(line.get_xdata(), deltas)
    expected = [accountant.epsilon(d) for d in deltas]
    np.testing.assert_allclose(line.get_ydata(), expected, rtol=1e-12)
    # decreasing in δ, and Mironov's conversion is never tighter (Balle et al. 2020, Thm 21)
    assert np.all(np.diff(line.get_ydata()) < 0)
    mironov = _line(ax, "ε(δ), Mironov 2017 Prop. 3")
    assert np.all(mironov.get_ydata() >= line.get_ydata() - 1e-12)
    # the budget (4, 1e-6) is marked
    star = [ln for ln in ax.get_lines() if ln.get_label().startswith("budget")]
    assert star[0].get_xdata()[0] == 1e-6 and star[0].get_ydata()[0] == 4.0
    _png(ax.figure, tmp_path / "ed.png")


def test_epsilon_delta_default_grid_and_orders_input():
    orders = np.array([2.0, 4.0, 8.0, 16.0, 32.0])
    curve = _rdp.gaussian(orders, 3.0)
    d, eps, best = plots.epsilon_delta_curve(orders, curve)
    np.testing.assert_array_equal(d, plots.DEFAULT_DELTAS)
    for i in (0, 20, 44):
        e, o = _rdp.to_dp(orders, curve, d[i])
        assert eps[i] == pytest.approx(e, rel=1e-12)
        assert best[i] == o
    ax = plots.plot_epsilon_delta(orders, curve=curve, compare_mironov=False)
    assert [ln.get_label() for ln in ax.get_lines()] == ["ε(δ)"]


@pytest.mark.parametrize("deltas", [[0.0, 1e-6], [1e-6, 1.0], [np.nan], []])
def test_epsilon_delta_bad_deltas(accountant, deltas):
    with pytest.raises(ValueError, match="deltas"):
        plots.plot_epsilon_delta(accountant, deltas)


# ------------------------------------------------------------------------------ privacy–utility


def test_privacy_utility_averages_repeats(tmp_path):
    rows = []
    for m, base in (("dirichlet", -9.0), ("gaussian", -11.0), ("laplace", -12.0)):
        for e in (0.1, 1.0, 10.0):
            for rep in range(3):
                rows.append({"mechanism": m, "epsilon": e, "ll": base + math.log10(e) + rep})
    ax = plots.plot_privacy_utility(rows, y="ll", reference={"non-private": -8.0})
    assert isinstance(ax, Axes)
    for m, base in (("dirichlet", -9.0), ("gaussian", -11.0), ("laplace", -12.0)):
        line = _line(ax, m)
        np.testing.assert_allclose(line.get_xdata(), [0.1, 1.0, 10.0])
        np.testing.assert_allclose(line.get_ydata(), base + np.array([-1.0, 0.0, 1.0]) + 1.0)
    ref = _line(ax, "non-private")
    assert ref.get_ydata()[0] == -8.0
    assert len(ax.collections) == 3  # a shaded range per mechanism (3 repeats each)
    assert ax.get_xscale() == "log"
    _png(ax.figure, tmp_path / "pu.png")


def test_privacy_utility_accepts_a_dataframe_and_a_dict():
    import pandas as pd

    d = {"mechanism": ["a", "a"], "epsilon": [1.0, 2.0], "log_likelihood": [-3.0, -2.0]}
    for obj in (d, pd.DataFrame(d)):
        ax = plots.plot_privacy_utility(obj)
        np.testing.assert_array_equal(_line(ax, "a").get_ydata(), [-3.0, -2.0])
        assert len(ax.collections) == 0


def test_privacy_utility_bad_input():
    with pytest.raises(ValueError, match="missing column"):
        plots.plot_privacy_utility([{"mechanism": "a", "epsilon": 1.0}])
    with pytest.raises(ValueError, match="must be > 0"):
        plots.plot_privacy_utility([{"mechanism": "a", "epsilon": 0.0, "log_likelihood": 1.0}])
    with pytest.raises(TypeError, match="results"):
        plots.plot_privacy_utility(3.0)
    with pytest.raises(ValueError, match="empty"):
        plots.plot_privacy_utility({"mechanism": [], "epsilon": [], "log_likelihood": []})


# ------------------------------------------------------------------------------ CPT posterior


def _cpt_tree(chains: int = 2, draws: int = 200, seed: int = 5):
    rng = np.random.default_rng(seed)
    configs = [f"a={i},b=[{i}, {i + 1}]" for i in range(5)]
    states = ["low", "mid", "high"]
    alpha = np.array([[8.0, 3.0, 1.0]]) * np.arange(1, 6)[:, None]
    g = np.stack(
        [[[rng.dirichlet(alpha[c]) for c in range(5)] for _ in range(draws)] for _ in range(chains)]
    )
    assert g.shape == (chains, draws, 5, 3)
    dt = az.from_dict(
        {"posterior": {"x_cpt": g}},
        coords={"x_parent_config": configs, "x_state": states},
        dims={"x_cpt": ["x_parent_config", "x_state"]},
    )
    return dt, g, configs, states


def _forest_points(fig: Figure) -> np.ndarray:
    xs = []
    for ax in fig.axes:
        for coll in ax.collections:
            off = coll.get_offsets()
            if len(off):
                xs.extend(np.asarray(off)[:, 0].tolist())
    return np.sort(np.asarray(xs))


def test_cpt_posterior_draws_the_posterior_means(tmp_path):
    dt, g, configs, _states = _cpt_tree()
    fig = plots.plot_cpt_posterior(dt, "x", parent_configs=[configs[1], 3])
    assert isinstance(fig, Figure)
    means = g.mean(axis=(0, 1))[[1, 3]].ravel()
    np.testing.assert_allclose(_forest_points(fig), np.sort(means), rtol=1e-10)
    assert "mean, 50% and 94% intervals" in fig.get_suptitle()
    _png(fig, tmp_path / "cpt.png")


def test_cpt_posterior_defaults_and_single_draw(tmp_path):
    dt, g, _configs, _states = _cpt_tree()
    fig = plots.plot_cpt_posterior(dt, "x", max_configs=2, states=["high"])
    np.testing.assert_allclose(_forest_points(fig), np.sort(g.mean(axis=(0, 1))[:2, 2]), rtol=1e-10)
    one, g1, _, _ = _cpt_tree(chains=1, draws=1)
    fig = plots.plot_cpt_posterior(one, "x")
    np.testing.assert_allclose(_forest_points(fig), np.sort(g1[0, 0].ravel()), rtol=1e-12)
    assert "single draw" in fig.get_suptitle()
    _png(fig, tmp_path / "one.png")


def test_cpt_posterior_of_several_results(tmp_path):
    dt, g, configs, _states = _cpt_tree()
    one, g1, _, _ = _cpt_tree(chains=1, draws=1, seed=9)
    fig = plots.plot_cpt_posterior(
        {"posterior": dt, "release": one}, "x", parent_configs=[0, 2], states=["low", "mid"]
    )
    assert isinstance(fig, Figure)
    expected = np.concatenate(
        [g.mean(axis=(0, 1))[[0, 2]][:, :2].ravel(), g1[0, 0][[0, 2]][:, :2].ravel()]
    )
    np.testing.assert_allclose(_forest_points(fig), np.sort(expected), rtol=1e-10)
    assert fig.legends or any(ax.get_legend() for ax in fig.axes)
    _png(fig, tmp_path / "two.png")
    other = az.from_dict(
        {"posterior": {"x_cpt": g[:, :, :, :2]}},
        coords={"x_parent_config": configs, "x_state": ["a", "b"]},
        dims={"x_cpt": ["x_parent_config", "x_state"]},
    )
    with pytest.raises(ValueError, match="other parent configurations or states"):
        plots.plot_cpt_posterior({"a": dt, "b": other}, "x")
    with pytest.raises(ValueError, match="empty"):
        plots.plot_cpt_posterior({}, "x")


def test_cpt_posterior_bad_input():
    dt, *_ = _cpt_tree(chains=1, draws=20)
    with pytest.raises(ValueError, match="node"):
        plots.plot_cpt_posterior(dt, "y")
    with pytest.raises(ValueError, match="parent_configs"):
        plots.plot_cpt_posterior(dt, "x", parent_configs=["nope"])
    with pytest.raises(ValueError, match="parent_configs"):
        plots.plot_cpt_posterior(dt, "x", parent_configs=[7])
    with pytest.raises(ValueError, match="states"):
        plots.plot_cpt_posterior(dt, "x", states=["zzz"])
    with pytest.raises(ValueError, match="ci_prob"):
        plots.plot_cpt_posterior(dt, "x", ci_prob=0.3)
    with pytest.raises(ValueError, match="max_configs"):
        plots.plot_cpt_posterior(dt, "x", max_configs=0)
