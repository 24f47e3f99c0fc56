"""A group of PostgreSQL tables read from one slot at one LSN: every table's dates at one instant.

    PgLogicalGroup({
        "conn_id": "shop_db",
        "tables": ["public.invoices", "public.lines"],    # the group's tables
        "slot": "dogana_invoicing",                      # one slot for the group
        "columns": {"public.invoices": {...}, "public.lines": {...}},   # optional, per table
    })

One slot and one publication (named like the slot) cover the group's tables. The group's first
read, or a reset, drops and creates the slot and reads every table whole in the snapshot the
slot exports (pg_logical.py's SnapshotReading, one transaction for all of them), each delivery
issuing the slot's consistent point. Each later read is one read of the log from the position
the group published to one end (LogReading.tables): a transaction touching two of its tables is
in both deliveries or in neither, and every delivery carries the same since, position and
produced_at, so the group's together check holds and every table is exact at that instant.

The slot is advanced only to the position the group published, at the next read's start, as for
one table: one slot serves the group because its tables are always published together.

A read's changes are held in memory until every table's are read: a group reads its log often,
a few seconds of changes at a time, never its tables whole (the snapshot streams one table at a
time, yet also held: a group's first read is as large as its tables).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

import pyarrow as pa

from dogana_core.values import Position, Scalar
from dogana_provider.connectors.contract import ConnectorError, Proof, Reading, RefusedRead, Stream
from dogana_provider.connectors.log_capture import KeyedReading
from dogana_provider.connectors.pg_logical import (
    LogReading,
    PgLogicalConnector,
    SnapshotReading,
    declared_difference,
)

OPTIONS = ("conn_id", "tables", "slot", "publication", "columns", "deleted_column", "fetch_rows")


class PgLogicalGroup:
    """The tables of one group behind one slot (see the module's text)."""

    kind = "pg_logical"

    def __init__(self, config: Mapping[str, Any]) -> None:
        unknown = sorted(set(config) - set(OPTIONS) - {"kind"})
        tables = config.get("tables")
        if unknown or not isinstance(tables, list | tuple) or len(tables) < 2:
            raise ConnectorError(
                "a pg_logical group names its tables (two or more) under 'tables'"
                + (f"; not options: {', '.join(unknown)}" if unknown else "")
            )
        columns = config.get("columns") or {}
        shared = {k: v for k, v in config.items() if k not in ("kind", "tables", "columns")}
        self.members = {
            str(table): PgLogicalConnector(
                {**shared, "table": table}
                | ({"columns": columns[table]} if table in columns else {})
            )
            for table in tables
        }

    def member(self, table: str) -> PgLogicalConnector:
        for name, member in self.members.items():
            if name.lower() == table.lower():
                return member
        raise ConnectorError(f"{table} is not a table of the group ({', '.join(self.members)})")

    def read(self, since: int | None) -> dict[str, Collected]:
        """Every table's delivery, read together: whole at a new slot's consistent point
        (since None), else the log from since to one end."""
        members = list(self.members.values())
        for member in members:
            member.connect()
        streams = [member.stream(member.table) for member in members]
        if since is None:
            return self._snapshot(members, streams)
        reading = LogReading(members[0], streams[0], since, limit=None, end=None)
        batches: dict[str, list[pa.RecordBatch]] = {m.table: [] for m in members}
        for table, batch in reading.tables(list(zip(members, streams, strict=True))):
            batches[table].append(batch)
        proof = reading.proof()
        return {
            m.table: Collected(s, batches[m.table], proof, reading.checkpoint())
            for m, s in zip(members, streams, strict=True)
        }

    def _snapshot(
        self, members: Sequence[PgLogicalConnector], streams: Sequence[Stream]
    ) -> dict[str, Collected]:
        connection = members[0].session()
        try:
            # Every table in the publication before the slot is made: none misses a change.
            for member, stream in zip(members, streams, strict=True):
                _refuse_undeclared(member, stream)
                member.ensure_publication(connection)
        finally:
            connection.close()
        first = GroupSnapshot(members[0], streams[0])
        batches: dict[str, list[pa.RecordBatch]] = {m.table: [] for m in members}
        tables = [
            KeyedReading(m, s, None, None, limit=None)
            for m, s in zip(members, streams, strict=True)
        ]
        for table, batch in first.tables(tables):
            batches[table].append(batch)
        proof = first.proof()
        return {
            m.table: Collected(s, batches[m.table], proof, lsn_of_position(proof.position))
            for m, s in zip(members, streams, strict=True)
        }


def lsn_of_position(position: Position | None) -> int:
    if not isinstance(position, int):
        raise ConnectorError(f"{position!r} is not the slot's position")
    return position


class GroupSnapshot(SnapshotReading):
    """The group's tables read in the one snapshot a new slot exports."""

    def tables(self, readings: Sequence[KeyedReading]) -> Iterator[tuple[str, pa.RecordBatch]]:
        self.readings = readings
        for batch in self:
            yield self.current, batch

    def _select(self, connection: Any) -> Iterator[pa.RecordBatch]:
        for reading in self.readings:
            self.current = reading.connector.table
            yield from reading._select(connection)


class Collected(Reading):
    """One table's part of a group read, read already."""

    def __init__(
        self, stream: Stream, batches: list[pa.RecordBatch], proof: Proof, position: Position
    ) -> None:
        self.stream = stream
        self.batches = batches
        self.read_proof = proof
        self.position = position

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        return iter(self.batches)

    def checkpoint(self) -> Position:
        return self.position

    def proof(self) -> Proof:
        return self.read_proof


class OneOfGroup(PgLogicalConnector):
    """A table of a group as a connector whose read is its part of the group's read."""

    options: ClassVar[Mapping[str, str]] = PgLogicalConnector.options

    def __init__(self, member: PgLogicalConnector, reading: Collected) -> None:
        super().__init__(member.config)
        self.reading = reading

    def read(
        self, stream: str, *, since: Scalar | None = None, limit: int | None = None
    ) -> Reading:
        return self.reading


def _refuse_undeclared(member: PgLogicalConnector, stream: Stream) -> None:
    difference = declared_difference(member, stream)
    if difference is not None:
        raise RefusedRead("relation_changed", f"{difference}: declare the columns as they are now")
