"""The columns a SQL source delivers, found in its catalog without reading a row.

    columns = discover_columns(connection, dialect, Relation(table="sales.orders"))
    [SourceColumn(name="id", type="int", nullable=False), ...]

Each column's name, its dogana type and whether it may hold null, in the relation's order: a
table or view from its database's catalog (PostgreSQL and MariaDB information_schema.columns,
SQLite's PRAGMA table_info, through Dialect.catalog_columns), the columns a Relation names in
the order it names them. The type is the logical type a read writes the column as (int, float,
str, bool, date, datetime, decimal(p,s): sources/columns.py), so int and bigint, varchar(20)
and text are one type here as they are in a delivered file; a column dogana has no type for
(bytea, json, a blob) keeps its catalog's name, which no logical type spells, and reading it
fails naming it as before. The catalog's own spelling is kept as native.

A DAG author's query (Relation(sql=...)) has no catalog entry: its columns are those the
driver describes for the query run with no row (WHERE 1 = 0, every bound value null), typed as
the read types them, and nullable, since a query's result declares no nullability. A database
whose driver describes no types (SQLite) cannot discover a query: UndiscoverableSource.

This is what the schema policy compares with the version the receiver holds before a row is
read (dogana_provider/schema/), and what a connector's discover answers for a SQL source.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dogana_provider.dialects import Dialect
from dogana_provider.sources.columns import UnsupportedColumn, arrow_type
from dogana_provider.sources.selection import Relation

BOUNDS = ("since", "until", "produced_at", "window_low", "window_high", "generation")
"""The bound values an author's query may name (selection.py); null when it is described."""


class UndiscoverableSource(ValueError):
    """A relation whose columns cannot be found without reading rows; the message says why."""


@dataclass(frozen=True)
class SourceColumn:
    """One column a source delivers: its name, dogana type, and whether it may be null.

    native, the catalog's spelling (integer, varchar(20)), is for people and is not compared:
    two columns of one dogana type are one column's shape whatever their database calls it.
    """

    name: str
    type: str
    nullable: bool
    native: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("SourceColumn: a column has a name")
        if not self.type:
            raise ValueError(f"SourceColumn {self.name!r}: a column has a type")

    @property
    def deliverable(self) -> bool:
        """Whether the type is one dogana writes (a logical type), not a catalog's name."""
        try:
            arrow_type(self.type)
        except UnsupportedColumn:
            return False
        return True


def discover_columns(
    connection: Any, dialect: Dialect, relation: Relation | str
) -> list[SourceColumn]:
    """The columns a relation (a Relation, or a table's name, schema-qualified with a dot)
    delivers, on a DB-API connection to its database, without reading a row."""
    if isinstance(relation, str):
        relation = Relation(table=relation)
    if relation.table is None:
        return _described(connection, dialect, relation)
    schema, _, name = relation.table.rpartition(".")
    for part in (schema, name) if schema else (name,):
        dialect.quote(part)  # a name that is no identifier is refused before any SQL
    catalog = dialect.catalog_columns(connection, schema or None, name)
    if not catalog:
        raise UndiscoverableSource(
            f"{dialect} has no table or view {relation.table!r} this connection can see"
        )
    found = {column.name: column for column in catalog}
    wanted = list(relation.columns) if relation.columns else list(found)
    missing = [name for name in wanted if name not in found]
    if missing:
        raise UndiscoverableSource(
            f"{relation.table!r} has no column {', '.join(map(repr, missing))} "
            f"(its columns: {', '.join(found)})"
        )
    return [
        SourceColumn(
            name,
            found[name].logical or found[name].native,
            found[name].nullable,
            found[name].native,
        )
        for name in wanted
    ]


def _described(connection: Any, dialect: Dialect, relation: Relation) -> list[SourceColumn]:
    if not dialect.describes_columns:
        raise UndiscoverableSource(
            f"{dialect} describes no column types for a query: only a table's or a view's "
            "columns can be discovered there without reading rows"
        )
    query = relation.render(dialect)
    cursor = connection.cursor()
    try:
        cursor.execute(f"SELECT * FROM {query} WHERE 1 = 0", dict.fromkeys(BOUNDS))
        description = list(cursor.description)
    finally:
        cursor.close()
    columns = []
    for column in description:
        name = str(column[0])
        logical = dialect.described_type(column)
        native = str(column[1])
        columns.append(SourceColumn(name, logical or f"unknown({native})", True, native))
    return columns
