"""Private naive Bayes: scikit-learn API, budget accounting, release order, utility, bad input."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone, is_classifier
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import cross_val_score
from sklearn.naive_bayes import CategoricalNB
from sklearn.utils.estimator_checks import check_estimator

from pymc_rdp import datasets
from pymc_rdp.models.naive_bayes import NaiveBayes
from pymc_rdp.privacy import rdp
from pymc_rdp.privacy.accountant import Accountant, BudgetExceededError
from pymc_rdp.privacy.mechanisms import (
    DirichletMechanism,
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    GaussianMechanism,
    UnsafeNoiseSeed,
)

PRIVATE = ["dirichlet", "gaussian", "laplace"]
# the public domain of the toy data, and the explicit opt-in to read it from the records
TOY_DOMAIN = {
    "categories": {"a": ["x", "y", "z"], "b": [0, 1, 2, 3], "c": ["p", "q"]},
    "classes": ["no", "yes"],
}
FROM_DATA = {"categories": "from-data", "classes": "from-data"}
MECHANISM_CLASS = {
    "dirichlet": DirichletMechanism,
    "gaussian": DiscreteGaussianMechanism,
    "laplace": DiscreteLaplaceMechanism,
}


@pytest.fixture(scope="module")
def german() -> tuple[pd.DataFrame, pd.DataFrame, pd.Series, pd.Series]:
    return datasets.paper_split("german_credit")


def _toy(rng: np.random.Generator, n: int = 400) -> tuple[pd.DataFrame, np.ndarray]:
    y = rng.choice(["no", "yes"], size=n, p=[0.6, 0.4])
    a = np.where(y == "yes", rng.choice(["x", "y", "z"], size=n, p=[0.7, 0.2, 0.1]), "y")
    b = rng.integers(0, 4, size=n)
    c = rng.choice(["p", "q"], size=n)
    return pd.DataFrame({"a": a, "b": b, "c": c}), y


# ------------------------------------------------------------------------------------------------
# scikit-learn API
# ------------------------------------------------------------------------------------------------


def test_sklearn_api_basics(rng: np.random.Generator) -> None:
    X, y = _toy(rng)
    model = NaiveBayes(
        mechanism="gaussian", epsilon=2.0, noise_source=UnsafeNoiseSeed(0), **TOY_DOMAIN
    )
    assert is_classifier(model)
    params = model.get_params()
    assert params["mechanism"] == "gaussian"
    assert params["epsilon"] == 2.0
    assert set(params) == {
        "mechanism",
        "epsilon",
        "order",
        "delta",
        "neighbours",
        "alpha0",
        "smoothing",
        "accountant",
        "categories",
        "classes",
        "noise_source",
    }
    twin = clone(model)
    assert twin.get_params() == params
    assert twin is not model
    model.set_params(mechanism="laplace", epsilon=3.0)
    assert model.mechanism == "laplace"
    assert model.fit(X, y) is model
    np.testing.assert_array_equal(model.classes_, ["no", "yes"])
    proba = model.predict_proba(X)
    assert proba.shape == (len(X), 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(np.log(proba), model.predict_log_proba(X), atol=1e-12)
    assert set(model.predict(X)) <= {"no", "yes"}
    assert 0.0 <= model.score(X, y) <= 1.0
    assert model.n_features_in_ == 3
    np.testing.assert_array_equal(model.feature_names_in_, ["a", "b", "c"])
    assert isinstance(model.accountant_, Accountant)
    # the constructor parameter is left untouched
    assert model.accountant is None


@pytest.mark.parametrize("mechanism", ["none", "dirichlet"])
def test_sklearn_estimator_checks(mechanism: str) -> None:
    # The checks refit the estimator and its clones hundreds of times. Every private fit is
    # charged to one shared accountant, so they need an accountant whose budget covers them all
    # (here: none, an accountant without a limit); it must collect every fit. A private fit
    # reads the domain from sklearn's probe data only under the explicit opt-in.
    acc = Accountant() if mechanism != "none" else None
    kw = {**FROM_DATA, "accountant": acc} if mechanism != "none" else {}
    with warnings.catch_warnings():
        # sklearn's own checks emit SkipTestWarning and cast warnings on their probe data
        warnings.simplefilter("ignore")
        results = check_estimator(
            NaiveBayes(mechanism=mechanism, noise_source=UnsafeNoiseSeed(0), **kw), on_fail=None
        )
    failed = [r for r in results if r["status"] == "failed"]
    # the only failures allowed: probe data of real numbers, refused as a domain (binning advice)
    for r in failed:
        cause = r["exception"].__cause__ or r["exception"]
        assert "non-integral numbers and cannot be a domain" in str(cause), r["check_name"]
    assert len(failed) <= (1 if mechanism != "none" else 0)
    assert sum(r["status"] == "passed" for r in results) > 40
    if acc is not None:
        assert sum(e.tag == "naive_bayes/class" for e in acc.ledger) > 40


def test_cross_val_score_clones(german: tuple) -> None:
    X_train, _, y_train, _ = german
    # five fits on the private data: the accountant must afford five budgets of ε = 1
    acc = Accountant.at_order(5.0, 5.0)
    model = NaiveBayes(
        mechanism="dirichlet",
        epsilon=1.0,
        order=5.0,
        noise_source=UnsafeNoiseSeed(0),
        accountant=acc,
        **FROM_DATA,
    )
    scores = cross_val_score(model, X_train, y_train)
    assert sum(e.tag == "naive_bayes/class" for e in acc.ledger) == 5
    assert scores.shape == (5,)
    assert np.all((scores > 0.4) & (scores <= 1.0))


def test_numpy_input(rng: np.random.Generator) -> None:
    X, y = _toy(rng)
    model = NaiveBayes(mechanism="none").fit(X.to_numpy(), y)
    assert not hasattr(model, "feature_names_in_")
    ref = NaiveBayes(mechanism="none").fit(X, y)
    np.testing.assert_allclose(model.predict_proba(X.to_numpy()), ref.predict_proba(X))


def test_non_private_matches_sklearn_categorical_nb(german: tuple) -> None:
    X_train, X_test, y_train, _ = german
    ours = NaiveBayes(mechanism="none", smoothing=0.1).fit(X_train, y_train)
    ordinal_train = np.column_stack(
        [ours._encode(X_train.iloc[:, i], ours.categories_[i]) for i in range(X_train.shape[1])]
    )
    ordinal_test = np.column_stack(
        [ours._encode(X_test.iloc[:, i], ours.categories_[i]) for i in range(X_test.shape[1])]
    )
    seen = (ordinal_test >= 0).all(axis=1)  # CategoricalNB cannot handle unseen states
    assert seen.sum() > 250
    X_test, ordinal_test = X_test[seen], ordinal_test[seen]
    prior = np.exp(ours.class_log_prior_)
    sk = CategoricalNB(
        alpha=0.1,
        class_prior=prior,
        min_categories=[len(c) for c in ours.categories_],
    ).fit(ordinal_train, y_train)
    for mine, theirs in zip(ours.feature_log_prob_, sk.feature_log_prob_, strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=1e-12)
    np.testing.assert_allclose(
        ours.predict_proba(X_test), sk.predict_proba(ordinal_test), rtol=1e-9, atol=1e-12
    )
    counts = y_train.value_counts().reindex(ours.classes_).to_numpy()
    np.testing.assert_allclose(prior, (counts + 0.1) / (counts.sum() + 0.2), rtol=1e-12)


# ------------------------------------------------------------------------------------------------
# Budget
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", PRIVATE)
@pytest.mark.parametrize("neighbours", ["replace-one", "add-remove"])
@pytest.mark.parametrize("epsilon", [0.03, 1.0])
def test_budget_at_order(
    mechanism: str, neighbours: str, epsilon: float, rng: np.random.Generator
) -> None:
    X, y = _toy(rng)
    model = NaiveBayes(
        mechanism=mechanism,
        epsilon=epsilon,
        order=5.0,
        neighbours=neighbours,
        noise_source=UnsafeNoiseSeed(1),
        **TOY_DOMAIN,
    ).fit(X, y)
    acc = model.accountant_
    spent = float(acc.rdp([5.0])[0])
    assert spent <= epsilon
    assert spent >= epsilon * (1 - 1e-6)  # the budget is used, not wasted
    # K + 1 = 4 tables; each feature table has one entry per class row
    assert len(acc.ledger) == 1 + 3 * 2
    # Independent recomputation: 4 sequential tables, rows in parallel -> 4 x one row's curve.
    mech = model.mechanism_
    d1, d2, dinf = (2.0, math.sqrt(2.0), 1.0) if neighbours == "replace-one" else (1.0, 1.0, 1.0)
    if mechanism == "gaussian":
        one = rdp.discrete_gaussian(5.0, mech.sigma, d2)
        assert mech.sensitivity == d2
    elif mechanism == "laplace":
        one = rdp.discrete_laplace(5.0, mech.scale, d1)
        assert mech.sensitivity == d1
    else:
        one = rdp.dirichlet(5.0, mech.r, mech.alpha, d2, dinf)
        assert mech.l2_sensitivity == d2
        assert mech.linf_sensitivity == dinf
    assert 4 * float(one) == pytest.approx(spent, rel=1e-12)
    assert 4 * float(one) <= epsilon * (1 + 1e-15)


@pytest.mark.parametrize("mechanism", PRIVATE)
@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_budget_epsilon_delta(mechanism: str, epsilon: float, rng: np.random.Generator) -> None:
    X, y = _toy(rng)
    delta = 1e-6
    model = NaiveBayes(
        mechanism=mechanism,
        epsilon=epsilon,
        delta=delta,
        noise_source=UnsafeNoiseSeed(2),
        **TOY_DOMAIN,
    ).fit(X, y)
    acc = model.accountant_
    assert acc.epsilon(delta) <= epsilon
    assert acc.epsilon(delta) >= 0.999 * epsilon
    orders = acc.orders
    composed = 4 * model.mechanism_.rdp(orders)
    np.testing.assert_allclose(acc.rdp(), composed, rtol=1e-12)
    # Independent conversion (Google's dp-accounting) of the composed curve: the discrete
    # mechanisms are calibrated on their RDP curves (the continuous Gaussian's exact composition
    # does not apply to the discrete Gaussian)
    finite = np.isfinite(composed)
    eps_dp, _ = compute_epsilon(orders[finite], composed[finite], delta)
    assert eps_dp <= epsilon * (1 + 1e-9)


def test_discrete_gaussian_noise_is_calibrated_to_its_curve(rng: np.random.Generator) -> None:
    X, y = _toy(rng)
    model = NaiveBayes(mechanism="gaussian", epsilon=1.0, delta=1e-6, **TOY_DOMAIN).fit(X, y)
    mech = model.mechanism_
    assert isinstance(mech, DiscreteGaussianMechanism)
    # 1% less noise on the four tables does not fit into the same budget
    fresh = Accountant(budget=(1.0, 1e-6))
    assert not fresh.can_spend(
        DiscreteGaussianMechanism(0.99 * mech.sigma, math.sqrt(2.0)), count=4
    )
    assert fresh.can_spend(mech, count=4)


@settings(max_examples=25, deadline=None)
@given(
    mechanism=st.sampled_from(PRIVATE),
    epsilon=st.floats(1e-3, 20.0),
    order=st.floats(1.5, 64.0),
    neighbours=st.sampled_from(["replace-one", "add-remove"]),
    n_features=st.integers(1, 6),
    n_classes=st.integers(2, 4),
    seed=st.integers(0, 2**16),
)
def test_budget_never_exceeded_property(
    mechanism: str,
    epsilon: float,
    order: float,
    neighbours: str,
    n_features: int,
    n_classes: int,
    seed: int,
) -> None:
    gen = np.random.default_rng(seed)
    X = gen.integers(0, 3, size=(60, n_features))
    y = np.arange(60) % n_classes
    model = NaiveBayes(
        mechanism=mechanism,
        epsilon=epsilon,
        order=order,
        neighbours=neighbours,
        noise_source=UnsafeNoiseSeed(seed),
        categories=[[0, 1, 2]] * n_features,
        classes=list(range(n_classes)),
    ).fit(X, y)
    assert float(model.accountant_.rdp([order])[0]) <= epsilon
    assert len(model.accountant_.ledger) == 1 + n_features * n_classes
    proba = model.predict_proba(X)
    assert np.isfinite(proba).all()
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)


def test_colliding_column_names_get_distinct_groups() -> None:
    X = pd.DataFrame({1: ["a", "b", "a", "b"], "1": ["x", "x", "y", "y"]})
    model = NaiveBayes(
        mechanism="laplace",
        noise_source=UnsafeNoiseSeed(0),
        categories=[["a", "b"], ["x", "y"]],
        classes=[0, 1],
    ).fit(X, [0, 1, 0, 1])
    groups = [e.group for e in model.accountant_.ledger[1:]]
    assert len(set(groups)) == 2
    assert float(model.accountant_.rdp([5.0])[0]) == pytest.approx(1.0, rel=1e-6)


def test_shared_accountant_composes_sequentially(rng: np.random.Generator) -> None:
    X, y = _toy(rng)
    acc = Accountant.at_order(2.0, 5.0)
    kw = {"mechanism": "gaussian", "epsilon": 0.5, "accountant": acc, **TOY_DOMAIN}
    NaiveBayes(noise_source=UnsafeNoiseSeed(0), **kw).fit(X, y)
    first = float(acc.rdp([5.0])[0])
    NaiveBayes(noise_source=UnsafeNoiseSeed(1), **kw).fit(X, y)
    assert float(acc.rdp([5.0])[0]) == pytest.approx(2 * first, rel=1e-12)
    assert first == pytest.approx(0.5, rel=1e-6)


def test_over_budget_refused_before_any_release(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    X, y = _toy(rng)
    acc = Accountant.at_order(1.0, 5.0)
    acc.spend(GaussianMechanism(sigma=3.0), tag="earlier")
    before = acc.to_json()
    calls: list[int] = []
    original = DiscreteGaussianMechanism.release

    def spy(self: DiscreteGaussianMechanism, value: object, rng: object = None) -> np.ndarray:
        calls.append(1)
        return original(self, value, rng)

    monkeypatch.setattr(DiscreteGaussianMechanism, "release", spy)
    model = NaiveBayes(
        mechanism="gaussian",
        epsilon=1.0,
        accountant=acc,
        noise_source=UnsafeNoiseSeed(0),
        **TOY_DOMAIN,
    )
    with pytest.raises(BudgetExceededError, match="cannot afford"):
        model.fit(X, y)
    assert calls == []
    assert acc.to_json() == before


@pytest.mark.parametrize("mechanism", PRIVATE)
def test_each_table_charged_before_its_release(
    mechanism: str, rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    X, y = _toy(rng)
    acc = Accountant()
    cls = MECHANISM_CLASS[mechanism]
    seen: list[tuple[int, np.ndarray]] = []
    original = cls.release

    def spy(self: object, value: object, rng: object = None) -> np.ndarray:
        seen.append((len(acc.ledger), np.array(value, dtype=np.float64)))
        return original(self, value, rng)

    monkeypatch.setattr(cls, "release", spy)
    NaiveBayes(
        mechanism=mechanism,
        epsilon=1.0,
        accountant=acc,
        noise_source=UnsafeNoiseSeed(0),
        **TOY_DOMAIN,
    ).fit(X, y)
    # the whole fit is charged (1 class entry, 2 row entries per feature table) before the
    # first table is drawn: every table is charged before its release, and before any other's
    assert [n for n, _ in seen] == [7, 7, 7, 7]
    # The class table is released from N_j, one count per record (not K x N_j).
    class_counts = seen[0][1]
    np.testing.assert_array_equal(class_counts, [np.sum(y == "no"), np.sum(y == "yes")])
    assert class_counts.sum() == len(y)
    # Feature tables are class x state counts
    np.testing.assert_array_equal(seen[1][1], pd.crosstab(y, X["a"]).to_numpy())
    tags = [e.tag for e in acc.ledger]
    assert tags[0] == "naive_bayes/class"
    assert tags[1:3] == ["naive_bayes/feature/a"] * 2
    assert {e.partition for e in acc.ledger[1:3]} == {"no", "yes"}


def test_class_sensitivity_in_ledger(rng: np.random.Generator) -> None:
    X, y = _toy(rng)
    for neighbours, expected in (("replace-one", math.sqrt(2.0)), ("add-remove", 1.0)):
        model = NaiveBayes(
            mechanism="gaussian",
            neighbours=neighbours,
            noise_source=UnsafeNoiseSeed(0),
            **TOY_DOMAIN,
        ).fit(X, y)
        entry = model.accountant_.ledger[0]
        assert entry.tag == "naive_bayes/class"
        assert entry.params["sensitivity"] == expected


def test_laplace_curve_superadditive_in_sensitivity() -> None:
    # Justifies charging a table whose record changed class (two rows, one count each) as one
    # replace-one row: 2 ε(λ; Δ₁=1) <= ε(λ; Δ₁=2).
    orders = np.concatenate([np.linspace(1.01, 10, 40), np.geomspace(10, 1e5, 20)])
    for scale in np.geomspace(0.05, 500, 25):
        one = rdp.laplace(orders, scale, 1.0)
        two = rdp.laplace(orders, scale, 2.0)
        assert np.all(2 * one <= two * (1 + 1e-12))


def test_reproducible(rng: np.random.Generator) -> None:
    X, y = _toy(rng)
    a = NaiveBayes(mechanism="dirichlet", noise_source=UnsafeNoiseSeed(7), **TOY_DOMAIN).fit(X, y)
    b = NaiveBayes(mechanism="dirichlet", noise_source=UnsafeNoiseSeed(7), **TOY_DOMAIN).fit(X, y)
    c = NaiveBayes(mechanism="dirichlet", noise_source=UnsafeNoiseSeed(8), **TOY_DOMAIN).fit(X, y)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    assert not np.array_equal(a.predict_proba(X), c.predict_proba(X))


# ------------------------------------------------------------------------------------------------
# Utility: the paper's headline comparison on German credit
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [0.01, 0.1, 1.0])
def test_dirichlet_beats_gaussian_and_laplace_on_german_credit(
    epsilon: float, german: tuple
) -> None:
    X_train, X_test, y_train, y_test = german
    mean = {}
    for mechanism in PRIVATE:
        ce = [
            NaiveBayes(
                mechanism=mechanism,
                epsilon=epsilon,
                order=5.0,
                noise_source=UnsafeNoiseSeed(seed),
                **FROM_DATA,
            )
            .fit(X_train, y_train)
            .cross_entropy(X_test, y_test)
            for seed in range(4)
        ]
        mean[mechanism] = float(np.mean(ce))
    assert mean["dirichlet"] < mean["gaussian"]
    assert mean["dirichlet"] < mean["laplace"]
    # and the private fits converge to the non-private one as ε grows
    if epsilon == 1.0:
        mle = NaiveBayes(mechanism="none").fit(X_train, y_train).cross_entropy(X_test, y_test)
        assert mle < mean["dirichlet"] < 2.0


# ------------------------------------------------------------------------------------------------
# Unseen states and missing values
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", ["none", "dirichlet"])
def test_unseen_and_missing_states_are_left_out(mechanism: str, rng: np.random.Generator) -> None:
    X, y = _toy(rng)
    model = NaiveBayes(mechanism=mechanism, noise_source=UnsafeNoiseSeed(3), **TOY_DOMAIN).fit(X, y)
    odd = X.iloc[:3].copy().astype(object)
    odd.loc[odd.index[0], "a"] = "never-seen"
    odd.loc[odd.index[1], "a"] = np.nan
    odd.loc[odd.index[2], "a"] = None
    proba = model.predict_proba(odd)
    assert np.isfinite(proba).all()
    # Leaving feature "a" out = the prior and the other two features' likelihoods.
    jll = model.class_log_prior_.copy()
    jll = np.tile(jll, (3, 1))
    for j, col in ((1, "b"), (2, "c")):
        idx = [list(model.categories_[j]).index(v) for v in odd[col]]
        jll += model.feature_log_prob_[j][:, idx].T
    expected = np.exp(jll - np.logaddexp.reduce(jll, axis=1, keepdims=True))
    np.testing.assert_allclose(proba, expected, rtol=1e-12)


def test_missing_values_in_training_are_skipped(rng: np.random.Generator) -> None:
    X, y = _toy(rng)
    X = X.astype(object)
    X.loc[X.index[:50], "a"] = np.nan
    model = NaiveBayes(mechanism="none", smoothing=0.5).fit(X, y)
    assert list(model.categories_[0]) == ["x", "y", "z"]
    kept = X["a"].notna()
    table = pd.crosstab(y[kept.to_numpy()], X.loc[kept, "a"]).to_numpy().astype(float)
    expected = np.log((table + 0.5) / (table.sum(axis=1, keepdims=True) + 3 * 0.5))
    np.testing.assert_allclose(model.feature_log_prob_[0], expected, rtol=1e-12)


def test_explicit_categories(rng: np.random.Generator) -> None:
    X, y = _toy(rng)
    cats = [["x", "y", "z", "w"], [0, 1, 2, 3, 4], ["p", "q"]]
    model = NaiveBayes(
        mechanism="laplace", categories=cats, classes=["no", "yes"], noise_source=UnsafeNoiseSeed(0)
    ).fit(X, y)
    assert [len(c) for c in model.categories_] == [4, 5, 2]
    assert model.feature_log_prob_[0].shape == (2, 4)
    with pytest.raises(ValueError, match="categories"):
        NaiveBayes(categories=cats[:2], classes=["no", "yes"]).fit(X, y)
    with pytest.raises(ValueError, match="categories"):
        NaiveBayes(categories="observed", classes=["no", "yes"]).fit(X, y)


def test_pandas_categorical_columns_keep_declared_states() -> None:
    german = datasets.load_german_credit()
    y = german.pop("credit_risk")
    model = NaiveBayes(mechanism="none").fit(german[["purpose", "status"]], y)
    # "purpose" declares 11 states, one of them never observed
    assert model.feature_log_prob_[0].shape == (2, 11)


# ------------------------------------------------------------------------------------------------
# Bad input
# ------------------------------------------------------------------------------------------------


def test_bad_input(rng: np.random.Generator) -> None:
    X, y = _toy(rng)
    with pytest.raises(ValueError, match="one class"):
        NaiveBayes(**FROM_DATA).fit(X, np.full(len(X), "yes"))
    with pytest.raises(ValueError, match="empty"):
        NaiveBayes().fit(X.iloc[:0], y[:0])
    with pytest.raises(ValueError, match="no features"):
        NaiveBayes().fit(X.iloc[:, :0], y)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="epsilon"):
            NaiveBayes(epsilon=bad).fit(X, y)
    with pytest.raises(TypeError, match="epsilon"):
        NaiveBayes(epsilon="1").fit(X, y)
    with pytest.raises(ValueError, match="order"):
        NaiveBayes(order=1.0).fit(X, y)
    with pytest.raises(ValueError, match="delta"):
        NaiveBayes(delta=1.5).fit(X, y)
    with pytest.raises(ValueError, match="mechanism"):
        NaiveBayes(mechanism="exponential").fit(X, y)
    with pytest.raises(ValueError, match="neighbours"):
        NaiveBayes(neighbours="swap").fit(X, y)
    with pytest.raises(ValueError, match="smoothing"):
        NaiveBayes(mechanism="none", smoothing=0.0).fit(X, y)
    with pytest.raises(ValueError, match="alpha0"):
        NaiveBayes(alpha0=-1.0).fit(X, y)
    with pytest.raises(TypeError, match="accountant"):
        NaiveBayes(accountant="ledger").fit(X, y)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="different numbers"):
        NaiveBayes().fit(X, y[:-1])
    y_missing = y.astype(object)
    y_missing[0] = None
    with pytest.raises(ValueError, match="y contains missing"):
        NaiveBayes().fit(X, y_missing)
    with pytest.raises(ValueError, match="2-D"):
        NaiveBayes().fit(np.array(["a", "b", "c"]), ["x", "y", "x"])
    all_missing = X.astype(object)
    all_missing["a"] = np.nan
    with pytest.raises(ValueError, match="no observed state"):
        NaiveBayes(**FROM_DATA).fit(all_missing, y)
    with pytest.raises(ValueError, match="no observed state"):
        NaiveBayes(mechanism="none").fit(all_missing, y)


def test_bad_prediction_input(rng: np.random.Generator) -> None:
    X, y = _toy(rng)
    with pytest.raises(NotFittedError):
        NaiveBayes().predict(X)
    model = NaiveBayes(mechanism="none").fit(X, y)
    with pytest.raises(ValueError, match="missing the feature"):
        model.predict(X.drop(columns="b"))
    with pytest.raises(ValueError, match="features"):
        model.predict(X.to_numpy()[:, :2])
    with pytest.raises(ValueError, match="y has labels"):
        model.cross_entropy(X, np.full(len(X), "maybe"))
    # Columns are matched by name, whatever their order.
    np.testing.assert_allclose(model.predict_proba(X[["c", "a", "b"]]), model.predict_proba(X))


# ------------------------------------------------------------------------------------------------
# Declared domains: states and classes are not read from the records
# ------------------------------------------------------------------------------------------------


def _neighbours(rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    """Replace-one neighbours: D' gives one record of D a value of "a" never seen in D."""
    X, y = _toy(rng)
    X2 = X.copy()
    X2.loc[0, "a"] = "w"
    return X, X2, y


