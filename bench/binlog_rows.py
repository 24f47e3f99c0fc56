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
import time
import uuid
from collections.abc import Callable
from typing import Any

from cdc import MARIADB, change_mariadb_table, mariadb_table

SETTINGS = {"host": "127.0.0.1", "port": 3306, "user": "root", "passwd": ""}
REPEAT = 3

Decode = Callable[[Any], list[tuple[Any, ...]]]


def changed_table(cursor: Any, table: str, rows: int, changes: int) -> tuple[str, int, int]:
    """The table made and changed; the binlog's file and the positions before and after."""
    from dogana_provider.connectors.mariadb_binlog import BinlogPosition

    mariadb_table(cursor, table, rows, changes)
    cursor.execute("SHOW MASTER STATUS")
    file, offset, *_ = cursor.fetchone()
    change_mariadb_table(cursor, table)
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
