"""Models fitted from non-pandas frames: the same tables, states and charges as from pandas."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pymc_rdp.models.bayesian_network import BayesianNetwork
from pymc_rdp.privacy.accountant import Accountant

pl = pytest.importorskip("polars")
pa = pytest.importorskip("pyarrow")
duckdb = pytest.importorskip("duckdb")

STRUCTURE = {"a": [], "b": ["a"], "c": ["a", "b"]}
STATES = {"a": ["lo", "hi", "unused"], "b": [0, 1, 2], "c": ["no", "yes"]}


@pytest.fixture(scope="module")
def records() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    n = 500
    return pd.DataFrame(
        {
            "a": rng.choice(["lo", "hi"], n),
            "b": rng.integers(0, 3, n),
            "c": rng.choice(["no", "yes"], n),
            "other": rng.normal(size=n),
        }
    )


def engines(df: pd.DataFrame) -> dict:
    table = pa.Table.from_pandas(df, preserve_index=False)
    return {
        "polars": pl.from_arrow(table),
        "polars-lazy": pl.from_arrow(table).lazy(),
        "pyarrow": table,
        "duckdb": duckdb.from_arrow(table),
    }


@pytest.mark.parametrize("given", [STATES, {"a": STATES["a"]}])
def test_bayesian_network_fits_any_frame_like_pandas(records, given):
    ref = BayesianNetwork(STRUCTURE, states=given).fit(records, mechanism="none")
    for engine, frame in engines(records).items():
        bn = BayesianNetwork(STRUCTURE, states=given).fit(frame, mechanism="none")
        assert bn.states == ref.states, engine
        assert bn.n_records == len(records)
        for v in STRUCTURE:
            np.testing.assert_array_equal(
                bn._posterior_params[v], ref._posterior_params[v], err_msg=engine
            )


def test_private_fit_from_duckdb_charges_like_pandas(records):
    frame = duckdb.from_arrow(pa.Table.from_pandas(records, preserve_index=False))
    bn = BayesianNetwork(STRUCTURE, states=STATES)
    bn.fit(frame, mechanism="gaussian", epsilon=1.0, order=5.0, noise_aware=False)
    ref = BayesianNetwork(STRUCTURE, states=STATES)
    ref.fit(records, mechanism="gaussian", epsilon=1.0, order=5.0, noise_aware=False)
    assert [e.tag for e in bn.accountant.ledger] == [e.tag for e in ref.accountant.ledger]
    np.testing.assert_allclose(bn.accountant.rdp(), ref.accountant.rdp(), rtol=0, atol=0)
    assert {v: r.values.shape for v, r in bn.releases.items()} == {
        v: r.values.shape for v, r in ref.releases.items()
    }


@pytest.mark.parametrize("engine", ["polars-lazy", "duckdb"])
def test_bad_records_release_nothing_and_charge_nothing(records, engine):
    """A value outside the declared states, or a missing value, in a lazy frame: refused
    before any release, the accountant untouched, the network still unfitted."""
    bad = records.copy()
    bad["b"] = bad["b"].astype(float)
    bad.loc[7, "b"] = 5.0
    missing = records.copy()
    missing["c"] = missing["c"].astype(object)
    missing.loc[3, "c"] = None
    for frame, match in [
        (engines(bad)[engine], "column 'b' has values outside its declared states"),
        (engines(missing)[engine], "column 'c' has missing values"),
        (engines(records[["a", "b"]])[engine], r"has no column\(s\) \['c'\]"),
    ]:
        acc = Accountant.at_order(10.0, 5.0)
        bn = BayesianNetwork(STRUCTURE, states=STATES)
        with pytest.raises(ValueError, match=match):
            bn.fit(frame, mechanism="dirichlet", epsilon=1.0, order=5.0, accountant=acc)
        assert acc.ledger == [] and bn.releases == {}
        with pytest.raises(RuntimeError, match="not fitted"):
            bn.cpts  # noqa: B018


def test_empty_lazy_frame_is_refused(records):
    empty = pl.from_pandas(records.iloc[:0]).lazy()
    with pytest.raises(ValueError, match="df is empty"):
        BayesianNetwork(STRUCTURE, states=STATES).fit(empty, mechanism="none")
    with pytest.raises(ValueError, match="no records, or all missing"):
        BayesianNetwork(STRUCTURE).fit(empty, mechanism="none")


def test_naive_bayes_fits_polars_and_pyarrow_like_pandas(records):
    from pymc_rdp.models.naive_bayes import NaiveBayes

    X, y = records[["a", "b"]], records["c"].to_numpy()
    ref = NaiveBayes(mechanism="none").fit(X, y)
    for engine in ("polars", "pyarrow"):
        frame = engines(X)[engine]
        nb = NaiveBayes(mechanism="none").fit(frame, y)
        np.testing.assert_array_equal(nb.class_log_prior_, ref.class_log_prior_)
        for got, want in zip(nb.feature_log_prob_, ref.feature_log_prob_, strict=True):
            np.testing.assert_array_equal(got, want)
        assert list(nb.feature_names_in_) == ["a", "b"]
        np.testing.assert_array_equal(nb.predict(frame), ref.predict(X))
    with pytest.raises(TypeError, match="X is a lazy frame"):
        NaiveBayes(mechanism="none").fit(engines(X)["duckdb"], y)
