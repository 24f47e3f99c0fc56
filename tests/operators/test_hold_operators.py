"""A held delivery in a DAG: the gate fails showing what holds it and how to end it, the publish
task never publishes it, and after a person's release the gate run again hands its receipt on."""

from __future__ import annotations

import json
import textwrap
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from delivery_dags import (
    ReceiverConnection,
    asset_events,
    orders_contract,
    published,
    states,
    write_dag,
    xcom,
)
from test_gate_operator import gate_and_publish, write_rows

from dogana_core import Manifest, Outcome, Receipt
from dogana_provider.checks.expectations import Expectations
from dogana_provider.hooks.dogana import DoganaHook
from dogana_provider.operators.publish import dogana_asset

pytestmark = [
    pytest.mark.airflow,
    pytest.mark.parametrize("receiver_connection", ["sqlite"], indirect=True),
]

HOLD = {"checks": {"no_bad_names": {"check_statement": "name <> 'bad'", "on_violation": "hold"}}}


def held_delivery(
    hook: DoganaHook, table: str, folder: Path, rows: dict[int, str]
) -> dict[str, object]:
    """The table registered with the hold expectation, and a delivery of these rows."""
    contract = orders_contract(table)
    hook.receiver.register(contract, Expectations.from_dict(HOLD))
    produced = datetime.now(UTC) - timedelta(minutes=1)
    written = write_rows(folder / "orders.parquet", contract, rows, produced)
    return {
        "manifest": written.manifest(contract, "full", produced).to_dict(),
        "uri": Path(written.path).as_uri(),
    }


def test_a_held_delivery_fails_the_gate_showing_its_violating_rows_and_how_to_end_it(
    airflow_home: Path,
    tmp_path: Path,
    receiver_connection: ReceiverConnection,
    capfd: pytest.CaptureFixture[str],
) -> None:
    conn_id, uid = receiver_connection.conn_id, uuid.uuid4().hex[:8]
    table = f"orders_{uid}"
    hook = DoganaHook(conn_id)
    rows = {1: "one", 2: "bad", 3: "three", 4: "bad"}
    delivery = held_delivery(hook, table, tmp_path, rows)
    module = write_dag(
        airflow_home, f"held_{uid}", gate_and_publish(delivery, tmp_path, conn_id, table)
    )
    run = module.dag.test()
    assert states(run) == {"extract": "success", "gate": "failed", "publish": "upstream_failed"}
    (hold,) = hook.receiver.holds(table)
    assert hold.hold_id == f"{table}-1"
    assert published(hook, table) == {} and hook.receiver.receipts(table) == []

    seen = capfd.readouterr()
    log = "\n".join(
        [seen.out, seen.err, *(p.read_text(errors="replace") for p in airflow_home.rglob("*.log"))]
    )
    assert f"hold {table}-1 of {table} in receiver {conn_id}: held" in log
    assert f"{table}: no_bad_names: violated (hold): " in log
    assert "2 rows violate it" in log
    # The violating rows as a table: its header, then rows 2 and 4 (the file's rows 2 and 4).
    lines = log.splitlines()
    at = next(i for i, line in enumerate(lines) if "_dogana_row  id" in line)
    start = lines[at].index("_dogana_row")
    # Each line as its record's message: what follows the level, before the logger's name.
    table_lines = [line[start:].split(" [airflow.")[0].split() for line in lines[at : at + 4]]
    assert table_lines[0] == ["_dogana_row", "id", "day", "name", "updated_at", "deleted"]
    assert [row[:2] for row in table_lines[2:]] == [["2", "2"], ["4", "4"]]
    assert all(row[3] == "bad" for row in table_lines[2:])
    assert f"dogana hold release {conn_id} {table}-1 --by" in log
    assert f"dogana hold discard {conn_id} {table}-1 --by" in log

    # A person releases it; the gate run again finds its acceptance and hands it on.
    (receipt,) = hook.receiver.release(hold.hold_id, by="Ada Lovelace")
    assert receipt.outcome is Outcome.ACCEPTED, receipt.failed
    again = module.dag.test()
    assert set(states(again).values()) == {"success"}
    assert Receipt.from_dict(xcom(again, "publish")).outcome is Outcome.REPLAYED
    assert published(hook, table) == rows
    assert asset_events(dogana_asset(table, conn_id).uri)


