"""A receiver holding several tables of different kinds, for `dogana status` and the UI page.

    orders         keyed, the whole table: a full read, then a log read; and a rejected
                   delivery (its manifest counts rows the file does not hold)
    shipments      windowed by day: days 1 to 10 read whole, then day 4's changes read without
                   tombstones, so day 4 is patched (complete later than its deletions)
    invoices,      a group: read together in one snapshot, exact at one instant
    invoice_lines

from two sources: orders, invoices and invoice_lines from the shop's database (SHOP), shipments
from the logistics database (LOGISTICS), each publication naming its origin as an extract task
of the DAG "several" does (ORIGINS), so that lineage has edges to answer with.

Delivered through the Receiver itself (files and manifests written by receiver_deliveries), so
a test gets the real tables, ledgers and receipts in a second, without an Airflow run; on a
SQLite file, or in a PostgreSQL schema of its own, dropped afterwards (filled_receiver).
"""

from __future__ import annotations

import json
import sqlite3
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import quote

import psycopg2

sys.path.insert(0, str(Path(__file__).parent / "receiver"))

from receiver_deliveries import LogSource, Source, at, day, sha256, write

from dogana_core import Contract, Shape
from dogana_core.gate import Outcome
from dogana_core.group import Group
from dogana_provider.dialects import POSTGRES, SQLITE
from dogana_provider.lineage.origin import Origin
from dogana_provider.receiver.receiver import Receiver

SHIPMENTS = Contract(
    "shipments",
    ("id",),
    {
        "days": Shape.complete(window=True),
        # No tombstones: a changes read cannot see a deleted row, so deletions stay behind.
        "day_changes": Shape.changes(checkpoint="timestamp", window=True),
    },
    window_column="day",
    cursor_column="updated_at",
    types={"id": "int", "day": "date", "updated_at": "datetime"},
)


SHOP, LOGISTICS = "shop_db", "logistics_db"
ORIGINS = {
    "orders": (SHOP, "shop.orders"),
    "shipments": (LOGISTICS, "logistics.shipments"),
    "invoices": (SHOP, "shop.invoices"),
    "invoice_lines": (SHOP, "shop.invoice_lines"),
}
"""Each table's source: its connection id and the table read."""


def origin(table: str, run: str) -> Origin:
    """A table's origin, read by its extract task in run of the DAG "several"."""
    conn_id, source = ORIGINS[table]
    return Origin(conn_id, source, "several", run, f"{table}.extract")


@dataclass(frozen=True)
class Filled:
    """What fill delivered, as a reader checks it."""

    tables: tuple[str, ...]
    rejected_check: str  # the check that refused orders' bad delivery
    patched_day: str  # ISO date of shipments' patched day


def fill(receiver: Receiver, directory: Path) -> Filled:
    """Register and deliver every table; each delivery checked accepted (or rejected) here."""
    orders = LogSource("orders", directory)
    receiver.register(orders.contract)
    for id_ in range(1, 4):
        orders.put(id_, f"order {id_}")
    accept(receiver, *orders.full(at(1)), origin("orders", "run_1"))
    read_at = orders.position
    orders.put(4, "order 4")
    accept(receiver, *orders.log(read_at, at(2)), origin("orders", "run_2"))
    path, manifest = orders.full(at(3))
    refused = receiver.receive(path, replace(manifest, rows=manifest.rows + 5))
    assert refused.outcome is Outcome.REJECTED
    rejected_check = refused.failed[0].name

    shipments = Source("shipments", directory)
    receiver.register(SHIPMENTS)
    for id_ in range(1, 11):
        shipments.put(id_, id_, f"shipment {id_}", at(1))
    rows = [row for row in shipments.rows.values() if day(1) <= row["day"] <= day(10)]
    path = write(directory, rows)
    accept(
        receiver,
        path,
        SHIPMENTS.manifest(
            "days", at(4), window=(day(1), day(10)), rows=len(rows), content_hash=sha256(path)
        ),
        origin("shipments", "run_1"),
    )
    shipments.put(4, 4, "shipment 4, redirected", at(5))
    changed = [shipments.rows[4]]
    path = write(directory, changed)
    accept(
        receiver,
        path,
        SHIPMENTS.manifest(
            "day_changes",
            at(6),
            window=(day(4), day(4)),
            since=at(4),
            rows=1,
            content_hash=sha256(path),
        ),
        origin("shipments", "run_2"),
    )

    invoices, lines = Source("invoices", directory), Source("invoice_lines", directory)
    for source in (invoices, lines):
        receiver.register(source.contract)
        for id_ in range(1, 4):
            source.put(id_, id_, f"{source.table} {id_}", at(1))
    group = Group((invoices.contract, lines.contract))
    receipts = receiver.receive_group(
        group,
        {invoices.table: invoices.full(at(7)), lines.table: lines.full(at(7))},
        {table: origin(table, "run_3") for table in group.tables},
    )
    assert [r.outcome for r in receipts] == [Outcome.ACCEPTED] * 2, [r.failed for r in receipts]
    return Filled(
        ("invoice_lines", "invoices", "orders", "shipments"), rejected_check, day(4).isoformat()
    )


def accept(receiver: Receiver, path: Path, manifest: object, source: Origin) -> None:
    receipt = receiver.receive(path, manifest, origin=source)  # type: ignore[arg-type]
    assert receipt.outcome is Outcome.ACCEPTED, receipt.failed


PASSWORD = "s3cret-never-shown"
"""A password for a server receiver's URL to carry (trust authentication ignores it), so that a
test can assert that no output shows it."""


@dataclass(frozen=True)
class Live:
    """A filled receiver: its URL (with a password on PostgreSQL) and its Airflow connection."""

    url: str
    connection: str  # the AIRFLOW_CONN_ value of the same database
    receiver: Receiver
    filled: Filled


@contextmanager
def filled_receiver(
    kind: str, directory: Path, server: str | None = None, password: str | None = None
) -> Iterator[Live]:
    """A receiver holding these tables: a SQLite file in directory, or a PostgreSQL schema of
    its own on server (its URL carries password, which trust authentication ignores)."""
    if kind == "sqlite":
        path = directory / "warehouse.sqlite"
        receiver = Receiver(lambda: sqlite3.connect(path), SQLITE)
        connection = json.dumps({"conn_type": "sqlite", "host": str(path)})
        yield Live(f"sqlite:///{path}", connection, receiver, fill(receiver, directory))
        return
    assert server is not None
    schema = f"several_{uuid.uuid4().hex[:10]}"
    with psycopg2.connect(server) as admin, admin.cursor() as cursor:
        cursor.execute(f"CREATE SCHEMA {schema}")
    options = f"-csearch_path={schema}"
    try:
        receiver = Receiver(lambda: psycopg2.connect(server, options=options), POSTGRES)
        url = server if password is None else server.replace("@", f":{password}@", 1)
        url += f"?options={quote(options)}"
        yield Live(url, url, receiver, fill(receiver, directory))
    finally:
        with psycopg2.connect(server) as admin, admin.cursor() as cursor:
            cursor.execute(f"DROP SCHEMA {schema} CASCADE")
