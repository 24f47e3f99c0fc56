"""MySQL and MariaDB: START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY, in REPEATABLE READ.

WITH CONSISTENT SNAPSHOT takes InnoDB's read view at the START TRANSACTION statement itself (in
REPEATABLE READ only; other levels ignore it), so the read's instant is that statement's. The
clock, UTC_TIMESTAMP(6), is read by the statement just before it on the same connection, outside
any transaction. No change marker is readable without extra privileges (the binary log position
needs binlog on, FLUSH TABLES WITH READ LOCK needs RELOAD and stalls every writer), so the gap
between the two statements (one round trip) stays: a commit there is visible although after
produced_at. The cursor filter (since, produced_at] leaves such a row's new version for the next
read; see snapshot.py.

The session runs in UTC (time_zone '+00:00'), so TIMESTAMP columns come back in UTC; DATETIME
columns hold no zone and are read as UTC.
"""

from __future__ import annotations

import importlib
from datetime import datetime
from typing import Any

from dogana_provider.dialects import MARIADB
from dogana_provider.sources.snapshot import SnapshotSource, utc_instant


class MySqlSnapshots(SnapshotSource):
    dialect = MARIADB
    one_reader = (
        "one reader: MySQL and MariaDB export no snapshot, and START TRANSACTION WITH "
        "CONSISTENT SNAPSHOT gives each session its own read view at its own instant, so "
        "several readers would read several instants under one produced_at"
    )

    def placeholder(self, name: str) -> str:
        return f"%({name})s"

    def _execute(self, connection: Any, sql: str) -> Any:
        cursor = connection.cursor()
        try:
            cursor.execute(sql)
            return cursor.fetchone() if cursor.description else None
        finally:
            cursor.close()

    def prepare(self, connection: Any) -> None:
        if type(connection).__module__.startswith("MySQLdb"):
            # MySQLdb builds each DATETIME, DATE and DECIMAL value in Python, one at a time;
            # their text is parsed by Arrow a batch at a time instead (columns.py).
            fields = importlib.import_module("MySQLdb.constants.FIELD_TYPE")
            converter = dict(connection.converter)
            for code in (fields.DATETIME, fields.TIMESTAMP, fields.DATE, fields.NEWDECIMAL):
                converter[code] = None  # the value's bytes, as the server sent them
            connection.converter = converter
        _autocommit(connection, True)
        # Both session settings in one SET (tx_isolation: SET SESSION TRANSACTION's variable).
        self._execute(
            connection, "SET time_zone = '+00:00', SESSION tx_isolation = 'REPEATABLE-READ'"
        )

    def clock(self, connection: Any) -> datetime:
        now = self._execute(connection, "SELECT UTC_TIMESTAMP(6)")[0]
        if isinstance(now, bytes):  # its text, as prepare asked
            now = datetime.fromisoformat(now.decode("ascii"))
        return utc_instant(now)

    def marker(self, connection: Any) -> Any:
        return None

    def begin(self, connection: Any) -> Any:
        self._execute(connection, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
        return None

    def settled(self, before: Any, inside: Any) -> bool:
        return True  # nothing to compare: the gap is documented above

    def end(self, connection: Any) -> None:
        self._execute(connection, "ROLLBACK")

    def finish(self, connection: Any) -> None:
        # The session's read transaction is rolled back as the connection closes it.
        return None


def _autocommit(connection: Any, on: bool) -> None:
    # mysqlclient has an autocommit() method; mysql-connector and PyMySQL an attribute or both.
    method = getattr(connection, "autocommit", None)
    if callable(method):
        method(on)
    else:
        connection.autocommit = on
