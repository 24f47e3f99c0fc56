"""Orders: a weekly full read and daily changes, deletions delivered from a soft-delete flag.

Two DAGs share one pipeline, plan -> extract -> gate -> publish, over one table:

    dogana_orders_daily        every day at 00:00 UTC: the rows changed since the last read,
                               flagged rows as tombstones
    dogana_orders_weekly_full  Sundays at 03:00 UTC: the whole table, which repairs anything the
                               daily reads could not see; trigger it by hand to resync

The source table (any SQLite, PostgreSQL or MySQL/MariaDB database)::

    CREATE TABLE orders (
        order_id     BIGINT PRIMARY KEY,
        customer     TEXT,
        amount_cents BIGINT,
        updated_at   TIMESTAMP WITH TIME ZONE NOT NULL,   -- moved by every change, UTC
        is_deleted   BOOLEAN NOT NULL DEFAULT FALSE       -- the soft-delete flag
    )

Why the daily read may deliver tombstones. The source never deletes an order: it sets
is_deleted, and the application moves updated_at in the same UPDATE. So a read of the rows whose
updated_at is after the last read sees every deletion since, and the receiver deletes those keys:
the table stays exact (complete and deletions at one instant) without reading it all. That holds
only while the three conditions of docs/concepts.md ("A soft-deleting source") hold: the flag
moves updated_at, nothing is removed physically (no purge, archive or cascade), and the flag is
on this table. A row removed with DELETE is invisible to a changes read; the published copy stays
until the weekly full read replaces the table. If your source purges rows, declare the changes
shape without tombstones and the dates will say so.

The extract checks the source's columns against the receiver's schema version before reading
(SCHEMA_POLICY below): a column added to or dropped from orders fails the run, naming it, and
nothing is read; `dogana schema dogana_default orders` lists the versions.

The gate also holds the orders to three business rules (EXPECTATIONS below): a negative amount
blocks the delivery, a missing customer is published with a warning, and an implausibly large
amount holds the delivery until a person releases or discards it.

Configuration: the Airflow connections ``dogana_source`` (the source database) and
``dogana_default`` (the receiver, where the published ``orders`` table and its ledger live), or
the ids in the environment variables DOGANA_SOURCE_CONN_ID and DOGANA_RECEIVER_CONN_ID. Delivered
files go to <[dogana] delivery_folder>/<dag_id>/<run_id>, file:///tmp/dogana/... by default; with
several workers, set it (AIRFLOW__DOGANA__DELIVERY_FOLDER) to an s3:// or gs:// URL or a shared
mount, where every worker reads them.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

from airflow.sdk import DAG, CronTriggerTimetable

from dogana_core import Contract, Shape
from dogana_provider.checks.expectations import Expectations
from dogana_provider.operators.arguments import RUN_END
from dogana_provider.operators.extract import ExtractOperator
from dogana_provider.operators.gate import GateOperator
from dogana_provider.operators.plan import PlanDeliveryOperator
from dogana_provider.operators.publish import PublishOperator

SOURCE_CONN_ID = os.environ.get("DOGANA_SOURCE_CONN_ID", "dogana_source")
RECEIVER_CONN_ID = os.environ.get("DOGANA_RECEIVER_CONN_ID", "dogana_default")

ORDERS = Contract(
    "orders",
    ("order_id",),
    {
        # The whole table: both dates rise to the read's instant. Ten times the cost of a
        # changes read, so the planner only picks it when nothing cheaper proves enough.
        "full": Shape.complete(cost=10),
        # Rows with updated_at after the last read, flagged rows as tombstones. The 15-minute
        # lookback rereads an overlap, to catch a transaction that stamped updated_at before the
        # last read and committed after it (docs/concepts.md, "Late commits and lookback").
        "changes": Shape.changes(
            checkpoint="timestamp", tombstones=True, lookback=timedelta(minutes=15)
        ),
    },
    cursor_column="updated_at",
    deleted_column="is_deleted",
    types={"order_id": "int", "updated_at": "datetime", "is_deleted": "bool"},
)

# Rules about the orders themselves, which no declaration proves: each says what its violation
# does. The gate runs them on the staged rows beside the row checks (docs/concepts.md, "Quality
# expectations"); a table declaring none has receipts saying none_declared.
EXPECTATIONS = Expectations.from_dict(
    {
        "column_mapping": {
            # A negative amount is a bug in the shop's code: refuse the delivery, keep
            # publishing nothing newer until the source is fixed (the last good copy stays).
            "amount_cents": {"min": {"geq_to": 0, "on_violation": "block"}},
            # An order without its customer is published, and every report counts it.
            "customer": {"null_check": {"equal_to": 0, "on_violation": "warn"}},
        },
        "checks": {
            # An order over 100,000.00 is possible but rare: a person looks before it is
            # published, then releases or discards the delivery (dogana hold ...).
            "amount_plausible": {
                "check_statement": "amount_cents <= 10000000",
                "on_violation": "hold",
            },
        },
    }
)


# What may change in the source's columns between two reads (docs/schema-policy.md).
SCHEMA_POLICY = {"columns": "freeze", "data_type": "evolve"}


def orders_pipeline(dag_id: str, cron: str, days: int, shape: str | None, doc: str) -> DAG:
    with DAG(
        dag_id,
        # A run at 00:00 covers the day before it: its data interval ends when it triggers.
        schedule=CronTriggerTimetable(cron, timezone="UTC", interval=timedelta(days=days)),
        start_date=datetime(2026, 1, 1, tzinfo=UTC),
        catchup=False,
        # One run at a time: each read starts where the last one's evidence ends.
        max_active_runs=1,
        tags=["dogana", "example"],
        doc_md=f"{doc}\n\n{__doc__}",
    ) as dag:
        plan = PlanDeliveryOperator(
            task_id="plan",
            contract=ORDERS,
            receiver_conn_id=RECEIVER_CONN_ID,
            # The run's promise: the published table is complete as of the run's end, its data
            # interval's end; a run triggered by hand without a logical date has no interval,
            # and its end is when it was triggered (run_after). A run whose end is already
            # covered (a backfill, a rerun) skips the rest.
            fresh_as_of=RUN_END,
            # None: the cheapest read that proves it (the full read on an empty ledger, the
            # changes after it); "full": always the whole table.
            shape=shape,
        )
        extract = ExtractOperator(
            task_id="extract",
            source_conn_id=SOURCE_CONN_ID,
            contract=ORDERS,
            # Before a row is read, the source's columns are compared with the schema version
            # the receiver holds (docs/schema-policy.md): a column added or dropped fails the
            # run, naming it, until a person looks; a wider decimal is taken and widened in the
            # published table. Without a policy: columns evolve, data_type freeze.
            receiver_conn_id=RECEIVER_CONN_ID,
            schema_policy=SCHEMA_POLICY,
        )
        gate = GateOperator(
            task_id="gate", receiver_conn_id=RECEIVER_CONN_ID, expectations=EXPECTATIONS
        )
        publish = PublishOperator(
            task_id="publish", receiver_conn_id=RECEIVER_CONN_ID, table="orders"
        )
        plan >> extract >> gate >> publish
    return dag


daily = orders_pipeline(
    "dogana_orders_daily",
    "0 0 * * *",
    1,
    None,
    "Daily: the orders changed since the last read, soft deletes as tombstones.",
)
# Sundays at 03:00, clear of the daily run at 00:00. Should the two ever overlap, the publication
# that comes second is decided again against the new ledger (never a stale plan), and a read
# older than what was just published is refused: that run fails, and the next one catches up.
weekly_full = orders_pipeline(
    "dogana_orders_weekly_full",
    "0 3 * * 0",
    7,
    "full",
    "Sundays: the whole orders table, which also removes rows deleted outside the flag.",
)
