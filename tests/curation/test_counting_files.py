"""Record files opened lazily by DuckDB and Polars: formats, text columns, clear errors."""

from __future__ import annotations

import importlib.util

import narwhals as nw
import numpy as np
import pandas as pd
import pytest

from pymc_rdp.curation.counting import count_table
from pymc_rdp.curation.counting import files as cf

pytest.importorskip("duckdb")
pytest.importorskip("polars")
pytest.importorskip("pyarrow")

LAZY = cf.LAZY_ENGINES


@pytest.fixture
def records(tmp_path):
    df = pd.DataFrame({"flag": [True, False, True], "n": [1, 2, 1], "s": ["x", "y", "x"]})
    df.to_csv(tmp_path / "r.csv", index=False)
    df.to_csv(tmp_path / "r.tsv", index=False, sep="\t")
    df.to_parquet(tmp_path / "r.parquet", index=False)
    return tmp_path


@pytest.mark.parametrize("engine", LAZY)
@pytest.mark.parametrize("name", ["r.csv", "r.tsv", "r.parquet"])
def test_lazy_files_count_like_pandas(records, engine, name):
    frame = cf.read_frame(records / name, engine)
    assert isinstance(nw.from_native(frame), nw.LazyFrame)
    states = {"n": [1, 2, 3], "s": ["y", "x"]}
    np.testing.assert_array_equal(count_table(frame, "n", ["s"], states), [[0, 1, 0], [2, 0, 0]])


@pytest.mark.parametrize("engine", LAZY)
def test_as_text_reads_csv_values_as_written(records, engine):
    frame = cf.read_frame(records / "r.csv", engine, as_text=True)
    states = {"flag": ["True", "False"], "n": ["1", "2"]}
    np.testing.assert_array_equal(count_table(frame, "flag", ["n"], states), [[2, 0], [0, 1]])


def test_bad_files_and_engines(records, monkeypatch):
    with pytest.raises(ValueError, match="engine must be one of"):
        cf.read_frame(records / "r.csv", "excel")
    with pytest.raises(ValueError, match=r"data file .*r\.xlsx: unknown format"):
        cf.read_frame(records / "r.xlsx", "duckdb")
    (records / "empty.csv").write_text("")
    with pytest.raises(ValueError, match=r"data file is empty: .*empty\.csv"):
        cf.read_frame(records / "empty.csv", "polars")
    (records / "bad.parquet").write_bytes(b"PAR1" + b"\0" * 40)
    for engine in LAZY:
        with pytest.raises(
            ValueError, match=rf"cannot read data file .*bad\.parquet with {engine}"
        ):
            cf.read_frame(records / "bad.parquet", engine)
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "duckdb" else real(n, *a)
    )
    assert cf.default_engine() == "pandas"
    with pytest.raises(ImportError, match=r"pip install 'pymc-rdp\[duckdb\]'"):
        cf.read_frame(records / "r.csv", "duckdb")
