"""API orders: a shop's change-log API, walked by cursor, published as a table.

The shop's API lists every change of an order in commit order, page by page, each record
nested as the shop keeps it::

    GET /v1/order-changes?limit=100[&cursor=TOKEN | &after=SEQ]
    {"data": [{"seq": 8, "deleted": false,
               "order": {"id": 3, "amount": 30.0, "customer": {"id": 1003, "country": "FR"}}}],
     "next_cursor": "...", "as_of": "2026-12-02T10:15:00.123456+00:00"}

``next_cursor`` is the server's continuation token (the last page has none), ``seq`` the
change's place in commit order (the API also takes it as ``after``), ``as_of`` the server's
instant. The HTTP connector (dogana_provider/connectors/http.py) reads it through the Airflow
http connection ``shop_api`` (its host, auth and headers), each column from its field by the
``paths`` below, and declares what each read proves.

Why these shapes. Only a change log walked in commit order proves anything: read from its
start, folded, it is the table at the last page's instant (``export``, a complete read, dated
by the server's ``as_of`` of that page, never the worker's clock); from the position the ledger
holds, it is the changes since (``feed``, checkpoint generation), a ``deleted`` change a
tombstone. The planner takes the export when the table has no position yet, the feed otherwise.
A plain collection (GET /v1/orders?page=N) is not one snapshot: rows created or deleted between
pages make it a set the shop held at no instant, so its read proves no shape and the extract
refuses it (docs/concepts.md, "A paged API is not one snapshot"). Do not point this DAG at one.

What the connector refuses rather than deliver something untrue: a body that is not JSON, JSON
cut short, a record whose field does not fit its column (naming the record and the path) or
that has no order.id; 429 and 5xx are retried, waiting what Retry-After asks.

Configuration: the API in the Airflow connection ``shop_api`` (or DOGANA_API_CONN_ID), e.g.
``airflow connections add shop_api --conn-type http --conn-host api.shop.example
--conn-schema https --conn-password TOKEN``; the receiver in ``dogana_default`` (or
DOGANA_RECEIVER_CONN_ID).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

from airflow.sdk import DAG, CronTriggerTimetable

from dogana_core import Contract, Shape
from dogana_provider.operators.arguments import RUN_END
from dogana_provider.task_groups.delivery import delivery_task_group

API_CONN_ID = os.environ.get("DOGANA_API_CONN_ID", "shop_api")
RECEIVER_CONN_ID = os.environ.get("DOGANA_RECEIVER_CONN_ID", "dogana_default")

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

with DAG(
    "dogana_api_orders",
    schedule=CronTriggerTimetable("*/15 * * * *", timezone="UTC", interval=timedelta(minutes=15)),
    start_date=datetime(2026, 1, 1, tzinfo=UTC),
    catchup=False,
    max_active_runs=1,  # each feed starts from the position the last one left
    tags=["dogana", "example"],
    doc_md=__doc__,
) as dag:
    delivery_task_group(
        API_ORDERS,
        receiver_conn_id=RECEIVER_CONN_ID,
        fresh_as_of=RUN_END,
        extract={
            "connector": {
                "kind": "http",
                "conn_id": API_CONN_ID,
                "endpoint": "/v1/order-changes",
                "stream": "orders",
                "columns": {
                    "seq": "int",
                    "order_id": "int",
                    "amount": "float",
                    "customer_id": "int",
                    "country": "str",
                    "deleted": "bool",
                },
                "paths": {  # each column's field in the nested record
                    "order_id": "order.id",
                    "amount": "order.amount",
                    "customer_id": "order.customer.id",
                    "country": "order.customer.country",
                },
                "key": ["order_id"],
                # The server's token, and seq where the last page gives none: a resume never
                # restarts from the beginning.
                "pagination": {"type": "cursor", "size": 100, "cursor_field": "seq"},
                "feed": True,  # a change log in commit order: the only read that proves a shape
                "deleted_field": "deleted",
                "instant_field": "as_of",  # else the Date header; never the worker's clock
            },
            "stream": "orders",
        },
    )
