"""Accountant: composition, budgets, cross-checks against dp-accounting, serialisation, input."""

from __future__ import annotations

import json
import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as dpa
from hypothesis import given, settings
from hypothesis import strategies as st

from pymc_rdp.privacy import rdp
from pymc_rdp.privacy.accountant import Accountant, BudgetExceededError, LedgerEntry
from pymc_rdp.privacy.mechanisms import (
    CustomCurve,
    GaussianMechanism,
    LaplaceMechanism,
    RandomizedResponse,
)

DPA_ORDERS = np.array(dpa.DEFAULT_RDP_ORDERS, dtype=np.float64)

mechanisms = st.one_of(
    st.builds(GaussianMechanism, st.floats(0.3, 30.0), st.floats(0.1, 3.0)),
    st.builds(LaplaceMechanism, st.floats(0.3, 30.0), st.floats(0.1, 3.0)),
    st.builds(RandomizedResponse, st.floats(0.501, 0.99)),
)


def _random_mechanism(rng: np.random.Generator):
    kind = rng.integers(3)
    if kind == 0:
        return GaussianMechanism(rng.uniform(0.5, 50.0), rng.uniform(0.5, 2.0))
    if kind == 1:
        return LaplaceMechanism(rng.uniform(0.5, 50.0), rng.uniform(0.5, 2.0))
    return RandomizedResponse(rng.uniform(0.501, 0.8))


def _dp_event(m):
    if isinstance(m, GaussianMechanism):
        return dp_accounting.GaussianDpEvent(m.sigma / m.sensitivity)
    if isinstance(m, LaplaceMechanism):
        return dp_accounting.LaplaceDpEvent(m.scale / m.sensitivity)
    # binary RR keeping the bit with probability p = 1 - q/2 (q: dp-accounting's noise parameter)
    return dp_accounting.RandomizedResponseDpEvent(noise_parameter=2 * (1 - m.p), num_buckets=2)


# ------------------------------------------------------------------ composition


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(mechanisms, st.integers(1, 5)), min_size=1, max_size=8))
def test_sequential_composition_is_additive(items):
    acc = Accountant()
    expected = np.zeros(acc.orders.size)
    for m, c in items:
        entry = acc.spend(m, count=c)
        np.testing.assert_array_equal(entry.curve, m.rdp(acc.orders) * c)
        expected = expected + m.rdp(acc.orders) * c
    np.testing.assert_allclose(acc.rdp(), expected, rtol=1e-13)
    np.testing.assert_allclose(acc.rdp(), sum(c * m.rdp(acc.orders) for m, c in items), rtol=1e-12)


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.tuples(mechanisms, st.integers(0, 3)), min_size=1, max_size=10),
    st.lists(mechanisms, max_size=3),
)
def test_parallel_composition_is_the_max_of_partition_sums(items, sequential):
    acc = Accountant()
    for m, part in items:
        acc.spend(m, group="family", partition=part)
    for m in sequential:
        acc.spend(m)
    sums: dict[int, np.ndarray] = {}
    for m, part in items:
        sums[part] = sums.get(part, 0) + m.rdp(acc.orders)
    expected = np.max(np.stack(list(sums.values())), axis=0)
    expected = expected + sum((m.rdp(acc.orders) for m in sequential), np.zeros(acc.orders.size))
    np.testing.assert_allclose(acc.rdp(), expected, rtol=1e-12)


def test_two_groups_add_and_partitionless_entries_are_sequential():
    o = [2.0, 4.0]
    acc = Accountant(orders=o)
    a, b = CustomCurve(o, [1.0, 2.0]), CustomCurve(o, [3.0, 0.5])
    acc.spend(a, group="g1", partition=0)
    acc.spend(b, group="g1", partition=1)  # g1: max -> [3, 2]
    acc.spend(a, group="g2", partition="x", count=2)  # g2: [2, 4]
    acc.spend(b, group="g2")  # no partition: sequential, [3, 0.5]
    np.testing.assert_array_equal(acc.rdp(), [3 + 2 + 3, 2 + 4 + 0.5])


@settings(max_examples=20, deadline=None)
@given(
    st.lists(mechanisms, min_size=1, max_size=6),
    st.floats(1e-10, 0.5),
    st.floats(1e-10, 0.5),
)
def test_conversion_is_monotone_in_delta(items, d1, d2):
    acc = Accountant()
    for m in items:
        acc.spend(m)
    lo, hi = sorted((d1, d2))
    assert acc.epsilon(lo) >= acc.epsilon(hi)
    assert acc.epsilon(lo, method="rdp") >= acc.epsilon(hi, method="rdp")
    # the default is the tightest valid bound: never above the RDP conversion
    assert acc.epsilon(lo, method="rdp") == rdp.to_dp(acc.orders, acc.rdp(), lo)[0]
    assert acc.epsilon(lo) <= acc.epsilon(lo, method="rdp")


