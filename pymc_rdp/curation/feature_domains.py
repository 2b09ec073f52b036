"""The public domain of a classifier's table: declared class labels and feature states.

For a private fit every class label and every feature state must be declared (public);
``"from-data"`` is the explicit opt-in to read them from the records
(:func:`pymc_rdp.curation.domains.states_from_data`, outside the guarantee: the estimator records
it in the ledger). A declared label or state never observed gets zero counts, so the released
tables' shapes are fixed by the declaration; a value outside the declaration is refused before
anything is counted or released.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from pymc_rdp.curation.domains import FROM_DATA, check_states, states_from_data

__all__ = ["fit_categories", "fit_classes"]


def fit_classes(spec: Any, y: np.ndarray, *, private: bool) -> tuple[np.ndarray, np.ndarray, bool]:
    """(classes_, class index of every record, whether the labels were read from y)."""
    if spec is None and private:
        raise ValueError(
            "classes: declare the public class labels (classes=[...]) for a private fit, or "
            "pass classes='from-data' to read them from y (outside the privacy guarantee, "
            "flagged in the ledger)"
        )
    if spec is None or (isinstance(spec, str) and spec == FROM_DATA):
        classes, codes = np.unique(y, return_inverse=True)
        if private:
            states_from_data(pd.DataFrame({"y": y}), ["y"], name="y")
        return classes, codes, private
    if isinstance(spec, str):
        raise ValueError(f"classes must be None, {FROM_DATA!r} or a list of labels, got {spec!r}")
    labels = check_states({"classes": spec}, name="NaiveBayes")["classes"]
    classes = np.asarray(labels)
    codes = pd.Index(labels, dtype=object).get_indexer(y.astype(object))
    if (codes < 0).any():
        raise ValueError(
            f"y has labels outside the declared classes {labels[:20]}. Nothing was released "
            "or charged. Declare every public label, or remove those records before fitting."
        )
    return classes, codes.astype(np.int64), False


def fit_categories(
    spec: Any, frame: pd.DataFrame, *, private: bool
) -> tuple[list[np.ndarray], list[int]]:
    """The states of every feature and the positions of the features read from the data."""
    k = frame.shape[1]
    if spec is None and private:
        raise ValueError(
            "categories: declare the public states of every feature for a private fit (one "
            "list per feature, or a dict column -> states; bin numeric features with public "
            "cut points or pmr.private_bins), or pass categories='from-data' to read them "
            "from X (outside the privacy guarantee, flagged in the ledger)"
        )
    if spec is None or (isinstance(spec, str) and spec == FROM_DATA):
        out = []
        for i in range(k):
            col = frame.iloc[:, i]
            if private:
                name = frame.columns[i]
                states = states_from_data(frame.iloc[:, [i]], [name], name="X")[name]
            elif isinstance(col.dtype, pd.CategoricalDtype):
                states = list(col.cat.categories)
            else:
                states = list(pd.unique(col.dropna()))
                try:
                    states = sorted(states)
                except TypeError:
                    states = sorted(states, key=lambda v: (type(v).__name__, str(v)))
            if not states:
                raise ValueError(
                    f"feature {frame.columns[i]!r} has no observed state (all missing); "
                    "drop it or give its categories"
                )
            out.append(np.asarray(states, dtype=object))
        return out, (list(range(k)) if private else [])
    if isinstance(spec, str):
        raise ValueError(
            f"categories must be None, {FROM_DATA!r}, one list of states per feature or a "
            f"dict column -> states, got {spec!r}"
        )
    if isinstance(spec, Mapping):
        columns = list(frame.columns)
        declared = check_states(spec, known=columns, name="categories")
        missing = [c for c in columns if c not in declared]
        if missing:
            raise ValueError(f"categories: no states declared for the feature(s) {missing}")
        return [np.asarray(declared[c], dtype=object) for c in columns], []
    cats = list(spec)
    if len(cats) != k:
        raise ValueError(
            f"categories must have one list of states per feature ({k}), got {len(cats)}"
        )
    declared = check_states({i: c for i, c in enumerate(cats)}, name="categories")
    return [np.asarray(declared[i], dtype=object) for i in range(k)], []
