"""Loading rows into PostgreSQL through the receiver, against COPY (the floor) and insert_rows.

In one run, on the PostgreSQL of the tests (127.0.0.1:5432, database test):

    receiver full      a complete delivery of N rows: decide (stage, check) then publish
    receiver changes   then a changes delivery of 1% of N (half updates, half tombstones)
    changes vs size    a fixed 10,000-row changes delivery (5,000 updates, 5,000 tombstones)
                       against tables of 100,000 and 1,000,000 rows (and 10,000,000 with
                       --large): its time should stay flat as the table grows
    COPY               the same N rows with COPY FROM STDIN (psql's \\copy): the floor
    insert_rows        the same N rows with common-sql's PostgresHook.insert_rows, as a user
                       would otherwise write it (executemany, 10,000 rows per commit)

Each runs in its own process, so the peak memory printed (max RSS) is that load's alone. The
targets (issue 5): the full delivery within 2x of COPY, and the changes delivery costing in
proportion to its own size, not the table's. Not a timed test: it prints, it never fails.

    PYTHONPATH=. .venv/bin/python bench/receiver.py              # 1,000,000 rows
    PYTHONPATH=. .venv/bin/python bench/receiver.py --rows 100000
    PYTHONPATH=. .venv/bin/python bench/receiver.py --large      # 10,000,000 rows
"""

from __future__ import annotations

import argparse
import io
import multiprocessing
import os
import resource
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg2
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from dogana_core.contract import Contract
from dogana_core.shape import Shape

