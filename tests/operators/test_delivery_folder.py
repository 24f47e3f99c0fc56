"""The [dogana] delivery folder: where ExtractOperator writes, what publish removes, what each
extract sweeps, and what a gate says when a local file is not on its machine."""

from __future__ import annotations

import os
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from delivery_dags import orders_contract, sqlite_connection, states, write_dag, xcom
from test_extract_pipeline import SqliteSource

from dogana_core.manifest import Manifest

pytestmark = pytest.mark.airflow

TASKS = ("plan", "extract", "gate", "publish")


def delivery_dag(airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """plan >> extract >> gate >> publish of one SQLite table, every file in the configured
    delivery folder tmp_path / "deliveries"; returns the DAG's module."""
    uid = uuid.uuid4().hex[:8]
    table, source_id, receiver_id = f"orders_{uid}", f"source_{uid}", f"receiver_{uid}"
    source = SqliteSource(tmp_path / "source.sqlite", table)
    source.put(1, "one")
    monkeypatch.setenv(f"AIRFLOW_CONN_{source_id.upper()}", sqlite_connection(source.path))
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{receiver_id.upper()}", sqlite_connection(tmp_path / "receiver.sqlite")
    )
    monkeypatch.setenv("AIRFLOW__DOGANA__DELIVERY_FOLDER", (tmp_path / "deliveries").as_uri())
    contract = tmp_path / "orders.contract.json"
    contract.write_text(orders_contract(table).to_json(), encoding="utf-8")
    return write_dag(
        airflow_home,
        f"delivery_folder_{uid}",
        f"""
        from dogana_provider.operators.extract import ExtractOperator
        from dogana_provider.operators.gate import GateOperator
        from dogana_provider.operators.plan import PlanDeliveryOperator
        from dogana_provider.operators.publish import PublishOperator

        with dag:
            (
                PlanDeliveryOperator(task_id="plan", contract={str(contract)!r},
                                     receiver_conn_id={receiver_id!r})
                >> ExtractOperator(task_id="extract", source_conn_id={source_id!r},
                                   contract={str(contract)!r}, deleted_flag="is_deleted")
                >> GateOperator(task_id="gate", receiver_conn_id={receiver_id!r})
                >> PublishOperator(task_id="publish", receiver_conn_id={receiver_id!r},
                                   table={table!r})
            )
        """,
    )


def files(folder: Path) -> list[Path]:
    return sorted(path for path in folder.rglob("*") if path.is_file())


@pytest.mark.parametrize("keep", [False, True], ids=["removed", "keep_published"])
def test_a_published_delivery_leaves_the_folder_unless_keep_published(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keep: bool
) -> None:
    monkeypatch.setenv("AIRFLOW__DOGANA__KEEP_PUBLISHED", str(keep))
    module = delivery_dag(airflow_home, tmp_path, monkeypatch)
    run = module.dag.test()
    assert states(run) == dict.fromkeys(TASKS, "success")
    pushed = xcom(run, "extract")
    table = Manifest.from_dict(pushed["manifest"]).table
    run_folder = tmp_path / "deliveries" / module.dag.dag_id / pushed["uri"].split("/")[-2]
    assert pushed["uri"] == (run_folder / f"{table}.parquet").as_uri()
    if keep:
        assert files(tmp_path / "deliveries") == [run_folder / f"{table}.parquet"]
    else:
        assert files(tmp_path / "deliveries") == []


def test_an_extract_sweeps_its_dags_files_older_than_the_retention(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW__DOGANA__DELIVERY_RETENTION", "3600")
    module = delivery_dag(airflow_home, tmp_path, monkeypatch)
    dag_folder = tmp_path / "deliveries" / module.dag.dag_id
    # A failed run's file from two hours ago, and a run still in flight (a minute old).
    old, young = dag_folder / "failed_run" / "orders.parquet", dag_folder / "in_flight" / "a.pq"
    for path, age in ((old, 7200), (young, 60)):
        path.parent.mkdir(parents=True)
        path.write_bytes(b"PAR1")
        os.utime(path, (time.time() - age, time.time() - age))
    other_dag = tmp_path / "deliveries" / "another_dag" / "failed_run" / "orders.parquet"
    other_dag.parent.mkdir(parents=True)
    other_dag.write_bytes(b"PAR1")
    os.utime(other_dag, (time.time() - 7200, time.time() - 7200))
    # Run folders a publication emptied: an old one goes, a young one may be about to be used.
    old_empty, young_empty = dag_folder / "published_run", dag_folder / "starting_run"
    for folder, age in ((old_empty, 7200), (young_empty, 5)):
        folder.mkdir()
        os.utime(folder, (time.time() - age, time.time() - age))

    run = module.dag.test()
    assert states(run) == dict.fromkeys(TASKS, "success")
    assert not old.parent.exists(), "older than the retention: removed with its run folder"
    assert files(tmp_path / "deliveries") == [other_dag, young]
    assert not old_empty.exists() and young_empty.is_dir()


def test_a_local_delivery_missing_under_a_distributed_executor_names_the_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dogana_provider.operators.gate import GateOperator

    monkeypatch.setenv("AIRFLOW__CORE__EXECUTOR", "CeleryExecutor")
    monkeypatch.setenv("AIRFLOW_CONN_GATE_RECEIVER", sqlite_connection(tmp_path / "r.sqlite"))
    contract = orders_contract("orders")
    missing = (tmp_path / "elsewhere" / "orders.parquet").as_uri()
    manifest = contract.manifest("full", datetime(2026, 11, 30, tzinfo=UTC), rows=1)
    gate = GateOperator(
        task_id="gate",
        receiver_conn_id="gate_receiver",
        contract=contract,
        delivery={"manifest": manifest.to_dict(), "uri": missing},
    )
    task = {"dag": SimpleNamespace(dag_id="orders_daily"), "run_id": "manual__1"}  # a task's
    with pytest.raises(Exception, match="not on this worker") as raised:
        gate.execute(task)
    assert type(raised.value).__name__ == "MissingDelivery"
    message = str(raised.value)
    assert "under CeleryExecutor" in message
    assert "[dogana] delivery_folder (environment variable AIRFLOW__DOGANA__DELIVERY_FOLDER)" in (
        message
    )


def test_a_spent_deliverys_removal_is_logged_as_what_spent_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A superseded delivery's file is removed too, and its log line must not read as a
    publication that did not happen."""
    import logging

    from dogana_provider.delivery import folders

    monkeypatch.setenv("AIRFLOW__DOGANA__DELIVERY_FOLDER", (tmp_path / "deliveries").as_uri())
    spent = tmp_path / "deliveries" / "dag" / "run" / "orders.parquet"
    spent.parent.mkdir(parents=True)
    spent.write_bytes(b"PAR1")
    with caplog.at_level(logging.INFO, logger=folders.log.name):
        folders.remove([spent.as_uri()], "superseded, not published")
    assert not spent.exists()
    assert [r.getMessage() for r in caplog.records] == [
        f"{spent.as_uri()}: superseded, not published, removed"
    ]
