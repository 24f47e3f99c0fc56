"""dags/examples/web_orders.py: a JSON Lines change log through delivery_task_group."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from example_runs import Databases, load_example, states, xcom

from dogana_core.manifest import Manifest

pytestmark = pytest.mark.airflow

TASKS = ("web_orders.plan", "web_orders.extract", "web_orders.gate", "web_orders.publish")


def test_the_first_run_exports_the_change_log_as_the_table(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One run, on SQLite: the feeds after it are the connector's tests (tests/connectors).
    databases = Databases("sqlite", tmp_path, None)
    databases.configure(monkeypatch)
    drop = tmp_path / "web_orders.jsonl"
    changes = [
        {"order_id": 1, "amount": 10.0, "status": "new", "_op": "c"},
        {"order_id": 2, "amount": 20.0, "status": "new", "_op": "c"},
        {"order_id": 1, "amount": 10.0, "status": "paid", "_op": "u"},
        {"order_id": 2, "amount": None, "status": None, "_op": "d"},
        {"order_id": 3, "amount": 30.0, "status": "new", "_op": "c"},
    ]
    drop.write_text("".join(json.dumps(change) + "\n" for change in changes))
    monkeypatch.setenv("DOGANA_WEB_ORDERS_JSONL", str(drop))
    example = load_example(airflow_home, "web_orders")

    run = databases.run(example.dag)
    assert states(run) == dict.fromkeys(TASKS, "success")
    manifest = Manifest.from_dict(xcom(run, "web_orders.extract")["manifest"])
    assert (manifest.shape, manifest.rows, manifest.tombstones) == ("export", 2, 0)
    assert str(manifest.generation).startswith(f"jsonl:{drop.stat().st_size}:5:")
    with databases.hook.receiver.read("web_orders") as read:
        at = read.columns.index("status")
        assert sorted(row[at] for row in read.rows) == ["new", "paid"]
    assert databases.hook.receiver.ledger("web_orders").generation == manifest.generation
