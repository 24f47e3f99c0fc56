"""The CPU seconds of decoding the same MariaDB binlog row images two ways: mysql-replication's
own decoding (a dict per image) and binlog_rows' decoder compiled per table map.

A table of N rows (bench/cdc.py's MariaDB table: bigint key, DECIMAL(12,2), TEXT, DATETIME(6))
gets 10,000 changes in one transaction, nine updates to each delete, spread over the table.
Its rows events are then read from the binlog three times for each way, and only the decoding
of each event's images is timed (time.process_time, after the library has read the event's
header and bitmaps); the least of the three is printed. The same events, the same images: the
two ways' images are compared, not only timed.

    PYTHONPATH=. .venv/bin/python bench/binlog_rows.py --rows 1000000
"""

from __future__ import annotations

import argparse
import random
import time
import uuid
from collections.abc import Callable
from typing import Any

MARIADB = {"host": "127.0.0.1", "port": 3306, "user": "root", "database": "test"}
SETTINGS = {"host": "127.0.0.1", "port": 3306, "user": "root", "passwd": ""}
REPEAT = 3

Decode = Callable[[Any], list[tuple[Any, ...]]]


def changed_table(cursor: Any, table: str, rows: int, changes: int) -> tuple[str, int, int]:
    """The table made and changed; the binlog's file and the positions before and after."""
    from dogana_provider.connectors.mariadb_binlog import BinlogPosition

    cursor.execute(
        f"CREATE TABLE {table} (id bigint PRIMARY KEY, amount decimal(12,2), name text, "
        "updated_at datetime(6) NOT NULL)"
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
    cursor.execute("SHOW MASTER STATUS")
    file, offset, *_ = cursor.fetchone()
    cursor.execute("START TRANSACTION")
    cursor.execute(
        f"UPDATE {table} AS t JOIN changed AS c ON t.id = c.id AND NOT c.gone "
        "SET t.amount = t.amount + 1, t.updated_at = UTC_TIMESTAMP(6)"
    )
    cursor.execute(f"DELETE t FROM {table} AS t JOIN changed AS c ON t.id = c.id AND c.gone")
    cursor.execute("COMMIT")
    cursor.execute("SHOW MASTER STATUS")
    end_file, end_offset, *_ = cursor.fetchone()
    end = BinlogPosition.of_file(end_file, int(end_offset)).as_int()
    return str(file), int(offset), end


def decoded(
    table: str, file: str, offset: int, end: int, decode: Decode
) -> tuple[float, list[tuple[Any, ...]]]:
    """The table's rows events from the position to end, read from the binlog: the CPU seconds
    decode took over their images, and the images."""
    from pymysqlreplication.row_event import (  # type: ignore[import-untyped]
        DeleteRowsEvent,
        TableMapEvent,
        UpdateRowsEvent,
        WriteRowsEvent,
    )

    from dogana_provider.connectors.mariadb_binlog import BinlogPosition, binlog_reader

    reader = binlog_reader(
        SETTINGS,
        None,
        log_file=file,
        log_pos=offset,
        only_events=[TableMapEvent, WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent],
        only_tables=[table],
    )
    cpu = 0.0
    images: list[tuple[Any, ...]] = []
    try:
        for event in reader:
            if BinlogPosition.of_file(reader.log_file, event.packet.log_pos).as_int() > end:
                break
            if isinstance(event, TableMapEvent):
                continue
            start = time.process_time()
            found = decode(event)
            cpu += time.process_time() - start
            images += found
    finally:
        reader.close()
    return cpu, images


def main() -> None:
    import MySQLdb

    from dogana_provider.connectors.binlog_rows import RowImages, library_images

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    parser.add_argument("--rows", type=int, default=1_000_000, help="table rows")
    parser.add_argument("--changes", type=int, default=10_000)
    args = parser.parse_args()
    table = f"bench_binlog_rows_{uuid.uuid4().hex[:8]}"
    db = MySQLdb.connect(**MARIADB, autocommit=True, init_command="SET time_zone = '+00:00'")
    cursor = db.cursor()
    try:
        file, offset, end = changed_table(cursor, table, args.rows, args.changes)
        results = {}
        for name, decode in (("library", library_images), ("binlog_rows", None)):
            runs = [
                decoded(table, file, offset, end, decode or RowImages().of) for _ in range(REPEAT)
            ]
            results[name] = (min(cpu for cpu, _ in runs), runs[0][1])
    finally:
        cursor.execute(f"DROP TABLE IF EXISTS {table}")
        db.close()
    library, compiled = results["library"], results["binlog_rows"]
    assert library[1] == compiled[1], "the two ways decoded different images"
    print(
        f"{args.changes:,} changes over {args.rows:,} rows, {len(library[1]):,} row images, "
        f"decoding CPU seconds (least of {REPEAT}):"
    )
    print(f"  library      {library[0]:.3f}")
    print(f"  binlog_rows  {compiled[0]:.3f}  ({library[0] / compiled[0]:.1f}x less)")


if __name__ == "__main__":
    main()
