"""Plan -> ExtractOperator -> Gate -> Publish, end to end in dag.test(), SQLite source and receiver.

The receiver decides the file ExtractOperator wrote, from the URI it pushed: the first run reads
the whole table, the second only what changed since, soft deletes arriving as tombstones. Each
publication's lineage edge names the source and the extract's task instance of its run; the
publish task run again on the first run's decision (a retry) is a replay and writes no second.
"""

from __future__ import annotations

import sqlite3
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from delivery_dags import (
    four_operators,
    orders_contract,
    sqlite_connection,
    states,
    write_dag,
    xcom,
)

from dogana_core.gate import Outcome, Receipt
from dogana_core.manifest import Manifest
from dogana_provider.dialects import SQLITE
from dogana_provider.hooks.dogana import DoganaHook

pytestmark = pytest.mark.airflow

TASKS = ("plan", "extract", "gate", "publish")


class SqliteSource:
    def __init__(self, path: Path, table: str) -> None:
        self.path, self.table = path, SQLITE.quote(table)
        with self.connect() as connection:
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute(
                f"CREATE TABLE {self.table} (id INTEGER PRIMARY KEY, name TEXT, "
                "updated_at TEXT, is_deleted INTEGER)"
            )

    def connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path)

    def put(self, key: int, name: str, *, deleted: bool = False) -> None:
        # The writer stamps the row with its clock, as an application's updated_at does.
        stamp = datetime.now(UTC).isoformat()
        with self.connect() as connection:
            connection.execute(
                f"INSERT INTO {self.table} VALUES (?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
                "name = excluded.name, updated_at = excluded.updated_at, "
                "is_deleted = excluded.is_deleted",
                (key, name, stamp, int(deleted)),
            )


def published(hook: DoganaHook, table: str) -> dict[int, str]:
    with hook.receiver.read(table) as snapshot:
        id_at, name_at = snapshot.columns.index("id"), snapshot.columns.index("name")
        return {row[id_at]: row[name_at] for row in snapshot.rows}


def test_extract_feeds_the_gate_and_publish_a_full_read_then_changes(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uid = uuid.uuid4().hex[:8]
    table, source_id, receiver_id = f"orders_{uid}", f"source_{uid}", f"receiver_{uid}"
    source = SqliteSource(tmp_path / "source.sqlite", table)
    monkeypatch.setenv(f"AIRFLOW_CONN_{source_id.upper()}", sqlite_connection(source.path))
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{receiver_id.upper()}", sqlite_connection(tmp_path / "receiver.sqlite")
    )
    contract_path = tmp_path / "orders.contract.json"
    contract_path.write_text(orders_contract(table).to_json(), encoding="utf-8")
    output = (tmp_path / "deliveries" / "{{ run_id | replace(':', '_') }}").as_uri()
    extract = f'source_conn_id={source_id!r}, deleted_flag="is_deleted", output_folder={output!r}'
    body = four_operators(receiver_id, table, contract_path, extract)
    module = write_dag(airflow_home, f"extract_flow_{uid}", body)
    hook = DoganaHook(receiver_id)

    source.put(1, "one")
    source.put(2, "two")
    source.put(3, "three", deleted=True)
    first = module.dag.test()
    assert states(first) == {task: "success" for task in TASKS}
    manifest = Manifest.from_dict(xcom(first, "extract")["manifest"])
    assert (manifest.shape, manifest.rows, manifest.tombstones) == ("full", 2, 0)
    assert published(hook, table) == {1: "one", 2: "two"}
    receipt = Receipt.from_dict(xcom(first, "publish"))
    claims = hook.receiver.ledger(table).claims(manifest.produced_at, limit=timedelta.max)
    assert claims.exact_as_of == manifest.produced_at == receipt.manifest.produced_at

    source.put(1, "one, changed")
    source.put(2, "two", deleted=True)
    source.put(4, "four")
    second = module.dag.test()
    assert states(second) == {task: "success" for task in TASKS}
    changes = Manifest.from_dict(xcom(second, "extract")["manifest"])
    assert (changes.shape, changes.rows, changes.tombstones) == ("changes", 2, 1)
    assert changes.since == manifest.produced_at
    assert published(hook, table) == {1: "one, changed", 4: "four"}
    claims = hook.receiver.ledger(table).claims(changes.produced_at, limit=timedelta.max)
    assert claims.exact_as_of == changes.produced_at

    # What fed the table: one edge per run's publication, naming its extract's task instance.
    edges = hook.receiver.lineage(output=table)
    assert [(e.origin.run_id, e.manifest_identity) for e in edges] == [
        (second.run_id, changes.identity),
        (first.run_id, manifest.identity),
    ]
    assert {(e.origin.source_conn_id, e.origin.source, e.origin.task_id) for e in edges} == {
        (source_id, table, "extract")
    }
    assert {e.origin.dag_id for e in edges} == {module.dag.dag_id}

    # The first run's publish again, on the decision its gate handed over: a replay, no edge.
    retry = write_dag(
        airflow_home,
        f"extract_flow_retry_{uid}",
        f"""
        from dogana_provider.operators.publish import PublishOperator

        with dag:
            PublishOperator(
                task_id="publish",
                receiver_conn_id={receiver_id!r},
                table={table!r},
                decision={xcom(first, "gate")!r},
            )
        """,
    )
    retried = retry.dag.test()
    assert states(retried) == {"publish": "success"}
    assert Receipt.from_dict(xcom(retried, "publish")).outcome is Outcome.REPLAYED
    assert hook.receiver.lineage(output=table) == edges
