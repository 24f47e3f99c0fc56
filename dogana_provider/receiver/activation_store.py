"""Where a receiver keeps its settings and its tables' activation records (activation.py).

Three tables beside the store's (store.py), named from the same prefix:

    {prefix}_settings     one row per receiver setting: require_activation ('on' or 'off'),
                          who set it and when. No row is the default: off.
    {prefix}_sources      one row per table (by name; the table may be registered later): its
                          status and its activation record. status defaults to 'pending' in the
                          schema itself and may hold nothing but 'pending' or 'active', so a
                          row inserted by hand from a SQL shell is pending; and the receiver
                          computes the state from the whole record (activation.state_of), so
                          one written 'active' with nothing else is pending too.
    {prefix}_source_log   append-only: every activation, deactivation, expiry and change of the
                          setting, numbered per table, with who and when (the setting's under
                          the table name '*', which no table can take).

They are separate from {prefix}_tables, whose rows stores already hold: a store made before
activation existed gains these tables at its next registration or activation, and until then
(ready) reads as off, with no records.

Instants are stored as store.stamp's text. Nothing here commits: the caller owns the transaction.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from dogana_core.contract import check_identifier
from dogana_provider.dialects import Dialect, execute, fetch_all, fetch_one
from dogana_provider.receiver.activation import SourceRecord, Status
from dogana_provider.receiver.own_tables import OwnTables, table_exists
from dogana_provider.receiver.store import Joined, stamp

REQUIRE_ACTIVATION = "require_activation"
RECEIVER_WIDE = "*"  # the log's table name for a change of a receiver's setting

# Log events.
ACTIVATED, DEACTIVATED, EXPIRED = "activated", "deactivated", "expired"
REQUIRED, NOT_REQUIRED = "required", "not_required"


@dataclass(frozen=True)
class LogEntry:
    """One line of the append-only log: what happened to a table, who did it, and when."""

    table: str
    seq: int
    event: str
    actor: str
    at: datetime
    recorded_at: datetime
    detail: dict[str, Any]


_OWN = ("settings", "sources", "source_log")
"""The activation tables, by their names after the prefix."""


class SourceStore:
    """Statements on the settings, sources and log tables, for one dialect and prefix."""

    def __init__(self, dialect: Dialect, prefix: str = "dogana") -> None:
        check_identifier(f"{prefix}_source_log", "store prefix")
        self.dialect = dialect
        self.own_names = tuple(f"{prefix}_{name}" for name in _OWN)
        self.settings, self.sources, self.log_table = (dialect.quote(n) for n in self.own_names)
        self.p = dialect.placeholder
        self._ready = False
        self.own_tables: OwnTables | None = None
        """Set by the receiver's Steps: its tables looked up together (own_tables.py)."""

    def create(self, connection: Any) -> None:
        """Create the three tables when missing; the caller holds store.create's schema lock."""
        statements = [
            f"CREATE TABLE IF NOT EXISTS {self.settings} ("
            "name VARCHAR(64) NOT NULL PRIMARY KEY, "
            "setting_value VARCHAR(200) NOT NULL, "
            "set_by VARCHAR(200) NOT NULL, "
            "set_at VARCHAR(32) NOT NULL)",
            f"CREATE TABLE IF NOT EXISTS {self.sources} ("
            "table_name VARCHAR(64) NOT NULL PRIMARY KEY, "
            f"status VARCHAR(16) NOT NULL DEFAULT '{Status.PENDING}' "
            f"CHECK (status IN ('{Status.PENDING}', '{Status.ACTIVE}')), "
            "owner VARCHAR(200), "
            "registered_by VARCHAR(200), "
            "granted_by VARCHAR(200), "
            "granted_at VARCHAR(32), "
            "expires_at VARCHAR(32), "
            "licence VARCHAR(200), "
            "purposes TEXT, "
            "provenance TEXT, "
            "changed_at VARCHAR(32))",
            f"CREATE TABLE IF NOT EXISTS {self.log_table} ("
            "table_name VARCHAR(64) NOT NULL, "
            "seq BIGINT NOT NULL, "
            "event VARCHAR(16) NOT NULL, "
            "actor VARCHAR(200) NOT NULL, "
            "event_at VARCHAR(32) NOT NULL, "
            "recorded_at VARCHAR(32) NOT NULL, "
            "detail TEXT NOT NULL, "
            "PRIMARY KEY (table_name, seq))",
        ]
        for sql in statements:
            execute(connection, sql)
        self._ready = True
        if self.own_tables is not None:
            self.own_tables.made(self.own_names)

    def ready(self, connection: Any) -> bool:
        """Whether the tables exist; a store older than them has none yet (then: off, no
        records). Known once seen, since they are never dropped."""
        if not self._ready:
            self._ready = table_exists(
                connection, self.dialect, self.own_names[-1], self.own_tables
            )
        return self._ready

    # The setting ----------------------------------------------------------------------------

    def required(self, connection: Any) -> bool:
        if not self.ready(connection):
            return False
        row = fetch_one(
            connection,
            f"SELECT setting_value FROM {self.settings} WHERE name = {self.p}",
            (REQUIRE_ACTIVATION,),
        )
        return row is not None and row[0] == "on"

    def set_required(self, connection: Any, on: bool, by: str, at: datetime) -> None:
        value = "on" if on else "off"
        execute(
            connection, f"DELETE FROM {self.settings} WHERE name = {self.p}", (REQUIRE_ACTIVATION,)
        )
        execute(
            connection,
            f"INSERT INTO {self.settings} (name, setting_value, set_by, set_at) "
            f"VALUES ({self.p}, {self.p}, {self.p}, {self.p})",
            (REQUIRE_ACTIVATION, value, by, stamp(at)),
        )
        event = REQUIRED if on else NOT_REQUIRED
        self.append(connection, RECEIVER_WIDE, event, by, at, at, {REQUIRE_ACTIVATION: value})

    # Records --------------------------------------------------------------------------------

    def record(self, connection: Any, table: str, *, lock: bool = False) -> SourceRecord | None:
        """A table's record, or None. lock=True locks its row (SELECT ... FOR UPDATE), so an
        activation or deactivation waits for the publication holding it."""
        if not self.ready(connection):
            return None
        suffix = self.dialect.for_update(lock)
        row = fetch_one(
            connection,
            f"SELECT {_COLUMNS} FROM {self.sources} WHERE table_name = {self.p}{suffix}",
            (table,),
        )
        return None if row is None else _record(row)

    def required_and_record(
        self, connection: Any, table: str, *, lock: bool = False
    ) -> tuple[bool, SourceRecord | None]:
        """required() and record() together: one statement where no lock is taken (a locking
        read cannot join the two: FOR UPDATE refuses a UNION)."""
        if lock or not self.ready(connection):
            return self.required(connection), self.record(connection, table, lock=lock)
        blanks = ", ".join("NULL" for _ in range(_COLUMNS.count(",")))
        rows = fetch_all(
            connection,
            f"SELECT 0, setting_value, {blanks} FROM {self.settings} WHERE name = {self.p} "
            f"UNION ALL SELECT 1, {_COLUMNS} FROM {self.sources} WHERE table_name = {self.p}",
            (REQUIRE_ACTIVATION, table),
        )
        required = any(int(row[0]) == 0 and row[1] == "on" for row in rows)
        record = next((_record(row[1:]) for row in rows if int(row[0]) == 1), None)
        return required, record

    def joined(self, connection: Any, table: str) -> Joined | None:
        """required_and_record as a part of another table's read (Store.decided): the setting
        as a subquery, the table's record by a LEFT JOIN; None where the tables do not exist
        yet (then: not required, no record)."""
        if not self.ready(connection):
            return None
        return Joined(
            columns=(
                f"(SELECT g.setting_value FROM {self.settings} g WHERE g.name = {self.p}), "
                + ", ".join(f"s.{column}" for column in _COLUMNS.split(", "))
            ),
            column_params=(REQUIRE_ACTIVATION,),
            join=f"LEFT JOIN {self.sources} s ON s.table_name = {self.p}",
            join_params=(table,),
            width=1 + len(_COLUMNS.split(", ")),
        )

    @staticmethod
    def required_and_record_of(row: tuple[Any, ...]) -> tuple[bool, SourceRecord | None]:
        """What joined's columns read: whether activation is required, and the record."""
        return row[0] == "on", None if row[1] is None else _record(row[1:])

    def records(self, connection: Any) -> dict[str, SourceRecord]:
        """Every table's record by table name: one row per table, read whole."""
        if not self.ready(connection):
            return {}
        cursor = connection.cursor()
        try:
            cursor.execute(f"SELECT {_COLUMNS} FROM {self.sources}")
            return {str(row[0]): _record(tuple(row)) for row in cursor.fetchall()}
        finally:
            cursor.close()

    def put(self, connection: Any, record: SourceRecord) -> None:
        """Write a table's record whole, replacing the one it had."""
        values = (
            str(record.status),
            record.owner,
            record.registered_by,
            record.granted_by,
            _stamp(record.granted_at),
            _stamp(record.expires_at),
            record.licence,
            json.dumps(list(record.purposes)),
            record.provenance,
            _stamp(record.changed_at),
        )
        execute(
            connection, f"DELETE FROM {self.sources} WHERE table_name = {self.p}", (record.table,)
        )
        execute(
            connection,
            f"INSERT INTO {self.sources} ({_COLUMNS}) "
            f"VALUES ({', '.join(self.p for _ in range(11))})",
            (record.table, *values),
        )

    # The log --------------------------------------------------------------------------------

    def append(
        self,
        connection: Any,
        table: str,
        event: str,
        actor: str,
        at: datetime,
        recorded_at: datetime,
        detail: dict[str, Any],
    ) -> None:
        """Add one line to the log: never updated, never deleted. The caller holds the table's
        record row (or, for the setting, the setting's) so that lines are numbered in order."""
        row = fetch_one(
            connection,
            f"SELECT MAX(seq) FROM {self.log_table} WHERE table_name = {self.p}",
            (table,),
        )
        seq = int(row[0] or 0) + 1 if row else 1
        execute(
            connection,
            f"INSERT INTO {self.log_table} (table_name, seq, event, actor, event_at, recorded_at, "
            f"detail) VALUES ({', '.join(self.p for _ in range(7))})",
            (table, seq, event, actor, stamp(at), stamp(recorded_at), json.dumps(detail)),
        )

    def log(self, connection: Any, table: str) -> list[LogEntry]:
        """A table's log (or RECEIVER_WIDE's), oldest first."""
        if not self.ready(connection):
            return []
        cursor = connection.cursor()
        try:
            cursor.execute(
                f"SELECT table_name, seq, event, actor, event_at, recorded_at, detail "
                f"FROM {self.log_table} WHERE table_name = {self.p} ORDER BY seq",
                (table,),
            )
            return [
                LogEntry(
                    str(name),
                    int(seq),
                    str(event),
                    str(actor),
                    datetime.fromisoformat(str(at)),
                    datetime.fromisoformat(str(recorded)),
                    json.loads(detail),
                )
                for name, seq, event, actor, at, recorded, detail in cursor.fetchall()
            ]
        finally:
            cursor.close()

    def last_event(self, connection: Any, table: str) -> tuple[str, datetime] | None:
        """The table's latest log line's event and instant."""
        row = fetch_one(
            connection,
            f"SELECT event, event_at FROM {self.log_table} WHERE table_name = {self.p} "
            f"ORDER BY seq DESC LIMIT 1",
            (table,),
        )
        return None if row is None else (str(row[0]), datetime.fromisoformat(str(row[1])))


_COLUMNS = (
    "table_name, status, owner, registered_by, granted_by, granted_at, expires_at, licence, "
    "purposes, provenance, changed_at"
)


def _record(row: tuple[Any, ...]) -> SourceRecord:
    table, status, owner, registered_by, granted_by, granted, expires = row[:7]
    licence, purposes, provenance, changed = row[7:]
    return SourceRecord(
        str(table),
        str(status),
        owner,
        registered_by,
        granted_by,
        _instant(granted),
        _instant(expires),
        licence,
        _purposes(purposes),
        provenance,
        _instant(changed),
    )


def _purposes(text: Any) -> tuple[str, ...]:
    """The stored JSON list of purposes; anything else (a row written by hand) holds none."""
    try:
        found = json.loads(text) if text else []
    except ValueError:
        return ()
    if not isinstance(found, list):
        return ()
    return tuple(str(purpose) for purpose in found if isinstance(purpose, str))


def _instant(text: Any) -> datetime | None:
    """A stored instant; text that is not one (a row written by hand) counts as none."""
    if text is None:
        return None
    try:
        found = datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return found if found.tzinfo is not None else None


def _stamp(value: datetime | None) -> str | None:
    return None if value is None else stamp(value)