def test_delta_and_epsilon_are_consistent():
    acc = Accountant()
    acc.spend(GaussianMechanism(5.0), count=10)
    eps = acc.epsilon(1e-6, method="rdp")  # delta() inverts the RDP conversion
    assert acc.delta(eps) <= 1e-6 * (1 + 1e-9)
    eps2, order = acc.epsilon_and_order(1e-6)
    assert eps2 == eps and order in acc.orders


# ------------------------------------------------------------------ cross-check with dp-accounting


@pytest.mark.parametrize("seed", range(6))
def test_cross_check_heterogeneous_workload_against_dp_accounting(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 40))
    mechs = [_random_mechanism(rng) for _ in range(n)]
    counts = [int(c) for c in rng.integers(1, 4, n)]
    ours = Accountant(orders=DPA_ORDERS)
    for m, c in zip(mechs, counts, strict=True):
        ours.spend(m, count=c)
    theirs = dp_accounting.rdp.RdpAccountant(
        neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE
    )
    events = [
        dp_accounting.SelfComposedDpEvent(_dp_event(m), c) if c > 1 else _dp_event(m)
        for m, c in zip(mechs, counts, strict=True)
    ]
    theirs.compose(dp_accounting.ComposedDpEvent(events))
    np.testing.assert_allclose(ours.rdp(), theirs.rdp, rtol=1e-9)
    for delta in (1e-9, 1e-6, 1e-3):
        e_ours, e_theirs = ours.epsilon(delta, method="rdp"), theirs.get_epsilon(delta)
        assert e_ours <= e_theirs + 1e-12
        assert e_ours == pytest.approx(e_theirs, rel=1e-8)
    # the default (denser) grid is never looser
    dense = Accountant()
    dense.spend_batch(mechs, count=counts)
    assert dense.epsilon(1e-6, method="rdp") <= theirs.get_epsilon(1e-6) + 1e-12
    assert dense.epsilon(1e-6) <= dense.epsilon(1e-6, method="rdp")


# ------------------------------------------------------------------ budgets


def test_budget_refusal_leaves_the_ledger_byte_identical():
    acc = Accountant(budget=(1.0, 1e-6))
    acc.spend(GaussianMechanism(10.0), tag="first")
    acc.spend(LaplaceMechanism(20.0), group="g", partition=(1, "a"))
    before = acc.to_json()
    curve_before = acc.rdp()
    for kwargs in ({}, {"group": "g", "partition": (1, "a")}, {"group": "h", "partition": 0}):
        with pytest.raises(BudgetExceededError, match="budget"):
            acc.spend(GaussianMechanism(0.5), tag="too much", **kwargs)
        assert acc.to_json() == before
    with pytest.raises(BudgetExceededError):
        acc.spend_batch([GaussianMechanism(30.0)] * 3 + [GaussianMechanism(0.5)])
    assert acc.to_json() == before
    np.testing.assert_array_equal(acc.rdp(), curve_before)
    assert len(acc) == 2
    assert isinstance(BudgetExceededError("x"), ValueError)


def test_budget_is_met_exactly_by_a_calibrated_mechanism():
    m = GaussianMechanism.calibrate(1.0, delta=1e-6)
    acc = Accountant(budget=(1.0, 1e-6))
    assert acc.can_spend(m)
    acc.spend(m)
    assert acc.remaining() == pytest.approx(0.0, abs=1e-12)
    assert not acc.can_spend(GaussianMechanism(1e3))


def test_can_spend_agrees_with_spend(rng):
    acc = Accountant(budget=(3.0, 1e-5))
    for _ in range(200):
        m = _random_mechanism(rng)
        group, part = ("g", int(rng.integers(3))) if rng.random() < 0.3 else (None, None)
        ok = acc.can_spend(m, group=group, partition=part)
        n = len(acc)
        if ok:
            acc.spend(m, group=group, partition=part)
            assert len(acc) == n + 1
        else:
            with pytest.raises(BudgetExceededError):
                acc.spend(m, group=group, partition=part)
            assert len(acc) == n
    assert acc.epsilon() <= 3.0
    assert acc.remaining() == pytest.approx(3.0 - acc.epsilon(), abs=1e-15)


