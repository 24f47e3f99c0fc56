"""A PostgreSQL table's changes from the database's own log: logical decoding with pgoutput.

    PgLogicalConnector({
        "conn_id": "shop_db",           # a postgres connection; the server runs wal_level=logical
        "table": "public.orders",       # one table per slot (see below)
        "slot": "dogana_orders",        # this pipeline's replication slot
    })

The slot and a publication for the table (named like the slot unless "publication" says
otherwise) belong to the pipeline. A read from no position (the contract's complete shape) is
the table's first delivery, or a reset: it drops the pipeline's slot if there is one, creates it
with CREATE_REPLICATION_SLOT ... LOGICAL pgoutput EXPORT_SNAPSHOT on a replication connection,
and reads the whole table in a REPEATABLE READ transaction that imports that snapshot (SET
TRANSACTION SNAPSHOT). The snapshot is the database exactly at the slot's consistent point, and
the slot decodes exactly the transactions committing after it, so the position the read issues
is that LSN and the log continues from it with no gap and no double.

A read from a position P (a sequence shape with tombstones) reads the transactions the slot
decodes with P <= commit LSN < L, L the WAL insert position read just after the source's clock
(T, the read's produced_at), once the WAL is flushed to L. Every transaction visible at T wrote
its commit record before T, below L, so the read holds every change up to T; any change after L
becomes visible after T. Its position is L (an integer, the ledger's sequence position). Not the
last commit's timestamp: that instant is earlier than the planner's boundary (until) whenever
the table was quiet, and the log proves more: nothing committed between it and T.

Why the SQL functions, pg_logical_slot_peek_binary_changes, and not the streaming replication
protocol: a peek never moves the slot. Nothing a read does, finished, refused or killed, can
release a change; the slot's confirmed position moves only by pg_replication_slot_advance,
called at the start of the next read up to its since, the position the receiver's ledger holds
as published (the planner's request carries it). The order is the peer's: sink, then ledger,
then checkpoint. A rejected or killed delivery leaves the ledger at P, and the next read reads
the same changes again. A caller resuming from a position that no receiver published (the
conformance suite, a person at a terminal) moves the slot there all the same: resume only from
a ledger's position. The cost: each peek decodes from the slot's restart point, and the
server materialises the changes up to L before the first row arrives (in work_mem, then temp
files); the rows stream to the worker through a server-side cursor.

A position behind the slot's confirmed one (slot_behind: the changes between are gone from
it), a dropped or invalidated slot (slot_dropped, slot_lost), a TRUNCATE (truncate_in_log), a
column added, removed or retyped (relation_changed: a Relation message whose columns differ
from the table's catalog now, or the catalog from the declared "columns", which is how a change
between two reads is seen) and an update whose unchanged TOAST value the log does not carry
(unchanged_toast) each refuse the read by name. Nothing published changes; the message says
what to run: a full read, which resets the chain.

Rows: an insert or update is the new row, a delete a tombstone (the key from the log, every
other column null, the deleted column true), an update that moves the key a tombstone for the
old key, then the new row. Values come as text from the decoding session, run in UTC with ISO
dates, and are cast by Arrow per column and batch into the stream's types (decimal scale,
microseconds with zone, NULL apart from '', bigints past 2**53). The extract folds each key to
its last row.

One table per slot: the slot's confirmed position is one for all its tables, and advancing it
for one table's published position would release another's unpublished changes. Tables
published together share one slot and one read of the log (pg_group.py, LogReading.tables).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc

from dogana_core.shape import Shape
from dogana_core.values import Position, Scalar
from dogana_provider.connectors import pgoutput
from dogana_provider.connectors.contract import (
    ConnectorError,
    Health,
    Proof,
    Reading,
    RefusedRead,
    ReleasedPosition,
    Stream,
    StreamColumn,
)
from dogana_provider.connectors.log_capture import (
    LogConnector,
    TableReading,
    inside_position,
    undeclared,
    unproven,
)
from dogana_provider.connectors.log_capture import columns_difference as _difference
from dogana_provider.connectors.log_capture import full_read as _full_read
from dogana_provider.connectors.pgoutput import lsn_of, lsn_text
from dogana_provider.sources.columns import cast_text

SLOT_NAME = re.compile(r"[a-z0-9_]{1,63}")
SNAPSHOT_NAME = re.compile(r"[0-9A-F]+(-[0-9A-F]+)+")
CLOCK = "the database's clock, read just before the log's end position"
SNAPSHOT_CLOCK = "the database's clock after the slot's snapshot, or before its first later commit"
FLUSH_WAIT = timedelta(seconds=30)
# A worker killed mid-read leaves its server process holding the slot until that process sees
# the connection gone: at its next message to the worker, after the decoding under way.
RELEASE_WAIT = timedelta(seconds=30)
RowMessage = pgoutput.Insert | pgoutput.Update | pgoutput.Delete
ROW_MESSAGES = (pgoutput.Insert, pgoutput.Update, pgoutput.Delete)


class PgLogicalConnector(LogConnector):
    """A PostgreSQL table read from its log through a logical replication slot (module text)."""

    kind = "pg_logical"
    options: ClassVar[Mapping[str, str]] = {
        "conn_id": "the Airflow postgres connection of the source (wal_level=logical)",
        "table": "the table, schema-qualified with a dot where needed",
        "slot": "this pipeline's replication slot: lower-case letters, digits and _",
        "publication": "the publication the slot reads (default: named like the slot)",
        "columns": "column -> logical type, in order: the columns the pipeline delivers; a log "
        "or a table whose columns differ is refused (relation_changed)",
        "deleted_column": "the bool column a delete becomes (default deleted)",
        "fetch_rows": "rows fetched from the server at a time (default 10000)",
    }
    required = ("conn_id", "table", "slot")
    snapshot_clock = SNAPSHOT_CLOCK

    # Configuration ----------------------------------------------------------------------------

    @property
    def slot(self) -> str:
        return str(self.config.get("slot", ""))

    @property
    def publication(self) -> str:
        return str(self.config.get("publication", self.slot))

    def check(self) -> tuple[str, ...]:
        problems = self.name_problems()
        for option in ("slot", "publication"):
            value = self.config.get(option)
            if option in self.config and (
                not isinstance(value, str) or not SLOT_NAME.fullmatch(value)
            ):
                problems.append(
                    f"{option}: {value!r} is not a slot's name (lower-case letters, digits and _, "
                    "at most 63)"
                )
        problems += self.shape_problems()
        return tuple(problems)

    def open(self) -> None:
        from dogana_provider.dialects import POSTGRES

        self.open_source(POSTGRES, "postgres", "logical decoding is PostgreSQL's")

    def session(self) -> Any:
        """A connection to the source, autocommit, in UTC with ISO dates: the text the log's
        values are printed in."""
        connection = self.hook.get_conn()
        connection.autocommit = True
        # One round trip for the four settings, as SET would make them: for the session.
        connection.execute(
            "SELECT set_config('TimeZone', 'UTC', false), "
            "set_config('DateStyle', 'ISO, MDY', false), "
            "set_config('extra_float_digits', '3', false), "
            "set_config('bytea_output', 'hex', false)"
        )
        return connection

    @contextmanager
    def table_snapshot(self) -> Iterator[tuple[Any, datetime]]:
        """A session in a read-only REPEATABLE READ transaction of its own, and its instant."""
        connection = self.session()
        try:
            connection.autocommit = False
            connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            now = connection.execute("SELECT clock_timestamp()").fetchone()[0]
            yield connection, now.astimezone(UTC)
            connection.rollback()
        finally:
            connection.close()

    # The catalog and the slot -------------------------------------------------------------------

    def catalog(self, connection: Any) -> tuple[int, tuple[tuple[str, int, int], ...]]:
        """The table's oid and its columns now: (name, type oid, typmod), in order."""
        rows = connection.execute(
            "SELECT c.oid::bigint, a.attname, a.atttypid::int, a.atttypmod "
            "FROM (SELECT to_regclass(%s)::oid) AS c (oid) LEFT JOIN pg_attribute AS a "
            "ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
            (self.quoted(),),
        ).fetchall()
        if not rows or rows[0][0] is None:
            raise ConnectorError(f"{self.table}: no such table")
        columns = tuple((str(n), int(t), int(m)) for _, n, t, m in rows if n is not None)
        return int(rows[0][0]), columns

    def primary_key(self, connection: Any) -> tuple[str, ...]:
        rows = connection.execute(
            "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
            "AND a.attnum = ANY (i.indkey) WHERE i.indrelid = to_regclass(%s) AND i.indisprimary "
            "ORDER BY array_position(i.indkey::int2[], a.attnum)",
            (self.quoted(),),
        ).fetchall()
        return tuple(str(name) for (name,) in rows)

    def slot_state(self, connection: Any) -> dict[str, Any] | None:
        """The slot's row as slots() gives it, or None when there is no such slot."""
        found = slots(connection, self.slot)
        return found[0] if found else None

    def status(self) -> dict[str, Any]:
        """The slot as `dogana cdc status` shows it; {"slot": name, "exists": False} without it."""
        self.connect()
        connection = self.session()
        try:
            state = self.slot_state(connection)
        finally:
            connection.close()
        return {"slot": self.slot, "exists": False} if state is None else state

    def drop_slot(self) -> bool:
        """Drop the pipeline's slot, releasing the WAL it holds; False when there was none."""
        self.connect()
        connection = self.session()
        try:
            return drop_slot(connection, self.slot)
        finally:
            connection.close()

    def ensure_publication(self, connection: Any) -> None:
        found = connection.execute(
            "SELECT 1 FROM pg_publication WHERE pubname = %s", (self.publication,)
        ).fetchone()
        name = self.dialect.quote(self.publication)
        if found is None:
            connection.execute(f"CREATE PUBLICATION {name} FOR TABLE {self.quoted()}")
            return
        member = connection.execute(
            "SELECT 1 FROM pg_publication_rel WHERE prpubid = (SELECT oid FROM pg_publication "
            "WHERE pubname = %s) AND prrelid = to_regclass(%s)",
            (self.publication, self.quoted()),
        ).fetchone()
        if member is None:
            connection.execute(f"ALTER PUBLICATION {name} ADD TABLE {self.quoted()}")

    # Operations -------------------------------------------------------------------------------

    def discover(self) -> tuple[Stream, ...]:
        from dogana_provider.sources.discover import discover_columns

        self.connect()
        connection = self.session()
        try:
            columns = [
                StreamColumn(c.name, c.type, c.nullable)
                for c in discover_columns(connection, self.dialect, self.table)
            ]
            key = self.primary_key(connection)
        finally:
            connection.close()
        return (self.table_stream(columns, key),)

    def health(self) -> Health:
        problems = self.validate()
        if problems:
            return Health(False, "; ".join(problems))
        try:
            self.connect()
            connection = self.session()
            try:
                level = connection.execute("SHOW wal_level").fetchone()[0]
                state = self.slot_state(connection)
            finally:
                connection.close()
        except Exception as exc:  # health reports whatever stops the source; it never raises
            return Health(False, f"{type(exc).__name__}: {exc}")
        if level != "logical":
            return Health(False, f"wal_level is {level}: logical decoding needs wal_level=logical")
        if state is None:
            return Health(True, f"no slot {self.slot} yet: the first read creates it")
        if state["wal_status"] == "lost":
            return Health(False, f"slot {self.slot} lost the WAL it needed: run a full read")
        return Health(
            True,
            f"slot {self.slot} confirmed {state['confirmed_lsn']}, "
            f"{state['lag_bytes']} bytes behind, holding {state['wal_retained_bytes']} bytes "
            "of WAL",
        )

    # Reads (LogConnector chooses which) ------------------------------------------------------

    def snapshot_reading(self, stream: Stream) -> Reading:
        return SnapshotReading(self, stream)

    def log_reading(
        self, stream: Stream, since: int, *, limit: int | None, end: int | None, skip: int = 0
    ) -> Reading:
        return LogReading(self, stream, since, limit=limit, end=end, skip=skip)

    def log_position(self, value: Scalar | None) -> int:
        return _position(value)

    def reversed_backfill(self, first: int, last: int) -> str | None:
        return f"{lsn_text(last)} is before {lsn_text(first)}" if last < first else None


