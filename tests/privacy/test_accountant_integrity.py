"""Accountant integrity: group identity per release, the shared handle, tamper-evident ledgers.

Each attack of the audit runs here against the public API: partitions merged across releases,
copies that start from a full budget, and hand-edited ledger files (zeroed curves, negative
credit entries, dropped, reordered or edited entries, a forged signature).
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pymc_rdp.privacy import ledger_codec as A
from pymc_rdp.privacy import rdp
from pymc_rdp.privacy.accountant import Accountant, BudgetExceededError
from pymc_rdp.privacy.mechanisms import (
    CustomCurve,
    DirichletMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    RandomizedResponse,
)

SQRT2 = math.sqrt(2.0)


def _ledger(budget=(20.0, 1e-6)) -> Accountant:
    acc = Accountant(budget=budget)
    acc.spend(GaussianMechanism(4.0, SQRT2), tag="counts")
    with acc.parallel("rows") as g:
        acc.spend(LaplaceMechanism(6.0, 2.0), tag="row 0", group=g, partition=0)
        acc.spend(LaplaceMechanism(6.0, 2.0), tag="row 1", group=g, partition=1, count=2)
    acc.spend_batch([RandomizedResponse(0.6), GaussianMechanism(9.0)], tags=["rr", "g"])
    acc.spend(DirichletMechanism(0.5, 20.0, SQRT2, 1.0), tag="cpt")
    acc.declare("public_total", "the number of records is public", outside_guarantee=False)
    return acc


def _doc(acc: Accountant) -> dict:
    return json.loads(acc.to_json())


# ------------------------------------------------------------------ group identity


def test_new_group_keys_are_unique_and_closed_groups_refuse_spends():
    acc = Accountant()
    keys = {acc.new_group("f") for _ in range(5)}
    assert len(keys) == 5
    m = LaplaceMechanism(3.0)
    with acc.parallel("table") as g:
        acc.spend(m, group=g, partition="a")
        acc.spend(m, group=g, partition="b")
    assert g in acc.closed_groups
    for call in (
        lambda: acc.spend(m, group=g, partition="c"),
        lambda: acc.spend_batch([m], group=g, partitions=["d"]),
        lambda: acc.can_spend(m, group=g, partition="e"),
    ):
        with pytest.raises(ValueError, match="closed"):
            call()
    assert len(acc) == 2
    # a key used by the caller is never handed out again, and closing survives a reload
    acc.spend(m, group="table#1", partition=0)
    back = Accountant.from_json(acc.to_json())
    assert back.closed_groups == acc.closed_groups
    with pytest.raises(ValueError, match="closed"):
        back.spend(m, group=g, partition="z")
    fresh = {back.new_group("table") for _ in range(3)}
    assert not fresh & ({g, "table#1"} | keys)


def test_parallel_closes_its_group_on_an_exception():
    acc = Accountant()
    with pytest.raises(RuntimeError), acc.parallel("t") as g:
        raise RuntimeError
    with pytest.raises(ValueError, match="closed"):
        acc.spend(LaplaceMechanism(1.0), group=g, partition=0)
    for bad in (None, "", 3):
        with pytest.raises(TypeError, match="label"):
            acc.new_group(bad)


def test_two_releases_of_one_label_compose_sequentially():
    # the attack: the same label used for two releases merged their partitions (max over rows)
    m = LaplaceMechanism(4.0, 2.0)
    acc = Accountant()
    for labels in (["a", "b"], ["c", "d"], ["a", "e"]):
        with acc.parallel("feature/x") as g:
            acc.spend_batch([m, m], group=g, partitions=labels)
    np.testing.assert_allclose(acc.rdp(), 3 * m.rdp(acc.orders), rtol=1e-12)


# ------------------------------------------------------------------ shared handle


def test_copies_are_the_same_accountant_and_fork_is_independent():
    acc = _ledger()
    assert copy.copy(acc) is acc and copy.deepcopy(acc) is acc
    holder = copy.deepcopy({"acc": acc, "again": [acc]})
    assert holder["acc"] is acc and holder["again"][0] is acc
    fork = acc.fork()
    n = len(acc)
    before = acc.to_json()
    for _ in range(3):  # the fork's spends must not touch the original's arrays or ledger
        fork.spend(GaussianMechanism(3.0))
        with fork.parallel("p") as g:
            fork.spend(LaplaceMechanism(2.0), group=g, partition=0)
    acc.spend(GaussianMechanism(50.0))
    acc.spend(GaussianMechanism(60.0))
    assert len(fork) == n + 6 and len(acc) == n + 2
    expected = Accountant.from_json(before)
    expected.spend(GaussianMechanism(50.0))
    expected.spend(GaussianMechanism(60.0))
    np.testing.assert_array_equal(acc.rdp(), expected.rdp())
    assert acc.digest() == expected.digest()
    # pickling still makes an independent, equal copy
    other = pickle.loads(pickle.dumps(acc))
    assert other is not acc and other.to_json() == acc.to_json()
    other.spend(GaussianMechanism(7.0))
    assert len(acc) == n + 2


# ------------------------------------------------------------------ tamper-evident ledger (8)


def test_round_trip_keeps_the_digest_and_the_curves():
    acc = _ledger()
    s = acc.to_json()
    back = Accountant.from_json(s, expected_digest=acc.digest())
    assert back.digest() == acc.digest() and back.to_json() == s
    np.testing.assert_array_equal(back.rdp(), acc.rdp())
    assert back.verification["chained"] and back.verification["digest_checked"]
    assert back.verification["signature"] == "absent"
    assert acc.verification is None
    assert f"ledger digest (sha256 chain): {acc.digest()}" in acc.report()


def test_digest_is_lazy_and_incremental():
    a, b = Accountant(), Accountant()
    a.spend(GaussianMechanism(3.0))
    d1 = a.digest()
    a.spend(LaplaceMechanism(2.0))
    b.spend(GaussianMechanism(3.0))
    b.spend(LaplaceMechanism(2.0))
    assert a.digest() == b.digest() != d1
    assert a._chain[0] == 2  # extended from the cached prefix, not recomputed


def test_zeroed_curves_are_refused():
    acc = Accountant(budget=(2.0, 1e-6))
    acc.spend(GaussianMechanism(6.0, SQRT2))
    assert acc.epsilon(method="rdp") > 1.0  # the stored curves carry the RDP loss
    doc = _doc(acc)
    for e in doc["entries"]:
        e["curve"] = [0.0] * len(e["curve"])
    with pytest.raises(ValueError, match=r"entry 0 .*stored curve is 0\.0.*edited"):
        Accountant.from_json(json.dumps(doc))
    with pytest.raises(ValueError, match=r"entry 0 .*stored curve is 0\.0.*edited"):
        Accountant.from_json(json.dumps(_rechain_unchecked(doc)))


def _rechain_unchecked(doc: dict) -> dict:
    """A chain rebuilt over the edited entries without any curve check (a careful forger)."""
    doc = copy.deepcopy(doc)
    head = {"orders": np.asarray(doc["orders"], dtype=float), "budget": doc["budget"]}
    link = hashlib.sha256(A.CHAIN_DOMAIN + A.canonical(A.decode(head))).digest()
    for e in doc["entries"]:
        fields = {k: v for k, v in A.decode(e).items() if k != "curve"}
        link = hashlib.sha256(link + A.canonical(fields)).digest()
    tail = {"closed_groups": doc["closed_groups"], "declarations": doc["declarations"]}
    doc["chain"]["digest"] = hashlib.sha256(link + A.canonical(A.decode(tail))).hexdigest()
    return doc


def test_the_unchecked_rechain_helper_reproduces_honest_digests():
    acc = _ledger()
    doc = _doc(acc)
    assert _rechain_unchecked(doc)["chain"]["digest"] == acc.digest()


def test_negative_credit_entries_are_refused():
    acc = Accountant(budget=(2.0, 1e-6))
    acc.spend(GaussianMechanism(6.0, SQRT2))
    doc = _doc(acc)
    credit = copy.deepcopy(doc["entries"][0])
    credit["tag"] = "credit"
    credit["curve"] = [-0.5 * x for x in credit["curve"]]
    doc["entries"].append(credit)
    with pytest.raises(ValueError, match="entry 1: its curve is negative"):
        Accountant.from_json(json.dumps(doc))
    with pytest.raises(ValueError, match="entry 1: its curve is negative"):
        Accountant.from_json(json.dumps(_rechain_unchecked(doc)))
    nan = _doc(acc)
    nan["entries"][0]["curve"][3] = {"__float__": "nan"}
    with pytest.raises(ValueError, match="NaN"):
        Accountant.from_json(json.dumps(_rechain_unchecked(nan)))


def test_edited_parameters_are_refused():
    acc = _ledger()
    doc = _doc(acc)
    doc["entries"][0]["params"]["sigma"] = 400.0  # claims far more noise than was used
    with pytest.raises(ValueError, match=r"entry 0 .*mechanism gives"):
        Accountant.from_json(json.dumps(_rechain_unchecked(doc)))
    doc = _doc(acc)
    doc["entries"][2]["count"] = 1  # row 1 was released twice
    with pytest.raises(ValueError, match="entry 2 "):
        Accountant.from_json(json.dumps(_rechain_unchecked(doc)))
    doc = _doc(acc)
    doc["entries"][0]["curve"][5] = {"__float__": "inf"}
    with pytest.raises(ValueError, match=r"entry 0 .*edited"):
        Accountant.from_json(json.dumps(_rechain_unchecked(doc)))


def test_a_consistent_rewrite_is_caught_by_the_published_digest_and_the_signature():
    acc = _ledger()
    published, key = acc.digest(), b"curator secret"
    signed = _doc_signed(acc, key)
    # rewrite entry 0 with its curve recomputed, so that every curve check passes
    forged = Accountant(budget=(20.0, 1e-6))
    forged.spend(GaussianMechanism(400.0, SQRT2), tag="counts")
    doc = _doc(forged)
    doc["entries"] += _doc(acc)["entries"][1:]
    doc["closed_groups"] = _doc(acc)["closed_groups"]
    doc["declarations"] = _doc(acc)["declarations"]
    doc = _rechain_unchecked(doc)
    assert Accountant.from_json(json.dumps(doc)).epsilon() < acc.epsilon()  # chain alone: fooled
    with pytest.raises(ValueError, match="differs from the expected"):
        Accountant.from_json(json.dumps(doc), expected_digest=published)
    doc["signature"] = signed["signature"]
    with pytest.raises(ValueError, match="signature does not verify"):
        Accountant.from_json(json.dumps(doc), key=key)


def _doc_signed(acc: Accountant, key: bytes) -> dict:
    return json.loads(acc.to_json(key=key))


@pytest.mark.parametrize("edit", ["drop", "reorder", "drop_last", "budget", "declaration"])
def test_dropped_reordered_or_edited_content_breaks_the_chain(edit):
    acc = _ledger()
    doc = _doc(acc)
    if edit == "drop":
        del doc["entries"][1]
    elif edit == "drop_last":
        doc["entries"].pop()
    elif edit == "reorder":
        doc["entries"][0], doc["entries"][3] = doc["entries"][3], doc["entries"][0]
    elif edit == "budget":
        doc["budget"]["epsilon"] = 50.0
    else:
        doc["declarations"] = []
    with pytest.raises(ValueError, match="does not match its own hash chain"):
        Accountant.from_json(json.dumps(doc))
    rechained = _rechain_unchecked(doc)  # loads, but is not the published ledger
    back = Accountant.from_json(json.dumps(rechained))
    assert back.digest() != acc.digest()
    with pytest.raises(ValueError, match="differs from the expected"):
        Accountant.from_json(json.dumps(rechained), expected_digest=acc.digest())


def test_hmac_signature():
    acc = _ledger()
    s = acc.to_json(key="k1")
    back = Accountant.from_json(s, key="k1")
    assert back.verification["signature"] == "verified"
    assert Accountant.from_json(s).verification["signature"] == "not checked (no key)"
    with pytest.raises(ValueError, match="signature does not verify"):
        Accountant.from_json(s, key="k2")
    with pytest.raises(ValueError, match="no hmac-sha256 signature"):
        Accountant.from_json(acc.to_json(), key="k1")
    with pytest.raises(ValueError, match="empty"):
        acc.to_json(key=b"")
    with pytest.raises(TypeError, match="key"):
        acc.to_json(key=3)
    with pytest.raises(ValueError, match="64 hexadecimal"):
        Accountant.from_json(s, expected_digest="abc")


def test_version_1_ledgers_load_recomputed_and_unchained():
    acc = _ledger()
    doc = _doc(acc)
    v1 = {k: doc[k] for k in ("format", "orders", "budget", "entries", "declarations")}
    v1["version"] = 1
    back = Accountant.from_json(json.dumps(v1))
    np.testing.assert_array_equal(back.rdp(), acc.rdp())
    # a digest published for the content applies to version-1 files as well
    Accountant.from_json(json.dumps(v1), expected_digest=back.digest())
    with pytest.raises(ValueError, match="differs from the expected"):
        Accountant.from_json(json.dumps(v1), expected_digest="0" * 64)
    assert back.verification["version"] == 1 and not back.verification["chained"]
    assert "version-1 ledger: no hash chain" in back.report()
    for e in v1["entries"]:
        e["curve"] = [0.0] * len(e["curve"])
    with pytest.raises(ValueError, match="edited"):
        Accountant.from_json(json.dumps(v1))


def test_custom_curves_are_accepted_and_flagged():
    acc = Accountant()
    acc.spend(GaussianMechanism(5.0))
    acc.spend(CustomCurve(acc.orders, np.full(acc.orders.size, 0.01), label="external"))
    back = Accountant.from_json(acc.to_json())
    assert back.verification["custom_entries"] == (1,)
    assert "caller-supplied curves (custom_curve) at entries 1" in back.report()
    doc = _doc(acc)
    doc["entries"][1]["curve"] = [0.0] * acc.orders.size  # its own params still say 0.01
    with pytest.raises(ValueError, match="entry 1"):
        Accountant.from_json(json.dumps(_rechain_unchecked(doc)))


@pytest.mark.parametrize(
    "edit,match",
    [
        (lambda e: e.update(extra=1), "unknown fields"),
        (lambda e: e.pop("params"), "lacks"),
        (lambda e: e.update(count=0), "count"),
        (lambda e: e.update(count=True), "count"),
        (lambda e: e.update(mechanism=3), "mechanism"),
        (lambda e: e.update(curve=[1.0]), "does not match the ledger's orders"),
        (lambda e: e.update(group=None, partition=1), "partition without a group"),
        (lambda e: e.update(group=1.5), "group"),
    ],
)
def test_malformed_entries_are_refused(edit, match):
    acc = Accountant()
    acc.spend(GaussianMechanism(5.0), group="g", partition=0)
    doc = _doc(acc)
    edit(doc["entries"][0])
    with pytest.raises(ValueError, match=match):
        Accountant.from_json(json.dumps(doc))


@settings(max_examples=60, deadline=None)
@given(
    sigmas=st.lists(st.floats(0.5, 50.0), min_size=2, max_size=6),
    which=st.integers(0, 5),
    field=st.sampled_from(["tag", "count", "params", "partition"]),
)
def test_every_single_field_edit_changes_the_digest(sigmas, which, field):
    acc = Accountant()
    with acc.parallel("g") as g:
        for i, s in enumerate(sigmas):
            acc.spend(GaussianMechanism(s), tag=f"t{i}", group=g, partition=i)
    doc = _doc(acc)
    e = doc["entries"][which % len(sigmas)]
    if field == "tag":
        e["tag"] = e["tag"] + "x"
    elif field == "count":
        e["count"] += 1
    elif field == "params":
        e["params"]["sensitivity"] = 2.0
    else:
        e["partition"] = 99
    with pytest.raises(ValueError):
        Accountant.from_json(json.dumps(doc))
    assert _rechain_unchecked(doc)["chain"]["digest"] != acc.digest()


def test_default_orders_ledgers_load_quickly():
    # recomputation is cached per distinct mechanism: a long ledger of repeated releases
    acc = Accountant(orders=rdp.DEFAULT_ORDERS)
    acc.spend_batch([GaussianMechanism(30.0), LaplaceMechanism(20.0)] * 2000)
    back = Accountant.from_json(acc.to_json(), expected_digest=acc.digest())
    np.testing.assert_array_equal(back.rdp(), acc.rdp())


def test_loaded_budget_still_refuses():
    acc = Accountant(budget=(2.0, 1e-6))
    acc.spend(GaussianMechanism(6.0, SQRT2))
    back = Accountant.from_json(acc.to_json())
    with pytest.raises(BudgetExceededError):
        back.spend(GaussianMechanism(6.0, SQRT2), count=5)