def test_rdp_budget_at_an_order():
    acc = Accountant.at_order(1.0, 7.25)  # 7.25 is not a default order: it is added
    assert 7.25 in acc.orders and acc.budget_order == (1.0, 7.25) and acc.budget is None
    m = GaussianMechanism.calibrate(0.25, order=7.25)
    acc.spend(m, count=4)
    assert acc.rdp([7.25])[0] <= 1.0
    assert acc.remaining() == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(BudgetExceededError, match=r"order 7\.25"):
        acc.spend(GaussianMechanism(1e4))
    with pytest.raises(ValueError, match="delta"):
        acc.remaining(1e-5)
    with pytest.raises(ValueError, match="delta"):
        acc.epsilon()
    assert acc.epsilon(1e-5) > 0


def test_unbounded_curves_without_and_with_budget():
    inf_orders = np.append(rdp.DEFAULT_ORDERS, np.inf)
    free = Accountant(orders=inf_orders)
    free.spend(GaussianMechanism(1.0))  # ε(∞) = ∞
    assert math.isinf(free.rdp()[-1]) and math.isfinite(free.epsilon(1e-6))
    never = CustomCurve([2.0, 3.0], [np.inf, np.inf])
    free.spend(never)
    assert free.epsilon(1e-6) == math.inf
    assert free.remaining() == math.inf
    budgeted = Accountant(budget=(10.0, 1e-6))
    assert not budgeted.can_spend(never)
    with pytest.raises(BudgetExceededError):
        budgeted.spend(never)
    assert len(budgeted) == 0


# ------------------------------------------------------------------ batches


def test_batch_matches_one_at_a_time_and_composes_in_order(rng):
    mechs = [_random_mechanism(rng) for _ in range(600)]
    counts = [int(c) for c in rng.integers(1, 4, 600)]
    parts = [None if rng.random() < 0.5 else int(rng.integers(4)) for _ in range(600)]
    one = Accountant()
    one.spend(GaussianMechanism(3.0), group="rows", partition=9)
    for m, c, p in zip(mechs, counts, parts, strict=True):
        one.spend(m, count=c, group="rows", partition=p)
    batch = Accountant()
    batch.spend(GaussianMechanism(3.0), group="rows", partition=9)
    entries = batch.spend_batch(mechs, count=counts, group="rows", partitions=parts)
    assert len(entries) == 600 and entries[-1].index == 600
    np.testing.assert_allclose(one.rdp(), batch.rdp(), rtol=1e-12)
    for a, b in zip(one.ledger, batch.ledger, strict=True):
        assert (a.tag, a.mechanism, a.params, a.count, a.group, a.partition, a.index) == (
            b.tag,
            b.mechanism,
            b.params,
            b.count,
            b.group,
            b.partition,
            b.index,
        )
        np.testing.assert_allclose(a.curve, b.curve, rtol=1e-12)
    # composition order is that of successive spends: replaying the batch's own entry curves
    # one at a time gives the batch's composed curve bit for bit
    replay = Accountant()
    for e in batch.ledger:
        replay.spend(CustomCurve(batch.orders, e.curve), group=e.group, partition=e.partition)
    np.testing.assert_array_equal(replay.rdp(), batch.rdp())


def test_large_batch_sequential_sum_is_in_spend_order(rng):
    mechs = [_random_mechanism(rng) for _ in range(5000)]
    batch = Accountant()
    entries = batch.spend_batch(mechs)
    total = np.zeros(batch.orders.size)
    for e in entries:
        total = total + e.curve
    np.testing.assert_array_equal(batch.rdp(), total)
    one = Accountant()
    for m in mechs:
        one.spend(m)
    np.testing.assert_allclose(one.rdp(), batch.rdp(), rtol=1e-12)


def test_batch_with_tags_and_bad_lengths():
    acc = Accountant()
    out = acc.spend_batch([GaussianMechanism(2.0), RandomizedResponse(0.6)], tags=["a", None])
    assert [e.tag for e in out] == ["a", None]
    assert acc.spend_batch([]) == []
    with pytest.raises(ValueError, match="tags"):
        acc.spend_batch([GaussianMechanism(2.0)], tags=["a", "b"])
    with pytest.raises(ValueError, match="count"):
        acc.spend_batch([GaussianMechanism(2.0)], count=[1, 2])
    with pytest.raises(ValueError, match="partitions"):
        acc.spend_batch([GaussianMechanism(2.0)], partitions=[1])
    with pytest.raises(TypeError, match="mechanisms"):
        acc.spend_batch(GaussianMechanism(2.0))
    with pytest.raises(TypeError, match=r"mechanisms\[1\]"):
        acc.spend_batch([GaussianMechanism(2.0), "gaussian"])
    assert len(acc) == 2


