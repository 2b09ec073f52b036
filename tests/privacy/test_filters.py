"""Privacy filters under a fully adaptive adversary: the next mechanism is chosen from the previous
outputs, and the privacy loss of the whole transcript must stay within the stated (ε, δ)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pymc_rdp.privacy import rdp
from pymc_rdp.privacy.accountant import BudgetExceededError
from pymc_rdp.privacy.filters import GaussianFilter, RenyiFilter
from pymc_rdp.privacy.gaussian_profile import gaussian_epsilon
from pymc_rdp.privacy.mechanisms import GaussianMechanism, LaplaceMechanism, RandomizedResponse


def _filters(eps: float, delta: float) -> dict:
    return {
        "gaussian": lambda: GaussianFilter(eps, delta),
        "renyi-fixed": lambda: RenyiFilter(eps, delta, order=8.0),
        "renyi-union": lambda: RenyiFilter(eps, delta, orders=[1.5, 2, 3, 4, 6, 8, 12, 16, 32]),
    }


def _adaptive_gaussian_run(make_filter, rng, max_steps=60):
    """One transcript against the filter; returns the privacy loss L under the first neighbour.

    The analyst releases a count with sensitivity 1 through Gaussian noise of its choosing. Output
    y = σZ under D and σZ + 1 under D′: the loss of one release is μ²/2 − μZ with μ = 1/σ. The
    adversary reads the loss so far from the outputs and pushes hardest when it is already high
    (large μ), cheapest when it is low — the strategy that breaks a naive stopping rule.
    When the filter refuses, it halves μ and tries again; it stops below μ = 0.02.
    """
    filt = make_filter()
    loss = 0.0
    mu = 0.6
    for _ in range(max_steps):
        mu = 1.2 if loss > 0.5 else (0.6 if loss > 0.0 else 0.25)
        while mu >= 0.02 and not filt.can_spend(GaussianMechanism(1.0 / mu)):
            mu /= 2.0
        if mu < 0.02:
            break
        filt.spend(GaussianMechanism(1.0 / mu))
        z = rng.standard_normal()
        loss += mu * mu / 2.0 - mu * z
    return loss, filt


@pytest.mark.parametrize("kind", ["gaussian", "renyi-fixed", "renyi-union"])
def test_adaptive_adversary_never_exceeds_the_stated_delta(kind):
    eps, delta = 1.0, 0.05
    make = _filters(eps, delta)[kind]
    rng = np.random.default_rng(12345)
    n = 2500
    losses = np.empty(n)
    for i in range(n):
        losses[i], filt = _adaptive_gaussian_run(make, rng)
        assert filt.guarantee() <= eps  # the deterministic certificate of every transcript
        assert len(filt) > 0
    # δ_P(ε) = E_P[(1 − e^{ε − L})_+] of the adaptive interaction, by Monte Carlo
    terms = np.clip(1.0 - np.exp(eps - losses), 0.0, None)
    est, se = terms.mean(), terms.std(ddof=1) / math.sqrt(n)
    assert est <= delta + 4.0 * se
    if kind == "gaussian":
        # the μ-GDP filter is exact: this adversary attains δ (measured 0.0505 ± 0.0028)
        assert est > delta - 4.0 * se


def test_gaussian_filter_spends_exactly_the_analytic_budget():
    f = GaussianFilter(1.0, 1e-6)
    m = GaussianMechanism(10.0)
    n = 0
    while f.can_spend(m):
        f.spend(m)
        n += 1
    assert gaussian_epsilon(1e-6, math.sqrt(n) / 10.0) <= 1.0
    assert gaussian_epsilon(1e-6, math.sqrt(n + 1) / 10.0) > 1.0
    with pytest.raises(BudgetExceededError):
        f.spend(m)
    assert len(f) == n == len(f.accountant.ledger)
    with pytest.raises(TypeError, match="Gaussian"):
        f.can_spend(LaplaceMechanism(5.0))


def test_fixed_order_filter_is_the_rdp_budget_that_converts_to_epsilon():
    eps, delta, lam = 1.0, 1e-6, 12.0
    f = RenyiFilter(eps, delta, order=lam)
    rng = np.random.default_rng(3)
    for _ in range(500):  # heterogeneous proposals, some refused
        m = [
            GaussianMechanism(rng.uniform(5, 50)),
            LaplaceMechanism(rng.uniform(5, 50)),
            RandomizedResponse(rng.uniform(0.501, 0.55)),
        ][rng.integers(3)]
        if f.can_spend(m):
            f.spend(m)
        else:
            with pytest.raises(BudgetExceededError):
                f.spend(m)
    spent = f.accountant.rdp([lam])[0]
    assert spent == pytest.approx(f.spent[0], rel=1e-12)
    assert rdp.to_dp(np.array([lam]), np.array([spent]), delta)[0] <= eps
    assert f.guarantee() <= eps


def test_union_filter_certifies_some_order_at_every_step():
    eps, delta = 2.0, 1e-5
    orders = [2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
    f = RenyiFilter(eps, delta, orders=orders)
    rng = np.random.default_rng(7)
    for _ in range(300):
        m = (
            LaplaceMechanism(rng.uniform(3, 30))
            if rng.random() < 0.5
            else GaussianMechanism(rng.uniform(3, 30))
        )
        if f.can_spend(m):
            f.spend(m)
            # the tail bound of the module notes: some order j has S_j + log(m/δ)/(λ_j − 1) ≤ ε
            s = f.accountant.rdp(orders)
            cert = s + math.log(len(orders) / delta) / (np.array(orders) - 1.0)
            assert cert.min() <= eps
    assert 0 < f.guarantee() <= eps


def test_filter_input_is_checked():
    with pytest.raises(ValueError, match="exactly one"):
        RenyiFilter(1.0, 1e-6)
    with pytest.raises(ValueError, match="exactly one"):
        RenyiFilter(1.0, 1e-6, order=2.0, orders=[2.0])
    with pytest.raises(ValueError, match="order"):
        RenyiFilter(1.0, 1e-6, order=1.0)
    with pytest.raises(ValueError, match="order"):
        RenyiFilter(1.0, 1e-6, orders=[2.0, math.inf])
    with pytest.raises(ValueError, match="epsilon"):
        GaussianFilter(0.0, 1e-6)
    with pytest.raises(ValueError, match="delta"):
        GaussianFilter(1.0, 1.0)
    with pytest.raises(ValueError, match="positive RDP budget"):
        RenyiFilter(0.01, 1e-12, order=1.01)
    f = RenyiFilter(1.0, 1e-6, order=32.0)
    with pytest.raises(TypeError, match="Mechanism"):
        f.spend("gaussian")
    with pytest.raises(ValueError, match="count"):
        f.spend(GaussianMechanism(10.0), count=0)
