"""SQLite: no datetime type, no row locks, no server; one write lock per database.

How datetimes are stored decides whether comparisons are right: SQLite has no datetime type,
and stores a UTC datetime as fixed-width text in its own form, ``YYYY-MM-DD HH:MM:SS.ffffff``
(always four year digits and six fractional digits, always UTC, as SQLite's date functions
assume), and a date as ``YYYY-MM-DD``. Fixed width makes text order equal time order; it is also
the form Arrow casts a timestamp to, which keeps staging fast. A value bound for comparison
(sqlite_datetime) and a value staged from a file (Arrow's cast) must spell one instant alike:
tests/provider/test_checks.py holds them together across the whole datetime domain.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

import pyarrow as pa

from dogana_provider.dialects.base import (
    DECIMAL_PREFIX,
    CatalogColumn,
    Dialect,
    execute,
    fetch_all,
    fetch_one,
    scalar,
)


def sqlite_datetime(value: datetime) -> str:
    """A UTC datetime as SQLite stores it: 2024-01-31 23:59:59.000000, fixed width, UTC."""
    naive_utc = value.astimezone(UTC).replace(tzinfo=None)
    return naive_utc.isoformat(sep=" ", timespec="microseconds")


def sqlite_date(value: date) -> str:
    return value.isoformat()


def _datetime_array(array: pa.Array) -> list[Any]:
    # delivery/files.py hands every datetime column over as timestamp[us, tz=UTC]. Dropping the
    # zone keeps the UTC wall time, and Arrow prints it as sqlite_datetime does (a test holds the
    # two together) in one vectorised cast, where strftime would be a Python call per value.
    naive_utc = array.cast(pa.timestamp("us"))
    return naive_utc.cast(pa.string()).to_pylist()  # type: ignore[no-any-return]


def _text_array(array: pa.Array) -> list[Any]:
    # Dates as ISO text; decimals too, since SQLite has no exact decimal type and text keeps
    # every digit.
    return array.cast(pa.string()).to_pylist()  # type: ignore[no-any-return]


SHA256 = "dogana_sha256"
"""The SHA-256 function SQLite lacks, registered on a connection by sha256_hex."""


def _sha256(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


# SQLite's primary result codes for a statement's own fault: SQLITE_ERROR (no such column, a
# syntax error, a misused aggregate), SQLITE_MISMATCH, SQLITE_RANGE. BUSY, IOERR, FULL... raise.
_STATEMENT_CODES = frozenset({1, 20, 25})


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


@dataclass(frozen=True)
class SqliteDialect(Dialect):
    def stored_decimal(self, logical: str) -> bool:
        return logical.startswith(DECIMAL_PREFIX)

    def source_column(self, quoted: str, logical: str) -> str:
        # The source's text datetimes, in whatever form they were written, normalized by the
        # functions sources/sqlite.py registers.
        if logical == "datetime":
            return f"dogana_utc({quoted})"
        if logical == "date":
            return f"dogana_date({quoted})"
        return quoted

    def sha256_hex(self, connection: Any, expression: str) -> str:
        # Deterministic, so SQLite may use it inside any statement.
        connection.create_function(SHA256, 1, _sha256, deterministic=True)
        return f"{SHA256}({expression})"

    def lendable(self, connection: Any) -> bool:
        # A connection holds nothing outside a transaction; a file attached to one (staging's
        # private file) is not lent, its connect wrapped, and closed with its transaction.
        return isinstance(connection, sqlite3.Connection) and not connection.in_transaction

    def begin_statements(self, *, write: bool) -> tuple[str, ...]:
        # sqlite3 would open a deferred transaction at the first write, too late for a lock.
        return ("BEGIN IMMEDIATE" if write else "BEGIN",)

    def declared_types_query(self, table: str) -> tuple[str, tuple[Any, ...]]:
        return "SELECT name, type FROM pragma_table_info(?)", (table,)

    # pragma_table_info() runs its PRAGMA again, nested: a statement more than the PRAGMA's
    # own, and a PRAGMA joins no query, so each table is read by one.
    declared_types_apart = True

    def read_declared_types(self, connection: Any, table: str) -> list[tuple[Any, ...]]:
        rows = fetch_all(connection, f"PRAGMA table_info({self.quote(table)})")
        return [(name, declared) for _, name, declared, *_ in rows]

    def widen_column(self, connection: Any, table: str, column: str, logical: str) -> None:
        # SQLite alters no column's type: the table is made again under the new declaration
        # and its rows copied, in the caller's transaction (SQLite's own recipe for ALTER).
        # Indexes go with the old table; the caller builds the published ones again.
        quoted = self.quote(table)
        rows = fetch_all(connection, "SELECT name, type FROM pragma_table_info(?)", (table,))
        columns = ", ".join(
            f"{self.quote(str(name))} "
            + (self.column_type(logical) if name == column else str(declared or ""))
            for name, declared in rows
        )
        names = ", ".join(self.quote(str(name)) for name, _ in rows)
        rebuilt = self.quote(f"{table}_dogana_widened")
        for statement in (
            f"CREATE TABLE {rebuilt} ({columns})",
            f"INSERT INTO {rebuilt} ({names}) SELECT {names} FROM {quoted}",
            f"DROP TABLE {quoted}",
            f"ALTER TABLE {rebuilt} RENAME TO {quoted}",
        ):
            execute(connection, statement)

    def catalog_columns(
        self, connection: Any, schema: str | None, table: str
    ) -> list[CatalogColumn]:
        rows = fetch_all(
            connection,
            'SELECT name, type, "notnull", pk FROM pragma_table_info(?, ?) ORDER BY cid',
            (table, schema or "main"),
        )
        found = []
        for name, native, notnull, pk in rows:
            declared = str(native or "")
            # An INTEGER PRIMARY KEY is the rowid, never null; any other key column may hold
            # null unless declared NOT NULL (a bug SQLite keeps for compatibility).
            rowid = bool(pk) and declared.strip().upper() == "INTEGER"
            nullable = not notnull and not rowid
            found.append(
                CatalogColumn(str(name), declared.lower(), declared_type(declared), nullable)
            )
        return found

    def existing_names(self, connection: Any, names: Sequence[str]) -> set[str]:
        marks = ", ".join("?" for _ in names)
        rows = fetch_all(
            connection,
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'index') "
            f"AND name IN ({marks})",
            tuple(names),
        )
        return {str(name) for (name,) in rows}

    def has_index(self, connection: Any, table: str, name: str) -> bool:
        # An index named name_SUFFIX is that index too: a staging table swapped in brings the
        # key index its stage built under such a name (actions.index_staged_keys).
        found = fetch_one(
            connection,
            "SELECT 1 FROM sqlite_master WHERE type = 'index' AND tbl_name = ? COLLATE NOCASE "
            "AND (name = ? OR substr(name, 1, ?) = ?)",
            (table, name, len(name) + 1, f"{name}_"),
        )
        return found is not None

    def has_dependents(self, connection: Any, table: str) -> bool:
        # Views and triggers name tables in their text: any of them could name this one.
        count = scalar(
            connection, "SELECT count(*) FROM sqlite_master WHERE type IN ('view', 'trigger')"
        )
        return bool(count)

    def updates_in_place(self, rows: int) -> bool:
        return sqlite3.sqlite_version_info >= (3, 33, 0)  # UPDATE ... FROM arrived in 3.33

    def has_triggers(self, connection: Any, table: str) -> bool:
        triggers = scalar(
            connection,
            "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' "
            "AND tbl_name = ? COLLATE NOCASE",
            (table,),
        )
        return int(triggers) != 0

    def one_key_match(self, column: str, staged: str) -> str | None:
        # An IN list SQLite looks up in the key index; it plans a correlated EXISTS as a scan.
        return f"{column} IN ({staged})"

    def statement_error(self, error: BaseException) -> str | None:
        message = " ".join(str(error).split())
        if type(error).__name__ == "ProgrammingError":  # sqlite3: wrong number of bindings
            return message
        code = getattr(error, "sqlite_errorcode", None)
        return message if code is not None and code & 0xFF in _STATEMENT_CODES else None


SQLITE = SqliteDialect(
    name="sqlite",
    placeholder="?",
    quote_char='"',
    # SQLite stores by affinity, decided by a substring of the declared type (INT: integer,
    # TEXT: text); the rest of the declaration is kept as written. So each logical type declares
    # its own name beside its affinity, and a str column delivered for a date or a decimal one
    # (all text) differs in declared_types as it does on the other databases.
    types=(
        ("int", "INTEGER"),
        ("float", "REAL"),
        ("str", "TEXT"),
        ("bool", "INTEGER BOOLEAN"),
        ("date", "TEXT DATE"),
        ("datetime", "TEXT DATETIME"),
    ),
    decimal_type=lambda precision, scale: f"TEXT DECIMAL({precision},{scale})",
    bind_datetime=sqlite_datetime,
    bind_date=sqlite_date,
    datetime_array=_datetime_array,
    date_array=_text_array,
    decimal_array=_text_array,
    # SQLite's default BINARY collation compares UTF-8 bytes, which is code-point order.
    text_collation=None,
    stores_nan=False,
    folds_names=True,
    row_locks=False,
    # A column of the same name hides the rowid under that name; the next one is tried.
    rowid_names=("_rowid_", "rowid", "oid"),
    text_datetimes=True,
    describes_columns=False,
    staged_key_index=True,
    local_file=True,
)
