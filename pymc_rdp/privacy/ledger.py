"""The record of one release in an accountant's ledger, and the checks of its keys.

A :class:`LedgerEntry` is a plain frozen dataclass: what a release was (mechanism name and
parameters, count, tag), where it composes (parallel group and partition), its RDP curve on the
accountant's orders and its position in the ledger. The accountant
(:mod:`pymc_rdp.privacy.accountant`) creates them, the codec (:mod:`pymc_rdp.privacy.ledger_codec`)
writes and reads them, the report (:mod:`pymc_rdp.privacy.ledger_report`) shows them.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pymc_rdp._validation import check_count
from pymc_rdp.privacy.mechanisms.base import Mechanism

__all__ = [
    "BatchEntries",
    "DeferredCurve",
    "GroupKeys",
    "Ledger",
    "LedgerEntry",
    "check_batch",
    "check_key",
    "check_mechanism",
    "check_tag",
    "new_entry",
]


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


class DeferredCurve:
    """The placeholder of a curve not evaluated yet, held in an entry's ``curve`` slot.

    ``owner.flush()`` evaluates every curve its owner holds back and writes each into its
    entry's slot (:class:`pymc_rdp.privacy.deferred_curves.DeferredCurves`).
    """

    __slots__ = ("owner",)

    def __init__(self, owner: Any) -> None:
        self.owner = owner


_CURVE_SLOT = LedgerEntry.__dict__["curve"]  # the slot's own descriptor


class _CurveField:
    """``LedgerEntry.curve``: the slot, read through :meth:`DeferredCurve.owner.flush` while it
    holds a :class:`DeferredCurve`.

    It replaces the slot's descriptor on the class (a data descriptor, so the generated
    ``__init__``, ``__getstate__``/``__setstate__``, :func:`dataclasses.replace`,
    :func:`dataclasses.asdict` and :func:`copy.copy` all go through it): a reader never sees
    the placeholder, only the curve, the same floats as an entry built with its curve.
    """

    __slots__ = ()

    def __get__(self, obj: Any, cls: Any = None) -> Any:
        if obj is None:
            return self
        value = _CURVE_SLOT.__get__(obj, cls)
        if value.__class__ is DeferredCurve:
            value.owner.flush()
            value = _CURVE_SLOT.__get__(obj, cls)
        return value

    def __set__(self, obj: Any, value: Any) -> None:
        _CURVE_SLOT.__set__(obj, value)

    def __delete__(self, obj: Any) -> None:
        _CURVE_SLOT.__delete__(obj)


LedgerEntry.curve = _CurveField()  # type: ignore[assignment]

(
    _SET_TAG,
    _SET_MECHANISM,
    _SET_PARAMS,
    _SET_COUNT,
    _SET_GROUP,
    _SET_PARTITION,
    _SET_CURVE,
    _SET_INDEX,
) = (
    (_CURVE_SLOT if name == "curve" else LedgerEntry.__dict__[name]).__set__
    for name in ("tag", "mechanism", "params", "count", "group", "partition", "curve", "index")
)
_NEW = object.__new__


def new_entry(
    tag: str | None,
    mechanism: str,
    params: dict[str, Any],
    count: int,
    group: Any,
    partition: Any,
    curve: np.ndarray | DeferredCurve,
    index: int,
) -> LedgerEntry:
    """``LedgerEntry(tag, mechanism, params, count, group, partition, curve, index)``, built
    by writing the slots directly.

    The generated ``__init__`` of a frozen dataclass sets each field through
    ``object.__setattr__``; the slot descriptors' own setters give the same object in about a
    third of the time (benchmark note: about 0.8 µs against 2 µs per entry, a tenth of a single
    spend; ``benchmarks/bench_accountant.py``, one at a time). ``curve`` may be a
    :class:`DeferredCurve`.
    """
    e = _NEW(LedgerEntry)
    _SET_TAG(e, tag)
    _SET_MECHANISM(e, mechanism)
    _SET_PARAMS(e, params)
    _SET_COUNT(e, count)
    _SET_GROUP(e, group)
    _SET_PARTITION(e, partition)
    _SET_CURVE(e, curve)
    _SET_INDEX(e, index)
    return e


class Ledger(Sequence[LedgerEntry]):
    """The accountant's entries, oldest first: an append-only sequence of :class:`LedgerEntry`.

    A single spend appends its entry. A batch appends its columns (one list per field, the
    curves as the rows of one read-only array) and its entries are built when first read, then
    kept (so an entry read twice is the same object). :meth:`rows` reads what the accounting
    needs without building entries.

    Benchmark note: building a frozen dataclass costs about 2 µs (8 fields set through
    ``object.__setattr__``, and the collector's passes over the new objects); 10,000 of them take
    20–25 ms of CPU time, as long as the rest of a 10,000-mechanism ``spend_batch``
    (``benchmarks/bench_accountant.py``: about 30 ms without them), so building them eagerly
    would cut the batch ratio to dp-accounting from about 40× to about 25×.
    """

    __slots__ = ("_batches", "_items", "_starts")

    def __init__(self) -> None:
        self._items: list[LedgerEntry | None] = []  # None: a batch row not built yet
        self._batches: list[_Columns] = []
        self._starts: list[int] = []  # index of the first row of each batch

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self._items)))]
        e = self._items[i]
        if e is None:
            j = i + len(self._items) if i < 0 else i
            b = self._batches[bisect.bisect_right(self._starts, j) - 1]
            e = self._items[j] = b.entry(j)
        return e

    def __iter__(self) -> Iterator[LedgerEntry]:
        for i in range(len(self._items)):
            yield self[i]

    def append(self, entry: LedgerEntry) -> None:
        """Append one entry (its ``index`` must be ``len(self)``)."""
        self._items.append(entry)

    def append_batch(
        self,
        tags: list[str | None],
        names: list[str],
        params: list[dict[str, Any]],
        counts: list[int],
        group: Any,
        partitions: list[Any],
        curves: np.ndarray,
    ) -> BatchEntries:
        """Append the entries of a batch as columns; their entries are built when read."""
        start = len(self._items)
        self._batches.append(
            _Columns(tags, names, params, counts, group, partitions, curves, start)
        )
        self._starts.append(start)
        self._items.extend([None] * len(tags))
        return BatchEntries(self, start, len(self._items))

    def rows(self) -> Iterator[tuple[str, dict[str, Any], int, Any, Any]]:
        """(mechanism, params, count, group, partition) of every entry, without building any."""
        items = self._items
        for i, e in enumerate(items):
            if e is not None:
                yield (e.mechanism, e.params, e.count, e.group, e.partition)
            else:
                b = self._batches[bisect.bisect_right(self._starts, i) - 1]
                k = i - b.start
                yield (b.names[k], b.params[k], b.counts[k], b.group, b.partitions[k])

    def copy(self) -> Ledger:
        """An independent ledger with the same entries (entries and columns are immutable)."""
        new = Ledger()
        new._items = list(self._items)
        new._batches = list(self._batches)
        new._starts = list(self._starts)
        return new


class _Columns:
    """The fields of the entries of one batch, one list (or array) per field."""

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
        self.group, self.partitions, self.curves, self.start = group, partitions, curves, start

    def entry(self, index: int) -> LedgerEntry:
        k = index - self.start
        return LedgerEntry(
            self.tags[k],
            self.names[k],
            self.params[k],
            self.counts[k],
            self.group,
            self.partitions[k],
            self.curves[k],
            index,
        )


class BatchEntries(Sequence[LedgerEntry]):
    """The entries recorded by one ``spend_batch`` call: a read-only sequence on the ledger.

    It behaves as a list of :class:`LedgerEntry` (indexing, slicing, iteration, ``len``, and
    equality with a list); each entry is built when first read and is the same object as the
    ledger's.
    """

    __slots__ = ("_ledger", "_start", "_stop")

    def __init__(self, ledger: Ledger, start: int, stop: int) -> None:
        self._ledger, self._start, self._stop = ledger, start, stop

    def __len__(self) -> int:
        return self._stop - self._start

    def __getitem__(self, i: Any) -> Any:
        r = range(self._start, self._stop)[i]
        return [self._ledger[j] for j in r] if isinstance(r, range) else self._ledger[r]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple, BatchEntries)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(list(self))


class GroupKeys:
    """The parallel-group keys of a ledger: handed out, used by entries, and closed.

    A group holds the partitions of *one* release (partitions of two releases under one key
    would merge): :meth:`new` hands out a key that no entry, closed group or earlier call used,
    and a closed group refuses further spends (:meth:`check_open`).
    """

    __slots__ = ("closed", "issued", "used")

    def __init__(self) -> None:
        self.issued: set[str] = set()  # keys handed out by new()
        self.used: set[Any] = set()  # every group key an entry was recorded under
        self.closed: dict[Any, None] = {}  # closed groups, in closing order

    def copy(self) -> GroupKeys:
        """An independent copy."""
        new = GroupKeys()
        new.issued, new.used, new.closed = set(self.issued), set(self.used), dict(self.closed)
        return new

    def new(self, label: str) -> str:
        """``f"{label}#{n}"`` for the first ``n`` that no entry, closed group or call used."""
        if not isinstance(label, str) or not label:
            raise TypeError(f"label must be a non-empty str, got {label!r}")
        n = len(self.issued)
        while True:
            key = f"{label}#{n}"
            if key not in self.issued and key not in self.used and key not in self.closed:
                break
            n += 1
        self.issued.add(key)
        return key

    def close(self, group: Any) -> None:
        """Close ``group`` (a key, not None)."""
        group = check_key(group, "group")
        if group is None:
            raise ValueError("group must not be None")
        self.closed[group] = None

    def check_open(self, group: Any) -> None:
        """ValueError if ``group`` is closed."""
        if group in self.closed:
            raise ValueError(
                f"group {group!r} is closed: its release is complete, and partitions of a "
                "later release would merge with it (take a fresh key from "
                "Accountant.new_group or Accountant.parallel)"
            )


def check_key(value: Any, name: str) -> Any:
    """A group or partition key: None, str, int, or a (nested) tuple of those."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, tuple):
        return tuple(check_key(v, name) for v in value)
    raise TypeError(f"{name} must be None, a str, an int or a tuple of those, got {value!r}")


def check_tag(tag: Any, name: str = "tag") -> str | None:
    """A tag: a str or None."""
    if tag is None or isinstance(tag, str):
        return tag
    raise TypeError(f"{name} must be a str or None, got {type(tag)!r}")


def check_mechanism(mechanism: Any, name: str = "mechanism") -> Mechanism:
    """A :class:`~pymc_rdp.privacy.mechanisms.base.Mechanism` instance (TypeError otherwise)."""
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"{name} must be a Mechanism instance, got {type(mechanism)!r}")
    return mechanism


