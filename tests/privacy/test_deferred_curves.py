"""Held-back curves of Gaussian and Laplace spends: the same floats, ledgers and budget decisions
as an accountant that evaluates every curve at once."""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymc_rdp.privacy import accountant as accountant_module
from pymc_rdp.privacy import deferred_curves, rdp
from pymc_rdp.privacy.accountant import Accountant, BudgetExceededError
from pymc_rdp.privacy.curves import laplace_ratio, laplace_rows_checked
from pymc_rdp.privacy.ledger import _CURVE_SLOT, DeferredCurve, LedgerEntry
from pymc_rdp.privacy.mechanisms import (
    CustomCurve,
    GaussianMechanism,
    LaplaceMechanism,
    RandomizedResponse,
)

SMALL_ORDERS = np.array([1.01, 1.5, 2.0, 3.0, 4.5, 8.0, 16.0, 64.0, 256.0, 1e4, 1e6, np.inf])
_SLOT = _CURVE_SLOT  # the slot itself: what an entry holds, without evaluating it


@contextlib.contextmanager
def eager():
    """Every spend evaluates its curve at once (the accountant without held-back curves)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(accountant_module, "DEFERRED_CLASSES", ())
        yield


gaussians = st.builds(GaussianMechanism, st.floats(0.05, 500.0), st.floats(0.01, 5.0))
laplaces = st.one_of(
    st.builds(LaplaceMechanism, st.floats(0.05, 1e4), st.floats(0.01, 5.0)),
    # t = Δ/b from 1e-90 (the closed form on every order) to 200 (no series at all)
    st.builds(LaplaceMechanism, st.sampled_from([1e90, 1e15, 1e12, 3e6, 0.005]), st.just(1.0)),
)
others = st.one_of(
    st.builds(RandomizedResponse, st.floats(0.501, 0.95)),
    st.lists(st.floats(0.0, 2.0), min_size=12, max_size=12).map(
        lambda v: CustomCurve(SMALL_ORDERS, v)
    ),
)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("spend"), st.one_of(gaussians, laplaces), st.integers(1, 4)),
        st.tuples(st.just("spend"), others, st.just(1)),
        st.tuples(st.just("group"), st.one_of(gaussians, laplaces), st.integers(0, 2)),
        st.tuples(st.just("read"), st.none(), st.none()),
    ),
    min_size=1,
    max_size=30,
)


def _run(acc: Accountant, plan, delta: float) -> list:
    """Apply the steps; the outcome of each (admitted, refused, or what was read)."""
    out = []
    for kind, m, k in plan:
        if kind == "read":
            out.append(acc.epsilon(delta, method="rdp"))
            continue
        try:
            if kind == "group":
                acc.spend(m, group="g", partition=k)
            else:
                acc.spend(m, count=k, tag=f"t{len(acc)}")
            out.append(True)
        except BudgetExceededError:
            out.append(False)
    return out


@settings(max_examples=80, deadline=None)
@given(
    steps,
    st.sampled_from(["default", "small"]),
    st.one_of(st.none(), st.floats(0.05, 1.5)),
    st.sampled_from(["dp", "rdp"]),
    st.floats(1e-9, 1e-3),
    st.sampled_from([0, deferred_curves._ONE_BY_ONE]),
)
def test_held_back_curves_change_no_float_and_no_decision(
    plan, grid, share, kind, delta, one_by_one
):
    # An (ε, δ) budget or an RDP budget at order 2 that splits the sequence (share of the
    # whole ledger's loss): every spend is admitted or refused as by the accountant that
    # evaluates each curve at once, and everything it records is the same to the last bit.
    # Held-back curves are evaluated as rows of one array, or one by one for a few of them
    # (one_by_one = 0: always as rows).
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(deferred_curves, "_ONE_BY_ONE", one_by_one)
        _compare_with_eager(plan, grid, share, kind, delta)


def _compare_with_eager(plan, grid, share, kind, delta):
    orders = None if grid == "default" else SMALL_ORDERS

    def new(limit):
        if share is None:
            return Accountant(orders=orders)
        if kind == "dp":
            return Accountant((limit, delta), orders=orders)
        return Accountant.at_order(limit, 2.0, orders=orders)

    with eager():
        probe = Accountant(orders=orders)
        _run(probe, plan, delta)
        loss = probe.epsilon(delta, method="rdp") if kind == "dp" else probe.rdp([2.0])[0]
        limit = share * loss if share is not None and 0 < loss < math.inf else 0.5
        ref = new(limit)
        expected = _run(ref, plan, delta)
    acc = new(limit)
    assert _run(acc, plan, delta) == expected
    np.testing.assert_array_equal(acc.rdp(), ref.rdp())
    assert acc.epsilon(delta) == ref.epsilon(delta)
    assert acc.to_json() == ref.to_json() and acc.digest() == ref.digest()
    for a, b in zip(acc.ledger, ref.ledger, strict=True):
        np.testing.assert_array_equal(a.curve, b.curve)
        assert not a.curve.flags.writeable
    # every entry holds its mechanism's curve on the orders, times its count
    admitted = [
        (m, k if kind == "spend" else 1)
        for (kind, m, k), ok in zip(plan, expected, strict=True)
        if kind != "read" and ok
    ]
    for e, (m, k) in zip(acc.ledger, admitted, strict=True):
        np.testing.assert_array_equal(e.curve, m.rdp(acc.orders) * k)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(1e-3, 1e15),
            st.floats(0.01, 10.0),
        ),
        min_size=1,
        max_size=40,
    ),
    st.sampled_from(["default", "small"]),
)
def test_laplace_rows_are_the_one_at_a_time_curves(params, grid):
    orders = Accountant(orders=None if grid == "default" else SMALL_ORDERS).orders
    t = np.array([laplace_ratio(b, d) for b, d in params])
    rows = laplace_rows_checked(orders, t)
    for row, (b, d) in zip(rows, params, strict=True):
        np.testing.assert_array_equal(row, rdp.laplace(orders, b, d))


@settings(max_examples=60, deadline=None)
@given(st.floats(1e-90, 300.0), st.sampled_from(["default", "small"]))
def test_the_laplace_bound_holds_at_every_order(t, grid):
    # min(t, α t²/2) (1 + 2^-30) bounds the evaluated curve: the one-order budget test of a
    # held-back Laplace spend relies on it
    orders = Accountant(orders=None if grid == "default" else SMALL_ORDERS).orders
    curve = laplace_rows_checked(orders, np.array([t]))[0]
    with np.errstate(over="ignore"):
        bound = np.minimum(t, orders * t * t / 2.0) * (1.0 + 2.0**-30)
    assert np.all(curve <= bound)
    # and it is not vacuous: about t/3 + (αt)²/8 above the curve where αt is small
    at = orders * t
    small = at < 0.1
    assert np.all(bound[small] <= curve[small] * (1.0 + t + at[small] ** 2) * (1.0 + 2.0**-29))


def test_spends_hold_their_curves_back_until_something_reads_them():
    acc = Accountant(budget=(50.0, 1e-6))
    entries = [acc.spend(GaussianMechanism(30.0 + i, 1.5)) for i in range(5)]
    entries += [acc.spend(LaplaceMechanism(40.0 + i, 0.5), count=2) for i in range(5)]
    # the first spend is decided exactly (the one-order test of an empty ledger is at its
    # largest order, where the Gaussian curve is large); the budget test then moves to a lower
    # order, where the bound shows every further spend to be within the budget
    assert len(acc._deferred) == 9
    assert all(_SLOT.__get__(e, LedgerEntry).__class__ is DeferredCurve for e in entries[1:])
    # reading one entry's curve evaluates all of them, each its mechanism's curve
    np.testing.assert_array_equal(entries[7].curve, 2 * LaplaceMechanism(42.0, 0.5).rdp(acc.orders))
    assert len(acc._deferred) == 0
    assert all(_SLOT.__get__(e, LedgerEntry).__class__ is np.ndarray for e in entries)
    with eager():
        ref = Accountant(budget=(50.0, 1e-6))
        for e in entries:
            m = LaplaceMechanism(**e.params) if e.mechanism == "laplace" else None
            ref.spend(m or GaussianMechanism(**e.params), count=e.count)
    np.testing.assert_array_equal(acc.rdp(), ref.rdp())


def test_a_held_back_entry_copies_pickles_and_replaces_as_its_curve():
    for read in ("copy", "deepcopy", "pickle", "replace", "asdict", "to_dict"):
        acc = Accountant()
        e = acc.spend(LaplaceMechanism(7.0, 1.0), tag="x")
        want = LaplaceMechanism(7.0, 1.0).rdp(acc.orders)
        if read == "copy":
            got = copy.copy(e).curve
        elif read == "deepcopy":
            got = copy.deepcopy(e).curve
        elif read == "pickle":
            got = pickle.loads(pickle.dumps(e)).curve
        elif read == "replace":
            got = dataclasses.replace(e, tag="y").curve
        elif read == "asdict":
            got = dataclasses.asdict(e)["curve"]
        else:
            got = np.array(e.to_dict()["curve"])
        np.testing.assert_array_equal(got, want)
        assert type(got) is np.ndarray


def test_forks_and_pickles_of_an_accountant_with_held_back_curves_are_independent():
    acc = Accountant(budget=(20.0, 1e-6))
    for i in range(4):
        acc.spend(GaussianMechanism(10.0 + i))
        acc.spend(LaplaceMechanism(10.0 + i))
    fork = acc.fork()
    clone = pickle.loads(pickle.dumps(acc))
    for a in (acc, fork, clone):
        a.spend(GaussianMechanism(3.0))
    fork.spend(LaplaceMechanism(2.0))
    assert len(acc) == len(clone) == 9 and len(fork) == 10
    np.testing.assert_array_equal(acc.rdp(), clone.rdp())
    assert acc.to_json() == clone.to_json()
    np.testing.assert_array_equal(fork.rdp(), acc.rdp() + LaplaceMechanism(2.0).rdp(acc.orders))


def test_parameters_the_held_back_path_does_not_take_go_the_general_way():
    acc = Accountant()
    g = GaussianMechanism(2.0)
    g.sigma = np.float64(2.0)  # not a plain float: evaluated at once, the same curve
    e = acc.spend(g)
    assert _SLOT.__get__(e, LedgerEntry).__class__ is np.ndarray
    np.testing.assert_array_equal(e.curve, GaussianMechanism(2.0).rdp(acc.orders))
    bad = LaplaceMechanism(1.0)
    bad.scale = -1.0  # an edited mechanism is refused as before, and nothing is recorded
    with pytest.raises(ValueError, match="scale"):
        acc.spend(bad)
    assert len(acc) == 1

    class Sub(GaussianMechanism):  # a subclass may override rdp: never held back
        name = "sub_gaussian_for_deferred_test"

        def rdp(self, orders=None):
            return 2 * super().rdp(orders)

    e = acc.spend(Sub(2.0))
    np.testing.assert_array_equal(e.curve, 2 * GaussianMechanism(2.0).rdp(acc.orders))


def test_an_rdp_budget_at_one_order_decides_held_back_spends_exactly():
    lam = 8.0
    per = float(GaussianMechanism(5.0).rdp(np.array([lam]))[0])
    limit = 0.0
    for _ in range(10):
        limit += per  # the composed value after ten spends, to the last bit
    acc = Accountant.at_order(limit, lam)
    for _ in range(10):  # the last one lands exactly on the budget: admitted
        acc.spend(GaussianMechanism(5.0))
    assert len(acc._deferred) == 10
    assert acc.rdp(np.array([lam]))[0] == limit
    with pytest.raises(BudgetExceededError):
        acc.spend(LaplaceMechanism(1e6))  # ε(8) ≈ 4e-12: over the budget
    assert len(acc) == 10
