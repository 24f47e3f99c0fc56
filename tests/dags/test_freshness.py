"""dags/examples/freshness.py and FreshnessOperator: a report of every table, failing when one is
too old, never delivered or unknown."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from example_runs import (
    Databases,
    create_invoice_tables,
    load_example,
    now,
    on_one_utc_day,
    states,
    write_dag,
    xcom,
)

from dogana_provider.operators.freshness import ERROR, PASS, WARN, freshness_report, judge

pytestmark = pytest.mark.airflow

DELIVERY = ("plan", "extract", "gate", "publish")


def create_sources(databases: Databases) -> None:
    on_one_utc_day()  # the shipments window is judged over the last 30 UTC days
    databases.create(
        "CREATE TABLE orders (order_id BIGINT PRIMARY KEY, customer TEXT, amount_cents BIGINT, "
        "updated_at TIMESTAMPTZ NOT NULL, is_deleted BOOLEAN NOT NULL)"
    )
    databases.source("INSERT INTO orders VALUES (?, ?, ?, ?, ?)", (1, "ada", 100, now(), False))
    databases.create(
        "CREATE TABLE events (kind TEXT NOT NULL, payload TEXT, recorded_at TIMESTAMPTZ NOT NULL)"
    )
    databases.source("INSERT INTO events VALUES (?, ?, ?)", ("click", "home", now()))
    create_invoice_tables(databases)
    databases.source("INSERT INTO invoices VALUES (?, ?, ?, ?)", (1, "ada", now(), False))
    databases.source("INSERT INTO invoice_lines VALUES (?, ?, ?)", (1, 1, 100))
    databases.create(
        "CREATE TABLE shipments (shipment_id BIGINT PRIMARY KEY, ship_date DATE NOT NULL, "
        "weight_g BIGINT, updated_at TIMESTAMPTZ NOT NULL)"
    )
    day = now().date().isoformat()
    databases.source("INSERT INTO shipments VALUES (?, ?, ?, ?)", (1, day, 10, now()))


def publish_state(run: Any) -> str:
    """The state of the run's publish task, written out ("publish") or in a TaskGroup."""
    [state] = [s for task, s in states(run).items() if task.rsplit(".", 1)[-1] == "publish"]
    return state


def test_freshness_fails_until_every_table_is_delivered_then_passes(
    databases: Databases, airflow_home: Path
) -> None:
    create_sources(databases)
    freshness = load_example(airflow_home, "freshness")
    orders = load_example(airflow_home, "orders")
    events = load_example(airflow_home, "events")
    invoices = load_example(airflow_home, "invoices")
    shipments = load_example(airflow_home, "shipments")
    for dag in (orders.daily, events.dag, invoices.dag):
        assert publish_state(databases.run(dag)) == "success"

    # shipments was never delivered: the check fails, and says which table and why.
    stale = databases.run(freshness.dag)
    assert states(stale) == {"freshness": "failed"}
    text = xcom(stale, "freshness", key="report")
    assert "4 PASS, 0 WARN, 1 ERROR" in text
    assert "ERROR shipments: no contract registered in the receiver" in text

    assert publish_state(databases.run(shipments.dag)) == "success"
    fresh = databases.run(freshness.dag)
    assert states(fresh) == {"freshness": "success"}
    report = {row["table"]: row for row in xcom(fresh, "freshness")}
    assert set(report) == {"orders", "invoices", "invoice_lines", "events", "shipments"}
    assert {row["status"] for row in report.values()} == {PASS}
    assert report["invoices"]["exact_as_of"] == report["invoice_lines"]["exact_as_of"]
    ledger = databases.hook.receiver.ledger("orders")
    assert (
        report["orders"]["complete_as_of"]
        == ledger.claims(now(), limit=timedelta.max).complete_as_of.isoformat()
    )


def test_a_receiver_never_delivered_to_reports_every_table_missing(
    databases: Databases, airflow_home: Path
) -> None:
    """Not even the receiver's own tables exist yet: the report says so, table by table."""
    freshness = load_example(airflow_home, "freshness")
    run = databases.run(freshness.dag)
    assert states(run) == {"freshness": "failed"}
    text = xcom(run, "freshness", key="report")
    assert "0 PASS, 0 WARN, 5 ERROR" in text
    assert "ERROR orders: no contract registered in the receiver" in text


def test_a_table_older_than_its_limit_fails_with_the_report(
    databases: Databases, airflow_home: Path
) -> None:
    create_sources(databases)
    orders = load_example(airflow_home, "orders")
    assert states(databases.run(orders.daily))["publish"] == "success"
    check = write_dag(
        airflow_home,
        "dogana_test_freshness_limits",
        """
import datetime

from airflow.sdk import DAG

from dogana_provider.operators.freshness import FreshnessOperator

with DAG(
    "dogana_test_freshness_limits",
    schedule=None,
    start_date=datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc),
) as dag:
    FreshnessOperator(task_id="warn", tables=["orders"], warn_after=0, error_after=3600)
    FreshnessOperator(task_id="freshness", tables={"orders": {"error_after": 0}})
""",
    )
    run = databases.run(check.dag)
    assert states(run) == {"warn": "success", "freshness": "failed"}
    assert "ERROR orders: complete as of" in xcom(run, "freshness", key="report")
    [warned] = xcom(run, "warn")
    assert warned["status"] == WARN and warned["state"] == "complete"


def test_the_report_reads_like_dbt_source_freshness() -> None:
    from datetime import UTC, datetime

    from dogana_core import Contract, Gate, Ledger, Shape

    contract = Contract("orders", ("id",), {"full": Shape.complete()}, types={"id": "int"})
    at = datetime(2026, 11, 30, 0, 0, 2, tzinfo=UTC)
    ledger = Ledger.new(contract)
    ledger = ledger.follow(Gate.evaluate(ledger, contract.manifest("full", at, rows=3), now=at))
    check_at = at + timedelta(hours=30)
    results = [
        judge("orders", ledger, check_at, warn_after=timedelta(hours=26), error_after=None),
        judge("customers", None, check_at, warn_after=None, error_after=timedelta(hours=1)),
    ]
    report = freshness_report(results, check_at, "dogana_default").splitlines()
    assert report[0] == (
        "dogana freshness of 2 tables in receiver 'dogana_default' at 2026-12-01 06:00:02"
    )
    assert report[1].split() == [
        "table", "state", "complete", "as", "of", "deletions", "as", "of", "exact", "as", "of",
        "age", "warn", "after", "error", "after", "expectations", "status",
    ]  # fmt: skip
    assert report[3].split() == [
        "orders", "complete", "2026-11-30", "00:00:02", "2026-11-30", "00:00:02",
        "2026-11-30", "00:00:02", "1d", "6h", "1d", "2h", "-", "none_declared", "WARN",
    ]  # fmt: skip
    assert report[4].split()[:3] == ["customers", "missing", "-"]
    assert report[5] == "0 PASS, 1 WARN, 1 ERROR"
    assert report[6] == "  WARN orders: complete as of 1d 6h ago, more than 1d 2h"
    assert report[7].startswith("  ERROR customers: no contract registered")
    assert results[1].status == ERROR
