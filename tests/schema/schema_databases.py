"""The three databases the schema tests run on, each with a source's column types.

A Database connects (a new DB-API connection each call), runs DDL and DML committed at once,
and names tables with a test's own uid, dropped after it (drop_tables).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from dogana_provider.dialects import MARIADB, POSTGRES, SQLITE, Dialect

Connect = Callable[[], Any]
TABLES = "SELECT table_name FROM information_schema.tables"


@dataclass(frozen=True)
class Database:
    """One database: how to connect, its dialect, and the DDL a source declares per type."""

    name: str
    dialect: Dialect
    connect: Connect
    ddl: dict[str, str]
    """A source's column type for each dogana type, and the physical spellings tests widen."""

    def run(self, *statements: str | tuple[str, Sequence[Any]]) -> None:
        connection = self.connect()
        try:
            cursor = connection.cursor()
            for statement in statements:
                sql, params = (statement, ()) if isinstance(statement, str) else statement
                cursor.execute(sql, tuple(params))
            cursor.close()
            connection.commit()
        finally:
            connection.close()

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        connection = self.connect()
        try:
            cursor = connection.cursor()
            cursor.execute(sql)
            return [tuple(row) for row in cursor.fetchall()]
        finally:
            connection.close()

    def tables(self, needle: str) -> list[str]:
        if self.dialect is SQLITE:
            sql = "SELECT name FROM sqlite_master WHERE type = 'table'"
        elif self.dialect is POSTGRES:
            sql = f"{TABLES} WHERE table_schema = current_schema()"
        else:
            sql = f"{TABLES} WHERE table_schema = DATABASE()"
        return [str(name) for (name,) in self.rows(sql) if needle in str(name)]

    def drop_tables(self, needle: str) -> None:
        for name in self.tables(needle):
            self.run(f"DROP TABLE IF EXISTS {self.dialect.quote(name)}")


def sqlite_database(path: Path) -> Database:
    def connect() -> Any:
        return sqlite3.connect(path)

    return Database(
        "sqlite",
        SQLITE,
        connect,
        {
            "int": "INTEGER",
            "bigint": "BIGINT",
            "float": "REAL",
            "str": "TEXT",
            "varchar": "VARCHAR(20)",
            "bool": "BOOLEAN",
            "date": "DATE",
            "datetime": "DATETIME",
            "decimal": "DECIMAL(10,2)",
            "wider decimal": "DECIMAL(14,2)",
            "narrower decimal": "DECIMAL(6,2)",
        },
    )


def postgres_database(url: str) -> Database:
    import psycopg2

    return Database(
        "postgresql",
        POSTGRES,
        lambda: psycopg2.connect(url),
        {
            "int": "INTEGER",
            "bigint": "BIGINT",
            "float": "DOUBLE PRECISION",
            "str": "TEXT",
            "varchar": "VARCHAR(20)",
            "bool": "BOOLEAN",
            "date": "DATE",
            "datetime": "TIMESTAMPTZ",
            "decimal": "NUMERIC(10,2)",
            "wider decimal": "NUMERIC(14,2)",
            "narrower decimal": "NUMERIC(6,2)",
        },
    )


def mariadb_database(url: str) -> Database:
    import MySQLdb

    parts = urlsplit(url)
    options = {
        "host": parts.hostname or "127.0.0.1",
        "port": parts.port or 3306,
        "user": parts.username or "root",
        "password": parts.password or "",
        "database": parts.path.lstrip("/"),
        "charset": "utf8mb4",
    }

    def connect() -> Any:
        connection = MySQLdb.connect(**options)
        connection.cursor().execute("SET time_zone = '+00:00'")
        return connection

    return Database(
        "mariadb",
        MARIADB,
        connect,
        {
            "int": "INT",
            "bigint": "BIGINT",
            "float": "DOUBLE",
            "str": "TEXT",
            "varchar": "VARCHAR(20)",
            "bool": "BOOLEAN",
            "date": "DATE",
            "datetime": "DATETIME(6)",
            "decimal": "DECIMAL(10,2)",
            "wider decimal": "DECIMAL(14,2)",
            "narrower decimal": "DECIMAL(6,2)",
        },
    )
