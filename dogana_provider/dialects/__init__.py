"""SQL dialects: what differs between databases when dogana stages rows and checks them.

The row checks (checks.py) and the staging (staging.py) are written once, against a Dialect, so the
same statements run on SQLite now and on PostgreSQL and MySQL/MariaDB in the receiver. A dialect
supplies only what differs:

- quoting: identifiers are validated as dogana identifiers (contract.check_identifier) and then
  quoted, so no name from a file or a contract is ever pasted into SQL unchecked;
- the DB-API placeholder of its driver (paramstyle); values always travel as bound parameters;
- the column type of each logical type, and how a value of that type is bound;
- how strings compare: dogana orders strings by code point, without collation.

How datetimes are stored decides whether comparisons are right, so each dialect states it:
SQLite has no datetime type, and stores a UTC datetime as fixed-width text in its own form,
``YYYY-MM-DD HH:MM:SS.ffffff`` (always four year digits and six fractional digits, always UTC,
as SQLite's date functions assume), and a date as ``YYYY-MM-DD``. Fixed width makes text order
equal time order; it is also the form Arrow casts a timestamp to, which keeps staging fast. A
value bound for comparison (sqlite_datetime) and a value staged from a file (Arrow's cast) must
spell one instant alike: tests/provider/test_checks.py holds them together across the whole
datetime domain.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pyarrow as pa

from dogana_core.contract import check_identifier

DECIMAL_PREFIX = "decimal("


@dataclass(frozen=True)
class Dialect:
    """What one database needs to stage and check rows: SQLITE, POSTGRES and MARIADB."""

    name: str
    placeholder: str
    """The DB-API placeholder: "?" for sqlite3 (qmark), "%s" for psycopg and MySQLdb (format)."""
    quote_char: str
    types: tuple[tuple[str, str], ...]
    """Logical type -> column type; decimal(p,s) is handled by decimal_type."""
    decimal_type: Callable[[int, int], str]
    bind_datetime: Callable[[datetime], Any]
    bind_date: Callable[[date], Any]
    datetime_array: Callable[[pa.Array], list[Any]]
    date_array: Callable[[pa.Array], list[Any]]
    decimal_array: Callable[[pa.Array], list[Any]]
    text_collation: str | None = None
    """Appended to string expressions so that they compare by code point (None: already so)."""
    stores_nan: bool = True
    """Whether its float column keeps NaN: SQLite turns it into NULL, MariaDB refuses it."""
    stores_infinity: bool = True
    """Whether its float column keeps +-inf: MariaDB's DOUBLE has no infinities."""
    folds_names: bool = False
    """Whether two names differing only in case name one table or column: SQLite's do; so do
    MariaDB's columns, the store's table_name keys (a case-insensitive collation) and, on a
    server with lower_case_table_names, its tables; PostgreSQL's quoted names never do."""

    def name_key(self, identifier: str) -> str:
        """identifier as this database compares it with other names (identifiers are ASCII)."""
        return identifier.lower() if self.folds_names else identifier

    def quote(self, identifier: str) -> str:
        """A validated identifier, quoted; anything else raises InvalidContract."""
        check_identifier(identifier, "SQL identifier")
        return f"{self.quote_char}{identifier}{self.quote_char}"

    def column_type(self, logical: str) -> str:
        if logical.startswith(DECIMAL_PREFIX):
            precision, scale = logical[len(DECIMAL_PREFIX) : -1].split(",")
            return self.decimal_type(int(precision), int(scale))
        return dict(self.types)[logical]

    def bind(self, logical: str, value: Any) -> Any:
        """A Python value of a logical type, as a parameter that compares with staged values."""
        if value is None:
            return None
        if logical == "datetime":
            return self.bind_datetime(value)
        if logical == "date":
            return self.bind_date(value)
        if logical == "bool":
            return bool(value)
        return value

    def values(self, array: pa.Array, logical: str) -> list[Any]:
        """One staged column of a record batch as parameters, in the same form as bind()."""
        if logical == "datetime":
            return self.datetime_array(array)
        if logical == "date":
            return self.date_array(array)
        if logical.startswith(DECIMAL_PREFIX):
            return self.decimal_array(array)
        return array.to_pylist()  # type: ignore[no-any-return]

    def ordered(self, expression: str, logical: str) -> str:
        """expression as it compares in dogana's order: code points for strings."""
        if logical == "str" and self.text_collation:
            return f"{expression} COLLATE {self.text_collation}"
        return expression


