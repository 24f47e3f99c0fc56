"""The source table of a log delivery and its slot, made and dropped for each test.

Every slot a test makes is dropped after it: a leaked slot holds the server's WAL forever.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from cdc_pipeline import (
    DDL,
    MARIADB_DDL,
    MariaTable,
    PgTable,
    drop_slot,
    mariadb_connection,
    postgres_connection,
    sweep_stale_slots,
)


@pytest.fixture(scope="session", autouse=True)
def no_stale_slots(postgres_url: str) -> None:
    """The slots killed test runs left, dropped before this session makes its own."""
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as db:
        sweep_stale_slots(db)


@pytest.fixture
def source(postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[PgTable]:
    import psycopg

    uid = uuid.uuid4().hex[:8]
    table, conn_id, slot = f"cdc_{uid}", f"source_{uid}", f"dogana_cdc_{os.getpid()}_{uid}"
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", postgres_connection("test"))
    db = psycopg.connect(postgres_url, autocommit=True)
    db.execute("SET TIME ZONE 'UTC'")
    db.execute(f'CREATE TABLE "{table}" ({DDL})')
    try:
        yield PgTable(db, table, conn_id, slot)
    finally:
        drop_slot(db, slot)
        db.execute(f'DROP PUBLICATION IF EXISTS "{slot}"')
        db.execute(f'DROP TABLE IF EXISTS "{table}"')
        db.close()


@pytest.fixture
def binlog_source(mariadb_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[MariaTable]:
    """A MariaDB table whose changes the binlog carries, dropped after the test."""
    import MySQLdb

    uid = uuid.uuid4().hex[:8]
    table, conn_id = f"cdc_{uid}", f"source_{uid}"
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", mariadb_connection("test"))
    db = MySQLdb.connect(host="127.0.0.1", port=3306, user="root", db="test", autocommit=True)
    db.cursor().execute("SET time_zone = '+00:00'")
    db.cursor().execute(f"CREATE TABLE `{table}` ({MARIADB_DDL})")
    try:
        yield MariaTable(db, table, conn_id)
    finally:
        db.cursor().execute(f"DROP TABLE IF EXISTS `{table}`")
        db.close()


@pytest.fixture(
    params=[
        pytest.param("source", marks=pytest.mark.postgres, id="postgres"),
        pytest.param("binlog_source", marks=pytest.mark.mariadb, id="mariadb"),
    ]
)
def log_source(request: pytest.FixtureRequest) -> PgTable | MariaTable:
    """The source table of each log connector in turn: a rule both logs hold is one test."""
    source: PgTable | MariaTable = request.getfixturevalue(request.param)
    return source
