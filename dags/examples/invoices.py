"""Invoices and their lines: two tables delivered together, so a report sees them at one instant.

A report joining invoices to their lines is right only if both tables show the source at the same
instant: lines read after their invoice was deleted, or an invoice read before its new lines were
added, give totals the source never had. So the two tables are one group:

    plan      plan_together: one boundary, and for each table the cheapest read that makes it
              exact (complete and deletions) at that instant
    extract   ONE snapshot of the source (REPEATABLE READ on PostgreSQL, a consistent snapshot
              on MySQL/MariaDB, one read transaction on SQLite), one produced_at for both files
    gate      decided as one: if either file is refused, both are
    publish   both tables in one commit, one Asset event per table
    wait      ClaimsSensor: both tables exact at one instant no earlier than the run's end
    report    the totals, stamped with that instant

The source tables::

    CREATE TABLE invoices (
        invoice_id BIGINT PRIMARY KEY,
        customer   TEXT,
        updated_at TIMESTAMP WITH TIME ZONE NOT NULL,   -- moved by every change, UTC
        is_deleted BOOLEAN NOT NULL DEFAULT FALSE       -- cancelling an invoice sets the flag
    );
    CREATE TABLE invoice_lines (
        line_id      BIGINT PRIMARY KEY,
        invoice_id   BIGINT NOT NULL,
        amount_cents BIGINT NOT NULL
    );

Why the shapes differ. Invoices are soft-deleted with updated_at moved (see orders.py), so their
changes, tombstones included, make them exact cheaply. Lines carry no timestamp and are deleted
physically when an invoice is edited or cancelled: only a full read proves them, so it is their
only shape. Each table keeps its own shapes; the group only makes them share one snapshot.

Configuration: the Airflow connections ``dogana_source`` and ``dogana_default``, or the ids in
DOGANA_SOURCE_CONN_ID and DOGANA_RECEIVER_CONN_ID (see orders.py).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import DAG, CronTriggerTimetable, task

from dogana_core import Contract, Shape
from dogana_provider.hooks.dogana import DoganaHook
from dogana_provider.operators.arguments import RUN_END
from dogana_provider.sensors.claims import ClaimsSensor
from dogana_provider.task_groups.delivery import delivery_task_group

SOURCE_CONN_ID = os.environ.get("DOGANA_SOURCE_CONN_ID", "dogana_source")
RECEIVER_CONN_ID = os.environ.get("DOGANA_RECEIVER_CONN_ID", "dogana_default")

INVOICES = Contract(
    "invoices",
    ("invoice_id",),
    {
        "full": Shape.complete(cost=10),
        "changes": Shape.changes(checkpoint="timestamp", tombstones=True),
    },
    cursor_column="updated_at",
    deleted_column="is_deleted",
    types={"invoice_id": "int", "updated_at": "datetime", "is_deleted": "bool"},
)
LINES = Contract(
    "invoice_lines",
    ("line_id",),
    {"full": Shape.complete()},
    types={"line_id": "int"},
)
TABLES = [INVOICES.table, LINES.table]

with DAG(
    "dogana_invoices",
    schedule=CronTriggerTimetable("30 1 * * *", timezone="UTC", interval=timedelta(days=1)),
    start_date=datetime(2026, 1, 1, tzinfo=UTC),
    catchup=False,
    # One run at a time: nothing else publishes these tables between the sensor and the report.
    max_active_runs=1,
    tags=["dogana", "example"],
    doc_md=__doc__,
) as dag:
    # plan, extract, gate and publish of the group, in the TaskGroup "invoices"; its publish
    # emits one Asset event per table (orders.py writes the four tasks out).
    delivery = delivery_task_group(
        group=[INVOICES, LINES],
        group_id="invoices",
        source_conn_id=SOURCE_CONN_ID,
        receiver_conn_id=RECEIVER_CONN_ID,
        # Both tables exact at one instant no earlier than the run's end (its interval's end, or
        # run_after for a run triggered without a logical date); when they already are (a
        # rerun), the delivery tasks skip and the report still runs.
        exact_at=RUN_END,
    )
    wait = ClaimsSensor(
        task_id="wait_exact",
        tables=TABLES,
        receiver_conn_id=RECEIVER_CONN_ID,
        exact_at=RUN_END,
        # Runs whether this run published or found the tables already exact; not after a
        # failed delivery.
        trigger_rule="none_failed",
        # Frees the worker slot between pokes and needs no triggerer; deferrable=True instead
        # waits in the triggerer (ClaimsTrigger), polling every poke_interval.
        mode="reschedule",
        poke_interval=300,
        timeout=6 * 3600,
    )

    @task
    def report(claims: dict[str, Any]) -> dict[str, Any]:
        """Totals per customer, valid as of the one instant both tables show."""
        exact_as_of = claims["exact_as_of"]  # ISO 8601, as in a template; None if not exact
        if exact_as_of is None:
            raise ValueError("invoices and lines share no instant: no report can be right")
        rows = (
            DoganaHook(RECEIVER_CONN_ID)
            .get_db_hook()
            .get_records(
                "SELECT i.customer, COUNT(DISTINCT i.invoice_id), SUM(l.amount_cents) "
                "FROM invoices i JOIN invoice_lines l ON l.invoice_id = i.invoice_id "
                "GROUP BY i.customer ORDER BY i.customer"
            )
        )
        totals = {customer: int(total) for customer, _, total in rows}
        print(f"invoice totals as of {exact_as_of}:")
        for customer, invoices, total in rows:
            print(f"  {customer:<12} {invoices:>3} invoices {int(total) / 100:>12,.2f}")
        return {"exact_as_of": exact_as_of, "totals": totals}

    delivery >> wait
    report(wait.output)
