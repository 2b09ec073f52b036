"""The privacy accountant: a ledger of releases, their composed RDP curve and a budget.

The accountant records every release (:class:`~pymc_rdp.privacy.ledger.LedgerEntry`), keeps
the composed curve on its orders (:mod:`pymc_rdp.privacy.composition`: sequential composition
adds curves, Mironov 2017, Proposition 1; partitions of one parallel group contribute their
order-wise maximum) and refuses a spend that would exceed its budget
(:mod:`pymc_rdp.privacy.spending`), all or nothing: a refused spend leaves the accountant exactly
as it was. A spend costs a few array operations on the orders, whatever the length of the
ledger; single sequential spends of the Gaussian and Laplace mechanisms cost none: their curves
are held back and evaluated together when the composed curve or their entry's curve is first
read (:mod:`pymc_rdp.privacy.deferred_curves`; the same floats and the same budget decisions).
Conversion to (ε, δ)-DP uses :func:`pymc_rdp.privacy.rdp.to_dp` (Balle et al. 2020,
Theorem 21), or the tightest valid bound of :mod:`pymc_rdp.privacy.tight_accounting`.

A group holds the partitions of *one* release; its keys are handed out and closed by
:class:`~pymc_rdp.privacy.parallel_groups.ParallelGroups` (``acc.new_group``, ``acc.parallel``).

An accountant is a shared handle on one budget: ``copy.copy``/``copy.deepcopy`` (and so
scikit-learn's ``clone``) return the same accountant; :meth:`Accountant.fork` gives an
independent copy.

The ledger is tamper-evident (:mod:`pymc_rdp.privacy.ledger_codec`): :meth:`Accountant.digest`
is a SHA-256 hash chain over the orders, the budget, every entry and the declarations;
:meth:`Accountant.to_json` stores it (and, with a key, an HMAC-SHA256 signature), and
:meth:`Accountant.from_json` recomputes every entry's curve from its mechanism and refuses
edited, negative or NaN curves, a broken chain, a digest other than an expected one, or a
signature that does not verify. :meth:`Accountant.report` is the readable table
(:mod:`pymc_rdp.privacy.ledger_report`).

A budget is either an (ε, δ)-DP pair, met when ``to_dp(orders, curve, δ) <= ε``, or an RDP budget
ε at one order λ (:meth:`Accountant.at_order`), met when ``curve(λ) <= ε``. A spend that would
exceed it raises :class:`BudgetExceededError` and leaves the accountant exactly as it was.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import chain
from typing import Any

import numpy as np

from pymc_rdp._validation import check_count, check_orders
from pymc_rdp.privacy import ledger_codec
from pymc_rdp.privacy import rdp as _rdp
from pymc_rdp.privacy.composition import ComposedCurve, recompose
from pymc_rdp.privacy.declarations import Declarations
from pymc_rdp.privacy.deferred_curves import DEFERRED_CLASSES, DeferredCurves
from pymc_rdp.privacy.entry_curves import CurveCache, batch_curves
from pymc_rdp.privacy.ledger import (
    BatchEntries,
    GroupKeys,
    Ledger,
    LedgerEntry,
    check_batch,
    check_mechanism,
    check_tag,
    new_entry,
)
from pymc_rdp.privacy.ledger_report import ledger_report
from pymc_rdp.privacy.mechanisms.base import Mechanism, mechanism_from_dict, trust_orders
from pymc_rdp.privacy.parallel_groups import ParallelGroups
from pymc_rdp.privacy.spending import Budget, check_delta, check_epsilon, scalar

__all__ = ["Accountant", "BudgetExceededError", "LedgerEntry"]


class BudgetExceededError(ValueError):
    """A spend would exceed the accountant's privacy budget; nothing was recorded."""


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


