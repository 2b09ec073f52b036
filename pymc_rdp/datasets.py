"""Bundled datasets and classic discrete Bayesian networks.

Everything here works offline: the Adult and German credit files ship inside the package
(``pymc_rdp/data``, see its ``README.txt`` for the UCI citations and the CC BY 4.0 licence), the
digits come with scikit-learn, and the classic networks are read from the BIF files that ship inside
pgmpy's wheel (``pgmpy/utils/example_models/*.bif.gz``). Nothing downloads at run time.

Tabular loaders
    :func:`load_adult`, :func:`load_german_credit`, :func:`load_digits`.
Preprocessing of the Dirichlet-mechanism paper (Ponnoprat, TMLR 2023)
    :func:`preprocess`: numeric columns with more than 30 distinct values are cut into 10 quantile
    bins, constant columns are dropped. :func:`adult_paper`, :func:`german_credit_paper` and
    :func:`digits_paper` return the preprocessed tables, :func:`paper_split` the paper's 70/30
    split with the preprocessing fitted on the training part; :data:`ADULT_DAG` and
    :data:`GERMAN_CREDIT_DAG` are the paper's network structures (child -> parents).
Public domains (declared, not read from the data)
    :data:`ADULT_SCHEMA` and :data:`GERMAN_CREDIT_SCHEMA`: every column's states from the
    datasets' documentation and fixed, public cut points for the numeric columns;
    :func:`adult_public` and :func:`german_credit_public` apply them, so that everything a fit
    publishes about the domain is covered by its guarantee (``pymc-rdp demo`` uses them).
Classic networks
    :func:`list_networks`, :func:`load_network` (a pgmpy ``DiscreteBayesianNetwork``, cached) and
    :func:`sample_network` (vectorised ancestral sampling of any number of records).
"""

from __future__ import annotations

import functools
import gzip
import importlib.resources
import io
import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

__all__ = [
    "ADULT_COLUMNS",
    "ADULT_DAG",
    "ADULT_SCHEMA",
    "GERMAN_CREDIT_COLUMNS",
    "GERMAN_CREDIT_DAG",
    "GERMAN_CREDIT_SCHEMA",
    "adult_paper",
    "adult_public",
    "digits_paper",
    "german_credit_paper",
    "german_credit_public",
    "list_networks",
    "load_adult",
    "load_digits",
    "load_german_credit",
    "load_network",
    "paper_split",
    "preprocess",
    "sample_network",
]

#: Column names of the Adult data, in file order (UCI ``adult.names``).
ADULT_COLUMNS: tuple[str, ...] = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
)

#: Column names of the German credit data, in file order. The UCI documentation's names, except
#: ``sex_marital_status`` (UCI: personal status and sex), which is the name used in the paper's DAG.
GERMAN_CREDIT_COLUMNS: tuple[str, ...] = (
    "status",
    "duration",
    "credit_history",
    "purpose",
    "amount",
    "savings",
    "employment_duration",
    "installment_rate",
    "sex_marital_status",
    "other_debtors",
    "present_residence",
    "property",
    "age",
    "other_installment_plans",
    "housing",
    "number_credits",
    "job",
    "people_liable",
    "telephone",
    "foreign_worker",
    "credit_risk",
)

# Column of the German credit table -> key of german.values_maps.json.
_GERMAN_MAP_KEYS: dict[str, str] = {
    "status": "status",
    "credit_history": "credit_history",
    "purpose": "purpose",
    "savings": "savings",
    "employment_duration": "present_employment",
    "sex_marital_status": "status_sex",
    "other_debtors": "other_debtors",
    "property": "property",
    "other_installment_plans": "installment_plans",
    "housing": "housing",
    "job": "job",
    "telephone": "telephone",
    "foreign_worker": "foreign_worker",
    "credit_risk": "credit",
}

#: The Adult network of the Dirichlet-mechanism paper (Ponnoprat, TMLR 2023): child -> parents.
ADULT_DAG: dict[str, list[str]] = {
    "age": [],
    "sex": [],
    "education": ["age"],
    "occupation": ["age", "sex", "education"],
    "capital-gain": ["sex", "education", "occupation"],
    "capital-loss": ["sex", "occupation", "capital-gain"],
    "income": ["occupation", "capital-gain", "capital-loss"],
}

