"""Counting on every engine: exact tables, identical across pandas, Polars, PyArrow and DuckDB."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pymc_rdp.bn.structure import encode_frame, family_table
from pymc_rdp.curation.counting import count_table, count_tables, infer_states

pl = pytest.importorskip("polars")
pa = pytest.importorskip("pyarrow")
duckdb = pytest.importorskip("duckdb")

try:
    import ibis
except ImportError:  # Ibis is optional: its engine is left out
    ibis = None

ENGINES = ("pandas", "polars", "polars-lazy", "pyarrow", "duckdb") + (("ibis",) if ibis else ())


def as_engine(df: pd.DataFrame, engine: str):
    """The same records in another engine (categorical columns stay categorical/dictionary)."""
    if engine == "pandas":
        return df
    table = pa.Table.from_pandas(df, preserve_index=False)
    if engine == "pyarrow":
        return table
    if engine == "duckdb":
        return duckdb.from_arrow(table)
    if engine == "ibis":
        return ibis.memtable(table)
    frame = pl.from_arrow(table)
    return frame.lazy() if engine == "polars-lazy" else frame


def oracle(df: pd.DataFrame, child: str, parents, states) -> np.ndarray:
    """Counts by a loop over records and cells (no bincount, no group-by)."""
    shape = [len(states[p]) for p in parents]
    configs = list(itertools.product(*(range(k) for k in shape)))
    table = np.zeros((len(configs), len(states[child])), dtype=np.int64)
    rows = df[[*parents, child]].astype(object).itertuples(index=False)
    for rec in rows:
        conf = tuple(states[p].index(x) for p, x in zip(parents, rec[:-1], strict=True))
        table[configs.index(conf), states[child].index(rec[-1])] += 1
    return table


# ----------------------------------------------------------------------------- random frames

KINDS = ("int", "str", "category")


@st.composite
def frames(draw):
    """A small frame, its declared states (some unused) and a random family over its columns."""
    m = draw(st.integers(1, 4))
    n = draw(st.integers(0, 25))
    data, states = {}, {}
    for j in range(m):
        kind = draw(st.sampled_from(KINDS))
        k = draw(st.integers(1, 4))
        if kind == "int":
            vals = draw(st.lists(st.integers(-5, 50), min_size=k, max_size=k, unique=True))
        else:
            vals = draw(
                st.lists(
                    st.text("abcxyz", min_size=1, max_size=3), min_size=k, max_size=k, unique=True
                )
            )
        used = draw(st.lists(st.sampled_from(vals), min_size=1, max_size=k, unique=True))
        picks = draw(st.lists(st.sampled_from(used), min_size=n, max_size=n))
        col = f"c{j}"
        if kind == "int":
            data[col] = pd.Series(picks, dtype="int64")
        elif kind == "str":
            data[col] = pd.Series(picks, dtype="str")
        else:
            cats = draw(st.permutations(vals))  # the categories need not be the declared order
            data[col] = pd.Series(pd.Categorical(picks, categories=list(cats)))
        states[col] = list(draw(st.permutations(vals)))
    cols = list(data)
    child = draw(st.sampled_from(cols))
    parents = draw(st.permutations([c for c in cols if c != child]))
    parents = parents[: draw(st.integers(0, len(parents)))]
    return pd.DataFrame(data), states, child, list(parents)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames())
def test_every_engine_counts_the_same_table(case):
    df, states, child, parents = case
    expect = oracle(df, child, parents, states)
    for engine in ENGINES:
        got = count_table(as_engine(df, engine), child, parents, states)
        assert got.dtype == np.int64, engine
        np.testing.assert_array_equal(got, expect, err_msg=engine)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames())
def test_network_tables_match_family_table(case):
    """Whole network (a chain over the columns): every engine equals bn_structure's tables."""
    df, states, _, _ = case
    cols = list(df.columns)
    parents = {c: cols[max(0, i - 2) : i] for i, c in enumerate(cols)}
    codes = encode_frame(df, states) if len(df) else {c: np.zeros(0, np.int64) for c in cols}
    cards = {c: len(s) for c, s in states.items()}
    expect = {v: family_table(codes, v, p, cards) for v, p in parents.items()}
    for engine in ENGINES:
        got = count_tables(as_engine(df, engine), parents, states)
        assert list(got) == cols
        for v in cols:
            np.testing.assert_array_equal(got[v], expect[v], err_msg=f"{engine} {v}")
            assert got[v].sum() == len(df)


