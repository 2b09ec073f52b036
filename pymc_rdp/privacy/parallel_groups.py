"""Parallel-composition groups of an accountant: fresh keys, closing, and the key checks.

Partitions of one group compose by their order-wise maximum
(:mod:`pymc_rdp.privacy.composition`), so a group must hold the partitions of *one* release:
partitions of two releases under one key would merge (the same class label in two fits charged
once). Releases take a fresh key from :meth:`ParallelGroups.new_group` (or
``with acc.parallel(label) as g:``) and close it when complete; a spend into a closed group is
refused. Keys managed by the caller keep working, and keeping them distinct across releases is
then the caller's job.

:class:`ParallelGroups` is a base class of :class:`~pymc_rdp.privacy.accountant.Accountant`; it
works on the accountant's :class:`~pymc_rdp.privacy.ledger.GroupKeys` (``self._groups``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from pymc_rdp.privacy.ledger import GroupKeys, check_key

__all__ = ["ParallelGroups"]


class ParallelGroups:
    """Group keys of parallel composition: handed out fresh, closed when a release is complete."""

    _groups: GroupKeys

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
        return self._groups.new(label)

    def close_group(self, group: Any) -> None:
        """Mark a group complete: any later spend into it raises ValueError.

        Closed groups travel in the ledger JSON, so they stay closed after a reload.
        """
        self._groups.close(group)

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
            self._groups.close(key)

    @property
    def closed_groups(self) -> tuple[Any, ...]:
        """The closed group keys, in closing order."""
        return tuple(self._groups.closed)

    def _check_group_partition(self, group: Any, partition: Any) -> tuple[Any, Any]:
        group = check_key(group, "group")
        partition = check_key(partition, "partition")
        if partition is not None and group is None:
            raise ValueError("partition needs a group: parallel composition is within a group")
        if group is not None:
            self._groups.check_open(group)
        return group, partition