URL = os.environ.get("DOGANA_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
T0 = datetime(2026, 1, 1, tzinfo=UTC)
NOW = T0 + timedelta(days=1)
BATCH = 100_000
FIXED_CHANGES = 10_000
SIZES = (100_000, 1_000_000)
LARGE = 10_000_000


def contract(table: str) -> Contract:
    return Contract(
        table,
        ("id",),
        {"full": Shape.complete(), "changes": Shape.changes(tombstones=True)},
        cursor_column="updated_at",
        deleted_column="deleted",
        types={"id": "int", "updated_at": "datetime", "deleted": "bool"},
    )


def batch(start: int, stop: int, at: datetime, deleted: bool = False) -> pa.RecordBatch:
    ids = pa.array(range(start, stop), pa.int64())
    count = stop - start
    return pa.record_batch(
        {
            "id": ids,
            "day": pa.array([date(2026, 1, 1) + timedelta(days=i % 365) for i in range(count)]),
            "name": pa.array([f"name {i}" for i in range(start, stop)]),
            "amount": pa.array([i * 0.5 for i in range(start, stop)], pa.float64()),
            "updated_at": pa.array([at] * count, pa.timestamp("us", tz="UTC")),
            "deleted": pa.array([deleted] * count),
        }
    )


def write_files(directory: Path, rows: int) -> tuple[Path, Path, int, int]:
    """The full file (written a batch at a time) and a 1% changes file."""
    full = directory / "full.parquet"
    schema = batch(0, 1, T0).schema
    with pq.ParquetWriter(full, schema) as writer:
        for start in range(0, rows, BATCH):
            writer.write_batch(batch(start, min(rows, start + BATCH), T0 + timedelta(hours=1)))
    changed = max(2, rows // 100)
    updates, tombstones = changed // 2, changed - changed // 2
    changes = directory / "changes.parquet"
    at = T0 + timedelta(hours=3)
    with pq.ParquetWriter(changes, schema) as writer:
        writer.write_batch(batch(0, updates, at))
        writer.write_batch(batch(updates, updates + tombstones, at, deleted=True))
    return full, changes, updates, tombstones


def write_fixed_changes(directory: Path) -> Path:
    """FIXED_CHANGES rows changed at T0+4h: half updates of existing ids, half tombstones."""
    path = directory / "fixed-changes.parquet"
    half = FIXED_CHANGES // 2
    at = T0 + timedelta(hours=4)
    schema = batch(0, 1, T0).schema
    with pq.ParquetWriter(path, schema) as writer:
        writer.write_batch(batch(0, half, at))
        writer.write_batch(batch(half, FIXED_CHANGES, at, deleted=True))
    return path


def write_full(directory: Path, rows: int) -> Path:
    path = directory / f"full-{rows}.parquet"
    schema = batch(0, 1, T0).schema
    with pq.ParquetWriter(path, schema) as writer:
        for start in range(0, rows, BATCH):
            writer.write_batch(batch(start, min(rows, start + BATCH), T0 + timedelta(hours=1)))
    return path


def fixed_changes(
    receiver: Any, table: Contract, path: str, since: datetime
) -> tuple[float, float]:
    """The fixed changes delivery into a published table: (decide, publish) seconds."""
    half = FIXED_CHANGES // 2
    manifest = table.manifest(
        "changes", T0 + timedelta(hours=5), since=since, rows=half, tombstones=half
    )
    started = time.perf_counter()
    decision = receiver.decide(path, manifest)
    decided = time.perf_counter()
    receipt = receiver.publish(decision)
    assert receipt.accepted, receipt.failed
    return decided - started, time.perf_counter() - decided


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def in_child(target: Callable[..., dict[str, float]], *args: Any) -> dict[str, float]:
    """Run target in a fresh process and return what it measured, its peak memory included."""
    context = multiprocessing.get_context("spawn")
    with context.Pool(1) as pool:
        return pool.apply(target, args)


def receiver_load(
    full: str, changes: str, rows: int, updates: int, tombstones: int, fixed: str
) -> dict:
    from dogana_provider.dialects import POSTGRES
    from dogana_provider.receiver import Receiver

    uid = uuid.uuid4().hex[:8]
    table = contract(f"bench_{uid}")
    receiver = Receiver(
        lambda: psycopg2.connect(URL), POSTGRES, prefix=f"b{uid}", clock=lambda: NOW
    )
    receiver.register(table)
    try:
        started = time.perf_counter()
        decision = receiver.decide(full, table.manifest("full", T0 + timedelta(hours=1), rows=rows))
        decided = time.perf_counter()
        assert receiver.publish(decision).accepted
        published = time.perf_counter()
        manifest = table.manifest(
            "changes",
            T0 + timedelta(hours=3),
            since=T0 + timedelta(hours=1),
            rows=updates,
            tombstones=tombstones,
        )
        receipt = receiver.receive(changes, manifest)
        assert receipt.accepted, receipt.failed
        changed = time.perf_counter()
        fixed_decide, fixed_publish = fixed_changes(receiver, table, fixed, T0 + timedelta(hours=3))
    finally:
        drop(table.table, f"b{uid}_tables", f"b{uid}_receipts", f"b{uid}_staging")
    return {
        "full_decide": decided - started,
        "full_publish": published - decided,
        "full": published - started,
        "changes": changed - published,
        "fixed_decide": fixed_decide,
        "fixed_publish": fixed_publish,
        "peak_mib": peak_mib(),
    }


def changes_against(full: str, rows: int, fixed: str) -> dict:
    """A table of `rows` published whole, then the fixed changes delivery timed against it."""
    from dogana_provider.dialects import POSTGRES
    from dogana_provider.receiver import Receiver

    uid = uuid.uuid4().hex[:8]
    table = contract(f"bench_{uid}")
    receiver = Receiver(
        lambda: psycopg2.connect(URL), POSTGRES, prefix=f"b{uid}", clock=lambda: NOW
    )
    receiver.register(table)
    try:
        manifest = table.manifest("full", T0 + timedelta(hours=1), rows=rows)
        assert receiver.receive(full, manifest).accepted
        decide, publish = fixed_changes(receiver, table, fixed, T0 + timedelta(hours=1))
    finally:
        drop(table.table, f"b{uid}_tables", f"b{uid}_receipts", f"b{uid}_staging")
    return {"fixed_decide": decide, "fixed_publish": publish}


def copy_load(full: str) -> dict:
    table = f"bench_copy_{uuid.uuid4().hex[:8]}"
    connection = psycopg2.connect(URL)
    try:
        cursor = connection.cursor()
        cursor.execute(
            f"CREATE TABLE {table} (id BIGINT, day DATE, name TEXT, amount DOUBLE PRECISION, "
            "updated_at TIMESTAMPTZ)"
        )
        started = time.perf_counter()
        for record_batch in pq.ParquetFile(full).iter_batches(BATCH):
            buffer = io.BytesIO()
            columns = record_batch.drop_columns(["deleted"])
            pa_csv.write_csv(columns, buffer, pa_csv.WriteOptions(include_header=False))
            buffer.seek(0)
            cursor.copy_expert(f"COPY {table} FROM STDIN WITH (FORMAT csv)", buffer)
        connection.commit()
        took = time.perf_counter() - started
    finally:
        connection.close()
        drop(table)
    return {"full": took, "peak_mib": peak_mib()}


def insert_rows_load(full: str) -> dict:
    os.environ["AIRFLOW__LOGGING__LOGGING_LEVEL"] = "WARNING"  # not a line per 10,000 rows
    from airflow.providers.postgres.hooks.postgres import PostgresHook

    os.environ["AIRFLOW_CONN_DOGANA_BENCH"] = URL
    table = f"bench_insert_{uuid.uuid4().hex[:8]}"
    hook = PostgresHook(postgres_conn_id="dogana_bench")
    hook.run(
        f"CREATE TABLE {table} (id BIGINT, day DATE, name TEXT, amount DOUBLE PRECISION, "
        "updated_at TIMESTAMPTZ)"
    )
    fields = ["id", "day", "name", "amount", "updated_at"]
    try:
        started = time.perf_counter()
        for record_batch in pq.ParquetFile(full).iter_batches(BATCH, columns=fields):
            rows = zip(*(column.to_pylist() for column in record_batch.columns), strict=True)
            hook.insert_rows(table, rows, target_fields=fields, commit_every=10_000)
        took = time.perf_counter() - started
    finally:
        drop(table)
    return {"full": took, "peak_mib": peak_mib()}


def drop(*tables: str) -> None:
    connection = psycopg2.connect(URL)
    try:
        cursor = connection.cursor()
        for table in tables:
            cursor.execute(f'DROP TABLE IF EXISTS "{table}"')
        connection.commit()
    finally:
        connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument(
        "--large", "--ten-million", action="store_true", help="load 10,000,000 rows"
    )
    options = parser.parse_args()
    rows = LARGE if options.large else options.rows
    sizes = [size for size in (*SIZES, LARGE) if size < rows] + [rows]
    scaling: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="dogana-bench-") as directory:
        full, changes, updates, tombstones = write_files(Path(directory), rows)
        fixed = str(write_fixed_changes(Path(directory)))
        print(f"{rows:,} rows; changes: {updates:,} updates and {tombstones:,} tombstones")
        copy = in_child(copy_load, str(full))
        ours = in_child(receiver_load, str(full), str(changes), rows, updates, tombstones, fixed)
        scaling[rows] = ours
        for size in sizes[:-1]:
            smaller = str(write_full(Path(directory), size))
            scaling[size] = in_child(changes_against, smaller, size, fixed)
        insert = in_child(insert_rows_load, str(full))
    print(f"{'load':<22}{'seconds':>10}{'rows/s':>14}{'peak MiB':>10}")
    for name, seconds, peak in (
        ("COPY (floor)", copy["full"], copy["peak_mib"]),
        ("receiver full", ours["full"], ours["peak_mib"]),
        ("  of which decide", ours["full_decide"], None),
        ("  of which publish", ours["full_publish"], None),
        ("insert_rows", insert["full"], insert["peak_mib"]),
    ):
        memory = f"{peak:>10.0f}" if peak is not None else ""
        print(f"{name:<22}{seconds:>10.2f}{rows / seconds:>14,.0f}{memory}")
    changed = updates + tombstones
    print(f"{'receiver changes':<22}{ours['changes']:>10.2f}{changed / ours['changes']:>14,.0f}")
    print(f"receiver full / COPY:         {ours['full'] / copy['full']:.1f}x (target: within 2x)")
    print(f"insert_rows / COPY:           {insert['full'] / copy['full']:.1f}x")
    print(
        f"changes / full, per row:      "
        f"{(ours['changes'] / changed) / (ours['full'] / rows):.2f} "
        "(about 1 when a changes delivery costs in proportion to its own size)"
    )
    print(f"\na fixed {FIXED_CHANGES:,}-row changes delivery against a table of:")
    print(f"{'table rows':>14}{'decide':>10}{'publish':>10}{'total':>10}")
    for size in sizes:
        point = scaling[size]
        total = point["fixed_decide"] + point["fixed_publish"]
        print(
            f"{size:>14,}{point['fixed_decide']:>10.2f}{point['fixed_publish']:>10.2f}"
            f"{total:>10.2f}"
        )
    first, last = scaling[sizes[0]], scaling[sizes[-1]]
    growth = (last["fixed_decide"] + last["fixed_publish"]) / (
        first["fixed_decide"] + first["fixed_publish"]
    )
    print(
        f"{sizes[-1] // sizes[0]}x the table, {growth:.1f}x the time "
        "(flat: about 1x when a changes delivery costs its own size)"
    )


if __name__ == "__main__":
    main()
