"""Statements an accountant records besides its releases: facts declared public, and releases
outside the guarantee.

:class:`Declarations` is a base class of :class:`~pymc_rdp.privacy.accountant.Accountant`; the
statements (``self._declarations``) travel with the ledger file and its hash chain
(:mod:`pymc_rdp.privacy.ledger_codec`), and the report flags those outside the guarantee.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Declarations"]


class Declarations:
    """Recording and reading the statements that no mechanism covers."""

    _declarations: list[dict[str, Any]]

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
