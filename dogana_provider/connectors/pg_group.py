"""A group of PostgreSQL tables read from one slot at one LSN: every table's dates at one instant.

    PgLogicalGroup({
        "conn_id": "shop_db",
        "tables": ["public.invoices", "public.lines"],    # the group's tables
        "slot": "dogana_invoicing",                      # one slot for the group
        "columns": {"public.invoices": {...}, "public.lines": {...}},   # optional, per table
    })

What every log's group does alike is log_capture.LogGroup's. PostgreSQL's part: one slot and one
publication (named like the slot) cover the group's tables. The group's first read, or a reset,
puts every table in the publication, then drops and creates the slot and reads every table
whole in the snapshot the slot exports (pg_logical.py's SnapshotReading, one transaction for all
of them), each delivery issuing the slot's consistent point. Each later read is one read of the
log from the position the group published to one end (LogReading.tables).

The slot is advanced only to the position the group published, at the next read's start, as for
one table: one slot serves the group because its tables are always published together.
"""

from __future__ import annotations

from collections.abc import Sequence

from dogana_provider.connectors.contract import RefusedRead, Stream
from dogana_provider.connectors.log_capture import GroupReading, LogGroup, TablesInOneSnapshot
from dogana_provider.connectors.pg_logical import (
    LogReading,
    PgLogicalConnector,
    SnapshotReading,
    declared_difference,
)


class PgLogicalGroup(LogGroup[PgLogicalConnector]):
    """The tables of one group behind one slot (see the module's text)."""

    kind = "pg_logical"
    member_type = PgLogicalConnector

    def snapshot(self, members: Sequence[tuple[PgLogicalConnector, Stream]]) -> GroupReading:
        first = members[0][0]
        connection = first.session()
        try:
            # Every table in the publication before the slot is made: none misses a change.
            for member, stream in members:
                _refuse_undeclared(member, stream)
                member.ensure_publication(connection)
        finally:
            connection.close()
        return GroupSnapshot(first, members[0][1])

    def log_pass(
        self, members: Sequence[tuple[PgLogicalConnector, Stream]], since: int
    ) -> GroupReading:
        return LogReading(members[0][0], members[0][1], since, limit=None, end=None)


class GroupSnapshot(TablesInOneSnapshot, SnapshotReading):
    """The group's tables read in the one snapshot a new slot exports."""


def _refuse_undeclared(member: PgLogicalConnector, stream: Stream) -> None:
    difference = declared_difference(member, stream)
    if difference is not None:
        raise RefusedRead("relation_changed", f"{difference}: declare the columns as they are now")
