"""Plan -> charge -> draw: all or nothing before any noise, one Release for every mechanism."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pymc as pm
import pytest

import pymc_rdp as pmr
from pymc_rdp.curation.charge import PlannedRelease, release_plan
from pymc_rdp.curation.release import Release
from pymc_rdp.curation.table_budget import TABLE_MECHANISMS
from pymc_rdp.distributions.noise_models import NoiseModel, noise_model_of, register_likelihood
from pymc_rdp.privacy.accountant import Accountant, BudgetExceededError
from pymc_rdp.privacy.mechanisms import (
    DirichletMechanism,
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    GaussianMechanism,
    RandomizedResponse,
    SystemNoise,
    UnsafeNoiseSeed,
)
from pymc_rdp.privacy.mechanisms.discrete_laplace import DiscreteLaplaceMechanism as _DL

LAP = DiscreteLaplaceMechanism(2.0, 2.0)


class CountingNoise(SystemNoise):
    """OS entropy that counts every request for random bits or a generator."""

    def __init__(self) -> None:
        self.calls = 0

    def randbits(self, k: int) -> int:
        self.calls += 1
        return super().randbits(k)

    def randbelow(self, n: int) -> int:
        self.calls += 1
        return super().randbelow(n)

    def generator(self) -> np.random.Generator:
        self.calls += 1
        return super().generator()


def _frame(n: int = 60) -> pd.DataFrame:
    gen = np.random.default_rng(0)
    return pd.DataFrame({"a": gen.integers(0, 2, n), "b": gen.integers(0, 3, n)})


STATES = {"a": [0, 1], "b": [0, 1, 2]}


def _attacks(source: CountingNoise, acc: Accountant) -> list:
    """Every release path, each run with ``source`` and charged to ``acc``."""
    df = _frame()

    def privatize() -> None:
        pmr.privatize(np.array([3, 1, 4]), LAP, acc, "t", noise_source=source)

    def bn_fit(mechanism: str) -> None:
        pmr.BayesianNetwork({"a": [], "b": ["a"]}, states=STATES).fit(
            df, mechanism=mechanism, epsilon=1.0, order=5.0, accountant=acc, noise_source=source
        )

    def nb_fit() -> None:
        pmr.NaiveBayes(
            mechanism="laplace",
            epsilon=1.0,
            accountant=acc,
            noise_source=source,
            categories=[[0, 1, 2]],
            classes=[0, 1],
        ).fit(df[["b"]], df["a"])

    def dirichlet() -> None:
        mech = DirichletMechanism.calibrate(1.0, 5.0, math.sqrt(2.0), 1.0)
        with pm.Model() as model:
            pmr.DirichletRelease("row", np.array([3.0, 1.0, 4.0]), mech)
        pmr.release_dirichlet(model, draws=2, accountant=acc, noise_source=source)

    def quantiles() -> None:
        pmr.private_quantiles(
            df["b"].to_numpy(dtype=float),
            [0.5],
            0.0,
            3.0,
            epsilon=1.0,
            accountant=acc,
            noise_source=source,
        )

    return [
        privatize,
        lambda: bn_fit("gaussian"),
        lambda: bn_fit("dirichlet"),
        nb_fit,
        dirichlet,
        quantiles,
    ]


@pytest.mark.parametrize("path", range(6))
def test_a_refused_plan_draws_no_noise(path: int) -> None:
    # the attack: spend an almost empty budget, hoping noise is drawn before the refusal
    tiny = Accountant.at_order(1e-6, 5.0)
    source = CountingNoise()
    with pytest.raises(BudgetExceededError, match="nothing was drawn"):
        _attacks(source, tiny)[path]()
    assert source.calls == 0
    assert len(tiny.ledger) == 0 and tiny.declarations == ()
    # control: with budget the same path draws (so the counter can see a draw)
    ok = CountingNoise()
    _attacks(ok, Accountant())[path]()
    assert ok.calls > 0


def test_plan_over_several_groups_is_all_or_nothing() -> None:
    mech = DiscreteLaplaceMechanism.calibrate(0.4, order=5.0, sensitivity=2.0)
    acc = Accountant.at_order(1.0, 5.0)
    g1, g2 = acc.new_group("one"), acc.new_group("two")
    counts = np.array([2, 3], dtype=np.int64)
    plan = [
        PlannedRelease(mech, counts, "x", group=g1, partitions=["p", "q"]),  # 0.4 (parallel)
        PlannedRelease(mech, counts, "y", group=g2, partitions=["p"]),  # 0.4
        PlannedRelease(mech, counts, "z"),  # 0.4: 1.2 > 1 in all
    ]
    source = CountingNoise()
    with pytest.raises(BudgetExceededError):
        release_plan(plan, acc, noise_source=source)
    assert len(acc.ledger) == 0 and source.calls == 0
    releases = release_plan(plan[:2], acc, noise_source=source, close_groups=True)
    assert [r.tag for r in releases] == ["x", "y"]
    assert [e.tag for e in acc.ledger] == ["x", "x", "y"]
    assert releases[0].group == g1 and releases[0].partitions == ("p", "q")
    np.testing.assert_allclose(acc.rdp([5.0]), 2 * mech.rdp([5.0]), rtol=1e-12)
    assert set(acc.closed_groups) == {g1, g2}


def test_every_mechanism_releases_a_release_record() -> None:
    acc = Accountant()
    bits = np.array([0, 1, 1, 0, 1], dtype=np.float64)
    mech = DirichletMechanism.calibrate(1.0, 5.0, math.sqrt(2.0), 1.0)
    plan = [
        PlannedRelease(RandomizedResponse(0.75), bits, "rr"),
        PlannedRelease(mech, np.array([[3.0, 1.0], [0.0, 5.0]]), "cpt", draws=3),
        PlannedRelease(GaussianMechanism(1.0), np.array([0.5, 2.5]), "mean"),
    ]
    rr, cpt, mean = release_plan(plan, acc, noise_source=UnsafeNoiseSeed(3))
    assert set(np.unique(rr.values)) <= {0.0, 1.0} and rr.values.shape == (5,)
    assert cpt.values.shape == (3, 2, 2) and cpt.draws == 3
    np.testing.assert_allclose(cpt.values.sum(axis=-1), 1.0, rtol=1e-12)
    assert acc.ledger[1].count == 3  # three draws charged
    for rel in (rr, cpt, mean):
        assert isinstance(rel, Release)
        back = Release.from_json(rel.to_json())
        assert back == rel and back.draws == rel.draws
        assert rel.entry["tag"] == rel.tag


def test_bn_releases_are_release_records_on_every_path() -> None:
    df = _frame()
    for mechanism in ("dirichlet", "gaussian", "laplace"):
        bn = pmr.BayesianNetwork({"a": [], "b": ["a"]}, states=STATES)
        bn.fit(df, mechanism=mechanism, epsilon=1.0, order=5.0, noise_source=UnsafeNoiseSeed(1))
        assert all(isinstance(r, Release) for r in bn.releases.values())
        assert bn.releases["b"].mechanism == bn.family_mechanism
        assert [r.entry["index"] for r in bn.releases.values()] == [0, 1]
        if mechanism == "dirichlet":
            np.testing.assert_allclose(bn.releases["b"].values.sum(axis=1), 1.0, rtol=1e-12)
            np.testing.assert_allclose(bn.cpts["b"], bn.releases["b"].values, rtol=1e-12)


def test_release_dirichlet_tree_carries_the_release_records_and_old_name_warns() -> None:
    mech = DirichletMechanism.calibrate(1.0, 5.0, math.sqrt(2.0), 1.0)
    with pm.Model() as model:
        pmr.DirichletRelease("row", np.array([3.0, 1.0, 4.0]), mech)
    acc = Accountant()
    tree = pmr.release_dirichlet(model, draws=2, accountant=acc, noise_source=UnsafeNoiseSeed(2))
    [rel] = pmr.distributions.read_releases(tree)
    np.testing.assert_array_equal(rel.values, tree.posterior["row"].values[0])
    assert rel.entry == Release.from_dict(json.loads(rel.to_json())).entry
    with pytest.warns(DeprecationWarning, match="release_dirichlet"):
        pmr.release(model, draws=1, accountant=acc, noise_source=UnsafeNoiseSeed(2))
    assert len(acc.ledger) == 2


class _ShiftedLaplace(_DL):
    """A new integer mechanism: touches only its module, its rule and its likelihood."""

    name = "test_shifted_discrete_laplace"


def test_a_new_mechanism_needs_no_dispatch_chain(monkeypatch: pytest.MonkeyPatch) -> None:
    from pymc_rdp.distributions import noise_models

    # registered for this test only (the registry is module state)
    monkeypatch.setattr(noise_models, "_REGISTRY", dict(noise_models._REGISTRY))
    register_likelihood(
        _ShiftedLaplace,
        NoiseModel(
            "discrete_laplace", lambda m: float(m.scale), "laplace", lambda m: float(m.scale)
        ),
    )
    mech = _ShiftedLaplace(2.0, 2.0)
    rel = pmr.privatize(np.array([3, 1]), mech, Accountant(), "n", noise_source=UnsafeNoiseSeed(0))
    assert rel.mechanism is mech
    assert noise_model_of(mech).kind == "discrete_laplace"
    with pytest.raises(ValueError, match="below the sensitivity 2 of a count table"):
        pmr.privatize(np.array([3, 1]), _ShiftedLaplace(2.0, 1.0), Accountant(), "n")


def test_mechanisms_describe_themselves() -> None:
    assert DiscreteGaussianMechanism.for_counts and DiscreteLaplaceMechanism.for_counts
    assert not GaussianMechanism.for_counts and not DirichletMechanism.for_counts
    assert DirichletMechanism.releases_probabilities
    assert "DiscreteGaussianMechanism" in GaussianMechanism(1.0).counts_refusal()
    with pytest.raises(TypeError, match="no sensitivity argument"):
        RandomizedResponse(0.75).sensitivity_checks({"l1": 2.0, "l2": 1.5, "linf": 1.0})
    assert set(TABLE_MECHANISMS) == {"gaussian", "laplace", "dirichlet"}
    with pytest.raises(TypeError, match="registered additive-noise likelihood"):
        noise_model_of(RandomizedResponse(0.75))


def test_old_quantile_path_warns() -> None:
    from pymc_rdp.privacy.mechanisms import quantiles

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(DeprecationWarning, match=r"curation\.quantiles"):
            quantiles.private_quantiles  # noqa: B018
