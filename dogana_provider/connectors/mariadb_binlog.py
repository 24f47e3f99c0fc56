"""A MariaDB table's changes from the server's row-based binary log.

    MariadbBinlogConnector({
        "conn_id": "shop_db",           # a mysql connection; log_bin, binlog_format=ROW,
                                        # binlog_row_image=FULL on the server
        "table": "orders",              # or "shop.orders"; the connection's database otherwise
    })

The binlog is read with mysql-replication (pymysqlreplication), registered as a replica with a
server_id of its own for the length of one read (the "server_id" option, or a random one: two
readers under one id make the server end the first one's dump). Nothing on the server holds a
place for the pipeline: the position is the receiver's alone, which is why it can only move
once the publication commits. What the server keeps is binlog retention
(binlog_expire_logs_seconds): a pipeline stopped longer than that finds its position purged.

A position is file:offset, as an integer that orders: the file's number times 2**32 plus the
offset (max_binlog_size is below 2**32). Not a GTID: the consistent snapshot tells its place as
file and offset (binlog_snapshot_file, binlog_snapshot_position), a file:offset is exact across
every GTID domain, and it needs no gtid_strict_mode. A failover to another server changes files,
and a full read then starts the chain again.

A read from no position (the contract's complete shape) is the table's first delivery, or a
reset: START TRANSACTION WITH CONSISTENT SNAPSHOT, then SHOW STATUS LIKE 'binlog_snapshot_%',
which MariaDB answers with the binlog position of that very snapshot (no lock, no FLUSH TABLES):
every transaction before it in the log is in the snapshot, none after, so the log continues
there with no gap and no double. Its instant is the server's clock (UTC_TIMESTAMP(6)) read just
before the snapshot: whatever had committed by then is in it.

A read from a position P (a sequence shape with tombstones) reads the transactions whose events
end in (P, L], L the log's end (SHOW MASTER STATUS) read just after the source's clock T (the
read's produced_at). A transaction is written to the binlog before InnoDB makes it visible, so
every transaction visible at T ends before L; the read proves both dates at T. Not an event's
own timestamp: those are whole seconds, and the table may have been quiet for hours before T.
Its position is L. A read never writes anything to the server, so a rejected or killed delivery
leaves the ledger at P, and the next read reads the same changes again.

A read from the start with a limit reads the table itself in key order, in a consistent snapshot
of its own, and issues key positions (log_capture.KeyedReading): a place among a snapshot's rows
is a key, never a binlog position, so the log does not continue from it. A log read its limit
cuts inside a transaction issues inside:P:N, P the position that transaction starts at and N
its rows read; the resume skips those N and proves no shape.

A position whose file the server purged (binlog_purged), a TRUNCATE of the table
(truncate_in_log), an ALTER, DROP or RENAME of it, or a table map whose columns are not the
table's declared ones (relation_changed), and a server not logging full row images
(binlog_unfit) each refuse the read by name; nothing published changes, and the message says
what to run (log_capture.full_read).

Rows: an insert or update is the new row, a delete a tombstone (the key, other columns null, the
deleted column true), an update that moves the key a tombstone for the old key, then the new
row. Values come from the row images, decoded by a program compiled once per table map
(binlog_rows; the library's own decoding where a column's type is not one it decodes), and are
converted to the stream's types exactly as the snapshot path delivers them: DATETIME read as
UTC, decimals at their scale, TINYINT as bool where the "columns" option declares bool, unsigned
BIGINT past 2**63 (the signedness from the catalog when binlog_row_metadata is NO_LOG).
"""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any, ClassVar

import pyarrow as pa

from dogana_core.shape import Shape
from dogana_core.values import Position, Scalar
from dogana_provider.connectors.binlog_rows import RowImages, whole_rows
from dogana_provider.connectors.contract import (
    ConnectorError,
    Health,
    Proof,
    Reading,
    RefusedRead,
    Stream,
    StreamColumn,
)
from dogana_provider.connectors.log_capture import (
    LogConnector,
    TableReading,
    columns_difference,
    full_read,
    inside_position,
    undeclared,
    unproven,
)

CLOCK = "the database's clock, read just before the binlog's end position"
SNAPSHOT_CLOCK = "the database's clock, read just before the consistent snapshot"
OFFSET_BITS = 32
REQUIRED = {"log_bin": "ON", "binlog_format": "ROW", "binlog_row_image": "FULL"}
SERVER_IDS = (2, 2**32 - 1)
# Statements that change a table without row events: a TRUNCATE deletes rows the log does not
# name, an ALTER may fill a new column's default or rewrite values, a DROP or RENAME ends it.
DDL = re.compile(r"^\s*(?:/\*.*?\*/\s*)*(TRUNCATE|ALTER|DROP|RENAME|CREATE\s+OR\s+REPLACE)\b", re.S)