# SQLite ------------------------------------------------------------------------------------------


def sqlite_datetime(value: datetime) -> str:
    """A UTC datetime as SQLite stores it: 2024-01-31 23:59:59.000000, fixed width, UTC."""
    naive_utc = value.astimezone(UTC).replace(tzinfo=None)
    return naive_utc.isoformat(sep=" ", timespec="microseconds")


def sqlite_date(value: date) -> str:
    return value.isoformat()


def _sqlite_datetime_array(array: pa.Array) -> list[Any]:
    # files.py hands every datetime column over as timestamp[us, tz=UTC]. Dropping the zone
    # keeps the UTC wall time, and Arrow prints it as sqlite_datetime does (a test holds the two
    # together), ten times faster than strftime.
    naive_utc = array.cast(pa.timestamp("us"))
    return naive_utc.cast(pa.string()).to_pylist()  # type: ignore[no-any-return]


def _sqlite_date_array(array: pa.Array) -> list[Any]:
    return array.cast(pa.string()).to_pylist()  # type: ignore[no-any-return]


def _sqlite_decimal_array(array: pa.Array) -> list[Any]:
    # SQLite has no exact decimal type; text keeps every digit.
    return array.cast(pa.string()).to_pylist()  # type: ignore[no-any-return]


SQLITE = Dialect(
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
    datetime_array=_sqlite_datetime_array,
    date_array=_sqlite_date_array,
    decimal_array=_sqlite_decimal_array,
    # SQLite's default BINARY collation compares UTF-8 bytes, which is code-point order.
    text_collation=None,
    stores_nan=False,
    folds_names=True,
)


# PostgreSQL --------------------------------------------------------------------------------------


def _utc(value: datetime) -> datetime:
    return value.astimezone(UTC)


def _identity(value: Any) -> Any:
    return value


def _pylist(array: pa.Array) -> list[Any]:
    return array.to_pylist()  # type: ignore[no-any-return]


POSTGRES = Dialect(
    name="postgresql",
    placeholder="%s",
    quote_char='"',
    types=(
        ("int", "BIGINT"),
        ("float", "DOUBLE PRECISION"),
        ("str", "TEXT"),
        ("bool", "BOOLEAN"),
        ("date", "DATE"),
        ("datetime", "TIMESTAMPTZ"),
    ),
    decimal_type=lambda precision, scale: f"NUMERIC({precision},{scale})",
    bind_datetime=_utc,
    bind_date=_identity,
    datetime_array=_pylist,
    date_array=_pylist,
    decimal_array=_pylist,
    # "C" compares the bytes of UTF-8, which is code-point order, whatever the database's locale.
    text_collation='"C"',
)


# MySQL / MariaDB ---------------------------------------------------------------------------------


def _naive_utc(value: datetime) -> datetime:
    # DATETIME holds no offset: dogana stores UTC, so every value is converted to it first.
    return value.astimezone(UTC).replace(tzinfo=None)


def _naive_utc_array(array: pa.Array) -> list[Any]:
    # files.py hands datetimes over as timestamp[us, tz=UTC]; dropping the zone keeps UTC.
    return array.cast(pa.timestamp("us")).to_pylist()  # type: ignore[no-any-return]


MARIADB = Dialect(
    name="mysql",
    placeholder="%s",
    quote_char="`",
    types=(
        ("int", "BIGINT"),
        ("float", "DOUBLE"),
        # The default collations ignore case and trailing spaces; nopad_bin compares the UTF-8
        # bytes, which is code-point order, and keeps "a" and "a " apart.
        ("str", "TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin"),
        ("bool", "BOOLEAN"),
        ("date", "DATE"),
        ("datetime", "DATETIME(6)"),
    ),
    decimal_type=lambda precision, scale: f"DECIMAL({precision},{scale})",
    bind_datetime=_naive_utc,
    bind_date=_identity,
    datetime_array=_naive_utc_array,
    date_array=_pylist,
    decimal_array=_pylist,
    text_collation=None,
    stores_nan=False,
    stores_infinity=False,
    folds_names=True,
)


