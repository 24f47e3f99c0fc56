"""The reader process: ADBC's SQLite driver reads a database file into Arrow for sqlite.py.

adbc-driver-sqlite carries its own copy of SQLite, which must never open a file that Python's
sqlite3 has open in the same process: POSIX locks belong to a process, so each copy would take
the other's locks for its own (the first to open a WAL file rebuilds its index under the other's
feet; the first to close one releases the other's locks). So the driver runs here, in a process
of its own, and nowhere else; sqlite.py starts it, by path (the dogana package is not imported
here), and speaks to it in JSON lines on stdin and stdout:

    {"op": "open", "path": ..., "busy_timeout": ms}     the connection, read-only (query_only)
    {"op": "begin"}                                     BEGIN, and a first read takes the snapshot
    {"op": "read", "sql": ..., "params": {...}, "batch_rows": n}
    {"op": "end"}                                       (or end of input) roll back and leave

Each is answered by one line, {"ok": value} or {"error": "why"}; a read's "ok" is followed by
its rows as an Arrow IPC stream and then by one more line: {"ok": null} once every row was
sent, or {"error": "why"} when the driver stopped (its stream is then ended early).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from typing import Any


def main() -> None:
    import adbc_driver_sqlite.dbapi as dbapi
    import pyarrow as pa

    out = sys.stdout.buffer
    connection: Any = None

    def reply(**fields: Any) -> None:
        out.write(json.dumps(fields).encode() + b"\n")
        out.flush()

    def one(sql: str) -> Any:
        cursor = connection.cursor()
        try:
            cursor.execute(sql)
            row = cursor.fetchone()
            return None if row is None else row[0]
        finally:
            cursor.close()

    for line in sys.stdin:
        command = json.loads(line)
        op = command["op"]
        if op == "end":
            break
        try:
            if op == "open":
                connection = dbapi.connect(command["path"], autocommit=True)
                one("PRAGMA query_only = ON")
                one(f"PRAGMA busy_timeout = {int(command['busy_timeout'])}")
                reply(ok=None)
            elif op == "begin":
                one("BEGIN")
                one("SELECT count(*) FROM sqlite_master")
                reply(ok=None)
            elif op == "read":
                cursor = connection.cursor()
                try:
                    option = {"adbc.sqlite.query.batch_rows": str(int(command["batch_rows"]))}
                    cursor.adbc_statement.set_options(**option)
                    # Named parameters (:since) in the order SQLite numbers them.
                    names = cursor.adbc_prepare(command["sql"]).names
                    values = tuple(command["params"][str(name)[1:]] for name in names)
                    cursor.execute(command["sql"], parameters=values or None)
                    rows = cursor.fetch_record_batch()
                    reply(ok="stream")
                    stopped = None
                    writer = pa.ipc.new_stream(out, rows.schema)
                    try:
                        for batch in rows:
                            writer.write_batch(batch)
                            out.flush()
                    except Exception as exc:  # the driver's typing, refused by a later value
                        stopped = f"{type(exc).__name__}: {exc}"
                    finally:
                        writer.close()
                    if stopped is None:
                        reply(ok=None)
                    else:
                        reply(error=stopped)
                finally:
                    cursor.close()
            else:
                reply(error=f"unknown op {op!r}")
        except Exception as exc:
            reply(error=f"{type(exc).__name__}: {exc}")
    if connection is not None:
        with contextlib.suppress(Exception):  # no transaction was open
            one("ROLLBACK")
        connection.close()


if __name__ == "__main__":
    main()
    # The read's process waits for this one to end, and the interpreter's own teardown (pyarrow's
    # modules and allocator) takes longer than the read's last batch: the connection is closed
    # and every answer flushed, so nothing is left that an orderly exit would finish.
    os._exit(0)
