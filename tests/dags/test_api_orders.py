"""dags/examples/api_orders.py: a nested change-log API through delivery_task_group, read from
the test API (tests/api_server.py), a process on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

import pytest
from api_servers import api_server
from example_runs import Databases, load_example, states, xcom

from dogana_core.manifest import Manifest

pytestmark = pytest.mark.airflow

TASKS = ("api_orders.plan", "api_orders.extract", "api_orders.gate", "api_orders.publish")


def test_the_first_run_exports_the_change_log_then_the_next_reads_its_changes(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On SQLite; the PostgreSQL receiver runs it under the real scheduler (tests/deployment).
    databases = Databases("sqlite", tmp_path, None)
    databases.configure(monkeypatch)
    with api_server(monkeypatch) as api:
        monkeypatch.setenv("DOGANA_API_CONN_ID", api.conn_id)
        example = load_example(airflow_home, "api_orders")

        run = databases.run(example.dag)
        assert states(run) == dict.fromkeys(TASKS, "success")
        export = Manifest.from_dict(xcom(run, "api_orders.extract")["manifest"])
        assert (export.shape, export.rows, export.generation) == ("export", 7, "after:7")

        api.append({"order_id": 2, "amount": 21.0}, {"order_id": 5, "deleted": True})
        run = databases.run(example.dag)
        assert states(run) == dict.fromkeys(TASKS, "success")
        feed = Manifest.from_dict(xcom(run, "api_orders.extract")["manifest"])
        assert (feed.shape, feed.since, feed.generation) == ("feed", "after:7", "after:9")
        assert (feed.rows, feed.tombstones) == (1, 1)
    with databases.hook.receiver.read("api_orders") as read:
        at = [read.columns.index(c) for c in ("order_id", "amount", "customer_id", "country")]
        found = sorted(tuple(row[i] for i in at) for row in read.rows)
    assert found[:2] == [(1, 10.0, 1001, "FR"), (2, 21.0, 1002, "IT")]
    assert [row[0] for row in found] == [1, 2, 3, 4, 6, 7]