def slots(
    connection: Any, slot: str | None = None, *, lag_in_seconds: bool = False
) -> list[dict[str, Any]]:
    """The database's logical slots (or the one named): each one's plugin, confirmed LSN, the
    WAL's head, how many bytes of WAL it has not confirmed (lag_bytes) and how many it holds
    back from removal (wal_retained_bytes, from its restart point), how long ago its oldest
    unconfirmed change committed (lag_seconds, when asked, where it can tell), wal_status and
    whether a session is using it."""
    cursor = connection.execute(
        "SELECT slot_name AS slot, plugin, database, confirmed_flush_lsn::text AS confirmed_lsn, "
        "pg_current_wal_insert_lsn()::text AS head_lsn, "
        "pg_wal_lsn_diff(pg_current_wal_insert_lsn(), confirmed_flush_lsn)::bigint AS lag_bytes, "
        "pg_wal_lsn_diff(pg_current_wal_insert_lsn(), restart_lsn)::bigint AS wal_retained_bytes, "
        "wal_status, active FROM pg_replication_slots WHERE slot_type = 'logical' "
        "AND (%(slot)s::text IS NULL OR slot_name = %(slot)s) ORDER BY slot_name",
        {"slot": slot},
    )
    names = [column.name for column in cursor.description]
    found = [{"exists": True, **dict(zip(names, row, strict=True))} for row in cursor.fetchall()]
    if lag_in_seconds:  # a decode of the slot's first change: for people, not for each read
        for state in found:
            state["lag_seconds"] = lag_seconds(connection, state)
    return found