# The binlog's field types (the table map's) of each catalog DATA_TYPE: a table map whose types
# are not those of the table's columns was logged under other columns.
_FIELD_TYPES = {
    "tinyint": 1,
    "smallint": 2,
    "int": 3,
    "float": 4,
    "double": 5,
    "timestamp": 17,
    "bigint": 8,
    "mediumint": 9,
    "date": 10,
    "time": 19,
    "datetime": 18,
    "year": 13,
    "varchar": 15,
    "bit": 16,
    "decimal": 246,
    "enum": 247,
    "set": 248,
    "char": 254,
    "tinytext": 252,
    "text": 252,
    "mediumtext": 252,
    "longtext": 252,
    "tinyblob": 252,
    "blob": 252,
    "mediumblob": 252,
    "longblob": 252,
    "json": 252,
    "binary": 254,
    "varbinary": 15,
}
# Tables made before MariaDB 10.3's temporal format log these, without fraction digits.
_OLD_TEMPORAL = {7: 17, 12: 18, 11: 19}


# Positions ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BinlogPosition:
    """A place in the binlog: a file's number and an offset in it; as_int orders them."""

    number: int
    offset: int

    @classmethod
    def of_file(cls, file: str, offset: int) -> BinlogPosition:
        suffix = file.rpartition(".")[2]
        if not suffix.isdigit():
            raise ConnectorError(f"{file!r} is not a binlog file's name (base.000123)")
        return cls(int(suffix), int(offset))

    @classmethod
    def of_int(cls, value: Scalar | None) -> BinlogPosition:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConnectorError(f"{value!r} is not a binlog position (file:offset as an integer)")
        return cls(value >> OFFSET_BITS, value & (2**OFFSET_BITS - 1))

    def as_int(self) -> int:
        return (self.number << OFFSET_BITS) | self.offset

    def file(self, like: str) -> str:
        """This position's file, named like another file of the same server's binlog."""
        base, _, suffix = like.rpartition(".")
        return f"{base}.{self.number:0{len(suffix)}d}"

    def __str__(self) -> str:
        return f"{self.number:06d}:{self.offset}"


def position_text(value: Scalar | None) -> str:
    """A position as people read it: the binlog file's number and the offset."""
    return str(BinlogPosition.of_int(value))


# Server state ---------------------------------------------------------------------------------


def binlog_state(connection: Any) -> dict[str, Any]:
    """The server's binlog as `dogana cdc status` shows it: its settings, the current end
    (SHOW MASTER STATUS), the files it keeps with their sizes, its clock and its retention."""
    from dogana_provider.dialects.base import fetch_all, fetch_one

    names = (
        *REQUIRED,
        "log_bin_compress",
        "binlog_row_metadata",
        "binlog_expire_logs_seconds",
        "server_id",
    )
    variables = {
        str(name).lower(): _text(value)
        for name, value in fetch_all(
            connection,
            "SELECT variable_name, variable_value FROM information_schema.global_variables "
            f"WHERE variable_name IN ({', '.join(['%s'] * len(names))})",
            tuple(n.upper() for n in names),
        )
    }
    state: dict[str, Any] = {"kind": "mariadb_binlog", **variables}
    row = fetch_one(connection, "SELECT UTC_TIMESTAMP(6)")
    assert row is not None
    state["clock"] = _utc(row[0])
    master = fetch_one(connection, "SHOW MASTER STATUS")
    if master is None:
        state.update(head=None, head_file=None, files={})
        return state
    state["head_file"] = _text(master[0])
    state["head"] = BinlogPosition.of_file(state["head_file"], int(master[1])).as_int()
    state["files"] = {
        _text(name): int(size) for name, size, *_ in fetch_all(connection, "SHOW BINARY LOGS")
    }
    return state


def unfit(state: Mapping[str, Any]) -> str | None:
    """What in the server's settings keeps its binlog from proving a table's changes."""
    wrong = [
        f"{name} is {state.get(name) or 'unset'}, not {value}"
        for name, value in REQUIRED.items()
        if str(state.get(name, "")).upper() != value
    ]
    # Compressed row events are not among the events the binlog reader knows: it would pass
    # over them. MySQL has no such setting, hence the default.
    if str(state.get("log_bin_compress", "OFF")).upper() != "OFF":
        wrong.append(f"log_bin_compress is {state['log_bin_compress']}, not OFF")
    if not wrong:
        return None
    return (
        f"{'; '.join(wrong)}: the binlog carries each changed row whole, in events this reader "
        "reads, only with log_bin, binlog_format=ROW, binlog_row_image=FULL and "
        "log_bin_compress=OFF in the server's configuration"
    )


