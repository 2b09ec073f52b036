r"""Private categorical naive Bayes with the scikit-learn estimator API.

A naive Bayes classifier over categorical features is fully described by K + 1 count tables: the
class counts :math:`N_j` (one count per record) and, for every feature k, the class-by-state
table :math:`T^{(k)}_{j,s}` (records of class j whose feature k is in state s). Each table is
released once, privately, and the classifier is built from the released tables only
(post-processing; Ponnoprat, "Dirichlet Mechanism for Differentially Private KL Divergence
Minimization", TMLR 2023, Section 6):

- ``"dirichlet"``: each table row is replaced by one exact draw
  :math:`\tilde\theta \sim \mathrm{Dirichlet}(r\,n + \alpha)` of the Dirichlet mechanism, calibrated
  with :meth:`~pymc_rdp.privacy.mechanisms.DirichletMechanism.calibrate`;
- ``"gaussian"`` / ``"laplace"``: exactly sampled integer noise is added to the counts (the
  discrete Gaussian / discrete Laplace mechanism, :class:`~pymc_rdp.DiscreteGaussianMechanism`,
  :class:`~pymc_rdp.DiscreteLaplaceMechanism`, recorded as ``discrete_gaussian`` /
  ``discrete_laplace``; floating-point noise on counts would leak them, Mironov 2012), which are
  then clipped at 1e-6 and normalised per row (the paper's baselines);
- ``"none"``: maximum likelihood with additive smoothing (not private).

Sensitivities (count tables). With *replace-one* neighbours a record moves from one cell to
another: Δ₁ = 2, Δ₂ = √2, Δ∞ = 1 per table. With *add/remove* neighbours one cell changes by one:
Δ₁ = Δ₂ = Δ∞ = 1. The class vector is computed from :math:`N_j` directly; building it by summing
one-hot feature counts would multiply its sensitivity by K.

Composition. The K + 1 tables are released sequentially from the same records: their RDP curves
add (Mironov 2017, Prop. 1), and the budget ε at order λ is split equally, ε/(K+1) per table. The
rows of a feature table hold disjoint records (each record is in exactly one class), so they
compose in parallel and are recorded as one accountant group with the class as partition. Under
replace-one neighbours a record that changes class alters two rows by one count each (an
add/remove change in each); the sum of those two per-row losses is at most the loss of a
replace-one change in one row (equal for the Gaussian and Dirichlet bounds, which depend on
Δ₂² = 1 + 1; the discrete Laplace curve at Δ₁ = 2 is by construction the worst case over
integer shifts of ℓ1 norm 2, two unit shifts included,
:func:`pymc_rdp.privacy.rdp.discrete_laplace`),
so the per-row curve with the replace-one sensitivities bounds the table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_is_fitted, column_or_1d

from pymc_rdp._validation import check_positive_scalar, check_scalar
from pymc_rdp.curation.domains import FROM_DATA, check_states, declare_from_data, states_from_data
from pymc_rdp.privacy import rdp as _rdp
from pymc_rdp.privacy.accountant import Accountant, BudgetExceededError
from pymc_rdp.privacy.calibration import largest_target, least_noise
from pymc_rdp.privacy.mechanisms import (
    DirichletMechanism,
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    Mechanism,
)
from pymc_rdp.privacy.mechanisms.noise import (
    UnsafeNoiseSeed,
    declare_unsafe_noise,
    resolve_noise_source,
)
from pymc_rdp.privacy.neighbours import check_neighbours, table_sensitivity

__all__ = ["NaiveBayes"]

_MECHANISMS = ("dirichlet", "gaussian", "laplace", "none")
_CLIP = 1e-6
# Relative margin kept below each target so that float rounding in the composed sum can never
# push the total over the requested budget.
_MARGIN = 1e-9


class _AccountantHandle:
    """A box, shared by an estimator and its clones, for the accountant of their fits."""

    __slots__ = ("accountant",)

    def __init__(self) -> None:
        self.accountant: Accountant | None = None

    def __copy__(self) -> _AccountantHandle:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> _AccountantHandle:
        return self

    def __getstate__(self) -> dict[str, Any]:
        return {"accountant": self.accountant}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.accountant = state["accountant"]


class NaiveBayes(ClassifierMixin, BaseEstimator):
    r"""Differentially private categorical naive Bayes (scikit-learn estimator).

    Parameters
    ----------
    mechanism : {"dirichlet", "gaussian", "laplace", "none"}
        How each of the K + 1 count tables is released (see the module description).
        ``"none"`` is the non-private maximum-likelihood fit with additive ``smoothing``.
    epsilon : float
        Total budget ε > 0 of one fit. Without ``delta`` it is an RDP budget at ``order``:
        the K + 1 tables get ε/(K+1) each at λ = ``order``. With ``delta`` it is an
        (ε, δ)-DP budget (see ``delta``).
    order : float
        Rényi order λ > 1 of the budget (the paper uses λ = 5).
    delta : float, optional
        If given, the budget is (ε, δ)-DP: every table gets the same mechanism and its noise is
        the least for which the (K+1)-fold composition converts (``rdp.to_dp`` on the
        accountant's orders) to at most ε. The Dirichlet mechanism is calibrated at λ =
        ``order`` to the largest per-table ε(λ) whose (K+1)-fold composition meets (ε, δ): its
        base concentration α = α₀ + 4(λ−1) r Δ∞ grows with λ, so ``order`` trades the range of
        usable conversion orders against the prior's weight; the paper uses λ = 5.
    neighbours : {"replace-one", "add-remove"}
        Neighbouring relation: Δ₁, Δ₂², Δ∞ = 2, 2, 1 (replace-one) or 1, 1, 1 (add/remove).
    alpha0 : float
        Base concentration α₀ > 0 of the Dirichlet mechanism (its calibration, "Algorithm 1",
        uses α = α₀ + 4(λ−1) r Δ∞).
    smoothing : float
        Additive smoothing > 0 of ``mechanism="none"``.
    accountant : Accountant, optional
        Accountant charged by :meth:`fit`; a given accountant is charged in place and keeps its
        own budget, and the clones of the estimator (``sklearn.base.clone``, hence
        ``cross_val_score`` and ``GridSearchCV``) charge the same one. Default: the first fit
        creates an accountant whose budget is exactly the requested one
        (``Accountant.at_order(epsilon, order)`` or ``Accountant((epsilon, delta))``), and
        every later fit of this estimator and of its clones (made before or after that fit) is
        charged to it: a refit with the whole budget again is refused. For several fits give an
        accountant whose budget covers them all. A pickled estimator carries a copy of its
        accountant: fits in other processes (``n_jobs`` > 1) charge their copy only.
    categories : None, "from-data", sequence of sequences or dict
        The public states of each feature: one list per feature (in column order) or a dict
        column -> list. States never observed get zero counts, so the released tables' shapes
        are fixed by the declaration; a value outside its feature's states is refused at fit time
        (nothing released or charged). ``"from-data"`` is the explicit opt-in to read them from
        the records (a categorical column's categories, else its sorted distinct values; float,
        identifier and high-cardinality columns are still refused): the accountant then records
        ``states_from_data`` as outside the guarantee. ``None`` (default): required for a
        private mechanism; ``mechanism="none"`` (no privacy) reads the states from the data.
    classes : None, "from-data" or sequence
        The public class labels, in order (``classes_``), like ``categories``: a declared label
        never observed gets zero counts, a label outside them is refused.
    noise_source : None or NoiseSource
        ``None`` (default): the releases' noise comes from the operating system's entropy.
        ``pmr.UnsafeNoiseSeed(k)``: reproducible, **non-private** releases for tests (the ledger
        records an ``"unsafe_noise"`` declaration outside the guarantee). An int or a NumPy
        generator is refused (TypeError) at :meth:`fit`. Every fit starts the seed's stream
        afresh. There is no ``random_state``: a fit runs no MCMC, and privacy noise is never
        steered by a user seed.

    Attributes
    ----------
    classes_ : ndarray
        Class labels: the declared ``classes`` in their order, or (``"from-data"`` and
        ``mechanism="none"``) the sorted labels of ``y``.
    categories_ : list of ndarray
        States of each feature.
    class_log_prior_ : ndarray, shape (n_classes,)
        Log of the released class probabilities.
    feature_log_prob_ : list of ndarray, shape (n_classes, n_states_k)
        Log of the released conditional probabilities of each feature.
    releases_ : dict
        What was published, by ledger tag: the Dirichlet draws, or the noisy counts before
        clipping and normalisation (``"naive_bayes/class"`` holds the class table).
    mechanism_ : Mechanism or None
        The calibrated mechanism used for every table (``None`` for ``"none"``).
    accountant_ : Accountant or None
        The accountant charged by the fit (the constructor's ``accountant`` or the one created
        for the fit); ``None`` for ``"none"`` without an accountant.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` was a DataFrame with string column names.

    Notes
    -----
    Missing values in ``X`` (NaN/None) are skipped: the record adds no count to that feature's
    table, and at prediction time the feature is left out of that record's likelihood (the
    naive Bayes marginal over the missing feature). States never seen in training are treated
    the same way at prediction time. Missing labels in ``y`` are refused.

    Every table is charged to the accountant before its noise is drawn; the whole fit is
    checked against the accountant's budget first, so a fit that does not fit in the budget
    raises :class:`~pymc_rdp.BudgetExceededError` with nothing released or recorded.
    """

    def __init__(
        self,
        mechanism: str = "dirichlet",
        epsilon: float = 1.0,
        order: float = 5.0,
        delta: float | None = None,
        neighbours: str = "replace-one",
        alpha0: float = 1.0,
        smoothing: float = 0.1,
        accountant: Accountant | None = None,
        categories: str | Sequence[Sequence[Any]] | Mapping[Any, Sequence[Any]] | None = None,
        classes: str | Sequence[Any] | None = None,
        noise_source: Any = None,
    ) -> None:
        self.mechanism = mechanism
        self.epsilon = epsilon
        self.order = order
        self.delta = delta
        self.neighbours = neighbours
        self.alpha0 = alpha0
        self.smoothing = smoothing
        self.accountant = accountant
        self.categories = categories
        self.classes = classes
        self.noise_source = noise_source

    # ------------------------------------------------------------------------------- checks

    def _check_params(self) -> None:
        if self.mechanism not in _MECHANISMS:
            raise ValueError(f"mechanism must be one of {_MECHANISMS}, got {self.mechanism!r}")
        check_neighbours(self.neighbours)
        self._epsilon = check_positive_scalar(self.epsilon, "epsilon")
        order = check_scalar(self.order, "order")
        if not order > 1:
            raise ValueError(f"order must be > 1, got {order!r}")
        self._order = order
        if self.delta is None:
            self._delta = None
        else:
            delta = check_scalar(self.delta, "delta")
            if not 0 < delta < 1:
                raise ValueError(f"delta must lie in the open interval (0, 1), got {delta!r}")
            self._delta = delta
        self._alpha0 = check_positive_scalar(self.alpha0, "alpha0")
        self._smoothing = check_positive_scalar(self.smoothing, "smoothing")
        noise = resolve_noise_source(self.noise_source)
        # a fresh stream per fit, so that fitting never changes the parameter (scikit-learn's
        # convention for seeds) and refits with the same UnsafeNoiseSeed repeat the same noise
        self._noise = UnsafeNoiseSeed(noise.seed) if isinstance(noise, UnsafeNoiseSeed) else noise
        if self.accountant is not None and not isinstance(self.accountant, Accountant):
            raise TypeError(
                f"accountant must be None or an Accountant, got {type(self.accountant)!r}"
            )

    @staticmethod
    def _as_frame(X: Any) -> pd.DataFrame:
        if isinstance(X, pd.DataFrame):
            return X
        X = _eager_to_pandas(X)
        if isinstance(X, pd.DataFrame):
            return X
        if isinstance(X, (str, bytes)) or X is None:
            raise TypeError("X must be a 2-D array-like or a DataFrame")
        if sparse.issparse(X):
            raise TypeError("X is sparse: sparse input is not supported, pass a dense table")
        arr = np.asarray(X)
        if np.iscomplexobj(arr):
            raise ValueError("Complex data not supported: X holds complex numbers")
        if arr.ndim != 2:
            raise ValueError(
                f"X must be 2-D (records x features), got {arr.ndim} dimension(s). Reshape your "
                "data with X.reshape(-1, 1) for a single feature or X.reshape(1, -1) for a "
                "single record."
            )
        return pd.DataFrame(arr.astype(object))

    def _prepare_y(self, y: Any, n: int) -> np.ndarray:
        if y is None:
            raise ValueError(
                "NaiveBayes requires y to be passed, but the target y is None (it is a "
                "supervised classifier)"
            )
        y_arr = np.asarray(y)
        if y_arr.ndim == 2 and y_arr.shape[1] == 1:
            y_arr = column_or_1d(y_arr, warn=True)
        if y_arr.ndim != 1:
            raise ValueError(f"y must be 1-D, got shape {y_arr.shape}")
        if y_arr.shape[0] != n:
            raise ValueError(f"X and y have different numbers of records: {n} and {y_arr.size}")
        if pd.isna(y_arr).any():
            raise ValueError("y contains missing values; remove those records first")
        return y_arr

    # ----------------------------------------------------------------------------- fitting

    def fit(self, X: Any, y: Any) -> NaiveBayes:
        """Release the K + 1 count tables privately and build the classifier from them.

        Parameters
        ----------
        X : DataFrame or array-like, shape (n_records, n_features)
            Categorical features (any hashable values; NaN/None = missing).
        y : array-like, shape (n_records,)
            Class labels (at least two classes).

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Bad parameters, empty data, a single class, missing labels, mismatched lengths.
        BudgetExceededError
            If the accountant cannot afford the fit (nothing is released).
        """
        self._check_params()
        frame = self._as_frame(X)
        n, k = frame.shape
        if n == 0:
            raise ValueError("X is empty: at least one record is needed")
        if k == 0:
            raise ValueError(
                f"X has no features: 0 feature(s) (shape=({n}, 0)) while a minimum of 1 is "
                "required."
            )
        if frame.columns.has_duplicates:
            raise ValueError("X has duplicate column names")
        y_arr = self._prepare_y(y, n)
        target_type = type_of_target(y_arr, input_name="y")
        if target_type not in ("binary", "multiclass"):
            raise ValueError(
                f"Unknown label type: {target_type}; y must hold class labels (a continuous "
                "target is not a classification target)"
            )
        classes, y_codes, classes_from_data = self._fit_classes(y_arr)
        if classes.size < 2:
            raise ValueError(
                f"y has one class only ({classes[0]!r}); at least two classes are needed"
            )
        self.classes_ = classes
        n_classes = classes.size

        columns = list(frame.columns)
        if all(isinstance(c, str) for c in columns):
            self.feature_names_in_ = np.asarray(columns, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self.n_features_in_ = k
        self.categories_, features_from_data = self._fit_categories(frame)
        codes = [self._encode(frame.iloc[:, i], self.categories_[i]) for i in range(k)]
        for i in range(k):
            outside = (codes[i] < 0) & ~pd.isna(frame.iloc[:, i].to_numpy(dtype=object))
            if outside.any():
                raise ValueError(
                    f"X: feature {columns[i]!r} has values outside its declared categories "
                    f"{list(self.categories_[i])[:20]}. Nothing was released or charged. Declare "
                    "the feature's full public domain, or map or remove those values with a "
                    "public rule before fitting."
                )

        class_counts = np.bincount(y_codes, minlength=n_classes).astype(np.float64)
        tables = []
        for i in range(k):
            d = len(self.categories_[i])
            seen = codes[i] >= 0
            flat = y_codes[seen] * d + codes[i][seen]
            tables.append(
                np.bincount(flat, minlength=n_classes * d).reshape(n_classes, d).astype(np.float64)
            )

        keys = [str(c) for c in columns]
        if len(set(keys)) != k:  # e.g. columns 1 and "1": keep the ledger groups distinct
            keys = [f"{i}:{c}" for i, c in enumerate(keys)]
        self._column_keys = keys
        self.releases_ = {}
        if self.mechanism == "none":
            self.mechanism_ = None
            self.accountant_ = self.accountant
            s = self._smoothing
            prior = (class_counts + s) / (class_counts.sum() + n_classes * s)
            self.class_log_prior_ = np.log(prior)
            self.feature_log_prob_ = [
                np.log((t + s) / (t.sum(axis=1, keepdims=True) + t.shape[1] * s)) for t in tables
            ]
            return self

        accountant = self.accountant
        if accountant is None:
            handle = self._accountant_handle()
            if handle.accountant is None:
                if self._delta is None:
                    handle.accountant = Accountant.at_order(self._epsilon, self._order)
                else:
                    handle.accountant = Accountant(budget=(self._epsilon, self._delta))
            accountant = handle.accountant
        self.accountant_ = accountant
        mech = self._calibrate(k + 1, accountant.orders)
        self.mechanism_ = mech

        tags = ["naive_bayes/class"] + [f"naive_bayes/feature/{c}" for c in self._column_keys]
        partitions = [str(c) for c in classes]
        if len(set(partitions)) != n_classes:
            partitions = list(range(n_classes))
        # Every feature table of this fit is its own parallel group: partitions (class labels)
        # of two fits must never merge.
        groups = [None] + [accountant.new_group(t) for t in tags[1:]]
        # Check the whole fit against the budget before anything is charged or released.
        trial = accountant.fork()
        try:
            self._charge(trial, mech, tags, groups, partitions)
        except BudgetExceededError as exc:
            own = (
                ""
                if self.accountant is not None
                else " (without accountant=, every fit of this estimator and of its clones is "
                "charged to the accountant created at the first fit; pass accountant= with a "
                "budget for all the fits)"
            )
            raise BudgetExceededError(
                f"the accountant cannot afford this fit of {k + 1} tables{own}: {exc}"
            ) from exc
        read = [str(columns[i]) for i in features_from_data]
        declare_from_data(
            accountant, read + (["y (classes)"] if classes_from_data else []), "NaiveBayes.fit"
        )

        source = self._noise
        released = []
        for t, (tag, table) in enumerate(zip(tags, [class_counts, *tables], strict=True)):
            # charge first, then draw the noise
            if t == 0:
                accountant.spend(mech, tag=tag)
            else:
                accountant.spend_batch(
                    [mech] * n_classes,
                    tags=[tag] * n_classes,
                    group=groups[t],
                    partitions=partitions,
                )
                accountant.close_group(groups[t])
            declare_unsafe_noise(accountant, source, f"release {tag!r}")
            out = np.asarray(mech.release(table, source), dtype=np.float64)
            self.releases_[tag] = out
            released.append(self._to_probabilities(out))
        self.class_log_prior_ = np.log(released[0])
        self.feature_log_prob_ = [np.log(p) for p in released[1:]]
        return self

    def _charge(
        self,
        accountant: Accountant,
        mech: Mechanism,
        tags: list[str],
        groups: list[Any],
        partitions: list[Any],
    ) -> None:
        accountant.spend(mech, tag=tags[0])
        for tag, group in zip(tags[1:], groups[1:], strict=True):
            accountant.spend_batch(
                [mech] * len(partitions),
                tags=[tag] * len(partitions),
                group=group,
                partitions=partitions,
            )

    # ------------------------------------------------------------- the shared accountant

    def _accountant_handle(self) -> _AccountantHandle:
        """The box holding the accountant of fits without ``accountant=`` (made on first use)."""
        handle = self.__dict__.get("_shared_accountant")
        if handle is None:
            handle = self._shared_accountant = _AccountantHandle()
        return handle

    def __sklearn_clone__(self) -> NaiveBayes:
        # scikit-learn's clone rebuilds the estimator from its constructor parameters, which
        # must stay unmodified. An explicit accountant survives that (an Accountant's deepcopy
        # is the accountant itself). Without one, the clone receives this estimator's handle, so
        # that the fits of the clones made by cross_val_score or GridSearchCV are all charged to
        # one accountant, created by the first of them.
        new = super().__sklearn_clone__()
        new._shared_accountant = self._accountant_handle()
        return new

    def _to_probabilities(self, released: np.ndarray) -> np.ndarray:
        if self.mechanism == "dirichlet":
            p = np.clip(released, np.finfo(np.float64).tiny, None)
        else:
            p = np.clip(released, _CLIP, None)
        return p / p.sum(axis=-1, keepdims=True)

    def _calibrate(self, n_tables: int, orders: np.ndarray) -> Mechanism:
        """One mechanism for every table, meeting the per-table share of the budget."""
        sens = table_sensitivity(self.neighbours)
        d1, d2, dinf = sens["l1"], sens["l2"], sens["linf"]
        eps, lam, delta = self._epsilon, self._order, self._delta
        if delta is None:
            eps_t = eps / n_tables * (1.0 - _MARGIN)
            if self.mechanism == "gaussian":
                return DiscreteGaussianMechanism.calibrate(eps_t, order=lam, sensitivity=d2)
            if self.mechanism == "laplace":
                return DiscreteLaplaceMechanism.calibrate(eps_t, order=lam, sensitivity=d1)
            return DirichletMechanism.calibrate(eps_t, lam, d2, dinf, alpha0=self._alpha0)

        target = eps * (1.0 - _MARGIN)

        def composed_ok(mech: Mechanism) -> bool:
            curve = n_tables * np.asarray(mech.rdp(orders), dtype=np.float64)
            return bool(_rdp.to_dp(orders, curve, delta)[0] <= target)

        # the discrete mechanisms: their RDP curves converted as the accountant converts them
        # (every record is in one partition of each table)
        if self.mechanism == "gaussian":
            sigma = least_noise(lambda s: composed_ok(DiscreteGaussianMechanism(s, d2)), d2 / eps)
            return DiscreteGaussianMechanism(sigma, d2)
        if self.mechanism == "laplace":
            scale = least_noise(lambda b: composed_ok(DiscreteLaplaceMechanism(b, d1)), d1 / eps)
            return DiscreteLaplaceMechanism(scale, d1)

        def build(e: float) -> Mechanism:
            return DirichletMechanism.calibrate(e, lam, d2, dinf, alpha0=self._alpha0)

        e_t = largest_target(lambda e: composed_ok(build(e)), eps / n_tables)
        return build(e_t)

    # ------------------------------------------------------------------------- categories

    def _private(self) -> bool:
        return self.mechanism != "none"

    def _fit_classes(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
        """(classes_, class index of every record, whether the labels were read from y)."""
        spec = self.classes
        if spec is None and self._private():
            raise ValueError(
                "classes: declare the public class labels (classes=[...]) for a private fit, or "
                "pass classes='from-data' to read them from y (outside the privacy guarantee, "
                "flagged in the ledger)"
            )
        if spec is None or (isinstance(spec, str) and spec == FROM_DATA):
            classes, codes = np.unique(y, return_inverse=True)
            if self._private():
                states_from_data(pd.DataFrame({"y": y}), ["y"], name="y")
            return classes, codes, self._private()
        if isinstance(spec, str):
            raise ValueError(
                f"classes must be None, {FROM_DATA!r} or a list of labels, got {spec!r}"
            )
        labels = check_states({"classes": spec}, name="NaiveBayes")["classes"]
        classes = np.asarray(labels)
        codes = pd.Index(labels, dtype=object).get_indexer(y.astype(object))
        if (codes < 0).any():
            raise ValueError(
                f"y has labels outside the declared classes {labels[:20]}. Nothing was released "
                "or charged. Declare every public label, or remove those records before fitting."
            )
        return classes, codes.astype(np.int64), False

    def _fit_categories(self, frame: pd.DataFrame) -> tuple[list[np.ndarray], list[int]]:
        """The states of every feature and the positions of the features read from the data."""
        k = frame.shape[1]
        spec = self.categories
        if spec is None and self._private():
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
                if self._private():
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
            return out, (list(range(k)) if self._private() else [])
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

    @staticmethod
    def _encode(column: pd.Series, states: np.ndarray) -> np.ndarray:
        """State index of every record; -1 for missing values and unknown states."""
        values = column.to_numpy(dtype=object)
        codes = pd.Index(states, dtype=object).get_indexer(values).astype(np.int64)
        codes[pd.isna(values)] = -1
        return codes

    # -------------------------------------------------------------------------- prediction

    def _frame_for_prediction(self, X: Any) -> pd.DataFrame:
        frame = self._as_frame(X)
        names = getattr(self, "feature_names_in_", None)
        if names is not None and isinstance(X, pd.DataFrame):
            missing = [c for c in names if c not in frame.columns]
            if missing:
                raise ValueError(f"X is missing the feature(s) {missing}")
            return frame.loc[:, list(names)]
        if frame.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {frame.shape[1]} features, but NaiveBayes is expecting "
                f"{self.n_features_in_} features as input"
            )
        return frame

    def _joint_log_likelihood(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "class_log_prior_")
        frame = self._frame_for_prediction(X)
        n = frame.shape[0]
        jll = np.tile(self.class_log_prior_, (n, 1))
        for i, log_prob in enumerate(self.feature_log_prob_):
            codes = self._encode(frame.iloc[:, i], self.categories_[i])
            seen = codes >= 0
            # Missing values and states unseen in training: the feature is left out.
            jll[seen] += log_prob[:, codes[seen]].T
        return jll

    def predict_log_proba(self, X: Any) -> np.ndarray:
        """Log posterior class probabilities, shape (n_records, n_classes)."""
        jll = self._joint_log_likelihood(X)
        return jll - logsumexp(jll, axis=1, keepdims=True)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Posterior class probabilities, shape (n_records, n_classes), columns as ``classes_``."""
        return np.exp(self.predict_log_proba(X))

    def predict(self, X: Any) -> np.ndarray:
        """The most probable class of each record."""
        check_is_fitted(self, "class_log_prior_")
        return self.classes_[np.argmax(self._joint_log_likelihood(X), axis=1)]

    def cross_entropy(self, X: Any, y: Any) -> float:
        """Mean negative log posterior probability of the true labels (test cross-entropy).

        Labels not in ``classes_`` are refused (ValueError naming y).
        """
        log_proba = self.predict_log_proba(X)
        y_arr = self._prepare_y(y, log_proba.shape[0])
        index = pd.Index(self.classes_, dtype=object).get_indexer(y_arr.astype(object))
        if (index < 0).any():
            raise ValueError("y has labels that are not among classes_")
        return float(-np.mean(log_proba[np.arange(index.size), index]))

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.input_tags.allow_nan = True
        tags.non_deterministic = self.mechanism != "none"
        return tags


def _eager_to_pandas(X: Any) -> Any:
    """A Polars or PyArrow (any narwhals eager) frame as pandas; other inputs unchanged.

    A lazy frame (DuckDB, Polars lazy, Spark) has no row order to align with ``y`` and is
    refused: collect it first, or count its tables with :func:`pymc_rdp.count_tables`.
    """
    import narwhals as nw

    frame = nw.from_native(X, pass_through=True)
    if isinstance(frame, nw.LazyFrame):
        raise TypeError(
            f"X is a lazy frame ({type(X).__name__}): NaiveBayes needs its records row-aligned "
            "with y; collect it first"
        )
    if isinstance(frame, nw.DataFrame):
        return frame.to_pandas()
    return X