def lag_seconds(connection: Any, state: Mapping[str, Any]) -> float | None:
    """How long ago the oldest change the slot has not confirmed committed (0.0 when none), for
    a pgoutput slot whose publication is named like it (as this connector makes them); None
    for any other slot, or one a session is reading."""
    if state["plugin"] != "pgoutput" or state["active"]:
        return None
    publication = connection.execute(
        "SELECT 1 FROM pg_publication WHERE pubname = %s", (state["slot"],)
    ).fetchone()
    if publication is None:
        return None
    rows = connection.execute(
        "SELECT data, clock_timestamp() FROM pg_logical_slot_peek_binary_changes(%s, NULL, 1, "
        "'proto_version', '1', 'publication_names', %s)",
        (state["slot"], state["slot"]),
    ).fetchall()
    for data, now in rows:
        message = pgoutput.decode(data)
        if isinstance(message, pgoutput.Begin):
            return max(0.0, (now - message.committed_at).total_seconds())
    return 0.0


def drop_slot(connection: Any, slot: str) -> bool:
    """Drop a slot, releasing the WAL it holds; False when there was none."""
    dropped = connection.execute(
        "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s",
        (slot,),
    ).fetchall()
    return bool(dropped)


def declared_difference(connector: PgLogicalConnector, stream: Stream) -> str | None:
    """How the table's columns now differ from the declared ones, or None."""
    now = [(c.name, c.type) for c in stream.columns[:-1]]  # the deleted column is the last
    return undeclared(connector.table, connector.config.get("columns"), now)