def lag(state: Mapping[str, Any], position: int) -> dict[str, Any]:
    """How far a recorded position is behind the server's end: bytes when both are in one
    file (else None) and the binlog files between, and whether its file is still kept."""
    held, head = BinlogPosition.of_int(position), BinlogPosition.of_int(state["head"])
    kept = held.file(state["head_file"]) in state["files"]
    return {
        "position": position,
        "position_text": str(held),
        "purged": not kept,
        "lag_bytes": head.offset - held.offset if held.number == head.number else None,
        "lag_files": head.number - held.number,
    }


def connection_settings(hook: Any, conn_id: str) -> dict[str, Any]:
    """The connection's host, port and credentials, for the binlog client's own sessions;
    never logged (the client's logging is off)."""
    connection = hook.get_connection(conn_id)
    return {
        "host": connection.host or "127.0.0.1",
        "port": int(connection.port or 3306),
        "user": connection.login or "",
        "passwd": connection.password or "",
    }


def binlog_reader(settings: dict[str, Any], server_id: int | None, **options: Any) -> Any:
    """mysql-replication's reader, non-blocking (it stops at the binlog's end), under a replica
    id of its own. Its warning that binlog_row_metadata is not FULL is kept out of every task's
    log: health says it once, and the connector takes what FULL would add from the catalog."""
    from pymysqlreplication import BinLogStreamReader  # type: ignore[import-untyped]

    logging.getLogger("pymysqlreplication").setLevel(logging.ERROR)
    return BinLogStreamReader(
        connection_settings=settings,
        server_id=server_id or SERVER_IDS[0] + 1_000 + secrets.randbelow(2**31),
        resume_stream=True,
        blocking=False,
        enable_logging=False,
        **options,
    )


def first_change_after(
    settings: dict[str, Any], position: BinlogPosition, like: str
) -> datetime | None:
    """When the first transaction after a position committed (any table's: the binlog is the
    server's), to the second the binlog stamps it; None when nothing follows it."""
    from pymysqlreplication.event import QueryEvent, XidEvent  # type: ignore[import-untyped]

    reader = binlog_reader(
        settings,
        None,
        log_file=position.file(like),
        log_pos=position.offset,
        only_events=[XidEvent, QueryEvent],
    )
    try:
        for event in reader:
            return datetime.fromtimestamp(event.timestamp, UTC)
    finally:
        reader.close()
    return None


def binlog_status(hook: Any, conn_id: str, position: int | None = None) -> dict[str, Any]:
    """The server's binlog (binlog_state) and, for a recorded position, how far behind it is:
    bytes and files (lag), and seconds since the first transaction after it committed."""
    connection = hook.get_conn()
    try:
        _autocommit(connection)
        state = binlog_state(connection)
    finally:
        connection.close()
    if position is None or state["head"] is None:
        return state
    state.update(lag(state, position))
    if state["purged"]:
        state["lag_seconds"] = None
        return state
    held = BinlogPosition.of_int(position)
    first = first_change_after(connection_settings(hook, conn_id), held, state["head_file"])
    state["lag_seconds"] = (
        0.0 if first is None else max(0.0, (state["clock"] - first).total_seconds())
    )
    return state


# The connector --------------------------------------------------------------------------------


