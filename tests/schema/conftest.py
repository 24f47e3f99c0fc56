"""The schema tests' database fixture: SQLite, PostgreSQL and MariaDB, one test each, each in
a namespace of its own (a file, a schema, a database) that source and receiver share."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from schema_databases import Database, mariadb_database, postgres_database, sqlite_database


@pytest.fixture
def uid() -> str:
    return f"s{uuid.uuid4().hex[:10]}"


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("postgresql", marks=pytest.mark.postgres),
        pytest.param("mariadb", marks=pytest.mark.mariadb),
    ]
)
def database(request: pytest.FixtureRequest, tmp_path: Path, uid: str) -> Iterator[Database]:
    if request.param == "sqlite":
        yield sqlite_database(tmp_path / "source.db")
        return
    if request.param == "postgresql":
        import psycopg2

        url = request.getfixturevalue("postgres_url")
        with psycopg2.connect(url) as connection, connection.cursor() as cursor:
            cursor.execute(f'CREATE SCHEMA "{uid}"')
        connection.close()
        try:
            yield postgres_database(url, uid)
        finally:
            with psycopg2.connect(url) as connection, connection.cursor() as cursor:
                cursor.execute(f'DROP SCHEMA "{uid}" CASCADE')
            connection.close()
        return
    import MySQLdb

    request.getfixturevalue("mariadb_url")
    server = {"host": "127.0.0.1", "port": 3306, "user": "root"}
    connection = MySQLdb.connect(**server)
    try:
        connection.cursor().execute(f"CREATE DATABASE `{uid}`")
    finally:
        connection.close()
    try:
        yield mariadb_database(request.getfixturevalue("mariadb_url"), uid)
    finally:
        connection = MySQLdb.connect(**server)
        try:
            connection.cursor().execute(f"DROP DATABASE `{uid}`")
        finally:
            connection.close()
