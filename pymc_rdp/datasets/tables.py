"""Loaders of the bundled tables: Adult, German credit, digits, and their public-domain versions."""

from __future__ import annotations

import functools
import gzip
import importlib.resources
import io
import json
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
import pandas as pd

from pymc_rdp.datasets.schemas import (
    _GERMAN_MAP_KEYS,
    _GERMAN_NUMERIC_SCHEMA,
    ADULT_COLUMNS,
    ADULT_SCHEMA,
    GERMAN_CREDIT_COLUMNS,
)

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
