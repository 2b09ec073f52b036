"""privatize and Release: charge first, refuse over budget, JSON round trip, sensitivities."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

import pymc_rdp.distributions as D
from pymc_rdp.privacy.accountant import Accountant, BudgetExceededError
from pymc_rdp.privacy.mechanisms import (
    DirichletMechanism,
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    NoiseSource,
    RandomizedResponse,
    UnsafeNoiseSeed,
)

LAP = DiscreteLaplaceMechanism(scale=3.0, sensitivity=2.0)
GAU = DiscreteGaussianMechanism(sigma=2.0, sensitivity=math.sqrt(2.0))
COUNTS = np.array([5, 0, 12, 3])


class CountingNoise(NoiseSource):
    """A reproducible source that counts the bits it hands out."""

    secure = False

    def __init__(self, seed: int) -> None:
        self._inner = UnsafeNoiseSeed(seed)
        self.bits = 0

    def randbits(self, k: int) -> int:
        self.bits += k
        return self._inner.randbits(k)


def test_privatize_charges_once_and_records_the_entry():
    acc = Accountant()
    rel = D.privatize(COUNTS, LAP, acc, "table", noise_source=UnsafeNoiseSeed(1))
    assert len(acc.ledger) == 1
    entry = acc.ledger[0]
    assert entry.tag == "table" and entry.count == 1 and entry.mechanism == "discrete_laplace"
    np.testing.assert_allclose(acc.rdp(), LAP.rdp(acc.orders), rtol=1e-12)
    assert rel.entry == entry.to_dict() | {"index": 0} or rel.entry == entry.to_dict()
    assert rel.mechanism == LAP and rel.tag == "table" and rel.neighbours == "replace-one"
    assert rel.values.shape == (4,) and rel.values.dtype == np.float64
    assert (rel.values == np.round(rel.values)).all()  # integers: no floating-point artefacts
    assert not rel.values.flags.writeable
    assert rel.total is None  # no total unless declared public


def test_noise_has_the_mechanism_distribution():
    acc = Accountant()
    src = UnsafeNoiseSeed(3)
    lap = np.concatenate(
        [D.privatize(COUNTS, LAP, acc, "l", noise_source=src).values - COUNTS for _ in range(500)]
    )
    gau = np.concatenate(
        [D.privatize(COUNTS, GAU, acc, "g", noise_source=src).values - COUNTS for _ in range(500)]
    )
    assert len(acc.ledger) == 1000
    # χ² against the exact pmfs, cells |x| < 6 and the two tails
    x = np.arange(-30, 31)
    for draws, logq in (
        (lap, -np.abs(x) / 3.0),
        (gau, -(x**2) / (2.0 * 2.0**2)),
    ):
        q = np.exp(logq) / np.exp(logq).sum()
        inner = np.abs(x) < 6
        expected = np.concatenate([[q[x <= -6].sum()], q[inner], [q[x >= 6].sum()]])
        observed = np.concatenate(
            [[(draws <= -6).sum()], [(draws == v).sum() for v in x[inner]], [(draws >= 6).sum()]]
        )
        assert stats.chisquare(observed, expected * draws.size).pvalue > 1e-4


def test_over_budget_refused_before_any_noise_is_drawn():
    acc = Accountant.at_order(0.5, 2.0)
    src = CountingNoise(0)
    D.privatize(COUNTS, DiscreteLaplaceMechanism(20.0, 2.0), acc, "cheap", noise_source=src)
    ledger_before = acc.to_json()
    bits_before = src.bits
    assert bits_before > 0
    with pytest.raises(BudgetExceededError):
        D.privatize(COUNTS, DiscreteLaplaceMechanism(0.1, 2.0), acc, "expensive", noise_source=src)
    assert acc.to_json() == ledger_before
    assert src.bits == bits_before  # nothing was drawn


def test_round_is_a_no_op_and_clamp_is_refused_for_discrete_noise():
    acc = Accountant()
    rel = D.privatize(COUNTS, LAP, acc, "t", noise_source=UnsafeNoiseSeed(2), round=True)
    assert not rel.clamped and not rel.rounded  # integers already: no interval censoring
    assert (rel.values == np.round(rel.values)).all()
    assert not np.signbit(rel.values[rel.values == 0]).any()  # no negative zeros
    with pytest.raises(ValueError, match="clamp='zero' is not supported"):
        D.privatize(COUNTS, LAP, acc, "c", clamp="zero")
    assert len(acc.ledger) == 1


def test_continuous_mechanisms_refused_for_count_tables_and_nothing_charged():
    acc = Accountant()
    with pytest.raises(TypeError, match="DiscreteGaussianMechanism"):
        D.privatize(COUNTS, GaussianMechanism(2.0, math.sqrt(2.0)), acc, "g")
    with pytest.raises(TypeError, match="DiscreteLaplaceMechanism"):
        D.privatize(COUNTS, LaplaceMechanism(3.0, 2.0), acc, "l")
    with pytest.raises(TypeError, match="noise_source must be None"):
        D.privatize(COUNTS, LAP, acc, "s", noise_source=1)
    assert len(acc.ledger) == 0


def test_batch_of_rows_and_add_remove():
    acc = Accountant()
    cpt = np.array([[1, 2, 3], [4, 0, 6]])
    rel = D.privatize(cpt, DiscreteLaplaceMechanism(1.0, 1.0), acc, "cpt", neighbours="add-remove")
    assert rel.values.shape == (2, 3)
    assert rel.neighbours == "add-remove" and rel.total is None  # N is private under add/remove


def test_json_round_trip_is_exact_and_never_renoised():
    acc = Accountant()
    rel = D.privatize(np.array([[2, 5], [7, 1]]), GAU, acc, "rows")
    text = rel.to_json()
    back = D.Release.from_json(text)
    assert back == rel
    assert back.to_json() == text
    np.testing.assert_array_equal(back.values, rel.values)
    assert back.mechanism == GAU and not back.rounded and not back.clamped
    assert len(acc.ledger) == 1  # rebuilding charged nothing


def test_release_from_json_errors():
    rel = D.privatize(COUNTS, LAP, Accountant(), "t", noise_source=UnsafeNoiseSeed(0))
    d = rel.to_dict()
    with pytest.raises(ValueError, match="not a release"):
        D.Release.from_dict({**d, "format": "other"})
    with pytest.raises(ValueError, match="has no mechanism"):
        D.Release.from_dict({**d, "mechanism": None})
    with pytest.raises(TypeError, match="s must be JSON text"):
        D.Release.from_json(d)
    with pytest.raises(ValueError, match="values must be finite"):
        D.Release(values=np.array([1.0, np.nan]), mechanism=LAP, tag="x")
    with pytest.raises(TypeError, match="mechanism must be a Mechanism"):
        D.Release(values=np.array([1.0, 2.0]), mechanism=None, tag="x")


@pytest.mark.parametrize(
    ("statistic", "exc", "match"),
    [
        (np.array([1, -2, 3]), ValueError, "must be non-negative counts"),
        (np.array([1.0, np.nan]), ValueError, "contains NaN"),
        (np.array([1.5, 2.0]), ValueError, "whole numbers"),
        (np.array([1.0, np.inf]), ValueError, "must be finite"),
        (np.ones((2, 2, 2)), ValueError, r"shape \(K,\) or \(rows, K\)"),
        (5, ValueError, r"shape \(K,\) or \(rows, K\)"),
        ("abc", TypeError, "must be an array of counts"),
    ],
)
def test_bad_statistic(statistic, exc, match):
    acc = Accountant()
    with pytest.raises(exc, match=match):
        D.privatize(statistic, LAP, acc, "t", noise_source=UnsafeNoiseSeed(0))
    assert len(acc.ledger) == 0


def test_sensitivities_per_neighbouring_relation():
    assert D.table_sensitivity("replace-one") == {"l1": 2.0, "l2": math.sqrt(2.0), "linf": 1.0}
    assert D.table_sensitivity("add-remove") == {"l1": 1.0, "l2": 1.0, "linf": 1.0}
    with pytest.raises(ValueError, match="neighbours must be one of"):
        D.table_sensitivity("swap")


def test_mechanism_not_matching_the_table_refused_and_nothing_charged():
    acc = Accountant()
    with pytest.raises(ValueError, match="below the sensitivity 2 of a count table"):
        D.privatize(COUNTS, DiscreteLaplaceMechanism(3.0, 1.0), acc, "t")
    with pytest.raises(ValueError, match=r"below the sensitivity 1\.41421"):
        D.privatize(COUNTS, DiscreteGaussianMechanism(3.0, 1.0), acc, "t")
    with pytest.raises(TypeError, match="DiscreteGaussianMechanism or DiscreteLaplaceMechanism"):
        D.privatize(COUNTS, RandomizedResponse(0.8), acc, "t")
    with pytest.raises(TypeError, match="DirichletRelease"):
        D.privatize(COUNTS, DirichletMechanism(1.0, 5.0, 2**0.5, 1.0), acc, "t")
    assert len(acc.ledger) == 0


def test_other_bad_arguments():
    acc = Accountant()
    with pytest.raises(ValueError, match="clamp must be None or 'zero'"):
        D.privatize(COUNTS, LAP, acc, "t", clamp="one")
    with pytest.raises(TypeError, match="tag must be a non-empty string"):
        D.privatize(COUNTS, LAP, acc, "")
    with pytest.raises(TypeError, match="accountant must be an Accountant"):
        D.privatize(COUNTS, LAP, None, "t")
    with pytest.raises(ValueError, match="neighbours must be one of"):
        D.privatize(COUNTS, LAP, acc, "t", neighbours="swap")
    assert len(acc.ledger) == 0


# ------------------------------------------------------------- seeds and totals


def test_per_region_releases_do_not_publish_region_sizes():
    """Exact totals: the documented parallel pattern releases one table per region; the
    release (and its JSON) stored each region's exact size. Run on two neighbouring datasets (one
    record moved between regions): nothing but the noisy values differs, and no size appears."""
    regions = {"north": np.array([40, 13, 7]), "south": np.array([22, 9, 31])}
    moved = {"north": np.array([40, 13, 6]), "south": np.array([22, 9, 32])}
    docs = []
    for data in (regions, moved):
        acc = Accountant()
        out = {
            name: D.privatize(t, LAP, acc, f"region/{name}", group="regions", partition=name)
            for name, t in data.items()
        }
        for name, rel in out.items():
            assert rel.total is None
            doc = json.loads(rel.to_json())
            assert doc["total"] is None
            assert float(data[name].sum()) not in _numbers(doc)
            docs.append({k: v for k, v in doc.items() if k != "values"})
        assert acc.declarations == ()
    assert docs[:2] == docs[2:]


def _numbers(doc: dict) -> set[float]:
    """Every number in a release's JSON except its released values."""
    found: set[float] = set()

    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if k not in ("values", "curve"):
                    walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
        elif isinstance(x, (int, float)) and not isinstance(x, bool):
            found.add(float(x))

    walk(doc)
    return found


