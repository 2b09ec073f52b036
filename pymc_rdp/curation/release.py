"""The :class:`Release` record of every charged release, and :func:`privatize` for count tables.

A :class:`Release` is what leaves the curator: the released values together with everything an
analyst needs to model them (mechanism, ledger tag, neighbouring relation, group identity,
censoring flags, the ledger entry), serialisable to JSON so it can be published without the raw
data. Every release path returns one: noisy count tables (:func:`privatize`, the estimators'
family tables), exact Dirichlet draws (:func:`~pymc_rdp.release_dirichlet`), randomized
response and private quantiles — all drawn by :func:`pymc_rdp.curation.charge.release_plan`
after the accountant accepted the charge.

A contingency table (or a batch of tables, e.g. the family table of a CPT: parent configurations ×
child states) is released by :func:`privatize` once with exactly sampled integer noise: a
mechanism with ``for_counts`` set, the discrete Gaussian or discrete Laplace mechanism
(:class:`~pymc_rdp.DiscreteGaussianMechanism`, :class:`~pymc_rdp.DiscreteLaplaceMechanism`;
Canonne, Kamath & Steinke 2020). The continuous Gaussian and Laplace mechanisms are refused for
count tables: floating-point noise added to an integer leaks it through its low-order bits
(Mironov 2012, "On Significance of the Least Significant Bits for Differential Privacy"), and they
stay available for non-integer statistics.

Sensitivity of a count table
----------------------------
Under *replace-one* neighbours one record moves from one cell to another: two cells change by 1,
so Δ₁ = 2, Δ₂ = √2, Δ∞ = 1 — for a single table and equally for a whole batch of rows (the record
may move between rows, still two cells). Under *add/remove* neighbours one cell changes by 1:
Δ₁ = Δ₂ = Δ∞ = 1. Each mechanism states which of these its curve needs
(:meth:`Mechanism.sensitivity_checks <pymc_rdp.privacy.mechanisms.Mechanism.sensitivity_checks>`:
Δ₂ for the Gaussian family, Δ₁ for the Laplace family, Δ₂ and Δ∞ for the Dirichlet mechanism);
a mechanism calibrated for less than the table's sensitivity is refused (the RDP curves hold for
queries of at most the stated sensitivity: Mironov 2017, "Rényi Differential Privacy",
Propositions 6–7, and :mod:`pymc_rdp.privacy.rdp` for the discrete curves).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pymc_rdp.privacy.accountant import Accountant
from pymc_rdp.privacy.mechanisms import Mechanism, mechanism_from_dict
from pymc_rdp.privacy.mechanisms.noise import resolve_noise_source
from pymc_rdp.privacy.neighbours import NEIGHBOURS, check_neighbours, table_sensitivity

__all__ = [
    "NEIGHBOURS",
    "Release",
    "check_count_table",
    "check_sensitivity",
    "entry_dict",
    "privatize",
    "table_sensitivity",
]

_FORMAT = "pymc-rdp.release"
_VERSION = 1


def check_sensitivity(mechanism: Mechanism, neighbours: str) -> None:
    """Refuse a mechanism calibrated for less than a count table's sensitivity.

    The mechanism names the sensitivities its curve needs
    (:meth:`~pymc_rdp.privacy.mechanisms.Mechanism.sensitivity_checks`).

    Raises
    ------
    TypeError
        If ``mechanism`` is not a Mechanism, or has no sensitivity argument.
    ValueError
        If one of its sensitivities is below the table's under ``neighbours``.
    """
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a Mechanism, got {type(mechanism).__name__}")
    need = table_sensitivity(neighbours)
    tol = 1e-12
    for what, have, want in mechanism.sensitivity_checks(need):
        if have < want * (1.0 - tol):
            raise ValueError(
                f"mechanism {what} = {have:.6g} is below the sensitivity {want:.6g} of a count "
                f"table under {neighbours!r} neighbours; calibrate the mechanism for it"
            )


def check_count_table(statistic: Any, name: str = "statistic") -> np.ndarray:
    """A table of counts as float64: finite, non-negative whole numbers, shape (K,) or (rows, K)."""
    if isinstance(statistic, (str, bytes)) or statistic is None:
        raise TypeError(f"{name} must be an array of counts, got {statistic!r}")
    try:
        arr = np.array(statistic, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of counts") from exc
    if arr.ndim not in (1, 2) or arr.shape[-1] < 1 or arr.size == 0:
        raise ValueError(f"{name} must have shape (K,) or (rows, K), got {arr.shape}")
    if np.isnan(arr).any():
        raise ValueError(f"{name} contains NaN")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite")
    if (arr < 0).any():
        raise ValueError(f"{name} must be non-negative counts")
    if (arr != np.round(arr)).any():
        raise ValueError(f"{name} must hold whole numbers (counts)")
    return arr


def _check_public_total(public_total: Any, counts: np.ndarray) -> float | None:
    """``None``, or the declared public total as a float after checking it is the table's."""
    if public_total is None:
        return None
    if isinstance(public_total, (bool, np.bool_)) or not isinstance(
        public_total, (int, float, np.integer, np.floating)
    ):
        raise TypeError(f"public_total must be None or a whole number, got {public_total!r}")
    value = float(public_total)
    if not (math.isfinite(value) and value >= 0 and value == np.round(value)):
        raise ValueError(f"public_total must be a non-negative whole number, got {public_total!r}")
    if value != float(counts.sum()):
        raise ValueError(
            "public_total does not equal the table's total: declare only a total that is "
            "known outside the data and matches it"
        )
    return value


