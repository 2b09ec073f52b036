"""The readable report of an accountant's ledger: one row per release, then the totals.

Per entry its ε at the budget's δ (or a given δ; 1e-6 without a budget), converted by
:func:`pymc_rdp.privacy.rdp.to_dp`, or its RDP ε at the budget's order. Entries of a parallel
group do not add up: their group contributes the order-wise maximum over partitions. The totals
name the bound the composed ε is by (:mod:`pymc_rdp.privacy.tight_accounting`), the budget and
what is left of it, the declarations, caller-supplied curves, how a loaded ledger was verified,
and the digest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from pymc_rdp._validation import check_count
from pymc_rdp.privacy import rdp as _rdp
from pymc_rdp.privacy.ledger_codec import REPORT_DELTA
from pymc_rdp.privacy.mechanisms.base import CustomCurve
from pymc_rdp.privacy.spending import check_delta

if TYPE_CHECKING:
    from pymc_rdp.privacy.accountant import Accountant

__all__ = ["ledger_report"]

_MAX_WIDTH = 48  # widest column, in characters


def ledger_report(acc: Accountant, delta: float | None = None, max_rows: int = 50) -> str:
    """The report of :meth:`Accountant.report`."""
    max_rows = check_count(max_rows, "max_rows")
    orders = acc.orders
    budget = acc._budget
    at_order = budget is not None and budget.kind == "rdp" and delta is None
    if at_order:
        col = f"ε(λ={budget.order:g})"
        idx = budget.index

        def loss(c: np.ndarray) -> float:
            return float(c[idx])

    else:
        own = budget.delta if budget is not None and budget.kind == "dp" else None
        d = check_delta(delta) if delta is not None else (own or REPORT_DELTA)
        col = f"ε(δ={d:g})"

        def loss(c: np.ndarray) -> float:
            return float(_rdp.to_dp(orders, c, d)[0])

    entries = acc._entries
    head = ["#", "tag", "mechanism", "parameters", "count", "group/partition", col]
    rows = []
    for e in entries[:max_rows]:
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
    widths = [min(w, _MAX_WIDTH) for w in widths]

    def fmt(r: list[str]) -> str:
        return "  ".join(
            (c if len(c) <= widths[j] else c[: widths[j] - 1] + "…").ljust(widths[j])
            for j, c in enumerate(r)
        ).rstrip()

    lines = [fmt(head), fmt(["-" * w for w in widths])]
    lines += [fmt(r) for r in rows]
    if len(entries) > max_rows:
        lines.append(f"... {len(entries) - max_rows} more entries")
    lines.append("")
    lines.append(
        f"entries: {len(entries)}   orders: {orders.size} ({orders[0]:g} .. {orders[-1]:g})"
    )
    if at_order:
        lines.append(f"composed: {col} = {loss(acc._curve.total):.6g}")
    else:
        t = acc.accounting(d)
        lines.append(
            f"composed: {col} = {t.epsilon:.6g} by the {t.method} bound"
            + ("" if t.method == "rdp" else f" (RDP conversion: {t.candidates['rdp']:.6g})")
        )
        lines.extend(f"  note: {n}" for n in t.notes)
    if budget is not None and budget.kind == "dp":
        lines.append(
            f"budget: (ε, δ) = ({budget.epsilon:g}, {budget.delta:g})"
            f"   remaining ε = {acc.remaining():.6g}"
        )
    if budget is not None and budget.kind == "rdp":
        lines.append(
            f"budget: ε = {budget.epsilon:g} at order {budget.order:g}"
            f"   remaining = {acc.remaining():.6g}"
        )
    partitions = acc._curve.partitions
    if partitions:
        lines.append(
            "parallel groups (order-wise max over partitions): "
            + ", ".join(f"{g} ({len(p)} partitions)" for g, p in partitions.items())
        )
    for d in acc._declarations:
        title = "OUTSIDE THE GUARANTEE" if d["outside_guarantee"] else "declared public"
        lines.append(f"{title} ({d['kind']}): {d['detail']}")
    custom = [i for i, r in enumerate(entries.rows()) if r[0] == CustomCurve.name]
    if custom:
        shown = ", ".join(map(str, custom[:10])) + (" ..." if len(custom) > 10 else "")
        lines.append(
            f"caller-supplied curves (custom_curve) at entries {shown}: not derived from a "
            "mechanism here; the guarantee is only as good as the analysis behind them"
        )
    v = acc._verification
    if v is not None:
        how = "hash chain verified" if v["chained"] else "version-1 ledger: no hash chain"
        how += ", matches the expected digest" if v["digest_checked"] else ""
        lines.append(
            f"loaded ledger: curves recomputed from the mechanisms; {how}; "
            f"signature {v['signature']}"
        )
    lines.append(f"ledger digest (sha256 chain): {acc.digest()}")
    return "\n".join(lines)


def _short(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, list):
        return f"[{len(v)} values]" if len(v) > 3 else "[" + ", ".join(_short(x) for x in v) + "]"
    return repr(v) if isinstance(v, str) else str(v)