def test_new_feature_value_is_refused_not_published(rng: np.random.Generator) -> None:
    X, X2, y = _neighbours(rng)
    # without a declaration a private fit is refused (the old default read the states from X)
    with pytest.raises(ValueError, match="classes: declare the public class labels"):
        NaiveBayes(mechanism="dirichlet").fit(X, y)
    with pytest.raises(ValueError, match="categories: declare the public states"):
        NaiveBayes(mechanism="dirichlet", classes=["no", "yes"]).fit(X, y)
    acc = Accountant()
    model = NaiveBayes(mechanism="dirichlet", accountant=acc, **TOY_DOMAIN).fit(X, y)
    assert model.releases_["naive_bayes/feature/a"].shape == (2, 3)
    before = acc.to_json()
    with pytest.raises(ValueError, match="feature 'a' has values outside its declared"):
        NaiveBayes(mechanism="dirichlet", accountant=acc, **TOY_DOMAIN).fit(X2, y)
    assert acc.to_json() == before  # nothing charged
    assert acc.within_guarantee


def test_new_class_label_is_refused(rng: np.random.Generator) -> None:
    X, y = _toy(rng)
    y2 = y.copy()
    y2[0] = "maybe"
    acc = Accountant()
    with pytest.raises(ValueError, match="y has labels outside the declared classes"):
        NaiveBayes(mechanism="laplace", accountant=acc, **TOY_DOMAIN).fit(X, y2)
    assert len(acc.ledger) == 0