def entry_dict(entry: Any) -> dict[str, Any]:
    """A ledger entry (``LedgerEntry`` or its ``to_dict()``) as a plain dict with its index."""
    if entry is None:
        return {}
    if hasattr(entry, "to_dict"):
        d = dict(entry.to_dict())
    else:
        d = dict(entry)
    if "index" not in d and hasattr(entry, "index"):
        d["index"] = int(entry.index)
    return d


@dataclass(frozen=True, eq=False)
class Release:
    """A published release and its provenance: one record for every mechanism.

    Never re-drawn: building a model from a release (or from its JSON) only reads ``values``.

    Attributes
    ----------
    values : numpy.ndarray
        The released values, float64 (read-only): shape (K,) or (rows, K) — a noisy count table,
        a table of Dirichlet draws (rows on the simplex), randomized bits, quantiles — with a
        leading axis of length ``draws`` when ``draws > 1``.
    mechanism : Mechanism
        The mechanism that drew them.
    tag : str
        The label of the release in the ledger.
    neighbours : {"replace-one", "add-remove"}
        The neighbouring relation the mechanism was calibrated for.
    entry : dict
        The accountant's ledger entry (``LedgerEntry.to_dict()``; empty if unknown); the first
        one of a release charged in several partitions.
    clamped : bool
        Values were clamped at zero after noising (a 0 is a left-censored value).
    rounded : bool
        Values were rounded to integers after noising (interval-censored).
    normalised : bool
        The values were post-processed into proportions; such a release is no longer the
        mechanism's output and :class:`NoisyCounts` refuses it.
    total : float or None
        The table's total when the caller declared it public (``privatize(...,
        public_total=N)``, recorded as a ``"public_total"`` declaration in the ledger); ``None``
        otherwise. The exact total of private records is never published by default, under
        either relation: released per region, it would be each region's exact size.
    group : str, int, tuple or None
        The parallel-composition group of the release's ledger entries.
    partitions : tuple or None
        The partitions it was charged in (one ledger entry each), within ``group``.
    draws : int
        Independent draws held in ``values`` (each charged).
    """

    values: np.ndarray
    mechanism: Mechanism
    tag: str
    neighbours: str = "replace-one"
    entry: dict[str, Any] = field(default_factory=dict)
    clamped: bool = False
    rounded: bool = False
    normalised: bool = False
    total: float | None = None
    group: Any = None
    partitions: tuple[Any, ...] | None = None
    draws: int = 1

    def __post_init__(self) -> None:
        vals = np.array(self.values, dtype=np.float64)
        if isinstance(self.draws, (bool, np.bool_)) or not isinstance(
            self.draws, (int, np.integer)
        ):
            raise TypeError(f"draws must be a whole number >= 1, got {self.draws!r}")
        if self.draws < 1:
            raise ValueError(f"draws must be >= 1, got {self.draws}")
        lead = 0 if self.draws == 1 else 1
        if vals.ndim - lead not in (1, 2) or vals.size == 0 or (lead and len(vals) != self.draws):
            shape = (
                "(K,) or (rows, K)" if not lead else f"({self.draws}, K) or ({self.draws}, rows, K)"
            )
            raise ValueError(f"values must have shape {shape}, got {vals.shape}")
        if not np.isfinite(vals).all():
            raise ValueError("values must be finite (no NaN or infinity)")
        vals.flags.writeable = False
        object.__setattr__(self, "values", vals)
        object.__setattr__(self, "draws", int(self.draws))
        if not isinstance(self.mechanism, Mechanism):
            raise TypeError(f"mechanism must be a Mechanism, got {type(self.mechanism).__name__}")
        check_neighbours(self.neighbours)
        if not isinstance(self.tag, str):
            raise TypeError(f"tag must be a string, got {type(self.tag).__name__}")
        object.__setattr__(self, "entry", dict(self.entry))
        object.__setattr__(self, "group", _as_key(self.group))
        if self.partitions is not None:
            object.__setattr__(self, "partitions", tuple(_as_key(p) for p in self.partitions))

    @property
    def shape(self) -> tuple[int, ...]:
        return self.values.shape

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (floats kept exactly)."""
        return {
            "format": _FORMAT,
            "version": _VERSION,
            "tag": self.tag,
            "values": self.values.tolist(),
            "mechanism": self.mechanism.to_dict(),
            "neighbours": self.neighbours,
            "clamped": bool(self.clamped),
            "rounded": bool(self.rounded),
            "normalised": bool(self.normalised),
            "total": self.total,
            "group": self.group,
            "partitions": None if self.partitions is None else list(self.partitions),
            "draws": self.draws,
            "entry": _entry_to_json(self.entry),
        }

    def to_json(self) -> str:
        """JSON text of :meth:`to_dict` (round trip exact through :meth:`from_json`)."""
        return json.dumps(self.to_dict(), allow_nan=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Release:
        """Rebuild a release from :meth:`to_dict` (no noise is drawn)."""
        if not isinstance(d, dict):
            raise TypeError(f"d must be a dict, got {type(d).__name__}")
        if d.get("format") != _FORMAT:
            raise ValueError(f"not a release: format is {d.get('format')!r}, expected {_FORMAT!r}")
        if "mechanism" not in d or d["mechanism"] is None:
            raise ValueError(
                "the release has no mechanism; a noisy table cannot be modelled without it"
            )
        return cls(
            values=np.asarray(d["values"], dtype=np.float64),
            mechanism=mechanism_from_dict(d["mechanism"]),
            tag=d.get("tag", ""),
            neighbours=d.get("neighbours", "replace-one"),
            entry=_entry_from_json(d.get("entry") or {}),
            clamped=bool(d.get("clamped", False)),
            rounded=bool(d.get("rounded", False)),
            normalised=bool(d.get("normalised", False)),
            total=d.get("total"),
            group=d.get("group"),
            partitions=d.get("partitions"),
            draws=int(d.get("draws", 1)),
        )

    @classmethod
    def from_json(cls, s: str) -> Release:
        """Rebuild a release from :meth:`to_json` text."""
        if not isinstance(s, str):
            raise TypeError(f"s must be JSON text, got {type(s).__name__}")
        return cls.from_dict(json.loads(s))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Release):
            return NotImplemented
        return self.to_json() == other.to_json()

    __hash__ = None  # type: ignore[assignment]


def _entry_to_json(entry: dict[str, Any]) -> dict[str, Any]:
    """The entry with a curve's infinite values (an unbounded order) written as strings."""
    if "curve" not in entry:
        return entry
    curve = [x if math.isfinite(x) else str(x) for x in map(float, entry["curve"])]
    return {**entry, "curve": curve}