# ------------------------------------------------------------------ queries at other orders


def test_rdp_at_own_subset_and_at_new_orders():
    acc = Accountant()
    g, lap = GaussianMechanism(3.0), LaplaceMechanism(2.0)
    acc.spend(g, count=2)
    acc.spend(lap, group="g", partition=0)
    acc.spend(lap, group="g", partition=1, count=3)
    sub = acc.orders[[3, 10, 50]]
    np.testing.assert_array_equal(acc.rdp(sub), acc.rdp()[[3, 10, 50]])
    new = np.array([1.37, 2.71, 123.4])
    expected = 2 * g.rdp(new) + 3 * lap.rdp(new)
    np.testing.assert_allclose(acc.rdp(new), expected, rtol=1e-12)
    assert acc.rdp(new.reshape(3, 1)).shape == (3, 1)
    with pytest.raises(ValueError, match="orders"):
        acc.rdp([0.5])


class _Unrebuildable(GaussianMechanism):
    """A registered mechanism whose parameters do not rebuild it."""

    name = "test-unrebuildable"

    @classmethod
    def from_params(cls, params):
        raise TypeError("no constructor from params")


def test_rdp_at_new_orders_refuses_unknown_mechanisms():
    acc = Accountant()
    acc.spend(_Unrebuildable(3.0))
    with pytest.raises(ValueError, match="cannot be re-evaluated"):
        acc.rdp([2.345])
    # a ledger whose mechanism cannot be rebuilt cannot have its curves verified: refused
    with pytest.raises(ValueError, match=r"entry 0: its mechanism .* cannot be rebuilt"):
        Accountant.from_json(acc.to_json())
    plain = Accountant()
    plain.spend(GaussianMechanism(3.0))
    doc = json.loads(plain.to_json())
    doc["entries"][0]["mechanism"] = "unregistered-mechanism"
    with pytest.raises(ValueError, match="cannot be rebuilt"):
        Accountant.from_json(json.dumps(doc))


# ------------------------------------------------------------------ JSON