#: The German credit network of the Dirichlet-mechanism paper (Ponnoprat, TMLR 2023): child ->
#: parents. Every name is a column of :func:`load_german_credit`.
GERMAN_CREDIT_DAG: dict[str, list[str]] = {
    "housing": [],
    "property": ["housing"],
    "age": ["housing"],
    "amount": ["property"],
    "other_debtors": ["property"],
    "sex_marital_status": ["amount"],
    "purpose": ["amount"],
    "installment_rate": ["amount"],
    "duration": ["amount", "installment_rate"],
    "people_liable": ["sex_marital_status"],
    "foreign_worker": ["duration"],
    "number_credits": ["age"],
    "credit_history": ["number_credits"],
    "other_installment_plans": ["credit_history"],
}

#: The public domain of every Adult column (:func:`pymc_rdp.curation.domains.parse_schema` format).
#: Categories: the lists of the UCI documentation (``adult.names``, Becker & Kohavi 1996), in its
#: order, plus ``"missing"`` for the unknown values (``"?"``) of ``workclass``, ``occupation`` and
#: ``native-country``. Numeric columns: fixed round cut points chosen without the data (age in
#: ten-year bands, ``fnlwgt`` in steps of 100,000, capital gain and loss with 0 as its own state
#: and a few round amounts, weekly hours around the 40-hour week); ``education-num`` is the
#: documented code 1..16 of ``education``.
ADULT_SCHEMA: dict[str, Any] = {
    "age": {"cuts": [24, 34, 44, 54, 64]},
    "workclass": [
        "Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov", "State-gov",
        "Without-pay", "Never-worked", "missing",
    ],
    "fnlwgt": {"cuts": [100_000, 200_000, 300_000, 400_000]},
    "education": [
        "Bachelors", "Some-college", "11th", "HS-grad", "Prof-school", "Assoc-acdm", "Assoc-voc",
        "9th", "7th-8th", "12th", "Masters", "1st-4th", "10th", "Doctorate", "5th-6th",
        "Preschool",
    ],
    "education-num": list(range(1, 17)),
    "marital-status": [
        "Married-civ-spouse", "Divorced", "Never-married", "Separated", "Widowed",
        "Married-spouse-absent", "Married-AF-spouse",
    ],
    "occupation": [
        "Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial",
        "Prof-specialty", "Handlers-cleaners", "Machine-op-inspct", "Adm-clerical",
        "Farming-fishing", "Transport-moving", "Priv-house-serv", "Protective-serv",
        "Armed-Forces", "missing",
    ],
    "relationship": [
        "Wife", "Own-child", "Husband", "Not-in-family", "Other-relative", "Unmarried",
    ],
    "race": ["White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"],
    "sex": ["Female", "Male"],
    "capital-gain": {"cuts": [0, 5_000, 10_000, 20_000]},
    "capital-loss": {"cuts": [0, 1_500, 2_000, 2_500]},
    "hours-per-week": {"cuts": [20, 39, 40, 50]},
    "native-country": [
        "United-States", "Cambodia", "England", "Puerto-Rico", "Canada", "Germany",
        "Outlying-US(Guam-USVI-etc)", "India", "Japan", "Greece", "South", "China", "Cuba",
        "Iran", "Honduras", "Philippines", "Italy", "Poland", "Jamaica", "Vietnam", "Mexico",
        "Portugal", "Ireland", "France", "Dominican-Republic", "Laos", "Ecuador", "Taiwan",
        "Haiti", "Columbia", "Hungary", "Guatemala", "Nicaragua", "Scotland", "Thailand",
        "Yugoslavia", "El-Salvador", "Trinadad&Tobago", "Peru", "Hong", "Holand-Netherlands",
        "missing",
    ],
    "income": ["<=50K", ">50K"],
}  # fmt: skip