class MariadbBinlogConnector(LogConnector):
    """A MariaDB table read from the server's row-based binlog (module text)."""

    kind = "mariadb_binlog"
    options: ClassVar[Mapping[str, str]] = {
        "conn_id": "the Airflow mysql connection of the source (log_bin, binlog_format=ROW, "
        "binlog_row_image=FULL)",
        "table": "the table, database-qualified with a dot where it is not the connection's",
        "columns": "column -> logical type, in order: the columns the pipeline delivers; a table "
        "or a logged table map whose columns differ is refused (relation_changed); bool types "
        "a TINYINT",
        "deleted_column": "the bool column a delete becomes (default deleted)",
        "server_id": "the replica id the read registers under (default: random per read); "
        "never the server's own nor another reader's",
        "fetch_rows": "rows per record batch (default 10000)",
    }
    required = ("conn_id", "table")
    snapshot_clock = SNAPSHOT_CLOCK

    # Configuration ----------------------------------------------------------------------------

    def check(self) -> tuple[str, ...]:
        problems = self.name_problems()
        problems += self.shape_problems()
        server_id = self.config.get("server_id", SERVER_IDS[0])
        if (
            isinstance(server_id, bool)
            or not isinstance(server_id, int)
            or not SERVER_IDS[0] <= server_id <= SERVER_IDS[1]
        ):
            problems.append(f"server_id: {server_id!r} is not a replica id (2 to 2**32 - 1)")
        return tuple(problems)

    def open(self) -> None:
        from dogana_provider.dialects import MARIADB

        self.open_source(MARIADB, "mysql", "the binlog is MariaDB's")

    def names(self) -> tuple[str | None, str]:
        schema, _, name = self.table.rpartition(".")
        return schema or None, name

    def session(self) -> Any:
        """A connection to the source, autocommit, in UTC: TIMESTAMP columns read as the log
        carries them."""
        from dogana_provider.dialects.base import execute

        connection = self.hook.get_conn()
        _autocommit(connection)
        execute(connection, "SET time_zone = '+00:00'")
        return connection

    @contextmanager
    def table_snapshot(self) -> Iterator[tuple[Any, datetime]]:
        """A session in a read-only consistent snapshot of its own, and the clock just before
        it: whatever had committed by then is in it."""
        from dogana_provider.dialects.base import execute, fetch_one

        connection = self.session()
        try:
            execute(connection, "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            clock = fetch_one(connection, "SELECT UTC_TIMESTAMP(6)")
            assert clock is not None
            execute(connection, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
            yield connection, _utc(clock[0])
            execute(connection, "ROLLBACK")
        finally:
            connection.close()

    def settings(self) -> dict[str, Any]:
        return connection_settings(self.hook, str(self.config["conn_id"]))

    # The catalog ------------------------------------------------------------------------------

    def catalog(self, connection: Any) -> list[tuple[str, tuple[Any, ...], bool]]:
        """The table's columns now: (name, what its table map logs: field type and, for
        decimals, precision and scale, for times the fraction digits; unsigned)."""
        from dogana_provider.dialects.base import fetch_all

        schema, name = self.names()
        rows = fetch_all(
            connection,
            "SELECT column_name, data_type, column_type, numeric_precision, numeric_scale, "
            "datetime_precision FROM information_schema.columns "
            "WHERE table_schema = COALESCE(%s, DATABASE()) AND table_name = %s "
            "ORDER BY ordinal_position",
            (schema, name),
        )
        if not rows:
            raise ConnectorError(f"{self.table}: no such table")
        found = []
        for column, data_type, column_type, precision, scale, fraction in rows:
            kind = _text(data_type).lower()
            logged: tuple[Any, ...] = (_FIELD_TYPES.get(kind, kind),)
            if kind == "decimal":
                logged += (int(precision), int(scale or 0))
            elif kind in ("datetime", "timestamp", "time"):
                logged += (int(fraction or 0),)
            if kind in ("enum", "set"):
                logged += (_members(_text(column_type)),)
            found.append((_text(column), logged, "unsigned" in _text(column_type).lower()))
        return found

    def primary_key(self, connection: Any) -> tuple[str, ...]:
        from dogana_provider.dialects.base import fetch_all

        schema, name = self.names()
        rows = fetch_all(
            connection,
            "SELECT column_name FROM information_schema.statistics "
            "WHERE table_schema = COALESCE(%s, DATABASE()) AND table_name = %s "
            "AND index_name = 'PRIMARY' ORDER BY seq_in_index",
            (schema, name),
        )
        return tuple(_text(column) for (column,) in rows)

    def status(self, position: int | None = None) -> dict[str, Any]:
        """The server's binlog as `dogana cdc status` shows it, and how far a recorded position
        is behind it."""
        self.connect()
        return binlog_status(self.hook, str(self.config["conn_id"]), position)

    # Operations -------------------------------------------------------------------------------

    def discover(self) -> tuple[Stream, ...]:
        from dogana_provider.sources.discover import discover_columns

        self.connect()
        connection = self.session()
        try:
            found = discover_columns(connection, self.dialect, self.table)
            key = self.primary_key(connection)
        finally:
            connection.close()
        declared = self.config.get("columns") or {}
        columns = []
        for column in found:
            kind = column.type
            if declared.get(column.name) == "bool" and column.native.startswith("tinyint"):
                kind = "bool"  # BOOLEAN is TINYINT(1): bool where the pipeline says so
            columns.append(StreamColumn(column.name, kind, column.nullable))
        return (self.table_stream(columns, key),)

    def health(self) -> Health:
        problems = self.validate()
        if problems:
            return Health(False, "; ".join(problems))
        try:
            self.connect()
            connection = self.session()
            try:
                state = binlog_state(connection)
            finally:
                connection.close()
        except Exception as exc:  # health reports whatever stops the source; it never raises
            return Health(False, f"{type(exc).__name__}: {exc}")
        problem = unfit(state)
        if problem is not None:
            return Health(False, problem)
        metadata = state.get("binlog_row_metadata")
        return Health(
            True,
            f"binlog at {position_text(state['head'])} in {state['head_file']}, "
            f"{len(state['files'])} files kept for {state['binlog_expire_logs_seconds']} s; "
            f"binlog_row_metadata={metadata}"
            + ("" if metadata == "FULL" else " (column names and signedness from the catalog)"),
        )

    # Reads (LogConnector chooses which) ------------------------------------------------------

    def snapshot_reading(self, stream: Stream) -> Reading:
        return SnapshotReading(self, stream)

    def log_reading(
        self,
        stream: Stream,
        since: BinlogPosition,
        *,
        limit: int | None,
        end: BinlogPosition | None,
        skip: int = 0,
    ) -> Reading:
        return LogReading(self, stream, since, limit=limit, end=end, skip=skip)

    def log_position(self, value: Scalar | None) -> BinlogPosition:
        return BinlogPosition.of_int(value)

    def reversed_backfill(self, first: BinlogPosition, last: BinlogPosition) -> str | None:
        return f"{last} is before {first}" if last.as_int() < first.as_int() else None

    def as_declared(self, stream: Stream) -> None:
        now = [(c.name, c.type) for c in stream.columns[:-1]]  # the deleted column is the last
        difference = undeclared(self.table, self.config.get("columns"), now)
        if difference is not None:
            raise RefusedRead(
                "relation_changed",
                f"{difference}; a change the log does not carry row by row (a default filled "
                f"in, a rewrite) may be behind it: {full_read(self.table)}, under the new "
                "columns (declare them)",
            )


# Values ---------------------------------------------------------------------------------------


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes | bytearray) else str(value)


def _utc(value: Any) -> datetime:
    if isinstance(value, bytes | str):
        value = datetime.fromisoformat(_text(value))
    assert isinstance(value, datetime)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _autocommit(connection: Any) -> None:
    # mysqlclient has an autocommit() method; PyMySQL and mysql-connector an attribute.
    method = getattr(connection, "autocommit", None)
    if callable(method):
        method(True)
    else:
        connection.autocommit = True


def _converter(kind: str) -> Any:
    """What turns a row image's non-null value into the value the snapshot path delivers for
    the column's logical type; chosen once per column."""
    if kind == "bool":
        return bool
    if kind == "datetime":
        return _utc  # DATETIME holds no zone and is read as UTC, TIMESTAMP is UTC
    if kind == "date":
        return _as_date
    if kind == "float":
        return float
    if kind.startswith("decimal("):
        return _as_decimal
    if kind == "str":
        return _as_str
    return _as_is


def _as_date(value: Any) -> Any:
    return value.date() if isinstance(value, datetime) else _as_is(value)


def _as_decimal(value: Any) -> Decimal:
    return value if isinstance(value, Decimal) else Decimal(str(value))


def _as_str(value: Any) -> Any:
    return value.decode("utf-8") if isinstance(value, bytes | bytearray) else _as_is(value)


def _as_is(value: Any) -> Any:
    assert isinstance(value, int | str | float | Decimal | date)
    return value


class _Rows:
    """Rows collected column by column, written out as record batches of the stream."""

    def __init__(self, stream: Stream) -> None:
        self.schema = stream.schema()
        self.kinds = [c.type for c in stream.columns[:-1]]
        self.converters = [_converter(kind) for kind in self.kinds]
        self.columns: list[list[Any]] = [[] for _ in stream.columns]

    def __len__(self) -> int:
        return len(self.columns[0])

    def add(self, values: tuple[Any, ...], deleted: bool) -> None:
        if len(values) != len(self.converters):
            raise ValueError(f"a row of {len(values)} values for {len(self.converters)} columns")
        for column, value, convert in zip(self.columns, values, self.converters, strict=False):
            column.append(None if value is None else convert(value))
        self.columns[-1].append(deleted)

    def batch(self) -> pa.RecordBatch:
        arrays = [
            pa.array(values, type=field.type)
            for values, field in zip(self.columns, self.schema, strict=True)
        ]
        self.columns = [[] for _ in self.schema]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


Rows = _Rows
"""The rows a log read collects, by the public name a group's read (mariadb_group.py) uses."""


# Reads ----------------------------------------------------------------------------------------


class SnapshotReading(TableReading):
    """The whole table in key order in one consistent snapshot; its position is the snapshot's
    binlog one."""

    connector: MariadbBinlogConnector

    def __init__(self, connector: MariadbBinlogConnector, stream: Stream) -> None:
        super().__init__(connector, stream, None, None, limit=None)

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        from dogana_provider.dialects.base import fetch_all

        connector = self.connector
        connector.as_declared(self.stream)
        with connector.table_snapshot() as (connection, produced_at):
            problem = unfit(binlog_state(connection))
            if problem is not None:
                raise RefusedRead("binlog_unfit", problem)
            status = {
                _text(name).lower(): _text(value)
                for name, value in fetch_all(
                    connection, "SHOW STATUS LIKE %s", ("binlog_snapshot_%",)
                )
            }
            self.log_position = BinlogPosition.of_file(
                status["binlog_snapshot_file"], int(status["binlog_snapshot_position"])
            ).as_int()
            self.produced_at = produced_at
            yield from self._select(connection)
        self.finished = True

    def proof(self) -> Proof:
        if self.produced_at is None or self.log_position is None or not self.finished:
            raise ConnectorError("the read is not finished: read its batches first")
        why = (
            f"the whole table in a consistent snapshot at binlog {position_text(self.log_position)}"
        )
        return Proof(
            Shape.complete(), self.produced_at, SNAPSHOT_CLOCK, None, self.log_position, why
        )


def log_events_reader(
    connector: MariadbBinlogConnector,
    since: BinlogPosition,
    state: Mapping[str, Any],
    schemas: Sequence[str],
    tables: Sequence[str],
) -> Any:
    """The reader of a log read from since (state: binlog_state, whose head file names since's
    file): transaction bounds, statements, table maps and row events, of the schemas' and the
    tables' rows. The library filters row events by schema and by table apart: a read of
    several tables tells the (schema, table) pairs apart itself."""
    from pymysqlreplication.event import (  # type: ignore[import-untyped]
        MariadbGtidEvent,
        QueryEvent,
        RotateEvent,
        XidEvent,
    )
    from pymysqlreplication.row_event import (  # type: ignore[import-untyped]
        DeleteRowsEvent,
        TableMapEvent,
        UpdateRowsEvent,
        WriteRowsEvent,
    )

    return binlog_reader(
        connector.settings(),
        connector.config.get("server_id"),
        log_file=since.file(state["head_file"]),
        log_pos=since.offset,
        only_events=[
            MariadbGtidEvent,
            QueryEvent,
            XidEvent,
            RotateEvent,
            TableMapEvent,
            WriteRowsEvent,
            UpdateRowsEvent,
            DeleteRowsEvent,
        ],
        only_schemas=list(schemas),
        only_tables=list(tables),
        use_column_name_cache=True,
    )


def events_to(reader: Any, end: BinlogPosition) -> Iterator[tuple[Any, BinlogPosition]]:
    """The reader's events up to end, each with the position it ends at; a rotation to the next
    file is no change of any table."""
    from pymysqlreplication.event import RotateEvent  # type: ignore[import-untyped]

    for event in reader:
        if isinstance(event, RotateEvent):
            continue
        here = BinlogPosition.of_file(reader.log_file, event.packet.log_pos)
        if here.as_int() > end.as_int():
            return
        yield event, here


def ends_transaction(event: Any) -> bool:
    """A transaction's end: its XID event, or the COMMIT a table that is not transactional
    writes."""
    from pymysqlreplication.event import QueryEvent, XidEvent  # type: ignore[import-untyped]

    return isinstance(event, XidEvent) or (
        isinstance(event, QueryEvent) and _text(event.query).strip().upper() == "COMMIT"
    )


class LogReading(Reading):
    """The changes the binlog holds from a position to its end (or to a backfill's)."""

    def __init__(
        self,
        connector: MariadbBinlogConnector,
        stream: Stream,
        since: BinlogPosition,
        *,
        limit: int | None,
        end: BinlogPosition | None,
        skip: int = 0,
    ) -> None:
        self.connector = connector
        self.stream = stream
        self.since = since
        # A resume inside the transaction after since: its first rows were read.
        self.skip = skip
        self.inside_rows = 0
        self.limit = limit
        self.end = end
        self.at = since
        self.rows = 0
        self.produced_at: datetime | None = None
        self.finished = False
        self.stopped_by_limit = False
        self.last_commit: datetime | None = None
        self.images = RowImages()

    def checkpoint(self) -> Position:
        if self.inside_rows:
            # A limit cut the transaction after at: the position names the rows read of it.
            return inside_position(self.at.as_int(), self.inside_rows)
        return self.at.as_int()

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        connector = self.connector
        connection = connector.session()
        try:
            state = self._prepare(connection)
            catalog = connector.catalog(connection)
            connector.as_declared(self.stream)
        finally:
            connection.close()
        yield from self._changes(state, catalog)
        self.finished = True

    def _prepare(self, connection: Any) -> dict[str, Any]:
        """The server checked (row images logged, the position's file kept) and the read's
        end and instant fixed: the clock, then the binlog's end."""
        connector, since = self.connector, self.since
        state = binlog_state(connection)
        problem = unfit(state)
        if problem is not None:
            raise RefusedRead("binlog_unfit", f"{problem}; then {full_read(connector.table)}")
        file = since.file(state["head_file"])
        if file not in state["files"]:
            raise RefusedRead(
                "binlog_purged",
                f"binlog file {file} holding the position {since} was purged (kept: "
                f"{', '.join(state['files'])}; binlog_expire_logs_seconds is "
                f"{state['binlog_expire_logs_seconds']}), and the changes after it with it; "
                f"{full_read(connector.table)}",
            )
        if since.offset > state["files"][file]:
            raise ConnectorError(f"the position {since} is past the end of binlog file {file}")
        if self.end is None:
            self.produced_at = state["clock"]
            self.end = BinlogPosition.of_int(state["head"])
        if self.end.as_int() < since.as_int():
            raise ConnectorError(f"the position {since} is after the binlog's end {self.end}")
        return state

    def _changes(
        self, state: Mapping[str, Any], catalog: list[tuple[str, tuple[Any, ...], bool]]
    ) -> Iterator[pa.RecordBatch]:
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

        connector, end = self.connector, self.end
        assert end is not None
        schema, table = connector.names()
        schema = schema or _text(self._database())
        names = [name for name, _, _ in catalog]
        key = [names.index(k) for k in self.stream.key]
        rows = _Rows(self.stream)
        pending: list[tuple[tuple[Any, ...], bool]] = []
        reader = log_events_reader(connector, self.since, state, [schema], [table])
        try:
            for event, here in events_to(reader, end):
                if isinstance(event, MariadbGtidEvent):
                    pending = []
                elif isinstance(event, TableMapEvent):
                    self._same_columns(event, catalog)
                elif isinstance(event, WriteRowsEvent | UpdateRowsEvent | DeleteRowsEvent):
                    pending.extend(self._rows_of(event, key))
                elif isinstance(event, QueryEvent):
                    self._statement(event, schema, table)
                    statement = _text(event.query).strip().upper()
                    if not pending and not statement.startswith(("COMMIT", "BEGIN")):
                        self.at = here  # a DDL statement is its own transaction
                        continue
                if ends_transaction(event):
                    # The first transaction after since is the one a resume inside skips into.
                    skipped = self.skip if self.at == self.since else 0
                    self.inside_rows = min(skipped, len(pending))
                    for values, deleted in pending[skipped:]:
                        if self.limit is not None and self.rows >= self.limit:
                            self.stopped_by_limit = True
                            break
                        rows.add(values, deleted)
                        self.rows += 1
                        self.inside_rows += 1
                    if self.stopped_by_limit:
                        break
                    self.inside_rows = 0
                    pending = []
                    self.at = here
                    self.last_commit = datetime.fromtimestamp(event.timestamp, UTC)
                    if len(rows) >= connector.fetch_rows:
                        yield rows.batch()
        finally:
            reader.close()
        if not self.stopped_by_limit:
            self.at = end
        if len(rows):
            yield rows.batch()

    def _database(self) -> str:
        from dogana_provider.dialects.base import scalar

        connection = self.connector.session()
        try:
            return str(_text(scalar(connection, "SELECT DATABASE()")))
        finally:
            connection.close()

    def _statement(self, event: Any, schema: str, table: str) -> None:
        """A statement in the log changing the table without row events is refused."""
        query = _text(event.query)
        match = DDL.match(query)
        if match is None:
            return
        default = _text(event.schema)
        named = re.findall(r"(?:`([^`]+)`|(\w+))\s*\.\s*(?:`([^`]+)`|(\w+))|`([^`]+)`|(\w+)", query)
        targets = set()
        for quoted_db, db, quoted_name, name, quoted_alone, alone in named:
            if quoted_name or name:
                targets.add((quoted_db or db, quoted_name or name))
            else:
                targets.add((default, quoted_alone or alone))
        if (schema, table) not in targets:
            return
        verb = match.group(1).split()[0].upper()
        if verb == "TRUNCATE":
            raise RefusedRead(
                "truncate_in_log",
                f"{self.connector.table} was truncated before binlog {self.at}: a truncate "
                f"deletes rows the log does not name; {full_read(self.connector.table)}",
            )
        raise RefusedRead(
            "relation_changed",
            f"{self.connector.table} was changed by {verb} in the log after {self.at}: a change "
            f"the log does not carry row by row (a default filled in, a rewrite); "
            f"{full_read(self.connector.table)}, under the new columns (declare them)",
        )

    def _same_columns(self, event: Any, catalog: list[tuple[str, tuple[Any, ...], bool]]) -> None:
        """The table map's columns are the table's now; and the row images are decoded with
        the catalog's signedness where the log does not carry it (binlog_row_metadata)."""
        members = [now[-1] if now[0] in (247, 248) else () for _, now, _ in catalog]
        logged = [
            (str(i), _logged(c, members[i] if i < len(members) else ()))
            for i, c in enumerate(event.columns)
        ]
        now = [(str(i), logged_now) for i, (_, logged_now, _) in enumerate(catalog)]
        if len(event.columns) == len(catalog):
            logged = [(catalog[i][0], t) for i, (_, t) in enumerate(logged)]
            now = [(name, t) for name, t, _ in catalog]
        difference = columns_difference(self.connector.table, "in the log", logged, now)
        if difference is not None:
            raise RefusedRead(
                "relation_changed",
                f"{difference}; a change the log does not carry row by row (a default filled "
                f"in, a rewrite) may be behind it: {full_read(self.connector.table)}",
            )
        for column, (_, logged_now, unsigned) in zip(event.columns, catalog, strict=True):
            column.unsigned = column.unsigned or unsigned
            if column.type == 247 and not column.enum_values:
                column.enum_values = ("", *logged_now[1])  # index 0 is the invalid value ''
            elif column.type == 248 and not column.set_values:
                column.set_values = logged_now[1]

    def _rows_of(
        self, event: Any, key: list[int], *, images: RowImages | None = None
    ) -> Iterator[tuple[tuple[Any, ...], bool]]:
        """A rows event's rows: an insert's or update's new row, a delete's tombstone, an
        update moving the key a tombstone for the old key first. The images are decoded by
        binlog_rows (the read's own RowImages, or the one given)."""
        from pymysqlreplication.row_event import (  # type: ignore[import-untyped]
            UpdateRowsEvent,
            WriteRowsEvent,
        )

        if not whole_rows(event, len(event.columns)):
            # A session may log with binlog_row_image other than the server's FULL: its images
            # lack columns, which would be delivered as nulls.
            raise RefusedRead(
                "partial_row_image",
                f"{self.connector.table}: the log holds rows of some columns only (a session "
                f"wrote with binlog_row_image other than FULL): {full_read(self.connector.table)}",
            )
        found = (images or self.images).of(event)
        width = len(self.stream.columns) - 1
        if isinstance(event, WriteRowsEvent):
            for new in found:
                yield new, False
        elif isinstance(event, UpdateRowsEvent):
            pairs = iter(found)
            for old, new in zip(pairs, pairs, strict=True):
                if [old[i] for i in key] != [new[i] for i in key]:
                    yield _key_only(old, key, width), True
                yield new, False
        else:
            for old in found:
                yield _key_only(old, key, width), True

    def proof(self) -> Proof:
        if not self.finished:
            raise ConnectorError("the read is not finished: read its batches first")
        if self.stopped_by_limit or self.produced_at is None or self.skip:
            why = unproven(self.stopped_by_limit, self.skip)
            instant = self.last_commit or datetime.now(UTC)
            return Proof(None, instant, CLOCK, self.since.as_int(), self.at.as_int(), why)
        return Proof(
            Shape.changes(checkpoint="sequence", tombstones=True),
            self.produced_at,
            CLOCK,
            self.since.as_int(),
            self.at.as_int(),
            f"every change the binlog holds from {self.since} to {self.at}, deletions included",
        )


def _logged(column: Any, catalog_members: tuple[str, ...] = ()) -> tuple[Any, ...]:
    """What a table map says of a column, as catalog() spells it; an ENUM's or SET's members
    are the catalog's where the log does not carry them (binlog_row_metadata below FULL)."""
    kind = _OLD_TEMPORAL.get(column.type, column.type)
    logged: tuple[Any, ...] = (kind,)
    if kind == 246:
        logged += (column.precision, column.decimals)
    elif kind in (17, 18, 19):
        logged += (getattr(column, "fsp", 0),)
    elif kind in (247, 248):
        members = (column.enum_values or [""])[1:] if kind == 247 else column.set_values
        logged += (tuple(members) if members else catalog_members,)
    return logged


def _members(column_type: str) -> tuple[str, ...]:
    """An ENUM's or a SET's members, from its catalog type: enum('a','it''s')."""
    return tuple(m.replace("''", "'") for m in re.findall(r"'((?:[^']|'')*)'", column_type))


def _key_only(old: tuple[Any, ...], key: list[int], width: int) -> tuple[Any, ...]:
    kept = set(key)
    return tuple(old[i] if i in kept else None for i in range(width))