def test_json_round_trip_is_exact():
    orders = np.append(rdp.DEFAULT_ORDERS, np.inf)
    acc = Accountant(budget=(50.0, 1e-7), orders=orders)
    acc.spend(GaussianMechanism(0.1 + 0.2, 1 / 3), tag="ü-counts", count=3)
    acc.spend(LaplaceMechanism(math.pi), group="fam", partition=(0, "x"))
    acc.spend(LaplaceMechanism(math.e), group="fam", partition=(1, "y"))
    acc.spend(RandomizedResponse(0.6180339887), group=7)
    acc.spend(CustomCurve([2.0, 5.0], [0.01, np.inf], label="external"))
    s = acc.to_json()
    json.loads(s, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    back = Accountant.from_json(s)
    assert back.to_json() == s
    np.testing.assert_array_equal(back.rdp(), acc.rdp())
    assert back.budget == acc.budget
    for a, b in zip(acc.ledger, back.ledger, strict=True):
        assert (a.tag, a.mechanism, a.params, a.count, a.group, a.partition, a.index) == (
            b.tag,
            b.mechanism,
            b.params,
            b.count,
            b.group,
            b.partition,
            b.index,
        )
        np.testing.assert_array_equal(a.curve, b.curve)
    assert back.ledger[1].partition == (0, "x")
    # the restored accountant keeps composing like the original
    acc.spend(LaplaceMechanism(1.0), group="fam", partition=(0, "x"))
    back.spend(LaplaceMechanism(1.0), group="fam", partition=(0, "x"))
    assert back.to_json() == acc.to_json()


def test_json_round_trip_of_an_rdp_budget():
    acc = Accountant.at_order(2.0, 16.0)
    acc.spend(LaplaceMechanism(3.0))
    back = Accountant.from_json(acc.to_json())
    assert back.budget_order == (2.0, 16.0)
    assert back.to_json() == acc.to_json()


@pytest.mark.parametrize(
    "s,exc,match",
    [
        ("not json", ValueError, "JSON"),
        ('{"format": "other"}', ValueError, "ledger"),
        ('{"format": "pymc-rdp-ledger", "version": 99}', ValueError, "version"),
        (b"\x00", ValueError, "JSON"),
        (12, TypeError, "JSON string"),
    ],
)
def test_from_json_bad_input(s, exc, match):
    with pytest.raises(exc, match=match):
        Accountant.from_json(s)


# ------------------------------------------------------------------ ledger and report


def test_ledger_entries_and_report():
    acc = Accountant(budget=(4.0, 1e-6))
    e = acc.spend(GaussianMechanism(8.0), count=2, tag="age histogram")
    assert isinstance(e, LedgerEntry)
    assert (e.tag, e.mechanism, e.params, e.count) == (
        "age histogram",
        "gaussian",
        {"sigma": 8.0, "sensitivity": 1.0},
        2,
    )
    assert not e.curve.flags.writeable
    acc.spend(RandomizedResponse(0.6), group="rows", partition="r1")
    ledger = acc.ledger
    ledger.clear()
    assert len(acc.ledger) == 2  # a copy
    text = acc.report()
    assert "age histogram" in text and "gaussian" in text and "rows/r1" in text
    assert f"{acc.epsilon():.6g}" in text and "remaining" in text
    assert "ε(δ=1e-06)" in text
    rdp_text = Accountant.at_order(1.0, 8.0).report()
    assert "order 8" in rdp_text
    assert "more entries" in _many().report(max_rows=3)


def _many():
    acc = Accountant()
    acc.spend_batch([GaussianMechanism(10.0)] * 5)
    return acc


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    "kwargs,exc,match",
    [
        ({"budget": (0.0, 1e-6)}, ValueError, "epsilon"),
        ({"budget": (-1.0, 1e-6)}, ValueError, "epsilon"),
        ({"budget": (np.nan, 1e-6)}, ValueError, "epsilon"),
        ({"budget": (np.inf, 1e-6)}, ValueError, "epsilon"),
        ({"budget": (1.0, 0.0)}, ValueError, "delta"),
        ({"budget": (1.0, 1.0)}, ValueError, "delta"),
        ({"budget": (1.0, np.nan)}, ValueError, "delta"),
        ({"budget": (1.0,)}, ValueError, "budget"),
        ({"budget": 1.0}, TypeError, "budget"),
        ({"budget": "1,1e-6"}, TypeError, "budget"),
        ({"orders": [1.0, 2.0]}, ValueError, "orders"),
        ({"orders": [np.nan, 2.0]}, ValueError, "orders"),
        ({"orders": []}, ValueError, "orders"),
        ({"orders": [[2.0, 3.0]]}, ValueError, "orders"),
    ],
)
def test_constructor_bad_input(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        Accountant(**kwargs)


def test_at_order_bad_input():
    with pytest.raises(ValueError, match="order"):
        Accountant.at_order(1.0, 1.0)
    with pytest.raises(ValueError, match="order"):
        Accountant.at_order(1.0, np.nan)
    with pytest.raises(ValueError, match="epsilon"):
        Accountant.at_order(0.0, 2.0)


@pytest.mark.parametrize(
    "kwargs,exc,match",
    [
        ({"mechanism": "gaussian"}, TypeError, "mechanism"),
        ({"count": 0}, ValueError, "count"),
        ({"count": -2}, ValueError, "count"),
        ({"count": 1.5}, TypeError, "count"),
        ({"count": True}, TypeError, "count"),
        ({"tag": 3}, TypeError, "tag"),
        ({"partition": 1}, ValueError, "partition"),
        ({"group": 1.5}, TypeError, "group"),
        ({"group": "g", "partition": [1, 2]}, TypeError, "partition"),
    ],
)
def test_spend_bad_input(kwargs, exc, match):
    acc = Accountant()
    args = {"mechanism": GaussianMechanism(1.0), **kwargs}
    with pytest.raises(exc, match=match):
        acc.spend(**args)
    assert len(acc) == 0
    if "tag" not in kwargs:
        with pytest.raises(exc, match=match):
            acc.can_spend(**args)


def test_query_bad_input():
    acc = Accountant(budget=(1.0, 1e-6))
    acc.spend(GaussianMechanism(10.0))
    for bad in (0.0, 1.0, np.nan, -1e-3):
        with pytest.raises(ValueError, match="delta"):
            acc.epsilon(bad)
    with pytest.raises(ValueError, match="delta"):
        acc.remaining(1e-3)
    with pytest.raises(ValueError, match="epsilon"):
        acc.delta(0.0)
    with pytest.raises(ValueError, match="delta"):
        Accountant().epsilon()
    with pytest.raises(ValueError, match="delta"):
        acc.report(delta=2.0)
    with pytest.raises(ValueError, match="max_rows"):
        acc.report(max_rows=0)


def test_dirichlet_entries_round_trip_and_reevaluate():
    from pymc_rdp.privacy.mechanisms import DirichletMechanism

    m = DirichletMechanism.calibrate(0.5, 8.0, l2_sensitivity=math.sqrt(2.0), linf_sensitivity=1.0)
    acc = Accountant.at_order(2.0, 8.0)
    acc.spend(m, count=2, tag="cpt row", group="family", partition=(0, 1))
    assert acc.rdp([8.0])[0] == pytest.approx(1.0, rel=1e-12)
    back = Accountant.from_json(acc.to_json())
    assert back.to_json() == acc.to_json()
    np.testing.assert_allclose(back.rdp([3.3, 5.5]), 2 * m.rdp([3.3, 5.5]), rtol=1e-12)
    batched = DirichletMechanism([1.0, 2.0], 50.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="one setting at a time"):
        acc.spend(batched)


def test_batch_counts_as_an_array_and_mechanism_arrays_stay_writable():
    acc = Accountant(orders=[2.0, 3.0])
    arr = np.array([0.1, 0.2])

    class Cached(CustomCurve):
        name = "cached_curve_for_test"

        def rdp(self, orders=None):
            return arr  # returns an array it keeps

    acc.spend(Cached([2.0, 3.0], [0.1, 0.2]))
    assert arr.flags.writeable
    acc.spend_batch([GaussianMechanism(1.0)] * 2, count=np.array([2, 3]))
    np.testing.assert_allclose(acc.rdp(), arr + 5 * np.array([1.0, 1.5]), rtol=1e-15)


# ------------------------------------------------------------------ fast paths keep the semantics


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(st.floats(0.0, 50.0), st.just(math.inf)),
        min_size=1,
        max_size=12,
    ),
    st.floats(1e-12, 0.5),
    st.floats(1e-3, 40.0),
    st.sampled_from([-1, 0, 1, None]),
)
def test_budget_decision_is_exactly_that_of_to_dp(values, delta, eps, nudge):
    # the sufficient test that runs first must never change a decision of the full conversion
    orders = np.array([1.01, 1.5, 2.0, 3.0, 4.5, 8.0, 16.0, 64.0, 256.0, 1e4, 1e6, np.inf])
    curve = np.resize(np.asarray(values, dtype=np.float64), orders.size)
    exact = rdp.to_dp(orders, curve, delta)[0]
    if nudge is not None and math.isfinite(exact) and exact > 0:
        # a budget at the converted ε itself, or one ulp either side of it
        eps = float(np.nextafter(exact, math.inf if nudge > 0 else -math.inf)) if nudge else exact
    acc = Accountant(budget=(eps, delta), orders=orders)
    ok = acc.can_spend(CustomCurve(orders, curve))
    assert ok == (exact <= eps)
    if ok:
        acc.spend(CustomCurve(orders, curve))
        assert acc.epsilon() == exact
    else:
        with pytest.raises(BudgetExceededError):
            acc.spend(CustomCurve(orders, curve))
        assert len(acc) == 0