#: Numeric columns of the German credit data and their public domains: fixed round cut points
#: for ``duration`` (months), ``amount`` (Deutsche Mark) and ``age`` (years), and the documented
#: ordinal codes of the other four (Grömping 2019, "South German Credit Data: Correcting a Widely
#: Used Data Set", Beuth University report 4/2019: installment rate, present residence and
#: number of credits in 4 classes, people liable in 2). The coded columns take every documented
#: state of ``german.values_maps.json`` (:func:`german_credit_public`).
_GERMAN_NUMERIC_SCHEMA: dict[str, Any] = {
    "duration": {"cuts": [6, 12, 18, 24, 36]},
    "amount": {"cuts": [1_000, 2_000, 3_000, 5_000, 10_000]},
    "installment_rate": [1, 2, 3, 4],
    "present_residence": [1, 2, 3, 4],
    "age": {"cuts": [25, 35, 45, 55, 65]},
    "number_credits": [1, 2, 3, 4],
    "people_liable": [1, 2],
}

_DATA_PACKAGE = "pymc_rdp"


def _data_bytes(name: str) -> bytes:
    return (importlib.resources.files(_DATA_PACKAGE) / "data" / name).read_bytes()


# ---------------------------------------------------------------------------------------------
# Adult
# ---------------------------------------------------------------------------------------------


def _read_adult_file(name: str) -> pd.DataFrame:
    raw = gzip.decompress(_data_bytes(name)).decode("utf-8")
    # The test file starts with the comment line "|1x3 Cross validator".
    lines = [line for line in raw.splitlines() if line.strip() and not line.startswith("|")]
    return pd.read_csv(
        io.StringIO("\n".join(lines)),
        header=None,
        names=list(ADULT_COLUMNS),
        sep=",",
        skipinitialspace=True,
        dtype=str,
        keep_default_na=False,
    )


@functools.lru_cache(maxsize=4)
def _adult_raw(split: str) -> pd.DataFrame:
    return _read_adult_file("adult.data.gz" if split == "train" else "adult.test.gz")


def load_adult(
    split: Literal["train", "test", "both"] = "train",
    missing: Literal["nan", "drop", "category"] = "nan",
) -> pd.DataFrame:
    """Load the UCI Adult (Census Income) data bundled with the package.

    Becker & Kohavi (1996), UCI Machine Learning Repository, CC BY 4.0.

    Parameters
    ----------
    split : {"train", "test", "both"}
        ``"train"``: the 32,561 records of ``adult.data``; ``"test"``: the 16,281 records of
        ``adult.test``; ``"both"``: the two concatenated (48,842 records, index reset).
    missing : {"nan", "drop", "category"}
        Treatment of the values written ``"?"`` in the files (only in ``workclass``,
        ``occupation`` and ``native-country``): ``"nan"`` keeps them as missing values (NaN),
        ``"drop"`` removes the records that have any, ``"category"`` keeps them as the explicit
        state ``"missing"``.

    Returns
    -------
    pandas.DataFrame
        The 15 columns of :data:`ADULT_COLUMNS`. The six numeric columns are ``int64``, the
        others unordered ``category`` with sorted categories. Income labels are ``"<=50K"`` and
        ``">50K"`` in both splits (the trailing ``"."`` of the test file is removed).
    """
    if split not in ("train", "test", "both"):
        raise ValueError(f"split must be 'train', 'test' or 'both', got {split!r}")
    if missing not in ("nan", "drop", "category"):
        raise ValueError(f"missing must be 'nan', 'drop' or 'category', got {missing!r}")
    if split == "both":
        df = pd.concat([_adult_raw("train"), _adult_raw("test")], ignore_index=True)
    else:
        df = _adult_raw(split).copy()
    df["income"] = df["income"].str.rstrip(".")
    numeric = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
    for col in numeric:
        df[col] = df[col].astype(np.int64)
    text = [c for c in ADULT_COLUMNS if c not in numeric]
    is_missing = df[text] == "?"
    if missing == "drop":
        df = df.loc[~is_missing.any(axis=1)].reset_index(drop=True)
    elif missing == "category":
        df[text] = df[text].mask(is_missing, "missing")
    else:
        df[text] = df[text].mask(is_missing, np.nan)
    for col in text:
        states = sorted(df[col].dropna().unique())
        df[col] = pd.Categorical(df[col], categories=states)
    return df


# ---------------------------------------------------------------------------------------------
# German credit
# ---------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _german_maps() -> dict[str, dict[str, Any]]:
    return json.loads(_data_bytes("german.values_maps.json").decode("utf-8"))


