"""JSON Lines files for the connector tests: written as another system would drop them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ORDERS_COLUMNS = {"order_id": "int", "amount": "float", "note": "str", "_op": "str"}


def order(order_id: int, op: str = "c", amount: float | None = None) -> dict[str, Any]:
    return {
        "order_id": order_id,
        "amount": float(order_id * 10) if amount is None else amount,
        "note": f"order {order_id}",
        "_op": op,
    }


def lines(records: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(record).encode() + b"\n" for record in records)


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_bytes(lines(records))
    return path


def append(path: Path, records: list[dict[str, Any]]) -> None:
    with path.open("ab") as handle:
        handle.write(lines(records))


def config(path: Path | str, **options: Any) -> dict[str, Any]:
    return {"path": str(path), "key": ["order_id"], "columns": dict(ORDERS_COLUMNS), **options}
