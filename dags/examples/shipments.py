"""Shipments: a rolling 30-day window, read whole when it moves and by its changes in between.

The source revises recent shipments (late scans, corrected weights) and never touches old ones,
so only the last 30 days of ship_date are worth reading again. The table is divided by
ship_date, and each hourly run asks for the last 30 days to be complete as of the end of its
hour. The planner picks the read:

    the first run of a UTC day   the window moved: its newest day was never read, and changes
                                 prove nothing where nothing was proven, so the whole window is
                                 read (shape last_30_days). Both dates rise: rows deleted from
                                 the window since are removed.
    every other run              the rows of the window changed since the last read, started 30
                                 minutes early (lookback) to catch late commits (window_changes).
                                 Only complete_as_of rises: a row deleted from the source stays
                                 published until the next whole-window read, and the claims say
                                 so (state patched, deletions_as_of at that read).

Days that left the window keep the dates of the last read that covered them; days never read are
unknown, not empty. A reader of the whole table is not served by this DAG (see docs/concepts.md,
"The last 30 days every night").

The source table::

    CREATE TABLE shipments (
        shipment_id BIGINT PRIMARY KEY,
        ship_date   DATE NOT NULL,                      -- set once, never changed
        weight_g    BIGINT,
        updated_at  TIMESTAMP WITH TIME ZONE NOT NULL   -- moved by every change, UTC
    )

ship_date must never change: a row moving between days read at different instants can be
missing from both. Use the date the shipment was created or shipped, never an update time.

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
DAYS = 30

SHIPMENTS = Contract(
    "shipments",
    ("shipment_id",),
    {
        # Every shipment whose ship_date is in the window: inside it, the source at the read.
        "last_30_days": Shape.complete(window=True, window_size=timedelta(days=DAYS), cost=10),
        # The window's rows with updated_at after the last read minus the lookback.
        "window_changes": Shape.changes(
            checkpoint="timestamp",
            window=True,
            window_size=timedelta(days=DAYS),
            lookback=timedelta(minutes=30),
        ),
    },
    window_column="ship_date",
    cursor_column="updated_at",
    types={"shipment_id": "int", "ship_date": "date", "updated_at": "datetime"},
)


def last_days(end: datetime, days: int = DAYS) -> list[str]:
    """[low, high] of ship_date: the `days` UTC days ending on end's date, both included."""
    high = end.astimezone(UTC).date()
    return [(high - timedelta(days=days - 1)).isoformat(), high.isoformat()]


with DAG(
    "dogana_shipments_window",
    schedule=CronTriggerTimetable("0 * * * *", timezone="UTC", interval=timedelta(hours=1)),
    start_date=datetime(2026, 1, 1, tzinfo=UTC),
    catchup=False,
    max_active_runs=1,
    user_defined_macros={"last_days": last_days},
    tags=["dogana", "example"],
    doc_md=__doc__,
) as dag:
    # plan, extract, gate and publish in the TaskGroup "shipments" (orders.py writes them out).
    delivery_task_group(
        SHIPMENTS,
        source_conn_id=SOURCE_CONN_ID,
        receiver_conn_id=RECEIVER_CONN_ID,
        fresh_as_of=RUN_END,
        # The window ends on the date of the run's end: its interval's end, or, for a run
        # triggered without a logical date, its run_after (RUN_END spelled inside the call).
        window="{{ last_days(data_interval_end | default(dag_run.run_after, true)) }}",
    )
