"""Contracts, instants and honest extractors shared by the planning and group tests.

fulfil() plays an honest extractor: it reads a request at or after its boundary and declares
exactly what the request names, with the position the read saw. It is how every test turns a
plan into a delivery, so a test of the planner never builds a manifest the planner would not ask
for.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from dogana_core import Contract, Manifest, Shape
from dogana_core.ledger import Ledger
from dogana_core.planner import ExtractionRequest
from dogana_core.values import Position

SUNDAY = datetime(2026, 10, 18, tzinfo=UTC)
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
MICROSECOND = timedelta(microseconds=1)
NO_LIMIT = timedelta.max


def at(hours: float) -> datetime:
    """An instant hours after Sunday 2026-10-18 midnight UTC."""
    return SUNDAY + timedelta(hours=hours)


def day(n: int) -> date:
    """The n-th day of October 2026."""
    return date(2026, 10, 1) + timedelta(days=n - 1)


ORDER_TYPES = {"id": "int", "order_date": "date", "updated_at": "datetime", "deleted": "bool"}


def orders(**shapes: Shape) -> Contract:
    """A keyed table with a DATE window column, a datetime cursor and a deleted column."""
    return Contract(
        "orders",
        ("id",),
        shapes,
        window_column="order_date" if any(s.is_window for s in shapes.values()) else None,
        cursor_column="updated_at",
        deleted_column="deleted" if any(s.has_tombstones for s in shapes.values()) else None,
        types={
            column: kind
            for column, kind in ORDER_TYPES.items()
            if column in ("id", "updated_at")
            or (column == "order_date" and any(s.is_window for s in shapes.values()))
            or (column == "deleted" and any(s.has_tombstones for s in shapes.values()))
        },
    )


ORDERS = orders(
    full=Shape.complete(cost=10),
    days=Shape.complete(window=True, cost=3, window_size=timedelta(days=30)),
    changes=Shape.changes(tombstones=True, cost=1, lookback=HOUR),
)

EVENTS = Contract(
    "events",
    (),
    {"append": Shape.changes(cost=1), "full": Shape.complete(cost=50)},
    cursor_column="logged_at",
    types={"logged_at": "datetime"},
    start_at=datetime(2026, 1, 1, tzinfo=UTC),
)


def feed(table: str = "customers", *, tombstones: bool = True, full_cost: int = 10) -> Contract:
    """A keyed table read by a generation feed (opaque string positions)."""
    return Contract(
        table,
        ("id",),
        {
            "full": Shape.complete(cost=full_cost),
            "feed": Shape.changes(checkpoint="generation", tombstones=tombstones, cost=1),
        },
        deleted_column="deleted" if tombstones else None,
        types={"id": "int", "deleted": "bool"} if tombstones else {"id": "int"},
    )


def log(table: str = "lines", *, tombstones: bool = True) -> Contract:
    """A keyed table read from a commit-ordered log (integer positions)."""
    return Contract(
        table,
        ("id",),
        {
            "full": Shape.complete(cost=10),
            "log": Shape.changes(checkpoint="sequence", tombstones=tombstones, cost=1),
        },
        deleted_column="deleted" if tombstones else None,
        types={"id": "int", "deleted": "bool"} if tombstones else {"id": "int"},
    )


def fulfil(
    request: ExtractionRequest,
    contract: Contract,
    *,
    late: timedelta = timedelta(0),
    position: Position | None = None,
    rows: int = 3,
    tombstones: int = 1,
) -> Manifest:
    """The manifest of an honest read of request, in a snapshot taken late after its boundary.

    The position the read saw is position, or one that follows the held one; a read of an empty
    interval holds no rows.
    """
    produced_at = request.until + late
    shape = contract.shape(request.shape)
    generation: Position | None = None
    if request.issue_position:
        if position is not None:
            generation = position
        elif contract.position_type is int:
            generation = (request.since if isinstance(request.since, int) else 0) + 1
        else:
            generation = f"after {request.since or 'none'} at {produced_at.isoformat()}"
    empty = (
        isinstance(request.since, datetime)
        and request.since == produced_at
        and (contract.cursor_column is not None or not contract.keyed)
    ) or (isinstance(request.since, int) and request.since == generation)
    if empty:
        rows, tombstones = 0, 0
    if not shape.has_tombstones:
        tombstones = 0
    return request.manifest(
        contract, produced_at, generation=generation, rows=rows, tombstones=tombstones
    )


def deliver(ledger: Ledger, request: ExtractionRequest, **honest: object) -> Ledger:
    """The ledger after an honest read of request is accepted."""
    return ledger.apply(fulfil(request, ledger.contract, **honest))  # type: ignore[arg-type]
