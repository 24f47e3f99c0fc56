"""Staging: a delivered file's rows streamed into a table where they can be checked.

Rows go from the file to the database one record batch at a time, so memory stays flat in the
file's size: through the database's bulk load where it has one (postgres.py: COPY in its binary
format; mariadb.py: LOAD DATA LOCAL INFILE where the connection allows it), and executemany
otherwise; on SQLite the receiver reads the file first into a private SQLite file that the
staging transaction attaches (sqlite.py), and the rows are copied from it in one statement
(``preloaded``). The staging table (table.py) sits beside, never inside, the published table;
nothing here commits, so the caller owns the transaction.

stage_file never raises for a file it cannot read: it drops what it staged and returns a Staged
whose ``unreadable`` says why, with the SHA-256 of the bytes all the same, because the receiver
still reports the row count (which fails) and the content hash (which may pass or not). A value
the database cannot store in its column (out of the type's range, a NaN or an infinity a float
column cannot hold) is refused the same way, marked ``unstorable``: the file is readable, its
values do not fit. Only such data errors are refusals; an operational failure (a lost
connection, a full disk) raises, and the caller's transaction rolls back.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa

from dogana_core.contract import Contract
from dogana_provider.delivery.files import DeliveredFile, MisnamedColumn, UnreadableFile
from dogana_provider.dialects import MARIADB, POSTGRES, Dialect, execute
from dogana_provider.staging import mariadb, postgres
from dogana_provider.staging.sqlite import Preloaded
from dogana_provider.staging.table import (
    ROW_COLUMN,
    YEARS,
    Staged,
    UnstorableValue,
    bound_columns,
    column_definitions,
    drop,
    refuse_unstorable,
    row_number,
    stores_row_column,
)


class BulkLoad(Protocol):
    """A database's own way to load a batch faster than executemany."""

    def load(
        self,
        cursor: Any,
        numbers: range,
        columns: Sequence[pa.Array],
        following: pa.RecordBatch | None = None,
    ) -> bool:
        """Load one batch; False, having loaded nothing, when the connection refuses the way
        (the rows then go through executemany)."""
        ...

    def close(self) -> None: ...


BULK_LOADS: dict[Dialect, Callable[[Any, Dialect, str, str, Sequence[str]], BulkLoad]] = {
    POSTGRES: postgres.CopyBinary,
    MARIADB: mariadb.LocalInfile,
}
"""Each database's bulk load, given the connection, the dialect, the staging table, its quoted
column list and the staged columns' logical types; executemany where none is."""

PARALLEL_LOADS = frozenset({POSTGRES})
"""The databases whose staging table takes one loader per part of a parted delivery at once
(staging/parts.py): COPY into one table from several sessions, each waiting on none of the
others, and a table created by a committed transaction kept by sweep while its decision's mark
is held (no session lock to lose)."""

TABLE_OPTIONS: dict[Dialect, Callable[[Any], str]] = {MARIADB: mariadb.table_options}
"""What a database's staging table's CREATE TABLE ends with, asked of its connection."""


def stage_file(
    connection: Any,
    dialect: Dialect,
    table: str,
    path: str | Path,
    contract: Contract,
    *,
    columns: Sequence[str] | None = None,
    preloaded: Preloaded | None = None,
) -> Staged:
    """Create ``table`` and stream the file's rows into it: ``columns`` of the file, or all.

    A column named in ``columns`` that the file does not carry is skipped, so a caller can ask
    for the contract's bound columns and get those the file has (the deleted column may be
    absent). The file's bytes are hashed while they are read. With ``preloaded`` (SQLite, every
    column: sqlite.py), the rows were read and checked already, and are copied from it.
    """
    path = str(path)
    with DeliveredFile(path, contract) as delivered:
        created = False
        try:
            file_columns = delivered.columns
            staged = [c for c in file_columns if columns is None or c.name in columns]
            if ROW_COLUMN in {c.name for c in file_columns}:
                raise MisnamedColumn(
                    path, "is a name dogana reserves for staging", column=ROW_COLUMN
                )
            for column in staged:
                if column.logical is None:
                    raise UnreadableFile(
                        path, f"cannot be staged: {column.problem}", column=column.name
                    )
            types = tuple((c.name, str(c.logical)) for c in staged)
            create_table(connection, dialect, table, types)
            created = True
            digest: str | None
            if preloaded is None:
                rows = _insert(connection, dialect, table, delivered, types)
                digest = delivered.sha256()
            else:
                if preloaded.error is not None:
                    raise preloaded.error
                preloaded.copy(connection, table)
                rows, digest = preloaded.rows, preloaded.sha256
        except UnreadableFile as error:
            if created:
                drop(connection, dialect, table)
            digest_ = _digest_or_none(delivered) if preloaded is None else preloaded.sha256
            return Staged(
                path,
                table,
                (),
                (),
                0,
                digest_,
                str(error),
                unstorable=isinstance(error, UnstorableValue),
                misnamed=isinstance(error, MisnamedColumn),
            )
        return Staged(path, table, types, file_columns, rows, digest)


def create_table(
    connection: Any, dialect: Dialect, table: str, types: tuple[tuple[str, str], ...]
) -> None:
    """The staging table of the staged columns types (name, logical type), empty."""
    columns = column_definitions(dialect, types)
    options = TABLE_OPTIONS.get(dialect, lambda _: "")(connection)
    execute(connection, f"CREATE TABLE {dialect.quote(table)} ({', '.join(columns)}){options}")


