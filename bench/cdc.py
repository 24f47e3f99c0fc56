"""Changed rows delivered from the database's log beside a cursor-column changes delivery and the
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
created and advanced as a pipeline's reads advance it (in_service), the changed keys are
staged, a CHECKPOINT is taken, then CHANGES rows are updated or deleted (nine updates to each
delete, spread over the table). The CHECKPOINT puts both sizes where a table in service is:
each page the changes touch is written to the WAL whole once after a checkpoint, so the WAL
the log read decodes grows with the pages touched, and it is printed. The log and cursor
deliveries read the same committed changes and are repeated (REPEAT times, the best kept: a
peek does not move the slot); the apply happens once.
Not a timed test: it prints times and ratios measured in this one run. Beside the log delivery,
its parts: peek, the server's decoding alone (the slot's changes fetched, best of REPEAT), and
the WAL it read for them (read MiB, from the slot's restart point: the changes' WAL and what
the rest of the server wrote meanwhile); decode, the CPU seconds pgoutput.py takes over the
same messages.

On MariaDB (measure_mariadb) the log is the row binlog read by the mariadb_binlog connector.
Beside the log delivery: read MiB, the binlog bytes its read went through (from the position
before the changes to the binlog's end: the changes' row images and what the rest of the
server logged meanwhile); log cpu, the CPU seconds the connector's read alone takes (reading
the binlog's events and decoding their row images into record batches, no file written; best
of REPEAT).

    PYTHONPATH=. .venv/bin/python bench/cdc.py                           # 1,000,000 and 10,000,000
    PYTHONPATH=. .venv/bin/python bench/cdc.py --sizes 100000 1000000 --databases postgresql
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
from math import nan
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psycopg

URL = "host=127.0.0.1 port=5432 user=postgres dbname=test"
MARIADB = {"host": "127.0.0.1", "port": 3306, "user": "root", "database": "test"}
SOURCE = "bench_cdc_source"
MARIADB_SOURCE = "bench_cdc_mariadb"
REPEAT = 3


def best(
    call: Callable[[], Any], clock: Callable[[], float] = time.perf_counter
) -> tuple[float, Any]:
    """The shortest of REPEAT runs of call on a clock (the wall's, or the process's CPU time),
    and what the last returned."""
    times, value = [], None
    for _ in range(REPEAT):
        start = clock()
        value = call()
        times.append(clock() - start)
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

    uid = uuid.uuid4().hex[:8]
    table, slot = f"bench_cdc_{uid}", f"bench_cdc_{uid}"
    log_contract, cursor_contract = contracts(table, home)
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
        db.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (slot,))
        position = in_service(db, slot)
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

        now = datetime.now(UTC)
        log_request = ExtractionRequest(
            table, "log", now, since=lsn_of(position), issue_position=True
        )
        connector = {"kind": "pg_logical", "conn_id": SOURCE, "table": table, "slot": slot}
        log, by_log = best(lambda: _extract(home, log_contract, log_request, connector=connector))
        peek, (decoded, messages) = best(lambda: _peek(db, slot))
        decode = min(_decode(messages) for _ in range(REPEAT))
        cursor_request = ExtractionRequest(table, "changes", now, since=since)
        cursor, by_cursor = best(
            lambda: _extract(home, cursor_contract, cursor_request, source_conn_id=SOURCE)
        )
        manifests = by_log["manifest"], by_cursor["manifest"]
        assert (manifests[0]["rows"] + manifests[0]["tombstones"]) == changes, manifests[0]
        assert manifests[1]["rows"] == updates, manifests[1]
        return {
            "rows": rows,
            "log": log,
            "peek": peek,
            "decode": decode,
            "cursor": cursor,
            "apply": apply,
            "wal": float(wal),
            "decoded": float(decoded),
        }
    finally:
        db.execute(
            "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
            "WHERE slot_name = %s",
            (slot,),
        )
        db.execute(f"DROP PUBLICATION IF EXISTS {slot}")
        db.execute(f"DROP TABLE IF EXISTS {table}")
        db.close()


def in_service(db: Any, slot: str) -> str:
    """The slot as a pipeline in service holds it, and its position: advanced to the log's end
    twice, a checkpoint (a record of the running transactions) between. A new slot's restart
    point, where each read's decoding starts, is where it began waiting for the transactions
    running anywhere in the server to end (on a shared server, hundreds of MiB of others' WAL
    before its position); each advance moves it up to the last such record the slot confirmed,
    as a pipeline's reads do."""
    position = ""
    for _ in range(2):
        db.execute("CHECKPOINT")
        (position,) = db.execute(
            "SELECT end_lsn::text FROM "
            "pg_replication_slot_advance(%s, pg_current_wal_insert_lsn())",
            (slot,),
        ).fetchone()
    return str(position)


