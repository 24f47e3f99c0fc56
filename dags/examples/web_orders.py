"""Web orders: a JSON Lines change log another system appends to, published as a table.

The web shop writes every change of an order as one line of a file it only ever appends to
(a local path, or any fsspec URL the delivery folder reaches: s3://, gs://)::

    {"order_id": 7, "amount": 19.5, "status": "paid", "_op": "u"}

``_op`` is c (created), u (updated) or d (deleted), and the file starts at the shop's first
order. No SQL database stands between it and the receiver: the JSON Lines connector reads it
(dogana_provider/connectors/jsonl.py), and each read declares what it proves.

Why these shapes. The file holds the table's whole history, so a read of all of it is the
table at that read (``export``, a complete read); it issues its position, a token of the byte
offset after the last line read. From then on each run reads only the lines after the token
the ledger holds (``feed``, checkpoint generation) and issues the next one; a line whose _op is
d is a tombstone, so the feed declares tombstones and keeps deletions current. The planner
takes the export when the table has no token yet (or a person reset it), the feed otherwise.

What the connector refuses rather than deliver something untrue: a file shorter than the held
offset (file_shrank) or whose lines at the offset changed (file_rewritten), which need the
export again; a line that does not fit the declared columns, or has no order_id, naming the
line. A last line still being written waits for its newline and for the next run.

Configuration: the file in DOGANA_WEB_ORDERS_JSONL, the receiver in the Airflow connection
``dogana_default`` (or DOGANA_RECEIVER_CONN_ID).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

from airflow.sdk import DAG, CronTriggerTimetable

from dogana_core import Contract, Shape
from dogana_provider.operators.arguments import RUN_END
from dogana_provider.task_groups.delivery import delivery_task_group

RECEIVER_CONN_ID = os.environ.get("DOGANA_RECEIVER_CONN_ID", "dogana_default")
WEB_ORDERS_JSONL = os.environ.get("DOGANA_WEB_ORDERS_JSONL", "/srv/drops/web_orders.jsonl")

WEB_ORDERS = Contract(
    "web_orders",
    ("order_id",),
    {
        "export": Shape.complete(cost=10),
        "feed": Shape.changes(checkpoint="generation", tombstones=True),
    },
    deleted_column="deleted",  # the connector's bool column: true where _op is d
    types={"order_id": "int", "deleted": "bool"},
)

with DAG(
    "dogana_web_orders",
    schedule=CronTriggerTimetable("*/15 * * * *", timezone="UTC", interval=timedelta(minutes=15)),
    start_date=datetime(2026, 1, 1, tzinfo=UTC),
    catchup=False,
    max_active_runs=1,  # each feed starts from the token the last one left
    tags=["dogana", "example"],
    doc_md=__doc__,
) as dag:
    delivery_task_group(
        WEB_ORDERS,
        receiver_conn_id=RECEIVER_CONN_ID,
        fresh_as_of=RUN_END,
        extract={
            "connector": {
                "kind": "jsonl",
                "path": WEB_ORDERS_JSONL,
                "key": ["order_id"],
                "columns": {"order_id": "int", "amount": "float", "status": "str", "_op": "str"},
                "whole_history": True,
            },
            "stream": "web_orders",
        },
    )
