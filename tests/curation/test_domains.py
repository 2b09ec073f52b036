"""Declared domains: states are part of the contract, not read from the private records."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import pymc_rdp as pmr
from pymc_rdp import datasets
from pymc_rdp.curation import domains
from pymc_rdp.models.bayesian_network import BayesianNetwork

STRUCTURE = {"a": [], "b": ["a"]}
STATES = {"a": ["x", "y"], "b": [0, 1]}


def _pair() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Neighbouring datasets (replace-one): D' changes one record's b to a new value 2."""
    rng = np.random.default_rng(0)
    d = pd.DataFrame({"a": rng.choice(["x", "y"], 200), "b": rng.integers(0, 2, 200)})
    d2 = d.copy()
    d2.loc[0, "b"] = 2
    return d, d2


KW = {"mechanism": "dirichlet", "epsilon": 1.0, "order": 5.0}


# --------------------------------------------------------------------------- the attack


def test_new_category_value_is_refused_not_published() -> None:
    """Old code: D gives b's CPT shape (2, 2), D' gives (2, 3) — a perfect distinguisher.

    Now states must be declared, and D' has a value outside them: refused, nothing charged.
    """
    d, d2 = _pair()
    # no declaration: refused (the old code read the states from each dataset)
    with pytest.raises(ValueError, match=r"no declared states for the node\(s\) \['a', 'b'\]"):
        BayesianNetwork(STRUCTURE).fit(d, **KW)
    acc = pmr.Accountant.at_order(1.0, 5.0)
    ok = BayesianNetwork(STRUCTURE, states=STATES).fit(d, accountant=acc, **KW)
    assert ok.releases["b"].shape == (2, 2)
    assert acc.within_guarantee and acc.declarations == ()
    before = acc.to_json()
    with pytest.raises(ValueError, match=r"column 'b' has values outside its declared states"):
        BayesianNetwork(STRUCTURE, states=STATES).fit(d2, accountant=acc, **KW)
    assert acc.to_json() == before  # nothing charged


def test_from_data_opt_in_is_flagged_outside_the_guarantee() -> None:
    d, d2 = _pair()
    shapes = []
    for frame in (d, d2):
        acc = pmr.Accountant.at_order(1.0, 5.0)
        bn = BayesianNetwork(STRUCTURE, states="from-data").fit(frame, accountant=acc, **KW)
        shapes.append(bn.releases["b"].shape)
        assert not acc.within_guarantee
        (decl,) = acc.declarations
        assert decl["kind"] == "states_from_data" and decl["outside_guarantee"] is True
        assert "a, b" in decl["detail"]
        assert "OUTSIDE THE GUARANTEE (states_from_data)" in acc.report()
        assert "states_from_data" in acc.to_json()
    assert shapes == [(2, 2), (2, 3)]  # what the opt-in would publish: its flag is deserved


def test_from_data_only_for_undeclared_nodes() -> None:
    d, _ = _pair()
    acc = pmr.Accountant.at_order(1.0, 5.0)
    bn = BayesianNetwork(STRUCTURE, states="from-data").fit(d, accountant=acc, **KW)
    assert bn.states == {"a": ["x", "y"], "b": [0, 1]}
    model = datasets.load_network("cancer")
    sample = datasets.sample_network("cancer", 300, random_state=1)
    acc = pmr.Accountant.at_order(1.0, 5.0)
    BayesianNetwork(model).fit(sample, accountant=acc, **KW)  # BIF states: declared
    assert acc.within_guarantee


def test_declared_unused_states_fix_the_shape() -> None:
    d, _ = _pair()
    states = {"a": ["x", "y", "z"], "b": [0, 1, 2, 3]}
    bn = BayesianNetwork(STRUCTURE, states=states).fit(d, mechanism="none")
    counts = bn._posterior_params["b"] - bn.alpha0
    assert counts.shape == (3, 4)
    np.testing.assert_array_equal(counts[2], 0)  # a = "z" never occurs: a zero row
    np.testing.assert_array_equal(counts[:, 2:], 0)  # b = 2, 3 never occur: zero columns
    bn = BayesianNetwork(STRUCTURE, states=states).fit(d, **KW)
    assert bn.releases["a"].shape == (1, 3)
    assert bn.releases["b"].shape == (3, 4)