def _peek(db: Any, slot: str) -> tuple[int, list[bytes]]:
    """The server's part of a log read alone: the slot's changes to the log's end, and how many
    bytes of WAL it decoded for them (from the slot's restart point)."""
    (end,) = db.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
    messages = db.execute(
        "SELECT data FROM pg_logical_slot_peek_binary_changes(%s, %s::pg_lsn, NULL, "
        "'proto_version', '1', 'publication_names', %s)",
        (slot, end, slot),
    ).fetchall()
    (decoded,) = db.execute(
        "SELECT pg_wal_lsn_diff(%s::pg_lsn, restart_lsn) FROM pg_replication_slots "
        "WHERE slot_name = %s",
        (end, slot),
    ).fetchone()
    return int(decoded), [bytes(data) for (data,) in messages]


def _decode(messages: list[bytes]) -> float:
    """The worker's decoding of the messages (pgoutput.py) alone: the seconds of CPU it took."""
    from dogana_provider.connectors.pgoutput import decode

    start = time.process_time()
    for data in messages:
        decode(data)
    return time.process_time() - start


def mariadb_table(cursor: Any, table: str, rows: int, changes: int) -> None:
    """The MariaDB table of N rows made (bigint key, DECIMAL(12,2), TEXT, DATETIME(6) with the
    cursor's index), and its changes' keys staged in the temporary table changed: changes keys
    spread over the table, one in ten to delete (gone), the others to update."""
    cursor.execute(
        f"CREATE TABLE {table} (id bigint PRIMARY KEY, amount decimal(12,2), name text, "
        "updated_at datetime(6) NOT NULL, KEY (updated_at))"
    )
    cursor.execute(
        f"INSERT INTO {table} SELECT seq, seq %% 1000, concat('row ', seq), "
        "UTC_TIMESTAMP(6) - INTERVAL 1 DAY FROM seq_1_to_%s",
        (rows,),
    )
    keys = random.Random(rows).sample(range(1, rows + 1), changes)
    cursor.execute("CREATE TEMPORARY TABLE changed (id bigint PRIMARY KEY, gone bool)")
    cursor.executemany(
        "INSERT INTO changed VALUES (%s, %s)", [(k, i % 10 == 0) for i, k in enumerate(keys)]
    )


def change_mariadb_table(cursor: Any, table: str) -> None:
    """The staged changes made in one transaction: the updates, then the deletes."""
    cursor.execute("START TRANSACTION")
    cursor.execute(
        f"UPDATE {table} AS t JOIN changed AS c ON t.id = c.id AND NOT c.gone "
        "SET t.amount = t.amount + 1, t.updated_at = UTC_TIMESTAMP(6)"
    )
    cursor.execute(f"DELETE t FROM {table} AS t JOIN changed AS c ON t.id = c.id AND c.gone")
    cursor.execute("COMMIT")


def measure_mariadb(rows: int, changes: int, home: Path) -> dict[str, float]:
    """The same three on MariaDB: the binlog (mariadb_binlog) from the position before the
    changes, the cursor column through the SQL source, the server's own UPDATE and DELETE
    joined to the staged keys. Its pages are flushed first (innodb_max_dirty_pages_pct 0) as
    PostgreSQL's CHECKPOINT does; the binlog carries row images, not pages."""
    import MySQLdb

    from dogana_core.planner import ExtractionRequest
    from dogana_provider.connectors.mariadb_binlog import BinlogPosition

    uid = uuid.uuid4().hex[:8]
    table = f"bench_cdc_{uid}"
    log_contract, cursor_contract = contracts(table, home)
    db = MySQLdb.connect(**MARIADB, autocommit=True, init_command="SET time_zone = '+00:00'")
    cursor = db.cursor()
    try:
        mariadb_table(cursor, table, rows, changes)
        cursor.execute("SHOW MASTER STATUS")
        file, offset, *_ = cursor.fetchone()
        position = BinlogPosition.of_file(file, int(offset)).as_int()
        cursor.execute("SELECT UTC_TIMESTAMP(6)")
        since = cursor.fetchone()[0].replace(tzinfo=UTC)

        start = time.perf_counter()
        change_mariadb_table(cursor, table)
        apply = time.perf_counter() - start
        cursor.execute("SHOW MASTER STATUS")
        file, offset, *_ = cursor.fetchone()
        logged = BinlogPosition.of_file(file, int(offset))
        start_at = BinlogPosition.of_int(position)
        wal = logged.offset - start_at.offset if logged.number == start_at.number else float("nan")
        cursor.execute("SELECT count(*) FROM changed WHERE NOT gone")
        (updates,) = cursor.fetchone()

        now = datetime.now(UTC)
        log_request = ExtractionRequest(table, "log", now, since=position, issue_position=True)
        connector = {"kind": "mariadb_binlog", "conn_id": MARIADB_SOURCE, "table": table}
        log, by_log = best(lambda: _extract(home, log_contract, log_request, connector=connector))
        log_cpu, read = best(lambda: _binlog_read(table, position), clock=time.process_time)
        cursor_request = ExtractionRequest(table, "changes", now, since=since)
        cursor_time, by_cursor = best(
            lambda: _extract(home, cursor_contract, cursor_request, source_conn_id=MARIADB_SOURCE)
        )
        manifests = by_log["manifest"], by_cursor["manifest"]
        assert (manifests[0]["rows"] + manifests[0]["tombstones"]) == changes, manifests[0]
        assert manifests[1]["rows"] == updates, manifests[1]
        return {
            "rows": rows,
            "log": log,
            "cursor": cursor_time,
            "apply": apply,
            "wal": float(wal),
            "decoded": float(read),
            "log_cpu": log_cpu,
        }
    finally:
        cursor.execute(f"DROP TABLE IF EXISTS {table}")
        db.close()


