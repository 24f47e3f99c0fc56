"""A scripted source and the files and manifests it delivers, for the conformance suite.

The source holds rows by key; each helper writes a Parquet file of what a read of it returns and
the manifest that declares that read, so a test can compare the published rows with the rows the
source held.
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from dogana_core import Contract, Shape
from dogana_core.manifest import Manifest
from dogana_provider.delivery.files import BATCH_ROWS

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NOW = T0 + timedelta(days=365)  # the receiver's clock in these tests: after every delivery

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("day", pa.date32()),
        ("name", pa.string()),
        ("updated_at", pa.timestamp("us", tz="UTC")),
        ("deleted", pa.bool_()),
    ]
)


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def day(n: int) -> date:
    return date(2026, 1, 1) + timedelta(days=n)


def orders_contract(table: str, **changes: Any) -> Contract:
    """Keyed, windowed by day, with a timestamp cursor and tombstones."""
    options: dict[str, Any] = {
        "window_column": "day",
        "cursor_column": "updated_at",
        "deleted_column": "deleted",
        "types": {"id": "int", "day": "date", "updated_at": "datetime", "deleted": "bool"},
    }
    options.update(changes)
    return Contract(
        table,
        ("id",),
        {
            "full": Shape.complete(),
            "window": Shape.complete(window=True),
            "changes": Shape.changes(checkpoint="timestamp", tombstones=True),
        },
        **options,
    )


def events_contract(table: str) -> Contract:
    """Keyless: whole-table appends and complete windows."""
    return Contract(
        table,
        (),
        {
            "append": Shape.changes(checkpoint="timestamp"),
            "window": Shape.complete(window=True),
        },
        window_column="day",
        types={"day": "date"},
        start_at=T0,
    )


def sequence_contract(table: str) -> Contract:
    """Keyed, fed by an integer log position, with tombstones."""
    return Contract(
        table,
        ("id",),
        {
            "full": Shape.complete(),
            "log": Shape.changes(checkpoint="sequence", tombstones=True),
        },
        cursor_column="lsn",
        deleted_column="deleted",
        types={"id": "int", "lsn": "int", "deleted": "bool"},
    )


_files = itertools.count()


def write(directory: Path, rows: list[dict[str, Any]], schema: pa.Schema = SCHEMA) -> Path:
    path = directory / f"delivery-{next(_files)}.parquet"
    columns = {name: [row.get(name) for row in rows] for name in schema.names}
    pq.write_table(pa.table(columns, schema=schema), path)
    return path


def write_many(path: Path, rows: int) -> Path:
    """A full read of orders 0 to rows - 1, all on day 1, built by Arrow at once rather than row
    by row, in row groups of BATCH_ROWS."""
    ids = pa.array(range(rows), pa.int64())
    table = {
        "id": ids,
        "day": pa.array([day(1)] * rows, pa.date32()),
        "name": pc.cast(ids, pa.string()),
        "updated_at": pa.array([at(1)] * rows, SCHEMA.field("updated_at").type),
        "deleted": pa.array([False] * rows),
    }
    pq.write_table(pa.table(table), path, row_group_size=BATCH_ROWS)
    return path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass
class Source:
    """The orders source: live rows by id, with the time each was last changed."""

    table: str
    directory: Path
    rows: dict[int, dict[str, Any]] = field(default_factory=dict)

    @property
    def contract(self) -> Contract:
        return orders_contract(self.table)

    def put(self, id_: int, day_: int, name: str, t: datetime) -> None:
        self.rows[id_] = {
            "id": id_,
            "day": day(day_),
            "name": name,
            "updated_at": t,
            "deleted": False,
        }

    def delete(self, id_: int) -> None:
        del self.rows[id_]

    def full(self, t: datetime) -> tuple[Path, Manifest]:
        rows = sorted(self.rows.values(), key=lambda row: row["id"])
        path = write(self.directory, rows)
        return path, self.contract.manifest("full", t, rows=len(rows), content_hash=sha256(path))

    def window(self, low: int, high: int, t: datetime) -> tuple[Path, Manifest]:
        rows = [row for row in self.rows.values() if day(low) <= row["day"] <= day(high)]
        path = write(self.directory, rows)
        return path, self.contract.manifest(
            "window", t, window=(day(low), day(high)), rows=len(rows), content_hash=sha256(path)
        )

    def changes(
        self, since: datetime, t: datetime, deleted: tuple[int, ...] = ()
    ) -> tuple[Path, Manifest]:
        live = [row for row in self.rows.values() if since < row["updated_at"] <= t]
        tombstones = [{"id": id_, "deleted": True} for id_ in deleted]
        path = write(self.directory, live + tombstones)
        return path, self.contract.manifest(
            "changes",
            t,
            since=since,
            rows=len(live),
            tombstones=len(tombstones),
            content_hash=sha256(path),
        )

    def expected(self) -> dict[int, tuple[str, str]]:
        return {id_: (row["name"], row["day"].isoformat()) for id_, row in self.rows.items()}


LOG_SCHEMA = pa.schema(
    [("id", pa.int64()), ("lsn", pa.int64()), ("v", pa.string()), ("deleted", pa.bool_())]
)


@dataclass
class LogSource:
    """The sequence source: live rows by id, each at the log position of its last change.

    A delete is a log entry too: a tombstone at its own position, read by the log reads after it
    unless the key lives again (a read carries each key once, in its latest state).
    """

    table: str
    directory: Path
    rows: dict[int, dict[str, Any]] = field(default_factory=dict)
    tombstones: list[dict[str, Any]] = field(default_factory=list)
    position: int = 0

    @property
    def contract(self) -> Contract:
        return sequence_contract(self.table)

    def put(self, id_: int, v: str) -> None:
        self.position += 1
        self.rows[id_] = {"id": id_, "lsn": self.position, "v": v, "deleted": False}

    def delete(self, id_: int) -> None:
        self.position += 1
        del self.rows[id_]
        self.tombstones = [row for row in self.tombstones if row["id"] != id_]
        self.tombstones.append({"id": id_, "lsn": self.position, "deleted": True})

    def full(self, t: datetime) -> tuple[Path, Manifest]:
        rows = sorted(self.rows.values(), key=lambda row: row["id"])
        path = write(self.directory, rows, LOG_SCHEMA)
        return path, self.contract.manifest(
            "full", t, rows=len(rows), generation=self.position, content_hash=sha256(path)
        )

    def log(self, since: int, t: datetime) -> tuple[Path, Manifest]:
        """The log entries after position since, up to the current position."""
        live = [row for row in self.rows.values() if row["lsn"] > since]
        dead = [r for r in self.tombstones if r["lsn"] > since and r["id"] not in self.rows]
        path = write(self.directory, live + dead, LOG_SCHEMA)
        return path, self.contract.manifest(
            "log",
            t,
            since=since,
            generation=self.position,
            rows=len(live),
            tombstones=len(dead),
            content_hash=sha256(path),
        )

    def expected(self) -> dict[int, tuple[int, str]]:
        return {id_: (row["lsn"], row["v"]) for id_, row in self.rows.items()}


EVENTS_SCHEMA = pa.schema([("day", pa.date32()), ("what", pa.string())])


@dataclass
class EventsSource:
    """The keyless events source: rows with no key, each noted with the time it was written."""

    table: str
    directory: Path
    events: list[tuple[datetime, dict[str, Any]]] = field(default_factory=list)

    @property
    def contract(self) -> Contract:
        return events_contract(self.table)

    def add(self, day_: int, what: str, t: datetime) -> None:
        self.events.append((t, {"day": day(day_), "what": what}))

    def drop_day(self, day_: int) -> None:
        """Rows of a day corrected at the source: a window read replaces them."""
        self.events = [(t, row) for t, row in self.events if row["day"] != day(day_)]

    def append(self, since: datetime, t: datetime) -> tuple[Path, Manifest]:
        rows = [row for written, row in self.events if since < written <= t]
        path = write(self.directory, rows, EVENTS_SCHEMA)
        return path, self.contract.manifest(
            "append", t, since=since, rows=len(rows), content_hash=sha256(path)
        )

    def window(self, low: int, high: int, t: datetime) -> tuple[Path, Manifest]:
        rows = [row for _, row in self.events if day(low) <= row["day"] <= day(high)]
        path = write(self.directory, rows, EVENTS_SCHEMA)
        return path, self.contract.manifest(
            "window", t, window=(day(low), day(high)), rows=len(rows), content_hash=sha256(path)
        )

    def expected(self) -> list[tuple[str, str]]:
        return sorted((row["day"].isoformat(), row["what"]) for _, row in self.events)
