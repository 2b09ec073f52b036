"""The JSON Schema of the ledger file (docs/ledger.schema.json) matches what is written."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import pymc_rdp as pmr
from pymc_rdp.privacy import ledger_codec

jsonschema = pytest.importorskip("jsonschema")

SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "ledger.schema.json").read_text())


def _validate(doc: dict) -> None:
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)


def _ledgers() -> list[pmr.Accountant]:
    out = []
    a = pmr.Accountant((10.0, 1e-6))
    a.spend(pmr.GaussianMechanism(sigma=10.0), count=3, tag="counts")
    with a.parallel("regions") as g:
        for k in range(3):
            a.spend(pmr.LaplaceMechanism(scale=3.0), group=g, partition=(k, "north"))
    a.spend(pmr.DiscreteGaussianMechanism(sigma=4.0, sensitivity=2.0), tag="table")
    # a Dirichlet curve is infinite above its largest valid order
    a.spend(pmr.DirichletMechanism(r=0.5, alpha=2.0, l2_sensitivity=2**0.5, linf_sensitivity=1.0))
    a.declare("public_total", "the census total is public", outside_guarantee=False)
    out.append(a)
    b = pmr.Accountant.at_order(2.0, 5.0)
    b.spend(pmr.RandomizedResponse(p=0.75), tag="rr")
    b.declare("states_from_data", "states read from the records", outside_guarantee=True)
    out.append(b)
    out.append(pmr.Accountant())
    return out


def test_every_written_ledger_validates() -> None:
    assert SCHEMA["properties"]["version"]["const"] == ledger_codec.VERSION
    for acc in _ledgers():
        for key in (None, b"secret"):
            doc = json.loads(acc.to_json() if key is None else acc.to_json(key=key))
            _validate(doc)
            assert ("signature" in doc) == (key is not None)
    doc = json.loads(_ledgers()[0].to_json())
    assert any("__float__" in str(e["curve"]) for e in doc["entries"])  # infinities covered
    assert any(isinstance(e["partition"], dict) for e in doc["entries"])  # tuple keys covered


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d.update(version=1),
        lambda d: d.update(format="other"),
        lambda d: d.pop("chain"),
        lambda d: d["entries"][0].update(count=0),
        lambda d: d["entries"][0].update(curve=[-1.0] * len(d["orders"])),
        lambda d: d["entries"][0].pop("params"),
        lambda d: d.update(budget={"kind": "dp", "epsilon": 1.0, "delta": 1.5}),
        lambda d: d["chain"].update(digest="xyz"),
        lambda d: d.update(extra=1),
    ],
)
def test_schema_refuses_malformed_ledgers(edit) -> None:
    doc = json.loads(_ledgers()[0].to_json())
    edit(doc)
    with pytest.raises(jsonschema.ValidationError):
        _validate(doc)


def test_orders_in_the_schema_are_above_one() -> None:
    doc = json.loads(pmr.Accountant(orders=np.array([1.5, 2.0])).to_json())
    _validate(doc)
    doc["orders"] = [1.0, 2.0]
    with pytest.raises(jsonschema.ValidationError):
        _validate(doc)
