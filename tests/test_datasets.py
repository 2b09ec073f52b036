"""Bundled datasets, the paper's preprocessing and the classic networks shipped with pgmpy."""

from __future__ import annotations

import itertools
import socket

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from pymc_rdp import datasets

# ------------------------------------------------------------------------------------------------
# Offline guarantee
# ------------------------------------------------------------------------------------------------


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every socket connection attempt fail loudly."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


def test_everything_loads_without_network(no_network: None) -> None:
    datasets.tables._adult_raw.cache_clear()
    datasets.tables._german_maps.cache_clear()
    datasets.networks._parse_network.cache_clear()
    datasets.networks._sampler_plan.cache_clear()
    assert len(datasets.load_adult("both")) == 48_842
    assert len(datasets.load_german_credit()) == 1_000
    assert len(datasets.load_digits()) == 1_797
    assert len(datasets.load_network("asia").nodes()) == 8
    assert datasets.sample_network("cancer", 10, random_state=0).shape == (10, 5)


# ------------------------------------------------------------------------------------------------
# Adult
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("split", "rows"), [("train", 32_561), ("test", 16_281), ("both", 48_842)])
def test_adult_shapes_and_labels(split: str, rows: int) -> None:
    df = datasets.load_adult(split)
    assert df.shape == (rows, 15)
    assert tuple(df.columns) == datasets.ADULT_COLUMNS
    # The test file's labels end with "." in the raw file: normalised.
    assert set(df["income"].unique()) == {"<=50K", ">50K"}
    for col in ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"):
        assert df[col].dtype == np.int64
    assert isinstance(df["education"].dtype, pd.CategoricalDtype)


def test_adult_known_counts() -> None:
    train = datasets.load_adult("train")
    # Counts from the UCI documentation / the raw file.
    assert (train["income"] == ">50K").sum() == 7_841
    assert train["workclass"].isna().sum() == 1_836
    assert train["occupation"].isna().sum() == 1_843
    assert train["native-country"].isna().sum() == 583
    assert train["age"].min() == 17
    assert train["age"].max() == 90
    assert (datasets.load_adult("test")["income"] == ">50K").sum() == 3_846


def test_adult_missing_options() -> None:
    dropped = datasets.load_adult("train", missing="drop")
    assert dropped.shape == (30_162, 15)
    assert not dropped.isna().any().any()
    as_state = datasets.load_adult("train", missing="category")
    assert not as_state.isna().any().any()
    assert (as_state["workclass"] == "missing").sum() == 1_836
    assert "missing" in as_state["occupation"].cat.categories
    with pytest.raises(ValueError, match="missing"):
        datasets.load_adult(missing="impute")
    with pytest.raises(ValueError, match="split"):
        datasets.load_adult("validation")


def test_adult_returns_independent_copies() -> None:
    a = datasets.load_adult("train")
    a.loc[0, "age"] = -1
    assert datasets.load_adult("train").loc[0, "age"] == 39


# ------------------------------------------------------------------------------------------------
# German credit
# ------------------------------------------------------------------------------------------------


def test_german_credit_shape_and_names() -> None:
    df = datasets.load_german_credit()
    assert df.shape == (1_000, 21)
    assert tuple(df.columns) == datasets.GERMAN_CREDIT_COLUMNS
    names = set(datasets.GERMAN_CREDIT_DAG)
    for parents in datasets.GERMAN_CREDIT_DAG.values():
        names.update(parents)
    assert names <= set(df.columns)
    assert df["credit_risk"].value_counts().to_dict() == {"good": 700, "bad": 300}
    assert not df.isna().any().any()
    numeric = ["duration", "amount", "installment_rate", "present_residence", "age"]
    numeric += ["number_credits", "people_liable"]
    for col in numeric:
        assert df[col].dtype == np.int64
    assert df.loc[0, "amount"] == 1169
    assert df.loc[0, "sex_marital_status"] == "male : single"
    assert set(df["telephone"].unique()) == {"yes", "no"}
    # Documented but unobserved state ("vacation") is still a category.
    assert len(df["purpose"].cat.categories) == 11
    assert df["purpose"].value_counts().min() == 0


def test_german_credit_codes() -> None:
    raw = datasets.load_german_credit(decode=False)
    assert raw.loc[0, "status"] == "A11"
    assert list(raw["credit_risk"].cat.categories) == ["1", "2"]
    decoded = datasets.load_german_credit()
    # Decoding is a bijection per column: the same partition of the records.
    for col in ("status", "purpose", "sex_marital_status", "housing"):
        pairs = pd.crosstab(raw[col], decoded[col])
        assert ((pairs > 0).sum(axis=1) <= 1).all()
        assert ((pairs > 0).sum(axis=0) <= 1).all()


