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

from dogana_provider.dialects import SQLITE
from dogana_provider.sources import SqliteSnapshots, snapshots_for

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


def test_memory_stays_flat_as_the_table_grows(tmp_path: Path) -> None:
    """Rows stream batch by batch into row groups: ten times the rows, not ten times the memory."""
    import tracemalloc

    from source_conformance import orders_contract

    from dogana_core.planner import ExtractionRequest
    from dogana_provider.sources import Read, Relation, extract

    def peak(rows: int) -> int:
        path = tmp_path / f"grow-{rows}.sqlite"
        connection = sqlite3.connect(path)
        connection.execute(
            "CREATE TABLE orders (id INTEGER PRIMARY KEY, day DATE, name TEXT, "
            "updated_at DATETIME, deleted BOOLEAN)"
        )
        connection.executemany(
            "INSERT INTO orders VALUES (?, '2026-01-02', ?, '2026-01-01 10:00:00', 0)",
            ((n, f"order {n}") for n in range(rows)),
        )
        connection.commit()
        connection.close()
        source = SqliteSnapshots(lambda: sqlite3.connect(path), fetch_rows=500)
        request = ExtractionRequest("orders", "full", datetime(2026, 1, 1, tzinfo=UTC))
        read = Read(
            orders_contract("orders"),
            request,
            Relation(table="orders"),
            tmp_path / f"grow-{rows}.parquet",
        )
        tracemalloc.start()
        try:
            [done] = extract(source, [read], row_group_rows=2_000)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            assert done.manifest.rows == rows

    small, large = peak(5_000), peak(50_000)
    assert large < 2 * small, f"peak {large} bytes for 50,000 rows, {small} for 5,000"


def test_a_read_ends_when_its_snapshot_closes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The read's connection is closed with its snapshot, ending the read: in a
    rollback-journal file, whose readers lock writers out, a writer that may not wait is
    refused during the read and commits at once after it."""
    from airflow.providers.sqlite.hooks.sqlite import SqliteHook

    path = tmp_path / "journal.sqlite"
    setup = sqlite3.connect(path)
    setup.execute("CREATE TABLE t (id INTEGER)")
    setup.commit()
    setup.close()
    monkeypatch.setenv(
        "AIRFLOW_CONN_DOGANA_SOURCE", json.dumps({"conn_type": "sqlite", "host": str(path)})
    )
    source = snapshots_for(SqliteHook(sqlite_conn_id="dogana_source"))
    writer = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        with source.snapshot(datetime(2026, 1, 1, tzinfo=UTC)) as snapshot:
            assert snapshot.scalar("SELECT count(*) FROM t", {}) == 0
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                writer.execute("BEGIN EXCLUSIVE")
        writer.execute("BEGIN EXCLUSIVE")
        writer.execute("INSERT INTO t VALUES (1)")
        writer.execute("COMMIT")
    finally:
        writer.close()