def test_layout_and_unused_states():
    df = pd.DataFrame({"a": ["x", "y", "y"], "b": [2, 1, 2], "c": ["u", "u", "v"]})
    states = {"a": ["y", "x", "never"], "b": [1, 2], "c": ["v", "u"]}
    for engine in ENGINES:
        t = count_table(as_engine(df, engine), "c", ["a", "b"], states)
        # rows: (a, b) in row-major order, a slowest; columns: c's declared order
        expect = np.zeros((6, 2), dtype=np.int64)
        expect[0 * 2 + 0, 1] = 1  # a=y, b=1, c=u
        expect[0 * 2 + 1, 0] = 1  # a=y, b=2, c=v
        expect[1 * 2 + 1, 1] = 1  # a=x, b=2, c=u
        np.testing.assert_array_equal(t, expect, err_msg=engine)
        root = count_table(as_engine(df, engine), "a", [], states)
        np.testing.assert_array_equal(root, [[2, 1, 0]], err_msg=engine)


def test_float_and_boolean_columns():
    df = pd.DataFrame({"f": [0.5, 1.0, 1.0], "g": [True, False, True], "i": [1, 2, 2]})
    states = {"f": [1, 0.5], "g": [False, True], "i": [2.0, 1.0]}
    for engine in ENGINES:
        np.testing.assert_array_equal(
            count_table(as_engine(df, engine), "g", ["f"], states), [[1, 1], [0, 1]]
        )
        np.testing.assert_array_equal(count_table(as_engine(df, engine), "i", [], states), [[2, 1]])


# ----------------------------------------------------------------------------- bad input

SECRET_STR = "zz-secret"
SECRET_INT = 987654321


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames(), st.data())
def test_values_outside_the_domain_are_refused_naming_the_column(case, data):
    """One record outside the declared states: every engine refuses with the same message,
    naming the column, never showing the value or how many records are bad."""
    df, states, child, parents = case
    if len(df) == 0:
        return
    cols = [*parents, child]
    bad_col = data.draw(st.sampled_from(cols))
    row = data.draw(st.integers(0, len(df) - 1))
    df = df.copy()
    if pd.api.types.is_integer_dtype(df[bad_col]):
        df[bad_col] = df[bad_col].to_numpy().copy()
        df.loc[row, bad_col] = SECRET_INT
    else:
        df[bad_col] = df[bad_col].astype(str)
        df.loc[row, bad_col] = SECRET_STR
    messages = set()
    for engine in ENGINES:
        with pytest.raises(ValueError, match=f"column '{bad_col}' has values outside") as err:
            count_table(as_engine(df, engine), child, parents, states)
        msg = str(err.value)
        assert SECRET_STR not in msg and str(SECRET_INT) not in msg
        messages.add(msg)
    assert len(messages) == 1


@pytest.mark.parametrize("engine", ENGINES)
def test_missing_values_are_refused(engine):
    df = pd.DataFrame({"a": ["x", None, "y"], "b": [1.0, 2.0, np.nan]})
    states = {"a": ["x", "y"], "b": [1, 2]}
    with pytest.raises(ValueError, match=r"frame: column 'a' has missing values") as err:
        count_table(as_engine(df, engine), "b", ["a"], states)
    assert "1" not in str(err.value).replace("'", "")  # no count of the bad records
    with pytest.raises(ValueError, match=r"column 'b' has missing values"):
        count_table(as_engine(df.iloc[[0, 2]], engine), "b", [], states)