def _entry_from_json(entry: dict[str, Any]) -> dict[str, Any]:
    if "curve" not in entry:
        return dict(entry)
    return {**entry, "curve": [float(x) for x in entry["curve"]]}


def _as_key(key: Any) -> Any:
    """A group or partition key with JSON's lists read back as tuples."""
    if isinstance(key, list):
        return tuple(_as_key(k) for k in key)
    return key


def privatize(
    statistic: Any,
    mechanism: Mechanism,
    accountant: Accountant,
    tag: str,
    noise_source: Any = None,
    *,
    neighbours: str = "replace-one",
    clamp: str | None = None,
    round: bool = False,
    group: Any = None,
    partition: Any = None,
    public_total: Any = None,
) -> Release:
    """Release a count table once with exact integer noise, charging the accountant first.

    Parameters
    ----------
    statistic : array_like
        Counts: non-negative whole numbers, shape (K,) or (rows, K).
    mechanism : DiscreteGaussianMechanism or DiscreteLaplaceMechanism
        Its sensitivity must cover the table's under ``neighbours`` (Δ₂ = √2 / Δ₁ = 2 for
        replace-one, 1 / 1 for add/remove). A continuous ``GaussianMechanism`` or
        ``LaplaceMechanism`` is refused (floating-point noise on counts leaks them, Mironov
        2012): use the discrete mechanism of the same name, calibrated the same way.
    accountant : Accountant
        Charged with one use of ``mechanism`` *before* any noise is drawn.
    tag : str
        The label of the release in the ledger.
    noise_source : None or NoiseSource
        ``None`` (default): noise from the operating system's entropy.
        ``pmr.UnsafeNoiseSeed(k)``: reproducible noise, **not private**; the ledger records an
        ``"unsafe_noise"`` declaration outside the guarantee. An int seed or a NumPy generator
        is refused (TypeError): privacy noise is never steered by a user seed.
    neighbours : {"replace-one", "add-remove"}
    clamp : {None, "zero"}
        Not supported with the discrete mechanisms (no likelihood models it); must be None.
    round : bool
        A no-op: the released values are integers already (kept for compatibility).
    group, partition : optional
        Parallel-composition keys passed to :meth:`Accountant.spend`. The partitions of one
        release share a group that no other release uses: take it from
        :meth:`Accountant.new_group` (or ``with accountant.parallel(label) as group:``).
    public_total : int, optional
        The table's total, declared public by the caller (e.g. a census count known outside
        the data). It must equal the table's total; it is stored as ``Release.total`` and
        recorded with ``accountant.declare("public_total", ..., outside_guarantee=False)``.
        Without it the release carries no total (the analyst uses a released total or a prior).

    Returns
    -------
    Release

    Raises
    ------
    BudgetExceededError
        The release would exceed the budget: nothing was drawn and the ledger is unchanged.
    """
    from pymc_rdp.curation.charge import PlannedRelease, release_plan

    counts = check_count_table(statistic)
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a Mechanism, got {type(mechanism).__name__}")
    if not mechanism.for_counts:
        raise TypeError(mechanism.counts_refusal())
    check_neighbours(neighbours)
    check_sensitivity(mechanism, neighbours)
    if not isinstance(accountant, Accountant):
        raise TypeError(f"accountant must be an Accountant, got {type(accountant).__name__}")
    if not isinstance(tag, str) or not tag:
        raise TypeError("tag must be a non-empty string")
    if clamp not in (None, "zero"):
        raise ValueError(f"clamp must be None or 'zero', got {clamp!r}")
    if clamp is not None:
        raise ValueError(
            "clamp='zero' is not supported for the discrete mechanisms (their likelihood does "
            "not model censoring); release the integer counts unclamped"
        )
    if not isinstance(round, (bool, np.bool_)):
        raise TypeError(f"round must be a bool, got {round!r}")
    source = resolve_noise_source(noise_source)
    total = _check_public_total(public_total, counts)
    item = PlannedRelease(
        mechanism,
        counts.astype(np.int64),
        tag,
        group=group,
        partitions=None if partition is None else [partition],
        neighbours=neighbours,
        public_total=total,
    )
    declared = []
    if total is not None:
        declared.append(
            (
                "public_total",
                f"release {tag!r}: its total {total:g} was declared public by the caller",
            )
        )
    [rel] = release_plan(
        [item],
        accountant,
        noise_source=source,
        declarations=declared,
        refusal=f"release {tag!r} does not fit into the accountant's remaining budget",
    )
    return rel