def test_digits() -> None:
    df = datasets.load_digits()
    assert df.shape == (1_797, 65)
    assert df["target"].between(0, 9).all()
    assert df.drop(columns="target").to_numpy().max() == 16


# ------------------------------------------------------------------------------------------------
# DAGs of the paper
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dag", "columns"),
    [
        (datasets.ADULT_DAG, datasets.ADULT_COLUMNS),
        (datasets.GERMAN_CREDIT_DAG, datasets.GERMAN_CREDIT_COLUMNS),
    ],
)
def test_paper_dags(dag: dict[str, list[str]], columns: tuple[str, ...]) -> None:
    graph = nx.DiGraph()
    graph.add_nodes_from(dag)
    graph.add_edges_from((p, child) for child, parents in dag.items() for p in parents)
    assert nx.is_directed_acyclic_graph(graph)
    assert set(graph.nodes()) <= set(columns)
    assert set(graph.nodes()) == set(dag)  # every parent is also listed as a node


def test_paper_dag_sizes() -> None:
    assert len(datasets.ADULT_DAG) == 7
    assert len(datasets.GERMAN_CREDIT_DAG) == 14
    assert datasets.GERMAN_CREDIT_DAG["duration"] == ["amount", "installment_rate"]


# ------------------------------------------------------------------------------------------------
# Preprocessing
# ------------------------------------------------------------------------------------------------


def _toy(rng: np.random.Generator, n: int = 1_000) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "wide": rng.normal(size=n),  # n distinct values -> binned
            "narrow": rng.integers(0, 30, size=n),  # 30 distinct values -> kept
            "narrow31": np.arange(n) % 31,  # 31 distinct values -> binned
            "const": np.full(n, 7),
            "text": rng.choice(["a", "b", "c"], size=n),
            "atom": np.where(rng.random(n) < 0.8, 0.0, rng.exponential(size=n)),
        }
    )


def test_preprocess_rules(rng: np.random.Generator) -> None:
    df = _toy(rng)
    out = datasets.preprocess(df)
    assert "const" not in out.columns
    assert out.attrs["dropped"] == ["const"]
    assert set(out.attrs["bins"]) == {"wide", "narrow31", "atom"}
    pd.testing.assert_series_equal(out["narrow"], df["narrow"])
    pd.testing.assert_series_equal(out["text"], df["text"])
    # 10 equal-frequency bins
    assert out["wide"].nunique() == 10
    assert out["wide"].value_counts().to_numpy().tolist() == [100] * 10
    # 0 is an atom (80% > N/3) and the rest is cut into 10 quantile bins
    assert out.attrs["bins"]["atom"]["atoms"] == [0.0]
    assert out["atom"].cat.categories[0] == "0"
    assert (out["atom"] == "0").sum() == (df["atom"] == 0).sum()
    assert out["atom"].nunique() == 11
    assert not out.isna().any().any()
    kept = datasets.preprocess(df, drop_constant=False)
    assert "const" in kept.columns


def test_preprocess_matches_pandas_qcut(rng: np.random.Generator) -> None:
    df = pd.DataFrame({"x": np.round(rng.gamma(2.0, 10.0, size=2_000), 1)})
    out = datasets.preprocess(df, keep_atoms=False)
    expected = pd.qcut(df["x"], 10, labels=False, duplicates="drop")
    np.testing.assert_array_equal(out["x"].cat.codes.to_numpy(), expected.to_numpy())


def test_preprocess_merges_repeated_edges() -> None:
    x = np.concatenate([np.zeros(950), np.arange(1.0, 51.0)])
    df = pd.DataFrame({"x": x})
    plain = datasets.preprocess(df, keep_atoms=False)
    # Every quantile up to 0.9 is 0: the edges collapse into a single bin.
    assert plain["x"].nunique() == 1
    atoms = datasets.preprocess(df)
    assert atoms["x"].nunique() == 11
    assert (atoms["x"] == "0").sum() == 950


def test_preprocess_reference_applies_training_bins(rng: np.random.Generator) -> None:
    train = _toy(rng)
    test = _toy(rng, n=300)
    test.loc[0, "wide"] = 1e6  # outside the training range: last bin
    out_train = datasets.preprocess(train)
    out_test = datasets.preprocess(test, reference=out_train)
    assert list(out_test.columns) == list(out_train.columns)
    for col in out_train.attrs["bins"]:
        assert list(out_test[col].cat.categories) == list(out_train[col].cat.categories)
    assert out_test.loc[0, "wide"] == out_train["wide"].cat.categories[-1]
    assert not out_test.isna().any().any()


