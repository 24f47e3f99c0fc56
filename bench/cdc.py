"""Changed rows delivered from PostgreSQL's log beside a cursor-column changes delivery and the
database's own application of the same changes, over tables of growing size, in one run.

    log         ExtractOperator with the pg_logical connector: the changes the slot decoded
                since its position, written as the delivery's Parquet file and manifest (every
                update and delete, tombstones included)
    cursor      ExtractOperator on the same table through its SQL source: the rows whose
                updated_at (indexed) moved since the last read, the same file and manifest (a
                cursor read sees no delete)
    apply       the database applying the same changes itself: one UPDATE and one DELETE from a
                staged (temporary) table of the changed keys, in one transaction

For each table size the table is made in the server (generate_series) with N rows, a slot is
created, the changed keys are staged, a CHECKPOINT is taken, then CHANGES rows are updated or
deleted (nine updates to each delete, spread over the table). The CHECKPOINT puts both sizes
where a table in service is: each page the changes touch is written to the WAL whole once
after a checkpoint, so the WAL the log read decodes grows with the pages touched, and it is
printed. The log and cursor deliveries read the same committed changes and are repeated
(REPEAT times, the best kept: a peek does not move the slot); the apply happens once.
Not a timed test: it prints times and ratios measured in this one run.

    PYTHONPATH=. .venv/bin/python bench/cdc.py                           # 1,000,000 and 10,000,000
    PYTHONPATH=. .venv/bin/python bench/cdc.py --sizes 100000 1000000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psycopg

URL = "host=127.0.0.1 port=5432 user=postgres dbname=test"
SOURCE = "bench_cdc_source"
REPEAT = 3


def best(call: Callable[[], Any]) -> tuple[float, Any]:
    """The shortest of REPEAT runs of call, and what the last returned."""
    times, value = [], None
    for _ in range(REPEAT):
        start = time.perf_counter()
        value = call()
        times.append(time.perf_counter() - start)
    return min(times), value


def contracts(table: str, home: Path) -> tuple[str, str]:
    """The log's contract (the slot's sequence, with tombstones) and the cursor column's."""
    from dogana_core import Contract, Shape

    log = Contract(
        table,
        ("id",),
        {
            "snapshot": Shape.complete(cost=100),
            "log": Shape.changes(checkpoint="sequence", tombstones=True),
        },
        deleted_column="deleted",
        types={"id": "int", "deleted": "bool"},
    )
    cursor = Contract(
        table,
        ("id",),
        {"full": Shape.complete(cost=100), "changes": Shape.changes(checkpoint="timestamp")},
        cursor_column="updated_at",
        types={"id": "int", "updated_at": "datetime"},
    )
    paths = []
    for name, contract in (("log", log), ("cursor", cursor)):
        path = home / f"{name}.contract.json"
        path.write_text(contract.to_json(), encoding="utf-8")
        paths.append(str(path))
    return paths[0], paths[1]