@pytest.mark.parametrize(
    ("column", "match"),
    [
        (np.linspace(0.5, 99.5, 200), "non-integral numbers"),
        ([f"patient {i}" for i in range(200)], "more than 100 distinct|identifier"),
        (np.arange(200) % 150 * 7, "more than 100 distinct"),
        ([f"id{i}" for i in range(30)] * 1, "identifier"),
    ],
)
def test_float_and_id_columns_refused_even_with_opt_in(column, match: str) -> None:
    n = len(column)
    df = pd.DataFrame({"a": ["x", "y"] * (n // 2), "b": column})
    acc = pmr.Accountant.at_order(1.0, 5.0)
    with pytest.raises(ValueError, match=match) as info:
        BayesianNetwork(STRUCTURE, states="from-data").fit(df, accountant=acc, **KW)
    assert "private_bins" in str(info.value) and "cuts" in str(info.value)
    assert "column 'b'" in str(info.value)
    assert len(acc.ledger) == 0 and acc.declarations == ()


@pytest.mark.parametrize(
    ("states", "error", "match"),
    [
        ({"zz": [1, 2]}, ValueError, r"states: \['zz'\] are not nodes"),
        ({"a": ["x", "x"]}, ValueError, r"states\['a'\] lists the state 'x' twice"),
        ({"a": "xy"}, TypeError, r"states\['a'\] must be a list of states"),
        ({"a": 3}, TypeError, r"states\['a'\] must be a list of states"),
        ({"a": []}, ValueError, r"states\['a'\] has no states"),
        ({"a": [None, "x"]}, ValueError, r"states\['a'\]: None is not a valid state"),
        (["a", "b"], TypeError, "states must be a dict"),
        ("observed", ValueError, "states must be a dict or 'from-data'"),
    ],
)
def test_bad_states_argument(states, error, match: str) -> None:
    with pytest.raises(error, match=match):
        BayesianNetwork(STRUCTURE, states=states)


# --------------------------------------------------------------------------- cut points


def test_bin_labels_and_bin_column() -> None:
    assert domains.bin_labels([25, 35]) == ["<=25", "(25, 35]", ">35"]
    assert domains.bin_labels([0, 5000], atoms=[0]) == ["<=0", "0", "(0, 5000]", ">5000"]
    cat = domains.bin_column([17, 25, 26, 35, 90, np.nan], [25, 35])
    assert list(cat.categories) == ["<=25", "(25, 35]", ">35"]
    assert list(cat.astype(object)[:5]) == ["<=25", "<=25", "(25, 35]", "(25, 35]", ">35"]
    assert pd.isna(cat[5])
    # the same bins as pandas.cut with open ends (right-closed)
    x = np.random.default_rng(1).normal(30, 10, 500)
    ref = pd.cut(x, [-np.inf, 25, 35, np.inf], labels=False)
    np.testing.assert_array_equal(domains.bin_column(x, [25, 35]).codes, ref)
    atom = domains.bin_column([0, 0, 3, 7000], [0, 5000], atoms=[0])
    assert list(atom.astype(object)) == ["0", "0", "(0, 5000]", ">5000"]
    with pytest.raises(ValueError, match="strictly increasing"):
        domains.bin_labels([3, 1])
    with pytest.raises(TypeError, match="cuts must be a list"):
        domains.bin_labels("1, 2")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-numeric"):
        domains.bin_column(["a", "b"], [1])


def test_parse_schema_forms_and_errors() -> None:
    schema = domains.parse_schema(
        {"s": ["f", "m"], "t": {"states": [1, 2]}, "age": {"cuts": [30, 60]}}
    )
    assert schema["s"]["states"] == ["f", "m"]
    assert schema["t"]["states"] == [1, 2]
    assert schema["age"]["states"] == ["<=30", "(30, 60]", ">60"]
    assert domains.parse_schema({"columns": {"s": ["f"]}})["s"]["states"] == ["f"]
    with pytest.raises(ValueError, match=r"schema\['s'\] lists the state 'f' twice"):
        domains.parse_schema({"s": ["f", "f"]})
    with pytest.raises(ValueError, match=r"schema\['age'\] must have the key 'states' or 'cuts'"):
        domains.parse_schema({"age": {"bins": [1]}})
    with pytest.raises(TypeError, match=r"schema\['s'\] must be a list of states"):
        domains.parse_schema({"s": "fm"})
    with pytest.raises(TypeError, match="schema must map each column"):
        domains.parse_schema([1, 2])


def test_load_schema_json_and_yaml(tmp_path) -> None:
    doc = {"sex": ["f", "m"], "age": {"cuts": [30, 60]}}
    (tmp_path / "s.json").write_text(json.dumps(doc))
    (tmp_path / "s.yaml").write_text("sex: [f, m]\nage:\n  cuts: [30, 60]\n")
    assert domains.load_schema(tmp_path / "s.json") == domains.load_schema(tmp_path / "s.yaml")
    (tmp_path / "bad.yaml").write_text("sex: [f, m\n")
    with pytest.raises(ValueError, match="not valid YAML"):
        domains.load_schema(tmp_path / "bad.yaml")
    with pytest.raises(FileNotFoundError):
        domains.load_schema(tmp_path / "none.json")


def test_per_node_from_data_opt_in() -> None:
    d, _ = _pair()
    acc = pmr.Accountant.at_order(1.0, 5.0)
    bn = BayesianNetwork(STRUCTURE, states={"a": ["x", "y"], "b": "from-data"})
    bn.fit(d, accountant=acc, **KW)
    (decl,) = acc.declarations
    assert "the states of b were read" in decl["detail"]
    with pytest.raises(ValueError, match=r"no declared states for the node\(s\) \['b'\]"):
        BayesianNetwork(STRUCTURE, states={"a": ["x", "y"]}).fit(d, **KW)
    with pytest.raises(ValueError, match=r"states: \['q'\] are not nodes"):
        BayesianNetwork(STRUCTURE, states={"q": "from-data"})
