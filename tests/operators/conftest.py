"""A receiver behind an Airflow connection id: a SQLite file, a PostgreSQL schema or a MariaDB
database of its own."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from delivery_dags import ReceiverConnection, sqlite_connection


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("postgres", marks=pytest.mark.postgres),
        pytest.param("mariadb", marks=pytest.mark.mariadb),
    ]
)
def receiver_connection(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ReceiverConnection]:
    """AIRFLOW_CONN_<ID> for a fresh receiver: a SQLite file; on PostgreSQL a schema made for
    the test (search_path through the connection's options); on MariaDB a database made for
    the test. Either is dropped after it."""
    conn_id = f"receiver_{uuid.uuid4().hex[:8]}"
    variable = f"AIRFLOW_CONN_{conn_id.upper()}"
    if request.param == "sqlite":
        monkeypatch.setenv(variable, sqlite_connection(tmp_path / "receiver.db"))
        yield ReceiverConnection(conn_id, "sqlite")
        return
    if request.param == "mariadb":
        yield from _mariadb(request, conn_id, variable, monkeypatch)
        return
    import psycopg2

    url = request.getfixturevalue("postgres_url")
    schema = f"s_{conn_id}"
    with psycopg2.connect(url) as connection, connection.cursor() as cursor:
        cursor.execute(f'CREATE SCHEMA "{schema}"')
    connection.close()
    monkeypatch.setenv(
        variable,
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
    try:
        yield ReceiverConnection(conn_id, "postgres")
    finally:
        with psycopg2.connect(url) as connection, connection.cursor() as cursor:
            cursor.execute(f'DROP SCHEMA "{schema}" CASCADE')
        connection.close()


def _mariadb(
    request: pytest.FixtureRequest, conn_id: str, variable: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ReceiverConnection]:
    import MySQLdb

    request.getfixturevalue("mariadb_url")  # root, no password, at 127.0.0.1:3306
    database = f"d_{conn_id}"
    server = {"host": "127.0.0.1", "port": 3306, "user": "root"}
    connection = MySQLdb.connect(**server)
    try:
        connection.cursor().execute(f"CREATE DATABASE `{database}`")
    finally:
        connection.close()
    monkeypatch.setenv(
        variable,
        json.dumps(
            {
                "conn_type": "mysql",
                "host": "127.0.0.1",
                "port": 3306,
                "login": "root",
                "schema": database,
            }
        ),
    )
    try:
        yield ReceiverConnection(conn_id, "mariadb")
    finally:
        connection = MySQLdb.connect(**server)
        try:
            connection.cursor().execute(f"DROP DATABASE `{database}`")
        finally:
            connection.close()
