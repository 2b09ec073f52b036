"""Plan, charge, draw: the one function that draws privacy noise from raw data.

Every release of the package — a noisy count table (:func:`~pymc_rdp.curation.release.privatize`),
the family tables of :class:`~pymc_rdp.BayesianNetwork` and :class:`~pymc_rdp.NaiveBayes`, the
exact draws of the Dirichlet mechanism (:func:`~pymc_rdp.release_dirichlet`), private quantiles
(:func:`~pymc_rdp.private_quantiles`) — is written as a *plan*: a list of
:class:`PlannedRelease` items, each a mechanism, the exact statistic it privatises, a ledger tag
and its parallel-composition identity (group, partitions). :func:`release_plan` then

1. charges the whole plan to the accountant, all or nothing, before anything is drawn: the
   items' ledger entries are recorded with :meth:`Accountant.spend_batch
   <pymc_rdp.privacy.accountant.Accountant.spend_batch>`, whose budget check is made once on
   the composed result (sequential composition, Mironov 2017, "Rényi Differential Privacy",
   Proposition 1; partitions of one group by the order-wise maximum, parallel composition). A
   refused plan raises :class:`~pymc_rdp.BudgetExceededError` with the ledger unchanged and no
   noise drawn;
2. records the plan's declarations (a public total, reproducible non-private noise);
3. draws the noise, item by item, from the one
   :class:`~pymc_rdp.privacy.mechanisms.noise.NoiseSource`, and returns one
   :class:`~pymc_rdp.curation.release.Release` per item.

A plan whose items span several groups is charged by one ``spend_batch`` per group; the batches
are first tried on :meth:`Accountant.fork <pymc_rdp.privacy.accountant.Accountant.fork>` (an
in-memory copy), so that a refusal of a later batch leaves the real ledger untouched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pymc_rdp.curation.release import NEIGHBOURS, Release, entry_dict
from pymc_rdp.privacy.accountant import Accountant, BudgetExceededError
from pymc_rdp.privacy.mechanisms import Mechanism
from pymc_rdp.privacy.mechanisms.noise import declare_unsafe_noise, resolve_noise_source

__all__ = ["PlannedRelease", "release_plan"]


@dataclass(frozen=True, eq=False)
class PlannedRelease:
    """One item of a release plan: what is drawn, from which statistic, and how it is charged.

    Attributes
    ----------
    mechanism : Mechanism
        Draws the release: ``mechanism.release(value, noise_source)``.
    value : Any
        The exact statistic (raw data). It never leaves the curator except through the draw.
    tag : str
        The release's label in the ledger.
    group : str, int or tuple, optional
        Parallel-composition group of the item's ledger entries (take a fresh key from
        :meth:`Accountant.new_group`).
    partitions : sequence, optional
        One ledger entry per partition (requires ``group``): the rows of a table that hold
        disjoint records, e.g. the classes of a naive-Bayes feature table. Default: one entry.
    draws : int
        Independent draws of the mechanism (each charged: ``count=draws``); with more than one
        the release's values carry a leading axis of length ``draws``.
    charged : Mechanism, optional
        The mechanism whose curve the ledger records, when it is not ``mechanism`` itself: a
        table of Dirichlet rows is drawn row by row and charged as one
        :class:`~pymc_rdp.DirichletTableMechanism`.
    neighbours : {"replace-one", "add-remove"}
        The neighbouring relation the mechanism was calibrated for (kept in the release).
    public_total : float, optional
        The statistic's total when the caller declared it public (kept in the release).
    """

    mechanism: Mechanism
    value: Any
    tag: str
    group: Any = None
    partitions: Sequence[Any] | None = None
    draws: int = 1
    charged: Mechanism | None = None
    neighbours: str = "replace-one"
    public_total: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.mechanism, Mechanism):
            raise TypeError(f"mechanism must be a Mechanism, got {type(self.mechanism).__name__}")
        if self.charged is not None and not isinstance(self.charged, Mechanism):
            raise TypeError(f"charged must be a Mechanism, got {type(self.charged).__name__}")
        if not isinstance(self.tag, str) or not self.tag:
            raise TypeError(f"tag must be a non-empty string, got {self.tag!r}")
        if isinstance(self.draws, (bool, np.bool_)) or not isinstance(
            self.draws, (int, np.integer)
        ):
            raise TypeError(f"draws must be a whole number >= 1, got {self.draws!r}")
        if self.draws < 1:
            raise ValueError(f"draws must be >= 1, got {self.draws}")
        if self.neighbours not in NEIGHBOURS:
            raise ValueError(f"neighbours must be one of {NEIGHBOURS}, got {self.neighbours!r}")
        if self.partitions is not None:
            if self.group is None:
                raise ValueError("partitions require a group")
            object.__setattr__(self, "partitions", tuple(self.partitions))
            if not self.partitions:
                raise ValueError("partitions must be None or non-empty")

    def charges(self) -> list[tuple[Mechanism, int, str, Any]]:
        """``(mechanism, count, tag, partition)`` of every ledger entry of this item."""
        mech = self.charged if self.charged is not None else self.mechanism
        parts = self.partitions if self.partitions is not None else (None,)
        return [(mech, int(self.draws), self.tag, p) for p in parts]

    def draw(self, source: Any) -> np.ndarray:
        """The released values: one draw, or ``draws`` draws stacked on a leading axis."""

        def one() -> np.ndarray:  # a scalar release (one quantile) as shape (1,)
            out = self.mechanism.release(self.value, source)
            return np.atleast_1d(np.asarray(out, dtype=np.float64))

        if self.draws == 1:
            return one()
        return np.stack([one() for _ in range(self.draws)])


def _batches(plan: list[PlannedRelease]) -> list[tuple[Any, list[int], list[tuple]]]:
    """The plan's ledger entries by group, in order of first appearance."""
    out: dict[Any, tuple[list[int], list[tuple]]] = {}
    for i, item in enumerate(plan):
        items, rows = out.setdefault(item.group, ([], []))
        for row in item.charges():
            items.append(i)
            rows.append(row)
    return [(g, items, rows) for g, (items, rows) in out.items()]


