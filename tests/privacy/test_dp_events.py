"""Export of a ledger as dp-accounting DpEvents: dp-accounting recomputes our ε from them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pymc_rdp.privacy.accountant import Accountant
from pymc_rdp.privacy.mechanisms import (
    DirichletMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    RandomizedResponse,
)

dpa = pytest.importorskip("dp_accounting", reason="to_dp_events needs dp-accounting (pld extra)")
from dp_accounting.pld import pld_privacy_accountant  # noqa: E402
from dp_accounting.rdp import rdp_privacy_accountant  # noqa: E402

REPLACE_ONE = dpa.NeighboringRelation.REPLACE_ONE


def _heterogeneous(rng: np.random.Generator) -> Accountant:
    acc = Accountant(orders=rdp_privacy_accountant.DEFAULT_RDP_ORDERS)
    for _ in range(25):
        k = rng.integers(3)
        m = (
            GaussianMechanism(rng.uniform(1, 30), rng.uniform(0.5, 2))
            if k == 0
            else LaplaceMechanism(rng.uniform(1, 30), rng.uniform(0.5, 2))
            if k == 1
            else RandomizedResponse(rng.uniform(0.501, 0.8))
        )
        acc.spend(m, count=int(rng.integers(1, 4)))
    # a parallel group of identical partitions (as a naive-Bayes feature table) ...
    acc.spend_batch([LaplaceMechanism(9.0)] * 3, group="nb", partitions=[0, 1, 2])
    # ... and a Gaussian group whose partition "b" dominates
    acc.spend(GaussianMechanism(4.0), group="t", partition="a")
    acc.spend(GaussianMechanism(2.0), group="t", partition="b")
    return acc


@pytest.mark.parametrize("seed", range(3))
def test_dp_accounting_rdp_accountant_recomputes_our_rdp_curve_and_epsilon(seed):
    acc = _heterogeneous(np.random.default_rng(seed))
    theirs = rdp_privacy_accountant.RdpAccountant(
        orders=list(acc.orders), neighboring_relation=REPLACE_ONE
    )
    event = acc.to_dp_events()
    assert theirs.supports(event)
    theirs.compose(event)
    np.testing.assert_allclose(theirs._rdp, acc.rdp(), rtol=1e-9)
    for delta in (1e-9, 1e-6):
        assert theirs.get_epsilon(delta) == pytest.approx(acc.epsilon(delta, "rdp"), rel=1e-9)


def test_dp_accounting_pld_accountant_recomputes_our_pld_bound():
    acc = Accountant()
    acc.spend(GaussianMechanism(12.0), count=5)
    acc.spend(LaplaceMechanism(15.0, 1.0), count=10)
    acc.spend_batch([LaplaceMechanism(15.0)] * 4, group="g", partitions=list(range(4)))
    theirs = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    theirs.compose(acc.to_dp_events())
    ours = acc.epsilon(1e-6, "pld")
    assert acc.epsilon_and_method(1e-6)[1] == "pld"
    # the same PLDs composed in another order: equal up to the discretisation
    assert theirs.get_epsilon(1e-6) == pytest.approx(ours, abs=5e-3)


def test_events_of_each_mechanism_and_unsupported_entries():
    acc = Accountant()
    acc.spend(GaussianMechanism(3.0, 2.0))
    acc.spend(LaplaceMechanism(4.0, 2.0), count=3)
    acc.spend(RandomizedResponse(0.75))
    acc.spend(DirichletMechanism(2.0, 1.0, math.sqrt(2.0), 1.0))
    ev = acc.to_dp_events()
    assert isinstance(ev, dpa.ComposedDpEvent)
    g, lap, rr, dirichlet = ev.events
    assert g == dpa.GaussianDpEvent(1.5)
    assert lap == dpa.SelfComposedDpEvent(dpa.LaplaceDpEvent(2.0), 3)
    assert rr == dpa.RandomizedResponseDpEvent(noise_parameter=0.5, num_buckets=2)
    assert isinstance(dirichlet, dpa.UnsupportedDpEvent)
    assert not rdp_privacy_accountant.RdpAccountant(neighboring_relation=REPLACE_ONE).supports(ev)


def test_a_group_without_a_dominating_partition_is_exported_in_sequence():
    from pymc_rdp.privacy.dp_events import ledger_to_dp_events
    from pymc_rdp.privacy.tight_accounting import rows_of

    acc = Accountant()
    acc.spend(LaplaceMechanism(5.0), group="g", partition=0)
    acc.spend(RandomizedResponse(0.6), group="g", partition=1)
    notes: list[str] = []
    ev = ledger_to_dp_events(rows_of(acc.ledger), notes)
    assert len(ev.events) == 2 and "no partition dominates" in notes[0]
    # valid: at least our parallel RDP bound
    theirs = rdp_privacy_accountant.RdpAccountant(
        orders=list(acc.orders), neighboring_relation=REPLACE_ONE
    )
    theirs.compose(ev)
    assert theirs.get_epsilon(1e-6) >= acc.epsilon(1e-6, "rdp") - 1e-12
