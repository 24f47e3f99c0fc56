"""One consistent read of a SQL source, stamped with the instant it shows (produced_at).

A Snapshot is one transaction of the source database, opened the way the spec's "Tables
together, Premise" requires: every statement of it, over every table, sees one committed state.

    SQLite       BEGIN (a read transaction; the snapshot is taken by its first read)
    PostgreSQL   REPEATABLE READ, READ ONLY (the snapshot is taken by the first statement)
    MariaDB      REPEATABLE READ, START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY

produced_at: which clock reading, and why
-----------------------------------------
produced_at must be an instant t such that every change committed up to t, t included, is
visible in the snapshot (Trust model 5). The snapshot is taken at some instant S that no clock
shows: at the first statement of the transaction, not at BEGIN. A clock read *inside* the
transaction (PostgreSQL's clock_timestamp(), say) happens after S, and a commit between S and
that reading would be declared visible while the snapshot misses it: untruthful. So the clock is
read *before* the snapshot, from the source's own clock (PostgreSQL clock_timestamp(), MariaDB
UTC_TIMESTAMP(6); an SQLite file has no server, so its clock is this machine's, the clock its
writers stamp with). Then t <= S, and every commit up to t is visible: truthful.

The residual gap is (t, S]: a transaction committing there is visible in the snapshot although it
happened after t. A whole-table read would then carry a row inserted after t (or miss one deleted
after t) while claiming the source at t. Where the database lets us see commits, we close the gap
instead of documenting it: a change marker is read before the clock and again inside the
snapshot, and when they differ the transaction is rolled back and taken again (bounded by
``settle_attempts``):

    SQLite       PRAGMA data_version, which changes when another connection commits;
    PostgreSQL   pg_current_snapshot(): a transaction finished between the two snapshots when
                 it was running (or not yet started) in the first and is finished in the second;
    MariaDB      no marker an ordinary client can read (the binary log's snapshot position
                 needs binlog on; FLUSH TABLES WITH READ LOCK needs RELOAD and stalls every
                 writer): the gap stays, one round trip long (the clock is read by the
                 statement just before START TRANSACTION WITH CONSISTENT SNAPSHOT, on the same
                 connection). A row updated in the gap is delivered by the next read, not this
                 one, although this read's produced_at claims its earlier version.

With equal markers no commit fell between the clock reading and the snapshot, so the snapshot
shows the source exactly at t. What remains on every database is the gap of the protocol itself
(Trust model 5): a transaction that stamps its cursor before t and commits after S is invisible,
and its cursor value is <= t; a lookback narrows that.

The cursor filter follows: a timestamp changes read selects cursor in (since, t], never up to
"now" or to the snapshot's last row, so the receiver's cursor_inside check (every live cursor in
(since, produced_at]) holds by construction. A row visible in the snapshot with a cursor after t
(on MariaDB, committed in the gap; anywhere, stamped by a client whose clock runs ahead) is left
for the next read, whose since is t.

The gate refuses a produced_at later than the receiver's own clock: a source whose clock runs
ahead of the receiver's is refused until the receiver's clock passes it.

The request's boundary: the clock is waited on, at most ``max_wait``, until it reads at or after
the request's until, since produced_at must not be before until; past that, SourceNotReady.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from datetime import UTC, datetime, timedelta
from typing import Any

from dogana_provider.dialects import Dialect

log = logging.getLogger(__name__)

Connect = Callable[[], Any]
"""A DB-API connection factory (hook.get_conn): each call returns a new connection."""

FETCH_ROWS = 10_000


class SnapshotError(Exception):
    """A consistent read could not be taken; the message says why and what to do."""


class SlowPath(Exception):
    """Why a read takes the row-by-row path instead of a bulk read (bulk.py); the message
    names the case."""


class OneReader(Exception):
    """Why a read asked of several readers is read by one (sources/parallel.py); the message
    names the case."""


class UnreadableSource(SnapshotError):
    """The relation a read names cannot be read: no such table, or a query that fails."""


class SourceNotReady(SnapshotError):
    """The source's clock did not reach the request's boundary within the wait allowed."""


class Snapshot:
    """One open consistent read: its instant, and statements that all see the same state.

    Rows are streamed in batches of ``fetch_rows`` from a server-side cursor (a named cursor on
    PostgreSQL, SSCursor on MariaDB; sqlite3 steps through rows), never fetched whole.
    """

    def __init__(
        self, source: SnapshotSource, connection: Any, produced_at: datetime, *, fetch_rows: int
    ) -> None:
        self.source = source
        self.dialect = source.dialect
        self.connection = connection
        self.produced_at = produced_at
        self.fetch_rows = fetch_rows

    def placeholder(self, name: str) -> str:
        """The named placeholder of the driver: :name (sqlite3), %(name)s (psycopg, MySQLdb)."""
        return self.source.placeholder(name)

    def scalar(self, sql: str, params: Mapping[str, Any]) -> Any:
        cursor = self.connection.cursor()
        try:
            cursor.execute(sql, dict(params))
            row = cursor.fetchone()
            return None if row is None else row[0]
        finally:
            cursor.close()

    def describe(self, sql: str, params: Mapping[str, Any]) -> Sequence[Any]:
        """The driver's description of a statement's columns, read without reading its rows."""
        cursor = self.connection.cursor()
        try:
            cursor.execute(f"SELECT * FROM ({sql}) AS dogana_described WHERE 1 = 0", dict(params))
            return list(cursor.description)
        finally:
            cursor.close()

    def stream(
        self, sql: str, params: Mapping[str, Any]
    ) -> Iterator[tuple[Sequence[Any], list[Sequence[Any]]]]:
        """(description, rows) per batch; the first batch may be empty, none after it is."""
        cursor = self.dialect.streaming_cursor(self.connection)
        try:
            cursor.execute(sql, dict(params))
            first = True
            while True:
                rows = cursor.fetchmany(self.fetch_rows)
                if rows or first:
                    yield cursor.description, list(rows)
                first = False
                if len(rows) < self.fetch_rows:
                    break
        finally:
            cursor.close()


class SnapshotSource(ABC):
    """How one database opens a consistent read and reads its clock; see the module docstring."""

    dialect: Dialect

    def __init__(
        self,
        connect: Connect,
        *,
        max_wait: timedelta = timedelta(minutes=5),
        settle_attempts: int = 20,
        fetch_rows: int = FETCH_ROWS,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.connect = connect
        self.max_wait = max_wait
        self.settle_attempts = settle_attempts
        self.fetch_rows = fetch_rows
        self.sleep = sleep

    # What each database supplies ----------------------------------------------------------------

    @abstractmethod
    def placeholder(self, name: str) -> str: ...

    @abstractmethod
    def prepare(self, connection: Any) -> None:
        """Session settings before anything else (UTC, autocommit for the clock reading)."""

    @abstractmethod
    def clock(self, connection: Any) -> datetime:
        """The source's clock now, read outside any transaction."""

    @abstractmethod
    def marker(self, connection: Any) -> Any:
        """A change marker read outside the transaction, before the clock; None if none."""

    def reading(self, connection: Any) -> tuple[Any, datetime]:
        """The change marker, then the clock: both before the snapshot, in that order."""
        before = self.marker(connection)
        return before, self.clock(connection)

    @abstractmethod
    def begin(self, connection: Any) -> Any:
        """Open the consistent read and take its snapshot; return the marker inside it."""

    @abstractmethod
    def settled(self, before: Any, inside: Any) -> bool:
        """Whether no commit fell between the marker read before and the one inside."""

    def end(self, connection: Any) -> None:
        """Close the read: nothing was written, so roll back."""
        connection.rollback()

    def finish(self, connection: Any) -> None:
        """End the read whose connection is closed next: end, unless closing the connection
        ends its read anyway (a source then releases only what else end would)."""
        self.end(connection)

    def expect(self, reads: Sequence[Any]) -> None:
        """Told, before the snapshot opens, what will be read in it (extract.Read): a source may
        start meanwhile what those reads will need (SQLite its reader process). By default
        nothing."""
        return None

    def bulk_serves(self, sql: str) -> None:
        """bulk.SlowPath naming why no bulk read can run the statement, asked before it is
        described for one (a describe is a statement of its own); by default none can."""
        raise SlowPath(f"no bulk read shares a {self.dialect} read's snapshot")

    def bulk_read(
        self,
        snapshot: Snapshot,
        sql: str,
        params: Mapping[str, Any],
        columns: Any,
        relation: Any = None,
    ) -> AbstractContextManager[Any]:
        """The statement's rows straight into Arrow, in this snapshot (sources/bulk.py), or
        bulk.SlowPath naming why not; by default no second connection can share the read.
        relation is what the statement reads from (selection.Relation)."""
        raise SlowPath(f"no bulk read shares a {self.dialect} read's snapshot")

    # Several readers in one snapshot (sources/parallel.py) ----------------------------------

    one_reader: str | None = "no other connection can share its read's snapshot"
    """Why this database's read has one reader, when it has (None: several may share it)."""

    def page_ranges(
        self, snapshot: Snapshot, relation: Any, readers: int
    ) -> list[tuple[int, int | None]]:
        """The table's pages cut into at most readers ranges [low, high), the last one open
        (high None); OneReader naming why not."""
        raise OneReader(f"{self.dialect}: {self.one_reader}")

    def page_filter(self, low: int, high: int | None) -> tuple[str, dict[str, Any]]:
        """The condition of a table's rows in the pages [low, high) (high None: to its end),
        and its bound parameters."""
        raise OneReader(f"{self.dialect}: {self.one_reader}")

    def export(self, snapshot: Snapshot) -> str:
        """The read's snapshot, exported for other connections while the read stays open."""
        raise OneReader(f"{self.dialect}: {self.one_reader}")

    def imported_read(
        self, snapshot: Snapshot, exported: str, sql: str, params: Mapping[str, Any], columns: Any
    ) -> AbstractContextManager[Any]:
        """The statement's rows in Arrow (bulk.BulkRead), read on a new connection in the
        snapshot exported; the import fails once the snapshot is no longer exported."""
        raise OneReader(f"{self.dialect}: {self.one_reader}")

    def still_exported(self, snapshot: Snapshot, exported: str) -> bool:
        """Whether a new connection can still import the snapshot exported."""
        return False

    def declared_types(self, connection: Any, relation: Any) -> dict[str, str]:
        """Logical types a table declares, for drivers that describe none (SQLite)."""
        return {}

    # The read ---------------------------------------------------------------------------------

    @contextmanager
    def snapshot(self, until: datetime) -> Iterator[Snapshot]:
        """One consistent read whose produced_at is at or after until (see the module docstring).

        Waits, at most max_wait, for the source's clock to reach until (SourceNotReady past it).
        """
        connection = self.connect()
        try:
            self.prepare(connection)
            produced_at = self._open(connection, until, self._wait_for(connection, until))
            try:
                yield Snapshot(self, connection, produced_at, fetch_rows=self.fetch_rows)
            finally:
                # A lost connection cannot roll back: keep the real error, if there is one.
                with suppress(Exception):
                    self.finish(connection)
        finally:
            connection.close()

    def _wait_for(self, connection: Any, until: datetime) -> tuple[Any, datetime]:
        """The first reading (marker, clock) at or after until: the snapshot's first attempt
        opens on it, as on a reading of its own."""
        deadline = time.monotonic() + self.max_wait.total_seconds()
        while True:
            reading = self.reading(connection)
            now = reading[1]
            if now >= until:
                return reading
            left = deadline - time.monotonic()
            if left <= 0:
                raise SourceNotReady(
                    f"the source's clock reads {now.isoformat()}, before the request's boundary "
                    f"{until.isoformat()}, after waiting {self.max_wait}; a read must be at or "
                    "after until (raise max_wait, or plan a boundary the source has passed)"
                )
            pause = min((until - now).total_seconds() + 0.001, left, 5.0)
            log.info("waiting %.3f s for the source's clock to reach %s", pause, until.isoformat())
            self.sleep(max(pause, 0.001))

    def _open(self, connection: Any, until: datetime, first: tuple[Any, datetime]) -> datetime:
        for attempt in range(1, self.settle_attempts + 1):
            before, produced_at = first if attempt == 1 else self.reading(connection)
            inside = self.begin(connection)
            if produced_at >= until and self.settled(before, inside):
                return produced_at
            self.end(connection)
            log.info(
                "a commit fell between the clock reading and the snapshot (attempt %d of %d); "
                "taking the snapshot again",
                attempt,
                self.settle_attempts,
            )
        raise SnapshotError(
            f"every one of {self.settle_attempts} attempts saw a commit between the clock "
            "reading and the snapshot, so no attempt showed the source at one known instant; "
            "retry when the source is quieter, or raise settle_attempts"
        )


def utc_instant(value: datetime) -> datetime:
    """An aware UTC datetime; a naive one from the source's clock is already UTC (set so)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)
