"""A staging table: its row number, its columns, and the values no database column may hold.

Every staging table numbers its rows by their position in the file counted from 1 (for a CSV
file, the first line after the header is row 1), in its first column ROW_COLUMN, or where the
database numbers a table's rows itself (SQLite's rowid) in that number (row_number), which a
swap (receiver/actions.py) need not drop: SQLite drops a column by rewriting every row. Checks
quote it in their details, so a person can find the offending row in the file.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from dogana_core.contract import Contract
from dogana_provider.delivery.files import Column, UnreadableFile
from dogana_provider.dialects import Dialect, execute

ROW_COLUMN = "_dogana_row"


class UnstorableValue(UnreadableFile):
    """A value of the file that the database cannot store in its column's type."""


@dataclass(frozen=True)
class Staged:
    """A file staged in a table: what was loaded, and what the file itself said."""

    path: str
    table: str
    columns: tuple[tuple[str, str], ...]
    """Each staged column with its logical type, ROW_COLUMN left out."""
    file_columns: tuple[Column, ...]
    """Every column of the file, staged or not, for the column hash; empty when unreadable."""
    rows: int
    sha256: str | None
    """SHA-256 of the file's bytes; None when they could not all be read."""
    unreadable: str | None = None
    """Why the file could not be read as a delivery of its contract; the table is then dropped."""
    unstorable: bool = False
    """unreadable because a value does not fit the database's column, not a malformed file."""
    misnamed: bool = False
    """unreadable because a column's name is one no receiver may create (column_names)."""

    def logical(self, column: str) -> str | None:
        return dict(self.columns).get(column)


def row_number(dialect: Dialect, columns: Iterable[str]) -> str:
    """The SQL name of a staging table's row number, given its staged columns: the table's
    implicit row number (SQLite's rowid), under the first of its names (Dialect.rowid_names)
    no column takes, since a column of the same name hides it; elsewhere (or were all taken)
    ROW_COLUMN, quoted."""
    taken = {column.lower() for column in columns}
    free = next((name for name in dialect.rowid_names if name not in taken), None)
    return dialect.quote(ROW_COLUMN) if free is None else free


def stores_row_column(dialect: Dialect, columns: Iterable[str]) -> bool:
    """Whether the staging table has a ROW_COLUMN column (not SQLite's rowid)."""
    return row_number(dialect, columns) == dialect.quote(ROW_COLUMN)


def bound_columns(contract: Contract) -> list[str]:
    """The columns the contract types: key, window, cursor and deleted, in the contract's order."""
    return [column for column, _ in contract.types]


def column_definitions(dialect: Dialect, types: tuple[tuple[str, str], ...]) -> list[str]:
    """A staging table's columns as CREATE TABLE declares them (the row number's first)."""
    columns = []
    if stores_row_column(dialect, (name for name, _ in types)):
        columns.append(f"{dialect.quote(ROW_COLUMN)} {dialect.column_type('int')} NOT NULL")
    columns += [f"{dialect.quote(name)} {dialect.column_type(kind)}" for name, kind in types]
    return columns


def drop(connection: Any, dialect: Dialect, table: str) -> None:
    """Drop a staging table; one already gone (a sweep, a retried drop) is no error."""
    execute(connection, f"DROP TABLE IF EXISTS {dialect.quote(table)}")


YEARS = (1, 9999)
"""The years a date or datetime may have: Python's, which every driver reads values back into
(a year-10000 timestamp stored by PostgreSQL could never be read), and the four digits of
SQLite's fixed-width text, whose order is time order only while every year has four."""


def refuse_unstorable(
    dialect: Dialect, path: str, batch: pa.RecordBatch, types: tuple[tuple[str, str], ...]
) -> None:
    """Values the database would refuse, lose or misorder, which no driver error reports.

    SQLite turns a NaN into NULL and MariaDB refuses NaN and infinities in the client; years
    outside YEARS are refused everywhere. Vectorised over the batch, so cheap.
    """
    for i, (name, kind) in enumerate(types):
        column = batch.column(i)
        if kind == "float" and not (dialect.stores_nan and dialect.stores_infinity):
            nan = not dialect.stores_nan and pc.any(pc.is_nan(column)).as_py()
            inf = not dialect.stores_infinity and pc.any(pc.is_inf(column)).as_py()
            if nan or inf:
                raise UnstorableValue(
                    path,
                    f"holds {'NaN' if nan else 'an infinity'}, which a {dialect} float "
                    "column cannot store",
                    column=name,
                )
        elif kind in ("date", "datetime") and column.null_count < len(column):
            years = pc.min_max(pc.year(column)).as_py()
            if years["min"] < YEARS[0] or years["max"] > YEARS[1]:
                raise UnstorableValue(
                    path,
                    f"holds a year outside {YEARS[0]} to {YEARS[1]} "
                    f"({years['min']} to {years['max']}), which dogana's dates cannot hold",
                    column=name,
                )
