"""Every fit is a release: refits, clones and repeated releases are charged, once each.

The attacks of the audit, run through the public API: fits whose class labels differ merged
their feature tables into one parallel group (1.0 → 1.2 → 1.4 instead of 1 → 2 → 3);
scikit-learn's clone deep-copied the accountant, so cross-validation and grid search charged
nothing; an estimator without an accountant got a fresh budget at every refit; two CPT releases
with the same name were charged as one.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pymc as pm
import pytest
from sklearn.base import clone
from sklearn.exceptions import FitFailedWarning
from sklearn.model_selection import GridSearchCV, cross_val_score

import pymc_rdp.distributions as D
from pymc_rdp import BayesianNetwork, NaiveBayes
from pymc_rdp.privacy.accountant import Accountant, BudgetExceededError
from pymc_rdp.privacy.mechanisms import DirichletMechanism

K = 4  # features: a fit releases K + 1 tables of ε/(K+1) each
STATES = ["s0", "s1", "s2"]


def _data(n: int = 300, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.choice(["a", "b"], size=n)
    cols = {f"f{k}": rng.choice(STATES, size=n) for k in range(K)}
    return pd.DataFrame(cols), y


def _nb(classes=("a", "b"), **kw) -> NaiveBayes:
    return NaiveBayes(
        mechanism="dirichlet",
        epsilon=1.0,
        order=5.0,
        categories=[STATES] * K,
        classes=list(classes),
        **kw,
    )


def _eps5(acc: Accountant) -> float:
    return float(acc.rdp([5.0])[0])


def test_fits_with_different_labels_are_charged_separately():
    X, y = _data()
    acc = Accountant.at_order(10.0, 5.0)
    relabel = [{"a": "a", "b": "b"}, {"a": "c", "b": "d"}, {"a": "a", "b": "e"}]
    got = []
    for mapping in relabel:
        labels = np.array([mapping[v] for v in y])
        _nb(classes=sorted(set(labels)), accountant=acc).fit(X, labels)
        got.append(_eps5(acc))
    # one fit costs ε(5) = 1 (up to the calibration margin); three fits cost 3
    np.testing.assert_allclose(got, [1.0, 2.0, 3.0], rtol=1e-6)
    groups = {e.group for e in acc.ledger if e.group is not None}
    assert len(groups) == 3 * K and set(acc.closed_groups) == groups


def test_cross_val_score_charges_every_fold_to_the_shared_accountant():
    X, y = _data()
    acc = Accountant()
    cross_val_score(_nb(accountant=acc), X, y, cv=5)
    assert len(acc) == 5 * (1 + 2 * K)  # per fit: the class table, K tables of 2 rows
    assert sum(e.tag == "naive_bayes/class" for e in acc.ledger) == 5
    np.testing.assert_allclose(_eps5(acc), 5.0, rtol=1e-6)


def test_grid_search_charges_every_point_and_fold():
    X, y = _data()
    acc = Accountant()
    grid = {"alpha0": [0.5, 1.0, 2.0], "epsilon": [0.5, 1.0]}
    GridSearchCV(_nb(accountant=acc), grid, cv=3, refit=False).fit(X, y)
    assert sum(e.tag == "naive_bayes/class" for e in acc.ledger) == 6 * 3
    np.testing.assert_allclose(_eps5(acc), 3 * 3 * (0.5 + 1.0), rtol=1e-6)
    # a budget for fewer fits refuses the rest: the search cannot spend more than it holds
    small = Accountant.at_order(4.0, 5.0)
    with warnings.catch_warnings(record=True) as caught:  # sklearn reports refused fits
        warnings.simplefilter("always")
        search = GridSearchCV(_nb(accountant=small), grid, cv=3, refit=False, error_score=np.nan)
        search.fit(X, y)
    assert any(issubclass(w.category, FitFailedWarning) for w in caught)
    assert np.isnan(search.cv_results_["mean_test_score"]).sum() >= 4
    assert _eps5(small) <= 4.0


def test_refits_without_an_accountant_share_the_first_fits_budget():
    X, y = _data()
    est = _nb()
    early_clone = clone(est)  # a clone made before any fit shares the estimator's accountant
    est.fit(X, y)
    acc = est.accountant_
    assert est.accountant is None and len(acc) == 1 + 2 * K
    refused = 0
    for _ in range(19):
        with pytest.raises(BudgetExceededError, match="created at the first fit"):
            est.fit(X, y)
        refused += 1
    for other in (early_clone, clone(est), clone(clone(est))):
        with pytest.raises(BudgetExceededError):
            other.fit(X, y)
    assert refused == 19 and est.accountant_ is acc and len(acc) == 1 + 2 * K
    assert _eps5(acc) <= 1.0
    # an estimator built anew is a new release decision with its own budget
    fresh = _nb().fit(X, y)
    assert fresh.accountant_ is not acc


def test_refits_of_a_smaller_share_fit_until_the_budget_is_spent():
    X, y = _data()
    est = _nb()
    est.fit(X, y)
    est.set_params(epsilon=0.25)
    # the first fit took ε = 1 of the accountant's ε = 1 budget: nothing is left
    with pytest.raises(BudgetExceededError):
        est.fit(X, y)
    spread = _nb(accountant=Accountant.at_order(1.0, 5.0))
    spread.set_params(epsilon=0.25)
    for _ in range(4):  # four fits of ε = 0.25 fill ε = 1, the fifth is refused
        spread.fit(X, y)
    with pytest.raises(BudgetExceededError):
        spread.fit(X, y)


def test_bayesian_network_refits_are_charged_to_one_accountant():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 2, size=400)
    df = pd.DataFrame({"a": a, "b": (a + (rng.random(400) < 0.2)) % 2})
    bn = BayesianNetwork({"a": [], "b": ["a"]}, states={"a": [0, 1], "b": [0, 1]})
    bn.fit(df, mechanism="dirichlet", epsilon=1.0, order=5.0)
    acc = bn.accountant
    n = len(acc)
    for _ in range(19):
        with pytest.raises(BudgetExceededError, match="previous fit"):
            bn.fit(df, mechanism="dirichlet", epsilon=1.0, order=5.0)
    assert len(acc) == n and float(acc.rdp([5.0])[0]) <= 1.0
    # a network fitted with an explicit accountant keeps charging it on refits without one
    shared = Accountant.at_order(3.0, 5.0)
    bn2 = BayesianNetwork({"a": [], "b": ["a"]}, states={"a": [0, 1], "b": [0, 1]})
    bn2.fit(df, mechanism="dirichlet", epsilon=1.0, order=5.0, accountant=shared)
    bn2.fit(df, mechanism="dirichlet", epsilon=1.0, order=5.0)
    assert bn2.accountant is shared
    np.testing.assert_allclose(float(shared.rdp([5.0])[0]), 2.0, rtol=1e-6)


def test_two_cpt_releases_with_one_name_cost_the_sum_of_their_costs():
    # one setting per row: the first table spends most on row 0, the second on row 1. Merged
    # into one group, the rows would cost max(ε₀ + ε₀′, ε₁ + ε₁′) instead of max + max.
    cpt = np.array([[3, 4], [0, 10]])

    def model(r):
        mech = DirichletMechanism(
            r=np.array(r), alpha=30.0, l2_sensitivity=math.sqrt(2.0), linf_sensitivity=1.0
        )
        with pm.Model() as m:
            D.DirichletRelease("cpt", cpt, mech)
        return m

    costs = []
    for r in ([2.0, 0.5], [0.5, 2.0]):
        one = Accountant()
        D.release_dirichlet(model(r), accountant=one)
        costs.append(one.rdp())
    both = Accountant()
    D.release_dirichlet(model([2.0, 0.5]), accountant=both)
    D.release_dirichlet(model([0.5, 2.0]), accountant=both)
    np.testing.assert_allclose(both.rdp(), costs[0] + costs[1], rtol=1e-12)