def load_part(
    connection: Any,
    dialect: Dialect,
    table: str,
    path: str | Path,
    contract: Contract,
    types: tuple[tuple[str, str], ...],
    first: int,
    rows: int,
) -> str:
    """Stream one part of a parted delivery (staging/parts.py) into the staging table, which
    exists, its rows numbered from first; the SHA-256 of the bytes read. UnreadableFile when
    the part's columns are not types, it holds other than rows rows, or a value does not fit
    (UnstorableValue)."""
    with DeliveredFile(path, contract) as delivered:
        found = tuple((c.name, str(c.logical)) for c in delivered.columns)
        if found != types:
            raise UnreadableFile(path, f"has the columns {found}, the first part {types}")
        loaded = _insert(connection, dialect, table, delivered, types, first)
        if loaded != rows:
            raise UnreadableFile(path, f"holds {loaded} rows; its footer declares {rows}")
        return delivered.sha256()


def _insert(
    connection: Any,
    dialect: Dialect,
    table: str,
    delivered: DeliveredFile,
    types: tuple[tuple[str, str], ...],
    first: int = 1,
) -> int:
    """The file's rows into the table, numbered from first; how many."""
    names = [ROW_COLUMN, *(name for name, _ in types)]
    row = row_number(dialect, names[1:])
    quoted = ", ".join([row, *(dialect.quote(n) for n in names[1:])])
    statement = (
        f"INSERT INTO {dialect.quote(table)} ({quoted}) "
        f"VALUES ({', '.join(dialect.placeholder for _ in names)})"
    )
    rows = 0
    # The DB-API driver's data error (PEP 249's optional connection attribute): a value out of
    # its column's range. Where that aborts the transaction (PostgreSQL: statement_savepoint),
    # the load runs under a savepoint that rolls it back and lets the caller drop the table and
    # record a rejection; elsewhere the failed statement alone is undone, and the table whose
    # rows it held is dropped all the same.
    data_error = getattr(connection, "DataError", None) or _NoError
    savepoint = dialect.statement_savepoint
    bulk = BULK_LOADS.get(dialect)
    logical = [kind for _, kind in types]
    loader = None if bulk is None else bulk(connection, dialect, table, quoted, logical)
    cursor = connection.cursor()
    try:
        if savepoint:
            cursor.execute("SAVEPOINT dogana_stage")
        try:
            for batch, following in _paired(delivered.batches([name for name, _ in types])):
                numbers = range(first + rows, first + rows + batch.num_rows)
                refuse_unstorable(dialect, delivered.path, batch, types)
                if loader is None or not loader.load(cursor, numbers, batch.columns, following):
                    if loader is not None:
                        loader.close()
                    loader = None  # none, or the connection refuses it: executemany from now on
                    values = [
                        dialect.values(batch.column(i), kind) for i, (_, kind) in enumerate(types)
                    ]
                    cursor.executemany(statement, zip(numbers, *values, strict=True))
                rows += batch.num_rows
            if loader is not None:
                ending, loader = loader, None
                ending.close()  # a load streamed across batches (COPY) is refused here, if at all
        except UnreadableFile:
            # Refused while the rows stream (a part of the file unreadable, a value no column
            # holds): an open COPY ends failed, which the savepoint's rollback clears.
            _abort(loader)
            loader = None
            if savepoint:
                cursor.execute("ROLLBACK TO SAVEPOINT dogana_stage")
            raise
        except (OverflowError, ValueError, data_error) as exc:
            # ValueError: a date Python cannot hold (year 10000), met converting to bind it.
            _abort(loader)
            loader = None
            if savepoint:
                cursor.execute("ROLLBACK TO SAVEPOINT dogana_stage")
            rule = str(exc).split("\n")[0]
            # Drivers name the column in the message (PostgreSQL's COPY context, MariaDB's
            # "for column 'x'"); only a staged column's name is taken from it.
            named = re.findall(r"column '?(\w+)'?", str(exc))
            column = next((n for n in named if n in dict(types)), None)
            raise UnstorableValue(
                delivered.path,
                f"a value does not fit the {dialect} column it is staged in: {rule}",
                column=column,
            ) from None
        if savepoint:
            cursor.execute("RELEASE SAVEPOINT dogana_stage")
    finally:
        _abort(loader)  # only a failure leaves one open
        cursor.close()
    return rows


def _abort(loader: BulkLoad | None) -> None:
    """End a load after a failure: a load streamed across batches (postgres.CopyBinary) ends
    unfinished, so that the connection takes statements again; the others have nothing open."""
    if loader is not None:
        getattr(loader, "abort", loader.close)()


def _paired(batches: Iterable[pa.RecordBatch]) -> Iterator[tuple[pa.RecordBatch, Any]]:
    """Each batch with the one after it (None after the last), read before it is staged."""
    iterator = iter(batches)
    current = next(iterator, None)
    while current is not None:
        following = next(iterator, None)
        yield current, following
        current = following


class _NoError(Exception):
    """Stands for a driver without a DataError attribute: never raised."""


def _digest_or_none(delivered: DeliveredFile) -> str | None:
    try:
        return delivered.sha256()
    except UnreadableFile:
        return None


__all__ = [
    "BULK_LOADS",
    "PARALLEL_LOADS",
    "ROW_COLUMN",
    "TABLE_OPTIONS",
    "YEARS",
    "BulkLoad",
    "Preloaded",
    "Staged",
    "UnstorableValue",
    "bound_columns",
    "column_definitions",
    "create_table",
    "drop",
    "load_part",
    "refuse_unstorable",
    "row_number",
    "stage_file",
    "stores_row_column",
]
