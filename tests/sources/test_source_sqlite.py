"""The snapshot source on an SQLite file in WAL mode, through SqliteHook."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from source_conformance import Db, SnapshotSourceConformance

from dogana_provider.sources import SqliteSnapshots, snapshots_for
from dogana_provider.sql import SQLITE

pytestmark = pytest.mark.airflow


def _stored(value: Any) -> Any:
    # Writers spell datetimes their own way; ISO 8601 with an offset is one of them.
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    return value


class TestSqlite(SnapshotSourceConformance):
    @pytest.fixture
    def database(self, tmp_path: Path) -> Path:
        path = tmp_path / "source.sqlite"
        connection = sqlite3.connect(path)
        connection.execute("PRAGMA journal_mode = WAL")
        connection.close()
        return path

    @pytest.fixture
    def db(self, database: Path) -> Db:
        def connect() -> sqlite3.Connection:
            return sqlite3.connect(database, timeout=30)

        return Db(
            connect=connect,
            placeholder="?",
            ddl={
                "key": "INTEGER",
                "int": "INTEGER",
                "date": "DATE",
                "str": "TEXT",
                "text": "TEXT",
                "decimal": "DECIMAL(10,2)",
                "datetime": "DATETIME",
                "bool": "BOOLEAN",
            },
            bind=_stored,
            clock=lambda: datetime.now(UTC),
            quote=SQLITE.quote,
        )

    @pytest.fixture
    def source(self, database: Path, monkeypatch: pytest.MonkeyPatch) -> SqliteSnapshots:
        from airflow.providers.sqlite.hooks.sqlite import SqliteHook

        connection = {"conn_type": "sqlite", "host": str(database)}
        monkeypatch.setenv("AIRFLOW_CONN_DOGANA_SOURCE", json.dumps(connection))
        source = snapshots_for(SqliteHook(sqlite_conn_id="dogana_source"))
        assert isinstance(source, SqliteSnapshots)
        return source
