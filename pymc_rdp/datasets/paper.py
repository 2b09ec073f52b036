"""The preprocessing of the Dirichlet-mechanism paper (Ponnoprat, TMLR 2023) and its splits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from pymc_rdp.datasets.tables import load_adult, load_digits, load_german_credit

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