def check_batch(
    mechanisms: Any, count: Any, tags: Any, group: Any, partitions: Any
) -> tuple[list[Mechanism], list[int], list[str | None], Any, list[Any]]:
    """The checked arguments of ``Accountant.spend_batch``: lists of one item per mechanism.

    Returns ``(mechanisms, counts, tags, group, partitions)``; the group is not checked against
    the accountant's closed groups here.
    """
    if isinstance(mechanisms, Mechanism) or not isinstance(mechanisms, Sequence):
        raise TypeError("mechanisms must be a sequence of Mechanism instances")
    mechs = list(mechanisms)
    n = len(mechs)
    # one isinstance test per distinct class; the message names the first bad item
    member = {m.__class__: m for m in mechs}
    if not all(isinstance(m, Mechanism) for m in member.values()):
        i = next(i for i, m in enumerate(mechs) if not isinstance(m, Mechanism))
        check_mechanism(mechs[i], f"mechanisms[{i}]")
    if isinstance(count, (Sequence, np.ndarray)) and np.ndim(count) > 0:
        if len(count) != n:
            raise ValueError(f"count must have one value per mechanism ({n}), got {len(count)}")
        counts = [check_count(c, "count") for c in count]
    else:
        counts = [check_count(count, "count")] * n
    if tags is None:
        tag_list: list[str | None] = [None] * n
    else:
        if isinstance(tags, (str, bytes)) or len(tags) != n:
            raise ValueError(f"tags must be a sequence of one tag per mechanism ({n})")
        tag_list = [check_tag(t, "tags") for t in tags]
    group = check_key(group, "group")
    if partitions is None:
        part_list: list[Any] = [None] * n
    else:
        if isinstance(partitions, (str, bytes)) or len(partitions) != n:
            raise ValueError(f"partitions must have one key per mechanism ({n})")
        if group is None:
            raise ValueError("partitions need a group: parallel composition is within a group")
        part_list = [check_key(p, "partitions") for p in partitions]
    return mechs, counts, tag_list, group, part_list