def execute(connection: Any, sql: str, params: tuple[Any, ...] = ()) -> None:
    """Run one statement that returns no rows on a DB-API connection, closing its cursor."""
    cursor = connection.cursor()
    try:
        cursor.execute(sql, params)
    finally:
        cursor.close()


def fetch_one(connection: Any, sql: str, params: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
    """The first row of one statement on a DB-API connection (None if none), closing its cursor."""
    cursor = connection.cursor()
    try:
        cursor.execute(sql, params)
        row = cursor.fetchone()
        return None if row is None else tuple(row)
    finally:
        cursor.close()


def declared_types(connection: Any, dialect: Dialect, table: str) -> dict[str, str]:
    """Each column of a table with the type its database declares for it, as its catalog says.

    Two tables created through the same Dialect.column_type compare equal column by column, so
    the receiver can tell a staged column from a published one of another type without mapping
    catalog spellings back to logical types. SQLite declares what it was told (its types name
    the logical type beside the affinity that stores it); MariaDB's collation is part of a
    string's type, since it decides how values compare.
    """
    if dialect.name == "sqlite":
        sql = "SELECT name, type FROM pragma_table_info(?)"
        params: tuple[Any, ...] = (table,)
    elif dialect.name == "postgresql":
        sql = (
            "SELECT attname, format_type(atttypid, atttypmod) || COALESCE(' COLLATE ' || "
            "(SELECT collname FROM pg_collation WHERE oid = attcollation), '') "
            "FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attnum > 0 "
            "AND NOT attisdropped"
        )
        params = (dialect.quote(table),)
    else:
        sql = (
            "SELECT column_name, CONCAT(column_type, COALESCE(CONCAT(' COLLATE ', "
            "collation_name), '')) FROM information_schema.columns "
            "WHERE table_schema = DATABASE() AND table_name = %s"
        )
        params = (table,)
    cursor = connection.cursor()
    try:
        cursor.execute(sql, params)
        return {str(name): str(kind).lower() for name, kind in cursor.fetchall()}
    finally:
        cursor.close()


def create_index(connection: Any, dialect: Dialect, table: str, name: str, columns: str) -> None:
    """CREATE INDEX name ON table (columns), unless the table has an index of that name.

    PostgreSQL's CREATE INDEX IF NOT EXISTS locks the table in SHARE mode before it finds the
    index there: run on every delivery against a table others write (the published table, the
    store's receipts), it would wait for each transaction writing it, autovacuum's too, and
    hold back the writers queued behind it. Its catalog answers without a lock. Elsewhere IF
    NOT EXISTS finds the index without such a wait (MariaDB, SQLite's write lock held anyway).
    On SQLite an index named name_SUFFIX is that index too: a staging table swapped in brings
    the key index its stage built under such a name (actions.index_staged_keys).
    """
    if dialect.name == "sqlite":
        found = fetch_one(
            connection,
            "SELECT 1 FROM sqlite_master WHERE type = 'index' AND tbl_name = ? COLLATE NOCASE "
            "AND (name = ? OR substr(name, 1, ?) = ?)",
            (table, name, len(name) + 1, f"{name}_"),
        )
        if found is not None:
            return
    if dialect.name == "postgresql":
        cursor = connection.cursor()
        try:
            cursor.execute(
                "SELECT 1 FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid "
                "WHERE x.indrelid = to_regclass(%s) AND c.relname = %s",
                (dialect.quote(table), name),
            )
            if cursor.fetchone() is not None:
                return
        finally:
            cursor.close()
    execute(
        connection,
        f"CREATE INDEX IF NOT EXISTS {dialect.quote(name)} ON {dialect.quote(table)} ({columns})",
    )


def display(value: Any, logical: str | None = None) -> str:
    """A staged or declared value as a person reads it in a check's detail.

    Strings are quoted so that "" and trailing spaces show; dates and datetimes are not, even
    where a dialect stores them as text (SQLite).
    """
    if value is None:
        return "null"
    if isinstance(value, str) and logical in ("date", "datetime"):
        return value
    if isinstance(value, datetime):
        if value.tzinfo is None:
            # A dialect without offsets (MariaDB's DATETIME) stores UTC.
            value = value.replace(tzinfo=UTC)
        return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, Decimal):
        return str(value)
    return str(value)


