"""``BayesianNetwork.fit(mechanism="randomized_response")``: the budget, the boundary (N public,
refusals before any noise is drawn, OS entropy), the moment estimate and the exact posterior."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import pymc_rdp as pmr
from pymc_rdp.models.network_randomized import calibrate_records, moment_cpts
from pymc_rdp.privacy.mechanisms.noise import NoiseSource, UnsafeNoiseSeed

STRUCTURE = {"smoker": [], "cough": ["smoker"], "colour": ["smoker"]}
STATES = {"smoker": [0, 1], "cough": [0, 1], "colour": [0, 1, 2]}


def _data(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    smoker = rng.integers(0, 2, n)
    cough = np.where(rng.random(n) < 0.2 + 0.5 * smoker, 1, 0)
    colour = np.where(smoker == 1, rng.integers(0, 3, n), rng.integers(0, 2, n))
    return pd.DataFrame({"smoker": smoker, "cough": cough, "colour": colour})


class _Recording(NoiseSource):
    secure = False

    def __init__(self) -> None:
        self.calls = 0
        self._inner = UnsafeNoiseSeed(1)

    def randbits(self, k: int) -> int:
        self.calls += 1
        return self._inner.randbits(k)

    def generator(self) -> np.random.Generator:
        self.calls += 1
        return self._inner.generator()


def _fit(df, **kw):
    bn = pmr.BayesianNetwork(STRUCTURE, states=STATES)
    options = {"epsilon": 3.0, "delta": 1e-6}
    options.update(kw)
    if "public_total" not in options:
        options["public_total"] = len(df)
    return bn.fit(df, mechanism="randomized_response", **options)


def test_one_charge_per_node_within_the_budget_and_n_declared_public():
    df = _data(400)
    bn = _fit(df, noise_source=UnsafeNoiseSeed(2))
    acc = bn.accountant
    assert sorted(e.tag for e in acc.ledger) == ["bn:colour", "bn:cough", "bn:smoker"]
    assert {e.mechanism for e in acc.ledger} == {"categorical_randomized_response"}
    assert all(e.count == 1 for e in acc.ledger)
    assert acc.epsilon(1e-6) <= 3.0 + 1e-12
    assert "public_total" in acc.to_json()
    assert bn.n_records == 400
    for v, r in bn.releases.items():
        assert r.values.shape == (400,)
        assert set(np.unique(r.values)) <= set(range(len(STATES[v])))
        assert r.total == 400.0
    # the ledger recomputes the same curve from its mechanisms
    back = pmr.Accountant.from_json(acc.to_json())
    np.testing.assert_allclose(back.rdp(), acc.rdp(), rtol=0)


def _spent(mechs, orders, order, delta) -> float:
    """ε spent by ``mechs`` composed: at ``order``, or at ``delta`` through the conversion."""
    acc = pmr.Accountant(orders=orders)
    for m in mechs:
        acc.spend(m)
    if order is not None:
        return float(np.interp(order, acc.orders, acc.rdp()))
    return acc.epsilon(delta)


@pytest.mark.parametrize(
    ("epsilon", "order", "delta"), [(1.0, 2.0, None), (3.0, None, 1e-6), (0.5, 8.0, None)]
)
def test_the_equal_share_is_the_largest_that_meets_the_budget(epsilon, order, delta):
    orders = np.asarray(pmr.Accountant().orders)
    mechs = calibrate_records([2, 2, 3], epsilon, order, delta, orders)
    share = math.log(mechs[0].p / mechs[0].q)
    assert all(math.log(m.p / m.q) <= share * (1 + 1e-12) for m in mechs)
    assert _spent(mechs, orders, order, delta) <= epsilon * (1 + 1e-9)
    more = [
        pmr.CategoricalRandomizedResponse.calibrate(share * 1.01, k, order=math.inf)
        for k in (2, 2, 3)
    ]
    assert _spent(more, orders, order, delta) > epsilon


@pytest.mark.parametrize(
    ("options", "err", "words"),
    [
        ({"public_total": None}, ValueError, "public_total=len"),
        ({"neighbours": "add-remove"}, ValueError, "replace-one"),
    ],
)
def test_refusals_come_before_any_noise_is_drawn(options, err, words):
    src = _Recording()
    with pytest.raises(err, match=words):
        _fit(_data(100), noise_source=src, **options)
    assert src.calls == 0


def test_a_release_over_the_remaining_budget_draws_nothing():
    src = _Recording()
    acc = pmr.Accountant((1.0, 1e-6))
    acc.spend(pmr.GaussianMechanism(8.0), tag="earlier")
    with pytest.raises(pmr.BudgetExceededError):
        _fit(_data(100), epsilon=1.0, accountant=acc, noise_source=src)
    assert src.calls == 0
    assert [e.tag for e in acc.ledger] == ["earlier"]


@pytest.mark.parametrize("engine", ["polars", "polars-lazy", "pyarrow", "duckdb"])
def test_every_engine_releases_what_pandas_releases(engine):
    pl = pytest.importorskip("polars")
    pa = pytest.importorskip("pyarrow")
    duckdb = pytest.importorskip("duckdb")
    df = _data(120)
    table = pa.Table.from_pandas(df, preserve_index=False)
    frame = {
        "polars": lambda: pl.from_arrow(table),
        "polars-lazy": lambda: pl.from_arrow(table).lazy(),
        "pyarrow": lambda: table,
        "duckdb": lambda: duckdb.from_arrow(table),
    }[engine]()
    on_pandas = _fit(df, noise_source=UnsafeNoiseSeed(4))
    on_engine = _fit(frame, noise_source=UnsafeNoiseSeed(4), public_total=len(df))
    for v in STRUCTURE:
        np.testing.assert_array_equal(on_engine.releases[v].values, on_pandas.releases[v].values)
    assert on_engine.accountant.to_json() == on_pandas.accountant.to_json()


def test_a_bad_value_on_an_engine_is_refused_before_any_noise():
    pl = pytest.importorskip("polars")
    df = _data(50)
    df.loc[3, "colour"] = 7
    src = _Recording()
    with pytest.raises(ValueError, match="'colour' has values outside"):
        _fit(pl.from_pandas(df), noise_source=src)
    assert src.calls == 0


def test_noise_comes_from_os_entropy_by_default():
    df = _data(300)
    a = _fit(df)
    b = _fit(df)
    assert any(not np.array_equal(a.releases[v].values, b.releases[v].values) for v in STRUCTURE)
    assert "unsafe_noise" not in a.accountant.to_json()


def test_the_moment_estimate_inverts_the_mechanisms():
    df = _data(4000, seed=3)
    codes = {v: df[v].to_numpy() for v in STRUCTURE}
    structure = pmr.BayesianNetwork(STRUCTURE, states=STATES).structure
    cards = {v: len(s) for v, s in STATES.items()}
    # with (almost) no noise the estimate is the data's CPT with the prior's α added
    quiet = {v: pmr.CategoricalRandomizedResponse(1 - 1e-12, cards[v]) for v in STRUCTURE}
    est = moment_cpts(codes, structure, cards, quiet, 1.0)
    table = pd.crosstab(df.smoker, df.cough).to_numpy() + 1.0
    np.testing.assert_allclose(est["cough"], table / table.sum(axis=1, keepdims=True), atol=1e-9)
    # with noise, the estimate from released rows is near the data's frequencies
    noisy = {v: pmr.CategoricalRandomizedResponse(0.8, cards[v]) for v in STRUCTURE}
    released = {v: noisy[v].release(codes[v], UnsafeNoiseSeed(i)) for i, v in enumerate(codes)}
    est = moment_cpts(released, structure, cards, noisy, 1.0)
    truth = pd.crosstab(df.smoker, df.colour, normalize="index").to_numpy()
    np.testing.assert_allclose(est["colour"], truth, atol=0.06)


def test_sample_draws_the_exact_posterior_by_data_augmentation():
    df = _data(1500, seed=5)
    bn = _fit(df, epsilon=9.0, noise_source=UnsafeNoiseSeed(4))
    assert "released_records" in bn.model.named_vars  # the exact likelihood, for sampler="nuts"
    idata = bn.sample(draws=400, tune=100, chains=2, random_seed=2, sampler="augmentation")
    assert idata["posterior"]["cough_cpt"].shape == (2, 400, 4)
    assert idata.attrs["sampler"] == "data_augmentation"
    mean = bn.cpt_draws(idata, "cough").mean(axis=0)
    truth = pd.crosstab(df.smoker, df.cough, normalize="index").to_numpy()
    np.testing.assert_allclose(mean, truth, atol=0.05)


@pytest.mark.parametrize(("p", "its", "tol"), [(0.7, 4000, 0.035), (0.5, 6000, 0.015)])
def test_iterations_per_draw_is_the_two_block_samplers_autocorrelation(p, its, tol):
    """A uniform ternary root randomised with p, sampled by two-block data augmentation
    (θ | x Dirichlet, each x | θ, ỹ exactly): θ's lag-one autocorrelation is 1 − (p − q)²."""
    from pymc_rdp.models.network_randomized import iterations_per_draw

    rng = np.random.default_rng(0)
    n, k = 2000, 3
    q = (1 - p) / (k - 1)
    x = rng.integers(0, k, n)
    released = np.where(rng.random(n) < p, x, (x + rng.integers(1, k, n)) % k)
    lik = np.where(np.arange(k)[None, :] == released[:, None], p, q)
    theta, trace = np.full(k, 1 / k), np.empty(its)
    for i in range(its):
        w = lik * theta
        z = (rng.random(n)[:, None] > np.cumsum(w / w.sum(1, keepdims=True), 1)).sum(1)
        theta = rng.dirichlet(np.bincount(z, minlength=k) + 1.0)
        trace[i] = theta[0]
    a = trace[200:] - trace[200:].mean()
    rho = float((a[1:] * a[:-1]).mean() / a.var())
    tau = iterations_per_draw(p, k)
    assert rho == pytest.approx((tau - 1) / (tau + 1), abs=tol)


