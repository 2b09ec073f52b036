"""Family tables, configuration labels, encoding and domains against pandas oracles."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from pymc_rdp.bn.tables import (
    cell_labels,
    config_index,
    config_labels,
    encode_frame,
    family_table,
    infer_states,
    validate_frame,
)

STATES = {"a": ["lo", "hi"], "b": [0, 1, 2], "c": ["no", "yes"]}


@pytest.fixture(scope="module")
def toy() -> pd.DataFrame:
    """Records whose ``b`` depends on ``a`` and ``c`` on both (drawn directly with numpy)."""
    rng = np.random.default_rng(11)
    n = 3000
    a = rng.integers(0, 2, size=n)
    b = np.minimum(a + rng.integers(0, 2, size=n), 2)
    c = (rng.random(n) < 0.2 + 0.2 * b).astype(int)
    return pd.DataFrame(
        {"a": np.array(STATES["a"])[a], "b": b, "c": np.array(STATES["c"])[c], "x": rng.random(n)}
    )


def test_family_table_counts_match_groupby(toy: pd.DataFrame) -> None:
    states = infer_states(toy, ["a", "b", "c"], STATES)
    cards = {v: len(s) for v, s in states.items()}
    codes = encode_frame(toy, states)
    table = family_table(codes, "c", ["a", "b"], cards)
    assert table.shape == (6, 2) and table.dtype == np.int64
    for (i, sa), (j, sb), (k, sc) in itertools.product(
        enumerate(STATES["a"]), enumerate(STATES["b"]), enumerate(STATES["c"])
    ):
        n = int(((toy.a == sa) & (toy.b == sb) & (toy.c == sc)).sum())
        assert table[i * 3 + j, k] == n
    assert config_labels(["a", "b"], states)[4] == "a=hi,b=1"


def test_config_index_is_row_major_first_parent_slowest() -> None:
    cards = {"p": 3, "q": 4}
    codes = {"p": np.array([0, 1, 2, 2]), "q": np.array([3, 0, 1, 3])}
    idx = config_index(codes, ["p", "q"], cards, 4)
    np.testing.assert_array_equal(idx, np.ravel_multi_index((codes["p"], codes["q"]), (3, 4)))
    np.testing.assert_array_equal(config_index(codes, [], cards, 4), np.zeros(4, dtype=np.int64))
    assert config_labels([], STATES) == ["(none)"]
    assert cell_labels("c", ["a"], STATES) == [
        "a=lo | c=no",
        "a=lo | c=yes",
        "a=hi | c=no",
        "a=hi | c=yes",
    ]
    assert cell_labels("a", [], STATES) == ["a=lo", "a=hi"]


def test_states_encoding_and_frame_checks(toy: pd.DataFrame) -> None:
    read = infer_states(toy, ["a", "b"])
    assert read == {"a": ["hi", "lo"], "b": [0, 1, 2]}
    assert all(type(s) is int for s in read["b"])  # numpy scalars become Python scalars
    cat = pd.DataFrame({"e": pd.Categorical(["x"], categories=["x", "unseen"])})
    assert infer_states(cat, ["e"]) == {"e": ["x", "unseen"]}
    with pytest.raises(ValueError, match=r"states: \['zz'\] are not nodes"):
        infer_states(toy, ["a"], {"zz": [1]})
    with pytest.raises(ValueError, match="lists a state twice"):
        infer_states(toy, ["a"], {"a": ["lo", "lo"]})
    with pytest.raises(ValueError, match=r"column 'b' has value\(s\) \[2\] outside its states"):
        encode_frame(toy, {"b": [0, 1]})
    with pytest.raises(TypeError, match="df must be a pandas DataFrame"):
        validate_frame(toy.to_numpy(), ["a"])
    with pytest.raises(ValueError, match=r"no column for the node\(s\) \['q'\]"):
        validate_frame(toy, ["a", "q"])
    with pytest.raises(ValueError, match="empty"):
        validate_frame(toy.iloc[:0], ["a"])
    bad = toy.copy()
    bad.loc[3, "b"] = np.nan
    with pytest.raises(ValueError, match=r"missing values in column\(s\) \['b'\]"):
        validate_frame(bad, ["a", "b"])
    assert list(validate_frame(toy, ["c", "a"]).columns) == ["c", "a"]
