"""The ledger file: exact JSON, the SHA-256 hash chain, the HMAC signature, checked loading.

The ledger is tamper-evident. Its digest is a hash chain: it starts from the orders and the
budget, each entry extends it, link_i = SHA-256(link_{i−1} ‖ canonical JSON of entry i), and
the digest is SHA-256(link_n ‖ canonical JSON of the declarations and closed groups). Every field
of an entry is covered but its curve, which is a function of the mechanism, its parameters, the
count and the orders (all covered) and is recomputed on load. With a key the file also carries
HMAC-SHA256 of the digest (RFC 2104), which only a holder of the key can produce.

Loading (:func:`accountant_from_json`) recomputes every entry's curve from its mechanism and
refuses edited, negative or NaN curves, a broken chain, a digest other than an expected one, or a
signature that does not verify.

Format (``"format": "pymc-rdp-ledger"``): version 2 carries the chain, the closed groups and the
optional signature; version 1 (no chain) still loads. ``docs/ledger.schema.json`` is its JSON
Schema.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from pymc_rdp.privacy.ledger import LedgerEntry, check_key
from pymc_rdp.privacy.mechanisms.base import CustomCurve, mechanism_from_dict

if TYPE_CHECKING:
    from pymc_rdp.privacy.accountant import Accountant

__all__ = ["FORMAT", "VERSION", "accountant_from_json", "accountant_to_json", "canonical"]

FORMAT = "pymc-rdp-ledger"
VERSION = 2  # 2: hash chain, closed groups, optional signature; version 1 still loads
READABLE_VERSIONS = (1, 2)
CHAIN_DOMAIN = b"pymc-rdp-ledger-chain/1\n"
_SIGNATURE_DOMAIN = b"pymc-rdp-ledger-signature/1\n"
# Relative tolerance between a stored curve and the one recomputed from its mechanism on load.
# Honest curves differ only by rounding: the vectorised batch formulas differ from the scalar
# ones by a few ulps (measured <= 1.1e-15 relative), and special functions (log-gamma,
# trigamma, log1p) may differ by ~1e-13 between library versions and platforms. 1e-9 leaves
# four orders of magnitude of margin over that and is far below any privacy-relevant change.
CURVE_RTOL = 1e-9
CURVE_ATOL = 1e-15  # a stored value within 1e-15 of an exact 0 (ε-loss nobody can exploit)
REPORT_DELTA = 1e-6  # the δ of the ε written to a ledger without an (ε, δ) budget

# the fields of a stored entry: those of LedgerEntry but its position (a field added to
# LedgerEntry must also be restored on load, or the reloaded chain no longer matches)
_STORED_FIELDS = tuple(f.name for f in dataclasses.fields(LedgerEntry) if f.name != "index")


# --------------------------------------------------------------------------------------------
# JSON encoding: exact floats (repr round-trips), tagged non-finite floats and tuples


def encode(x: Any) -> Any:
    """A ledger value as strict JSON data (non-finite floats and tuples tagged)."""
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
        return {"__tuple__": [encode(v) for v in x]}
    if isinstance(x, (list, np.ndarray)):
        return [encode(v) for v in (x.tolist() if isinstance(x, np.ndarray) else x)]
    if isinstance(x, dict):
        return {str(k): encode(v) for k, v in x.items()}
    raise TypeError(f"cannot encode {type(x)!r} in a ledger")


def decode(x: Any) -> Any:
    """The inverse of :func:`encode`."""
    if isinstance(x, list):
        return [decode(v) for v in x]
    if isinstance(x, dict):
        if set(x) == {"__float__"}:
            return float(x["__float__"])
        if set(x) == {"__tuple__"}:
            return tuple(decode(v) for v in x["__tuple__"])
        return {k: decode(v) for k, v in x.items()}
    return x


def canonical(x: Any) -> bytes:
    """Canonical JSON bytes of a ledger value: sorted keys, no spaces, exact floats, UTF-8."""
    return json.dumps(
        encode(x), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


# --------------------------------------------------------------------------------------------
# the hash chain and the signature


def chain_link(acc: Accountant) -> bytes:
    """The hash-chain link after the last entry, extended from the accountant's cached prefix."""
    if acc._chain is None:
        head = {"orders": acc._orders, "budget": acc._budget_doc()}
        acc._chain = (0, hashlib.sha256(CHAIN_DOMAIN + canonical(head)).digest())
    done, link = acc._chain
    entries = acc._entries
    if done < len(entries):
        sha = hashlib.sha256
        for e in entries[done:]:
            link = sha(link + canonical(e.to_dict(curve=False))).digest()
        acc._chain = (len(entries), link)
    return link


def digest(acc: Accountant) -> str:
    """The SHA-256 hash chain over the whole ledger, 64 hexadecimal digits (module notes)."""
    tail = {"closed_groups": list(acc._groups.closed), "declarations": acc._declarations}
    return hashlib.sha256(chain_link(acc) + canonical(tail)).hexdigest()


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


