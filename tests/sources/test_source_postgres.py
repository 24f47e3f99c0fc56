"""The snapshot source on PostgreSQL at 127.0.0.1:5432, through PostgresHook (psycopg)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from source_conformance import Db, SnapshotSourceConformance, as_utc

from dogana_provider.dialects import POSTGRES
from dogana_provider.sources import PostgresSnapshots, snapshots_for
from dogana_provider.sources.postgres import PgSnapshot

pytestmark = [pytest.mark.postgres, pytest.mark.airflow]


def connector(url: str) -> Callable[[], Any]:
    return lambda: psycopg.connect(url)


class TestPostgres(SnapshotSourceConformance):
    @pytest.fixture
    def db(self, postgres_url: str) -> Db:
        connect = connector(postgres_url)

        def clock() -> datetime:
            with connect() as connection:
                [(now,)] = connection.execute("SELECT clock_timestamp()").fetchall()
            return as_utc(now)

        return Db(
            connect=connect,
            placeholder="%s",
            ddl={
                "key": "BIGINT",
                "int": "BIGINT",
                "date": "DATE",
                "str": "TEXT",
                "text": "TEXT",
                "decimal": "NUMERIC(10,2)",
                "datetime": "TIMESTAMPTZ",
                "bool": "BOOLEAN",
            },
            bind=lambda value: value,
            clock=clock,
            quote=POSTGRES.quote,
        )

    def test_the_read_is_repeatable_read_and_read_only(self, source: PostgresSnapshots) -> None:
        with source.snapshot(datetime(2026, 1, 1, tzinfo=UTC)) as snapshot:
            assert snapshot.scalar("SHOW transaction_isolation", {}) == "repeatable read"
            assert snapshot.scalar("SHOW transaction_read_only", {}) == "on"
            assert snapshot.scalar("SHOW TimeZone", {}) == "UTC"

    @pytest.fixture
    def source(self, postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> PostgresSnapshots:
        from airflow.providers.postgres.hooks.postgres import PostgresHook

        monkeypatch.setenv("AIRFLOW_CONN_DOGANA_SOURCE", postgres_url)
        source = snapshots_for(PostgresHook(postgres_conn_id="dogana_source"))
        assert isinstance(source, PostgresSnapshots)
        return source


def test_a_transaction_finished_between_two_snapshots_is_found() -> None:
    before = PgSnapshot.parse("100:105:100,102")
    assert PgSnapshot.parse("100:105:100,102").finished_since(before) == set()
    assert PgSnapshot.parse("100:105:100").finished_since(before) == {102}
    assert PgSnapshot.parse("100:107:100,102,105").finished_since(before) == {106}
    assert PgSnapshot.parse("103:106:").finished_since(before) == {100, 102, 105}