def test_preprocess_keeps_missing(rng: np.random.Generator) -> None:
    df = _toy(rng)
    df.loc[:9, "wide"] = np.nan
    out = datasets.preprocess(df)
    assert out["wide"].isna().sum() == 10


def test_preprocess_bad_input(rng: np.random.Generator) -> None:
    with pytest.raises(TypeError, match="df"):
        datasets.preprocess(np.zeros((3, 3)))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_bins"):
        datasets.preprocess(_toy(rng), n_bins=0)
    with pytest.raises(ValueError, match="reference"):
        datasets.preprocess(_toy(rng), reference=pd.DataFrame())


def test_paper_tables() -> None:
    adult = datasets.adult_paper()
    assert adult.shape == (32_561, 15)
    assert set(adult.attrs["bins"]) == {
        "age",
        "fnlwgt",
        "capital-gain",
        "capital-loss",
        "hours-per-week",
    }
    assert adult.attrs["bins"]["capital-gain"]["atoms"] == [0.0]
    assert adult.attrs["bins"]["hours-per-week"]["atoms"] == [40.0]
    german = datasets.german_credit_paper()
    assert set(german.attrs["bins"]) == {"duration", "amount", "age"}
    assert german.shape == (1_000, 21)
    digits = datasets.digits_paper()
    assert digits.attrs["bins"] == {}
    assert set(digits.attrs["dropped"]) == {"pixel_0_0", "pixel_4_0", "pixel_4_7"}


def test_paper_split() -> None:
    X_train, X_test, y_train, y_test = datasets.paper_split("german_credit")
    assert X_train.shape == (700, 20)
    assert X_test.shape == (300, 20)
    assert len(y_train) == 700
    assert len(y_test) == 300
    assert "credit_risk" not in X_train.columns
    for col in X_train.attrs["bins"]:
        assert list(X_test[col].cat.categories) == list(X_train[col].cat.categories)
    again = datasets.paper_split("german_credit")
    pd.testing.assert_frame_equal(X_train, again[0])
    with pytest.raises(ValueError, match="name"):
        datasets.paper_split("iris")  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------------
# Classic networks
# ------------------------------------------------------------------------------------------------


def test_list_networks() -> None:
    names = datasets.list_networks()
    for name in ("asia", "cancer", "earthquake", "survey", "sachs", "child", "insurance", "alarm"):
        assert name in names
    assert names == sorted(names)


@pytest.mark.parametrize(
    ("name", "nodes", "edges"),
    [("asia", 8, 8), ("sachs", 11, 17), ("child", 20, 25), ("alarm", 37, 46)],
)
def test_load_network_sizes(name: str, nodes: int, edges: int) -> None:
    model = datasets.load_network(name)
    assert len(model.nodes()) == nodes
    assert len(model.edges()) == edges
    assert model.check_model()


def test_load_network_returns_copies() -> None:
    a = datasets.load_network("asia")
    a.remove_cpds(a.get_cpds("dysp"))
    assert datasets.load_network("ASIA").get_cpds("dysp") is not None
    with pytest.raises(ValueError, match="name"):
        datasets.load_network("no-such-network")
    with pytest.raises(TypeError, match="name"):
        datasets.load_network(3)  # type: ignore[arg-type]


def _exact_joint(model: object) -> tuple[list[str], list[list[str]], np.ndarray]:
    """Joint distribution by brute-force enumeration of every assignment (small networks)."""
    nodes = list(model.nodes())  # type: ignore[attr-defined]
    cpds = {n: model.get_cpds(n) for n in nodes}  # type: ignore[attr-defined]
    states = [list(cpds[n].state_names[n]) for n in nodes]
    joint = np.ones([len(s) for s in states])
    for assignment in itertools.product(*[range(len(s)) for s in states]):
        value = dict(zip(nodes, assignment, strict=True))
        p = 1.0
        for n in nodes:
            cpd = cpds[n]
            index = tuple(
                cpd.state_names[v].index(states[nodes.index(v)][value[v]]) for v in cpd.variables
            )
            p *= cpd.values[index]
        joint[assignment] = p
    return nodes, states, joint


def test_sample_network_matches_exact_joint_asia() -> None:
    model = datasets.load_network("asia")
    nodes, states, joint = _exact_joint(model)
    assert joint.sum() == pytest.approx(1.0, abs=1e-12)
    n = 200_000
    sample = datasets.sample_network("asia", n, random_state=1)
    assert sample.shape == (n, 8)
    assert list(sample.columns) == list(model.nodes())
    codes = np.stack(
        [
            pd.Categorical(sample[v], categories=states[i]).codes.astype(np.int64)
            for i, v in enumerate(nodes)
        ]
    )
    assert (codes >= 0).all()
    flat = np.ravel_multi_index(tuple(codes), joint.shape)
    freq = np.bincount(flat, minlength=joint.size) / n
    p = joint.ravel()
    # Every cell within 5 binomial standard errors (plus a floor for near-zero cells).
    tol = 5.0 * np.sqrt(p * (1 - p) / n) + 1e-5
    assert np.all(np.abs(freq - p) <= tol)
    # Impossible joint states never appear.
    assert freq[p == 0].sum() == 0


