"""No credential leaves Airflow's connection: with a password in the connections' URIs, the
example DAGs run, and the password is in no task log, no XCom value, no receipt and no Asset
event."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from example_runs import Databases, asset_events, load_example, now, states

pytestmark = [pytest.mark.airflow, pytest.mark.postgres]

PASSWORD = "dogana-Secret-4711"


def with_password(uri: str) -> str:
    """The connection URI with a password; the test server's trust auth ignores it."""
    parts = urlsplit(uri)
    netloc = f"{parts.username}:{PASSWORD}@{parts.hostname}:{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))


def xcoms(runs: list[Any]) -> list[Any]:
    """Every XCom value every task of the runs pushed, under any key."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    found = []
    with create_session() as session:
        for run in runs:
            query = XComModel.get_many(run_id=run.run_id, dag_ids=run.dag_id)
            found += [XComModel.deserialize_value(row) for row in session.scalars(query).all()]
    return found


def test_a_password_in_the_connections_is_never_logged_nor_pushed(
    airflow_home: Path,
    tmp_path: Path,
    postgres_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    databases = Databases("postgres", tmp_path, postgres_url)
    try:
        databases.configure(monkeypatch)
        for role, variable in (("source", "SOURCE"), ("receiver", "DEFAULT")):
            uri = with_password(databases.connection(role))
            assert PASSWORD in uri
            monkeypatch.setenv(f"AIRFLOW_CONN_DOGANA_{variable}", uri)
        databases.create(
            "CREATE TABLE orders (order_id BIGINT PRIMARY KEY, customer TEXT, "
            "amount_cents BIGINT, updated_at TIMESTAMPTZ NOT NULL, is_deleted BOOLEAN NOT NULL)"
        )
        databases.source("INSERT INTO orders VALUES (?, ?, ?, ?, ?)", (1, "ada", 100, now(), False))
        orders = load_example(airflow_home, "orders")
        freshness = load_example(airflow_home, "freshness")
        delivered = databases.run(orders.daily)
        checked = databases.run(freshness.dag)
        assert states(delivered) == dict.fromkeys(("plan", "extract", "gate", "publish"), "success")
        assert states(checked) == {"freshness": "failed"}  # four tables never delivered

        seen = capfd.readouterr()
        logs = [seen.out, seen.err]
        logs += [p.read_text(errors="replace") for p in airflow_home.rglob("*.log") if p.is_file()]
        # The tasks' own lines are there, one per step with its counts: the plan's claims, the
        # file written, the gate's decision, the publication, the freshness report.
        for line in (
            r"orders: contract registered; claims now unknown",
            r"orders: plan read shape 'full'",
            r"orders: shape full, 1 rows, 0 tombstones, produced_at ",
            r"orders: accepted manifest \w+ \(shape 'full', 1 rows, 0 tombstones, .*\); "
            r"checks \d+ passed, 0 failed",
            r"orders: published manifest \w+ \(1 rows, 0 tombstones, \d+ actions\)",
            r"dogana freshness of 5 tables",
        ):
            assert any(re.search(line, text) for text in logs), f"no task log says {line!r}"
        for text in logs:
            assert PASSWORD not in text
        pushed = xcoms([delivered, checked])
        assert pushed, "no XCom was pushed"
        assert PASSWORD not in json.dumps(pushed, default=str)
        receipts = [receipt.to_dict() for receipt in databases.receipts("orders")]
        assert receipts and PASSWORD not in json.dumps(receipts)
        events = asset_events("dogana://dogana_default/orders")
        assert events and PASSWORD not in json.dumps(events)
    finally:
        databases.drop()