def measure(rows: int, changes: int, home: Path) -> dict[str, float]:
    from dogana_core.planner import ExtractionRequest
    from dogana_provider.connectors.pgoutput import lsn_of
    from dogana_provider.operators.extract import ExtractOperator

    uid = uuid.uuid4().hex[:8]
    table, slot = f"bench_cdc_{uid}", f"bench_cdc_{uid}"
    log_contract, cursor_contract = contracts(table, home)
    run = {"dag": SimpleNamespace(dag_id="bench_cdc"), "run_id": f"bench_{uid}"}
    db = psycopg.connect(URL, autocommit=True)
    try:
        db.execute(
            f"CREATE TABLE {table} (id bigint PRIMARY KEY, amount numeric(12,2), "
            "name text, updated_at timestamptz NOT NULL)"
        )
        db.execute(
            f"INSERT INTO {table} SELECT i, i %% 1000, 'row ' || i, now() - interval '1 day' "
            "FROM generate_series(1, %s) AS i",
            (rows,),
        )
        db.execute(f"CREATE INDEX ON {table} (updated_at)")
        db.execute(f"VACUUM ANALYZE {table}")
        db.execute(f"CREATE PUBLICATION {slot} FOR TABLE {table}")
        (position,) = db.execute(
            "SELECT lsn::text FROM pg_create_logical_replication_slot(%s, 'pgoutput')", (slot,)
        ).fetchone()
        keys = random.Random(rows).sample(range(1, rows + 1), changes)
        db.execute("CREATE TEMPORARY TABLE changed (id bigint PRIMARY KEY, gone bool NOT NULL)")
        db.execute(
            "INSERT INTO changed SELECT k, o %% 10 = 1 FROM unnest(%s::bigint[]) "
            "WITH ORDINALITY AS c(k, o)",
            (keys,),
        )
        db.execute("ANALYZE changed")
        db.execute("CHECKPOINT")
        since = db.execute("SELECT clock_timestamp()").fetchone()[0]

        start = time.perf_counter()
        with db.transaction():
            db.execute(
                f"UPDATE {table} AS t SET amount = t.amount + 1, "
                "updated_at = clock_timestamp() FROM changed AS c WHERE t.id = c.id AND NOT c.gone"
            )
            db.execute(f"DELETE FROM {table} AS t USING changed AS c WHERE t.id = c.id AND c.gone")
        apply = time.perf_counter() - start
        (wal,) = db.execute(
            "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), %s::pg_lsn)", (position,)
        ).fetchone()
        (updates,) = db.execute("SELECT count(*) FROM changed WHERE NOT gone").fetchone()

        def extract(contract: str, request: Any, **source: Any) -> Any:
            folder = Path(tempfile.mkdtemp(dir=home))
            return ExtractOperator(
                task_id="extract",
                contract=contract,
                request=request,
                output_folder=folder.as_uri(),
                **source,
            ).execute(run)

        now = datetime.now(UTC)
        log_request = ExtractionRequest(
            table, "log", now, since=lsn_of(position), issue_position=True
        )
        connector = {"kind": "pg_logical", "conn_id": SOURCE, "table": table, "slot": slot}
        log, by_log = best(lambda: extract(log_contract, log_request, connector=connector))
        cursor_request = ExtractionRequest(table, "changes", now, since=since)
        cursor, by_cursor = best(
            lambda: extract(cursor_contract, cursor_request, source_conn_id=SOURCE)
        )
        manifests = by_log["manifest"], by_cursor["manifest"]
        assert (manifests[0]["rows"] + manifests[0]["tombstones"]) == changes, manifests[0]
        assert manifests[1]["rows"] == updates, manifests[1]
        return {"rows": rows, "log": log, "cursor": cursor, "apply": apply, "wal": float(wal)}
    finally:
        db.execute(
            "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
            "WHERE slot_name = %s",
            (slot,),
        )
        db.execute(f"DROP PUBLICATION IF EXISTS {slot}")
        db.execute(f"DROP TABLE IF EXISTS {table}")
        db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000], help="table rows"
    )
    parser.add_argument("--changes", type=int, default=10_000)
    args = parser.parse_args()
    os.environ[f"AIRFLOW_CONN_{SOURCE.upper()}"] = json.dumps(
        {
            "conn_type": "postgres",
            "host": "127.0.0.1",
            "port": 5432,
            "login": "postgres",
            "schema": "test",
        }
    )
    with tempfile.TemporaryDirectory(prefix="bench-cdc-") as home:
        results = [measure(rows, args.changes, Path(home)) for rows in args.sizes]
    print(
        f"{args.changes:,} changed rows (9 updates to 1 delete), seconds "
        f"(log and cursor: best of {REPEAT}):"
    )
    print(
        f"{'table rows':>12} {'log':>8} {'cursor':>8} {'apply':>8} {'log/apply':>10} {'WAL MiB':>8}"
    )
    for r in results:
        print(
            f"{r['rows']:>12,} {r['log']:>8.3f} {r['cursor']:>8.3f} {r['apply']:>8.3f} "
            f"{r['log'] / r['apply']:>10.2f} {r['wal'] / 2**20:>8.1f}"
        )
    first, last = results[0], results[-1]
    print(
        f"log delivery at {last['rows']:,} rows over at {first['rows']:,}: "
        f"{last['log'] / first['log']:.2f}x (target: within 1.25x); "
        f"cursor delivery: {last['cursor'] / first['cursor']:.2f}x"
    )
    print(
        "log delivery over the database's own application: "
        + ", ".join(f"{r['log'] / r['apply']:.2f}x at {r['rows']:,}" for r in results)
        + " (target: within 1.5x)"
    )


if __name__ == "__main__":
    main()