@pytest.mark.parametrize("engine", ENGINES)
def test_bad_columns_and_types(engine):
    df = pd.DataFrame({"a": ["x", "y"], "b": [1, 2], "t": pd.to_datetime(["2020-01-01"] * 2)})
    frame = as_engine(df, engine)
    with pytest.raises(ValueError, match=r"has no column\(s\) \['zz'\]"):
        count_table(frame, "zz", ["a"], {"a": ["x", "y"], "zz": [1]})
    with pytest.raises(TypeError, match=r"column 'b' holds integer values .* are of type str"):
        count_table(frame, "b", [], {"b": ["1", "2"]})
    with pytest.raises(TypeError, match="column 't' has type Datetime"):
        count_table(frame, "t", [], {"t": ["2020-01-01"]})
    with pytest.raises(ValueError, match=r"states: no declared states for column 'a'"):
        count_table(frame, "b", ["a"], {"b": [1, 2]})
    with pytest.raises(ValueError, match=r"states\['b'\] is empty"):
        count_table(frame, "b", [], {"b": []})
    with pytest.raises(ValueError, match=r"states\['b'\] lists a state twice"):
        count_table(frame, "b", [], {"b": [1, 1]})
    with pytest.raises(ValueError, match=r"states\['a'\] lists a missing value"):
        count_table(frame, "a", [], {"a": ["x", None]})
    with pytest.raises(ValueError, match="lists a column twice"):
        count_table(frame, "b", ["a", "a"], {"a": ["x", "y"], "b": [1, 2]})


def test_not_a_frame():
    with pytest.raises(TypeError, match="frame must be a pandas DataFrame or another data frame"):
        count_table(np.zeros((2, 2)), "a", [], {"a": [0]})
    with pytest.raises(TypeError, match="parents of 'a' must be a list"):
        count_table(pd.DataFrame({"a": [1]}), "a", "b", {"a": [1]})


def test_infer_states_reads_the_data():
    df = pd.DataFrame(
        {"a": ["y", "x", None], "b": [3, 1, 3], "c": pd.Categorical(["u", "u", "u"], ["v", "u"])}
    )
    assert infer_states(df, ["a", "b", "c"]) == {"a": ["x", "y"], "b": [1, 3], "c": ["v", "u"]}
    for engine in ENGINES[1:]:
        got = infer_states(as_engine(df, engine), ["a", "b"])
        assert got == {"a": ["x", "y"], "b": [1, 3]}, engine
    enum = pl.DataFrame({"e": pl.Series(["b"], dtype=pl.Enum(["a", "b"]))})
    assert infer_states(enum, ["e"]) == {"e": ["a", "b"]}


def test_counting_imports_no_pymc():
    import subprocess
    import sys

    code = (
        "import sys, pandas as pd\n"
        "from pymc_rdp.curation.counting import count_table\n"
        "count_table(pd.DataFrame({'a': [1]}), 'a', [], {'a': [1]})\n"
        "print(sorted(m for m in ('pymc', 'pytensor', 'arviz') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("engine", ENGINES[1:])
def test_bad_records_found_when_the_aggregate_is_longer_than_the_table(engine):
    """Every cell present plus bad records: the cut aggregate is diagnosed by a coded count."""
    df = pd.DataFrame({"a": ["x", "y", "x", "q"], "b": [1, 1, 2, 2]})
    states = {"a": ["x", "y"], "b": [1, 2]}
    with pytest.raises(ValueError, match=r"column 'a' has values outside") as err:
        count_table(as_engine(df, engine), "b", ["a"], {"a": ["x"], "b": [1, 2]})
    assert "'q'" not in str(err.value) and "'y'" not in str(err.value)
    df.loc[3, "a"] = None
    with pytest.raises(ValueError, match=r"column 'a' has missing values"):
        count_table(as_engine(df, engine), "b", ["a"], {"a": ["x"], "b": [1, 2]})
    with pytest.raises(ValueError, match=r"column 'a' has missing values"):
        count_table(as_engine(df, engine), "b", ["a"], states)
