"""A group of MariaDB tables read from one pass over the binlog: every table's dates at one
binlog position, and one instant.

    MariadbBinlogGroup({
        "kind": "mariadb_binlog",
        "conn_id": "shop_maria",
        "tables": ["invoices", "shop.lines"],          # the group's tables
        "columns": {"invoices": {...}},                 # optional, per table
    })

What every log's group does alike is log_capture.LogGroup's. MariaDB's part:

The group's first read, or a reset, is one START TRANSACTION WITH CONSISTENT SNAPSHOT and the
binlog position MariaDB reports for it (mariadb_binlog.py's SnapshotReading), every table read
whole in that one transaction: every transaction before the position is in every table's rows,
none after, so the log continues there for all of them with no gap and no double.

Each later read is one binlog dump from the position the group published to the binlog's end
read just after the server's clock (mariadb_binlog.LogReading's _prepare), filtered to the
group's schemas and tables and split by (schema, table). A table's rows are held until their
transaction's end (an XID event, or a COMMIT for a table that is not transactional) and only then
added to its delivery, and the read ends at the binlog's end, which is always between
transactions: a transaction touching two of the group's tables is in both deliveries or in
neither. Each table's events are checked and decoded by that table's own LogReading
(_same_columns, _statement, _rows_of, into its _Rows), so a group refuses what one table's read
refuses, by the same names: a TRUNCATE, ALTER, DROP or RENAME of any of its tables, a table map
unlike the table, a purged position. A refusal keeps what is published and names the full read,
which for a group is every table's complete shape at once.

Nothing on the server holds a place for the group: the position is the receiver's, and moves
only when the group's publication commits.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from dogana_provider.connectors.contract import RefusedRead, Stream
from dogana_provider.connectors.log_capture import (
    FULL_READ,
    GroupReading,
    LogGroup,
    TablesInOneSnapshot,
)
from dogana_provider.connectors.mariadb_binlog import (
    BinlogPosition,
    LogReading,
    MariadbBinlogConnector,
    Rows,
    SnapshotReading,
    ends_transaction,
    events_to,
    log_events_reader,
)


class MariadbBinlogGroup(LogGroup[MariadbBinlogConnector]):
    """The tables of one group read from one pass over the binlog (see the module's text)."""

    kind = "mariadb_binlog"
    member_type = MariadbBinlogConnector

    def snapshot(self, members: Sequence[tuple[MariadbBinlogConnector, Stream]]) -> GroupReading:
        for member, stream in members:
            member.as_declared(stream)
        return GroupSnapshot(*members[0])

    def log_pass(
        self, members: Sequence[tuple[MariadbBinlogConnector, Stream]], since: int
    ) -> GroupReading:
        return GroupLogReading(*members[0], BinlogPosition.of_int(since))


class GroupSnapshot(TablesInOneSnapshot, SnapshotReading):
    """The group's tables read in one consistent snapshot, at the binlog position it reports."""


@dataclass
class _Target:
    """One table of the pass: its own log reading (which checks and decodes its events), its
    columns now, its key's places, its rows of the open transaction and those delivered."""

    reading: LogReading
    catalog: list[tuple[str, tuple[Any, ...], bool]]
    key: list[int]
    rows: Rows
    pending: list[tuple[tuple[Any, ...], bool]] = field(default_factory=list)


class GroupLogReading(LogReading):
    """The changes of the group's tables the binlog holds from since to its end, in one pass;
    its end, instant and checks of the server are the first member's read's (_prepare)."""

    def __init__(
        self, connector: MariadbBinlogConnector, stream: Stream, since: BinlogPosition
    ) -> None:
        super().__init__(connector, stream, since, limit=None, end=None)

    def tables(
        self, members: Sequence[tuple[MariadbBinlogConnector, Stream]]
    ) -> Iterator[tuple[str, pa.RecordBatch]]:
        """Each batch with its table's name; a transaction is in the read whole, every table's
        changes of it, or not at all."""
        from dogana_provider.dialects.base import scalar

        connection = self.connector.session()
        try:
            try:
                state = self._prepare(connection)
            except RefusedRead as refused:
                raise _for_group(refused, members) from refused
            database = _text(scalar(connection, "SELECT DATABASE()"))
            targets: dict[tuple[str, str], _Target] = {}
            for member, stream in members:
                schema, table = member.names()
                catalog = member.catalog(connection)
                member.as_declared(stream)
                names = [name for name, _, _ in catalog]
                targets[(schema or database, table)] = _Target(
                    LogReading(member, stream, self.since, limit=None, end=self.end),
                    catalog,
                    [names.index(k) for k in stream.key],
                    Rows(stream),
                )
        finally:
            connection.close()
        yield from self._pass(state, targets)
        self.finished = True

    def _pass(
        self, state: Mapping[str, Any], targets: Mapping[tuple[str, str], _Target]
    ) -> Iterator[tuple[str, pa.RecordBatch]]:
        from pymysqlreplication.event import (  # type: ignore[import-untyped]
            MariadbGtidEvent,
            QueryEvent,
        )
        from pymysqlreplication.row_event import (  # type: ignore[import-untyped]
            DeleteRowsEvent,
            TableMapEvent,
            UpdateRowsEvent,
            WriteRowsEvent,
        )

        table_events = (TableMapEvent, WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent)
        connector, end = self.connector, self.end
        assert end is not None
        # The pairs the reader's filter by schemas and by tables lets through are told apart
        # below (targets.get).
        reader = log_events_reader(
            connector,
            self.since,
            state,
            sorted({schema for schema, _ in targets}),
            sorted({table for _, table in targets}),
        )
        try:
            for event, here in events_to(reader, end):
                if isinstance(event, MariadbGtidEvent):
                    for target in targets.values():
                        target.pending = []
                elif isinstance(event, table_events):
                    self._table_event(event, targets.get((event.schema, event.table)))
                elif isinstance(event, QueryEvent):
                    for (schema, table), target in targets.items():
                        target.reading.at = self.at
                        target.reading._statement(event, schema, table)
                    statement = _text(event.query).strip().upper()
                    if not any(t.pending for t in targets.values()) and not statement.startswith(
                        ("COMMIT", "BEGIN")
                    ):
                        self.at = here  # a DDL statement is its own transaction
                        continue
                if ends_transaction(event):
                    for target in targets.values():
                        for values, deleted in target.pending:
                            target.rows.add(values, deleted)
                        self.rows += len(target.pending)
                        target.pending = []
                        if len(target.rows) >= connector.fetch_rows:
                            yield target.reading.connector.table, target.rows.batch()
                    self.at = here
                    self.last_commit = datetime.fromtimestamp(event.timestamp, UTC)
        finally:
            reader.close()
        self.at = end
        for target in targets.values():
            if len(target.rows):
                yield target.reading.connector.table, target.rows.batch()

    @staticmethod
    def _table_event(event: Any, target: _Target | None) -> None:
        """A table map checked, or a row event's rows held until its transaction ends, by
        the table's own reading; another table's (same name, other schema) left out."""
        from pymysqlreplication.row_event import TableMapEvent  # type: ignore[import-untyped]

        if target is None:
            return
        if isinstance(event, TableMapEvent):
            target.reading._same_columns(event, target.catalog)
        else:
            target.pending.extend(target.reading._rows_of(event, target.key))


def _text(value: Any) -> str:
    """A statement or a name as the server sent it: bytes from some drivers, text from others."""
    return value.decode("utf-8") if isinstance(value, bytes | bytearray) else str(value)


def _for_group(
    refused: RefusedRead, members: Sequence[tuple[MariadbBinlogConnector, Stream]]
) -> RefusedRead:
    """A refusal of the whole pass (a purged position, a server not logging rows), which names
    the first table's full read, told as the group's: every table's complete shape at once."""
    tables = ", ".join(member.table for member, _ in members)
    message = str(refused).removeprefix(f"{refused.rule}: ")
    return RefusedRead(
        refused.rule,
        f"{message}; the group's tables ({tables}) are read together: {FULL_READ} for "
        "every one of them, in one delivery of each table's complete shape",
    )