_SEQ_ORDERS = np.array([1.01, 1.5, 2.0, 3.0, 4.5, 8.0, 16.0, 64.0, 256.0, 1e4, 1e6, np.inf])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.lists(
                st.one_of(st.floats(0.0, 3.0), st.just(math.inf)), min_size=12, max_size=12
            ).map(lambda v: CustomCurve(_SEQ_ORDERS, v)),
            st.builds(GaussianMechanism, st.floats(0.5, 20.0)),
        ),
        min_size=1,
        max_size=25,
    ),
    st.floats(1e-9, 1e-2),
    st.floats(0.05, 1.5),
)
def test_budget_shortcuts_decide_every_spend_of_a_sequence_as_the_full_computation(
    mechs, delta, share
):
    # The budget test reads the composed curve at the best order of its last full test first;
    # along a sequence of spends (admitted and refused) every decision must be that of the full
    # computation on the ledger with the spend: ε by the tightest valid bound (RDP conversion
    # for caller-supplied curves, the exact Gaussian ε for Gaussian-only ledgers) <= budget.
    full = Accountant(orders=_SEQ_ORDERS)
    full.spend_batch(mechs)
    eps = share * full.epsilon(delta, method="rdp")
    if not 0 < eps < math.inf:
        eps = share  # a ledger of infinite (or zero) loss: any budget splits the sequence
    acc = Accountant(budget=(eps, delta), orders=_SEQ_ORDERS)
    plain = Accountant(orders=_SEQ_ORDERS)  # the admitted spends, without a budget
    for m in mechs:
        probe = plain.fork()
        probe.spend(m)
        expected = probe.epsilon(delta) <= eps
        assert acc.can_spend(m) == expected
        if expected:
            acc.spend(m)
            plain.spend(m)
        else:
            with pytest.raises(BudgetExceededError):
                acc.spend(m)
        # the shortcut changes no float: the same curve and ε as without a budget
        np.testing.assert_array_equal(acc.rdp(), plain.rdp())
        assert acc.epsilon(delta) == plain.epsilon(delta)
        assert acc.epsilon(delta, method="rdp") == float(
            rdp.to_dp(_SEQ_ORDERS, plain.rdp(), delta)[0]
        )


