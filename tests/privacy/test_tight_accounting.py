"""The tightest valid ε: analytic Gaussian (against mpmath and dp-accounting), the PLD bound, the
choice of "best", parallel groups, the budget check and calibration to the tight bound."""

from __future__ import annotations

import json
import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymc_rdp.privacy import rdp
from pymc_rdp.privacy import tight_accounting as ta
from pymc_rdp.privacy.accountant import Accountant, BudgetExceededError
from pymc_rdp.privacy.calibration import split_budget
from pymc_rdp.privacy.mechanisms import (
    DirichletMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    RandomizedResponse,
)

pytest.importorskip("dp_accounting", reason="the PLD bound needs dp-accounting (the pld extra)")
from dp_accounting.pld import privacy_loss_distribution as pld


def _mp_delta(eps: float, mu: float) -> float:
    """δ_μ(ε) in 60-digit arithmetic (Balle & Wang 2018, Theorem 8)."""
    mpmath.mp.dps = 60
    e, m = mpmath.mpf(eps), mpmath.mpf(mu)
    phi = lambda x: mpmath.ncdf(x)  # noqa: E731
    return float(phi(-e / m + m / 2) - mpmath.exp(e) * phi(-e / m - m / 2))


def _pld_gaussian(mu: float, pessimistic: bool) -> object:
    # the loss spans a range of order μ² + μ: a grid of about 1e4 points per unit of μ
    return pld.from_gaussian_mechanism(
        1.0,
        sensitivity=mu,
        pessimistic_estimate=pessimistic,
        use_connect_dots=pessimistic,
        value_discretization_interval=1e-4 * max(1.0, mu * mu),
    )


# ------------------------------------------------------------------ the analytic Gaussian


@pytest.mark.parametrize("mu", [0.02, 0.3, 1.0, 2.5, 8.0])
@pytest.mark.parametrize("eps", [0.0, 0.1, 1.0, 5.0])
def test_gaussian_delta_matches_mpmath(eps, mu):
    exact = _mp_delta(eps, mu)
    got = ta.gaussian_delta(eps, mu)
    assert got == pytest.approx(exact, rel=1e-10, abs=1e-300)


@pytest.mark.parametrize("mu", [0.05, 0.5, 1.0, 3.0])
@pytest.mark.parametrize("delta", [1e-10, 1e-6, 1e-3, 1e-2])
def test_gaussian_epsilon_is_the_root_to_1e_9(mu, delta):
    eps = ta.gaussian_epsilon(delta, mu)
    assert eps > 0
    # valid: δ(ε) <= δ; tight: 1e-9 less already exceeds δ (checked in 60 digits)
    assert _mp_delta(eps, mu) <= delta * (1 + 1e-12)
    assert _mp_delta(eps - 1e-9, mu) > delta
    # dp-accounting's PLD brackets it to its own discretisation
    hi = _pld_gaussian(mu, True).get_epsilon_for_delta(delta)
    lo = _pld_gaussian(mu, False).get_epsilon_for_delta(delta)
    assert lo - 1e-9 <= eps <= hi + 1e-9
    assert hi - eps < 1e-2 * max(1.0, eps)


def test_gaussian_epsilon_edges_and_bad_input():
    assert ta.gaussian_epsilon(1e-6, 0.0) == 0.0
    assert ta.gaussian_epsilon(0.5, 0.01) == 0.0  # δ(0) = TV < δ: ε = 0
    assert ta.gaussian_epsilon(1e-6, math.inf) == math.inf
    for bad in (0.0, 1.0, -1e-3, float("nan")):
        with pytest.raises(ValueError, match="delta"):
            ta.gaussian_epsilon(bad, 1.0)
    with pytest.raises(ValueError, match="mu"):
        ta.gaussian_epsilon(1e-6, -1.0)
    with pytest.raises(ValueError, match="epsilon"):
        ta.gaussian_mu(0.0, 1e-6)
    with pytest.raises(ValueError, match="sensitivity"):
        ta.gaussian_sigma(1.0, 1e-6, sensitivity=0.0)
    with pytest.raises(ValueError, match="count"):
        ta.gaussian_sigma(1.0, 1e-6, count=0)


@pytest.mark.parametrize(("eps", "delta", "k"), [(1.0, 1e-6, 7), (0.1, 1e-5, 1), (8.0, 1e-9, 30)])
def test_gaussian_sigma_meets_the_target_and_one_percent_less_does_not(eps, delta, k):
    sigma = ta.gaussian_sigma(eps, delta, sensitivity=math.sqrt(2.0), count=k)
    mu = math.sqrt(k * 2.0) / sigma
    assert ta.gaussian_epsilon(delta, mu) <= eps
    assert _mp_delta(eps, mu) <= delta * (1 + 1e-12)
    assert _mp_delta(eps, mu / 0.99) > delta
    # the same guarantee costs less noise than the RDP conversion asks for
    o = rdp.DEFAULT_ORDERS
    assert rdp.to_dp(o, k * rdp.gaussian(o, sigma, math.sqrt(2.0)), delta)[0] > eps


