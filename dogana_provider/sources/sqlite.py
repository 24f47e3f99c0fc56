"""SQLite: one read transaction on the database file, marked by PRAGMA data_version.

An SQLite file has no server and so no clock of its own: its writers stamp rows with the clock of
the machine they run on, which for a local file is this one, read here at microseconds. The
snapshot is the read transaction's: BEGIN takes no lock, its first read does (in WAL mode, the
point of the log it reads up to). PRAGMA data_version changes when another connection commits,
so equal values before the clock reading and inside the transaction prove no commit between.

In the default rollback-journal mode a reader blocks writers until it ends, which is consistent
but stalls them; WAL mode lets writers commit while the read runs and is what a live source uses.

SQLite stores datetimes as text in whatever form its writers chose. Comparisons therefore go
through dogana_utc(), a function registered on the connection that spells any ISO 8601 text (with
or without an offset; without one it is UTC) in one fixed-width UTC form, the form values are
bound in (sql.sqlite_datetime), so text order is time order; dates likewise through dogana_date.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from dogana_provider.sources.snapshot import SnapshotSource
from dogana_provider.sql import SQLITE, sqlite_datetime


def normalized_datetime(value: Any) -> str | None:
    """Any ISO 8601 text (or datetime) as sqlite_datetime spells it; None stays None."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if not isinstance(value, datetime):
        raise ValueError(f"{value!r} is not an ISO 8601 datetime")
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return sqlite_datetime(value)


def normalized_date(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return date.fromisoformat(value[:10]).isoformat()
    raise ValueError(f"{value!r} is not an ISO 8601 date")


class SqliteSnapshots(SnapshotSource):
    dialect = SQLITE

    def placeholder(self, name: str) -> str:
        return f":{name}"

    def prepare(self, connection: Any) -> None:
        # Statements run as written: sqlite3 opens no transaction behind our back.
        connection.isolation_level = None
        # The read writes nothing; query_only makes sure of it, as READ ONLY does elsewhere.
        connection.execute("PRAGMA query_only = ON")
        connection.create_function("dogana_utc", 1, normalized_datetime, deterministic=True)
        connection.create_function("dogana_date", 1, normalized_date, deterministic=True)

    def clock(self, connection: Any) -> datetime:
        return datetime.now(UTC)

    def marker(self, connection: Any) -> Any:
        return connection.execute("PRAGMA data_version").fetchone()[0]

    def begin(self, connection: Any) -> Any:
        connection.execute("BEGIN")
        # The first read takes the snapshot; the marker is then read inside it.
        connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return connection.execute("PRAGMA data_version").fetchone()[0]

    def settled(self, before: Any, inside: Any) -> bool:
        return bool(before == inside)

    def end(self, connection: Any) -> None:
        if connection.in_transaction:
            connection.execute("ROLLBACK")

    def declared_types(self, connection: Any, relation: Any) -> dict[str, str]:
        table = getattr(relation, "table", None)
        if table is None:
            return {}
        schema, _, name = table.rpartition(".")
        pragma = f"PRAGMA {SQLITE.quote(schema)}.table_info" if schema else "PRAGMA table_info"
        rows = connection.execute(f"{pragma}({SQLITE.quote(name)})").fetchall()
        declared = {row[1]: declared_type(row[2] or "") for row in rows}
        return {column: kind for column, kind in declared.items() if kind is not None}


def declared_type(declared: str) -> str | None:
    """The logical type of an SQLite declared column type, by SQLite's affinity rules and the
    names people write (BOOLEAN, DATE, DATETIME, DECIMAL(p,s)); None when it says nothing."""
    text = declared.strip().upper()
    if not text:
        return None
    typed = text.removeprefix("TEXT ")
    if typed in ("DATE", "DATETIME") or typed.startswith("DECIMAL("):
        text = typed  # a dogana receiver's own spelling: the logical type beside its affinity
    if text.startswith(("DECIMAL(", "NUMERIC(")):
        inside = text[text.index("(") + 1 : text.rindex(")")]
        parts = [part.strip() for part in inside.split(",")]
        if all(part.isdigit() for part in parts):
            return f"decimal({parts[0]},{parts[1] if len(parts) > 1 else 0})"
    if "BOOL" in text:
        return "bool"
    if "DATETIME" in text or "TIMESTAMP" in text:
        return "datetime"
    if text == "DATE":
        return "date"
    if "INT" in text:
        return "int"
    if any(word in text for word in ("CHAR", "CLOB", "TEXT")):
        return "str"
    if any(word in text for word in ("REAL", "FLOA", "DOUB")):
        return "float"
    return None