def _sign(key: bytes, digest_hex: str) -> str:
    return hmac.new(key, _SIGNATURE_DOMAIN + digest_hex.encode("ascii"), hashlib.sha256).hexdigest()


# --------------------------------------------------------------------------------------------
# writing


def accountant_to_json(acc: Accountant, key: bytes | str | None = None) -> str:
    """The ledger file of ``acc`` (see :meth:`Accountant.to_json`)."""
    d = digest(acc)
    doc: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "orders": acc._orders,
        "budget": acc._budget_doc(),
        "entries": [e.to_dict() for e in acc._entries],
        "declarations": acc._declarations,
        "closed_groups": list(acc._groups.closed),
        "chain": {"algorithm": "sha256", "digest": d},
    }
    # which bound the ε of the ledger is by (informational; not read back)
    budget = acc.budget
    doc["accounting"] = acc.accounting(budget[1] if budget else REPORT_DELTA).to_dict()
    if key is not None:
        doc["signature"] = {"algorithm": "hmac-sha256", "value": _sign(_check_key_bytes(key), d)}
    return json.dumps(encode(doc), allow_nan=False, ensure_ascii=False, separators=(",", ":"))


# --------------------------------------------------------------------------------------------
# reading


def accountant_from_json(
    cls: type[Accountant],
    s: str | bytes,
    *,
    expected_digest: str | None = None,
    key: bytes | str | None = None,
) -> Accountant:
    """Rebuild and verify an accountant (:meth:`Accountant.from_json`).

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
    accepted when non-negative, and flagged in :meth:`Accountant.report` (nothing can check the
    analysis behind them).

    A version-2 ledger carries its hash chain: the digest recomputed from the entries,
    declarations, budget and orders must equal the stored one (an entry dropped, reordered
    or edited without recomputing the chain is refused). Since anyone can recompute an
    unkeyed chain, pass ``expected_digest`` (the digest published with the results) or
    ``key`` (the signature key) to detect a consistent rewrite too. Version-1 ledgers
    (no chain) are loaded with their curves recomputed and are reported as unchained and
    unsigned; ``expected_digest`` applies to them as well.

    No budget check is repeated.
    """
    if not isinstance(s, (str, bytes)):
        raise TypeError(f"s must be a JSON string, got {type(s)!r}")
    if expected_digest is not None:
        expected_digest = _check_digest(expected_digest)
    key_bytes = None if key is None else _check_key_bytes(key)
    try:
        doc = decode(json.loads(s))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"s is not valid JSON: {exc}") from exc
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError("s is not a pymc-rdp ledger")
    version = doc.get("version")
    if version not in READABLE_VERSIONS or isinstance(version, bool):
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
        acc._restore(
            fields["tag"],
            fields["mechanism"],
            fields["params"],
            fields["count"],
            fields["group"],
            fields["partition"],
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

    found = digest(acc)
    chained = version >= 2
    if chained:
        chain = doc.get("chain")
        if not isinstance(chain, dict) or chain.get("algorithm") != "sha256":
            raise ValueError("a version-2 ledger must carry its sha256 hash chain")
        stored = chain.get("digest")
        if not isinstance(stored, str) or not hmac.compare_digest(stored, found):
            raise ValueError(
                "the ledger does not match its own hash chain: an entry, the budget, the "
                "orders or a declaration was edited, dropped, added or reordered"
            )
    if expected_digest is not None and not hmac.compare_digest(expected_digest, found):
        raise ValueError(
            f"the ledger's digest {found} differs from the expected {expected_digest}: "
            "it is not the published ledger (an entry was edited, dropped, added or "
            "reordered)"
        )
    signature = doc.get("signature")
    if key_bytes is not None:
        if not isinstance(signature, dict) or signature.get("algorithm") != "hmac-sha256":
            raise ValueError("the ledger carries no hmac-sha256 signature to verify")
        value = signature.get("value")
        if not isinstance(value, str) or not hmac.compare_digest(value, _sign(key_bytes, found)):
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
        group = check_key(e["group"], "group")
        partition = check_key(e["partition"], "partition")
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
    close = np.ones(orders.shape, dtype=bool)
    close[fin] = np.abs(stored[fin] - expected[fin]) <= CURVE_RTOL * expected[fin] + CURVE_ATOL
    bad = (inf_s != inf_e) | ~close
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"ledger entry {i} ({fields['mechanism']}, count {fields['count']}): its stored "
            f"curve is {float(stored[j])!r} at order {orders[j]:g} where its mechanism gives "
            f"{float(expected[j])!r}; the ledger was edited (stored curves must equal the "
            f"recomputed ones to {CURVE_RTOL:g} relative)"
        )
    stored.flags.writeable = False
    return stored
