"""The bulk read: a snapshot's rows straight into Arrow, no Python object per value.

PostgreSQL's ADBC driver (the ``adbc`` extra: adbc-driver-postgresql) reads the server's binary
COPY format into Arrow arrays in C++. It does so on a second connection, which must see exactly
what the read transaction sees: the read exports its snapshot (pg_export_snapshot(), inside the
REPEATABLE READ READ ONLY transaction snapshot.py opened after the clock reading and the change
marker) and the second connection imports it (SET TRANSACTION SNAPSHOT) as the first statement
of its own REPEATABLE READ READ ONLY transaction. Both transactions then see the one snapshot, so
produced_at, the generation and the rows all describe the same instant, as on the row-by-row
path; a group's tables are all read through the one exported snapshot.

The file's schema is settled before the first row, as columns.py settles it, but from the
driver's description alone: the contract's and the author's types, then the database's. Each
Arrow column the driver returns is then converted to that schema exactly (integers widened to
int64, numeric's text to decimal(p,s), timestamps to microseconds in UTC, a naive one read as
UTC); a value that does not fit fails the read naming the column, as on the row-by-row path.

SQLite's ADBC driver (adbc-driver-sqlite, installed with dogana) reads on the reader, the second
connection sqlite.py brackets with markers so that its snapshot is provably the read's. SQLite
describes no column, so every column must be typed (the contract, column_types, or the table's
declared types). The driver types each column by the values of its first batch and converts
later values of another storage class silently (an INTEGER to text in a text column), where the
row-by-row path refuses them; so the statement replaces each value that would be converted by
one the driver cannot hide (an X'FF' blob, which is no UTF-8 text and no number), and a column
the driver typed otherwise than its values (or stopped on) sends the whole read row by row, in
the same snapshot, before its file is kept. The arrays are then converted by columns.py exactly
as it converts the driver's Python values (Columns.arrow_column).

The row-by-row path (columns.py) stays for what this cannot serve, each logged by name when it
is taken:

    the driver is missing      the adbc extra is not installed, or the connection is not psycopg;
                               SQLite: adbc-driver-sqlite is not installed
    types from values          a column the driver does not type (numeric without a precision,
                               json, arrays; on SQLite a column with no declared type), so only
                               its first values can tell its type
    types told otherwise       the contract or column_types types a column otherwise than the
                               database (0/1 integers read as bool, say)
    a null parameter           a bound value is null, which ADBC cannot type
    MariaDB                    no second connection can share its read's snapshot
    SQLite, no reader          an in-memory database, attached databases (sqlite.py)
    SQLite, the statement      calls dogana_utc() or dogana_date() (a datetime or date cursor or
                               window), which only the read's connection has, or the reader
                               cannot prepare it
    SQLite, mixed values       a column holds values of more than one storage class (numbers in
                               a text column, text or huge integers in a decimal one, blobs),
                               found while reading: the file so far is dropped

And one case where the row-by-row conversion is the faster: a read of few rows, a changes read
most often. ADBC's connection costs time before its first row (the driver loads the server's
types), more than the read's own cursor takes for FEW_ROWS rows. So a read the planner
expects to hold at most FEW_ROWS rows is read first through the read's own cursor, in the same
snapshot, and converted as the row-by-row path converts it; when it does hold more, that cursor
is closed after FEW_ROWS + 1 rows and the read is made by ADBC after all.
"""

from __future__ import annotations

import importlib
import json
import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from dogana_provider.dialects import SQLITE
from dogana_provider.sources.columns import (
    DECIMAL_PREFIX,
    Columns,
    UnsupportedColumn,
)
from dogana_provider.sources.snapshot import SlowPath, Snapshot

log = logging.getLogger(__name__)

# The driver's record batches, about 4 MB each rather than its 16 MB: memory stays well under a
# row group's worth of rows while the writer buffers one.
BATCH_BYTES = "adbc.postgresql.batch_size_hint_bytes"
_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%%")
FEW_ROWS = 10_000
"""Rows the read's own cursor reads in less time than ADBC takes to connect."""


@dataclass(frozen=True)
class BulkRead:
    """A read's schema, fixed before its first row, and its record batches in that schema."""

    schema: pa.Schema
    batches: Iterator[pa.RecordBatch]


