"""Rows of an orders table, and real Parquet and CSV files of them, for the tests that read
delivered files: the row checks (tests/provider) and the `dogana` command line (tests/cli).

Importable from any test folder: pytest puts tests/ on sys.path when it loads tests/conftest.py.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

PRODUCED = datetime(2026, 10, 19, 2, 0, tzinfo=UTC)
"""The read boundary the rows are drawn against: each is updated an hour before it by default."""

ORDERS_SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("order_date", pa.date32()),
        ("updated_at", pa.timestamp("us", tz="UTC")),
        ("is_deleted", pa.bool_()),
        ("amount", pa.float64()),
    ]
)


def order(
    id: int | None,
    day: int | None = 15,
    *,
    updated: datetime | None = None,
    deleted: bool | None = False,
    amount: float | None = 9.5,
) -> dict[str, Any]:
    """One order of September `day`, updated an hour before PRODUCED by default."""
    return {
        "id": id,
        "order_date": None if day is None else date(2026, 9, day),
        "updated_at": PRODUCED - timedelta(hours=1) if updated is None else updated,
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
