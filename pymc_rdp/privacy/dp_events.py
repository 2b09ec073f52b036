"""Export a ledger as dp-accounting ``DpEvent``s, so that anyone can recompute its ε there.

Each entry becomes the event of its mechanism, wrapped in ``SelfComposedDpEvent`` when its count
is above 1 (randomized response: that many copies in a ``ComposedDpEvent``, since dp-accounting
0.6.0's PLD accountant composes a self-composed randomized-response event once, whatever its
count), and the ledger one ``ComposedDpEvent``:

==========================  ===========================================================
mechanism                   event
==========================  ===========================================================
``gaussian`` (σ, Δ₂)        ``GaussianDpEvent(noise_multiplier=σ/Δ₂)``
``laplace`` (b, Δ₁)         ``LaplaceDpEvent(noise_multiplier=b/Δ₁)``
``randomized_response`` p   ``RandomizedResponseDpEvent(noise_parameter=2(1−p), num_buckets=2)``
k-ary RR (p, k)             ``RandomizedResponseDpEvent(noise_parameter=k(1−p)/(k−1),
                            num_buckets=k)``
``discrete_laplace`` (t, Δ) ``DiscreteLaplaceDpEvent(noise_parameter=1/t, sensitivity=Δ)``
                            (integer Δ only)
anything else               ``UnsupportedDpEvent()`` (dp-accounting's accountants refuse it)
==========================  ===========================================================

(k-ary RR is ``categorical_randomized_response``.) The sensitivities of this package are the
largest change of the query between neighbours under the relation the caller chose, which is
what dp-accounting's noise multipliers are relative to under
``NeighboringRelation.ADD_OR_REMOVE_ONE``. Its ``RandomizedResponseDpEvent`` is defined for
``REPLACE_ONE`` (a change of the bit or value, as here); its RDP accountant treats Gaussian and
Laplace events the same under either relation, so a ledger with randomized response is
recomputed with ``RdpAccountant(neighboring_relation=REPLACE_ONE)``.

Parallel groups: a group is exported as its dominating partition (see
:mod:`pymc_rdp.privacy.tight_accounting`), which is exact; when no partition dominates, all of its
partitions are exported in sequence (a valid, looser bound) and :func:`ledger_to_dp_events`
reports it in ``notes``.

The discrete Gaussian and the Dirichlet mechanism have no event: their entries are
``UnsupportedDpEvent``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pymc_rdp.privacy.tight_accounting import Row, _Part

__all__ = ["ledger_to_dp_events", "mechanism_event"]


def mechanism_event(name: str, params: dict[str, Any]) -> Any:
    """The dp-accounting event of one use of a mechanism (``UnsupportedDpEvent`` if none)."""
    import dp_accounting as dpa

    try:
        if name == "gaussian":
            return dpa.GaussianDpEvent(float(params["sigma"]) / float(params["sensitivity"]))
        if name == "laplace":
            return dpa.LaplaceDpEvent(float(params["scale"]) / float(params["sensitivity"]))
        if name == "randomized_response":
            return dpa.RandomizedResponseDpEvent(
                noise_parameter=2.0 * (1.0 - float(params["p"])), num_buckets=2
            )
        if name == "categorical_randomized_response":
            # dp-accounting's noise η: uniform over all k buckets with probability η, so
            # p = 1 − η (k − 1)/k and η = k q
            k = int(params["k"])
            return dpa.RandomizedResponseDpEvent(
                noise_parameter=k * (1.0 - float(params["p"])) / (k - 1), num_buckets=k
            )
        if name == "discrete_laplace":
            sens = float(params["sensitivity"])
            if sens == round(sens) and sens >= 1:
                return dpa.DiscreteLaplaceDpEvent(
                    noise_parameter=1.0 / float(params["scale"]), sensitivity=int(sens)
                )
    except (KeyError, TypeError, ValueError):
        pass
    return dpa.UnsupportedDpEvent()


#: events that dp-accounting's PLD accountant (0.6.0) composes once whatever the count of a
#: ``SelfComposedDpEvent`` or of ``compose(event, count)``: exported as that many copies instead
_COPIED = frozenset({"randomized_response", "categorical_randomized_response"})


def _entry_event(name: str, params: dict[str, Any], count: int) -> Any:
    import dp_accounting as dpa

    ev = mechanism_event(name, params)
    if count == 1:
        return ev
    if name in _COPIED:
        return dpa.ComposedDpEvent([ev] * int(count))
    return dpa.SelfComposedDpEvent(ev, int(count))


def ledger_to_dp_events(rows: Iterable[Row], notes: list[str] | None = None) -> Any:
    """One ``ComposedDpEvent`` for a ledger (see the module notes).

    Parameters
    ----------
    rows : iterable of (mechanism name, params, count, group, partition)
    notes : list, optional
        Receives a sentence per parallel group exported in sequence.

    Raises
    ------
    ImportError
        Without dp-accounting (``pip install 'pymc-rdp[pld]'``).
    """
    try:
        import dp_accounting as dpa
    except ImportError as exc:  # pragma: no cover - exercised without the extra
        raise ImportError("to_dp_events needs dp-accounting: pip install 'pymc-rdp[pld]'") from exc
    events = []
    groups: dict[Any, dict[Any, list[tuple[str, dict[str, Any], int]]]] = {}
    order: list[Any] = []  # groups in order of first appearance
    for name, params, count, group, partition in rows:
        if group is None or partition is None:
            events.append(_entry_event(name, params, count))
        else:
            if group not in groups:
                order.append(group)
            groups.setdefault(group, {}).setdefault(partition, []).append((name, params, count))
    for g in order:
        parts = groups[g]
        summary = {}
        for key, members in parts.items():
            part = _Part()
            for name, params, count in members:
                part.add(name, params, count)
            summary[key] = part
        # entries without an event carry no parameters to compare: no dominance then
        comparable = not any(p.unsupported for p in summary.values())
        dominant = [
            k
            for k, p in summary.items()
            if comparable and all(p.dominates(q) for q in summary.values())
        ]
        if dominant:
            chosen = [dominant[0]]
        else:
            chosen = list(parts)
            if len(parts) > 1 and notes is not None:
                notes.append(
                    f"group {g!r}: no partition dominates; its {len(parts)} partitions are "
                    "exported in sequence (valid, looser)"
                )
        for key in chosen:
            events.extend(_entry_event(n, p, c) for n, p, c in parts[key])
    return dpa.ComposedDpEvent(events)