def load_german_credit(decode: bool = True) -> pd.DataFrame:
    """Load the Statlog (German Credit Data) data bundled with the package.

    Hofmann (1994), UCI Machine Learning Repository, CC BY 4.0.

    Parameters
    ----------
    decode : bool
        If true (default), replace the attribute codes (``A11``, ``A12``, ...) by their meaning
        from the UCI documentation (``german.values_maps.json``), ``telephone`` and
        ``foreign_worker`` become ``"yes"``/``"no"`` and ``credit_risk`` becomes
        ``"good"``/``"bad"``. If false, keep the codes as in the file.

    Returns
    -------
    pandas.DataFrame
        1,000 rows and the 21 columns of :data:`GERMAN_CREDIT_COLUMNS` (the names of
        :data:`GERMAN_CREDIT_DAG` where the DAG names the column). The seven numeric columns
        (``duration``, ``amount``, ``installment_rate``, ``present_residence``, ``age``,
        ``number_credits``, ``people_liable``) are ``int64``; the coded columns are ``category``
        with every documented state as a category, in code order, observed or not.
    """
    raw = gzip.decompress(_data_bytes("german.data.gz")).decode("utf-8")
    df = pd.read_csv(
        io.StringIO(raw),
        sep=" ",
        header=None,
        names=list(GERMAN_CREDIT_COLUMNS),
        dtype=str,
        keep_default_na=False,
    )
    maps = _german_maps()
    for col in GERMAN_CREDIT_COLUMNS:
        key = _GERMAN_MAP_KEYS.get(col)
        if key is None:
            df[col] = df[col].astype(np.int64)
            continue
        codes = list(maps[key])
        if not decode:
            df[col] = pd.Categorical(df[col], categories=codes)
            continue
        meanings = [_meaning(maps[key][code]) for code in codes]
        df[col] = pd.Categorical(df[col].map(dict(zip(codes, meanings, strict=True))), meanings)
    return df


def _german_schema() -> dict[str, Any]:
    maps = _german_maps()
    doc: dict[str, Any] = {}
    for col in GERMAN_CREDIT_COLUMNS:
        key = _GERMAN_MAP_KEYS.get(col)
        if key is None:
            doc[col] = _GERMAN_NUMERIC_SCHEMA[col]
        else:
            doc[col] = [_meaning(maps[key][code]) for code in maps[key]]
    return doc


def _apply_public(df: pd.DataFrame, doc: Mapping[str, Any], name: str) -> pd.DataFrame:
    from pymc_rdp.curation import domains

    schema = domains.parse_schema(doc, name=name)
    out, states = domains.apply_schema(df, schema, name=name)
    domains.check_within(out, states, name=name)
    for col, vals in states.items():
        out[col] = pd.Categorical(out[col].astype(object), categories=vals)
    out.attrs["states"] = {c: list(v) for c, v in states.items()}
    return out


def adult_public(split: Literal["train", "test", "both"] = "train") -> pd.DataFrame:
    """Adult with its public domain: :data:`ADULT_SCHEMA` applied to :func:`load_adult`.

    Every column becomes a ``category`` column whose categories are the declared states (in
    the schema's order, used or not); the numeric columns are binned by the schema's fixed cut
    points. Unlike :func:`adult_paper` (the paper's quantile bins, computed from the data), no
    state, bin edge or category list depends on the records. ``attrs["states"]`` holds the
    states of every column. Missing values (``"?"``) are the state ``"missing"``.
    """
    return _apply_public(load_adult(split, missing="category"), ADULT_SCHEMA, "ADULT_SCHEMA")


def german_credit_public() -> pd.DataFrame:
    """German credit with its public domain (documented states, fixed cut points).

    The coded columns keep every state documented in ``german.values_maps.json``; ``duration``,
    ``amount`` and ``age`` are binned by the fixed cut points of :data:`GERMAN_CREDIT_SCHEMA`,
    the other numeric columns take their documented codes. ``attrs["states"]`` holds the states.
    """
    return _apply_public(load_german_credit(), GERMAN_CREDIT_SCHEMA, "GERMAN_CREDIT_SCHEMA")


def _meaning(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value).strip()


