"""The privacy accountant: a ledger of releases, their composed RDP curve and a budget.

Composition rules (Mironov 2017, "Rényi Differential Privacy", Proposition 1, and the parallel
composition of mechanisms on disjoint records):

* Sequential (adaptive, heterogeneous) composition adds the curves order by order:
  ε(α) = Σᵢ εᵢ(α). A mechanism used ``count`` times contributes ``count · ε(α)``.
* Entries of one ``group`` with distinct ``partition`` keys touch disjoint sets of records: the
  group contributes the order-wise maximum over its partitions of each partition's (sequential)
  sum, ε_g(α) = max_p Σ_{i ∈ p} εᵢ(α). Entries without a group, or with a group but no partition,
  compose sequentially with everything else.

The composed curve is kept on the accountant's orders and updated incrementally: a spend costs a
few array operations on the orders, whatever the length of the ledger. Conversion to (ε, δ)-DP uses
:func:`pymc_rdp.privacy.rdp.to_dp` (Balle et al. 2020, Theorem 21, by default).

A group holds the partitions of *one* release: partitions of two releases under one key would
merge (the same class label in two fits charged once). Releases take a fresh key from
:meth:`Accountant.new_group` (or ``with acc.parallel(label) as g:``) and close it when complete;
a spend into a closed group is refused. Keys managed by the caller keep working, and keeping
them distinct across releases is then the caller's job.

An accountant is a shared handle on one budget: ``copy.copy``/``copy.deepcopy`` (and so
scikit-learn's ``clone``) return the same accountant; :meth:`Accountant.fork` gives an
independent copy.

The ledger is tamper-evident: :meth:`Accountant.digest` is a SHA-256 hash chain over the orders,
the budget, every entry and the declarations; :meth:`Accountant.to_json` stores it (and, with a
key, an HMAC-SHA256 signature), and :meth:`Accountant.from_json` recomputes every entry's curve
from its mechanism and refuses edited, negative or NaN curves, a broken chain, a digest other
than an expected one, or a signature that does not verify.

A budget is either an (ε, δ)-DP pair, met when ``to_dp(orders, curve, δ) <= ε``, or an RDP budget
ε at one order λ (:meth:`Accountant.at_order`), met when ``curve(λ) <= ε``. A spend that would
exceed it raises :class:`BudgetExceededError` and leaves the accountant exactly as it was.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import hmac
import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pymc_rdp._validation import as_float_array, check_count, check_orders
from pymc_rdp.privacy import rdp as _rdp
from pymc_rdp.privacy.mechanisms.base import (
    CustomCurve,
    Mechanism,
    mechanism_from_dict,
    trust_orders,
)

__all__ = ["Accountant", "BudgetExceededError", "LedgerEntry"]

_FORMAT = "pymc-rdp-ledger"
_VERSION = 2  # 2: hash chain, closed groups, optional signature; version 1 still loads
_READABLE_VERSIONS = (1, 2)
_CHAIN_DOMAIN = b"pymc-rdp-ledger-chain/1\n"
_SIGNATURE_DOMAIN = b"pymc-rdp-ledger-signature/1\n"
# Relative tolerance between a stored curve and the one recomputed from its mechanism on load.
# Honest curves differ only by rounding: the vectorised batch formulas differ from the scalar
# ones by a few ulps (measured <= 1.1e-15 relative), and special functions (log-gamma,
# trigamma, log1p) may differ by ~1e-13 between library versions and platforms. 1e-9 leaves
# four orders of magnitude of margin over that and is far below any privacy-relevant change.
_CURVE_RTOL = 1e-9
_CURVE_ATOL = 1e-15  # a stored value within 1e-15 of an exact 0 (ε-loss nobody can exploit)
_REPORT_DELTA = 1e-6
_CACHE_SIZE = 4096  # curves kept for repeated mechanisms


class BudgetExceededError(ValueError):
    """A spend would exceed the accountant's privacy budget; nothing was recorded."""


@dataclass(frozen=True, eq=False, slots=True)
class LedgerEntry:
    """One recorded release.

    Attributes
    ----------
    tag : str or None
        The caller's label for the release.
    mechanism : str
        The registered name of the mechanism.
    params : dict
        The mechanism's parameters (``Mechanism.params()``).
    count : int
        How many times the mechanism was applied (the curve is multiplied by it).
    group, partition : str, int, tuple or None
        Parallel-composition keys (see :mod:`pymc_rdp.privacy.accountant`).
    curve : numpy.ndarray
        The entry's RDP curve on the accountant's orders, ``count`` included (read-only).
    index : int
        Position in the ledger.
    """

    tag: str | None
    mechanism: str
    params: dict[str, Any]
    count: int
    group: Any
    partition: Any
    curve: np.ndarray = field(repr=False)
    index: int = 0

    def mechanism_dict(self) -> dict[str, Any]:
        """``{"name": mechanism, **params}`` for :func:`mechanism_from_dict`."""
        return {"name": self.mechanism, **self.params}

    def to_dict(self, *, curve: bool = True) -> dict[str, Any]:
        """A plain dictionary (the curve as a list of floats; left out with ``curve=False``)."""
        d = {
            "tag": self.tag,
            "mechanism": self.mechanism,
            "params": self.params,
            "count": self.count,
            "group": self.group,
            "partition": self.partition,
        }
        if curve:
            d["curve"] = [float(x) for x in self.curve]
        return d


_ENTRY_FIELDS = ("tag", "mechanism", "params", "count", "group", "partition", "curve", "index")
_ENTRY_SETTERS = tuple(getattr(LedgerEntry, f).__set__ for f in _ENTRY_FIELDS)
_new = object.__new__


def _new_entry(
    tag: str | None,
    mechanism: str,
    params: dict[str, Any],
    count: int,
    group: Any,
    partition: Any,
    curve: np.ndarray,
    index: int,
    _new: Any = object.__new__,
    _set: tuple = _ENTRY_SETTERS,
) -> LedgerEntry:
    """A :class:`LedgerEntry` set through its slot descriptors (faster than the frozen __init__).

    The result is indistinguishable from ``LedgerEntry(tag, ..., index)``; no argument is checked.
    """
    e = _new(LedgerEntry)
    _set[0](e, tag)
    _set[1](e, mechanism)
    _set[2](e, params)
    _set[3](e, count)
    _set[4](e, group)
    _set[5](e, partition)
    _set[6](e, curve)
    _set[7](e, index)
    return e


class _EntryView(LedgerEntry):
    """A :class:`LedgerEntry` whose fields are read from row ``_index`` of its accountant's rows.

    The accountant keeps one tuple ``(tag, mechanism, params, count, group, partition, curve)``
    per release recorded by ``spend`` (and the columns of each batch, see
    :class:`_BatchEntryView`): building a full frozen entry per release costs more than the rest
    of the bookkeeping of a spend, while a view sets two references. A view behaves as a
    :class:`LedgerEntry` (same fields, frozen, same ``repr`` and ``to_dict``); copying or
    pickling one gives a plain :class:`LedgerEntry`, and so does calling the class (as
    :func:`dataclasses.replace` does).
    """

    __slots__ = ("_index", "_rows")

    def __new__(cls, *args: Any, **kwargs: Any) -> LedgerEntry:  # type: ignore[misc]
        return LedgerEntry(*args, **kwargs)

    tag = property(lambda self: self._rows[self._index][0], doc="See LedgerEntry.")
    mechanism = property(lambda self: self._rows[self._index][1], doc="See LedgerEntry.")
    params = property(lambda self: self._rows[self._index][2], doc="See LedgerEntry.")
    count = property(lambda self: self._rows[self._index][3], doc="See LedgerEntry.")
    group = property(lambda self: self._rows[self._index][4], doc="See LedgerEntry.")
    partition = property(lambda self: self._rows[self._index][5], doc="See LedgerEntry.")
    curve = property(lambda self: self._rows[self._index][6], doc="See LedgerEntry.")
    index = property(lambda self: self._index, doc="See LedgerEntry.")

    def _plain(self) -> LedgerEntry:
        return _new_entry(*self._rows[self._index], self._index)

    def __reduce__(self) -> tuple:
        return (LedgerEntry, (*self._rows[self._index], self._index))

    def __repr__(self) -> str:
        return repr(self._plain())


_SET_ROWS = _EntryView._rows.__set__
_SET_INDEX = _EntryView._index.__set__


