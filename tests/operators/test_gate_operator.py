"""GateOperator: rejections recorded and failing the task, replays, drop folders, remote files."""

from __future__ import annotations

import json
import textwrap
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import fsspec
import pytest
from delivery_dags import (
    SCHEMA,
    ReceiverConnection,
    Source,
    asset_events,
    batch,
    orders_contract,
    pipeline,
    published,
    states,
    write_dag,
    xcom,
)

from dogana_core import Outcome, Receipt
from dogana_core.contract import Contract
from dogana_provider.delivery.files import DeliveryWriter, Written
from dogana_provider.hooks.dogana import DoganaHook
from dogana_provider.operators.gate import rejection_message, sidecar
from dogana_provider.operators.publish import dogana_asset

pytestmark = pytest.mark.airflow


def write_rows(
    path: Path, contract: Contract, rows: dict[int, str], at: datetime, *, overwrite: bool = False
) -> Written:
    """A sender's Parquet file of live rows, each last changed at `at`."""
    row = {"day": "2026-01-01", "updated_at": at.isoformat(), "deleted": False}
    chosen = [(id_, {**row, "name": name}, False) for id_, name in sorted(rows.items())]
    with DeliveryWriter(path, contract, SCHEMA, overwrite=overwrite) as writer:
        writer.write(batch(chosen))
        return writer.close()


