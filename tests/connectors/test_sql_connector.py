"""SQL sources keep the connector contract: SQLite, PostgreSQL and MariaDB pass the conformance
suite, a whole read proves a complete read at its snapshot's instant, and nothing else does."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from dogana_provider.connectors import SqlConnector
from dogana_provider.connectors.conformance import conformance
from dogana_provider.hooks.sql import sql_hook

DDL = "CREATE TABLE {t} (order_id INTEGER PRIMARY KEY, note VARCHAR(40), amount DECIMAL(12,2))"


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("postgres", marks=pytest.mark.postgres),
        pytest.param("mariadb", marks=pytest.mark.mariadb),
    ]
)
def source(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict]:
    """A table of five orders in the database, and a connector's configuration for it."""
    uid = uuid.uuid4().hex[:8]
    conn_id, table = f"src_{uid}", f"orders_{uid}"
    if request.param == "sqlite":
        url = json.dumps({"conn_type": "sqlite", "host": str(tmp_path / "shop.sqlite")})
    else:
        url = request.getfixturevalue(f"{request.param}_url")
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", url)
    connection = sql_hook(conn_id, "source").get_conn()
    cursor = connection.cursor()
    cursor.execute(DDL.format(t=table))
    for n in (3, 1, 5, 2, 4):
        cursor.execute(f"INSERT INTO {table} VALUES ({n}, 'order {n}', {n}.25)")
    connection.commit()
    try:
        yield {"conn_id": conn_id, "tables": [table], "key": {table: ["order_id"]}}
    finally:
        cursor.execute(f"DROP TABLE {table}")
        connection.commit()
        connection.close()


def test_a_sql_table_passes_every_check(source: dict) -> None:
    report = conformance(SqlConnector(source))
    assert report.failed == ()
    assert "decimal(12,2)" not in report.check("discover_types_every_column").detail


def test_a_whole_read_is_complete_at_its_snapshot_and_a_resume_proves_nothing(
    source: dict,
) -> None:
    connector = SqlConnector(source)
    [table] = source["tables"]
    whole = connector.read(table)
    rows = pa.Table.from_batches(list(whole), schema=whole.schema)
    assert rows.column("order_id").to_pylist() == [1, 2, 3, 4, 5]
    assert str(rows.schema.field("amount").type) == "decimal128(12, 2)"
    proof = whole.proof()
    assert proof.shape is not None and proof.shape.checkpoint == "none"
    assert proof.clock == "the database's clock when its snapshot opened"
    head = connector.read(table, limit=2)
    list(head)
    resumed = connector.resume(table, head.checkpoint())
    assert sum(batch.num_rows for batch in resumed) == 3
    assert resumed.proof().shape is None and head.proof().shape is None
