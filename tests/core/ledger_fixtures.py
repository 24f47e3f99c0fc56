"""Contracts, instants and an independent model of the ledger, shared by the part-2 tests.

EvidenceModel recomputes, bucket by bucket, what Transitions 1 to 6 admit and which dates each
shape proves, straight from the spec's wording and without the ledger's code (no regions, no
merging, no bisect), so property tests can compare the two on any history.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from dogana_core import Contract, Manifest, Shape
from dogana_core.values import Position

SUNDAY = datetime(2026, 10, 18, tzinfo=UTC)
MONDAY = SUNDAY + timedelta(days=1)
HOUR = timedelta(hours=1)


def at(hours: float) -> datetime:
    """An instant hours after Sunday midnight UTC."""
    return SUNDAY + timedelta(hours=hours)


def day(n: int) -> date:
    """The n-th day of October 2026."""
    return date(2026, 10, 1) + timedelta(days=n - 1)


ORDERS = Contract(
    "orders",
    ("id",),
    {
        "full": Shape.complete(),
        "day": Shape.complete(window=True),
        "recent": Shape.changes(window=True),
        "recent_tombstones": Shape.changes(window=True, tombstones=True),
        "changes": Shape.changes(),
        "tombstones": Shape.changes(tombstones=True),
    },
    window_column="order_date",
    cursor_column="updated_at",
    deleted_column="is_deleted",
    types={"id": "int", "order_date": "date", "updated_at": "datetime", "is_deleted": "bool"},
)

FEED = Contract(
    "items",
    ("sku",),
    {
        "full": Shape.complete(),
        "day": Shape.complete(window=True),
        "feed": Shape.changes(checkpoint="generation", tombstones=True),
        "feed_plain": Shape.changes(checkpoint="generation"),
        "changes": Shape.changes(),
    },
    window_column="created_on",
    deleted_column="gone",
    types={"sku": "str", "created_on": "date", "gone": "bool"},
)

LOG = Contract(
    "log",
    ("id",),
    {
        "full": Shape.complete(),
        "tail": Shape.changes(checkpoint="sequence", tombstones=True),
        "tail_plain": Shape.changes(checkpoint="sequence"),
    },
    deleted_column="gone",
    types={"id": "int", "gone": "bool"},
)

EVENTS = Contract(
    "events",
    (),
    {"full": Shape.complete(), "day": Shape.complete(window=True), "append": Shape.changes()},
    window_column="event_day",
    types={"event_day": "date"},
    start_at=SUNDAY,
)

STAMPED = Contract(
    "stamped",
    ("id",),
    {"slot": Shape.complete(window=True), "full": Shape.complete()},
    window_column="at",
    types={"id": "int", "at": "datetime"},
)

NAMED = Contract(
    "named",
    ("id",),
    {"part": Shape.complete(window=True)},
    window_column="plant",
    types={"id": "int", "plant": "str"},
)


def make(contract: Contract, shape: str, produced_at: datetime, **fields: Any) -> Manifest:
    return contract.manifest(shape, produced_at, **fields)


def chain_of(previous: str, contract: Contract, manifest: Manifest) -> str:
    """The publication chain, written out from the spec's recipe."""
    text = f"{previous}:{contract.identity}:{manifest.identity}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# The independent model -------------------------------------------------------------------------

Dates = tuple[datetime, datetime] | None


@dataclass
class EvidenceModel:
    """Evidence per bucket of the window domain: below, days first..last, above.

    Values in the same bucket are covered by exactly the same deliveries, so one pair of dates
    per bucket is the whole truth for histories whose windows stay within [first, last].
    """

    contract: Contract
    first: date
    last: date
    buckets: dict[Any, Dates] = field(default_factory=dict)
    position: Position | None = None
    head: str = "None"

    def __post_init__(self) -> None:
        self.buckets = {"below": None, "above": None}
        for n in range((self.last - self.first).days + 1):
            self.buckets[self.first + timedelta(days=n)] = None

    def covered(self, manifest: Manifest) -> list[Any]:
        if manifest.window is None:
            return list(self.buckets)
        low, high = manifest.window
        return [key for key in self.buckets if isinstance(key, date) and low <= key <= high]

    def admits(self, manifest: Manifest) -> bool:
        """Transitions 1 to 6, from the spec's text."""
        try:
            manifest.check(self.contract)
        except Exception:
            return False
        shape = self.contract.shape(manifest.shape)
        t = manifest.produced_at
        dates = [self.buckets[key] for key in self.covered(manifest)]
        if any(d is not None and not t > d[0] for d in dates):
            return False
        if shape.is_complete:
            return True
        untouched = all(d is None for d in self.buckets.values())
        if any(d is None for d in dates):
            first_append = (
                not self.contract.keyed and untouched and manifest.since == self.contract.start_at
            )
            if not first_append:
                return False
        since = manifest.since
        if shape.checkpoint == "timestamp":
            assert isinstance(since, datetime)
            if not since <= t:
                return False
            if not self.contract.keyed:
                return all(d is None or d[0] == since for d in dates)
            return all(d is not None and since <= d[0] for d in dates)
        if shape.checkpoint == "generation":
            return self.position == since
        held = self.position
        if not isinstance(held, int) or isinstance(held, bool):
            return False
        assert isinstance(since, int) and isinstance(manifest.generation, int)
        return since <= held <= manifest.generation

    def apply(self, manifest: Manifest) -> None:
        """The dates each shape proves, from the spec's text; call only when admits()."""
        shape = self.contract.shape(manifest.shape)
        t = manifest.produced_at
        for key in self.covered(manifest):
            old = self.buckets[key]
            if shape.is_complete or not self.contract.keyed:
                self.buckets[key] = (t, t)
                continue
            assert old is not None
            c, d = old
            if shape.checkpoint == "timestamp":
                assert isinstance(manifest.since, datetime)
                repaired = shape.has_tombstones and manifest.since <= d
            else:
                repaired = shape.has_tombstones and c == d
            self.buckets[key] = (t, t if repaired else d)
        issues = shape.is_complete and not shape.is_window
        if issues or shape.checkpoint in ("generation", "sequence"):
            self.position = manifest.generation
        self.head = chain_of(self.head, self.contract, manifest)

    def probes(self) -> dict[Any, Any]:
        """A value of the window column in each bucket."""
        out: dict[Any, Any] = {"below": date.min, "above": date.max}
        out.update({key: key for key in self.buckets if isinstance(key, date)})
        return out