def test_batches_return_entries_that_behave_as_a_list():
    acc = Accountant()
    acc.spend(GaussianMechanism(5.0), tag="first")
    mechs = [GaussianMechanism(2.0), LaplaceMechanism(3.0), RandomizedResponse(0.6)]
    out = acc.spend_batch(mechs, tags=["a", "b", "c"])
    assert len(out) == 3 and out == acc.ledger[1:] and out == list(out)
    assert [e.index for e in out] == [1, 2, 3] and out[-1] is acc.ledger[3]
    assert out[1:] == [acc.ledger[2], acc.ledger[3]] and out[::-1][0] is out[2]
    assert repr(out) == repr(acc.ledger[1:]) and out != [acc.ledger[0]]
    for e, m in zip(out, mechs, strict=True):
        assert type(e) is LedgerEntry and e.mechanism == m.name and e.params == m.params()
    with pytest.raises(IndexError):
        out[3]
    # a fork shares the built entries and builds its own for the rest
    fork = acc.fork()
    fork.spend(GaussianMechanism(9.0))
    assert [e.to_dict() for e in fork.ledger[:4]] == [e.to_dict() for e in acc.ledger]
    assert len(acc) == 4 and len(fork) == 5


def test_a_curve_the_mechanism_keeps_is_copied():
    class Keeper(CustomCurve):
        name = "keeper_curve_for_test"

        def rdp(self, orders=None):
            self.kept = np.full(np.shape(orders), 0.5)
            return self.kept

    acc = Accountant(orders=[2.0, 3.0])
    m = Keeper([2.0, 3.0], [0.5, 0.5])
    e = acc.spend(m)
    m.kept[:] = 0.0  # the mechanism changes the array it returned
    np.testing.assert_array_equal(e.curve, [0.5, 0.5])
    np.testing.assert_array_equal(acc.rdp(), [0.5, 0.5])


def test_budget_decision_on_the_default_orders_near_the_boundary(rng):
    for _ in range(50):
        m = _random_mechanism(rng)
        c = int(rng.integers(1, 50))
        exact = rdp.to_dp(rdp.DEFAULT_ORDERS, c * m.rdp(rdp.DEFAULT_ORDERS), 1e-6)[0]
        probe = Accountant()
        probe.spend(m, count=c)
        best = probe.epsilon(1e-6)  # the budget admits what the tightest valid bound admits
        assert best <= exact
        for eps in (exact, np.nextafter(exact, 0.0), np.nextafter(exact, np.inf)):
            acc = Accountant(budget=(float(eps), 1e-6))
            assert acc.can_spend(m, count=c) == (exact <= eps or best <= eps)
        for eps in (best, np.nextafter(best, 0.0)):
            if eps > 0:
                acc = Accountant(budget=(float(eps), 1e-6))
                assert acc.can_spend(m, count=c) == (best <= eps)


def test_entries_are_frozen_ledger_entries_with_stable_identity():
    import copy
    import dataclasses
    import pickle

    acc = Accountant()
    single = acc.spend(GaussianMechanism(3.0), count=2, tag="a", group="g", partition=(1, "x"))
    batch = acc.spend_batch([LaplaceMechanism(2.0), RandomizedResponse(0.7)], tags=["b", None])
    names = [f.name for f in dataclasses.fields(LedgerEntry)]
    assert names == ["tag", "mechanism", "params", "count", "group", "partition", "curve", "index"]
    for e in [single, *batch]:
        assert isinstance(e, LedgerEntry)
        plain = LedgerEntry(*(getattr(e, f) for f in names))
        assert repr(e) == repr(plain) and repr(e).startswith("LedgerEntry(tag=")
        assert e.to_dict() == plain.to_dict()
        assert e.mechanism_dict() == plain.mechanism_dict()
        assert not e.curve.flags.writeable
        with pytest.raises(dataclasses.FrozenInstanceError):
            e.tag = "changed"
        for clone in (copy.copy(e), copy.deepcopy(e), pickle.loads(pickle.dumps(e))):
            assert type(clone) is LedgerEntry
            assert clone.to_dict() == e.to_dict() and clone.index == e.index
        changed = dataclasses.replace(e, tag="z")
        assert type(changed) is LedgerEntry and changed.tag == "z" and changed.index == e.index
        assert dataclasses.asdict(e).keys() == set(names)
    assert [e.index for e in acc.ledger] == [0, 1, 2]
    assert acc.ledger[1] is acc.ledger[1] is batch[0]
    assert (single.group, single.partition, batch[1].tag, batch[1].group) == (
        "g",
        (1, "x"),
        None,
        None,
    )