class _Batch:
    """The columns of the entries recorded by one :meth:`Accountant.spend_batch` call."""

    __slots__ = ("counts", "curves", "group", "names", "params", "partitions", "start", "tags")

    def __init__(
        self,
        tags: list[str | None],
        names: list[str],
        params: list[dict[str, Any]],
        counts: list[int],
        group: Any,
        partitions: list[Any],
        curves: np.ndarray,
        start: int,
    ) -> None:
        self.tags, self.names, self.params, self.counts = tags, names, params, counts
        self.group, self.partitions, self.curves = group, partitions, curves
        self.start = start  # ledger index of the first row

    def row(self, i: int) -> tuple:
        """Row ``i`` as ``(tag, mechanism, params, count, group, partition, curve)``."""
        return (
            self.tags[i],
            self.names[i],
            self.params[i],
            self.counts[i],
            self.group,
            self.partitions[i],
            self.curves[i],
        )


class _BatchEntryView(_EntryView):
    """An entry view on row ``_index`` of a :class:`_Batch` (held in ``_rows``)."""

    __slots__ = ()

    tag = property(lambda self: self._rows.tags[self._index], doc="See LedgerEntry.")
    mechanism = property(lambda self: self._rows.names[self._index], doc="See LedgerEntry.")
    params = property(lambda self: self._rows.params[self._index], doc="See LedgerEntry.")
    count = property(lambda self: self._rows.counts[self._index], doc="See LedgerEntry.")
    group = property(lambda self: self._rows.group, doc="See LedgerEntry.")
    partition = property(lambda self: self._rows.partitions[self._index], doc="See LedgerEntry.")
    curve = property(lambda self: self._rows.curves[self._index], doc="See LedgerEntry.")
    index = property(lambda self: self._rows.start + self._index, doc="See LedgerEntry.")

    def _plain(self) -> LedgerEntry:
        return _new_entry(*self._rows.row(self._index), self.index)

    def __reduce__(self) -> tuple:
        return (LedgerEntry, (*self._rows.row(self._index), self.index))


def _views(rows: list[tuple], start: int, stop: int) -> list[LedgerEntry]:
    """Entry views on ``rows[start:stop]``."""
    new, set_rows, set_index = object.__new__, _SET_ROWS, _SET_INDEX
    out = []
    append = out.append
    for i in range(start, stop):
        e = new(_EntryView)
        set_rows(e, rows)
        set_index(e, i)
        append(e)
    return out


# --------------------------------------------------------------------------------------------
# argument checks


