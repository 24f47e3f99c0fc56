"""What quality expectations add to the gate: a delivery decided with and without them.

In one run, on each database of the tests (PostgreSQL 127.0.0.1:5432 and MariaDB 127.0.0.1:3306,
database test, and a SQLite file), a complete delivery of N rows is decided (the gate's steps 1
to 3: replay lookup, preflight, staging, the row checks, Gate.evaluate), once by a table that
declares no expectation and once by one declaring nine on six columns:

    id            unique_check equal_to 0 (block), min geq_to 0 (block)
    name          null_check equal_to 0 (warn)
    amount        min geq_to 0 (warn), max less_than 10**12 (warn)
    day           max leq_to 2027-01-01 (block)
    qty           min geq_to 0 (block)
    updated_at    null_check equal_to 0 (block)
    (table)       check_statement "amount >= 0" (warn)

The two alternate, ROUNDS times each, and the fastest of each is kept; the decisions are
discarded, never published. The target (issue 13): expectations on six columns add under 30% to
the gate's time at 1,000,000 rows. Not a timed test: it prints the ratio, it never fails.

    PYTHONPATH=. .venv/bin/python bench/expectations.py               # 1,000,000 rows
    PYTHONPATH=. .venv/bin/python bench/expectations.py --rows 2000 --databases sqlite
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from dogana_core.contract import Contract
from dogana_core.gate import Outcome
from dogana_core.shape import Shape
from dogana_provider.checks.expectations import Expectations
from dogana_provider.dialects import MARIADB, POSTGRES, SQLITE, Dialect
from dogana_provider.receiver import Receiver

POSTGRES_URL = os.environ.get("DOGANA_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
MARIADB_OPTIONS = {"host": "127.0.0.1", "port": 3306, "user": "root", "password": "", "db": "test"}
T0 = datetime(2026, 1, 1, tzinfo=UTC)
BATCH = 100_000
ROUNDS = 5
TARGET = 0.30

DECLARED = {
    "column_mapping": {
        "id": {
            "unique_check": {"equal_to": 0, "on_violation": "block"},
            "min": {"geq_to": 0, "on_violation": "block"},
        },
        "name": {"null_check": {"equal_to": 0, "on_violation": "warn"}},
        "amount": {
            "min": {"geq_to": 0, "on_violation": "warn"},
            "max": {"less_than": 10**12, "on_violation": "warn"},
        },
        "day": {"max": {"leq_to": {"$date": "2027-01-01"}, "on_violation": "block"}},
        "qty": {"min": {"geq_to": 0, "on_violation": "block"}},
        "updated_at": {"null_check": {"equal_to": 0, "on_violation": "block"}},
    },
    "checks": {"amount_not_negative": {"check_statement": "amount >= 0", "on_violation": "warn"}},
}


def contract(table: str) -> Contract:
    return Contract(
        table,
        ("id",),
        {"full": Shape.complete(), "changes": Shape.changes(tombstones=True)},
        cursor_column="updated_at",
        deleted_column="deleted",
        types={"id": "int", "updated_at": "datetime", "deleted": "bool"},
    )


def write_full(path: Path, rows: int) -> Path:
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("day", pa.date32()),
            ("name", pa.string()),
            ("amount", pa.float64()),
            ("qty", pa.int64()),
            ("updated_at", pa.timestamp("us", tz="UTC")),
            ("deleted", pa.bool_()),
        ]
    )
    with pq.ParquetWriter(path, schema) as writer:
        for start in range(0, rows, BATCH):
            stop = min(start + BATCH, rows)
            count = stop - start
            writer.write_batch(
                pa.record_batch(
                    {
                        "id": pa.array(range(start, stop), pa.int64()),
                        "day": pa.array(
                            [date(2026, 1, 1) + timedelta(days=i % 365) for i in range(count)]
                        ),
                        "name": pa.array([f"name {i}" for i in range(start, stop)]),
                        "amount": pa.array([i * 0.5 for i in range(start, stop)], pa.float64()),
                        "qty": pa.array([i % 17 for i in range(start, stop)], pa.int64()),
                        "updated_at": pa.array([T0] * count, pa.timestamp("us", tz="UTC")),
                        "deleted": pa.array([False] * count),
                    },
                    schema=schema,
                )
            )
    return path


@contextmanager
def database(name: str, folder: Path) -> Iterator[tuple[Callable[[], Any], Dialect]]:
    """A connection factory and the dialect of a database of the tests."""
    if name == "sqlite":
        path = folder / "receiver.db"
        yield (lambda: sqlite3.connect(path, timeout=30)), SQLITE
    elif name == "postgresql":
        import psycopg2

        yield (lambda: psycopg2.connect(POSTGRES_URL)), POSTGRES
    else:
        import MySQLdb

        yield (lambda: MySQLdb.connect(charset="utf8mb4", **MARIADB_OPTIONS)), MARIADB


def drop_own(connect: Callable[[], Any], dialect: Dialect, needle: str) -> None:
    """Drop every table whose name holds needle: the store's and the tables registered."""
    if dialect.name == "sqlite":
        return  # the file goes with its folder
    connection = connect()
    try:
        cursor = connection.cursor()
        if dialect.name == "postgresql":
            cursor.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema() AND position(%s in table_name) > 0",
                (needle,),
            )
        else:
            cursor.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = DATABASE() AND LOCATE(%s, table_name) > 0",
                (needle,),
            )
        for (table,) in cursor.fetchall():
            cursor.execute(f"DROP TABLE {dialect.quote(table)}")
        connection.commit()
    finally:
        connection.close()