def test_data_augmentation_warns_when_the_budget_leaves_little_information():
    bn = _fit(_data(200), epsilon=0.5, noise_source=UnsafeNoiseSeed(2))  # no warning here
    with pytest.warns(UserWarning, match=r"'colour' keeps its value with probability") as rec:
        bn.sample(draws=20, tune=10, chains=1, random_seed=1, sampler="augmentation")
    assert "iterations per effective draw" in str(rec[0].message)
    assert "sampler='nuts'" in str(rec[0].message)  # 12 joint states: NUTS is offered
    assert rec[0].filename == __file__  # points at the caller of sample


def test_few_joint_states_sample_with_nuts_by_default_many_with_data_augmentation():
    from pymc_rdp.models.posterior_sampling import resolve_sampler

    bn = _fit(_data(200), noise_source=UnsafeNoiseSeed(2))
    assert resolve_sampler(bn, None) == "nuts"  # 2 x 2 x 3 joint states
    assert resolve_sampler(bn, "augmentation") == "augmentation"
    nodes = [f"x{i}" for i in range(6)]  # 7^6 = 117,649 joint states: NUTS only on request
    rng = np.random.default_rng(0)
    wide = pmr.BayesianNetwork({v: [] for v in nodes}, states={v: list(range(7)) for v in nodes})
    wide.fit(
        pd.DataFrame({v: rng.integers(0, 7, 30) for v in nodes}),
        mechanism="randomized_response",
        epsilon=60.0,
        delta=1e-6,
        public_total=30,
        noise_source=UnsafeNoiseSeed(1),
    )
    assert resolve_sampler(wide, None) == "augmentation"
    assert resolve_sampler(wide, "nuts") == "nuts"


@pytest.mark.parametrize(
    ("p", "k", "err", "word"),
    [(0.2, 5, ValueError, "p"), (float("nan"), 3, ValueError, "p"), (0.9, 1, ValueError, "k")],
)
def test_iterations_per_draw_refuses_bad_input_by_name(p, k, err, word):
    from pymc_rdp.models.network_randomized import iterations_per_draw

    with pytest.raises(err, match=word):
        iterations_per_draw(p, k)
