"""Every record's codes on every engine: row-aligned, equal to pandas', bad values refused."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pymc_rdp.bn.structure import encode_frame
from pymc_rdp.curation.counting.records import encode_records

pytest.importorskip("polars")
pytest.importorskip("pyarrow")
pytest.importorskip("duckdb")

from test_counting import ENGINES, as_engine

STATES = {"age": [20, 30, 40], "job": ["a", "b"], "town": ["x", "y", "z"]}


def _records(n: int = 200, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.choice([20, 30, 40], n),
            "job": rng.choice(["a", "b"], n),
            "town": pd.Categorical(rng.choice(["x", "y", "z"], n), categories=["x", "y", "z"]),
            "unused": rng.random(n),
        }
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_codes_equal_pandas_row_by_row(engine):
    df = _records()
    expected = encode_frame(df.astype({"town": object}), STATES)
    codes = encode_records(as_engine(df, engine), STATES)
    assert list(codes) == list(STATES)
    for c in STATES:
        assert codes[c].dtype == np.int64
        np.testing.assert_array_equal(codes[c], expected[c])


@pytest.mark.parametrize("engine", ENGINES)
def test_missing_and_outside_values_are_refused_by_column(engine):
    df = _records(20)
    missing = df.astype({"job": object})
    missing.loc[4, "job"] = None
    with pytest.raises(ValueError, match="'job' has missing values"):
        encode_records(as_engine(missing, engine), STATES)
    outside = df.copy()
    outside.loc[7, "age"] = 50
    with pytest.raises(ValueError, match="'age' has values outside its declared states"):
        encode_records(as_engine(outside, engine), STATES)
    with pytest.raises(ValueError, match="no column"):
        encode_records(as_engine(df, engine), {**STATES, "salary": [0, 1]})


def test_an_unsupported_frame_is_refused():
    with pytest.raises(TypeError, match="frame"):
        encode_records([[1, 2]], STATES)
