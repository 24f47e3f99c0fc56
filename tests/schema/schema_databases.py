"""The three databases the schema tests run on, each with a source's column types.

A Database connects (a new DB-API connection each call), runs DDL and DML committed at once,
in a namespace of its own (a SQLite file, a PostgreSQL schema, a MariaDB database) dropped
after the test.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from dogana_provider.dialects import MARIADB, POSTGRES, SQLITE, Dialect

Connect = Callable[[], Any]


@dataclass(frozen=True)
class Database:
    """One database: how to connect, its dialect, and the DDL a source declares per type."""

    name: str
    dialect: Dialect
    connect: Connect
    ddl: dict[str, str]
    """A source's column type for each dogana type, and the physical spellings tests widen."""
    airflow: str = ""
    """The AIRFLOW_CONN_* value of a connection to the same database (and schema)."""

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
        json.dumps({"conn_type": "sqlite", "host": str(path)}),
    )


def postgres_database(url: str, schema: str) -> Database:
    """A schema of its own: every table of the test in it, through search_path."""
    import psycopg2

    return Database(
        "postgresql",
        POSTGRES,
        lambda: psycopg2.connect(url, options=f"-csearch_path={schema}"),
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
        json.dumps(
            {
                "conn_type": "postgres",
                "host": "127.0.0.1",
                "port": 5432,
                "login": "postgres",
                "schema": "test",
                "extra": {"options": f"-csearch_path={schema}"},
            }
        ),
    )


def mariadb_database(url: str, database: str) -> Database:
    """A database of its own, for every table of the test."""
    import MySQLdb

    parts = urlsplit(url)
    options = {
        "host": parts.hostname or "127.0.0.1",
        "port": parts.port or 3306,
        "user": parts.username or "root",
        "password": parts.password or "",
        "database": database,
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
        json.dumps(
            {
                "conn_type": "mysql",
                "host": options["host"],
                "port": options["port"],
                "login": options["user"],
                "schema": database,
            }
        ),
    )
