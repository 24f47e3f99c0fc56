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


def orders_contract(table: str = "orders") -> Any:
    """A change log's contract: an export issuing a token, then a token feed with tombstones."""
    from dogana_core import Contract, Shape

    return Contract(
        table,
        ("order_id",),
        {
            "export": Shape.complete(cost=10),
            "feed": Shape.changes(checkpoint="generation", tombstones=True),
        },
        deleted_column="deleted",
        types={"order_id": "int", "deleted": "bool"},
    )


def published(receiver: Any, table: str) -> dict[int, tuple[Any, ...]]:
    """The published rows by order_id."""
    with receiver.read(table) as read:
        at = read.columns.index("order_id")
        return {row[at]: row for row in read.rows}
