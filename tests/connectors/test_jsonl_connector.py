"""The JSON Lines connector: exact offsets, honest about files that change under it, deletions
from `_op`, and deliveries whose manifests claim what the read proved and no more."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest
from jsonl_files import (
    ORDERS_COLUMNS,
    append,
    config,
    lines,
    order,
    orders_contract,
    published,
    write,
)

from dogana_core.planner import next_extraction
from dogana_provider.connectors import JsonLinesConnector, RefusedRead
from dogana_provider.connectors.conformance import conformance
from dogana_provider.connectors.extract import extract
from dogana_provider.dialects import SQLITE
from dogana_provider.receiver.receiver import Receiver

HERE = Path(__file__).resolve().parent


def rows(reading) -> list[dict]:
    return pa.Table.from_batches(list(reading), schema=reading.schema).to_pylist()


def now() -> datetime:
    return datetime.now(UTC)


@pytest.fixture
def receiver(tmp_path: Path) -> Receiver:
    database = tmp_path / "warehouse.sqlite"
    found = Receiver(lambda: sqlite3.connect(database), SQLITE)
    found.register(orders_contract())
    return found


def deliver(receiver: Receiver, connector: JsonLinesConnector, shape: str, folder: Path) -> str:
    contract = orders_contract()
    request = next_extraction(receiver.ledger("orders"), shape, now())
    delivered = extract(
        connector, "orders", contract, request, folder / f"{uuid.uuid4().hex}.parquet"
    )
    return receiver.receive(delivered.path, delivered.manifest).outcome


def test_an_export_then_the_feed_publish_each_change_once(
    tmp_path: Path, receiver: Receiver
) -> None:
    source = write(tmp_path / "orders.jsonl", [order(n) for n in range(1, 6)])
    connector = JsonLinesConnector(config(source, whole_history=True))
    assert deliver(receiver, connector, "export", tmp_path) == "accepted"
    append(source, [order(2, "u", amount=2.5), order(3, "d"), order(6), order(2, "u", 2.75)])
    assert deliver(receiver, connector, "feed", tmp_path) == "accepted"
    rows_now = published(receiver, "orders")
    assert sorted(rows_now) == [1, 2, 4, 5, 6]
    assert 2.75 in rows_now[2]
    # Nothing new: the feed from the held token delivers nothing, and is accepted.
    assert deliver(receiver, connector, "feed", tmp_path) == "accepted"
    assert sorted(published(receiver, "orders")) == [1, 2, 4, 5, 6]


def test_op_d_is_a_tombstone_and_a_feed_holds_one_final_row_per_key(
    tmp_path: Path, receiver: Receiver
) -> None:
    source = write(tmp_path / "orders.jsonl", [order(1)])
    connector = JsonLinesConnector(config(source, whole_history=True))
    deliver(receiver, connector, "export", tmp_path)
    append(source, [order(7), order(7, "u"), order(7, "d"), order(1, "d")])
    request = next_extraction(receiver.ledger("orders"), "feed", now())
    delivered = extract(connector, "orders", orders_contract(), request, tmp_path / "f.parquet")
    assert (delivered.manifest.rows, delivered.manifest.tombstones) == (0, 2)
    assert receiver.receive(delivered.path, delivered.manifest).outcome == "accepted"
    assert published(receiver, "orders") == {}


def test_a_complete_read_of_a_change_log_publishes_only_live_rows(
    tmp_path: Path, receiver: Receiver
) -> None:
    source = write(tmp_path / "orders.jsonl", [order(1), order(2), order(1, "d"), order(2, "u")])
    connector = JsonLinesConnector(config(source, whole_history=True))
    assert deliver(receiver, connector, "export", tmp_path) == "accepted"
    assert sorted(published(receiver, "orders")) == [2]


def test_a_shape_the_read_does_not_prove_is_refused_by_claims_more_than_read(
    tmp_path: Path, receiver: Receiver
) -> None:
    # Not declared to hold the table's whole history: a read from its start proves no export.
    source = write(tmp_path / "orders.jsonl", [order(1), order(2)])
    target = tmp_path / "export.parquet"
    request = next_extraction(receiver.ledger("orders"), "export", now())
    with pytest.raises(RefusedRead) as refused:
        extract(JsonLinesConnector(config(source)), "orders", orders_contract(), request, target)
    assert refused.value.rule == "claims_more_than_read"
    assert "whole history" in str(refused.value)
    assert not target.exists()


def test_a_file_that_shrinks_is_refused_by_file_shrank(tmp_path: Path) -> None:
    source = write(tmp_path / "orders.jsonl", [order(n) for n in range(1, 5)])
    connector = JsonLinesConnector(config(source))
    reading = connector.read("orders")
    rows(reading)
    write(source, [order(1)])
    with pytest.raises(RefusedRead) as refused:
        rows(connector.resume("orders", reading.checkpoint()))
    assert refused.value.rule == "file_shrank"


def test_a_rewritten_file_is_refused_by_file_rewritten(tmp_path: Path) -> None:
    source = write(tmp_path / "orders.jsonl", [order(n) for n in range(1, 5)])
    connector = JsonLinesConnector(config(source))
    reading = connector.read("orders", limit=2)
    rows(reading)
    # The same length, other bytes: order 2's amount changed in place.
    write(source, [order(1), order(2, amount=99.0), order(3), order(4), order(5)])
    with pytest.raises(RefusedRead) as refused:
        rows(connector.resume("orders", reading.checkpoint()))
    assert refused.value.rule == "file_rewritten"
    assert "line 2" in str(refused.value)


def test_a_line_cut_mid_write_waits_for_its_newline_and_is_then_read_once(
    tmp_path: Path,
) -> None:
    whole = lines([order(1), order(2), order(3)])
    source = tmp_path / "orders.jsonl"
    source.write_bytes(whole[:-10])
    connector = JsonLinesConnector(config(source))
    reading = connector.read("orders")
    assert [r["order_id"] for r in rows(reading)] == [1, 2]
    assert "bytes after the last newline wait" in reading.proof().why
    source.write_bytes(whole)
    resumed = connector.resume("orders", reading.checkpoint())
    assert [r["order_id"] for r in rows(resumed)] == [3]


@pytest.mark.parametrize(
    ("text", "rule", "where"),
    [
        (b'{"order_id": 2, "amount": 1.0, "colour": "red"}\n', "record_does_not_fit", "colour"),
        (b'{"order_id": "two", "amount": 1.0}\n', "record_does_not_fit", "line 2"),
        (b'{"order_id": 2, "amount": \n', "malformed_json", "line 2"),
        (b'{"amount": 1.0}\n', "record_missing_key", "line 2 has no order_id"),
        (b"\n", "blank_line", "line 2"),
        (b'{"order_id": 2, "_op": "x"}\n', "op_value", "'x'"),
        (b"[1, 2]\n", "record_does_not_fit", "not an object"),
    ],
)
def test_a_line_that_does_not_fit_refuses_the_read_naming_it(
    tmp_path: Path, text: bytes, rule: str, where: str
) -> None:
    source = tmp_path / "orders.jsonl"
    source.write_bytes(lines([order(1)]) + text + lines([order(3)]))
    with pytest.raises(RefusedRead) as refused:
        rows(JsonLinesConnector(config(source)).read("orders"))
    assert refused.value.rule == rule
    assert where in str(refused.value)


def test_a_file_in_fsspecs_memory_filesystem_passes_conformance() -> None:
    from airflow.sdk.io import attach
    from fsspec.implementations.memory import MemoryFileSystem

    # memory:// is no provider's scheme: attach fsspec's, as a DAG attaches any filesystem.
    attach("memory", fs=MemoryFileSystem())
    url = f"memory://drops-{uuid.uuid4().hex[:8]}/orders.jsonl"
    MemoryFileSystem().pipe(url, lines([order(n) for n in range(1, 6)] + [order(2, "d")]))
    report = conformance(JsonLinesConnector(config(url, whole_history=True)))
    assert report.failed == ()


def test_a_read_killed_mid_way_is_read_again_whole_from_the_held_token(
    tmp_path: Path, receiver: Receiver
) -> None:
    source = write(tmp_path / "orders.jsonl", [order(n) for n in range(1, 4)])
    connector = JsonLinesConnector(config(source, whole_history=True, batch_bytes=256))
    deliver(receiver, connector, "export", tmp_path)
    append(source, [order(n) for n in range(4, 400)])
    held = receiver.ledger("orders").generation
    # A real process reads the feed from the held token and is killed after its first batch.
    killed = tmp_path / "killed.parquet"
    process = subprocess.Popen(
        [sys.executable, str(HERE / "killed_read.py"), str(source), str(held), str(killed)],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert process.stdout is not None
    for line in process.stdout:  # Airflow's own log lines come first
        if line == b"first batch written\n":
            break
    else:
        pytest.fail("the read ended before its first batch")
    os.kill(process.pid, signal.SIGKILL)
    assert process.wait() == -signal.SIGKILL
    # Nothing was published: the ledger still holds the token, and the feed reads from it.
    assert receiver.ledger("orders").generation == held
    request = next_extraction(receiver.ledger("orders"), "feed", now())
    again = extract(connector, "orders", orders_contract(), request, tmp_path / "again.parquet")
    assert (again.manifest.since, again.manifest.rows) == (held, 396)  # each line once
    assert receiver.receive(again.path, again.manifest).outcome == "accepted"
    assert deliver(receiver, connector, "feed", tmp_path) == "accepted"
    assert sorted(published(receiver, "orders")) == list(range(1, 400))


def test_a_declared_column_retyped_under_freeze_is_refused_before_the_connector_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A connector pipeline's extract, knowing its receiver, judges the columns its stream
    declares against the held schema version, as a SQL snapshot's does: amount declared
    int where version 1 holds float (the file's amounts are whole, so either reads) fails the
    task naming the column and the policy before a row is read, and leaves the receiver as it
    was: not a read delivered for the gate's column_types check to reject."""
    import json
    from types import SimpleNamespace

    from airflow.sdk.exceptions import AirflowFailException

    from dogana_core.manifest import Manifest
    from dogana_provider.hooks.dogana import DoganaHook
    from dogana_provider.operators.extract import ExtractOperator
    from dogana_provider.receiver.transactions import transaction
    from dogana_provider.schema.versions import SchemaVersions

    conn_id = f"rcv_{uuid.uuid4().hex[:8]}"
    database = {"conn_type": "sqlite", "host": str(tmp_path / "warehouse.sqlite")}
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(database))
    receiver = DoganaHook(conn_id).receiver
    contract = orders_contract()
    receiver.register(contract)
    source = write(tmp_path / "orders.jsonl", [{**order(n), "amount": n * 10} for n in (1, 2)])

    def run(columns: dict[str, str], run_id: str) -> dict:
        request = next_extraction(receiver.ledger("orders"), "export", now())
        extract = ExtractOperator(
            task_id="extract",
            connector={"kind": "jsonl", **config(source, whole_history=True, columns=columns)},
            contract=contract,
            request=request.to_dict(),
            receiver_conn_id=conn_id,
            output_folder=(tmp_path / run_id).as_uri(),
        )
        context = {"dag": SimpleNamespace(dag_id="orders_feed"), "run_id": run_id}
        return extract.execute(context)

    def kept() -> tuple:
        versions = SchemaVersions(receiver.dialect, receiver.store.prefix)
        with transaction(receiver.connect, receiver.dialect, write=False) as connection:
            held = versions.history(connection, "orders")
        receipts = [r.to_dict() for r in receiver.receipts("orders")]
        return published(receiver, "orders"), receiver.ledger("orders"), receipts, held

    pushed = run(dict(ORDERS_COLUMNS), "first")
    path = str(tmp_path / "first" / "orders.parquet")
    assert receiver.receive(path, Manifest.from_dict(pushed["manifest"])).outcome == "accepted"
    before = kept()
    assert [v.version for v in before[3]] == [1]
    with pytest.raises(AirflowFailException) as refused:
        run({**ORDERS_COLUMNS, "amount": "int"}, "retyped")
    message = str(refused.value)
    assert "jsonl connector: orders:" in message and "so nothing was read" in message
    assert "amount retyped: float -> int: refused (data_type freeze)" in message
    assert not (tmp_path / "retyped" / "orders.parquet").exists()
    assert kept() == before
