"""Events: an append-only table without a key, delivered hour by hour.

The source's event log only ever grows: rows are inserted, never updated or deleted, and two
equal events are two rows (the table has no key). Each run appends the events recorded since
the last read, so nothing is read twice and nothing is skipped:

    (start_at, first read]  (first read, second read]  (second read, third read]  ...

The source table::

    CREATE TABLE events (
        kind        TEXT NOT NULL,
        payload     TEXT,
        recorded_at TIMESTAMP WITH TIME ZONE NOT NULL   -- stamped by the database at insert, UTC
    )

Why a keyless append. With no key, a delivered row cannot replace an earlier one, so a changes
read can only add rows: dogana declares it as Shape.changes(checkpoint="timestamp") on a contract
with key (), and the receiver appends. Each read starts exactly where the last one ended; a
lookback is not allowed, because an event read twice would count twice. Two things follow:

- start_at is the start of the history the source keeps: the first read holds the events after
  it. Events recorded at or before start_at are never delivered.
- An event whose recorded_at is stamped before a read and committed after it is never
  delivered (docs/concepts.md, "Late commits and lookback"). Keep the transactions that insert
  events short, and stamp recorded_at in the database at insert, not in the client.

Configuration: the Airflow connections ``dogana_source`` and ``dogana_default``, or the ids in
DOGANA_SOURCE_CONN_ID and DOGANA_RECEIVER_CONN_ID (see orders.py).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

from airflow.sdk import DAG, CronTriggerTimetable

from dogana_core import Contract, Shape
from dogana_provider.operators.arguments import RUN_END
from dogana_provider.task_groups.delivery import delivery_task_group

SOURCE_CONN_ID = os.environ.get("DOGANA_SOURCE_CONN_ID", "dogana_source")
RECEIVER_CONN_ID = os.environ.get("DOGANA_RECEIVER_CONN_ID", "dogana_default")

EVENTS = Contract(
    "events",
    (),  # no key: every row is an event of its own
    {"appended": Shape.changes(checkpoint="timestamp")},
    cursor_column="recorded_at",
    types={"recorded_at": "datetime"},
    # The oldest event the source keeps is after this instant.
    start_at=datetime(2026, 1, 1, tzinfo=UTC),
)

with DAG(
    "dogana_events_hourly",
    schedule=CronTriggerTimetable("0 * * * *", timezone="UTC", interval=timedelta(hours=1)),
    start_date=datetime(2026, 1, 1, tzinfo=UTC),
    catchup=False,
    max_active_runs=1,  # each append starts where the last one ended: one at a time
    tags=["dogana", "example"],
    doc_md=__doc__,
) as dag:
    # plan, extract, gate and publish in the TaskGroup "events" (orders.py writes them out).
    delivery_task_group(
        EVENTS,
        source_conn_id=SOURCE_CONN_ID,
        receiver_conn_id=RECEIVER_CONN_ID,
        # Every event recorded up to the end of the run's hour (run_after for a run triggered
        # without a logical date) is published.
        fresh_as_of=RUN_END,
    )