def test_from_data_opt_in_is_flagged(rng: np.random.Generator) -> None:
    X, X2, y = _neighbours(rng)
    shapes = []
    for frame in (X, X2):
        acc = Accountant()
        model = NaiveBayes(mechanism="dirichlet", accountant=acc, **FROM_DATA).fit(frame, y)
        shapes.append(model.releases_["naive_bayes/feature/a"].shape)
        assert not acc.within_guarantee
        (decl,) = acc.declarations
        assert decl["kind"] == "states_from_data"
        assert "a, b, c, y (classes)" in decl["detail"]
    assert shapes == [(2, 3), (2, 4)]  # what the opt-in publishes: the flag is deserved
    acc = Accountant()
    NaiveBayes(mechanism="gaussian", accountant=acc, **TOY_DOMAIN).fit(X, y)
    assert acc.within_guarantee and acc.declarations == ()


def test_declared_unused_states_and_classes_are_zero_counts(rng: np.random.Generator) -> None:
    X, y = _toy(rng)
    cats = {"a": ["x", "y", "z", "w"], "b": [0, 1, 2, 3, 4], "c": ["p", "q"]}
    model = NaiveBayes(mechanism="none", categories=cats, classes=["no", "yes", "perhaps"])
    model.fit(X, y)
    assert list(model.classes_) == ["no", "yes", "perhaps"]
    assert model.feature_log_prob_[0].shape == (3, 4)
    s = model.smoothing
    # an unused class: the smoothed zero-count prior and uniform rows
    assert np.exp(model.class_log_prior_[2]) == pytest.approx(s / (len(y) + 3 * s))
    np.testing.assert_allclose(np.exp(model.feature_log_prob_[0][2]), 0.25)
    gauss = NaiveBayes(mechanism="gaussian", categories=cats, classes=["no", "yes", "perhaps"])
    gauss.fit(X, y)
    assert gauss.releases_["naive_bayes/class"].shape == (3,)
    assert gauss.releases_["naive_bayes/feature/b"].shape == (3, 5)


