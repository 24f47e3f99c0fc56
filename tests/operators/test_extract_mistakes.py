"""A DAG author's mistakes in ExtractOperator's arguments, named with their fix before a row is
read: a source table that does not exist, and a declared column the source lacks. On a SQLite
file and a PostgreSQL schema, through the operator's own connection lookup (AIRFLOW_CONN_)."""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from dogana_core import Contract, Shape
from dogana_core.planner import ExtractionRequest
from dogana_provider.operators.extract import ExtractOperator
from dogana_provider.sources.selection import UnsupportedRead
from dogana_provider.sources.snapshot import UnreadableSource

pytestmark = pytest.mark.airflow

T0 = datetime(2026, 1, 1, tzinfo=UTC)
COLUMNS = "id INTEGER PRIMARY KEY, name TEXT, updated_at TIMESTAMP, deleted BOOLEAN"


def contract_for(table: str, key: str = "id") -> Contract:
    return Contract(
        table,
        (key,),
        {"full": Shape.complete()},
        cursor_column="updated_at",
        types={key: "int", "updated_at": "datetime"},
    )


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def source(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, str]]:
    """(connection id, table): a source holding one table of a row, behind an Airflow
    connection of this process."""
    uid = uuid.uuid4().hex[:8]
    conn_id, table = f"source_{uid}", f"orders_{uid}"
    if request.param == "sqlite":
        path = tmp_path / "source.sqlite"
        with sqlite3.connect(path) as connection:
            connection.execute(f"CREATE TABLE {table} ({COLUMNS})")
            connection.execute(f"INSERT INTO {table} VALUES (1, 'one', '2025-12-31 00:00:00', 0)")
        connection.close()
        uri = json.dumps({"conn_type": "sqlite", "host": str(path)})
        monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", uri)
        yield conn_id, table
        return
    url = request.getfixturevalue("postgres_url")
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f"CREATE TABLE {table} ({COLUMNS.replace('TIMESTAMP', 'TIMESTAMPTZ')})")
        connection.execute(f"INSERT INTO {table} VALUES (1, 'one', '2025-12-31T00:00:00Z', false)")
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", url)
    try:
        yield conn_id, table
    finally:
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute(f"DROP TABLE {table}")


def extract_task(conn_id: str, contract: Contract, out: Path, **options: str) -> ExtractOperator:
    return ExtractOperator(
        task_id="extract",
        source_conn_id=conn_id,
        contract=contract.to_dict(),
        request=ExtractionRequest(contract.table, "full", T0).to_dict(),
        output_folder=out.as_uri(),
        **options,
    )


def test_a_source_table_that_does_not_exist_is_named_with_its_option_and_connection(
    source: tuple[str, str], tmp_path: Path
) -> None:
    conn_id, table = source
    task = extract_task(conn_id, contract_for(table), tmp_path / "out", source_table="custommers")
    with pytest.raises(UnreadableSource) as raised:
        task.execute({})
    message = str(raised.value)
    assert message.startswith(f"source connection {conn_id!r}: {table}: source_table='custommers'")
    assert "cannot be read from the source" in message and "custommers" in message.split(": ")[-1]
    assert "dogana_described" not in message and "SELECT" not in message
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_a_key_column_the_source_lacks_is_refused_before_a_row_is_read_naming_its_columns(
    source: tuple[str, str], tmp_path: Path
) -> None:
    conn_id, table = source
    task = extract_task(conn_id, contract_for(table, key="order_id"), tmp_path / "out")
    with pytest.raises(UnsupportedRead) as raised:
        task.execute({})
    assert str(raised.value) == (
        f"source connection {conn_id!r}: {table}: source_table={table!r} has no key column "
        "'order_id'; its columns are deleted, id, name, updated_at"
    )
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
