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
from collections.abc import Iterator
from typing import Any


def main() -> None:
    # The driver manager's own module, not its DB-API one: that one imports pyarrow.dataset and
    # pyarrow.compute, most of this process's start, which the read waits for.
    import adbc_driver_manager as manager
    import adbc_driver_sqlite
    import pyarrow as pa
    import pyarrow.ipc

    out = sys.stdout.buffer
    database: Any = None
    connection: Any = None

    def reply(**fields: Any) -> None:
        out.write(json.dumps(fields).encode() + b"\n")
        out.flush()

    @contextlib.contextmanager
    def statement(sql: str, **options: str) -> Iterator[Any]:
        prepared = manager.AdbcStatement(connection)
        try:
            if options:
                prepared.set_options(**options)
            prepared.set_sql_query(sql)
            yield prepared
        finally:
            prepared.close()

    def rows(prepared: Any) -> Any:
        stream, _ = prepared.execute_query()
        return pa.RecordBatchReader._import_from_c(stream.address)

    def one(sql: str) -> Any:
        with statement(sql) as prepared:
            table = rows(prepared).read_all()
        return table.column(0)[0].as_py() if table.num_rows else None

    for line in sys.stdin:
        command = json.loads(line)
        op = command["op"]
        if op == "end":
            break
        try:
            if op == "open":
                # ADBC's connections commit each statement themselves (autocommit) by default.
                database = adbc_driver_sqlite.connect(command["path"])
                connection = manager.AdbcConnection(database)
                one("PRAGMA query_only = ON")
                one(f"PRAGMA busy_timeout = {int(command['busy_timeout'])}")
                reply(ok=None)
            elif op == "begin":
                one("BEGIN")
                one("SELECT count(*) FROM sqlite_master")
                reply(ok=None)
            elif op == "read":
                option = {"adbc.sqlite.query.batch_rows": str(int(command["batch_rows"]))}
                with statement(command["sql"], **option) as prepared:
                    prepared.prepare()
                    # Named parameters (:since) in the order SQLite numbers them.
                    wanted = pa.schema(prepared.get_parameter_schema())
                    values = [command["params"][str(name)[1:]] for name in wanted.names]
                    if values:
                        prepared.bind(
                            pa.record_batch(
                                [[value] for value in values],
                                names=[str(i) for i in range(len(values))],
                            )
                        )
                    batches = rows(prepared)
                    reply(ok="stream")
                    stopped = None
                    writer = pa.ipc.new_stream(out, batches.schema)
                    try:
                        for batch in batches:
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
            else:
                reply(error=f"unknown op {op!r}")
        except Exception as exc:
            reply(error=f"{type(exc).__name__}: {exc}")
    if connection is not None:
        with contextlib.suppress(Exception):  # no transaction was open
            one("ROLLBACK")
        connection.close()
        database.close()


if __name__ == "__main__":
    main()
    # The read's process waits for this one to end, and the interpreter's own teardown (pyarrow's
    # modules and allocator) takes longer than the read's last batch: the connection is closed
    # and every answer flushed, so nothing is left that an orderly exit would finish.
    os._exit(0)