def test_float_and_id_features_refused_even_with_opt_in(rng: np.random.Generator) -> None:
    X, y = _toy(rng)
    floats = X.assign(b=rng.normal(size=len(X)))
    with pytest.raises(ValueError, match=r"column 'b' holds non-integral") as info:
        NaiveBayes(mechanism="dirichlet", **FROM_DATA).fit(floats, y)
    assert "private_bins" in str(info.value)
    ids = X.assign(c=[f"patient-{i}" for i in range(len(X))])
    with pytest.raises(ValueError, match="column 'c'"):
        NaiveBayes(mechanism="dirichlet", **FROM_DATA).fit(ids, y)
    # a float array given as numpy (object columns) is recognised too
    with pytest.raises(ValueError, match="non-integral"):
        NaiveBayes(mechanism="dirichlet", **FROM_DATA).fit(floats.to_numpy(), y)


def test_pandas_categories_are_not_a_declaration() -> None:
    german = datasets.load_german_credit()
    y = german.pop("credit_risk")
    with pytest.raises(ValueError, match="categories: declare"):
        NaiveBayes(classes=["good", "bad"]).fit(german[["purpose"]], y)
    # the documented domain, declared
    public = datasets.german_credit_public()
    states = public.attrs["states"]
    model = NaiveBayes(
        categories={"purpose": states["purpose"], "age": states["age"]},
        classes=states["credit_risk"],
    ).fit(public[["purpose", "age"]], public["credit_risk"])
    assert model.feature_log_prob_[0].shape == (2, 11)
    assert model.feature_log_prob_[1].shape == (2, 6)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"categories": {"a": ["x"], "zz": [1]}}, ValueError, r"categories: \['zz'\] are not"),
        ({"categories": {"a": ["x", "y", "z"]}}, ValueError, "no states declared for the feat"),
        ({"categories": {"a": "xyz", "b": [0], "c": ["p"]}}, TypeError, "must be a list of"),
        ({"categories": [["x", "x"], [0], ["p"]]}, ValueError, "lists the state 'x' twice"),
        ({"categories": [[], [0], ["p"]]}, ValueError, r"categories\[0\] has no states"),
        ({"classes": ["no", "no"]}, ValueError, "lists the state 'no' twice"),
        ({"classes": "no"}, ValueError, "classes must be None, 'from-data' or a list"),
        ({"classes": 3}, TypeError, "must be a list of states"),
    ],
)
def test_bad_domain_arguments(rng: np.random.Generator, kwargs, error, match: str) -> None:
    X, y = _toy(rng)
    with pytest.raises(error, match=match):
        NaiveBayes(**{**TOY_DOMAIN, **kwargs}).fit(X, y)