def test_spends_after_from_json_keep_indices_and_round_trip():
    acc = Accountant(budget=(50.0, 1e-6))
    acc.spend(GaussianMechanism(3.0))
    acc.spend_batch([GaussianMechanism(4.0), LaplaceMechanism(9.0)], group="g", partitions=[0, 1])
    back = Accountant.from_json(acc.to_json())
    for a in (acc, back):
        a.spend(RandomizedResponse(0.55), tag="after")
        a.spend_batch([GaussianMechanism(7.0)] * 2, count=[1, 3])
        a.spend(GaussianMechanism(8.0), group="g", partition=2)
    assert back.to_json() == acc.to_json()
    assert [e.index for e in back.ledger] == list(range(7))
    assert [e.to_dict() for e in back.ledger] == [e.to_dict() for e in acc.ledger]
    np.testing.assert_array_equal(back.rdp(), acc.rdp())


def test_curve_cache_reuses_equal_mechanisms_and_survives_eviction(monkeypatch):
    from pymc_rdp.privacy import entry_curves

    monkeypatch.setattr(entry_curves, "CACHE_SIZE", 3)
    calls = []

    class Counting(GaussianMechanism):
        name = "counting_gaussian_for_test"

        def rdp(self, orders=None):
            calls.append(self.sigma)
            return super().rdp(orders)

    acc = Accountant()
    sigmas = [2.0, 3.0, 2.0, 4.0, 5.0, 6.0, 2.0, 2.0]
    for s in sigmas:
        e = acc.spend(Counting(s), count=2 if s == 6.0 else 1)
        np.testing.assert_array_equal(e.curve, GaussianMechanism(s).rdp(acc.orders) * e.count)
    # 2.0 is evaluated once, until the cache (3 curves) is cleared by the 4th distinct curve
    assert calls == [2.0, 3.0, 4.0, 5.0, 6.0, 2.0]
    # parameters that are lists (unhashable) are keyed by their repr
    o = acc.orders[:3]
    small = Accountant(orders=o)
    a, b = CustomCurve(o, [0.1, 0.2, 0.3]), CustomCurve(o, [0.1, 0.2, 0.3])
    c = CustomCurve(o, [0.1, 0.2, 0.3], label="other")
    ea, eb, ec = small.spend(a), small.spend(b), small.spend(c, count=2)
    assert ea.curve is eb.curve and ec.curve is not ea.curve
    np.testing.assert_array_equal(ec.curve, 2 * ea.curve)
    np.testing.assert_array_equal(small.rdp(), 4 * ea.curve)


@pytest.mark.parametrize("bad", [[0.1, np.nan], [0.1, -1e-300]])
def test_invalid_curves_are_refused_one_at_a_time_and_in_batches(bad):
    o = [2.0, 3.0]

    class Broken(CustomCurve):
        name = "broken_curve_for_test"

        def rdp(self, orders=None):
            return np.array(bad)

        @classmethod
        def batch_rdp(cls, mechanisms, orders):
            return np.array([bad] * len(mechanisms))

    acc = Accountant(orders=o)
    with pytest.raises(ValueError, match="invalid RDP curve"):
        acc.spend(Broken(o, [0.1, 0.2]))
    with pytest.raises(ValueError, match="invalid RDP curve"):
        acc.spend_batch([GaussianMechanism(1.0), Broken(o, [0.1, 0.2])])
    assert len(acc) == 0 and acc.to_json() == Accountant(orders=o).to_json()


def test_batch_names_the_first_bad_item_and_keeps_list_order_across_classes(rng):
    with pytest.raises(TypeError, match=r"mechanisms\[2\]"):
        Accountant().spend_batch([GaussianMechanism(1.0), LaplaceMechanism(1.0), 3, "x"])
    mechs = [_random_mechanism(rng) for _ in range(300)]
    counts = [int(c) for c in rng.integers(1, 4, 300)]
    batch = Accountant()
    entries = batch.spend_batch(mechs, count=counts)
    for m, c, e in zip(mechs, counts, entries, strict=True):
        assert e.mechanism == m.name and e.params == m.params() and e.count == c
        np.testing.assert_allclose(e.curve, c * m.rdp(batch.orders), rtol=1e-12)