# ------------------------------------------------------------------ "best" on Gaussian ledgers

gaussians = st.builds(GaussianMechanism, st.floats(0.5, 60.0), st.floats(0.2, 3.0))


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.tuples(gaussians, st.integers(1, 5), st.sampled_from([None, 0, 1, 2])),
        min_size=1,
        max_size=12,
    ),
    st.sampled_from([1e-9, 1e-6, 1e-3]),
)
def test_best_equals_the_analytic_gaussian_for_gaussian_ledgers(items, delta):
    acc = Accountant()
    seq_mu2, parts = 0.0, {}
    for m, c, part in items:
        if part is None:
            acc.spend(m, count=c)
            seq_mu2 += c * (m.sensitivity / m.sigma) ** 2
        else:
            acc.spend(m, count=c, group="g", partition=part)
            parts[part] = parts.get(part, 0.0) + c * (m.sensitivity / m.sigma) ** 2
    mu = math.sqrt(seq_mu2 + max(parts.values(), default=0.0))
    expected = ta.gaussian_epsilon(delta, mu)
    eps, method = acc.epsilon_and_method(delta)
    assert method == "exact"
    assert eps == pytest.approx(expected, abs=1e-9)
    assert acc.epsilon(delta, method="exact") == eps
    assert eps <= acc.epsilon(delta, method="rdp")
    # never below a valid lower bound: dp-accounting's optimistic PLD of the same Gaussian
    assert eps >= _pld_gaussian(mu, False).get_epsilon_for_delta(delta) - 1e-9


# ------------------------------------------------------------------ "best" on mixed ledgers

mixed = st.one_of(
    gaussians,
    st.builds(LaplaceMechanism, st.floats(2.0, 60.0), st.floats(0.2, 2.0)),
    st.builds(RandomizedResponse, st.floats(0.501, 0.75)),
)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(mixed, st.integers(1, 4)), min_size=1, max_size=5))
def test_best_is_between_the_optimistic_pld_and_the_rdp_bound(items):
    acc = Accountant()
    for m, c in items:
        acc.spend(m, count=c)
    delta = 1e-6
    t = acc.accounting(delta)
    rdp_eps = acc.epsilon(delta, method="rdp")
    assert t.epsilon <= rdp_eps
    assert t.method in ("exact", "pld", "rdp")
    lower = ta.pld_epsilon(ta.rows_of(acc.ledger), delta, pessimistic=False)
    assert t.epsilon >= lower - 1e-9
    if t.method == "pld":
        assert t.epsilon == acc.epsilon(delta, method="pld")


def test_pld_is_tighter_than_rdp_on_a_laplace_workload():
    acc = Accountant()
    acc.spend(LaplaceMechanism(20.0), count=40)
    acc.spend(GaussianMechanism(30.0), count=10)
    eps, method = acc.epsilon_and_method(1e-6)
    assert method == "pld"
    assert eps < 0.97 * acc.epsilon(1e-6, method="rdp")


def test_entries_without_a_pld_fall_back_to_rdp_with_a_note():
    acc = Accountant()
    acc.spend(GaussianMechanism(5.0))
    acc.spend(DirichletMechanism(2.0, 1.0, math.sqrt(2.0), 1.0))
    t = acc.accounting(1e-6)
    assert t.method == "rdp" and t.epsilon == acc.epsilon(1e-6, method="rdp")
    assert any("dirichlet" in n for n in t.notes)
    with pytest.raises(ValueError, match="exact"):
        acc.epsilon(1e-6, method="exact")
    with pytest.raises(ValueError, match="pld"):
        acc.epsilon(1e-6, method="pld")
    with pytest.raises(ValueError, match="method"):
        acc.epsilon(1e-6, method="tight")


def test_the_discrete_gaussian_is_accounted_by_rdp_only():
    rows = [("discrete_gaussian", {"sigma": 3.0, "sensitivity": 1.0}, 2, None, None)]
    t = ta.ledger_epsilon(rows, 1.234, 1e-6)
    assert (t.epsilon, t.method) == (1.234, "rdp")
    assert any("discrete_gaussian" in n for n in t.notes)
    with pytest.raises(ValueError, match="exact"):
        ta.ledger_epsilon(rows, 1.234, 1e-6, "exact")


