"""A test's DAG reading an HTTP JSON API into the examples' receiver: api_orders.

The API is tests/api_server.py, started by the session on 127.0.0.1 (conftest.py); its change
log of orders is walked by cursor, each page's "as_of" the server's instant, through the HTTP
connection dogana_test_api, kept in the metadata database as `airflow connections add` keeps it.
The first read of the log from its start is the table at the last page's instant (export); the
runs after it read the log after the held position (feed), as a change-log API's example would.
"""

from __future__ import annotations

import datetime

from airflow.sdk import DAG

from dogana_core import Contract, Shape
from dogana_provider.operators.arguments import RUN_END
from dogana_provider.task_groups.delivery import delivery_task_group

API_CONN_ID = "dogana_test_api"
RECEIVER_CONN_ID = "dogana_default"
API_ORDERS = Contract(
    "api_orders",
    ("order_id",),
    {
        "export": Shape.complete(cost=10),
        "feed": Shape.changes(checkpoint="generation", tombstones=True),
    },
    deleted_column="deleted",
    types={"order_id": "int", "deleted": "bool"},
)
START = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)

with DAG("dogana_test_api_orders", schedule=None, start_date=START, catchup=False) as dag:
    delivery_task_group(
        API_ORDERS,
        receiver_conn_id=RECEIVER_CONN_ID,
        fresh_as_of=RUN_END,
        extract={
            "connector": {
                "kind": "http",
                "conn_id": API_CONN_ID,
                "endpoint": "/feed",
                "stream": "orders",
                "columns": {"seq": "int", "order_id": "int", "amount": "float", "deleted": "bool"},
                "key": ["order_id"],
                "pagination": {"type": "cursor", "size": 3, "cursor_field": "seq"},
                "feed": True,
                "deleted_field": "deleted",
                "instant_field": "as_of",
            },
            "stream": "orders",
        },
    )
