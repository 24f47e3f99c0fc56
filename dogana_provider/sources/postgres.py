"""PostgreSQL: REPEATABLE READ, READ ONLY, the clock and a snapshot marker read just before.

The session runs in UTC, so naive ``timestamp`` columns compare with bound UTC instants as UTC.
The clock and the first marker come from one autocommit statement, ``SELECT
pg_current_snapshot(), clock_timestamp()``: the statement's snapshot is taken before its clock is
read. The transaction then opens REPEATABLE READ and its first statement takes the read's
snapshot, which pg_current_snapshot() returns.

A transaction finished between the two snapshots when the first saw it running or not yet
started (xid >= xmax, or in xip) and the second sees it finished (xid < xmax and not in xip). If
none did, the read shows the source exactly at the clock reading. An aborted transaction counts
too: that costs a retry, never a wrong instant.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from contextlib import AbstractContextManager, suppress
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from dogana_provider.dialects import POSTGRES
from dogana_provider.sources import bulk
from dogana_provider.sources.bulk import FEW_ROWS, libpq_conninfo, postgres_read
from dogana_provider.sources.snapshot import (
    Connect,
    OneReader,
    Snapshot,
    SnapshotSource,
    utc_instant,
)


@dataclass(frozen=True)
class PgSnapshot:
    """pg_current_snapshot() as text, xmin:xmax:xip,xip... (xid8 values)."""

    xmin: int
    xmax: int
    running: frozenset[int]

    @classmethod
    def parse(cls, text: str) -> PgSnapshot:
        xmin, xmax, xip = str(text).split(":")
        running = frozenset(int(x) for x in xip.split(",") if x)
        return cls(int(xmin), int(xmax), running)

    def invisible(self, xid: int) -> bool:
        return xid >= self.xmax or xid in self.running

    def finished_since(self, earlier: PgSnapshot) -> set[int]:
        """xids running (or not started) in earlier and finished in this snapshot."""
        candidates = set(earlier.running) | set(range(earlier.xmax, self.xmax))
        return {xid for xid in candidates if not self.invisible(xid)}


class PostgresSnapshots(SnapshotSource):
    """few_rows: a read the planner expects to hold at most this many rows is read through
    the read's own cursor when it does (bulk.py); 0 reads every one through ADBC."""

    dialect = POSTGRES

    def __init__(self, connect: Connect, *, few_rows: int = FEW_ROWS, **options: Any) -> None:
        super().__init__(connect, **options)
        self.few_rows = few_rows

    def placeholder(self, name: str) -> str:
        return f"%({name})s"

    def prepare(self, connection: Any) -> None:
        connection.autocommit = True
        cursor = connection.cursor()
        try:
            cursor.execute("SET TIME ZONE 'UTC'")
        finally:
            cursor.close()

    def _one(self, connection: Any, sql: str) -> tuple[Any, ...]:
        cursor = connection.cursor()
        try:
            cursor.execute(sql)
            return tuple(cursor.fetchone())
        finally:
            cursor.close()

    def marker(self, connection: Any) -> Any:
        return self.reading(connection)[0]

    def clock(self, connection: Any) -> datetime:
        return self.reading(connection)[1]

    def reading(self, connection: Any) -> tuple[Any, datetime]:
        # One statement: its snapshot is taken when it starts, its clock read after that.
        snapshot, now = self._one(
            connection, "SELECT pg_current_snapshot()::text, clock_timestamp()"
        )
        return PgSnapshot.parse(snapshot), utc_instant(now)

    def begin(self, connection: Any) -> Any:
        told = _told_level(connection)
        connection.autocommit = False
        # The driver sends BEGIN before this; SET TRANSACTION takes no snapshot. psycopg 3,
        # told the level (_told_level), names it in that BEGIN, a round trip fewer.
        cursor = connection.cursor()
        try:
            if not told:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            cursor.execute("SELECT pg_current_snapshot()::text")  # takes the snapshot
            return PgSnapshot.parse(cursor.fetchone()[0])
        finally:
            cursor.close()

    def settled(self, before: Any, inside: Any) -> bool:
        return not inside.finished_since(before)

    def end(self, connection: Any) -> None:
        connection.rollback()
        connection.autocommit = True
        if _driver(connection) == "psycopg":  # as it was before begin told it
            connection.isolation_level = connection.read_only = None

    def bulk_serves(self, sql: str) -> None:
        return None

    def bulk_read(
        self,
        snapshot: Snapshot,
        sql: str,
        params: Mapping[str, Any],
        columns: Any,
        relation: Any = None,
    ) -> AbstractContextManager[Any]:
        return postgres_read(snapshot, sql, params, columns, few_rows=self.few_rows)

    # Several readers in one snapshot (sources/parallel.py) -------------------------------------

    one_reader = None

    def page_ranges(
        self, snapshot: Snapshot, relation: Any, readers: int
    ) -> list[tuple[int, int | None]]:
        if relation.table is None:
            raise OneReader("a query (table_sql) is read whole: only a table is read by pages")
        quoted = relation.render(self.dialect)
        # Measured inside the read, after its snapshot: every page a visible row can be on is
        # below it, and the last range is open all the same.
        pages = int(
            snapshot.scalar(
                "SELECT pg_relation_size(%(dogana_relation)s::regclass) "
                "/ current_setting('block_size')::bigint",
                {"dogana_relation": quoted},
            )
        )
        count = max(1, min(readers, pages))
        step = math.ceil(pages / count) if pages else 0
        return [
            (index * step, (index + 1) * step if index < count - 1 else None)
            for index in range(count)
        ]

    def page_filter(self, low: int, high: int | None) -> tuple[str, dict[str, Any]]:
        # A TID range scan (PostgreSQL 14 and later) reads only these pages. The bounds are
        # written into the statement, not bound: the ADBC driver streams a statement through
        # COPY only when it has no parameters, and otherwise holds its whole result in memory.
        # They are page numbers dogana computed, each an int formatted by int().
        condition = f"ctid >= '({int(low)},0)'::tid"
        if high is not None:
            condition += f" AND ctid < '({int(high)},0)'::tid"
        return condition, {}

    def export(self, snapshot: Snapshot) -> str:
        return bulk.export_snapshot(snapshot)

    def imported_read(
        self, snapshot: Snapshot, exported: str, sql: str, params: Mapping[str, Any], columns: Any
    ) -> AbstractContextManager[Any]:
        return bulk.imported_read(
            libpq_conninfo(snapshot.connection), exported, sql, params, columns
        )

    def still_exported(self, snapshot: Snapshot, exported: str) -> bool:
        connection = self.connect()
        try:
            cursor = connection.cursor()
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            # SET takes no bound parameter: the identifier, quoted as a literal.
            cursor.execute("SET TRANSACTION SNAPSHOT " + bulk.quoted_literal(exported))
            return True
        except Exception:  # the driver's error: invalid snapshot identifier
            return False
        finally:
            with suppress(Exception):
                connection.rollback()
            connection.close()


def _driver(connection: Any) -> str:
    return type(connection).__module__.partition(".")[0]


def _told_level(connection: Any) -> bool:
    """Tell an idle psycopg 3 connection the snapshot's transaction (repeatable read, read
    only), which it names in its BEGIN; False, nothing told, for another driver."""
    if _driver(connection) != "psycopg":
        return False
    import psycopg

    connection.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
    connection.read_only = True
    return True
