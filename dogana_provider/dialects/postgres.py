"""PostgreSQL: transactional DDL, row and advisory locks, and a failed statement that aborts its
transaction unless a savepoint catches it."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from dogana_provider.dialects.base import (
    CatalogColumn,
    Dialect,
    execute,
    fetch_all,
    identity,
    idle_session,
    pylist,
    scalar,
)

# SQLSTATE classes of a statement's own fault: cardinality (21), data (22), syntax or access
# rule (42), feature not supported (0A). Connection (08), resources (53), operator intervention
# (57), serialization (40) and the rest raise.
_STATEMENT_CLASSES = frozenset({"21", "22", "42", "0A"})

# The type OIDs a cursor's description names, as logical types (numeric: described_type).
_OIDS = {
    16: "bool",
    20: "int",
    21: "int",
    23: "int",
    26: "int",
    700: "float",
    701: "float",
    25: "str",
    1042: "str",
    1043: "str",
    19: "str",
    2950: "str",
    1082: "date",
    1114: "datetime",
    1184: "datetime",
}
_NUMERIC = 1700

# information_schema's data_type names, as logical types (numeric: catalog_columns).
_CATALOG = {
    "smallint": "int",
    "integer": "int",
    "bigint": "int",
    "real": "float",
    "double precision": "float",
    "text": "str",
    "character varying": "str",
    "character": "str",
    "name": "str",
    "uuid": "str",
    "boolean": "bool",
    "date": "date",
    "timestamp without time zone": "datetime",
    "timestamp with time zone": "datetime",
}

IDLE = 0
"""The transaction status of a session outside any transaction (psycopg 2 and 3)."""


def _level(write: bool) -> str:
    """A writer reads committed rows; a reader sees one snapshot."""
    return "READ COMMITTED" if write else "REPEATABLE READ"


def _utc(value: datetime) -> datetime:
    return value.astimezone(UTC)


@dataclass(frozen=True)
class PostgresDialect(Dialect):
    def described_type(self, column: Sequence[Any]) -> str | None:
        type_code = column[1]
        if type_code == _NUMERIC:
            precision, scale = getattr(column, "precision", None), getattr(column, "scale", None)
            if precision is None and len(column) > 5:
                precision, scale = column[4], column[5]
            if precision:
                return f"decimal({precision},{scale or 0})"
            return None  # numeric without a declared precision: from the values
        return _OIDS.get(type_code)

    def spelled(self, expression: str, logical: str | None) -> str:
        # A timestamptz cast to text is written in the session's TimeZone: another receiver
        # connection, set otherwise, would spell the same instant anew. UTC, microseconds, always.
        if logical == "datetime":
            return f"to_char({expression} AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')"
        return self.cast_text(expression)

    def sha256_hex(self, connection: Any, expression: str) -> str:
        return f"encode(sha256(convert_to({expression}, 'UTF8')), 'hex')"

    def streaming_cursor(self, connection: Any) -> Any:
        # A named cursor is a server-side cursor: rows arrive fetchmany by fetchmany.
        return connection.cursor(name=f"dogana_{secrets.token_hex(8)}")

    def begin_statements(self, *, write: bool) -> tuple[str, ...]:
        # psycopg opens the transaction at the first statement; fix its isolation first.
        return (f"SET TRANSACTION ISOLATION LEVEL {_level(write)}",)

    def begin(self, connection: Any, *, write: bool) -> None:
        # Both psycopgs open a transaction with a BEGIN of their own, a round trip before the
        # first statement: told the level, they name it there, and SET TRANSACTION is not sent.
        level = _level(write)
        driver = type(connection).__module__.partition(".")[0]
        idle = getattr(getattr(connection, "info", None), "transaction_status", None) == IDLE
        if driver == "psycopg" and idle:
            import psycopg

            connection.isolation_level = psycopg.IsolationLevel[level.replace(" ", "_")]
        elif driver == "psycopg2" and idle:
            connection.isolation_level = level  # psycopg2 takes the level's name
        else:
            super().begin(connection, write=write)

    def lendable(self, connection: Any) -> bool:
        # Nothing a transaction leaves on a session outlives it here: the isolation level is
        # set per transaction and the advisory locks (lock_schema) are transaction-scoped.
        return idle_session(connection)

    def lock_schema(self, connection: Any, name: str) -> None:
        # CREATE TABLE IF NOT EXISTS is not safe against itself: two transactions that both see
        # no table both insert its row type, and the second fails with a UniqueViolation on
        # pg_type. A transaction-scoped advisory lock, keyed by the schema and the name, makes
        # the second wait for the first's commit and then find the table.
        execute(
            connection,
            "SELECT pg_advisory_xact_lock(hashtextextended(current_schema() || '.' || %s, 0))",
            (name,),
        )

    def lock_before_snapshot(self, connection: Any, table: str) -> None:
        # The snapshot is taken at the first statement that needs one, which LOCK TABLE and
        # SAVEPOINT are not: once the lock is held, no swap can commit before the snapshot, so
        # the ledger and the rows read after it are one committed state. A table not published
        # yet has nothing to lock.
        cursor = connection.cursor()
        try:
            cursor.execute("SAVEPOINT dogana_lock")
            try:
                cursor.execute(f"LOCK TABLE {self.quote(table)} IN ACCESS SHARE MODE")
            except Exception:
                cursor.execute("ROLLBACK TO SAVEPOINT dogana_lock")
            cursor.execute("RELEASE SAVEPOINT dogana_lock")
        finally:
            cursor.close()

    def declared_types_query(self, table: str) -> tuple[str, tuple[Any, ...]]:
        sql = (
            "SELECT attname, format_type(atttypid, atttypmod) || COALESCE(' COLLATE ' || "
            "(SELECT collname FROM pg_collation WHERE oid = attcollation), '') "
            "FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attnum > 0 "
            "AND NOT attisdropped"
        )
        return sql, (self.quote(table),)

    def catalog_columns(
        self, connection: Any, schema: str | None, table: str
    ) -> list[CatalogColumn]:
        rows = fetch_all(
            connection,
            "SELECT column_name, data_type, is_nullable, numeric_precision, numeric_scale, "
            "character_maximum_length FROM information_schema.columns "
            "WHERE table_schema = COALESCE(%s, current_schema()) AND table_name = %s "
            "ORDER BY ordinal_position",
            (schema, table),
        )
        found = []
        for name, data_type, nullable, precision, scale, length in rows:
            kind = str(data_type)
            logical = _CATALOG.get(kind)
            native = kind if length is None else f"{kind}({length})"
            if kind == "numeric" and precision is not None:
                native = f"numeric({precision},{scale or 0})"
                logical = f"decimal({precision},{scale or 0})"
            # numeric without a declared precision is typed by its values when read (columns.py)
            found.append(CatalogColumn(str(name), native, logical, nullable == "YES"))
        return found

    def existing_names(self, connection: Any, names: Sequence[str]) -> set[str]:
        rows = fetch_all(
            connection,
            "SELECT relname FROM pg_class WHERE relnamespace = current_schema()::regnamespace "
            "AND relname = ANY(%s)",
            (list(names),),
        )
        return {str(name) for (name,) in rows}

    def has_index(self, connection: Any, table: str, name: str) -> bool:
        # CREATE INDEX IF NOT EXISTS locks the table in SHARE mode before it finds the index
        # there: run on every delivery against a table others write (the published table, the
        # store's receipts), it would wait for each transaction writing it, autovacuum's too,
        # and hold back the writers queued behind it. The catalog answers without a lock.
        found = scalar(
            connection,
            "SELECT 1 FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid "
            "WHERE x.indrelid = to_regclass(%s) AND c.relname = %s",
            (self.quote(table), name),
        )
        return found is not None

    def has_dependents(self, connection: Any, table: str) -> bool:
        # Everything pg_depend records against the table but its own indexes, TOAST table and
        # row type, which go and come with it.
        sql = (
            "SELECT (SELECT count(*) FROM pg_depend d WHERE d.refclassid = 'pg_class'::regclass"
            " AND d.refobjid = c.oid AND d.classid <> 'pg_type'::regclass"
            " AND NOT (d.classid = 'pg_class'::regclass AND EXISTS (SELECT 1 FROM pg_class r"
            " WHERE r.oid = d.objid AND r.relkind IN ('i', 't'))))"
            " + (CASE WHEN c.relacl IS NULL THEN 0 ELSE 1 END)"
            f" FROM pg_class c WHERE c.oid = to_regclass({self.placeholder})"
        )
        return bool(scalar(connection, sql, (self.quote(table),)))

    def drop_columns(self, table: str, columns: Sequence[str]) -> list[str]:
        # One statement marks the columns dropped; the rows are not rewritten.
        drops = ", ".join(f"DROP COLUMN {self.quote(name)}" for name in columns)
        return [f"ALTER TABLE {table} {drops}"] if columns else []

    def statistics(self, table: str) -> list[str]:
        # Without them the planner takes a key for one value in 200 and a staged-key array for
        # ten keys: past a few million rows it scans the table, comparing each row with every
        # staged key, until autovacuum analyzes it.
        return [f"ANALYZE {table}"]

    def one_key_match(self, column: str, staged: str) -> str | None:
        # The staged keys as one array, looked up in the key index: the table's statistics
        # (statistics()) tell the planner the keys are unique.
        return f"{column} = ANY (ARRAY({staged}))"

    def statement_error(self, error: BaseException) -> str | None:
        message = " ".join(str(error).split())
        state = getattr(error, "sqlstate", None) or getattr(error, "pgcode", None)
        return message if isinstance(state, str) and state[:2] in _STATEMENT_CLASSES else None


POSTGRES = PostgresDialect(
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
    bind_date=identity,
    datetime_array=pylist,
    date_array=pylist,
    decimal_array=pylist,
    # "C" compares the bytes of UTF-8, which is code-point order, whatever the database's locale.
    text_collation='"C"',
    statement_savepoint=True,
    locks_outer_join=False,
    log_connector="pg_logical",
)