def adbc_postgresql() -> Any:
    """The ADBC PostgreSQL driver's DB-API module, or SlowPath when it is not installed."""
    try:
        return importlib.import_module("adbc_driver_postgresql.dbapi")
    except ImportError:
        raise SlowPath("the adbc extra (adbc-driver-postgresql) is not installed") from None


def settled_schema(
    snapshot: Snapshot,
    description: Sequence[Sequence[Any]],
    typed: Mapping[str, str],
    renames: Mapping[str, str],
    false_when_null: str | None,
) -> Columns:
    """The file's schema from the description alone, or SlowPath naming the column."""
    for column in description:
        name = renames.get(str(column[0]), str(column[0]))
        described = snapshot.dialect.described_type(column)
        if described is None and not snapshot.dialect.describes_columns and name in typed:
            continue  # SQLite describes no column: its type is the one typed (declared, say)
        if described is None:
            raise SlowPath(f"column {name}: the database does not type it, its values must")
        if name in typed and typed[name] != described:
            raise SlowPath(f"column {name}: typed {typed[name]}, the database has {described}")
    return Columns(
        snapshot.dialect, description, [], typed, renames, false_when_null=false_when_null
    )


@contextmanager
def postgres_read(
    snapshot: Snapshot,
    sql: str,
    params: Mapping[str, Any],
    columns: Columns,
    *,
    few_rows: int = FEW_ROWS,
) -> Iterator[BulkRead]:
    """The statement's rows through ADBC, on a connection that imports the read's snapshot;
    at most few_rows of them through the read's own cursor (the module's docstring)."""
    adbc_postgresql()
    _, values = numbered(sql, params)
    if any(value is None for value in values):
        raise SlowPath("a bound parameter is null, which the ADBC driver cannot type")
    few = _few(snapshot, sql, params, columns, few_rows) if few_rows > 0 else None
    if few is not None:
        log.info("read through the read's own cursor: %d rows, fewer than a batch", few.num_rows)
        yield BulkRead(columns.schema, iter([few]))
        return
    exported = export_snapshot(snapshot)
    with imported_read(libpq_conninfo(snapshot.connection), exported, sql, params, columns) as bulk:
        yield bulk


def export_snapshot(snapshot: Snapshot) -> str:
    """The read's snapshot, exported for other connections to import while the read is open."""
    return str(snapshot.scalar("SELECT pg_export_snapshot()", {}))


@contextmanager
def imported_read(
    conninfo: str, exported: str, sql: str, params: Mapping[str, Any], columns: Columns
) -> Iterator[BulkRead]:
    """The statement's rows through ADBC, on a new connection that imports the snapshot
    exported; an exported snapshot that is gone fails the import (the driver's error)."""
    dbapi = adbc_postgresql()
    statement, values = numbered(sql, params)
    connection = dbapi.connect(conninfo)
    try:
        cursor = connection.cursor()
        try:
            # autocommit is off: the driver has begun a transaction, in which nothing ran yet.
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            cursor.execute("SET TRANSACTION SNAPSHOT " + quoted_literal(exported))
            cursor.execute("SET TIME ZONE 'UTC'")
            cursor.adbc_statement.set_options(**{BATCH_BYTES: str(4 << 20)})
            cursor.execute(statement, parameters=tuple(values) if values else None)
            reader = cursor.fetch_record_batch()
            converters = _converters(reader.schema, columns)
            yield BulkRead(columns.schema, _converted(reader, columns, converters))
        finally:
            with suppress(Exception):
                cursor.close()
    finally:
        # Nothing was written: the rollback only ends the imported snapshot's transaction.
        with suppress(Exception):
            connection.rollback()
        connection.close()


def _few(
    snapshot: Snapshot, sql: str, params: Mapping[str, Any], columns: Columns, limit: int
) -> pa.RecordBatch | None:
    """The read's rows, converted as the row-by-row path converts them, when the planner
    expects at most limit of them and there are; None otherwise."""
    plan = snapshot.scalar(f"EXPLAIN (FORMAT JSON) {sql}", params)
    if isinstance(plan, str):
        plan = json.loads(plan)
    if plan[0]["Plan"]["Plan Rows"] > limit:
        return None
    cursor = snapshot.dialect.streaming_cursor(snapshot.connection)
    try:
        cursor.execute(sql, dict(params))
        rows = cursor.fetchmany(limit + 1)
    finally:
        cursor.close()
    return columns.batch(rows) if len(rows) <= limit else None