# ------------------------------------------------------------------------------------------------
# Privacy noise never comes from a user seed
# ------------------------------------------------------------------------------------------------


def test_no_random_state_and_seeds_refused_as_noise(rng: np.random.Generator) -> None:
    X, y = _toy(rng)
    with pytest.raises(TypeError, match="random_state"):
        NaiveBayes(mechanism="gaussian", random_state=1)
    for bad in (1, np.random.default_rng(1)):
        acc = Accountant()
        with pytest.raises(TypeError, match="noise_source must be None"):
            NaiveBayes(mechanism="gaussian", accountant=acc, noise_source=bad, **TOY_DOMAIN).fit(
                X, y
            )
        assert len(acc.ledger) == 0
    # the default draws fresh OS noise on every fit
    model = NaiveBayes(mechanism="gaussian", epsilon=1.0, **TOY_DOMAIN)
    first = model.fit(X, y).releases_["naive_bayes/class"]
    again = NaiveBayes(mechanism="gaussian", epsilon=1.0, **TOY_DOMAIN).fit(X, y)
    assert not np.array_equal(first, again.releases_["naive_bayes/class"])
    assert model.accountant_.within_guarantee


def test_unsafe_seed_is_reproducible_unchanged_by_fit_and_declared(
    rng: np.random.Generator,
) -> None:
    X, y = _toy(rng)
    source = UnsafeNoiseSeed(9)
    model = NaiveBayes(mechanism="laplace", noise_source=source, **TOY_DOMAIN)
    a = model.fit(X, y).releases_["naive_bayes/class"]
    # each fit restarts the seed's stream (a second estimator: a refit would be charged to the
    # first fit's accountant, whose budget is spent)
    other = NaiveBayes(mechanism="laplace", noise_source=source, **TOY_DOMAIN)
    b = other.fit(X, y).releases_["naive_bayes/class"]
    np.testing.assert_array_equal(a, b)
    assert model.get_params()["noise_source"] is source
    assert source.generator().random() == UnsafeNoiseSeed(9).generator().random()  # untouched
    acc = model.accountant_
    assert not acc.within_guarantee
    assert {d["kind"] for d in acc.declarations} == {"unsafe_noise"}
    assert "NOT PRIVATE" in acc.report()
