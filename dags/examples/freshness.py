"""Freshness: every hour, every table's claims in one report; the run fails when one is too old.

What dbt's ``source freshness`` does for loaded_at columns, stated from the ledgers: for each
table its state, complete_as_of (nothing missing as of), deletions_as_of (nothing deleted kept
as of), exact_as_of (the source at one instant), its age and its limits, then PASS, WARN or
ERROR. A table older than its error limit, a table with a region never delivered, or a table
never registered fails the task, and the task's message is the whole report:

    dogana freshness of 5 tables in receiver 'dogana_default' at 2026-11-30 18:15:00
    table          state     complete as of       deletions as of      exact as of          age
    -------------  --------  -------------------  -------------------  -------------------  ------
    orders         complete  2026-11-30 00:00:02  2026-11-30 00:00:02  2026-11-30 00:00:02  18h 14m
    shipments      patched   2026-11-30 14:00:03  2026-11-30 00:00:04  -                    4h 14m
    ...            (and the columns warn after, error after, status)
    4 PASS, 0 WARN, 1 ERROR
      ERROR shipments: complete as of 4h 14m ago, more than 4h 00m

The limits are the reader's, not the tables': each says how stale a table may be for what reads
it here, after the schedule of the DAG that loads it (a daily load is a day old before its next
run). The shipments table is judged over the window its DAG keeps, the last 30 days: outside it
nothing is proven, and that is not a failure of the load.

Configuration: the Airflow connection ``dogana_default``, or the id in DOGANA_RECEIVER_CONN_ID.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

from airflow.sdk import DAG, CronTriggerTimetable

from dogana_provider.operators.freshness import FreshnessOperator

RECEIVER_CONN_ID = os.environ.get("DOGANA_RECEIVER_CONN_ID", "dogana_default")
DAILY = {"warn_after": timedelta(hours=26), "error_after": timedelta(hours=50)}
HOURLY = {"warn_after": timedelta(hours=2), "error_after": timedelta(hours=4)}


def last_days(end: datetime, days: int = 30) -> list[str]:
    """[low, high] of a date window: the `days` UTC days ending on end's date."""
    high = end.astimezone(UTC).date()
    return [(high - timedelta(days=days - 1)).isoformat(), high.isoformat()]


with DAG(
    "dogana_freshness",
    schedule=CronTriggerTimetable("15 * * * *", timezone="UTC", interval=timedelta(hours=1)),
    start_date=datetime(2026, 1, 1, tzinfo=UTC),
    catchup=False,
    user_defined_macros={"last_days": last_days},
    tags=["dogana", "example"],
    doc_md=__doc__,
) as dag:
    FreshnessOperator(
        task_id="freshness",
        receiver_conn_id=RECEIVER_CONN_ID,
        tables={
            "orders": DAILY,
            "invoices": DAILY,
            "invoice_lines": DAILY,
            "events": HOURLY,
            # The last 30 days up to the run's end (run_after for a run without a logical date).
            "shipments": {
                **HOURLY,
                "window": "{{ last_days(data_interval_end | default(dag_run.run_after, true)) }}",
            },
        },
        retries=0,  # a stale table is not a transient failure: report it once
    )