def gate_and_publish(
    delivery: dict[str, object], folder: Path, conn_id: str, table: str, prelude: str = ""
) -> str:
    """A DAG body: a task handing over the delivery (kept as JSON in folder), then Gate and
    Publish on it; prelude runs first in the DAG file."""
    path = folder / "delivery.json"
    path.write_text(json.dumps(delivery), encoding="utf-8")
    return textwrap.dedent(prelude) + textwrap.dedent(
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
                PublishOperator(task_id="publish", receiver_conn_id={conn_id!r}, table={table!r})
            )
        """
    )


def test_a_tampered_file_is_rejected_recorded_and_fails_the_task(
    airflow_home: Path, tmp_path: Path, receiver_connection: ReceiverConnection
) -> None:
    conn_id, uid = receiver_connection.conn_id, uuid.uuid4().hex[:8]
    table = f"orders_{uid}"
    contract_path = tmp_path / "orders.contract.json"
    contract_path.write_text(orders_contract(table).to_json(), encoding="utf-8")
    source = Source(tmp_path / "source.json")
    source.put(1, "one")
    source.put(2, "two")
    module = write_dag(
        airflow_home,
        f"tampered_{uid}",
        pipeline(conn_id, table, contract_path, source, tmp_path, tamper=True),
    )
    run = module.dag.test()
    assert states(run) == {
        "plan": "success",
        "extract": "success",
        "gate": "failed",
        "publish": "upstream_failed",
    }
    hook = DoganaHook(conn_id)
    [receipt] = hook.receiver.receipts(table)
    assert receipt.outcome is Outcome.REJECTED
    failed = {check.name for check in receipt.failed}
    assert {"content_hash", "rows"} <= failed, failed
    message = rejection_message(receipt)
    for check in receipt.failed:
        assert f"{check.name}: {check.detail}" in message
    assert published(hook, table) == {}
    assert hook.receiver.ledger(table).publication_id is None
    assert asset_events(dogana_asset(table, conn_id).uri) == []


def test_a_replayed_delivery_changes_nothing(
    airflow_home: Path, tmp_path: Path, receiver_connection: ReceiverConnection
) -> None:
    """The same delivery gated twice: the second gate answers with the original receipt as a
    replay, publish changes nothing, and no receipt is added."""
    conn_id, uid = receiver_connection.conn_id, uuid.uuid4().hex[:8]
    table = f"orders_{uid}"
    contract = orders_contract(table)
    hook = DoganaHook(conn_id)
    hook.receiver.register(contract)
    p = datetime.now(UTC) - timedelta(minutes=1)
    written = write_rows(tmp_path / "orders.parquet", contract, {1: "one", 2: "two"}, p)
    delivery = {
        "manifest": written.manifest(contract, "full", p).to_dict(),
        "uri": Path(written.path).as_uri(),
    }
    module = write_dag(
        airflow_home, f"replay_{uid}", gate_and_publish(delivery, tmp_path, conn_id, table)
    )
    first = module.dag.test()
    assert set(states(first).values()) == {"success"}
    accepted = Receipt.from_dict(xcom(first, "publish"))
    ledger = hook.receiver.ledger(table)

    second = module.dag.test()
    assert set(states(second).values()) == {"success"}
    gated = Receipt.from_dict(xcom(second, "gate")["receipt"])
    assert gated.outcome is Outcome.REPLAYED
    assert xcom(second, "gate")["staged"] is None  # nothing staged: a replay never reads rows
    replayed = Receipt.from_dict(xcom(second, "publish"))
    assert replayed.outcome is Outcome.REPLAYED
    assert replayed.identity == accepted.identity
    assert hook.receiver.ledger(table) == ledger
    assert hook.receiver.receipts(table) == [accepted]
    assert published(hook, table) == {1: "one", 2: "two"}


def test_a_drop_folder_delivery_passes_the_same_gate(
    airflow_home: Path, tmp_path: Path, receiver_connection: ReceiverConnection
) -> None:
    """A sender's FILE and its sidecar FILE.json: gated and published; a later run finds nothing
    new and skips; a second file is the next delivery; a tampered one fails the gate."""
    conn_id, uid = receiver_connection.conn_id, uuid.uuid4().hex[:8]
    table = f"orders_{uid}"
    contract = orders_contract(table)
    hook = DoganaHook(conn_id)
    contract_path = tmp_path / "orders.contract.json"
    contract_path.write_text(contract.to_json(), encoding="utf-8")
    folder = tmp_path / "drop"
    folder.mkdir()

    def send(name: str, rows: dict[int, str], at: datetime, *, tamper: bool = False) -> None:
        written = write_rows(folder / name, contract, rows, at)
        manifest = written.manifest(contract, "full", at)
        if tamper:
            write_rows(folder / name, contract, dict(list(rows.items())[:-1]), at, overwrite=True)
        sidecar(folder / name).write_text(manifest.to_json(), encoding="utf-8")

    now = datetime.now(UTC)
    send("orders-1.parquet", {1: "one", 2: "two"}, now - timedelta(minutes=3))
    (folder / "notes.txt").write_text("no sidecar: not a delivery", encoding="utf-8")
    module = write_dag(
        airflow_home,
        f"drop_{uid}",
        f"""
        from dogana_provider.operators.gate import GateOperator
        from dogana_provider.operators.publish import PublishOperator

        with dag:
            GateOperator(
                task_id="gate",
                receiver_conn_id={conn_id!r},
                drop_folder={str(folder)!r},
                contract={str(contract_path)!r},  # no plan task registers it
            ) >> PublishOperator(task_id="publish", receiver_conn_id={conn_id!r}, table={table!r})
        """,
    )
    first = module.dag.test()
    assert states(first) == {"gate": "success", "publish": "success"}
    assert published(hook, table) == {1: "one", 2: "two"}

    nothing_new = module.dag.test()
    assert states(nothing_new) == {"gate": "skipped", "publish": "skipped"}

    send("orders-2.parquet", {1: "uno", 3: "three"}, now - timedelta(minutes=2))
    second = module.dag.test()
    assert states(second) == {"gate": "success", "publish": "success"}
    assert published(hook, table) == {1: "uno", 3: "three"}

    send("orders-3.parquet", {4: "four", 5: "five"}, now - timedelta(minutes=1), tamper=True)
    tampered = module.dag.test()
    assert states(tampered) == {"gate": "failed", "publish": "upstream_failed"}
    assert published(hook, table) == {1: "uno", 3: "three"}
    outcomes = [receipt.outcome for receipt in hook.receiver.receipts(table)]
    assert outcomes == [Outcome.ACCEPTED, Outcome.ACCEPTED, Outcome.REJECTED]


def test_a_delivery_on_object_storage_is_streamed_to_the_gate(
    airflow_home: Path, tmp_path: Path, receiver_connection: ReceiverConnection
) -> None:
    """A uri of any fsspec filesystem (here memory://) is copied to a local file, then gated."""
    conn_id, uid = receiver_connection.conn_id, uuid.uuid4().hex[:8]
    table = f"orders_{uid}"
    contract = orders_contract(table)
    DoganaHook(conn_id).receiver.register(contract)
    p = datetime.now(UTC) - timedelta(minutes=1)
    written = write_rows(tmp_path / "orders.parquet", contract, {7: "seven"}, p)
    uri = f"memory://deliveries-{uid}/orders.parquet"
    fsspec.filesystem("memory").pipe(uri, Path(written.path).read_bytes())
    delivery = {"manifest": written.manifest(contract, "full", p).to_dict(), "uri": uri}
    attach = """
        from airflow.sdk.io import attach
        from fsspec.implementations.memory import MemoryFileSystem

        # memory:// is no provider's scheme: attach fsspec's, as a DAG attaches any filesystem.
        attach("memory", fs=MemoryFileSystem())
        """
    module = write_dag(
        airflow_home, f"remote_{uid}", gate_and_publish(delivery, tmp_path, conn_id, table, attach)
    )
    run = module.dag.test()
    assert set(states(run).values()) == {"success"}
    assert published(DoganaHook(conn_id), table) == {7: "seven"}


def payroll_and_orders(
    hook: DoganaHook, uid: str, tmp_path: Path
) -> tuple[Contract, Contract, Written, datetime]:
    """orders and payroll registered, payroll with a file of its own to deliver."""
    orders, payroll = orders_contract(f"orders_{uid}"), orders_contract(f"payroll_{uid}")
    for contract in (orders, payroll):
        hook.receiver.register(contract)
    p = datetime.now(UTC) - timedelta(minutes=1)
    return orders, payroll, write_rows(tmp_path / "payroll.parquet", payroll, {1: "pay"}, p), p


def test_a_gate_for_one_table_refuses_a_sidecar_naming_another(
    airflow_home: Path, tmp_path: Path, receiver_connection: ReceiverConnection
) -> None:
    """A drop folder gated for orders, holding a manifest for payroll: the gate fails, the
    rejection is filed under orders naming both, and payroll is untouched."""
    conn_id, uid = receiver_connection.conn_id, uuid.uuid4().hex[:8]
    hook = DoganaHook(conn_id)
    folder = tmp_path / "drop"
    folder.mkdir()
    orders, payroll, written, p = payroll_and_orders(hook, uid, folder)
    sidecar(Path(written.path)).write_text(written.manifest(payroll, "full", p).to_json())
    contract_path = tmp_path / "orders.contract.json"
    contract_path.write_text(orders.to_json(), encoding="utf-8")
    module = write_dag(
        airflow_home,
        f"foreign_{uid}",
        f"""
        from dogana_provider.operators.gate import GateOperator

        with dag:
            GateOperator(
                task_id="gate",
                receiver_conn_id={conn_id!r},
                drop_folder={str(folder)!r},
                contract={str(contract_path)!r},
            )
        """,
    )
    assert states(module.dag.test()) == {"gate": "failed"}
    (refused,) = hook.receiver.receipts(orders.table)
    assert refused.outcome is Outcome.REJECTED
    assert f"'{payroll.table}' is not the contract's table '{orders.table}'" in str(refused.failed)
    assert hook.receiver.receipts(payroll.table) == []
    assert hook.receiver.ledger(payroll.table).publication_id is None


def test_a_publish_for_one_table_refuses_a_decision_for_another(
    airflow_home: Path, tmp_path: Path, receiver_connection: ReceiverConnection
) -> None:
    """payroll's delivery through a gate told no table, to a publish for orders: refused and
    filed under orders, nothing published, no event for orders' Asset."""
    conn_id, uid = receiver_connection.conn_id, uuid.uuid4().hex[:8]
    hook = DoganaHook(conn_id)
    orders, payroll, written, p = payroll_and_orders(hook, uid, tmp_path)
    delivery = {
        "manifest": written.manifest(payroll, "full", p).to_dict(),
        "uri": Path(written.path).as_uri(),
    }
    body = gate_and_publish(delivery, tmp_path, conn_id, orders.table)
    run = write_dag(airflow_home, f"chosen_{uid}", body).dag.test()
    assert states(run) == {"extract": "success", "gate": "success", "publish": "failed"}
    (refused,) = hook.receiver.receipts(orders.table)
    assert refused.outcome is Outcome.REJECTED
    assert f"'{payroll.table}' is not the contract's table '{orders.table}'" in str(refused.failed)
    assert hook.receiver.receipts(payroll.table) == []
    assert published(hook, payroll.table) == {}
    assert asset_events(dogana_asset(orders.table, conn_id).uri) == []


def test_a_gate_sweeps_the_staging_table_of_a_decision_nobody_published(
    airflow_home: Path, tmp_path: Path, receiver_connection: ReceiverConnection
) -> None:
    """A decision staged two days ago and never published: the next gate run drops its staging
    table (sweep_after, a day by default) before deciding its own delivery."""
    conn_id, uid = receiver_connection.conn_id, uuid.uuid4().hex[:8]
    table = f"orders_{uid}"
    contract = orders_contract(table)
    hook = DoganaHook(conn_id)
    receiver = hook.receiver
    receiver.register(contract)
    p = datetime.now(UTC) - timedelta(minutes=1)
    old = write_rows(tmp_path / "old.parquet", contract, {1: "old"}, p - timedelta(days=2))
    receiver.steps = replace(receiver.steps, clock=lambda: datetime.now(UTC) - timedelta(days=2))
    abandoned = receiver.decide(old.path, old.manifest(contract, "full", p - timedelta(days=2)))
    assert abandoned.to_publish
    written = write_rows(tmp_path / "orders.parquet", contract, {1: "one"}, p)
    delivery = {"manifest": written.manifest(contract, "full", p).to_dict(), "uri": written.path}
    body = gate_and_publish(delivery, tmp_path, conn_id, table)
    run = write_dag(airflow_home, f"sweep_{uid}", body).dag.test()
    assert set(states(run).values()) == {"success"}
    connection = receiver.connect()
    try:
        assert receiver.store.staging_tables(connection) == []
    finally:
        connection.close()
    assert published(hook, table) == {1: "one"}