#: The public domain of every German credit column (:func:`pymc_rdp.curation.domains.parse_schema`
#: format): the documented states of the coded columns (``german.values_maps.json``, in code
#: order) and the fixed cut points / codes of the numeric columns described above.
GERMAN_CREDIT_SCHEMA: dict[str, Any] = _german_schema()


# ---------------------------------------------------------------------------------------------
# Digits
# ---------------------------------------------------------------------------------------------


def load_digits() -> pd.DataFrame:
    """Load scikit-learn's bundled 8x8 handwritten digits (1,797 images; offline).

    Returns
    -------
    pandas.DataFrame
        64 ``int64`` pixel columns ``pixel_0_0`` ... ``pixel_7_7`` with values 0..16 and an
        ``int64`` column ``target`` (the digit 0..9).
    """
    from sklearn.datasets import load_digits as _sk_load_digits

    frame = _sk_load_digits(as_frame=True).frame
    return frame.astype(np.int64)


# ---------------------------------------------------------------------------------------------
# Preprocessing of the paper
# ---------------------------------------------------------------------------------------------


def _fmt(x: float) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() else f"{x:.10g}"


def _fit_column_bins(
    values: np.ndarray, n_bins: int, max_distinct: int, keep_atoms: bool
) -> dict[str, list[float]] | None:
    """Atoms and quantile edges of one numeric column (NaN removed), or None if not binned."""
    uniq, counts = np.unique(values, return_counts=True)
    if uniq.size <= max_distinct:
        return None
    atoms: list[float] = []
    if keep_atoms:
        # Most frequent values first (ties: smaller value first); the i-th (i = 1, 2, ...) is kept
        # as its own state while its count exceeds N / 3**i.
        order = np.lexsort((uniq, -counts))
        n = values.size
        for i, idx in enumerate(order, start=1):
            if counts[idx] > n / 3.0**i:
                atoms.append(float(uniq[idx]))
            else:
                break
        if uniq.size - len(atoms) <= max_distinct:
            return None
    rest = values[~np.isin(values, np.asarray(atoms, dtype=np.float64))]
    edges = np.unique(np.quantile(rest, np.linspace(0.0, 1.0, n_bins + 1)))
    return {"atoms": sorted(atoms), "edges": [float(e) for e in edges]}


def _bin_labels(spec: Mapping[str, Sequence[float]]) -> tuple[list[str], list[str], list[str]]:
    """Atom labels, bin labels and all categories ordered by their lower value."""
    atoms = [float(a) for a in spec["atoms"]]
    edges = [float(e) for e in spec["edges"]]
    atom_labels = [_fmt(a) for a in atoms]
    bin_labels = []
    for i in range(len(edges) - 1):
        opening = "[" if i == 0 else "("
        bin_labels.append(f"{opening}{_fmt(edges[i])}, {_fmt(edges[i + 1])}]")
    keyed = [(a, 0, lab) for a, lab in zip(atoms, atom_labels, strict=True)]
    keyed += [(edges[i], 1, lab) for i, lab in enumerate(bin_labels)]
    categories = [lab for _, _, lab in sorted(keyed)]
    return atom_labels, bin_labels, categories


def _apply_column_bins(values: np.ndarray, spec: Mapping[str, Sequence[float]]) -> pd.Categorical:
    atoms = np.asarray(spec["atoms"], dtype=np.float64)
    edges = np.asarray(spec["edges"], dtype=np.float64)
    atom_labels, bin_labels, categories = _bin_labels(spec)
    labels = np.empty(values.shape, dtype=object)
    labels[:] = np.nan
    nan = np.isnan(values)
    is_atom = np.isin(values, atoms) & ~nan
    if atoms.size:
        atom_pos = np.searchsorted(atoms, values[is_atom])
        labels[is_atom] = np.asarray(atom_labels, dtype=object)[atom_pos]
    binned = ~nan & ~is_atom
    if bin_labels:
        # Right-closed bins (e_i, e_{i+1}], the first also holding its lower edge (as pandas.qcut);
        # values outside the edges go to the first or last bin.
        codes = np.searchsorted(edges[1:-1], values[binned], side="left")
        labels[binned] = np.asarray(bin_labels, dtype=object)[codes]
    return pd.Categorical(labels, categories=categories)


