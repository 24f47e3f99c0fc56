"""Changed rows read from PostgreSQL's log beside a cursor-column read and the database's own
application of the same changes, over tables of growing size, in one run.

    log         PgLogicalConnector: the changes the slot decoded since its position, as Arrow
                record batches of the stream (every update and delete, tombstones included)
    cursor      the rows whose updated_at (indexed) moved since the last read, through a
                server-side cursor: what a cursor-column changes read selects (it sees no delete)
    apply       the database applying the same changes itself: the UPDATE and DELETE statements,
                one transaction (the floor any capture is compared with)

For each table size the table is made with N rows, a slot is created, then CHANGES rows are
updated or deleted (nine updates to each delete, spread over the table) in transactions of 100.
The question is whether the log read grows with the changes, not the table: its time at the
largest size over its time at the smallest. It decodes every byte of WAL the changes wrote, so
it is printed too: the same changes spread over more pages write more full-page images after a
checkpoint. Not a timed test: it prints times and ratios
measured in this one run.

    PYTHONPATH=. .venv/bin/python bench/cdc.py                           # 1,000,000 and 10,000,000
    PYTHONPATH=. .venv/bin/python bench/cdc.py --rows 100000 1000000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
import uuid

import psycopg

URL = "host=127.0.0.1 port=5432 user=postgres dbname=test"


def measure(rows: int, changes: int) -> dict[str, float]:
    from dogana_provider.connectors import PgLogicalConnector
    from dogana_provider.connectors.pgoutput import lsn_of

    uid = uuid.uuid4().hex[:8]
    table, slot = f"bench_cdc_{uid}", f"bench_cdc_{uid}"
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
        since = db.execute("SELECT clock_timestamp()").fetchone()[0]
        keys = random.Random(rows).sample(range(1, rows + 1), changes)
        updates = [k for i, k in enumerate(keys) if i % 10]
        deletes = [k for i, k in enumerate(keys) if not i % 10]

        start = time.perf_counter()
        with db.transaction():
            for part in range(0, len(updates), 100):
                db.execute(
                    f"UPDATE {table} SET amount = amount + 1, updated_at = clock_timestamp() "
                    "WHERE id = ANY(%s)",
                    (updates[part : part + 100],),
                )
            db.execute(f"DELETE FROM {table} WHERE id = ANY(%s)", (deletes,))
        apply = time.perf_counter() - start
        (wal,) = db.execute(
            "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), %s::pg_lsn)", (position,)
        ).fetchone()

        start = time.perf_counter()
        with db.transaction():
            cursor = db.cursor(name="bench_cursor")
            cursor.execute(f"SELECT * FROM {table} WHERE updated_at > %s", (since,))
            selected = sum(len(batch) for batch in iter(lambda: cursor.fetchmany(10_000), []))
            cursor.close()
        cursor_read = time.perf_counter() - start

        reader = PgLogicalConnector({"conn_id": "bench_cdc_source", "table": table, "slot": slot})
        reader.connect()  # Airflow's connection lookup, once, outside the measure
        reader.discover()
        start = time.perf_counter()
        with reader:
            delivered = sum(batch.num_rows for batch in reader.read(table, since=lsn_of(position)))
        log = time.perf_counter() - start
        assert delivered == changes, (delivered, changes)
        assert selected == len(updates), (selected, len(updates))
        return {"rows": rows, "log": log, "cursor": cursor_read, "apply": apply, "wal": float(wal)}
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
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--changes", type=int, default=10_000)
    args = parser.parse_args()
    os.environ["AIRFLOW_CONN_BENCH_CDC_SOURCE"] = json.dumps(
        {
            "conn_type": "postgres",
            "host": "127.0.0.1",
            "port": 5432,
            "login": "postgres",
            "schema": "test",
        }
    )
    results = [measure(rows, args.changes) for rows in args.rows]
    print(f"{args.changes:,} changed rows (9 updates to 1 delete), seconds:")
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
        f"log read at {last['rows']:,} rows over at {first['rows']:,}: "
        f"{last['log'] / first['log']:.2f}x (target: within 1.25x); "
        f"cursor read: {last['cursor'] / first['cursor']:.2f}x"
    )


if __name__ == "__main__":
    main()