def test_without_dp_accounting_best_falls_back_to_rdp(monkeypatch):
    monkeypatch.setattr(ta, "pld_available", lambda: False)
    rows = [("laplace", {"scale": 10.0, "sensitivity": 1.0}, 3, None, None)]
    t = ta.ledger_epsilon(rows, 0.5, 1e-6)
    assert (t.epsilon, t.method) == (0.5, "rdp")
    assert any("pymc-rdp[pld]" in n for n in t.notes)
    with pytest.raises(ImportError, match="pld"):
        ta.ledger_epsilon(rows, 0.5, 1e-6, "pld")


def test_too_many_distinct_mechanisms_skip_the_pld():
    acc = Accountant()
    acc.spend_batch([LaplaceMechanism(10.0 + i) for i in range(ta.MAX_PLD_KINDS + 1)])
    t = acc.accounting(1e-6)
    assert t.method == "rdp" and "distinct" in t.notes[0]


# ------------------------------------------------------------------ parallel groups


def test_parallel_gaussian_group_is_its_worst_partition():
    acc = Accountant()
    acc.spend(GaussianMechanism(2.0), group="t", partition="a")  # μ² = 1/4
    acc.spend(GaussianMechanism(1.0), group="t", partition="b")  # μ² = 1
    acc.spend(GaussianMechanism(4.0), count=2, group="t", partition="a")  # a: 1/4 + 1/8
    acc.spend(GaussianMechanism(3.0))  # sequential μ² = 1/9
    expected = ta.gaussian_epsilon(1e-6, math.sqrt(1 + 1 / 9))
    assert acc.epsilon(1e-6) == pytest.approx(expected, abs=1e-12)
    # merging the partitions (composing them sequentially) would charge more
    assert acc.epsilon(1e-6) < ta.gaussian_epsilon(1e-6, math.sqrt(1 + 1 / 4 + 1 / 8 + 1 / 9))


def test_a_dominating_partition_stands_for_its_group_in_the_pld():
    lap = LaplaceMechanism(8.0)
    acc = Accountant()
    for part in range(3):
        acc.spend(lap, group="nb", partition=part)
    acc.spend(lap, group="nb", partition=0)  # partition 0 has two: it dominates
    acc.spend(lap)
    t = acc.accounting(1e-6)
    assert t.method == "pld" and not t.notes
    ref = Accountant()
    ref.spend(lap, count=3)  # the worst record: partition 0 plus the sequential entry
    assert t.epsilon == ref.epsilon(1e-6)


def test_without_a_dominating_partition_the_group_composes_sequentially():
    acc = Accountant()
    acc.spend(LaplaceMechanism(5.0), group="g", partition=0)
    acc.spend(RandomizedResponse(0.6), group="g", partition=1)
    t = acc.accounting(1e-6)
    assert any("no partition dominates" in n for n in t.notes)
    # valid: at least the PLD of either single partition (the true profile is their maximum)
    for rows in (
        [("laplace", {"scale": 5.0, "sensitivity": 1.0}, 1, None, None)],
        [("randomized_response", {"p": 0.6}, 1, None, None)],
    ):
        assert t.epsilon >= ta.pld_epsilon(rows, 1e-6, pessimistic=False) - 1e-12


def test_laplace_vector_queries_are_dominated_by_the_one_dimensional_laplace():
    # the convention behind the Laplace PLD at the ℓ1 sensitivity: splitting Δ₁ over coordinates
    # never increases δ(ε) (checked on a grid, not proven)
    for b in (0.7, 2.0, 6.0):
        one = pld.from_laplace_mechanism(b, sensitivity=2.0)
        two = pld.from_laplace_mechanism(b, sensitivity=1.0).self_compose(2)
        three = pld.from_laplace_mechanism(b, sensitivity=0.5).compose(
            pld.from_laplace_mechanism(b, sensitivity=1.5)
        )
        for eps in np.linspace(0.0, 2.0 / b, 25):
            d1 = one.get_delta_for_epsilon(eps)
            assert two.get_delta_for_epsilon(eps) <= d1 + 1e-12
            assert three.get_delta_for_epsilon(eps) <= d1 + 1e-12


# ------------------------------------------------------------------ report and ledger


def test_report_and_json_say_which_bound():
    acc = Accountant(budget=(2.0, 1e-6))
    acc.spend(GaussianMechanism(8.0), count=3, tag="counts")
    text = acc.report()
    assert "by the exact bound" in text and f"{acc.epsilon():.6g}" in text
    doc = json.loads(acc.to_json())
    assert doc["accounting"]["method"] == "exact"
    assert doc["accounting"]["epsilon"] == acc.epsilon()
    back = Accountant.from_json(acc.to_json())
    assert back.epsilon() == acc.epsilon() and back.to_json() == acc.to_json()