def decide_seconds(receiver: Receiver, path: Path, table: str, rows: int) -> float:
    """One decision of the full delivery, timed, then its staged rows dropped."""
    manifest = contract(table).manifest("full", T0 + timedelta(hours=1), rows=rows)
    started = time.perf_counter()
    decision = receiver.decide(path, manifest)
    seconds = time.perf_counter() - started
    assert decision.receipt.outcome is Outcome.ACCEPTED, decision.receipt.failed
    receiver.discard(decision)
    return seconds


def measure(name: str, rows: int, path: Path, folder: Path) -> dict[str, float]:
    uid = f"bx{uuid.uuid4().hex[:8]}"
    plain, expected = f"plain_{uid}", f"expected_{uid}"
    with database(name, folder) as (connect, dialect):
        receiver = Receiver(connect, dialect, prefix=uid, clock=lambda: T0 + timedelta(days=1))
        try:
            receiver.register(contract(plain))
            receiver.register(contract(expected), Expectations.from_dict(DECLARED))
            found: dict[str, list[float]] = {"plain": [], "expected": []}
            for _ in range(ROUNDS):
                found["plain"].append(decide_seconds(receiver, path, plain, rows))
                found["expected"].append(decide_seconds(receiver, path, expected, rows))
            manifest = contract(expected).manifest("full", T0 + timedelta(hours=1), rows=rows)
            decision = receiver.decide(path, manifest)
            receipt = decision.receipt
            receiver.discard(decision)
            met = sum(1 for c in receipt.checks if c.detail.startswith("met:"))
        finally:
            drop_own(connect, dialect, uid)
    return {"plain": min(found["plain"]), "expected": min(found["expected"]), "met": met}


def report(name: str, rows: int, found: dict[str, float]) -> str:
    added = found["expected"] / found["plain"] - 1
    verdict = "met" if added < TARGET else "NOT MET"
    return (
        f"{name}, {rows:,} rows: gate {found['plain']:.2f} s without expectations, "
        f"{found['expected']:.2f} s with 9 on 6 columns ({int(found['met'])} met): "
        f"{added:+.0%} (target under +{TARGET:.0%}: {verdict})"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument(
        "--databases",
        default="postgresql,sqlite,mysql",
        help="comma-separated: postgresql, sqlite, mysql",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="dogana-bench-expect-") as folder:
        path = write_full(Path(folder) / "full.parquet", args.rows)
        for name in args.databases.split(","):
            found = measure(name, args.rows, path, Path(folder))
            print(report(name, args.rows, found), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
