"""Budget helpers: splitting a budget over k releases, calibrating Dirichlet to (ε, δ)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon

from pymc_rdp.privacy import rdp
from pymc_rdp.privacy.accountant import Accountant, BudgetExceededError
from pymc_rdp.privacy.calibration import DPCalibration, calibrate_dirichlet, split_budget
from pymc_rdp.privacy.mechanisms import DirichletMechanism

SQRT2 = math.sqrt(2.0)


def test_split_rdp_budget_is_additive() -> None:
    assert split_budget(1.0, 4) == 0.25
    np.testing.assert_array_equal(split_budget(3.0, 3, order=[2.0, 10.0]), [1.0, 1.0])
    # k releases calibrated to the split meet the total at that order (RDP adds up)
    m = DirichletMechanism.calibrate(split_budget(2.0, 5, order=8.0), 8.0, SQRT2, 1.0)
    assert 5 * float(m.rdp(8.0)) <= 2.0
    assert 5 * float(m.rdp(8.0)) == pytest.approx(2.0, rel=1e-12)


@pytest.mark.parametrize("method", ["bbghs", "mironov"])
def test_split_dp_budget_is_tight_for_the_conversion(method: str) -> None:
    orders = np.array([1.5, 2.0, 8.0, 32.0, 256.0])
    k, eps, delta = 7, 1.5, 1e-6
    x = split_budget(eps, k, order=orders, delta=delta, method=method)
    assert x.shape == orders.shape
    for lam, xi in zip(orders, x, strict=True):
        if xi == 0.0:  # the conversion offset alone exceeds ε at this order
            assert rdp.to_dp([lam], [k * 1e-9], delta, method=method)[0] > eps
            continue
        conv = rdp.to_dp([lam], [k * xi], delta, method=method)[0]
        assert conv <= eps
        assert rdp.to_dp([lam], [k * xi * (1 + 1e-12)], delta, method=method)[0] > conv
        assert conv == pytest.approx(eps, rel=1e-12)
    if method == "mironov":  # closed form: ε = k x + log(1/δ)/(λ − 1)
        ok = x > 0
        expected = (eps - math.log(1 / delta) / (orders - 1)) / k
        np.testing.assert_allclose(x[ok], expected[ok], rtol=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"epsilon": 0.0}, ValueError, "epsilon"),
        ({"epsilon": np.nan}, ValueError, "epsilon"),
        ({"epsilon": [1.0, 2.0]}, ValueError, "epsilon"),
        ({"k": 0}, ValueError, "k"),
        ({"k": 1.5}, TypeError, "k"),
        ({"order": 1.0}, ValueError, "order"),
        ({"delta": 1e-6}, ValueError, "order"),
        ({"delta": 1.0, "order": 2.0}, ValueError, "delta"),
        ({"delta": 1e-6, "order": 2.0, "method": "x"}, ValueError, "method"),
    ],
)
def test_split_budget_bad_input(kwargs: dict, exc: type, match: str) -> None:
    args = {"epsilon": 1.0, "k": 3}
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        split_budget(**args)


@pytest.mark.parametrize("scheme", ["paper", "fixed-alpha"])
@pytest.mark.parametrize("count", [1, 4])
def test_calibrate_dirichlet_meets_dp_target(scheme: str, count: int) -> None:
    eps, delta = 1.0, 1e-6
    kwargs = {"alpha": [0.5, 1.0, 2.0]} if scheme == "fixed-alpha" else {}
    res = calibrate_dirichlet(eps, delta, SQRT2, 1.0, scheme=scheme, count=count, **kwargs)
    assert isinstance(res, DPCalibration)
    m = res.mechanism
    orders = rdp.DEFAULT_ORDERS
    curve = count * m.rdp(orders)
    conv, _ = rdp.to_dp(orders, curve, delta)
    assert conv <= eps and conv == pytest.approx(res.epsilon)
    assert conv >= eps * (1 - 1e-6)  # tight: no budget left on the table
    # an independent conversion (Google's dp-accounting) agrees that the target is met
    finite = np.isfinite(curve)
    eps_dpa, _ = compute_epsilon(orders[finite], curve[finite], delta)
    assert eps_dpa <= eps * (1 + 1e-9)
    # the accountant accepts exactly `count` releases and refuses one more
    acc = Accountant(budget=(eps, delta))
    acc.spend(m, count=count, tag="dirichlet")
    with pytest.raises(BudgetExceededError):
        acc.spend(m, tag="one too many")
    if scheme == "fixed-alpha":
        np.testing.assert_array_equal(m.alpha, [0.5, 1.0, 2.0])


def test_calibrate_dirichlet_objectives() -> None:
    by_r = calibrate_dirichlet(1.0, 1e-6, SQRT2, 1.0, objective="r")
    by_pc = calibrate_dirichlet(1.0, 1e-6, SQRT2, 1.0)
    assert float(by_r.mechanism.r) >= float(by_pc.mechanism.r)
    pc = float(by_pc.mechanism.alpha) / float(by_pc.mechanism.r)
    assert pc <= float(by_r.mechanism.alpha) / float(by_r.mechanism.r)


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"delta": 0.0}, ValueError, "delta"),
        ({"count": 0}, ValueError, "count"),
        ({"objective": "x"}, ValueError, "objective"),
        ({"orders": [0.5, 2.0]}, ValueError, "orders"),
        ({"orders": [1e6]}, ValueError, "orders"),
        ({"epsilon": 1e-9, "orders": [2.0, 3.0]}, ValueError, "epsilon"),
        ({"scheme": "fixed-alpha"}, ValueError, "alpha"),
    ],
)
def test_calibrate_dirichlet_bad_input(kwargs: dict, exc: type, match: str) -> None:
    args = {"epsilon": 1.0, "delta": 1e-6, "l2_sensitivity": SQRT2, "linf_sensitivity": 1.0}
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        calibrate_dirichlet(**args)
