"""Contracts and delivered files for the row-check tests: real Parquet and CSV files on disk."""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from dogana_core import Contract, Shape

T0 = datetime(2026, 10, 18, 2, 0, tzinfo=UTC)
T1 = datetime(2026, 10, 19, 2, 0, tzinfo=UTC)
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

ORDERS_SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("order_date", pa.date32()),
        ("updated_at", pa.timestamp("us", tz="UTC")),
        ("is_deleted", pa.bool_()),
        ("amount", pa.float64()),
    ]
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


def order(
    id: int | None,
    day: int | None = 15,
    *,
    updated: datetime | None = None,
    deleted: bool | None = False,
    amount: float | None = 9.5,
) -> dict[str, Any]:
    """One row of ORDERS: an order of September `day`, updated an hour before T1 by default."""
    return {
        "id": id,
        "order_date": None if day is None else date(2026, 9, day),
        "updated_at": T1 - timedelta(hours=1) if updated is None else updated,
        "is_deleted": deleted,
        "amount": amount,
    }


def honest_orders() -> list[dict[str, Any]]:
    return [order(1, 1), order(2, 15), order(3, 30)]


def write(path: Path, rows: Sequence[Mapping[str, Any]], schema: pa.Schema = ORDERS_SCHEMA) -> Path:
    """Write rows as Parquet or CSV, chosen by the path's suffix."""
    if path.suffix == ".parquet":
        pq.write_table(pa.Table.from_pylist(list(rows), schema=schema), path)
        return path
    with open(path, "w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(schema.names)
        for row in rows:
            writer.writerow([csv_value(row.get(name)) for name in schema.names])
    return path


def csv_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return str(value)