class Accountant(ParallelGroups, Declarations):
    """Composes the RDP curves of recorded releases and enforces an optional budget.

    Parameters
    ----------
    budget : None or (epsilon, delta)
        No budget, or an (ε, δ)-DP budget (ε > 0, 0 < δ < 1): a spend is allowed while
        ``rdp.to_dp(orders, composed_curve, δ) <= ε`` (or the tightest valid bound of the
        ledger meets ε). For an RDP budget at one order use :meth:`at_order`.
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
        self._budget: Budget | None = None if budget is None else Budget.dp(budget, self._orders)
        self._reset_state()

    @classmethod
    def at_order(cls, epsilon: float, order: float, orders: Any = None) -> Accountant:
        """An accountant with an RDP budget: the composed curve at ``order`` must stay <= ε.

        ``order`` is added to ``orders`` when it is not among them.
        """
        eps = check_epsilon(epsilon)
        lam = scalar(order, "order", allow_inf=True)
        if not lam > 1:
            raise ValueError(f"order must be > 1, got {lam!r}")
        base = _prepare_orders(orders)
        acc = cls(None, np.append(base, lam) if lam not in base else base)
        acc._budget = Budget("rdp", eps, acc._orders, order=lam)
        return acc

    # ---------------------------------------------------------------- state

    def _reset_state(self) -> None:
        self._composed = ComposedCurve(self._orders.size)
        self._deferred = DeferredCurves(self._orders, self._composed)
        self._entries = Ledger()
        self._curves = CurveCache(self._orders)
        self._declarations: list[dict[str, Any]] = []
        self._groups = GroupKeys()
        self._chain: tuple[int, bytes] | None = None  # (entries hashed, link after them)
        self._verification: dict[str, Any] | None = None  # how a loaded ledger was checked
        self._accounting_cache: tuple | None = None

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
        new._composed = self._curve.copy()
        new._deferred = DeferredCurves(new._orders, new._composed)
        new._entries = self._entries.copy()
        new._curves = self._curves.copy()
        new._declarations = [dict(d) for d in self._declarations]
        new._groups = self._groups.copy()
        new._verification = None if self._verification is None else dict(self._verification)
        return new

    def __getstate__(self) -> dict[str, Any]:
        self._deferred.flush()  # a pickle holds evaluated curves only
        return self.__dict__

    @property
    def _curve(self) -> ComposedCurve:
        """The composed curve, with every held-back curve added (:mod:`deferred_curves`)."""
        self._deferred.flush()
        return self._composed

    @property
    def orders(self) -> np.ndarray:
        """The orders on which curves are kept (read-only)."""
        return self._orders

    @property
    def budget(self) -> tuple[float, float] | None:
        """(ε, δ) for an (ε, δ) budget, None otherwise (see :attr:`budget_order`)."""
        b = self._budget
        return (b.epsilon, b.delta) if b is not None and b.kind == "dp" else None

    @property
    def budget_order(self) -> tuple[float, float] | None:
        """(ε, λ) for an RDP budget at one order, None otherwise."""
        b = self._budget
        return (b.epsilon, b.order) if b is not None and b.kind == "rdp" else None

    @property
    def ledger(self) -> list[LedgerEntry]:
        """The recorded entries, oldest first (a copy of the list)."""
        return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def _admits(self, total: np.ndarray, pending: Any) -> bool:
        """Whether ``total`` meets the budget; ``pending()`` gives the rows being planned."""
        if self._budget is None:
            return True
        return self._budget.admits(total, lambda: chain(self._entries.rows(), pending()))

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
        # the checks of check_mechanism, check_count and check_tag, with the common cases first
        # (isinstance on an ABC costs about 0.2 µs, a tenth of a held-back spend)
        deferred = mechanism.__class__ in DEFERRED_CLASSES
        if not deferred and not isinstance(mechanism, Mechanism):
            check_mechanism(mechanism)
        if count.__class__ is not int or count < 1:
            count = check_count(count, "count")
        if tag is not None and tag.__class__ is not str:
            tag = check_tag(tag)
        if group is not None or partition is not None:
            group, partition = self._check_group_partition(group, partition)
        elif deferred:
            entry = self._deferred.spend(mechanism, count, tag, self._entries, self._budget)
            if entry is not None:
                return entry
        params = mechanism.params()
        curve = self._curves.curve(mechanism, count, params)
        plan = self._curve.plan(curve, group, partition)
        b = self._budget
        if b is not None:
            total = plan[-1]
            # the first, one-order test of Budget.admits inline (the common case: within budget)
            j = b.index
            if not (b.kind == "dp" and total[j] + b.offset[j] <= b.epsilon) and not self._admits(
                total, lambda: [(mechanism.name, params, count, group, partition)]
            ):
                raise BudgetExceededError(b.overspend_message(total, f"spending {mechanism!r}"))
        self._curve.commit(plan)
        if group is not None:
            self._groups.used.add(group)
        entries = self._entries
        entry = new_entry(tag, mechanism.name, params, count, group, partition, curve, len(entries))
        entries.append(entry)
        return entry

    def can_spend(
        self, mechanism: Mechanism, count: int = 1, group: Any = None, partition: Any = None
    ) -> bool:
        """Whether :meth:`spend` with these arguments would stay within the budget."""
        mechanism = check_mechanism(mechanism)
        count = check_count(count, "count")
        group, partition = self._check_group_partition(group, partition)
        plan = self._curve.plan(self._curves.curve(mechanism, count), group, partition)
        return self._admits(
            plan[-1], lambda: [(mechanism.name, mechanism.params(), count, group, partition)]
        )

    def spend_batch(
        self,
        mechanisms: Sequence[Mechanism],
        count: int | Sequence[int] = 1,
        tags: Sequence[str | None] | None = None,
        group: Any = None,
        partitions: Sequence[Any] | None = None,
    ) -> BatchEntries | list[LedgerEntry]:
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
        BatchEntries
            The new entries, a read-only sequence that behaves as a list of
            :class:`LedgerEntry` (each built when first read; ``[]`` for an empty batch).

        Raises
        ------
        BudgetExceededError
            If the batch as a whole would exceed the budget; nothing is recorded.
        """
        mechs, counts, tag_list, group, part_list = check_batch(
            mechanisms, count, tags, group, partitions
        )
        if group is not None:
            self._groups.check_open(group)
        n = len(mechs)
        if n == 0:
            return []
        # the curves in rows 1.. of one buffer (row 0: scratch for the running sum)
        buf = batch_curves(mechs, counts, self._orders)
        curves = buf[1:]
        params = [m.params() for m in mechs]
        plan = self._curve.plan_batch(buf, group, None if partitions is None else part_list)
        if self._budget is not None and not self._admits(
            plan[-1],
            lambda: [
                (m.name, p, c, group, q)
                for m, p, c, q in zip(mechs, params, counts, part_list, strict=True)
            ],
        ):
            raise BudgetExceededError(
                self._budget.overspend_message(plan[-1], f"spending a batch of {n} mechanisms")
            )
        self._curve.commit(plan)
        if group is not None:
            self._groups.used.add(group)
        buf.flags.writeable = False
        curves.flags.writeable = False  # a view made before: it keeps its own flag
        return self._entries.append_batch(
            tag_list, [m.name for m in mechs], params, counts, group, part_list, curves
        )

    def _restore(
        self,
        tag: str | None,
        mechanism: str,
        params: dict[str, Any],
        count: int,
        group: Any,
        partition: Any,
        curve: np.ndarray,
    ) -> None:
        """Append a verified entry read from a ledger file (no budget check)."""
        self._curve.commit(self._curve.plan(curve, group, partition))
        if group is not None:
            self._groups.used.add(group)
        entries = self._entries
        entries.append(
            new_entry(tag, mechanism, params, count, group, partition, curve, len(entries))
        )

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
            return self._curve.total.copy()
        o = check_orders(orders, "orders")
        flat = o.ravel()
        pos = np.clip(np.searchsorted(self._orders, flat), 0, self._orders.size - 1)
        if np.array_equal(self._orders[pos], flat):
            return self._curve.total[pos].reshape(o.shape)
        return self._recompose(flat).reshape(o.shape)

    def _recompose(self, orders: np.ndarray) -> np.ndarray:
        items = []
        for e in self._entries:
            try:
                mech = mechanism_from_dict(e.mechanism_dict())
            except (TypeError, ValueError) as exc:
                raise ValueError(
                    f"ledger entry {e.index} (mechanism {e.mechanism!r}) cannot be re-evaluated "
                    "at new orders; ask for orders among Accountant.orders"
                ) from exc
            curve = np.asarray(mech.rdp(orders), dtype=np.float64) * e.count
            items.append((curve, e.group, e.partition))
        return recompose(items, orders.size)

    def _resolve_delta(self, delta: Any) -> float:
        if delta is None:
            if self._budget is not None and self._budget.kind == "dp":
                return self._budget.delta
            raise ValueError("delta is required (the accountant has no (ε, δ) budget)")
        return check_delta(delta)

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
        from pymc_rdp.privacy.tight_accounting import METHODS, TightEpsilon, ledger_epsilon

        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        d = self._resolve_delta(delta)
        rdp_eps = float(_rdp.to_dp(self._orders, self._curve.total, d)[0])
        if method == "rdp":
            return TightEpsilon(rdp_eps, "rdp", d, {"rdp": rdp_eps})
        key = (len(self._entries), d, method, rdp_eps)
        cached = self._accounting_cache
        if cached is not None and cached[0] == key:
            return cached[1]
        out = ledger_epsilon(self._entries.rows(), rdp_eps, d, method)
        self._accounting_cache = (key, out)
        return out

    def to_dp_events(self) -> Any:
        """The ledger as one dp-accounting ``ComposedDpEvent`` (see
        :mod:`pymc_rdp.privacy.dp_events`)."""
        from pymc_rdp.privacy.dp_events import ledger_to_dp_events

        return ledger_to_dp_events(self._entries.rows())

    def epsilon_and_order(self, delta: float | None = None) -> tuple[float, float]:
        """(ε, best order) at ``delta`` (default: the budget's δ)."""
        eps, order = _rdp.to_dp(self._orders, self._curve.total, self._resolve_delta(delta))
        return float(eps), float(order)

    def delta(self, epsilon: float) -> float:
        """The smallest δ for which the composed curve gives (ε, δ)-DP (:func:`rdp.to_delta`)."""
        return float(_rdp.to_delta(self._orders, self._curve.total, check_epsilon(epsilon))[0])

    def remaining(self, delta: float | None = None) -> float:
        """What is left of the budget (never negative).

        For an (ε, δ) budget: ε_budget − ε(δ_budget) (``delta``, if given, must be the budget's
        δ). For an RDP budget at order λ: ε_budget − ε(λ) (``delta`` must be None). Without a
        budget: ``inf``.
        """
        b = self._budget
        if b is not None and b.kind == "dp":
            d = self._resolve_delta(delta)
            if d != b.delta:
                raise ValueError(f"delta must be the budget's δ = {b.delta!r}, got {d!r}")
            return max(0.0, b.epsilon - self.epsilon(d))
        if delta is not None:
            raise ValueError("delta must be None: the budget is RDP at one order, or absent")
        if b is not None:
            return max(0.0, b.epsilon - float(self._curve.total[b.index]))
        return math.inf

    # ---------------------------------------------------------------- presentation

    def report(self, delta: float | None = None, max_rows: int = 50) -> str:
        """A readable table of the ledger with each entry's privacy loss and the totals.

        Per entry: its ε at the budget's δ (or ``delta``; default 1e-6 without a budget), or its
        RDP ε at the budget's order. Entries of a parallel group do not add up: their group
        contributes the order-wise maximum over partitions (see
        :mod:`pymc_rdp.privacy.ledger_report`).
        """
        return ledger_report(self, delta, max_rows)

    def __repr__(self) -> str:
        b = self._budget
        if b is None:
            text = "budget=None"
        elif b.kind == "dp":
            text = f"budget=({b.epsilon!r}, {b.delta!r})"
        else:
            text = f"budget=ε {b.epsilon!r} at order {b.order!r}"
        return f"<Accountant {text}, {len(self._entries)} entries, {self._orders.size} orders>"

    # ---------------------------------------------------------------- serialisation

    def _budget_doc(self) -> dict[str, Any] | None:
        return None if self._budget is None else self._budget.to_doc()

    def digest(self) -> str:
        """The SHA-256 hash chain over the whole ledger, as 64 hexadecimal digits.

        Every field of every entry but its curve (a function of the mechanism, its parameters,
        the count and the orders, all covered, recomputed on load), the orders, the budget, the
        declarations and the closed groups are covered (:mod:`pymc_rdp.privacy.ledger_codec`).
        Publish the digest with the results: a ledger that lost, gained, reordered or changed an
        entry no longer matches it (``Accountant.from_json(s, expected_digest=...)``).

        The chain is computed at the first call and extended incrementally (spends do not
        hash anything).
        """
        return ledger_codec.digest(self)

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
        return ledger_codec.accountant_to_json(self, key)

    @classmethod
    def from_json(
        cls,
        s: str | bytes,
        *,
        expected_digest: str | None = None,
        key: bytes | str | None = None,
    ) -> Accountant:
        """Rebuild an accountant from :meth:`to_json`, verifying what it can.

        Every entry's curve is recomputed from its mechanism and compared with the stored one
        (to 1e-9 relative: rounding only; within it the stored curve is kept, so the rebuilt
        accountant composes exactly as the one that wrote the ledger); a version-2 ledger must
        match its own hash chain; ``expected_digest`` and ``key`` also detect a consistent
        rewrite. Custom curves are accepted when non-negative and flagged in :meth:`report`.
        Details: :func:`pymc_rdp.privacy.ledger_codec.accountant_from_json`.

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
        return ledger_codec.accountant_from_json(cls, s, expected_digest=expected_digest, key=key)

    @property
    def verification(self) -> dict[str, Any] | None:
        """How a loaded ledger was checked (None for an accountant not read by from_json).

        Keys: ``version`` (of the file), ``chained`` (it carried a hash chain that matched),
        ``digest_checked`` (an ``expected_digest`` matched), ``signature`` ("verified",
        "not checked (no key)" or "absent"), ``custom_entries`` (indices of caller-supplied
        curves).
        """
        return None if self._verification is None else dict(self._verification)
