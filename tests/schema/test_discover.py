"""Discovering a SQL source's columns from its catalog, without reading a row."""

from __future__ import annotations

import pytest
from schema_databases import Database

from dogana_provider.sources.discover import (
    SourceColumn,
    UndiscoverableSource,
    discover_columns,
)
from dogana_provider.sources.selection import Relation

EVERY_TYPE = [
    ("id", "int", "NOT NULL PRIMARY KEY"),
    ("big", "bigint", ""),
    ("ratio", "float", ""),
    ("note", "str", ""),
    ("code", "varchar", "NOT NULL"),
    ("paid", "bool", ""),
    ("day", "date", ""),
    ("seen_at", "datetime", "NOT NULL"),
    ("amount", "decimal", ""),
]
EXPECTED = [
    SourceColumn("id", "int", False),
    SourceColumn("big", "int", True),
    SourceColumn("ratio", "float", True),
    SourceColumn("note", "str", True),
    SourceColumn("code", "str", False),
    SourceColumn("paid", "bool", True),
    SourceColumn("day", "date", True),
    SourceColumn("seen_at", "datetime", False),
    SourceColumn("amount", "decimal(10,2)", True),
]


def create(database: Database, table: str) -> None:
    columns = ", ".join(f"{name} {database.ddl[kind]} {extra}" for name, kind, extra in EVERY_TYPE)
    database.run(f"CREATE TABLE {table} ({columns})")


def test_every_supported_type_is_discovered_with_its_nullability(
    database: Database, uid: str
) -> None:
    create(database, f"every_{uid}")
    connection = database.connect()
    try:
        found = discover_columns(connection, database.dialect, f"every_{uid}")
    finally:
        connection.close()
    # SQLite's BOOLEAN is read as bool; MariaDB's is TINYINT(1), read as int unless typed bool.
    expected = [
        SourceColumn("paid", "int", True) if c.name == "paid" and database.name == "mariadb" else c
        for c in EXPECTED
    ]
    assert found == expected
    assert all(column.native for column in found)
    assert all(column.deliverable for column in found)


def test_discovery_reads_no_row(database: Database, uid: str) -> None:
    """A row whose value no type fits would fail a read; discovery never meets it."""
    table = f"unread_{uid}"
    database.run(
        f"CREATE TABLE {table} (id {database.ddl['int']}, amount {database.ddl['decimal']})"
    )
    if database.name == "sqlite":  # SQLite stores what it is given: text in a decimal column
        database.run(f"INSERT INTO {table} VALUES (1, 'not a number')")
    connection = database.connect()
    try:
        found = discover_columns(connection, database.dialect, table)
    finally:
        connection.close()
    assert [c.type for c in found] == ["int", "decimal(10,2)"]


def test_a_relations_columns_are_discovered_in_the_order_it_names_them(
    database: Database, uid: str
) -> None:
    create(database, f"picked_{uid}")
    connection = database.connect()
    try:
        relation = Relation(table=f"picked_{uid}", columns=("amount", "id"))
        found = discover_columns(connection, database.dialect, relation)
        assert [c.name for c in found] == ["amount", "id"]
        with pytest.raises(UndiscoverableSource, match="no column 'gone'"):
            discover_columns(
                connection, database.dialect, Relation(table=f"picked_{uid}", columns=("gone",))
            )
    finally:
        connection.close()


def test_a_missing_table_is_named(database: Database, uid: str) -> None:
    connection = database.connect()
    try:
        with pytest.raises(UndiscoverableSource, match=f"no table or view 'absent_{uid}'"):
            discover_columns(connection, database.dialect, f"absent_{uid}")
    finally:
        connection.close()


def test_a_type_dogana_has_none_for_keeps_its_catalogs_name(database: Database, uid: str) -> None:
    blob = {"sqlite": "BLOB", "postgresql": "BYTEA", "mariadb": "BLOB"}[database.name]
    database.run(f"CREATE TABLE odd_{uid} (id {database.ddl['int']}, payload {blob})")
    connection = database.connect()
    try:
        [_, payload] = discover_columns(connection, database.dialect, f"odd_{uid}")
    finally:
        connection.close()
    assert payload.type == blob.lower()
    assert not payload.deliverable


def test_a_query_is_discovered_where_the_driver_describes_types(
    database: Database, uid: str
) -> None:
    create(database, f"queried_{uid}")
    relation = Relation(sql=f"SELECT id, amount FROM queried_{uid}")
    connection = database.connect()
    try:
        if not database.dialect.describes_columns:
            with pytest.raises(UndiscoverableSource, match="describes no column types"):
                discover_columns(connection, database.dialect, relation)
            return
        found = discover_columns(connection, database.dialect, relation)
    finally:
        connection.close()
    assert found == [SourceColumn("id", "int", True), SourceColumn("amount", "decimal(10,2)", True)]