def _binlog_read(table: str, position: int) -> float:
    """The connector's read of the binlog from a position, alone (no file written): the binlog
    bytes it went through, or nan where the binlog moved to another file meanwhile."""
    from dogana_provider.connectors import MariadbBinlogConnector
    from dogana_provider.connectors.mariadb_binlog import BinlogPosition

    with MariadbBinlogConnector({"conn_id": MARIADB_SOURCE, "table": table}) as connector:
        reading = connector.read(table, since=position)
        for _ in reading:
            pass
        since, end = BinlogPosition.of_int(position), BinlogPosition.of_int(reading.checkpoint())
    return float(end.offset - since.offset) if end.number == since.number else nan


def _extract(home: Path, contract: str, request: Any, **source: Any) -> Any:
    """ExtractOperator.execute, as a task runs it, into a folder of its own."""
    from dogana_provider.operators.extract import ExtractOperator

    folder = Path(tempfile.mkdtemp(dir=home))
    return ExtractOperator(
        task_id="extract",
        contract=contract,
        request=request,
        output_folder=folder.as_uri(),
        **source,
    ).execute({"dag": SimpleNamespace(dag_id="bench_cdc"), "run_id": f"bench_{folder.name}"})


MEASURES = {"postgresql": measure, "mariadb": measure_mariadb}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000], help="table rows"
    )
    parser.add_argument("--changes", type=int, default=10_000)
    parser.add_argument("--databases", default="postgresql,mariadb", help=", ".join(MEASURES))
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
    os.environ[f"AIRFLOW_CONN_{MARIADB_SOURCE.upper()}"] = json.dumps(
        {"conn_type": "mysql", "host": "127.0.0.1", "port": 3306, "login": "root", "schema": "test"}
    )
    print(
        f"{args.changes:,} changed rows (9 updates to 1 delete), seconds "
        f"(log and cursor: best of {REPEAT}):"
    )
    print(
        f"{'database':>10} {'table rows':>12} {'log':>8} {'cursor':>8} {'apply':>8} "
        f"{'log/apply':>10} {'log MiB':>8} {'peek':>8} {'read MiB':>8} {'decode':>8} "
        f"{'log cpu':>8}"
    )
    lines = []
    for database in args.databases.split(","):
        with tempfile.TemporaryDirectory(prefix="bench-cdc-") as home:
            results = [MEASURES[database](rows, args.changes, Path(home)) for rows in args.sizes]
        for r in results:
            print(
                f"{database:>10} {r['rows']:>12,} {r['log']:>8.3f} {r['cursor']:>8.3f} "
                f"{r['apply']:>8.3f} {r['log'] / r['apply']:>10.2f} {r['wal'] / 2**20:>8.1f} "
                f"{r.get('peek', nan):>8.3f} {r.get('decoded', nan) / 2**20:>8.1f} "
                f"{r.get('decode', nan):>8.3f} {r.get('log_cpu', nan):>8.3f}",
                flush=True,
            )
        first, last = results[0], results[-1]
        lines.append(
            f"{database}: log delivery at {last['rows']:,} rows over at {first['rows']:,}: "
            f"{last['log'] / first['log']:.2f}x (target: within 1.25x); cursor delivery: "
            f"{last['cursor'] / first['cursor']:.2f}x"
        )
        lines.append(
            f"{database}: log delivery over the database's own application: "
            + ", ".join(f"{r['log'] / r['apply']:.2f}x at {r['rows']:,}" for r in results)
            + " (target: within 1.5x)"
        )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