def _check_key(value: Any, name: str) -> Any:
    """A group or partition key: None, str, int, or a (nested) tuple of those."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, tuple):
        return tuple(_check_key(v, name) for v in value)
    raise TypeError(f"{name} must be None, a str, an int or a tuple of those, got {value!r}")


def _check_tag(tag: Any, name: str = "tag") -> str | None:
    if tag is None or isinstance(tag, str):
        return tag
    raise TypeError(f"{name} must be a str or None, got {type(tag)!r}")


def _check_mechanism(mechanism: Any, name: str = "mechanism") -> Mechanism:
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"{name} must be a Mechanism instance, got {type(mechanism)!r}")
    return mechanism


def _scalar(value: Any, name: str, *, allow_inf: bool = False) -> float:
    arr = as_float_array(value, name, allow_inf=allow_inf)
    if arr.ndim != 0:
        raise ValueError(f"{name} must be a scalar, got an array of shape {arr.shape}")
    return float(arr)


def _check_epsilon(value: Any) -> float:
    eps = _scalar(value, "epsilon")
    if not eps > 0:
        raise ValueError(f"epsilon must be > 0, got {eps!r}")
    return eps


def _check_delta(value: Any) -> float:
    d = _scalar(value, "delta")
    if not 0 < d < 1:
        raise ValueError(f"delta must lie in the open interval (0, 1), got {d!r}")
    return d


def _prepare_orders(orders: Any) -> np.ndarray:
    if orders is None:
        o = np.asarray(_rdp.DEFAULT_ORDERS, dtype=np.float64)
    else:
        o = check_orders(orders, "orders")
        if o.ndim != 1:
            raise ValueError(f"orders must be 1-D, got shape {o.shape}")
    o = np.unique(o)  # sorted, distinct
    o.flags.writeable = False
    return trust_orders(o)


# --------------------------------------------------------------------------------------------
# JSON encoding: exact floats (repr round-trips), tagged non-finite floats and tuples


def _encode(x: Any) -> Any:
    if isinstance(x, bool) or x is None or isinstance(x, str):
        return x
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        f = float(x)
        if math.isfinite(f):
            return f
        return {"__float__": "nan" if math.isnan(f) else ("inf" if f > 0 else "-inf")}
    if isinstance(x, tuple):
        return {"__tuple__": [_encode(v) for v in x]}
    if isinstance(x, (list, np.ndarray)):
        return [_encode(v) for v in (x.tolist() if isinstance(x, np.ndarray) else x)]
    if isinstance(x, dict):
        return {str(k): _encode(v) for k, v in x.items()}
    raise TypeError(f"cannot encode {type(x)!r} in a ledger")


def _decode(x: Any) -> Any:
    if isinstance(x, list):
        return [_decode(v) for v in x]
    if isinstance(x, dict):
        if set(x) == {"__float__"}:
            return float(x["__float__"])
        if set(x) == {"__tuple__"}:
            return tuple(_decode(v) for v in x["__tuple__"])
        return {k: _decode(v) for k, v in x.items()}
    return x


# --------------------------------------------------------------------------------------------


class Accountant:
    """Composes the RDP curves of recorded releases and enforces an optional budget.

    Parameters
    ----------
    budget : None or (epsilon, delta)
        No budget, or an (ε, δ)-DP budget (ε > 0, 0 < δ < 1): a spend is allowed while
        ``rdp.to_dp(orders, composed_curve, δ) <= ε``. For an RDP budget at one order use
        :meth:`at_order`.
    orders : array_like, optional
        The orders (> 1) on which curves are kept; default ``rdp.DEFAULT_ORDERS``. Sorted and
        de-duplicated.

    Examples
    --------
    >>> acc = Accountant(budget=(1.0, 1e-6))
    >>> entry = acc.spend(GaussianMechanism(sigma=20.0), count=3, tag="counts")
    >>> acc.epsilon()  # doctest: +SKIP
    """

    def __init__(self, budget: Any = None, orders: Any = None) -> None:
        self._orders = _prepare_orders(orders)
        self._budget_kind: str | None = None
        self._budget_epsilon = math.inf
        self._budget_delta: float | None = None
        self._budget_order: float | None = None
        self._budget_index: int | None = None
        if budget is not None:
            if isinstance(budget, (str, bytes)) or not isinstance(budget, Sequence):
                raise TypeError(f"budget must be None or a pair (epsilon, delta), got {budget!r}")
            if len(budget) != 2:
                raise ValueError(f"budget must be a pair (epsilon, delta), got {budget!r}")
            self._budget_kind = "dp"
            self._budget_epsilon = _check_epsilon(budget[0])
            self._budget_delta = _check_delta(budget[1])
            self._dp_offset = _conversion_offset(
                self._orders, self._budget_epsilon, self._budget_delta
            )
        self._reset_state()

    @classmethod
    def at_order(cls, epsilon: float, order: float, orders: Any = None) -> Accountant:
        """An accountant with an RDP budget: the composed curve at ``order`` must stay <= ε.

        ``order`` is added to ``orders`` when it is not among them.
        """
        eps = _check_epsilon(epsilon)
        lam = _scalar(order, "order", allow_inf=True)
        if not lam > 1:
            raise ValueError(f"order must be > 1, got {lam!r}")
        base = _prepare_orders(orders)
        acc = cls(None, np.append(base, lam) if lam not in base else base)
        acc._budget_kind = "rdp"
        acc._budget_epsilon = eps
        acc._budget_order = lam
        acc._budget_index = int(np.searchsorted(acc._orders, lam))
        return acc

    # ---------------------------------------------------------------- state

    def _reset_state(self) -> None:
        k = self._orders.size
        self._base = np.zeros(k)  # sequential sum
        self._spare = np.zeros(k)  # scratch for the next sequential sum (referenced nowhere else)
        self._partitions: dict[Any, dict[Any, np.ndarray]] = {}  # group -> partition -> sum
        self._group_rows: dict[Any, int] = {}  # group -> row of self._gmax
        self._gmax = np.zeros((4, k))  # per-group order-wise max over partitions
        self._gpart = np.zeros(k)  # Σ_g gmax_g
        self._total = np.zeros(k)  # self._base + self._gpart
        self._entries: list[LedgerEntry] = []  # views (see _EntryView)
        # per entry: (tag, mechanism, params, count, group, partition, curve), or None for an
        # entry of a batch (whose columns its view holds); aligned with self._entries
        self._rows: list[tuple | None] = []
        self._cache: dict[type, dict[Any, np.ndarray]] = {}  # class -> params key -> curve
        self._cache_size = 0
        self._declarations: list[dict[str, Any]] = []
        self._group_keys: set[Any] = set()  # every group key an entry was recorded under
        self._issued: set[str] = set()  # keys handed out by new_group
        self._closed: dict[Any, None] = {}  # closed groups, in closing order
        self._chain: tuple[int, bytes] | None = None  # (entries hashed, link after them)
        self._verification: dict[str, Any] | None = None  # how a loaded ledger was checked

    # ---------------------------------------------------------------- shared handle

    def __copy__(self) -> Accountant:
        # An accountant is a handle on one privacy budget, not a value: copies (including
        # scikit-learn's clone, which deep-copies constructor parameters) must charge the same
        # ledger, or every copy would start with the full budget again. Use fork() for an
        # independent what-if copy; pickling still makes an independent copy.
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Accountant:
        memo[id(self)] = self
        return self

    def fork(self) -> Accountant:
        """An independent copy of the accountant, for trying spends without recording them.

        ``copy.copy`` and ``copy.deepcopy`` return the accountant itself (it is a shared handle);
        this is the one way to obtain a second, independent ledger with the same content.
        """
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._base = self._base.copy()
        new._spare = np.zeros(self._orders.size)
        new._partitions = {g: dict(p) for g, p in self._partitions.items()}
        new._group_rows = dict(self._group_rows)
        new._gmax = self._gmax.copy()
        new._gpart = self._gpart.copy()
        new._total = self._total.copy()
        new._entries = list(self._entries)
        new._rows = list(self._rows)  # the old views keep reading the (append-only) old list
        new._cache = {c: dict(d) for c, d in self._cache.items()}
        new._declarations = [dict(d) for d in self._declarations]
        new._group_keys = set(self._group_keys)
        new._issued = set(self._issued)
        new._closed = dict(self._closed)
        new._verification = None if self._verification is None else dict(self._verification)
        return new

    # ---------------------------------------------------------------- group identity

    def new_group(self, label: str = "group") -> str:
        """A parallel-composition group key never used before on this accountant.

        Partitions of one group compose by the order-wise maximum, so a group must hold the
        partitions of *one* release: two releases that share a key would have their
        partitions merged (a class label of one fit and the same label of another fit would be
        charged once). Every release charged in parallel takes its own key from here and
        closes it when it is complete (:meth:`close_group`, or use :meth:`parallel`).

        Parameters
        ----------
        label : str
            Readable prefix; the key is ``f"{label}#{n}"`` for the first ``n`` that no entry,
            closed group or earlier call used.

        Returns
        -------
        str
        """
        if not isinstance(label, str) or not label:
            raise TypeError(f"label must be a non-empty str, got {label!r}")
        n = len(self._issued)
        while True:
            key = f"{label}#{n}"
            if key not in self._issued and key not in self._group_keys and key not in self._closed:
                break
            n += 1
        self._issued.add(key)
        return key

    def close_group(self, group: Any) -> None:
        """Mark a group complete: any later spend into it raises ValueError.

        Closed groups travel in the ledger JSON, so they stay closed after a reload.
        """
        group = _check_key(group, "group")
        if group is None:
            raise ValueError("group must not be None")
        self._closed[group] = None

    @contextlib.contextmanager
    def parallel(self, label: str = "group") -> Iterator[str]:
        """``with acc.parallel(label) as g:`` — a fresh group (:meth:`new_group`), closed on exit.

        Spend every partition of one release inside the block with ``group=g``; the group is
        closed when the block ends (also on an exception), so no later release can add
        partitions to it.
        """
        key = self.new_group(label)
        try:
            yield key
        finally:
            self._closed[key] = None

    @property
    def closed_groups(self) -> tuple[Any, ...]:
        """The closed group keys, in closing order."""
        return tuple(self._closed)

    def _refuse_closed(self, group: Any) -> None:
        raise ValueError(
            f"group {group!r} is closed: its release is complete, and partitions of a later "
            "release would merge with it (take a fresh key from Accountant.new_group or "
            "Accountant.parallel)"
        )

    @property
    def orders(self) -> np.ndarray:
        """The orders on which curves are kept (read-only)."""
        return self._orders

    @property
    def budget(self) -> tuple[float, float] | None:
        """(ε, δ) for an (ε, δ) budget, None otherwise (see :attr:`budget_order`)."""
        if self._budget_kind == "dp":
            return (self._budget_epsilon, self._budget_delta)
        return None

    @property
    def budget_order(self) -> tuple[float, float] | None:
        """(ε, λ) for an RDP budget at one order, None otherwise."""
        if self._budget_kind == "rdp":
            return (self._budget_epsilon, self._budget_order)
        return None

    @property
    def ledger(self) -> list[LedgerEntry]:
        """The recorded entries, oldest first (a copy of the list)."""
        return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def _within(self, total: np.ndarray, pending: Any = None) -> bool:
        """Whether ``total`` meets the budget (``to_dp(orders, total, δ)[0] <= ε``, or at λ).

        For an (ε, δ) budget a spend the RDP conversion refuses is still allowed when the
        tightest valid bound of the ledger with the pending entries (``pending()``, rows of
        :func:`pymc_rdp.privacy.tight_accounting.ledger_epsilon`) meets it: see
        :mod:`pymc_rdp.privacy.tight_accounting`, and ``docs/guide.md`` for when a refusal is a
        valid
        filter.

        For an (ε, δ) budget a sufficient test comes first: the BBGHS bound at every order before
        the minimisation, ``total(α) + c(α)`` (see :func:`_conversion_offset`), is an upper bound
        on the ε that :func:`rdp.to_dp` returns, so ``min_α [total(α) + c(α)] <= ε`` already
        decides "within". Otherwise the full conversion decides, so the answer is always that of
        ``to_dp(orders, total, δ)[0] <= ε``.
        """
        if self._budget_kind is None:
            return True
        if self._budget_kind == "rdp":
            return bool(total[self._budget_index] <= self._budget_epsilon)
        if (total + self._dp_offset).min() <= self._budget_epsilon:
            return True
        eps = _rdp.to_dp(self._orders, total, self._budget_delta)[0]
        if eps <= self._budget_epsilon:
            return True
        if pending is None:
            return False
        from itertools import chain

        from pymc_rdp.privacy.tight_accounting import ledger_epsilon, rows_of

        rows = chain(rows_of(self._entries), pending())
        tight = ledger_epsilon(rows, float(eps), self._budget_delta, "best")
        return bool(tight.epsilon <= self._budget_epsilon)

    def _curve_of(self, mechanism: Mechanism, count: int, params: Any = None) -> np.ndarray:
        """``count`` times the mechanism's curve on the orders, read-only (maybe shared)."""
        # Curves are determined by the class and params(): reuse them for repeated mechanisms.
        # One dictionary per class, keyed by the flat tuple (names..., values...) when it is
        # hashable (floats, ints, strings), else by repr(params) (lists, nested values). A flat
        # tuple of atoms is dropped from the garbage collector's lists at its first pass, so a
        # long ledger does not make full collections more frequent.
        if params is None:
            params = mechanism.params()
        per_class = self._cache.get(mechanism.__class__)
        if per_class is None:
            per_class = self._cache[mechanism.__class__] = {}
        try:
            key: Any = (*params, *params.values())
            curve = per_class.get(key)
        except TypeError:
            key = repr(params)
            curve = per_class.get(key)
        if curve is None:
            curve = self._fresh_curve(mechanism)
            if self._cache_size >= _CACHE_SIZE:
                for d in self._cache.values():  # dropping the oldest key is O(size) in a dict
                    d.clear()
                self._cache_size = 0
            per_class[key] = curve
            self._cache_size += 1
        if count == 1:
            return curve  # read-only: safe to share with the cache and the ledger
        curve = curve * count
        curve.setflags(write=False)
        return curve

    def _fresh_curve(self, mechanism: Mechanism) -> np.ndarray:
        # a copy: the mechanism may keep (and later change) the array it returns
        curve = np.array(mechanism.rdp(self._orders), dtype=np.float64)
        if curve.shape != self._orders.shape:
            raise ValueError(
                f"mechanism.rdp(orders) returned shape {curve.shape}, expected "
                f"{self._orders.shape}: a mechanism holding several settings must be spent one "
                "setting at a time (or through spend_batch)"
            )
        if not curve.min() >= 0:  # also catches NaN (every comparison with NaN is False)
            raise ValueError(f"mechanism {mechanism!r} returned an invalid RDP curve")
        curve.setflags(write=False)
        return curve

    def _plan(self, curve: np.ndarray, group: Any, partition: Any) -> tuple:
        """The state after adding ``curve``, computed without changing anything."""
        if group is None or partition is None:
            base = self._base + curve
            # without parallel groups the group part is all zeros and base + 0 == base exactly
            # (base is never -0.0: it starts at +0.0 and curves are >= 0)
            return ("seq", base, None, None, None, base + self._gpart if self._group_rows else base)
        parts = self._partitions.get(group)
        old = None if parts is None else parts.get(partition)
        s_new = curve.copy() if old is None else old + curve
        row = self._group_rows.get(group)
        n = len(self._group_rows)
        if row is None:
            gmax_new = s_new
            gpart = self._gpart_with(n, gmax_new)
        else:
            gmax_new = np.maximum(self._gmax[row], s_new)
            gpart = self._gpart_with(row, gmax_new)
        return ("par", None, s_new, gmax_new, gpart, self._base + gpart)

    def _gpart_with(self, row: int, gmax_row: np.ndarray) -> np.ndarray:
        n = max(len(self._group_rows), row + 1)
        mat = np.empty((n, self._orders.size))
        mat[: len(self._group_rows)] = self._gmax[: len(self._group_rows)]
        mat[row] = gmax_row
        return mat.sum(axis=0)

    def _commit(self, plan: tuple, group: Any, partition: Any) -> None:
        kind, base, s_new, gmax_new, gpart, total = plan
        if kind == "seq":
            self._base = base
        else:
            self._partitions.setdefault(group, {})[partition] = s_new
            self._commit_group_row(group, gmax_new)
            self._gpart = gpart
        self._total = total

    def _record(
        self,
        mechanism: Mechanism | dict[str, Any],
        count: int,
        tag: str | None,
        group: Any,
        partition: Any,
        curve: np.ndarray,
    ) -> LedgerEntry:
        curve.flags.writeable = False
        if isinstance(mechanism, Mechanism):
            name, params = mechanism.name, mechanism.params()
        else:
            name, params = mechanism["name"], {k: v for k, v in mechanism.items() if k != "name"}
        if group is not None:
            self._group_keys.add(group)
        self._rows.append((tag, name, params, count, group, partition, curve))
        entry = _views(self._rows, len(self._rows) - 1, len(self._rows))[0]
        self._entries.append(entry)
        return entry

    def _check_group_partition(self, group: Any, partition: Any) -> tuple[Any, Any]:
        group = _check_key(group, "group")
        partition = _check_key(partition, "partition")
        if partition is not None and group is None:
            raise ValueError("partition needs a group: parallel composition is within a group")
        if group is not None and group in self._closed:
            self._refuse_closed(group)
        return group, partition

    def _overspend_message(self, total: np.ndarray, what: str) -> str:
        if self._budget_kind == "rdp":
            return (
                f"{what} would bring ε at order {self._budget_order:g} to "
                f"{total[self._budget_index]:.6g} > budget {self._budget_epsilon:.6g}"
            )
        eps = _rdp.to_dp(self._orders, total, self._budget_delta)[0]
        return (
            f"{what} would bring ε at δ={self._budget_delta:g} to {eps:.6g} "
            f"> budget {self._budget_epsilon:.6g}"
        )

    # ---------------------------------------------------------------- spending

    def spend(
        self,
        mechanism: Mechanism,
        count: int = 1,
        tag: str | None = None,
        group: Any = None,
        partition: Any = None,
    ) -> LedgerEntry:
        """Record ``count`` uses of ``mechanism``; refuse (and record nothing) if over budget.

        Parameters
        ----------
        mechanism : Mechanism
            The mechanism used; its curve is evaluated on :attr:`orders`.
        count : int, default 1
            Number of uses (sequential composition: the curve is multiplied by ``count``).
        tag : str, optional
            Label shown in the ledger.
        group, partition : str, int or tuple, optional
            Entries of one group with distinct partitions compose in parallel (order-wise
            maximum of the per-partition sums). A partition requires a group.

        Returns
        -------
        LedgerEntry

        Raises
        ------
        BudgetExceededError
            If the composed privacy loss would exceed the budget; the ledger is unchanged.
        """
        # The checks below are those of _check_mechanism, check_count, _check_tag and
        # _check_group_partition, with the common cases short-cut (this is the hot path).
        if not isinstance(mechanism, Mechanism):
            _check_mechanism(mechanism)
        if count.__class__ is not int or count < 1:
            count = check_count(count, "count")
        if tag is not None and tag.__class__ is not str:
            tag = _check_tag(tag)
        if group is not None or partition is not None:
            group, partition = self._check_group_partition(group, partition)
        params = mechanism.params()
        curve = self._curve_of(mechanism, count, params)
        if partition is None:  # sequential: the plan of _plan, inlined
            # the new sum goes to a spare array (no allocation); the old one becomes the spare
            base = np.add(self._base, curve, out=self._spare)
            total = base + self._gpart if self._group_rows else base
            if self._budget_kind is not None and not self._within(
                total, lambda: [(mechanism.name, params, count, None, None)]
            ):
                raise BudgetExceededError(self._overspend_message(total, f"spending {mechanism!r}"))
            self._spare = self._base
            self._base = base
            self._total = total
        else:
            plan = self._plan(curve, group, partition)
            if not self._within(
                plan[-1], lambda: [(mechanism.name, params, count, group, partition)]
            ):
                raise BudgetExceededError(
                    self._overspend_message(plan[-1], f"spending {mechanism!r}")
                )
            self._commit(plan, group, partition)
        if group is not None:
            self._group_keys.add(group)
        rows = self._rows
        rows.append((tag, mechanism.name, params, count, group, partition, curve))
        entry = _new(_EntryView)
        _SET_ROWS(entry, rows)
        _SET_INDEX(entry, len(rows) - 1)  # rows and entries stay aligned
        self._entries.append(entry)
        return entry

    def can_spend(
        self, mechanism: Mechanism, count: int = 1, group: Any = None, partition: Any = None
    ) -> bool:
        """Whether :meth:`spend` with these arguments would stay within the budget."""
        mechanism = _check_mechanism(mechanism)
        count = check_count(count, "count")
        group, partition = self._check_group_partition(group, partition)
        plan = self._plan(self._curve_of(mechanism, count), group, partition)
        return self._within(
            plan[-1], lambda: [(mechanism.name, mechanism.params(), count, group, partition)]
        )

    def spend_batch(
        self,
        mechanisms: Sequence[Mechanism],
        count: int | Sequence[int] = 1,
        tags: Sequence[str | None] | None = None,
        group: Any = None,
        partitions: Sequence[Any] | None = None,
    ) -> list[LedgerEntry]:
        """Record many releases at once, all or nothing.

        The curves are evaluated vectorised per mechanism class (``Mechanism.batch_rdp``; equal
        to ``rdp(orders)`` up to rounding) and composed in list order, exactly as successive
        calls to :meth:`spend` would compose them. The budget is checked once, on the composed
        result: if it would be exceeded nothing is recorded.

        Parameters
        ----------
        mechanisms : sequence of Mechanism
        count : int or sequence of int, default 1
            Uses of each mechanism.
        tags : sequence of (str or None), optional
            One tag per mechanism.
        group : str, int or tuple, optional
            Group of every entry of the batch.
        partitions : sequence, optional
            One partition key per mechanism (requires ``group``).

        Returns
        -------
        list of LedgerEntry

        Raises
        ------
        BudgetExceededError
            If the batch as a whole would exceed the budget; nothing is recorded.
        """
        if isinstance(mechanisms, Mechanism) or not isinstance(mechanisms, Sequence):
            raise TypeError("mechanisms must be a sequence of Mechanism instances")
        mechs = list(mechanisms)
        n = len(mechs)
        # one isinstance test per distinct class; the message names the first bad item
        classes = [m.__class__ for m in mechs]
        member = dict(zip(classes, mechs, strict=True))  # one mechanism of each class
        distinct = list(member)
        bad = {c for c in distinct if not isinstance(member[c], Mechanism)}
        if bad:
            i = next(i for i, c in enumerate(classes) if c in bad)
            _check_mechanism(mechs[i], f"mechanisms[{i}]")
        if n == 0:
            return []
        if isinstance(count, (Sequence, np.ndarray)) and np.ndim(count) > 0:
            if len(count) != n:
                raise ValueError(f"count must have one value per mechanism ({n}), got {len(count)}")
            counts = [check_count(c, "count") for c in count]
            all_ones = all(c == 1 for c in counts)
        else:
            c = check_count(count, "count")
            counts = [c] * n
            all_ones = c == 1
        if tags is None:
            tag_list: list[str | None] = [None] * n
        else:
            if isinstance(tags, (str, bytes)) or len(tags) != n:
                raise ValueError(f"tags must be a sequence of one tag per mechanism ({n})")
            tag_list = [_check_tag(t, "tags") for t in tags]
        group = _check_key(group, "group")
        if group is not None and group in self._closed:
            self._refuse_closed(group)
        if partitions is None:
            part_list: list[Any] = [None] * n
        else:
            if isinstance(partitions, (str, bytes)) or len(partitions) != n:
                raise ValueError(f"partitions must have one key per mechanism ({n})")
            if group is None:
                raise ValueError("partitions need a group: parallel composition is within a group")
            part_list = [_check_key(p, "partitions") for p in partitions]

        # curves, vectorised per class, written into one buffer whose row 0 is the current
        # sequential sum: a sequential batch then composes with one reduction in list order
        k = self._orders.size
        buf = np.empty((n + 1, k))
        buf[0] = self._base
        curves = buf[1:]
        if len(distinct) == 1:
            plan = [(distinct[0], mechs[:], None)]
        else:
            code = {c: j for j, c in enumerate(distinct)}
            codes = np.fromiter(map(code.__getitem__, classes), np.intp, n)
            plan = [
                (
                    c,
                    [m for m, mc in zip(mechs, classes, strict=True) if mc is c],
                    np.flatnonzero(codes == j),
                )
                for j, c in enumerate(distinct)
            ]
        for cls, members, where in plan:
            block = np.asarray(cls.batch_rdp(members, self._orders), np.float64)
            if block.shape != (len(members), k):
                raise ValueError(f"{cls.__name__}.batch_rdp returned shape {block.shape}")
            if not block.min() >= 0:  # also catches NaN
                raise ValueError("a mechanism of the batch returned an invalid RDP curve")
            if where is None:
                curves[:] = block
            else:
                curves[where] = block  # integer rows: faster than a boolean mask
        if not all_ones:
            curves *= np.asarray(counts, dtype=np.float64)[:, None]

        # compose in list order, exactly as successive spends would
        if partitions is None:
            seq_all, seq_any = True, True
        else:
            seq = np.array([p is None for p in part_list])
            seq_all, seq_any = bool(seq.all()), bool(seq.any())
        if seq_all:
            base = np.add.reduce(buf, axis=0)
        elif seq_any:
            stacked = np.empty((int(seq.sum()) + 1, k))
            stacked[0] = self._base
            stacked[1:] = curves[seq]
            base = np.add.reduce(stacked, axis=0)
        else:
            base = self._base
        new_parts: dict[Any, np.ndarray] = {}
        gmax_row = None
        row = None
        gpart = self._gpart
        if not seq_all:
            parts = self._partitions.get(group, {})
            row = self._group_rows.get(group)
            gmax_row = None if row is None else self._gmax[row].copy()
            for i in np.flatnonzero(~seq):
                key = part_list[i]
                old = new_parts.get(key, parts.get(key))
                s_new = curves[i].copy() if old is None else old + curves[i]
                new_parts[key] = s_new
                gmax_row = s_new if gmax_row is None else np.maximum(gmax_row, s_new)
            gpart = self._gpart_with(len(self._group_rows) if row is None else row, gmax_row)
        if new_parts or self._group_rows:
            total = base + gpart
        else:
            total = base  # no parallel group: the group part is zero and base + 0 == base
        if not self._within(
            total,
            lambda: [
                (m.name, m.params(), c, group, p)
                for m, c, p in zip(mechs, counts, part_list, strict=True)
            ],
        ):
            raise BudgetExceededError(
                self._overspend_message(total, f"spending a batch of {n} mechanisms")
            )
        # commit
        self._base = base
        if group is not None:
            self._group_keys.add(group)
        if new_parts:
            self._partitions.setdefault(group, {}).update(new_parts)
            self._commit_group_row(group, gmax_row)
            self._gpart = gpart
        self._total = total
        buf.flags.writeable = False
        curves.flags.writeable = False  # a view made before: it keeps its own flag
        # the entries: views on the columns of the batch
        start = len(self._entries)
        record = _Batch(
            tag_list,
            [m.name for m in mechs],
            [m.params() for m in mechs],
            counts,
            group,
            part_list,
            curves,
            start,
        )
        new, set_rows, set_index = object.__new__, _SET_ROWS, _SET_INDEX
        entries = []
        append = entries.append
        for i in range(n):
            e = new(_BatchEntryView)
            set_rows(e, record)
            set_index(e, i)
            append(e)
        self._rows.extend([None] * n)  # keeps self._rows aligned with the ledger
        self._entries.extend(entries)
        return entries

    def _commit_group_row(self, group: Any, gmax_row: np.ndarray) -> None:
        row = self._group_rows.get(group)
        if row is None:
            row = len(self._group_rows)
            self._group_rows[group] = row
            if row >= self._gmax.shape[0]:
                grown = np.zeros((2 * self._gmax.shape[0], self._orders.size))
                grown[:row] = self._gmax[:row]
                self._gmax = grown
        self._gmax[row] = gmax_row

    # ---------------------------------------------------------------- queries

    def rdp(self, orders: Any = None) -> np.ndarray:
        """The composed RDP curve.

        Parameters
        ----------
        orders : array_like, optional
            Default: the accountant's own orders (the incrementally kept curve). Orders that are
            all among the accountant's are read off it; others are re-evaluated from each
            entry's mechanism (rebuilt with :func:`mechanism_from_dict`) and composed anew.

        Raises
        ------
        ValueError
            If new orders are asked for and an entry's mechanism cannot be rebuilt.
        """
        if orders is None:
            return self._total.copy()
        o = check_orders(orders, "orders")
        flat = o.ravel()
        pos = np.clip(np.searchsorted(self._orders, flat), 0, self._orders.size - 1)
        if np.array_equal(self._orders[pos], flat):
            return self._total[pos].reshape(o.shape)
        return self._recompose(flat).reshape(o.shape)

    def _recompose(self, orders: np.ndarray) -> np.ndarray:
        base = np.zeros(orders.size)
        parts: dict[Any, dict[Any, np.ndarray]] = {}
        for e in self._entries:
            try:
                mech = mechanism_from_dict(e.mechanism_dict())
            except (TypeError, ValueError) as exc:
                raise ValueError(
                    f"ledger entry {e.index} (mechanism {e.mechanism!r}) cannot be re-evaluated "
                    "at new orders; ask for orders among Accountant.orders"
                ) from exc
            curve = np.asarray(mech.rdp(orders), dtype=np.float64) * e.count
            if e.group is None or e.partition is None:
                base = base + curve
            else:
                g = parts.setdefault(e.group, {})
                g[e.partition] = g[e.partition] + curve if e.partition in g else curve
        total = base
        for g in parts.values():
            total = total + np.max(np.stack(list(g.values())), axis=0)
        return total

    def _resolve_delta(self, delta: Any) -> float:
        if delta is None:
            if self._budget_kind == "dp":
                return self._budget_delta
            raise ValueError("delta is required (the accountant has no (ε, δ) budget)")
        return _check_delta(delta)

    def epsilon(self, delta: float | None = None, method: str = "best") -> float:
        """The composed ε at ``delta`` (default: the budget's δ).

        Parameters
        ----------
        delta : float, optional
        method : {"best", "rdp", "pld", "exact"}, default "best"
            "rdp": the RDP curve converted by :func:`rdp.to_dp`. "exact": the composed Gaussian's
            exact ε (Gaussian-only ledgers). "pld": dp-accounting's pessimistic PLD bound (entries
            with a privacy-loss distribution). "best": the least of the valid ones
            (:mod:`pymc_rdp.privacy.tight_accounting`); :meth:`epsilon_and_method` names it.
        """
        return self.accounting(delta, method).epsilon

    def epsilon_and_method(self, delta: float | None = None) -> tuple[float, str]:
        """(ε, the bound used) at ``delta`` by the "best" method."""
        t = self.accounting(delta)
        return t.epsilon, t.method

    def accounting(self, delta: float | None = None, method: str = "best") -> Any:
        """The :class:`~pymc_rdp.privacy.tight_accounting.TightEpsilon` at ``delta``: ε, method,
        notes."""
        from pymc_rdp.privacy.tight_accounting import METHODS, TightEpsilon, ledger_epsilon, rows_of

        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        d = self._resolve_delta(delta)
        rdp_eps = float(_rdp.to_dp(self._orders, self._total, d)[0])
        if method == "rdp":
            return TightEpsilon(rdp_eps, "rdp", d, {"rdp": rdp_eps})
        key = (len(self._entries), d, method, rdp_eps)
        cached = getattr(self, "_accounting_cache", None)
        if cached is not None and cached[0] == key:
            return cached[1]
        out = ledger_epsilon(rows_of(self._entries), rdp_eps, d, method)
        self._accounting_cache = (key, out)
        return out

    def to_dp_events(self) -> Any:
        """The ledger as one dp-accounting ``ComposedDpEvent`` (see
        :mod:`pymc_rdp.privacy.dp_events`)."""
        from pymc_rdp.privacy.dp_events import ledger_to_dp_events
        from pymc_rdp.privacy.tight_accounting import rows_of

        return ledger_to_dp_events(rows_of(self._entries))

    def epsilon_and_order(self, delta: float | None = None) -> tuple[float, float]:
        """(ε, best order) at ``delta`` (default: the budget's δ)."""
        eps, order = _rdp.to_dp(self._orders, self._total, self._resolve_delta(delta))
        return float(eps), float(order)

    def delta(self, epsilon: float) -> float:
        """The smallest δ for which the composed curve gives (ε, δ)-DP (:func:`rdp.to_delta`)."""
        return float(_rdp.to_delta(self._orders, self._total, _check_epsilon(epsilon))[0])

    def remaining(self, delta: float | None = None) -> float:
        """What is left of the budget (never negative).

        For an (ε, δ) budget: ε_budget − ε(δ_budget) (``delta``, if given, must be the budget's
        δ). For an RDP budget at order λ: ε_budget − ε(λ) (``delta`` must be None). Without a
        budget: ``inf``.
        """
        if self._budget_kind == "dp":
            d = self._resolve_delta(delta)
            if d != self._budget_delta:
                raise ValueError(
                    f"delta must be the budget's δ = {self._budget_delta!r}, got {d!r}"
                )
            return max(0.0, self._budget_epsilon - self.epsilon(d))
        if delta is not None:
            raise ValueError("delta must be None: the budget is RDP at one order, or absent")
        if self._budget_kind == "rdp":
            return max(0.0, self._budget_epsilon - float(self._total[self._budget_index]))
        return math.inf

    # ---------------------------------------------------------------- presentation

    def report(self, delta: float | None = None, max_rows: int = 50) -> str:
        """A readable table of the ledger with each entry's privacy loss and the totals.

        Per entry: its ε at the budget's δ (or ``delta``; default 1e-6 without a budget), or its
        RDP ε at the budget's order. Entries of a parallel group do not add up: their group
        contributes the order-wise maximum over partitions.
        """
        max_rows = check_count(max_rows, "max_rows")
        if self._budget_kind == "rdp" and delta is None:
            col = f"ε(λ={self._budget_order:g})"
            idx = self._budget_index

            def loss(c: np.ndarray) -> float:
                return float(c[idx])

        else:
            d = _check_delta(delta) if delta is not None else (self._budget_delta or _REPORT_DELTA)
            col = f"ε(δ={d:g})"

            def loss(c: np.ndarray) -> float:
                return float(_rdp.to_dp(self._orders, c, d)[0])

        head = ["#", "tag", "mechanism", "parameters", "count", "group/partition", col]
        rows = []
        for e in self._entries[:max_rows]:
            params = ", ".join(f"{k}={_short(v)}" for k, v in e.params.items())
            where = (
                ""
                if e.group is None
                else f"{e.group}" + ("" if e.partition is None else f"/{e.partition}")
            )
            rows.append(
                [
                    str(e.index),
                    e.tag or "",
                    e.mechanism,
                    params,
                    str(e.count),
                    where,
                    f"{loss(e.curve):.6g}",
                ]
            )
        widths = [
            max(len(h), *(len(r[j]) for r in rows)) if rows else len(h) for j, h in enumerate(head)
        ]
        widths = [min(w, 48) for w in widths]

        def fmt(r: list[str]) -> str:
            return "  ".join(
                (c if len(c) <= widths[j] else c[: widths[j] - 1] + "…").ljust(widths[j])
                for j, c in enumerate(r)
            ).rstrip()

        lines = [fmt(head), fmt(["-" * w for w in widths])]
        lines += [fmt(r) for r in rows]
        if len(self._entries) > max_rows:
            lines.append(f"... {len(self._entries) - max_rows} more entries")
        lines.append("")
        lines.append(
            f"entries: {len(self._entries)}   orders: {self._orders.size} "
            f"({self._orders[0]:g} .. {self._orders[-1]:g})"
        )
        if self._budget_kind == "rdp" and delta is None:
            lines.append(f"composed: {col} = {loss(self._total):.6g}")
        else:
            t = self.accounting(d)
            lines.append(
                f"composed: {col} = {t.epsilon:.6g} by the {t.method} bound"
                + ("" if t.method == "rdp" else f" (RDP conversion: {t.candidates['rdp']:.6g})")
            )
            lines.extend(f"  note: {n}" for n in t.notes)
        if self._budget_kind is not None and not (self._budget_kind == "rdp" and delta is None):
            if self._budget_kind == "dp":
                lines.append(
                    f"budget: (ε, δ) = ({self._budget_epsilon:g}, {self._budget_delta:g})"
                    f"   remaining ε = {self.remaining():.6g}"
                )
        if self._budget_kind == "rdp":
            lines.append(
                f"budget: ε = {self._budget_epsilon:g} at order {self._budget_order:g}"
                f"   remaining = {self.remaining():.6g}"
            )
        if self._partitions:
            lines.append(
                "parallel groups (order-wise max over partitions): "
                + ", ".join(f"{g} ({len(p)} partitions)" for g, p in self._partitions.items())
            )
        for d in self._declarations:
            head = "OUTSIDE THE GUARANTEE" if d["outside_guarantee"] else "declared public"
            lines.append(f"{head} ({d['kind']}): {d['detail']}")
        custom = [e.index for e in self._entries if e.mechanism == CustomCurve.name]
        if custom:
            shown = ", ".join(map(str, custom[:10])) + (" ..." if len(custom) > 10 else "")
            lines.append(
                f"caller-supplied curves (custom_curve) at entries {shown}: not derived from a "
                "mechanism here; the guarantee is only as good as the analysis behind them"
            )
        v = self._verification
        if v is not None:
            how = "hash chain verified" if v["chained"] else "version-1 ledger: no hash chain"
            how += ", matches the expected digest" if v["digest_checked"] else ""
            lines.append(
                f"loaded ledger: curves recomputed from the mechanisms; {how}; "
                f"signature {v['signature']}"
            )
        lines.append(f"ledger digest (sha256 chain): {self.digest()}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        if self._budget_kind == "dp":
            b = f"budget=({self._budget_epsilon!r}, {self._budget_delta!r})"
        elif self._budget_kind == "rdp":
            b = f"budget=ε {self._budget_epsilon!r} at order {self._budget_order!r}"
        else:
            b = "budget=None"
        return f"<Accountant {b}, {len(self._entries)} entries, {self._orders.size} orders>"

    # ---------------------------------------------------------------- declarations

    def declare(self, kind: str, detail: str, *, outside_guarantee: bool) -> None:
        """Record something published that no mechanism covers.

        Two kinds of statement travel with the ledger: facts the caller declared public (for
        example ``kind="public_total"``, a table total known outside the data), which the
        guarantee does not need to cover, and releases outside the guarantee (for example
        ``kind="states_from_data"``, a domain read from the private records, or
        ``kind="unsafe_noise"``, noise reproducible from a seed), which the report flags.

        Parameters
        ----------
        kind : str
            A short machine-readable name.
        detail : str
            One sentence for the report.
        outside_guarantee : bool
            True when the statement weakens the stated guarantee.
        """
        if not isinstance(kind, str) or not kind:
            raise TypeError(f"kind must be a non-empty str, got {kind!r}")
        if not isinstance(detail, str):
            raise TypeError(f"detail must be a str, got {type(detail).__name__}")
        if not isinstance(outside_guarantee, bool):
            raise TypeError(f"outside_guarantee must be a bool, got {outside_guarantee!r}")
        item = {"kind": kind, "detail": detail, "outside_guarantee": outside_guarantee}
        if item not in self._declarations:
            self._declarations.append(item)

    @property
    def declarations(self) -> tuple[dict[str, Any], ...]:
        """The statements recorded by :meth:`declare`, in order (copies)."""
        return tuple(dict(d) for d in self._declarations)

    @property
    def within_guarantee(self) -> bool:
        """False when any declaration is outside the guarantee."""
        return not any(d["outside_guarantee"] for d in self._declarations)

    # ---------------------------------------------------------------- serialisation

    def _budget_doc(self) -> dict[str, Any] | None:
        if self._budget_kind == "dp":
            return {"kind": "dp", "epsilon": self._budget_epsilon, "delta": self._budget_delta}
        if self._budget_kind == "rdp":
            return {"kind": "rdp", "epsilon": self._budget_epsilon, "order": self._budget_order}
        return None

    def _chain_link(self) -> bytes:
        """The hash-chain link after the last entry, extended from the cached prefix."""
        if self._chain is None:
            head = {"orders": self._orders, "budget": self._budget_doc()}
            self._chain = (0, hashlib.sha256(_CHAIN_DOMAIN + _canonical(head)).digest())
        done, link = self._chain
        entries = self._entries
        if done < len(entries):
            sha = hashlib.sha256
            for e in entries[done:]:
                link = sha(link + _canonical(e.to_dict(curve=False))).digest()
            self._chain = (len(entries), link)
        return link

    def digest(self) -> str:
        """The SHA-256 hash chain over the whole ledger, as 64 hexadecimal digits.

        The chain starts from the orders and the budget; each entry extends it,
        link_i = SHA-256(link_{i−1} ‖ canonical JSON of entry i); the digest is
        SHA-256(link_n ‖ canonical JSON of the declarations and closed groups). Every field of
        an entry (``LedgerEntry.to_dict(curve=False)``) is covered but its curve, which is not data
        but a function of the mechanism, its parameters, the count and the orders — all
        covered — and is recomputed on load. Publish the digest with the results: a ledger
        that lost, gained, reordered or changed an entry no longer matches it
        (``Accountant.from_json(s, expected_digest=...)``).

        The chain is computed at the first call and extended incrementally (spends do not
        hash anything).
        """
        tail = {"closed_groups": list(self._closed), "declarations": self._declarations}
        return hashlib.sha256(self._chain_link() + _canonical(tail)).hexdigest()

    def to_json(self, *, key: bytes | str | None = None) -> str:
        """The accountant as strict JSON (no NaN/Infinity literals), exactly round-tripped.

        Finite floats are written with Python's shortest round-trip repr; infinities as
        ``{"__float__": "inf"}``; tuples (partition keys) as ``{"__tuple__": [...]}``. The
        document carries its :meth:`digest` (``"chain"``) and, with ``key``, a keyed signature
        of it, HMAC-SHA256 (``"signature"``), which only a holder of the key can produce.

        Parameters
        ----------
        key : bytes or str, optional
            Secret key for the signature (a str is encoded as UTF-8); non-empty.
        """
        digest = self.digest()
        doc: dict[str, Any] = {
            "format": _FORMAT,
            "version": _VERSION,
            "orders": self._orders,
            "budget": self._budget_doc(),
            "entries": [e.to_dict() for e in self._entries],
            "declarations": self._declarations,
            "closed_groups": list(self._closed),
            "chain": {"algorithm": "sha256", "digest": digest},
        }
        # which bound the ε of the ledger is by (informational; not read back)
        doc["accounting"] = self.accounting(self._budget_delta or _REPORT_DELTA).to_dict()
        if key is not None:
            sig = _sign(_check_key_bytes(key), digest)
            doc["signature"] = {"algorithm": "hmac-sha256", "value": sig}
        return json.dumps(_encode(doc), allow_nan=False, ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(
        cls,
        s: str | bytes,
        *,
        expected_digest: str | None = None,
        key: bytes | str | None = None,
    ) -> Accountant:
        """Rebuild an accountant from :meth:`to_json`, verifying what it can.

        Every entry's curve is recomputed from its mechanism (:func:`mechanism_from_dict` on
        the stored name and parameters, times the count, on the ledger's orders) and compared
        with the stored one: at every order both must be infinite, or differ by at most
        1e-9 relative (plus 1e-15 absolute), the rounding by which honest evaluations of a
        curve can differ (vectorised versus scalar formulas, library versions). A stored curve
        that is negative, NaN or further from its recomputation means the ledger was edited:
        ValueError. Within the tolerance the stored curve is kept, so that the rebuilt
        accountant composes exactly as the one that wrote the ledger (and admitted its
        spends). Curves of :class:`~pymc_rdp.privacy.mechanisms.CustomCurve` entries are the
        caller's
        own statement: they are recomputed from their stored orders and values like any other,
        accepted when non-negative, and flagged in :meth:`report` (nothing can check the
        analysis behind them).

        A version-2 ledger carries its hash chain: the digest recomputed from the entries,
        declarations, budget and orders must equal the stored one (an entry dropped, reordered
        or edited without recomputing the chain is refused). Since anyone can recompute an
        unkeyed chain, pass ``expected_digest`` (the digest published with the results) or
        ``key`` (the signature key) to detect a consistent rewrite too. Version-1 ledgers
        (no chain) are loaded with their curves recomputed and are reported as unchained and
        unsigned; ``expected_digest`` applies to them as well.

        No budget check is repeated.

        Parameters
        ----------
        s : str or bytes
            The JSON text.
        expected_digest : str, optional
            A published :meth:`digest` the ledger must match.
        key : bytes or str, optional
            The key of :meth:`to_json`'s signature: the ledger must carry a signature that this
            key verifies.

        Raises
        ------
        ValueError
            Not a ledger, an unsupported version, a malformed or edited entry, a chain or
            digest mismatch, a missing or wrong signature.
        """
        if not isinstance(s, (str, bytes)):
            raise TypeError(f"s must be a JSON string, got {type(s)!r}")
        if expected_digest is not None:
            expected_digest = _check_digest(expected_digest)
        key_bytes = None if key is None else _check_key_bytes(key)
        try:
            doc = _decode(json.loads(s))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"s is not valid JSON: {exc}") from exc
        if not isinstance(doc, dict) or doc.get("format") != _FORMAT:
            raise ValueError("s is not a pymc-rdp ledger")
        version = doc.get("version")
        if version not in _READABLE_VERSIONS or isinstance(version, bool):
            raise ValueError(f"unsupported ledger version {version!r}")
        missing = {"orders", "budget", "entries"} - set(doc)
        if missing:
            raise ValueError(f"the ledger lacks {sorted(missing)}")
        acc = _empty_from_doc(cls, doc)
        entries = doc["entries"]
        if not isinstance(entries, list):
            raise ValueError("the ledger's entries are not a list")
        recompute: dict[str, np.ndarray] = {}
        custom = []
        for i, e in enumerate(entries):
            fields = _check_entry(e, i)
            curve = _verified_curve(acc._orders, fields, i, recompute)
            group, partition = fields["group"], fields["partition"]
            acc._commit(acc._plan(curve, group, partition), group, partition)
            acc._record(
                {"name": fields["mechanism"], **fields["params"]},
                fields["count"],
                fields["tag"],
                group,
                partition,
                curve,
            )
            if fields["mechanism"] == CustomCurve.name:
                custom.append(i)
        decls = doc.get("declarations", [])
        if not isinstance(decls, list):
            raise ValueError("the ledger's declarations are not a list")
        for d in decls:
            if not isinstance(d, dict) or set(d) != {"kind", "detail", "outside_guarantee"}:
                raise ValueError("a ledger declaration is not a {kind, detail, outside_guarantee}")
            acc.declare(d["kind"], d["detail"], outside_guarantee=d["outside_guarantee"])
        closed = doc.get("closed_groups", [])
        if not isinstance(closed, list):
            raise ValueError("the ledger's closed_groups are not a list")
        for g in closed:
            acc.close_group(g)

        digest = acc.digest()
        chained = version >= 2
        if chained:
            chain = doc.get("chain")
            if not isinstance(chain, dict) or chain.get("algorithm") != "sha256":
                raise ValueError("a version-2 ledger must carry its sha256 hash chain")
            stored = chain.get("digest")
            if not isinstance(stored, str) or not hmac.compare_digest(stored, digest):
                raise ValueError(
                    "the ledger does not match its own hash chain: an entry, the budget, the "
                    "orders or a declaration was edited, dropped, added or reordered"
                )
        if expected_digest is not None and not hmac.compare_digest(expected_digest, digest):
            raise ValueError(
                f"the ledger's digest {digest} differs from the expected {expected_digest}: "
                "it is not the published ledger (an entry was edited, dropped, added or "
                "reordered)"
            )
        signature = doc.get("signature")
        if key_bytes is not None:
            if not isinstance(signature, dict) or signature.get("algorithm") != "hmac-sha256":
                raise ValueError("the ledger carries no hmac-sha256 signature to verify")
            value = signature.get("value")
            if not isinstance(value, str) or not hmac.compare_digest(
                value, _sign(key_bytes, digest)
            ):
                raise ValueError(
                    "the ledger's signature does not verify with this key: the ledger was "
                    "changed or signed with another key"
                )
        acc._verification = {
            "version": version,
            "chained": chained,
            "digest_checked": expected_digest is not None,
            "signature": (
                "verified"
                if key_bytes is not None
                else ("not checked (no key)" if signature is not None else "absent")
            ),
            "custom_entries": tuple(custom),
        }
        return acc

    @property
    def verification(self) -> dict[str, Any] | None:
        """How a loaded ledger was checked (None for an accountant not read by from_json).

        Keys: ``version`` (of the file), ``chained`` (it carried a hash chain that matched),
        ``digest_checked`` (an ``expected_digest`` matched), ``signature`` ("verified",
        "not checked (no key)" or "absent"), ``custom_entries`` (indices of caller-supplied
        curves).
        """
        return None if self._verification is None else dict(self._verification)


def _canonical(x: Any) -> bytes:
    """Canonical JSON bytes of a ledger value: sorted keys, no spaces, exact floats, UTF-8."""
    return json.dumps(
        _encode(x), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def _check_key_bytes(key: Any) -> bytes:
    if isinstance(key, str):
        key = key.encode("utf-8")
    if not isinstance(key, (bytes, bytearray)):
        raise TypeError(f"key must be bytes or str, got {type(key).__name__}")
    if not key:
        raise ValueError("key must not be empty")
    return bytes(key)


def _check_digest(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected_digest must be a str, got {type(value).__name__}")
    v = value.strip().lower()
    if len(v) != 64 or any(c not in "0123456789abcdef" for c in v):
        raise ValueError(f"expected_digest must be 64 hexadecimal digits, got {value!r}")
    return v


def _sign(key: bytes, digest: str) -> str:
    return hmac.new(key, _SIGNATURE_DOMAIN + digest.encode("ascii"), hashlib.sha256).hexdigest()


def _empty_from_doc(cls: type[Accountant], doc: dict[str, Any]) -> Accountant:
    budget = doc["budget"]
    try:
        orders = np.asarray(doc["orders"], dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"the ledger's orders are not numbers: {exc}") from exc
    if budget is None:
        acc = cls(None, orders)
    elif not isinstance(budget, dict):
        raise ValueError("the ledger's budget is not an object")
    elif budget.get("kind") == "dp":
        acc = cls((budget.get("epsilon"), budget.get("delta")), orders)
    elif budget.get("kind") == "rdp":
        acc = cls.at_order(budget.get("epsilon"), budget.get("order"), orders)
    else:
        raise ValueError(f"unknown budget kind {budget.get('kind')!r}")
    if not np.array_equal(acc._orders, orders):
        raise ValueError("the ledger's orders are not sorted and distinct")
    return acc


# the fields of a stored entry: those of LedgerEntry but its position (a field added to
# LedgerEntry must also be restored by from_json, or the reloaded chain no longer matches)
_STORED_FIELDS = tuple(f.name for f in dataclasses.fields(LedgerEntry) if f.name != "index")


def _check_entry(e: Any, i: int) -> dict[str, Any]:
    """The fields of stored entry ``i``, checked (ValueError names the entry)."""
    if not isinstance(e, dict):
        raise ValueError(f"ledger entry {i} is not an object")
    unknown = set(e) - set(_STORED_FIELDS)
    missing = set(_STORED_FIELDS) - set(e)
    if unknown or missing:
        raise ValueError(
            f"ledger entry {i} has unknown fields {sorted(unknown)} / lacks {sorted(missing)}"
        )
    if not isinstance(e["mechanism"], str):
        raise ValueError(f"ledger entry {i}: mechanism is not a str")
    if not isinstance(e["params"], dict):
        raise ValueError(f"ledger entry {i}: params is not an object")
    if e["tag"] is not None and not isinstance(e["tag"], str):
        raise ValueError(f"ledger entry {i}: tag is not a str or null")
    count = e["count"]
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"ledger entry {i}: count must be a whole number >= 1, got {count!r}")
    try:
        group = _check_key(e["group"], "group")
        partition = _check_key(e["partition"], "partition")
    except TypeError as exc:
        raise ValueError(f"ledger entry {i}: {exc}") from exc
    if partition is not None and group is None:
        raise ValueError(f"ledger entry {i}: a partition without a group")
    return {**e, "group": group, "partition": partition}


def _verified_curve(
    orders: np.ndarray, fields: dict[str, Any], i: int, cache: dict[str, np.ndarray]
) -> np.ndarray:
    """The stored curve of entry ``i`` after checking it against its recomputation."""
    try:
        stored = np.asarray(fields["curve"], dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"ledger entry {i}: its curve is not a list of numbers") from exc
    if stored.shape != orders.shape:
        raise ValueError(f"ledger entry {i}: its curve does not match the ledger's orders")
    if np.isnan(stored).any():
        raise ValueError(f"ledger entry {i}: its curve holds NaN")
    if (stored < 0).any():
        raise ValueError(
            f"ledger entry {i}: its curve is negative (a privacy loss is >= 0; no entry can "
            "give budget back)"
        )
    d = {"name": fields["mechanism"], **fields["params"]}
    ck = repr(d)  # the decoded JSON values: floats, ints, str, lists, tuples, dicts, None
    unit = cache.get(ck)
    if unit is None:
        try:
            mech = mechanism_from_dict(d)
            unit = np.array(mech.rdp(orders), dtype=np.float64)
        except Exception as exc:  # any failure means: the curve cannot be recomputed
            raise ValueError(
                f"ledger entry {i}: its mechanism {fields['mechanism']!r} cannot be rebuilt "
                f"from its parameters, so its curve cannot be verified ({exc})"
            ) from exc
        if unit.shape != orders.shape or np.isnan(unit).any() or (unit < 0).any():
            raise ValueError(f"ledger entry {i}: its mechanism gives an invalid curve")
        cache[ck] = unit
    expected = unit if fields["count"] == 1 else unit * fields["count"]
    inf_s, inf_e = np.isinf(stored), np.isinf(expected)
    fin = ~inf_e
    close = np.abs(stored[fin] - expected[fin]) <= _CURVE_RTOL * expected[fin] + _CURVE_ATOL
    bad = (inf_s != inf_e) | ~_full(fin, close)
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"ledger entry {i} ({fields['mechanism']}, count {fields['count']}): its stored "
            f"curve is {float(stored[j])!r} at order {orders[j]:g} where its mechanism gives "
            f"{float(expected[j])!r}; the ledger was edited (stored curves must equal the "
            f"recomputed ones to {_CURVE_RTOL:g} relative)"
        )
    stored.flags.writeable = False
    return stored


def _full(mask: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``values`` (given where ``mask``) spread over the whole mask, True elsewhere."""
    out = np.ones(mask.shape, dtype=bool)
    out[mask] = values
    return out


def _short(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, list):
        return f"[{len(v)} values]" if len(v) > 3 else "[" + ", ".join(_short(x) for x in v) + "]"
    return repr(v) if isinstance(v, str) else str(v)


def _conversion_offset(orders: np.ndarray, epsilon: float, delta: float) -> np.ndarray:
    r"""The per-order term of a sufficient test of an (ε, δ) budget, read-only.

    The conversion of :func:`pymc_rdp.privacy.rdp.to_dp` (Balle, Barthe, Gaboardi, Hsu & Sato 2020,
    Theorem 21) is ε_δ = max(0, min_α ε_δ(α)) with, before its KL rule (which only lowers values
    to 0),

    .. math:: \varepsilon_\delta(\alpha) = \varepsilon(\alpha) + \log\frac{\alpha-1}{\alpha}
              - \frac{\log\delta + \log\alpha}{\alpha-1} = \varepsilon(\alpha) + c(\alpha),

    and ε_δ(∞) = ε(∞). Hence ``min_α [ε(α) + c(α)] <= ε`` implies ``to_dp(...) <= ε`` for ε > 0.
    The returned c(α) carries a margin of 1e-12 · (1 + ε + |log(1 − 1/α) − log α/(α − 1)| +
    |log δ/(α − 1)|), far above the few ulps by which two roundings of the sum can differ, so the
    implication holds for the floating-point values as well; a curve within that margin of the
    budget goes to the full conversion.
    """
    at_inf = np.isinf(orders)
    a = np.where(at_inf, 2.0, orders)
    inv = np.where(at_inf, 0.0, 1.0 / (a - 1.0))
    shift = np.where(at_inf, 0.0, np.log1p(-1.0 / a) - np.log(a) * inv)
    ld_inv = math.log(delta) * inv
    margin = 1e-12 * (1.0 + epsilon + np.abs(shift) + np.abs(ld_inv))
    out = (shift - ld_inv) + margin
    out.flags.writeable = False
    return out