# ------------------------------------------------------------------ the budget check


def test_budget_admits_the_exact_calibration_and_refuses_one_percent_less_noise():
    m = GaussianMechanism.calibrate(1.0, delta=1e-6)
    # the RDP conversion alone would refuse it ...
    assert rdp.to_dp(rdp.DEFAULT_ORDERS, m.rdp(rdp.DEFAULT_ORDERS), 1e-6)[0] > 1.0
    acc = Accountant(budget=(1.0, 1e-6))
    acc.spend(m)  # ... the exact bound admits it
    assert acc.remaining() == pytest.approx(0.0, abs=1e-9)
    # the attack: a second, tiny release, or 1% less noise, must be refused
    with pytest.raises(BudgetExceededError):
        acc.spend(GaussianMechanism(1e4))
    fresh = Accountant(budget=(1.0, 1e-6))
    assert not fresh.can_spend(GaussianMechanism(m.sigma * 0.99))
    with pytest.raises(BudgetExceededError):
        fresh.spend_batch([GaussianMechanism(m.sigma * 0.99)])
    assert len(fresh) == 0


def test_budget_with_pld_admits_what_rdp_refuses_and_stays_valid():
    lap = LaplaceMechanism(20.0)
    probe = Accountant()
    probe.spend(lap, count=40)
    eps_pld = probe.epsilon(1e-6)
    acc = Accountant(budget=(eps_pld * (1 + 1e-9), 1e-6))
    for _ in range(40):
        acc.spend(lap)
    assert acc.epsilon_and_method()[1] == "pld"
    with pytest.raises(BudgetExceededError):
        acc.spend(lap)


# ------------------------------------------------------------------ calibration


@pytest.mark.parametrize(("eps", "delta", "sens"), [(1.0, 1e-6, 1.0), (0.3, 1e-8, math.sqrt(2))])
def test_gaussian_calibrate_meets_the_exact_target_and_one_percent_less_does_not(eps, delta, sens):
    m = GaussianMechanism.calibrate(eps, delta=delta, sensitivity=sens)
    old = GaussianMechanism.calibrate(eps, delta=delta, sensitivity=sens, method="rdp")
    assert m.sigma < old.sigma
    assert ta.gaussian_epsilon(delta, sens / m.sigma) <= eps
    assert _mp_delta(eps, sens / (0.99 * m.sigma)) > delta
    with pytest.raises(ValueError, match="method"):
        GaussianMechanism.calibrate(eps, delta=delta, method="pld")


def test_laplace_calibrate_to_the_pld_meets_it_and_one_percent_less_does_not():
    b = LaplaceMechanism.calibrate(0.5, delta=1e-3, method="pld").scale
    assert ta.planned_epsilon([(LaplaceMechanism(b), 1)], 1e-3, "pld") <= 0.5
    assert ta.planned_epsilon([(LaplaceMechanism(0.99 * b), 1)], 1e-3, "pld") > 0.5
    # one Laplace release: δ(ε) = 1 − e^{(ε − 1/b)/2} exactly; the PLD bound is within its grid
    t_exact = 0.5 - 2.0 * math.log1p(-1e-3)
    assert 1.0 / b == pytest.approx(t_exact, abs=2e-4)
    assert LaplaceMechanism.calibrate(0.5, delta=1e-3).scale <= b


def test_split_budget_for_gaussian_releases_meets_the_total_exactly():
    k, eps, delta = 7, 1.0, 1e-6
    for lam in (2.0, 10.0, 64.0):
        x = split_budget(eps, k, order=lam, delta=delta, mechanism="gaussian")
        assert x > split_budget(eps, k, order=lam, delta=delta)
        m = GaussianMechanism.calibrate(x, order=lam)
        acc = Accountant(budget=(eps, delta))
        for _ in range(k):
            acc.spend(m)
        assert acc.epsilon() <= eps
        over = GaussianMechanism.calibrate(1.01 * x, order=lam)
        assert ta.gaussian_epsilon(delta, math.sqrt(k) / over.sigma) > eps
    np.testing.assert_allclose(
        split_budget(eps, k, order=np.array([2.0, 4.0]), delta=delta, mechanism="gaussian")
        / np.array([2.0, 4.0]),
        ta.gaussian_mu(eps, delta) ** 2 / (2 * k),
        rtol=1e-11,
    )
    with pytest.raises(ValueError, match="mechanism"):
        split_budget(eps, k, order=2.0, delta=delta, mechanism="laplace")
