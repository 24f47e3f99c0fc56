"""dags/examples/orders.py: daily changes with soft-delete tombstones, a weekly full read.

Every run is a real dag.test() run of the example file, on SQLite and on PostgreSQL, against a
source the test changes between runs.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from example_runs import (
    Databases,
    asset_events,
    cheapen,
    load_example,
    now,
    redeliver,
    states,
    xcom,
)

from dogana_core.gate import Outcome, Receipt
from dogana_core.manifest import Manifest

pytestmark = pytest.mark.airflow

TASKS = ("plan", "extract", "gate", "publish")
COLUMNS = ("order_id", "customer", "amount_cents")


def live(databases: Databases) -> set[tuple[object, ...]]:
    """What the source holds: its rows whose flag is false."""
    return set(
        databases.source_rows(
            "SELECT order_id, customer, amount_cents FROM orders WHERE NOT is_deleted"
        )
    )


def put(databases: Databases, *rows: tuple[int, str, int]) -> None:
    """Insert or update orders, moving updated_at as the application does."""
    for order_id, customer, amount in rows:
        databases.source("DELETE FROM orders WHERE order_id = ?", (order_id,))
        databases.source(
            "INSERT INTO orders VALUES (?, ?, ?, ?, ?)", (order_id, customer, amount, now(), False)
        )


def soft_delete(databases: Databases, order_id: int) -> None:
    """The source's delete: the flag set and updated_at moved in one UPDATE."""
    databases.source(
        "UPDATE orders SET is_deleted = ?, updated_at = ? WHERE order_id = ?",
        (True, now(), order_id),
    )


def exact_at(databases: Databases) -> datetime | None:
    return databases.claims("orders").exact_as_of


def test_orders_daily_changes_and_weekly_full(databases: Databases, airflow_home: Path) -> None:
    databases.create(
        "CREATE TABLE orders (order_id BIGINT PRIMARY KEY, customer TEXT, amount_cents BIGINT, "
        "updated_at TIMESTAMPTZ NOT NULL, is_deleted BOOLEAN NOT NULL)"
    )
    put(databases, (1, "ada", 1200), (2, "grace", 800), (3, "edsger", 450))
    example = load_example(airflow_home, "orders")

    # Day 1. An empty ledger: the planner's cheapest read that proves anything is the full one.
    first = databases.run(example.daily)
    assert states(first) == dict.fromkeys(TASKS, "success")
    delivered = Manifest.from_dict(xcom(first, "extract")["manifest"])
    assert delivered.shape == "full" and (delivered.rows, delivered.tombstones) == (3, 0)
    assert databases.published("orders", COLUMNS) == live(databases)
    assert exact_at(databases) == delivered.produced_at
    assert delivered.produced_at >= first.data_interval_end

    # Day 2. An insert, an update, and a soft delete: the changes read carries the flagged row
    # as a tombstone, and the table is exact again at the new read's instant.
    put(databases, (4, "barbara", 3000), (2, "grace", 950))
    soft_delete(databases, 3)
    second = databases.run(example.daily)
    assert states(second) == dict.fromkeys(TASKS, "success")
    changes = Manifest.from_dict(xcom(second, "extract")["manifest"])
    # The 15-minute lookback starts the read before the last one ended, so order 1, stamped
    # seconds before it, is read again beside orders 2 and 4; order 3 is a tombstone.
    assert changes.since == delivered.produced_at - timedelta(minutes=15)
    assert changes.shape == "changes" and (changes.rows, changes.tombstones) == (3, 1)
    assert databases.published("orders", COLUMNS) == live(databases)
    assert exact_at(databases) == changes.produced_at
    event = asset_events("dogana://dogana_default/orders")[-1]
    assert event["exact_as_of"] == changes.produced_at.isoformat()

    # A rerun of an interval the ledger already covers (a backfill) plans nothing.
    backfill = databases.run(example.daily, logical_date=datetime(2026, 11, 2, tzinfo=UTC))
    assert states(backfill) == dict.fromkeys(TASKS, "skipped")
    assert exact_at(databases) == changes.produced_at

    # Day 3. A DELETE breaks the source's promise: the changes read cannot see it, so the row
    # stays published while the dates say exact. That is what the weekly full read repairs.
    databases.source("DELETE FROM orders WHERE order_id = ?", (1,))
    put(databases, (5, "donald", 120))
    third = databases.run(example.daily)
    assert states(third) == dict.fromkeys(TASKS, "success")
    assert databases.published("orders", COLUMNS) == live(databases) | {(1, "ada", 1200)}

    sunday = databases.run(example.weekly_full)
    assert states(sunday) == dict.fromkeys(TASKS, "success")
    full = Manifest.from_dict(xcom(sunday, "extract")["manifest"])
    assert full.shape == "full" and full.rows == len(live(databases))
    assert databases.published("orders", COLUMNS) == live(databases)
    assert exact_at(databases) == full.produced_at
    assert databases.hook.receiver.verify("orders")

    # The same delivery gated and published again is a replay: nothing changes.
    ledger = databases.hook.receiver.ledger("orders")
    again = redeliver(databases, airflow_home, xcom(sunday, "extract"))
    assert states(again) == {"gate": "success", "publish": "success"}
    assert Receipt.from_dict(xcom(again, "publish")).outcome is Outcome.REPLAYED
    assert databases.hook.receiver.ledger("orders") == ledger
    assert databases.published("orders", COLUMNS) == live(databases)


def test_a_tampered_orders_file_is_rejected_and_nothing_is_published(
    databases: Databases, airflow_home: Path
) -> None:
    databases.create(
        "CREATE TABLE orders (order_id BIGINT PRIMARY KEY, customer TEXT, amount_cents BIGINT, "
        "updated_at TIMESTAMPTZ NOT NULL, is_deleted BOOLEAN NOT NULL)"
    )
    put(databases, (1, "ada", 1200), (2, "grace", 800))
    example = load_example(airflow_home, "orders")
    assert states(databases.run(example.daily)) == dict.fromkeys(TASKS, "success")
    before = databases.published("orders", COLUMNS)
    ledger = databases.hook.receiver.ledger("orders")

    # The next read is extracted, and its file altered on its way to the gate.
    put(databases, (3, "edsger", 450), (1, "ada", 1300))
    extracted = databases.run(example.daily, mark_success_pattern="^(gate|publish)$")
    delivery = xcom(extracted, "extract")
    cheapen(delivery)

    refused = redeliver(databases, airflow_home, delivery)
    assert states(refused) == {"gate": "failed", "publish": "upstream_failed"}
    last = databases.receipts("orders")[-1]
    assert last.outcome is Outcome.REJECTED
    assert last.manifest == Manifest.from_dict(delivery["manifest"])
    assert {check.name for check in last.failed} == {"content_hash"}
    assert databases.published("orders", COLUMNS) == before
    assert databases.hook.receiver.ledger("orders") == ledger