def _position(value: Scalar | None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConnectorError(f"{value!r} is not a log position (an LSN as an integer)")
    return value


# Values ----------------------------------------------------------------------------------------


def _datetime(text: str) -> datetime:
    if text in ("infinity", "-infinity"):
        raise ValueError(f"{text} is no instant a delivery can hold")
    value = datetime.fromisoformat(text)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


PARSERS: dict[str, Callable[[str], Any]] = {
    "int": int,
    "float": float,
    "str": str,
    "date": date.fromisoformat,
    "datetime": _datetime,
}


def parser(logical: str) -> Callable[[str], Any]:
    """How a column's text from the log becomes, value by value, what the snapshot path
    delivers: for the values Arrow refuses to cast, so that the one that does not fit is named
    (bool is Arrow's always: the log prints t or f)."""
    if logical.startswith("decimal("):
        return Decimal
    try:
        return PARSERS[logical]
    except KeyError:
        raise ConnectorError(f"a column of type {logical!r} has no dogana type") from None


class _Rows:
    """The log's text values collected row by row, turned into columns once per batch and cast
    by Arrow into a record batch of the stream (a value Arrow refuses is parsed alone, to name
    it)."""

    def __init__(self, stream: Stream) -> None:
        self.schema = stream.schema()
        # The deleted column is the last, and no value of the log's tuples.
        self.types = [c.type for c in stream.columns[:-1]]
        self.rows: list[tuple[str | None, ...]] = []
        self.deleted: list[bool] = []

    def __len__(self) -> int:
        return len(self.rows)

    def add(self, values: tuple[pgoutput.Value, ...], deleted: bool) -> None:
        self.rows.append(values)  # type: ignore[arg-type]  # rows_of leaves no UNCHANGED
        self.deleted.append(deleted)

    def batch(self) -> pa.RecordBatch:
        columns = zip(*self.rows, strict=True)
        arrays = [
            _column(list(values), logical, field.type)
            for values, logical, field in zip(columns, self.types, self.schema, strict=False)
        ]
        arrays.append(pa.array(self.deleted, pa.bool_()))
        self.rows, self.deleted = [], []
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


def _column(values: list[str | None], logical: str, arrow: pa.DataType) -> pa.Array:
    """One column's text from the log as the snapshot path delivers it."""
    if logical == "bool":
        return pc.equal(pa.array(values, pa.string()), "t")
    cast = cast_text(values, arrow)
    if cast is not None:
        return cast
    parse, parsed = parser(logical), []
    for value in values:
        try:
            parsed.append(None if value is None else parse(value))
        except (ValueError, ArithmeticError) as exc:
            raise ConnectorError(f"{value!r} in the log is no {logical}: {exc}") from None
    return pa.array(parsed, type=arrow)


# Reads -----------------------------------------------------------------------------------------


class SnapshotReading(TableReading):
    """The whole table at a new slot's consistent point; its position is that LSN."""

    connector: PgLogicalConnector

    def __init__(self, connector: PgLogicalConnector, stream: Stream) -> None:
        super().__init__(connector, stream, None, None, limit=None)

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        import psycopg2  # type: ignore[import-untyped]
        from psycopg2.extras import LogicalReplicationConnection  # type: ignore[import-untyped]

        from dogana_provider.sources.bulk import libpq_conninfo

        connector = self.connector
        difference = declared_difference(connector, self.stream)
        if difference is not None:
            raise RefusedRead(
                "relation_changed", f"{difference}: declare the columns as they are now"
            )
        connection = connector.session()
        try:
            _wait_until_released(connection, connector.slot)
            drop_slot(connection, connector.slot)
            connector.ensure_publication(connection)
            replication = psycopg2.connect(
                libpq_conninfo(connection), connection_factory=LogicalReplicationConnection
            )
            try:
                cursor = replication.cursor()
                cursor.execute(
                    f"CREATE_REPLICATION_SLOT {connector.dialect.quote(connector.slot)} "
                    "LOGICAL pgoutput EXPORT_SNAPSHOT"
                )
                _, consistent, snapshot_name, _ = cursor.fetchone()
                connection.autocommit = False
                connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                if not SNAPSHOT_NAME.fullmatch(snapshot_name):
                    raise ConnectorError(f"{snapshot_name!r} is not an exported snapshot's name")
                # A utility statement binds no parameter; the name is checked above.
                connection.execute(f"SET TRANSACTION SNAPSHOT '{snapshot_name}'")
            finally:
                # The imported snapshot is the transaction's now; the exporter may go.
                replication.close()
            self.log_position = lsn_of(consistent)
            self.produced_at = self._instant(self.log_position)
            yield from self._select(connection)
            connection.rollback()
        finally:
            connection.close()
        self.finished = True

    def _instant(self, consistent: int) -> datetime:
        """The instant the snapshot shows: the clock just after the slot was made, or, when a
        transaction committed after the consistent point before that, just before its commit
        stamp. Read on a second session, since the first holds the imported snapshot."""
        connector = self.connector
        probe = connector.session()
        try:
            now, head = probe.execute(
                "SELECT clock_timestamp(), pg_current_wal_insert_lsn()::text"
            ).fetchone()
            _wait_for_flush(probe, head)
            first = _first_commit(probe, connector, consistent, lsn_of(head))
        finally:
            probe.close()
        instant = now.astimezone(UTC)
        if first is not None:
            instant = min(instant, first - timedelta(microseconds=1))
        return instant

    def proof(self) -> Proof:
        if self.produced_at is None or not self.finished:
            raise ConnectorError("the read is not finished: read its batches first")
        why = f"the whole table in the snapshot of slot {self.connector.slot}'s consistent point"
        return Proof(
            Shape.complete(), self.produced_at, SNAPSHOT_CLOCK, None, self.log_position, why
        )


def _wait_for_flush(connection: Any, lsn: str) -> None:
    """Until the WAL is flushed to lsn: logical decoding reads only flushed WAL."""
    deadline = time.monotonic() + FLUSH_WAIT.total_seconds()
    pause = 0.001  # the WAL writer flushes within wal_writer_delay; most waits are far shorter
    while not connection.execute(
        "SELECT pg_current_wal_flush_lsn() >= %s::pg_lsn", (lsn,)
    ).fetchone()[0]:
        if time.monotonic() > deadline:
            raise ConnectorError(f"the WAL was not flushed to {lsn} within {FLUSH_WAIT}")
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def _wait_until_released(connection: Any, slot: str) -> None:
    """Until no session holds the slot: a read killed a moment ago still does, until its
    server process ends."""
    deadline = time.monotonic() + RELEASE_WAIT.total_seconds()
    while True:
        row = connection.execute(
            "SELECT active_pid FROM pg_replication_slots WHERE slot_name = %s", (slot,)
        ).fetchone()
        if row is None or row[0] is None:
            return
        if time.monotonic() > deadline:
            raise ConnectorError(
                f"replication slot {slot} is held by server process {row[0]} after "
                f"{RELEASE_WAIT}: another read of this pipeline, or a killed one's process still "
                f"decoding; let it end, or end it: SELECT pg_terminate_backend({row[0]})"
            )
        time.sleep(0.05)


def _first_commit(
    connection: Any, connector: PgLogicalConnector, start: int, end: int
) -> datetime | None:
    """The commit stamp of the slot's first transaction committing in [start, end), or None."""
    rows = connection.execute(
        "SELECT data FROM pg_logical_slot_peek_binary_changes(%s, %s::pg_lsn, 1, "
        "'proto_version', '1', 'publication_names', %s)",
        (connector.slot, lsn_text(end), connector.publication),
    ).fetchall()
    for (data,) in rows:
        message = pgoutput.decode(data)
        if isinstance(message, pgoutput.Begin) and start <= message.final_lsn < end:
            return message.committed_at
    return None


def _fetched(cursor: Any, size: int) -> Iterator[bytes]:
    """A cursor's one column, fetched size rows at a time: a call into the driver per batch,
    not per row."""
    while rows := cursor.fetchmany(size):
        for (data,) in rows:
            yield data


class LogReading(Reading):
    """The changes the slot decodes from a position to the log's end (or to a backfill's)."""

    def __init__(
        self,
        connector: PgLogicalConnector,
        stream: Stream,
        since: int,
        *,
        limit: int | None,
        end: int | None,
        skip: int = 0,
    ) -> None:
        self.connector = connector
        self.stream = stream
        self.since = since
        # A resume inside the transaction committing at since: its first rows were read.
        self.skip = skip
        self.inside: int | None = None
        self.inside_rows = 0
        self.limit = limit
        self.end = end
        self.at = since
        self.rows = 0
        self.produced_at: datetime | None = None
        self.finished = False
        self.stopped_by_limit = False
        self.last_commit: datetime | None = None

    def checkpoint(self) -> Position:
        if self.inside is not None and self.inside_rows:
            # A limit cut this transaction: the position names its commit and the rows read.
            return inside_position(self.inside, self.inside_rows)
        return self.at

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        for _, batch in self.tables(((self.connector, self.stream),)):
            yield batch

    def tables(
        self, members: Sequence[tuple[PgLogicalConnector, Stream]]
    ) -> Iterator[tuple[str, pa.RecordBatch]]:
        """The changes of several tables the slot's publication holds, in one read of the log
        to one end: each batch with its table's name. A transaction is in the read whole, every
        table's changes of it, or not at all."""
        connection = self.connector.session()
        try:
            self._prepare(connection)
            targets = {}
            for member, stream in members:
                relid, declared = member.catalog(connection)
                _as_declared(member, stream)
                targets[relid] = _Target(member, stream, declared)
            yield from self._changes(connection, targets)
        finally:
            connection.close()
        self.finished = True

    def _prepare(self, connection: Any) -> None:
        """The slot checked, moved up to the published position (since), and the read's end
        and instant fixed: the clock, then the WAL's end, once flushed."""
        connector, since = self.connector, self.since
        encoding = connection.execute("SHOW server_encoding").fetchone()[0]
        if encoding != "UTF8":
            # pgoutput prints values in the server's encoding, and the log is bytes.
            raise ConnectorError(
                f"the source's server_encoding is {encoding}: the log is read as UTF8 only"
            )
        _wait_until_released(connection, connector.slot)
        state = connector.slot_state(connection)
        run = f"{_full_read(connector.table)}, which creates slot {connector.slot} again"
        if state is None:
            raise RefusedRead(
                "slot_dropped",
                f"replication slot {connector.slot} is gone, and with it the changes after "
                f"{lsn_text(since)}; {run}",
            )
        if state["wal_status"] == "lost":
            raise RefusedRead(
                "slot_lost",
                f"replication slot {connector.slot} lost the WAL after {lsn_text(since)} "
                f"(max_slot_wal_keep_size); {run}",
            )
        confirmed = lsn_of(state["confirmed_lsn"])
        if since < confirmed:
            raise ReleasedPosition(
                "slot_behind",
                f"the position {lsn_text(since)} is before slot {connector.slot}'s confirmed "
                f"{lsn_text(confirmed)}: the changes between are gone from it. If a receiver "
                f"published {lsn_text(confirmed)} or later, they are published and this read's "
                f"plan is stale: plan again; otherwise {run}",
                since=since,
                released=confirmed,
            )
        if self.end is None and since > confirmed and not self.skip:
            # since is the position the receiver's ledger holds as published.
            connection.execute(
                "SELECT pg_replication_slot_advance(%s, %s::pg_lsn)",
                (connector.slot, lsn_text(since)),
            )
        if self.end is None:
            now, head = connection.execute(
                "SELECT clock_timestamp(), pg_current_wal_insert_lsn()::text"
            ).fetchone()
            self.produced_at = now.astimezone(UTC)
            self.end = lsn_of(head)
        else:
            self.produced_at = None
        _wait_for_flush(connection, lsn_text(self.end))

    def _changes(
        self, connection: Any, targets: Mapping[int, _Target]
    ) -> Iterator[tuple[str, pa.RecordBatch]]:
        connector, end = self.connector, self.end
        assert end is not None
        take = False
        connection.autocommit = False
        cursor = connection.cursor(name="dogana_log")
        cursor.execute(
            "SELECT data FROM pg_logical_slot_peek_binary_changes(%s, %s::pg_lsn, NULL, "
            "'proto_version', '1', 'publication_names', %s)",
            (connector.slot, lsn_text(end), connector.publication),
            binary=True,  # the messages as their bytes, not spelled in hexadecimal
        )
        for data in _fetched(cursor, connector.fetch_rows):
            message = pgoutput.decode(data)
            if isinstance(message, ROW_MESSAGES):  # most messages: first
                target = targets.get(message.relation_id) if take else None
                if target is not None and not self._collect(target, target.rows_of(message)):
                    break
                continue
            if isinstance(message, pgoutput.Begin):
                if message.final_lsn >= end:
                    break
                take = message.final_lsn >= self.since
                self.inside, self.inside_rows = (message.final_lsn if take else None), 0
                continue
            if isinstance(message, pgoutput.Relation):
                # Sent once per relation and session, maybe in a transaction before since.
                if message.relation_id in targets:
                    targets[message.relation_id].same_columns(message)
                continue
            if not take:
                continue
            if isinstance(message, pgoutput.Commit):
                self.at, self.last_commit = message.end_lsn, message.committed_at
                self.inside = None
                for target in targets.values():
                    if len(target.rows) >= connector.fetch_rows:
                        yield target.member.table, target.rows.batch()
                continue
            if isinstance(message, pgoutput.Truncate):
                for relid in message.relation_ids:
                    if relid in targets:
                        table = targets[relid].member.table
                        raise RefusedRead(
                            "truncate_in_log",
                            f"{table} was truncated in the transaction before "
                            f"{lsn_text(self.at)}: a truncate deletes rows the log does not "
                            f"name; {_full_read(table)}",
                        )
        cursor.close()
        connection.rollback()
        if not self.stopped_by_limit:
            self.at = max(self.at, end)
        for target in targets.values():
            if len(target.rows):
                yield target.member.table, target.rows.batch()

    def _collect(
        self, target: _Target, changed: list[tuple[tuple[pgoutput.Value, ...], bool]]
    ) -> bool:
        """One change's rows into its table's; False once the limit stops the read."""
        if not self.skip and self.limit is None:
            for values, deleted in changed:
                target.rows.add(values, deleted)
            self.rows += len(changed)
            self.inside_rows += len(changed)
            return True
        for values, deleted in changed:
            if self.inside == self.since and self.inside_rows < self.skip:
                self.inside_rows += 1
                continue
            if self.limit is not None and self.rows >= self.limit:
                self.stopped_by_limit = True
                return False
            target.rows.add(values, deleted)
            self.rows += 1
            self.inside_rows += 1
        return True

    def proof(self) -> Proof:
        if not self.finished:
            raise ConnectorError("the read is not finished: read its batches first")
        if self.stopped_by_limit or self.produced_at is None or self.skip:
            why = unproven(self.stopped_by_limit, self.skip)
            instant = self.last_commit or datetime.now(UTC)
            return Proof(None, instant, CLOCK, self.since, self.at, why)
        return Proof(
            Shape.changes(checkpoint="sequence", tombstones=True),
            self.produced_at,
            CLOCK,
            self.since,
            self.at,
            f"every change slot {self.connector.slot} decoded from {lsn_text(self.since)} to "
            f"{lsn_text(self.at)}, deletions included",
        )


def _as_declared(member: PgLogicalConnector, stream: Stream) -> None:
    difference = declared_difference(member, stream)
    if difference is not None:
        raise RefusedRead(
            "relation_changed",
            f"{difference}; a change the log does not carry row by row (a default filled "
            f"in, a rewrite) may be behind it: {_full_read(member.table)}, under "
            "the new columns (declare them)",
        )


class _Target:
    """One table of a log read: its columns now, its key's places, the rows collected."""

    def __init__(
        self,
        member: PgLogicalConnector,
        stream: Stream,
        declared: tuple[tuple[str, int, int], ...],
    ) -> None:
        self.member = member
        self.stream = stream
        self.declared = declared
        names = [name for name, _, _ in declared]
        self.key = [names.index(k) for k in stream.key]
        self.width = len(stream.columns) - 1  # the deleted column is no value of the log's
        self.rows = _Rows(stream)

    def same_columns(self, relation: pgoutput.Relation) -> None:
        logged = [(c.name, c.type_oid, c.typmod) for c in relation.columns]
        difference = _difference(self.member.table, "in the log", logged, list(self.declared))
        if difference is not None:
            raise RefusedRead(
                "relation_changed",
                f"{difference}; a change the log does not carry row by row (a default filled "
                f"in, a rewrite) may be behind it: {_full_read(self.member.table)}",
            )

    def rows_of(self, message: RowMessage) -> list[tuple[tuple[pgoutput.Value, ...], bool]]:
        """The rows a change becomes: (values, deleted)."""
        if isinstance(message, pgoutput.Update):
            new, old = message.new, message.old
            if pgoutput.UNCHANGED in new:
                if old is None or message.old_is_key:
                    table = self.member
                    raise RefusedRead(
                        "unchanged_toast",
                        f"{table.table}: an update left a large value unchanged and "
                        "the log does not carry it; run ALTER TABLE "
                        f"{table.quoted()} REPLICA IDENTITY FULL, then a full read",
                    )
                new = tuple(
                    o if isinstance(v, pgoutput.Unchanged) else v
                    for v, o in zip(new, old, strict=True)
                )
            if old is not None and [old[i] for i in self.key] != [new[i] for i in self.key]:
                return [(_key_only(old, self.key, self.width), True), (new, False)]
            return [(new, False)]
        if isinstance(message, pgoutput.Insert):
            return [(message.new, False)]
        return [(_key_only(message.old, self.key, self.width), True)]


def _key_only(
    old: tuple[pgoutput.Value, ...], key: list[int], width: int
) -> tuple[pgoutput.Value, ...]:
    kept = set(key)
    return tuple(old[i] if i in kept else None for i in range(width))
