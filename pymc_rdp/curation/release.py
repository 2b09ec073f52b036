"""Releasing a privatized count table: :func:`privatize` and the :class:`Release` record.

The curator's side of the noisy-sufficient-statistics path. A contingency table (or a batch of
tables, e.g. the family table of a CPT: parent configurations × child states) is released once with
exactly sampled integer noise: the discrete Gaussian or discrete Laplace mechanism
(:class:`~pymc_rdp.DiscreteGaussianMechanism`, :class:`~pymc_rdp.DiscreteLaplaceMechanism`;
Canonne, Kamath & Steinke 2020). The continuous Gaussian and Laplace mechanisms are refused for
count tables: floating-point noise added to an integer leaks it through its low-order bits
(Mironov 2012, "On Significance of the Least Significant Bits for Differential Privacy"), and they
stay available for non-integer statistics. The accountant is charged *before* any noise is drawn,
so that a refused release leaks nothing, and the result is a :class:`Release`: the noisy values
together with everything an analyst needs to model them (mechanism, neighbouring relation,
censoring flags, the ledger entry), serialisable to JSON so it can be published without the raw
data.

Sensitivity of a count table
----------------------------
Under *replace-one* neighbours one record moves from one cell to another: two cells change by 1,
so Δ₁ = 2, Δ₂ = √2, Δ∞ = 1 — for a single table and equally for a whole batch of rows (the record
may move between rows, still two cells). Under *add/remove* neighbours one cell changes by 1:
Δ₁ = Δ₂ = Δ∞ = 1. A (discrete) Gaussian mechanism's ``sensitivity`` is its ℓ2 sensitivity and a
(discrete) Laplace mechanism's its ℓ1 sensitivity; a mechanism calibrated for less than the
table's sensitivity is refused (the RDP curves hold for queries of at most the stated
sensitivity: Mironov 2017, "Rényi Differential Privacy", Propositions 6–7, and
:mod:`pymc_rdp.privacy.rdp` for the discrete curves).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pymc_rdp.privacy.accountant import Accountant
from pymc_rdp.privacy.mechanisms import (
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    Mechanism,
    mechanism_from_dict,
)
from pymc_rdp.privacy.mechanisms.noise import declare_unsafe_noise, resolve_noise_source
from pymc_rdp.privacy.neighbours import NEIGHBOURS, check_neighbours, table_sensitivity

__all__ = [
    "NEIGHBOURS",
    "Release",
    "check_count_table",
    "check_sensitivity",
    "privatize",
    "table_sensitivity",
]

_FORMAT = "pymc-rdp.release"
_VERSION = 1


def check_sensitivity(mechanism: Mechanism, neighbours: str) -> None:
    """Refuse a mechanism calibrated for less than a count table's sensitivity.

    Raises
    ------
    TypeError
        If the mechanism is not Gaussian, Laplace or Dirichlet.
    ValueError
        If its sensitivity is below the table's under ``neighbours``.
    """
    from pymc_rdp.privacy.mechanisms import DirichletMechanism

    need = table_sensitivity(neighbours)
    tol = 1e-12
    if isinstance(mechanism, (GaussianMechanism, DiscreteGaussianMechanism)):
        checks = [("sensitivity (ℓ2)", mechanism.sensitivity, need["l2"])]
    elif isinstance(mechanism, (LaplaceMechanism, DiscreteLaplaceMechanism)):
        checks = [("sensitivity (ℓ1)", mechanism.sensitivity, need["l1"])]
    elif isinstance(mechanism, DirichletMechanism):
        checks = [
            ("l2_sensitivity", float(np.min(mechanism.l2_sensitivity)), need["l2"]),
            ("linf_sensitivity", float(np.min(mechanism.linf_sensitivity)), need["linf"]),
        ]
    else:
        raise TypeError(
            "mechanism must be a DiscreteGaussianMechanism, DiscreteLaplaceMechanism, "
            "GaussianMechanism, LaplaceMechanism or DirichletMechanism for a count table, got "
            f"{type(mechanism).__name__}"
        )
    for what, have, want in checks:
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


def _entry_dict(entry: Any) -> dict[str, Any]:
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
    """A published noisy count table and its provenance.

    Never re-noised: building a model from a release (or from its JSON) only reads ``values``.

    Attributes
    ----------
    values : numpy.ndarray
        The released values, float64, shape (K,) or (rows, K) (read-only).
    mechanism : Mechanism
        The mechanism that produced them (Gaussian or Laplace).
    tag : str
        The label of the release in the ledger.
    neighbours : {"replace-one", "add-remove"}
        The neighbouring relation the mechanism was calibrated for.
    entry : dict
        The accountant's ledger entry (``LedgerEntry.to_dict()``; empty if unknown).
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

    def __post_init__(self) -> None:
        vals = np.array(self.values, dtype=np.float64)
        if vals.ndim not in (1, 2) or vals.size == 0:
            raise ValueError(f"values must have shape (K,) or (rows, K), got {vals.shape}")
        if not np.isfinite(vals).all():
            raise ValueError("values must be finite (no NaN or infinity)")
        vals.flags.writeable = False
        object.__setattr__(self, "values", vals)
        if not isinstance(self.mechanism, Mechanism):
            raise TypeError(f"mechanism must be a Mechanism, got {type(self.mechanism).__name__}")
        check_neighbours(self.neighbours)
        if not isinstance(self.tag, str):
            raise TypeError(f"tag must be a string, got {type(self.tag).__name__}")
        object.__setattr__(self, "entry", dict(self.entry))

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
            "entry": self.entry,
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
            entry=d.get("entry") or {},
            clamped=bool(d.get("clamped", False)),
            rounded=bool(d.get("rounded", False)),
            normalised=bool(d.get("normalised", False)),
            total=d.get("total"),
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
    counts = check_count_table(statistic)
    if isinstance(mechanism, (GaussianMechanism, LaplaceMechanism)):
        alt = (
            "DiscreteGaussianMechanism"
            if isinstance(mechanism, GaussianMechanism)
            else ("DiscreteLaplaceMechanism")
        )
        raise TypeError(
            f"mechanism {type(mechanism).__name__} adds floating-point noise, which leaks integer "
            f"counts through its low-order bits (Mironov 2012); release count tables with "
            f"pmr.{alt} (same parameters and calibrate()). The continuous mechanisms are for "
            "non-integer statistics"
        )
    if not isinstance(mechanism, (DiscreteGaussianMechanism, DiscreteLaplaceMechanism)):
        raise TypeError(
            "mechanism must be a DiscreteGaussianMechanism or DiscreteLaplaceMechanism (integer "
            "noise on counts); the Dirichlet mechanism releases through DirichletRelease and "
            f"release(), got {type(mechanism).__name__}"
        )
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
    # Charge first: a refusal raises here, before any noise exists.
    entry = accountant.spend(mechanism, count=1, tag=tag, group=group, partition=partition)
    if total is not None:
        accountant.declare(
            "public_total",
            f"release {tag!r}: its total {total:g} was declared public by the caller",
            outside_guarantee=False,
        )
    declare_unsafe_noise(accountant, source, f"release {tag!r}")
    values = np.asarray(mechanism.release(counts.astype(np.int64), source), dtype=np.float64)
    return Release(
        values=values,
        mechanism=mechanism,
        tag=tag,
        neighbours=neighbours,
        entry=_entry_dict(entry),
        clamped=False,
        rounded=False,
        total=total,
    )
