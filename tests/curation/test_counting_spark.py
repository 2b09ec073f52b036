"""Counting on Spark in local mode: a network's tables from a Spark DataFrame equal pandas'."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

from pymc_rdp.curation.counting import count_tables, infer_states


def _java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and os.path.exists(os.path.join(home, "bin", "java")):
        return os.path.join(home, "bin", "java")
    return shutil.which("java")


if _java() is None:
    pytest.skip("Spark needs Java (no java on PATH or in JAVA_HOME)", allow_module_level=True)
pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (pymc-rdp[spark])")
pytest.importorskip("pyarrow", reason="pyarrow is not installed")


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # stay on the loopback interface
    session = (
        SparkSession.builder.master("local[2]")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .appName("pymc-rdp-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def adult():
    from pymc_rdp import datasets

    dag = dict(datasets.ADULT_DAG)
    df = datasets.adult_paper("train")[list(dag)].iloc[:5000]
    states = {v: [str(s) for s in infer_states(df, [v])[v]] for v in dag}
    return dag, df.astype(str), states


def _spark_frame(spark, df):
    """A Spark DataFrame of the records (built from rows: no pandas conversion in Spark)."""
    rows = list(df.astype(object).itertuples(index=False, name=None))
    return spark.createDataFrame(rows, schema=", ".join(f"`{c}` string" for c in df.columns))


def test_spark_counts_the_adult_network_like_pandas(spark, adult):
    dag, df, states = adult
    sdf = _spark_frame(spark, df)
    want = count_tables(df, dag, states)
    got = count_tables(sdf, dag, states)
    assert list(got) == list(want)
    for v in dag:
        assert got[v].dtype == np.int64
        np.testing.assert_array_equal(got[v], want[v], err_msg=v)
    assert got["income"].sum() == len(df)


def test_spark_refuses_bad_records_naming_the_column(spark, adult):
    dag, df, states = adult
    bad = df.copy()
    bad.loc[bad.index[10], "sex"] = "unknown-sex"
    with pytest.raises(ValueError, match="column 'sex' has values outside") as err:
        count_tables(_spark_frame(spark, bad), dag, states)
    assert "unknown-sex" not in str(err.value)
    holes = df.astype(object)
    holes.loc[holes.index[3], "age"] = None
    with pytest.raises(ValueError, match="column 'age' has missing values"):
        count_tables(_spark_frame(spark, holes), dag, states)


def test_spark_codes_every_record_like_pandas_in_row_order(spark, adult):
    from pymc_rdp.curation.counting.records import encode_records

    dag, df, states = adult
    want = encode_records(df, states)
    got = encode_records(_spark_frame(spark, df), states)
    for v in dag:
        np.testing.assert_array_equal(got[v], want[v], err_msg=v)
    bad = df.copy()
    bad.loc[bad.index[10], "sex"] = "unknown-sex"
    with pytest.raises(ValueError, match="column 'sex' has values outside") as err:
        encode_records(_spark_frame(spark, bad), states)
    assert "unknown-sex" not in str(err.value)