@pytest.mark.filterwarnings("ignore:.*deprecated.*:FutureWarning")
@pytest.mark.parametrize("name", ["sachs", "child", "alarm"])
def test_sample_network_marginals_match_variable_elimination(name: str) -> None:
    from pgmpy.inference import VariableElimination

    model = datasets.load_network(name)
    n = 100_000
    sample = datasets.sample_network(model, n, random_state=2)
    infer = VariableElimination(model)
    for node in list(model.nodes())[:: max(1, len(model.nodes()) // 6)]:
        exact = infer.query([node], show_progress=False)
        p = np.asarray(exact.values, dtype=np.float64)
        names = list(exact.state_names[node])
        freq = sample[node].value_counts(normalize=True).reindex(names, fill_value=0.0).to_numpy()
        tol = 5.0 * np.sqrt(p * (1 - p) / n) + 1e-4
        assert np.all(np.abs(freq - p) <= tol), node


def test_sample_network_reproducible_and_typed() -> None:
    a = datasets.sample_network("alarm", 500, random_state=3)
    b = datasets.sample_network("alarm", 500, random_state=np.random.default_rng(3))
    pd.testing.assert_frame_equal(a, b)
    assert all(isinstance(t, pd.CategoricalDtype) for t in a.dtypes)
    assert datasets.sample_network("asia", 0).shape == (0, 8)


def test_sample_network_bad_input() -> None:
    with pytest.raises(ValueError, match="n must"):
        datasets.sample_network("asia", -1)
    with pytest.raises(ValueError, match="network"):
        datasets.sample_network("nowhere", 5)
    with pytest.raises(TypeError, match="network"):
        datasets.sample_network(42, 5)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------------
# Public domains
# ------------------------------------------------------------------------------------------------


def test_adult_public_uses_the_declared_schema() -> None:
    from pymc_rdp.curation.domains import parse_schema

    schema = parse_schema(datasets.ADULT_SCHEMA)
    both = datasets.adult_public("both")
    assert list(both.columns) == list(datasets.ADULT_COLUMNS)
    for col in both.columns:
        assert list(both[col].cat.categories) == schema[col]["states"], col
        assert both[col].notna().all(), col  # every record is inside the declared domain
    assert both.attrs["states"]["age"] == [
        "<=24",
        "(24, 34]",
        "(34, 44]",
        "(44, 54]",
        "(54, 64]",
        ">64",
    ]
    # the documented categories are exactly those of the two files (plus "missing")
    raw = datasets.load_adult("both", missing="category")
    for col in ("workclass", "education", "occupation", "race", "sex", "native-country"):
        assert set(raw[col].cat.categories) == set(schema[col]["states"]), col
    # nothing depends on the records: a subsample has the same states
    few = datasets.adult_public("test").iloc[:7]
    for col in few.columns:
        assert list(few[col].cat.categories) == schema[col]["states"]
    # the binning: ages 24 and 25 fall on either side of the first cut point
    ages = datasets.load_adult("train")["age"]
    binned = datasets.adult_public("train")["age"].astype(str)
    assert set(binned[ages == 24]) == {"<=24"} and set(binned[ages == 25]) == {"(24, 34]"}
    gain = datasets.load_adult("train")["capital-gain"]
    assert set(datasets.adult_public("train")["capital-gain"].astype(str)[gain == 0]) == {"<=0"}


def test_german_credit_public_uses_the_declared_schema() -> None:
    from pymc_rdp.curation.domains import parse_schema

    schema = parse_schema(datasets.GERMAN_CREDIT_SCHEMA)
    german = datasets.german_credit_public()
    raw = datasets.load_german_credit()
    assert german.shape == (1_000, 21)
    for col in german.columns:
        assert list(german[col].cat.categories) == schema[col]["states"], col
        assert german[col].notna().all()
        if isinstance(raw[col].dtype, pd.CategoricalDtype):  # the documented code lists
            assert list(raw[col].cat.categories) == schema[col]["states"]
    assert german.attrs["states"]["installment_rate"] == [1, 2, 3, 4]
    assert len(schema["purpose"]["states"]) == 11  # one documented purpose never occurs
    assert (german["purpose"] == "(vacation - does not exist?)").sum() == 0
