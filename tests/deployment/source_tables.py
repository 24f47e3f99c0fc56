"""The source systems under the real scheduler, in SQLite: the examples' and the test DAGs';
and the web shop's JSON Lines change log of dags/examples/web_orders.py.

The examples' five tables as their docstrings declare them (SQLite's spelling of their types),
and the test DAGs' (tests/deployment/dags/) parcels, accounts and item0 to item7, a few rows
each, and deposits, whose amounts the gate's expectations judge (dags/gated.py); timestamps
written by the application as ISO 8601 UTC with the offset. Only test_gates.py changes a row
(a deposit's amount) while the layer runs: what is tested is that each DAG runs and publishes
under a real scheduler, not what its reads prove (tests/dags/ does that, run by run).
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

# The tables as examples/demo.py creates them: WAL, so that the extract tasks of several DAGs
# read at once without blocking one another.
SCHEMA = Path(__file__).resolve().parents[2] / "examples" / "source_tables.sqlite.sql"


def fill_examples(connection: sqlite3.Connection) -> None:
    """Create the examples' five tables in an empty database, with rows, committed."""
    stamp = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    today = datetime.now(UTC).date()
    connection.executescript(SCHEMA.read_text())
    connection.executemany(
        "INSERT INTO orders VALUES (?, ?, ?, ?, 0)",
        [(1, "ada", 1200, stamp), (2, "grace", 800, stamp), (3, "edsger", 450, stamp)],
    )
    connection.executemany(
        "INSERT INTO invoices (invoice_id, customer, updated_at, is_deleted) VALUES (?, ?, ?, 0)",
        [(1, "ada", stamp), (2, "grace", stamp)],
    )
    connection.executemany(
        "INSERT INTO invoice_lines VALUES (?, ?, ?)", [(10, 1, 1000), (11, 1, 250), (20, 2, 4000)]
    )
    connection.executemany(
        "INSERT INTO events VALUES (?, ?, ?)", [("view", "home", stamp), ("click", "buy", stamp)]
    )
    connection.executemany(
        "INSERT INTO shipments VALUES (?, ?, ?, ?)",
        [
            (1, today.isoformat(), 500, stamp),
            (2, (today - timedelta(days=12)).isoformat(), 1200, stamp),
        ],
    )
    connection.commit()


def fill_tests(connection: sqlite3.Connection) -> None:
    """Create the test DAGs' tables in an empty database, with rows, committed."""
    connection.execute("PRAGMA journal_mode = WAL")
    for table in ["parcels", "accounts", *(f"item{i}" for i in range(8))]:
        connection.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, name TEXT)")
        connection.executemany(
            f"INSERT INTO {table} VALUES (?, ?)", [(1, f"{table} one"), (2, f"{table} two")]
        )
    connection.execute("CREATE TABLE deposits (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL)")
    # 2,500,000 is above what the gate lets through unseen: the first delivery is held.
    connection.executemany("INSERT INTO deposits VALUES (?, ?)", [(1, 500), (2, 2_500_000)])
    connection.commit()


WEB_ORDERS = [
    {"order_id": 1, "amount": 10.0, "status": "new", "_op": "c"},
    {"order_id": 2, "amount": 20.0, "status": "new", "_op": "c"},
    {"order_id": 3, "amount": 30.0, "status": "new", "_op": "c"},
    {"order_id": 1, "amount": 10.0, "status": "paid", "_op": "u"},
    {"order_id": 2, "amount": None, "status": None, "_op": "d"},
    {"order_id": 4, "amount": 40.0, "status": "new", "_op": "c"},
]
"""The web shop's changes, in the order it appended them: an update and a deletion among them."""


def write_web_orders(path: Path) -> None:
    """The change log as the web shop drops it: one JSON object a line."""
    path.write_text("".join(json.dumps(change) + "\n" for change in WEB_ORDERS))


def web_orders_now() -> dict[int, dict[str, Any]]:
    """The orders the change log leaves: each order's last change, deleted ones gone."""
    found: dict[int, dict[str, Any]] = {}
    for change in WEB_ORDERS:
        if change["_op"] == "d":
            found.pop(change["order_id"], None)
        else:
            found[change["order_id"]] = change
    return found