def preprocess(
    df: pd.DataFrame,
    n_bins: int = 10,
    max_distinct: int = 30,
    drop_constant: bool = True,
    keep_atoms: bool = True,
    reference: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Discretise a table the way the Dirichlet-mechanism paper does.

    Ponnoprat (TMLR 2023), experiments: constant columns are dropped, and each numeric column with
    more than ``max_distinct`` (30) distinct values is discretised into quantile bins. As in the
    paper's public experiment code, heavily repeated values keep their own state: with the
    column's distinct values sorted by decreasing count ``c_1 >= c_2 >= ...`` and ``N`` the
    number of non-missing values, the leading values with ``c_i > N / 3**i`` (``i = 1, 2, ...``)
    are kept as "atoms" (Adult's ``capital-gain = 0``, ``hours-per-week = 40``); the other values
    are cut into ``n_bins`` (10) quantile bins when more than ``max_distinct`` of them remain.
    Bins are right-closed, ``(e_i, e_{i+1}]`` with ``e_i`` the ``i/n_bins`` sample quantile
    (linear interpolation, as :func:`pandas.qcut`); the first bin also holds ``e_0``; equal
    edges are merged, so a column may get fewer than ``n_bins`` bins.

    Parameters
    ----------
    df : pandas.DataFrame
        The table.
    n_bins : int
        Number of quantile bins (before merging equal edges).
    max_distinct : int
        Numeric columns with more distinct values than this are binned; others are kept.
    drop_constant : bool
        Drop the columns with at most one distinct value (missing values count as a value).
    keep_atoms : bool
        Keep heavily repeated values as their own states (the rule above). If false, every value
        is binned (plain quantile binning).
    reference : pandas.DataFrame, optional
        A table returned by an earlier call: apply its atoms and bin edges and drop its dropped
        columns (to discretise a test set like the training set; values outside the training
        range go to the first or last bin). The other options are then ignored.

    Returns
    -------
    pandas.DataFrame
        A copy. A binned column becomes a ``category`` column whose categories are strings, the
        atoms (``"0"``) and the bins (``"[0, 114]"``, ``"(114, 2174]"``, ...), ordered by their
        lower value; missing values stay missing. Other columns are unchanged.
        ``attrs["bins"]`` maps each binned column to ``{"atoms": [...], "edges": [...]}`` and
        ``attrs["dropped"]`` lists the dropped columns.
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame, got {type(df).__name__}")
    if reference is not None:
        if "bins" not in reference.attrs or "dropped" not in reference.attrs:
            raise ValueError("reference must be a table returned by preprocess")
        specs = {k: v for k, v in reference.attrs["bins"].items() if k in df.columns}
        dropped = [c for c in reference.attrs["dropped"] if c in df.columns]
    else:
        for name, value in (("n_bins", n_bins), ("max_distinct", max_distinct)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        specs = {}
        dropped = []
        for col in df.columns:
            series = df[col]
            if drop_constant and series.nunique(dropna=False) <= 1:
                dropped.append(col)
                continue
            numeric = pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(
                series
            )
            if numeric:
                values = series.dropna().to_numpy(dtype=np.float64)
                spec = _fit_column_bins(values, int(n_bins), int(max_distinct), keep_atoms)
                if spec is not None:
                    specs[col] = spec
    out = df.drop(columns=dropped).copy()
    for col, spec in specs.items():
        out[col] = _apply_column_bins(out[col].to_numpy(dtype=np.float64), spec)
    out.attrs["bins"] = {
        k: {"atoms": [float(a) for a in v["atoms"]], "edges": [float(e) for e in v["edges"]]}
        for k, v in specs.items()
    }
    out.attrs["dropped"] = list(dropped)
    return out


def adult_paper(split: Literal["train", "test", "both"] = "train") -> pd.DataFrame:
    """Adult discretised as in the paper: :func:`preprocess` of :func:`load_adult`.

    Missing values (``"?"``) are kept as the state ``"missing"``; the target is ``income``.
    ``age``, ``fnlwgt``, ``capital-gain``, ``capital-loss`` and ``hours-per-week`` are binned
    (the last three with their atoms 0, 0 and 40).
    """
    return preprocess(load_adult(split, missing="category"))


def german_credit_paper() -> pd.DataFrame:
    """German credit discretised as in the paper: :func:`preprocess` of :func:`load_german_credit`.

    ``duration``, ``amount`` and ``age`` are binned; the target is ``credit_risk``.
    """
    return preprocess(load_german_credit())


def digits_paper() -> pd.DataFrame:
    """Digits as in the paper: :func:`preprocess` of :func:`load_digits`.

    The constant pixel columns are dropped; no column has more than 30 values, none is binned.
    The target is ``target``.
    """
    return preprocess(load_digits())


_PAPER_TARGETS = {"adult": "income", "german_credit": "credit_risk", "digits": "target"}


def paper_split(
    name: Literal["adult", "german_credit", "digits"],
    test_size: float = 0.3,
    random_state: int | None = 1,
    **preprocess_options: Any,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.Series, pd.Series]:
    """Train/test split of a bundled dataset with the paper's protocol.

    Ponnoprat (TMLR 2023), naive Bayes experiments: a random 70/30 split
    (``random_state=1`` for the first repeat), then :func:`preprocess` fitted on the training
    features and applied to the test features (same atoms, bin edges and dropped columns).
    Adult is its 32,561-record ``adult.data`` file with ``"?"`` as the state ``"missing"``.

    Parameters
    ----------
    name : {"adult", "german_credit", "digits"}
        The dataset; targets are ``income``, ``credit_risk`` and ``target``.
    test_size : float
        Fraction of the records in the test set, in (0, 1).
    random_state : int or None
        Seed of :func:`sklearn.model_selection.train_test_split`.
    **preprocess_options
        Passed to :func:`preprocess` (``n_bins``, ``max_distinct``, ``drop_constant``,
        ``keep_atoms``).

    Returns
    -------
    X_train, X_test, y_train, y_test
    """
    from sklearn.model_selection import train_test_split

    if name not in _PAPER_TARGETS:
        raise ValueError(f"name must be one of {sorted(_PAPER_TARGETS)}, got {name!r}")
    if not 0.0 < float(test_size) < 1.0:
        raise ValueError(f"test_size must lie in the open interval (0, 1), got {test_size!r}")
    if name == "adult":
        df = load_adult("train", missing="category")
    elif name == "german_credit":
        df = load_german_credit()
    else:
        df = load_digits()
    target = _PAPER_TARGETS[name]
    X = df.drop(columns=[target])
    y = df[target]
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=float(test_size), random_state=random_state
    )
    X_train = preprocess(X_train, **preprocess_options)
    X_test = preprocess(X_test, reference=X_train)
    return X_train, X_test, y_train, y_test


# ---------------------------------------------------------------------------------------------
# Classic Bayesian networks shipped with pgmpy
# ---------------------------------------------------------------------------------------------


def _example_models_dir() -> Any:
    return importlib.resources.files("pgmpy") / "utils" / "example_models"


@functools.lru_cache(maxsize=1)
def _network_files() -> dict[str, Any]:
    files = {}
    for entry in _example_models_dir().iterdir():
        name = entry.name
        if name.endswith(".bif.gz"):
            files[name[: -len(".bif.gz")]] = entry
        elif name.endswith(".bif"):
            files[name[: -len(".bif")]] = entry
    return files


def list_networks() -> list[str]:
    """Names of the discrete Bayesian networks available offline (BIF files in pgmpy's wheel).

    Returns
    -------
    list of str
        Sorted names, e.g. ``"alarm"``, ``"asia"``, ``"cancer"``, ``"child"``, ``"earthquake"``,
        ``"insurance"``, ``"sachs"``, ``"survey"``, ``"water"``.
    """
    return sorted(_network_files())


@functools.lru_cache(maxsize=32)
def _parse_network(name: str) -> Any:
    from pgmpy.readwrite import BIFReader

    entry = _network_files()[name]
    data = entry.read_bytes()
    if entry.name.endswith(".gz"):
        data = gzip.decompress(data)
    # BIFReader reads a path or a string, not a gzip stream: parse the decompressed text.
    return BIFReader(string=data.decode("utf-8")).get_model()


def load_network(name: str) -> Any:
    """Load a classic discrete Bayesian network offline.

    The BIF file shipped inside pgmpy's wheel is decompressed and parsed with
    ``pgmpy.readwrite.BIFReader``; no download is ever attempted. Parsed networks are cached, and
    each call returns an independent copy.

    Parameters
    ----------
    name : str
        One of :func:`list_networks` (case-insensitive).

    Returns
    -------
    pgmpy.models.DiscreteBayesianNetwork
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, got {type(name).__name__}")
    key = name.lower()
    if key not in _network_files():
        raise ValueError(f"name must be one of {list_networks()}, got {name!r}")
    return _parse_network(key).copy()


@functools.lru_cache(maxsize=32)
def _sampler_plan(name: str) -> list[tuple[str, list[int], np.ndarray, list[str], list[int]]]:
    return _build_plan(_parse_network(name))


def _build_plan(model: Any) -> list[tuple[str, list[int], np.ndarray, list[str], list[int]]]:
    """Topologically ordered (node, parent positions, cumulative CPT, states, parent cards)."""
    import networkx as nx

    order = list(nx.topological_sort(nx.DiGraph(model.edges())))
    order += [n for n in model.nodes() if n not in order]
    position = {node: i for i, node in enumerate(order)}
    plan = []
    for node in order:
        cpd = model.get_cpds(node)
        if cpd is None:
            raise ValueError(f"model has no CPD for node {node!r}")
        evidence = list(cpd.variables[1:])
        card = int(cpd.cardinality[0])
        table = np.asarray(cpd.values, dtype=np.float64).reshape(card, -1).T  # (configs, states)
        table = table / table.sum(axis=1, keepdims=True)
        cumulative = np.cumsum(table, axis=1)
        cumulative[:, -1] = 1.0
        states = [str(s) for s in cpd.state_names[node]]
        ev_cards = [int(c) for c in cpd.cardinality[1:]]
        plan.append((node, [position[e] for e in evidence], cumulative, states, ev_cards))
    return plan


def sample_network(
    network: str | Any,
    n: int,
    random_state: int | np.random.Generator | None = None,
) -> pd.DataFrame:
    """Draw ``n`` independent records from a discrete Bayesian network (ancestral sampling).

    Nodes are visited in topological order; each node's state is drawn from the CPT row of its
    parents' sampled states, for all records at once (inverse-CDF sampling on the cumulative CPT
    rows), so the cost is linear in ``n`` times the number of nodes.

    Parameters
    ----------
    network : str or pgmpy.models.DiscreteBayesianNetwork
        A name from :func:`list_networks` or a model with a CPD for every node.
    n : int
        Number of records (>= 0).
    random_state : int, numpy.random.Generator or None
        Seed or generator.

    Returns
    -------
    pandas.DataFrame
        One ``category`` column per node (in the model's node order), categories = the node's
        state names in CPT order.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be an integer >= 0, got {n!r}")
    if isinstance(network, str):
        key = network.lower()
        if key not in _network_files():
            raise ValueError(f"network must be one of {list_networks()}, got {network!r}")
        plan = _sampler_plan(key)
        node_order = list(_parse_network(key).nodes())
    else:
        if not hasattr(network, "get_cpds"):
            raise TypeError("network must be a network name or a pgmpy DiscreteBayesianNetwork")
        plan = _build_plan(network)
        node_order = list(network.nodes())
    rng = np.random.default_rng(random_state)
    n = int(n)
    codes: list[np.ndarray] = []
    for _node, parents, cumulative, _states, ev_cards in plan:
        if parents:
            config = np.ravel_multi_index(tuple(codes[p] for p in parents), tuple(ev_cards))
        else:
            config = np.zeros(n, dtype=np.int64)
        u = rng.random(n)
        rows = cumulative[config]  # (n, states)
        drawn = (u[:, None] >= rows).sum(axis=1)
        codes.append(np.minimum(drawn, cumulative.shape[1] - 1).astype(np.int64))
    columns = {}
    for (node, _parents, _cum, states, _ev), node_codes in zip(plan, codes, strict=True):
        columns[node] = pd.Categorical.from_codes(node_codes, categories=states)
    return pd.DataFrame({node: columns[node] for node in node_order})
