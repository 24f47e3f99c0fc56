"""Quality expectations declared on the gate, run by dag.test() against a real receiver.

A warned violation is published, and the gate's log and the table's Asset event say so; a
blocked one fails the gate and publishes nothing. Their behaviour on every database is the
receiver's conformance suite's; here is what a DAG author sees.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from delivery_dags import (
    ReceiverConnection,
    Source,
    asset_events,
    orders_contract,
    pipeline,
    published,
    states,
    write_dag,
)

from dogana_provider.hooks.dogana import DoganaHook
from dogana_provider.operators.publish import dogana_asset

pytestmark = pytest.mark.airflow


def run_with(
    airflow_home: Path, tmp_path: Path, conn_id: str, expectations: dict[str, Any]
) -> tuple[str, Any, Source]:
    uid = uuid.uuid4().hex[:8]
    table = f"orders_{uid}"
    contract_path = tmp_path / "orders.contract.json"
    contract_path.write_text(orders_contract(table).to_json(), encoding="utf-8")
    source = Source(tmp_path / "source.json")
    source.put(1, "one")
    source.put(2, "two")
    body = pipeline(
        conn_id, table, contract_path, source, tmp_path, gate=f"expectations={expectations!r},"
    )
    module = write_dag(airflow_home, f"expect_{uid}", body)
    return table, module.dag.test(), source


def test_a_warned_violation_is_published_logged_and_stated_in_the_asset_event(
    airflow_home: Path,
    tmp_path: Path,
    receiver_connection: ReceiverConnection,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """The task's log is what dag.test() prints (Airflow's structured logging)."""
    conn_id = receiver_connection.conn_id
    declared = {"column_mapping": {"id": {"max": {"less_than": 2, "on_violation": "warn"}}}}
    table, run, source = run_with(airflow_home, tmp_path, conn_id, declared)
    assert set(states(run).values()) == {"success"}
    assert published(DoganaHook(conn_id), table) == source.live()
    detail = "violated (warn): max 2 (less_than 2), 1 row"
    logged = capfd.readouterr()
    lines = (logged.out + logged.err).splitlines()
    warned = [line for line in lines if "[warning" in line and f"id.max {detail}" in line]
    assert warned, [line for line in lines if "expectation" in line]
    (extra,) = asset_events(dogana_asset(table, conn_id).uri)
    assert extra["expectations"] == {"met": 0, "violations": {"id.max": detail}}


def test_a_blocked_violation_fails_the_gate_and_publishes_nothing(
    airflow_home: Path, tmp_path: Path, receiver_connection: ReceiverConnection
) -> None:
    conn_id = receiver_connection.conn_id
    declared = {"column_mapping": {"id": {"max": {"less_than": 2, "on_violation": "block"}}}}
    table, run, _ = run_with(airflow_home, tmp_path, conn_id, declared)
    assert states(run)["gate"] == "failed"
    assert states(run)["publish"] != "success"
    receiver = DoganaHook(conn_id).receiver
    assert receiver.verify(table).publications == 0
    (receipt,) = receiver.receipts(table)
    assert [c.detail for c in receipt.failed] == ["violated (block): max 2 (less_than 2), 1 row"]