def _spend(acc: Accountant, group: Any, rows: list[tuple]) -> list[Any]:
    mechs, counts, tags, parts = (list(x) for x in zip(*rows, strict=True))
    partitions = None if all(p is None for p in parts) else parts
    return acc.spend_batch(mechs, count=counts, tags=tags, group=group, partitions=partitions)


def release_plan(
    plan: Sequence[PlannedRelease],
    accountant: Accountant,
    *,
    noise_source: Any = None,
    declarations: Sequence[tuple[str, str] | tuple[str, str, bool] | Any] = (),
    close_groups: bool = False,
    refusal: str = "the releases do not fit into the accountant's remaining budget",
) -> list[Release]:
    """Charge a whole plan of releases (all or nothing), then draw them.

    Parameters
    ----------
    plan : sequence of PlannedRelease
        At least one item.
    accountant : Accountant
        Charged with every item's ledger entries *before* any noise is drawn.
    noise_source : None or NoiseSource
        ``None`` (default): noise from the operating system's entropy.
        ``pmr.UnsafeNoiseSeed(k)``: reproducible, **not private**; an ``"unsafe_noise"``
        declaration (outside the guarantee) is recorded for every item. An int seed or a NumPy
        generator is refused (TypeError).
    declarations : sequence
        Declarations recorded after the charge and before any draw: ``(kind, detail)`` within
        the guarantee (e.g. ``("public_total", ...)``), ``(kind, detail, outside_guarantee)``, or
        a callable ``accountant -> None`` that declares (e.g. states read from the data).
    close_groups : bool
        Close the plan's groups once charged (:meth:`Accountant.close_group`): no later release
        may add partitions to them.
    refusal : str
        The start of the :class:`BudgetExceededError` message of a refused plan.

    Notes
    -----
    The ledger holds the plan's entries group by group (ungrouped items and each group in the
    order of their first item); the composed curve does not depend on that order.

    Returns
    -------
    list of Release
        One per item, in plan order, each with its first ledger entry.

    Raises
    ------
    BudgetExceededError
        The plan would exceed the budget: nothing was charged, declared or drawn.
    """
    items = list(plan)
    if not items:
        raise ValueError("plan must hold at least one PlannedRelease")
    for i, item in enumerate(items):
        if not isinstance(item, PlannedRelease):
            raise TypeError(f"plan[{i}] must be a PlannedRelease, got {type(item).__name__}")
    if not isinstance(accountant, Accountant):
        raise TypeError(f"accountant must be an Accountant, got {type(accountant).__name__}")
    source = resolve_noise_source(noise_source)
    batches = _batches(items)
    try:
        if len(batches) > 1:  # several groups: try every batch before recording any
            trial = accountant.fork()
            for group, _, rows in batches:
                _spend(trial, group, rows)
        entries: list[Any] = [None] * len(items)
        for group, owners, rows in batches:
            for i, entry in zip(owners, _spend(accountant, group, rows), strict=True):
                if entries[i] is None:
                    entries[i] = entry
    except BudgetExceededError as exc:
        raise BudgetExceededError(
            f"{refusal}; nothing was released (nothing was charged and nothing was drawn): {exc}"
        ) from exc
    if close_groups:
        for group, _, _ in batches:
            if group is not None:
                accountant.close_group(group)
    for declaration in declarations:
        if callable(declaration):
            declaration(accountant)
        else:
            kind, detail, *outside = declaration
            accountant.declare(kind, detail, outside_guarantee=bool(outside and outside[0]))
    for item in items:
        declare_unsafe_noise(accountant, source, f"release {item.tag!r}")
    return [
        Release(
            values=item.draw(source),
            mechanism=item.mechanism,
            tag=item.tag,
            neighbours=item.neighbours,
            entry=entry_dict(entry),
            total=item.public_total,
            group=item.group,
            partitions=item.partitions,
            draws=int(item.draws),
        )
        for item, entry in zip(items, entries, strict=True)
    ]
