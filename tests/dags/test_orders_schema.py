"""dags/examples/orders.py declares a schema policy: a column added to the source fails the
extract before a row is read, in a real dag.test() run, and changes nothing in the receiver."""

from __future__ import annotations

from pathlib import Path

import pytest
from example_runs import Databases, load_example, now, states

pytestmark = pytest.mark.airflow


@pytest.mark.parametrize("databases", ["sqlite"], indirect=True)
def test_a_column_the_orders_policy_freezes_fails_the_extract_before_a_row_is_read(
    databases: Databases, airflow_home: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    databases.create(
        "CREATE TABLE orders (order_id BIGINT PRIMARY KEY, customer TEXT, amount_cents BIGINT, "
        "updated_at TIMESTAMPTZ NOT NULL, is_deleted BOOLEAN NOT NULL)"
    )
    databases.source("INSERT INTO orders VALUES (?, ?, ?, ?, ?)", (1, "ada", 1200, now(), False))
    example = load_example(airflow_home, "orders")
    assert set(states(databases.run(example.daily)).values()) == {"success"}
    columns = ("order_id", "customer", "amount_cents")
    published, receipts = databases.published("orders", columns), databases.receipts("orders")

    databases.source("ALTER TABLE orders ADD COLUMN coupon TEXT")
    databases.source(
        "INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?)", (2, "bo", 5, now(), False, "x")
    )
    capfd.readouterr()
    refused = databases.run(example.daily)
    logged = "".join(capfd.readouterr())
    assert "coupon added (str): refused (columns freeze)" in logged
    assert states(refused) == {
        "plan": "success",
        "extract": "failed",
        "gate": "upstream_failed",
        "publish": "upstream_failed",
    }
    assert databases.published("orders", columns) == published
    assert databases.receipts("orders") == receipts
