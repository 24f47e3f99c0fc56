"""A SQL database (SQLite, PostgreSQL, MySQL/MariaDB) behind the connector contract.

    SqlConnector({"conn_id": "shop_db", "tables": ["orders", "sales.customers"],
                  "key": {"orders": ["order_id"], "sales.customers": ["customer_id"]}})

Each table is a stream; its columns are what its database's catalog says
(sources/discover.py: discover_columns), typed as a delivery writes them. A read is one
consistent snapshot of the database (sources/: the same snapshot a SQL delivery reads in, its
instant the database's clock), ordered by the table's key, so a position is the last key read
(key:[values]) and a resume reads the keys after it. A whole read from the start proves a
complete read of the table at the snapshot's instant. A resume or a backfill is a new snapshot
continuing an older one's keys, which is not one read of the table, and a read stopped by its
limit is not all of it: they prove no shape.

ExtractOperator reads SQL sources through sources/ directly, by the bulk path each database
has; this connector serves the contract's other uses (discover, health, conformance, a bounded
backfill), reading its rows through the driver's cursor.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar

import pyarrow as pa

from dogana_core.shape import Shape
from dogana_core.values import Position, Scalar
from dogana_provider.connectors.contract import (
    Connector,
    ConnectorError,
    Health,
    Proof,
    Reading,
    RefusedRead,
    Stream,
    StreamColumn,
    check_bounded,
    check_limit,
)

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)  # a boundary every clock has passed: no wait
CLOCK = "the database's clock when its snapshot opened"


class SqlConnector(Connector):
    """A SQL database's tables as streams (see the module's text)."""

    kind = "sql"
    options: ClassVar[Mapping[str, str]] = {
        "conn_id": "the Airflow connection: sqlite, postgres or mysql",
        "tables": "the tables to offer as streams, schema-qualified with a dot where needed",
        "key": "table -> its key columns, the order a read and its positions follow",
    }
    required = ("conn_id", "tables")

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        self.hook: Any = None
        self.dialect: Any = None

    def check(self) -> tuple[str, ...]:
        problems: list[str] = []
        conn_id = self.config.get("conn_id")
        if "conn_id" in self.config and (not isinstance(conn_id, str) or not conn_id):
            problems.append(f"conn_id: {conn_id!r} is not a connection id")
        tables = self.config.get("tables", [])
        if not isinstance(tables, list | tuple) or not all(
            isinstance(t, str) and t for t in tables
        ):
            problems.append(f"tables: {tables!r} is not a list of table names")
            tables = []
        elif "tables" in self.config and not tables:
            problems.append("tables: name at least one table")
        keys = self.config.get("key", {})
        if not isinstance(keys, Mapping):
            problems.append("key: a mapping from table to its key columns")
        else:
            for table, columns in keys.items():
                if table not in tables:
                    problems.append(f"key: {table!r} is not one of the tables")
                if not isinstance(columns, list | tuple) or not columns:
                    problems.append(f"key: {table}: {columns!r} is not a list of columns")
        return tuple(problems)

    def open(self) -> None:
        from dogana_provider.dialects import dialect_for
        from dogana_provider.hooks.sql import sql_hook

        self.hook = sql_hook(str(self.config["conn_id"]), "source")
        self.dialect = dialect_for(self.hook)

    def close(self) -> None:
        self.hook = None

    def key(self, table: str) -> tuple[str, ...]:
        return tuple(dict(self.option("key", {})).get(table, ()))

    def quoted(self, table: str) -> str:
        return ".".join(self.dialect.quote(part) for part in table.split("."))

    # Operations -------------------------------------------------------------------------------

    def discover(self) -> tuple[Stream, ...]:
        from dogana_provider.sources.discover import discover_columns

        self.connect()
        connection = self.hook.get_conn()
        try:
            return tuple(
                Stream(
                    table,
                    tuple(
                        StreamColumn(c.name, c.type, c.nullable)
                        for c in discover_columns(connection, self.dialect, table)
                    ),
                    self.key(table),
                )
                for table in self.config["tables"]
            )
        finally:
            connection.close()

    def health(self) -> Health:
        problems = self.validate()
        if problems:
            return Health(False, "; ".join(problems))
        try:
            self.connect()
            with self.snapshots().snapshot(EPOCH) as snapshot:
                instant = snapshot.produced_at
        except Exception as exc:  # health reports whatever stops the source; it never raises
            return Health(False, f"{type(exc).__name__}: {exc}")
        return Health(True, f"{self.dialect}: a snapshot opened at {instant.isoformat()}")

    def snapshots(self) -> Any:
        from dogana_provider.sources import snapshots_for

        return snapshots_for(self.hook, fetch_rows=10_000)

    def read(
        self, stream: str, *, since: Scalar | None = None, limit: int | None = None
    ) -> Reading:
        self.connect()
        check_limit(limit)
        found = self.stream(stream)
        start = None if since is None else _key_of(since, found)
        return SqlReading(self, found, start, limit=limit, end=None)

    def backfill(
        self, stream: str, low: Position, high: Position, *, limit: int | None = None
    ) -> Reading:
        check_bounded(low, high)
        self.connect()
        check_limit(limit)
        found = self.stream(stream)
        return SqlReading(self, found, _key_of(low, found), limit=limit, end=_key_of(high, found))


def _key_of(position: Scalar, stream: Stream) -> list[Any] | None:
    text = str(position)
    if text == "start":
        return None
    if not text.startswith("key:"):
        raise ConnectorError(f"{position!r} is not a position of a SQL table (key:[values])")
    try:
        values = json.loads(text[4:])
    except ValueError:
        raise ConnectorError(f"{position!r}: its key values are not JSON") from None
    if not isinstance(values, list) or len(values) != len(stream.key):
        raise ConnectorError(f"{position!r} does not name {stream.name}'s key {list(stream.key)}")
    return values


class SqlReading(Reading):
    """One snapshot read of a table in key order, after a key and up to one."""

    def __init__(
        self,
        connector: SqlConnector,
        stream: Stream,
        start: list[Any] | None,
        *,
        limit: int | None,
        end: list[Any] | None,
    ) -> None:
        self.connector = connector
        self.stream = stream
        self.start = start
        self.limit = limit
        self.end = end
        self.last: list[Any] | None = start
        self.rows = 0
        self.finished = False
        self.stopped_by_limit = False
        self.produced_at: datetime | None = None
        self.schema = stream.schema()

    def checkpoint(self) -> Position:
        if not self.stream.key:
            raise RefusedRead(
                "no_position",
                f"{self.stream.name}: no key is configured, so no row names a position to resume "
                "after; name the table's key",
            )
        if self.last is None:
            return "start"
        return "key:" + json.dumps(self.last)

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        from dogana_provider.sources.columns import Columns

        connector, dialect = self.connector, self.connector.dialect
        key = list(self.stream.key)
        if (self.start is not None or self.end is not None) and not key:
            raise RefusedRead("no_position", f"{self.stream.name}: positions need a key")
        with connector.snapshots().snapshot(EPOCH) as snapshot:
            self.produced_at = snapshot.produced_at
            names = ", ".join(dialect.quote(c.name) for c in self.stream.columns)
            sql = f"SELECT {names} FROM {connector.quoted(self.stream.name)}"
            params: dict[str, Any] = {}
            where = []
            row = ", ".join(dialect.quote(k) for k in key)
            for bound, values, compare in (("after", self.start, ">"), ("upto", self.end, "<=")):
                if values is not None:
                    marks = []
                    for index, value in enumerate(values):
                        params[f"{bound}{index}"] = value
                        marks.append(snapshot.placeholder(f"{bound}{index}"))
                    where.append(f"({row}) {compare} ({', '.join(marks)})")
            if where:
                sql += " WHERE " + " AND ".join(where)
            if key:
                sql += f" ORDER BY {row}"
            typed = {c.name: c.type for c in self.stream.columns}
            columns = None
            for description, rows in snapshot.stream(sql, params):
                if self.limit is not None and self.rows + len(rows) > self.limit:
                    rows = rows[: self.limit - self.rows]
                    self.stopped_by_limit = True
                if columns is None:
                    columns = Columns(dialect, description, rows, typed, {})
                if rows:
                    batch = columns.batch(rows).cast(self.schema)
                    self.rows += batch.num_rows
                    if key:
                        last = batch.slice(batch.num_rows - 1)
                        self.last = [last.column(k)[0].as_py() for k in key]
                    yield batch
                if self.stopped_by_limit:
                    break
        self.finished = True

    def proof(self) -> Proof:
        if self.produced_at is None or not self.finished:
            raise ConnectorError("the read is not finished: read its batches first")
        shape: Shape | None
        if self.stopped_by_limit:
            shape, why = None, "stopped by its limit before the last row"
        elif self.start is not None or self.end is not None:
            shape, why = None, "a later snapshot continuing an earlier one's keys is not one read"
        else:
            shape, why = Shape.complete(), "the whole table in one snapshot"
        return Proof(
            shape,
            self.produced_at,
            CLOCK,
            None if self.start is None else "key:" + json.dumps(self.start),
            self.checkpoint() if self.stream.key else None,
            why,
        )