def numbered(sql: str, params: Mapping[str, Any]) -> tuple[str, list[Any]]:
    """psycopg's %(name)s placeholders as PostgreSQL's $n, and the values in $n order."""
    order: dict[str, int] = {}

    def number(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return "%"  # psycopg's escaped percent sign
        if name not in order:
            order[name] = len(order) + 1
        return f"${order[name]}"

    statement = _PLACEHOLDER.sub(number, sql)
    return statement, [params[name] for name in order]


def quoted_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def libpq_conninfo(connection: Any) -> str:
    """The libpq connection string of a psycopg (3 or 2) connection, its password included."""
    info = getattr(connection, "info", None)
    if info is None:
        raise SlowPath("the connection is not psycopg's, so its parameters cannot be reused")
    if hasattr(info, "get_parameters"):  # psycopg 3
        parameters = dict(info.get_parameters())
        make = importlib.import_module("psycopg.conninfo").make_conninfo
    else:  # psycopg 2
        parameters = dict(info.dsn_parameters)
        make = importlib.import_module("psycopg2.extensions").make_dsn
    # host is left out of the parameters when it is the default; the server's own is exact.
    parameters.setdefault("host", info.host)
    parameters.setdefault("port", str(info.port))
    parameters.setdefault("dbname", info.dbname)
    parameters.setdefault("user", info.user)
    if info.password:
        parameters["password"] = info.password
    return str(make(**{k: v for k, v in parameters.items() if v not in (None, "")}))


def _converters(source: pa.Schema, columns: Columns) -> list[Any]:
    """How each driver column becomes the file's: exactly, or SlowPath before any row is read."""
    if len(source) != len(columns.schema):
        raise SlowPath(
            f"the driver returned {len(source)} columns, the description {len(columns.schema)}"
        )
    return [
        _converter(field, target, logical)
        for field, target, logical in zip(source, columns.schema, columns.logical, strict=True)
    ]


def _converter(field: pa.Field, target: pa.Field, logical: str) -> Any:
    kind = field.type
    storage = getattr(kind, "storage_type", None)
    if logical == "int" and pa.types.is_integer(kind):
        return _cast(target)
    if logical == "float" and pa.types.is_floating(kind):
        return _cast(target)
    if logical == "str" and (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        return _cast(target)
    if logical == "bool" and pa.types.is_boolean(kind):
        return _cast(target)
    if logical == "date" and pa.types.is_date(kind):
        return _cast(target)
    if logical == "datetime" and pa.types.is_timestamp(kind):
        return _timestamp(target)
    if logical.startswith("decimal(") and storage is not None and pa.types.is_string(storage):
        # numeric arrives as its text (an opaque extension type): Arrow parses it exactly.
        return _numeric(target)
    raise SlowPath(f"column {target.name}: the driver returns {kind}, the file needs {logical}")


def _cast(target: pa.Field) -> Any:
    def convert(array: pa.Array) -> pa.Array:
        return array if array.type == target.type else array.cast(target.type, safe=True)

    return convert


def _timestamp(target: pa.Field) -> Any:
    def convert(array: pa.Array) -> pa.Array:
        if array.type.tz is None:
            # A naive timestamp is read as UTC, as the row-by-row path reads it.
            array = array.cast(pa.timestamp(array.type.unit, tz="UTC"))
        return array.cast(target.type, safe=True)

    return convert


def _numeric(target: pa.Field) -> Any:
    def convert(array: pa.Array) -> pa.Array:
        return array.storage.cast(target.type, safe=True)

    return convert


def _converted(
    reader: Any, columns: Columns, converters: Sequence[Any]
) -> Iterator[pa.RecordBatch]:
    flagged = {columns.false_when_null}
    for batch in reader:
        arrays = []
        for index, (field, convert) in enumerate(zip(columns.schema, converters, strict=True)):
            try:
                array = convert(batch.column(index))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OverflowError) as exc:
                raise UnsupportedColumn(f"column {field.name}: {exc}") from None
            if field.name in flagged and array.null_count:
                array = pc.fill_null(array, False)
            arrays.append(array)
        yield pa.RecordBatch.from_arrays(arrays, schema=columns.schema)


# SQLite -------------------------------------------------------------------------------------------

# Beyond 2**53 a REAL holds no longer every integer: such a decimal is left to the row-by-row path.
_EXACT = 2**53
_SQLITE_FUNCTIONS = ("dogana_utc(", "dogana_date(")


def sqlite_serves(sql: str) -> None:
    """SlowPath unless the reader can run the statement: it lacks dogana_utc() and
    dogana_date(), which compare datetimes and dates (sources/sqlite.py)."""
    if any(function in sql for function in _SQLITE_FUNCTIONS):
        raise SlowPath("the statement calls dogana_utc() or dogana_date(), which the reader lacks")


@contextmanager
def sqlite_read(
    reader: Any,
    sql: str,
    params: Mapping[str, Any],
    columns: Columns,
    declared: Mapping[str, str],
    batch_rows: int,
) -> Iterator[BulkRead]:
    """The statement's rows from the reader (sqlite.Reader, in the read's snapshot), in batches
    of batch_rows (the driver types each column by the values of its first batch).

    declared holds the declared type of each column of a table read (none for a query), which
    tells the columns whose values are all text (TEXT affinity) from the others.
    """
    with reader.read(_guarded(sql, columns, declared), params, batch_rows) as batches:
        yield BulkRead(columns.schema, _sqlite_converted(batches, columns))


def _guarded(sql: str, columns: Columns, declared: Mapping[str, str]) -> str:
    """The statement, each value the driver would convert silently replaced by X'FF'."""
    selected = []
    for name, logical in zip(columns.source_names, columns.logical, strict=True):
        try:
            column = f"dogana_bulk.{SQLITE.quote(name)}"
        except ValueError:
            raise SlowPath(f"column {name!r}: the name cannot be quoted") from None
        text_only = name in declared and _text_affinity(declared[name])
        # Unary + takes the column's affinity away from the comparisons: they then compare
        # storage classes as they are (numbers < text < blobs) instead of first trying to read
        # each text value as a number, which its NUMERIC affinity would have them do.
        bare = f"+{column}"
        if logical in ("str", "date", "datetime") and not text_only:
            # A number among text would come out as its text: it comes out as X'FF' instead.
            column = f"CASE WHEN {bare} < '' THEN X'FF' ELSE {column} END"
        elif logical.startswith(DECIMAL_PREFIX) and not text_only:
            # Numbers come out as REALs (exact below 2**53), text, blobs and huge ones as X'FF'.
            column = (
                f"CASE WHEN {bare} < {_EXACT} AND {bare} > -{_EXACT} THEN {column} * 1.0 "
                f"WHEN {column} IS NULL THEN NULL ELSE X'FF' END"
            )
        selected.append(column)
    return f"SELECT {', '.join(selected)} FROM ({sql}) AS dogana_bulk"


def _text_affinity(declared: str) -> bool:
    """Whether SQLite stores every value of a column declared so as text (or a blob): its rules
    for a column's affinity, in their order (INT first, then CHAR, CLOB, TEXT)."""
    text = declared.upper()
    return "INT" not in text and any(word in text for word in ("CHAR", "CLOB", "TEXT"))


def _sqlite_converted(
    batches: Iterator[pa.RecordBatch], columns: Columns
) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        arrays = [
            columns.arrow_column(index, _faithful(columns, index, batch.column(index)))
            for index in range(batch.num_columns)
        ]
        yield pa.RecordBatch.from_arrays(arrays, schema=columns.schema)


def _faithful(columns: Columns, index: int, array: pa.Array) -> pa.Array:
    """The array, when it holds exactly what sqlite3 would have returned; SlowPath otherwise."""
    name, logical = columns.names[index], columns.logical[index]
    kind = array.type
    if array.null_count == len(array) or pa.types.is_int64(kind):
        return array  # the driver refuses any other value in an integer column
    if pa.types.is_float64(kind) and (logical == "float" or logical.startswith(DECIMAL_PREFIX)):
        return array  # INTEGERs among the REALs are converted as sqlite3's float() would
    if pa.types.is_string(kind) and logical not in ("int", "float", "bool"):
        try:
            array.validate(full=True)  # X'FF' or another blob that is no UTF-8 text
        except pa.ArrowInvalid:
            raise SlowPath(f"column {name}: values of another storage class among text") from None
        return array
    raise SlowPath(f"column {name}: the driver typed it {kind} by its first values, not {logical}")
