"""Contracts and delivered files for the row-check tests: real Parquet and CSV files on disk.

The orders rows and the file writer are shared with the command line's tests (order_files).
"""

from __future__ import annotations

from datetime import UTC, date, datetime

import pyarrow as pa
from order_files import ORDERS_SCHEMA, PRODUCED, csv_value, honest_orders, order, write

from dogana_core import Contract, Shape

T0 = datetime(2026, 10, 18, 2, 0, tzinfo=UTC)
T1 = PRODUCED  # the orders rows are updated an hour before it by default
SEPTEMBER = (date(2026, 9, 1), date(2026, 9, 30))

ORDERS = Contract(
    "orders",
    ("id",),
    {
        "full": Shape.complete(),
        "month": Shape.complete(window=True),
        "changes": Shape.changes(tombstones=True),
        "month_changes": Shape.changes(tombstones=True, window=True),
    },
    window_column="order_date",
    cursor_column="updated_at",
    deleted_column="is_deleted",
    types={"id": "int", "order_date": "date", "updated_at": "datetime", "is_deleted": "bool"},
)

# A feed of commit-ordered positions: an int cursor, sequence reads.
EVENTS = Contract(
    "events",
    ("account", "seq"),
    {"full": Shape.complete(), "feed": Shape.changes(checkpoint="sequence", tombstones=True)},
    cursor_column="seq",
    deleted_column="gone",
    types={"account": "str", "seq": "int", "gone": "bool"},
)

EVENTS_SCHEMA = pa.schema(
    [("account", pa.string()), ("seq", pa.int64()), ("gone", pa.bool_()), ("note", pa.string())]
)

__all__ = [
    "EVENTS",
    "EVENTS_SCHEMA",
    "ORDERS",
    "ORDERS_SCHEMA",
    "SEPTEMBER",
    "T0",
    "T1",
    "csv_value",
    "honest_orders",
    "order",
    "write",
]
