"""A receiver behind an Airflow connection id: a SQLite file, or a PostgreSQL schema of its own."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from delivery_dags import ReceiverConnection, sqlite_connection


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def receiver_connection(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ReceiverConnection]:
    """AIRFLOW_CONN_<ID> for a fresh receiver: a SQLite file, or on PostgreSQL a schema made for
    the test (search_path through the connection's options) and dropped after it."""
    conn_id = f"receiver_{uuid.uuid4().hex[:8]}"
    variable = f"AIRFLOW_CONN_{conn_id.upper()}"
    if request.param == "sqlite":
        monkeypatch.setenv(variable, sqlite_connection(tmp_path / "receiver.db"))
        yield ReceiverConnection(conn_id, "sqlite")
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