def test_public_total_only_when_declared_and_checked():
    acc = Accountant()
    rel = D.privatize(COUNTS, LAP, acc, "t", public_total=20)
    assert rel.total == 20.0 and json.loads(rel.to_json())["total"] == 20.0
    assert D.Release.from_json(rel.to_json()).total == 20.0
    (decl,) = acc.declarations
    assert decl["kind"] == "public_total" and decl["outside_guarantee"] is False
    assert "'t'" in decl["detail"] and acc.within_guarantee
    assert "declared public (public_total)" in acc.report()
    before = acc.to_json()
    with pytest.raises(ValueError, match="public_total does not equal the table's total"):
        D.privatize(COUNTS, LAP, acc, "u", public_total=21)
    for bad, exc in ((True, TypeError), ("20", TypeError), (-1, ValueError), (2.5, ValueError)):
        with pytest.raises(exc, match="public_total"):
            D.privatize(COUNTS, LAP, acc, "u", public_total=bad)
    assert acc.to_json() == before
    # a refused (over-budget) release declares nothing
    tight = Accountant.at_order(1e-3, 2.0)
    with pytest.raises(BudgetExceededError):
        D.privatize(COUNTS, LAP, tight, "t", public_total=20)
    assert tight.declarations == ()


@pytest.mark.parametrize("bad", [0, 7, np.int64(7), np.random.default_rng(7), "seed"])
def test_seeds_and_generators_are_refused_as_noise(bad):
    """Seeded noise: an int or a generator never steers privacy noise."""
    acc = Accountant()
    with pytest.raises(TypeError, match="noise_source must be None"):
        D.privatize(COUNTS, LAP, acc, "t", bad)
    with pytest.raises(TypeError, match="noise_source must be None"):
        D.privatize(COUNTS, LAP, acc, "t", noise_source=bad)
    assert len(acc.ledger) == 0


def test_default_noise_is_not_reproducible_and_unsafe_noise_is_declared():
    acc = Accountant()
    a = D.privatize(COUNTS, GAU, acc, "a").values
    b = D.privatize(COUNTS, GAU, acc, "b").values
    assert not np.array_equal(a, b) and acc.within_guarantee
    c = D.privatize(COUNTS, GAU, acc, "c", UnsafeNoiseSeed(4)).values
    d = D.privatize(COUNTS, GAU, Accountant(), "d", UnsafeNoiseSeed(4)).values
    np.testing.assert_array_equal(c, d)
    assert not acc.within_guarantee
    assert [x["kind"] for x in acc.declarations] == ["unsafe_noise"]
    assert "release 'c'" in acc.declarations[0]["detail"]