# Statements that may fail --------------------------------------------------------------------


@dataclass(frozen=True)
class StatementFailed:
    """The database refused one statement (an unknown column, a syntax or type error, a division
    by zero): its message. Never an operational failure, which raises."""

    message: str


# SQLite's primary result codes for a statement's own fault: SQLITE_ERROR (no such column, a
# syntax error, a misused aggregate), SQLITE_MISMATCH, SQLITE_RANGE. BUSY, IOERR, FULL... raise.
_SQLITE_STATEMENT = frozenset({1, 20, 25})
# SQLSTATE classes of a statement's own fault: cardinality (21), data (22), syntax or access
# rule (42), feature not supported (0A). Connection (08), resources (53), operator intervention
# (57), serialization (40) and the rest raise.
_POSTGRES_STATEMENT = frozenset({"21", "22", "42", "0A"})
# MariaDB's server errors are 1000-1999 and 3000 up, client ones (a lost connection) 2000-2999;
# among server errors, these are the server's state, not the statement's: disk full, out of
# memory, too many connections, shutdown, network, aborted, lock wait, deadlock, interrupted,
# killed, statement time exceeded.
_MARIADB_OPERATIONAL = frozenset(
    {1021, 1037, 1038, 1040, 1041, 1053, 1077, 1078, 1079, 1080, 1152, 1153, 1154, 1155}
    | {1156, 1157, 1158, 1159, 1160, 1161, 1184, 1205, 1213, 1317, 1927, 1969, 3024}
)


def statement_error(dialect: Dialect, error: BaseException) -> str | None:
    """error's message when the database refused the statement itself, None when the failure is
    operational (a lost connection, a full disk, a lock timeout), which must raise."""
    message = " ".join(str(error).split())
    if dialect.name == "sqlite":
        code = getattr(error, "sqlite_errorcode", None)
        if type(error).__name__ == "ProgrammingError":  # sqlite3: wrong number of bindings
            return message
        return message if code is not None and code & 0xFF in _SQLITE_STATEMENT else None
    if dialect.name == "postgresql":
        state = getattr(error, "sqlstate", None) or getattr(error, "pgcode", None)
        return message if isinstance(state, str) and state[:2] in _POSTGRES_STATEMENT else None
    args = getattr(error, "args", ())
    code = args[0] if args and isinstance(args[0], int) else None
    if code is None or 2000 <= code < 3000 or code < 1000 or code in _MARIADB_OPERATIONAL:
        return None
    return message


def run_or_fail(
    connection: Any, dialect: Dialect, sql: str, params: tuple[Any, ...]
) -> list[tuple[Any, ...]] | StatementFailed:
    """One query's rows, or StatementFailed when the database refuses the statement itself;
    an operational failure raises. On PostgreSQL, whose failed statement aborts the whole
    transaction, it runs under a savepoint that a refusal rolls back to."""
    cursor = connection.cursor()
    savepoint = dialect.name == "postgresql"
    try:
        if savepoint:
            cursor.execute("SAVEPOINT dogana_statement")
        try:
            cursor.execute(sql, params)
            rows = [tuple(row) for row in cursor.fetchall()]
        except Exception as exc:
            refused = statement_error(dialect, exc)
            if refused is None:
                raise
            if savepoint:
                cursor.execute("ROLLBACK TO SAVEPOINT dogana_statement")
            return StatementFailed(refused)
        if savepoint:
            cursor.execute("RELEASE SAVEPOINT dogana_statement")
        return rows
    finally:
        cursor.close()