def test_the_publish_task_never_publishes_a_held_decision(
    airflow_home: Path, tmp_path: Path, receiver_connection: ReceiverConnection
) -> None:
    conn_id, uid = receiver_connection.conn_id, uuid.uuid4().hex[:8]
    table = f"orders_{uid}"
    hook = DoganaHook(conn_id)
    delivery = held_delivery(hook, table, tmp_path, {1: "one", 2: "bad"})
    file = Path(str(delivery["uri"]).removeprefix("file://"))
    decision = hook.receiver.decide(file, Manifest.from_dict(delivery["manifest"]))
    assert decision.held  # handed to the publish task below as a gate's XCom would
    path = tmp_path / "decision.json"
    path.write_text(json.dumps(decision.to_dict()), encoding="utf-8")
    body = textwrap.dedent(
        f"""
        import json
        from dogana_provider.operators.publish import PublishOperator

        with dag:
            @task
            def gate():
                with open({str(path)!r}) as file:
                    return json.load(file)

            gate() >> PublishOperator(task_id="publish", receiver_conn_id={conn_id!r})
        """
    )
    run = write_dag(airflow_home, f"held_publish_{uid}", body).dag.test()
    assert states(run) == {"gate": "success", "publish": "failed"}
    assert published(hook, table) == {} and hook.receiver.receipts(table) == []
    assert [hold.hold_id for hold in hook.receiver.holds(table)] == [decision.hold]
    assert asset_events(dogana_asset(table, conn_id).uri) == []


def test_a_held_group_fails_the_gate_showing_each_held_tables_violations(
    airflow_home: Path,
    tmp_path: Path,
    receiver_connection: ReceiverConnection,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """A group (orders and lines read together) held whole: the gate's log shows the held
    table's violating rows and the commands; nothing of either table is published until a
    person releases it, and the gate run again hands the group's receipts on."""
    conn_id, uid = receiver_connection.conn_id, uuid.uuid4().hex[:8]
    orders, lines = f"orders_{uid}", f"lines_{uid}"
    hook = DoganaHook(conn_id)
    hook.receiver.register(orders_contract(orders))
    produced = datetime.now(UTC) - timedelta(minutes=1)
    deliveries = []
    for table, rows in ((orders, {1: "one"}), (lines, {1: "first", 2: "bad"})):
        contract = orders_contract(table)
        written = write_rows(tmp_path / f"{table}.parquet", contract, rows, produced)
        deliveries.append(
            {
                "manifest": written.manifest(contract, "full", produced).to_dict(),
                "uri": Path(written.path).as_uri(),
            }
        )
    hook.receiver.register(orders_contract(lines), Expectations.from_dict(HOLD))
    path = tmp_path / "deliveries.json"
    path.write_text(json.dumps(deliveries), encoding="utf-8")
    body = textwrap.dedent(
        f"""
        import json
        from dogana_provider.operators.gate import GateOperator
        from dogana_provider.operators.publish import PublishOperator

        with dag:
            @task
            def extract():
                with open({str(path)!r}) as file:
                    return json.load(file)

            extract() >> GateOperator(task_id="gate", receiver_conn_id={conn_id!r}) >> (
                PublishOperator(
                    task_id="publish", receiver_conn_id={conn_id!r}, table={[orders, lines]!r}
                )
            )
        """
    )
    module = write_dag(airflow_home, f"held_group_{uid}", body)
    run = module.dag.test()
    assert states(run) == {"extract": "success", "gate": "failed", "publish": "upstream_failed"}
    (hold,) = hook.receiver.holds()
    assert hold.hold_id == f"{orders}-1"
    assert [held.table for held in hold.tables] == [orders, lines]
    for table in (orders, lines):
        assert published(hook, table) == {} and hook.receiver.receipts(table) == []

    seen = capfd.readouterr()
    log = "\n".join(
        [seen.out, seen.err, *(p.read_text(errors="replace") for p in airflow_home.rglob("*.log"))]
    )
    assert f"hold {orders}-1 of {orders}, {lines} in receiver {conn_id}: held" in log
    assert f"{lines}: no_bad_names: violated (hold): " in log
    assert "1 row violate" in log
    assert f"dogana hold release {conn_id} {orders}-1 --by" in log

    receipts = hook.receiver.release(hold.hold_id, by="Ada Lovelace")
    assert [r.outcome for r in receipts] == [Outcome.ACCEPTED] * 2, [r.failed for r in receipts]
    again = module.dag.test()
    assert set(states(again).values()) == {"success"}
    replayed = [Receipt.from_dict(item).outcome for item in xcom(again, "publish")]
    assert replayed == [Outcome.REPLAYED] * 2
    assert published(hook, lines) == {1: "first", 2: "bad"}
