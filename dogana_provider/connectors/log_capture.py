"""What the log connectors (pg_logical.py, mariadb_binlog.py) do alike: how a table's columns
differ from the declared ones, what a refusal tells the person to run, and how they read the
table itself rather than its log.

A log read that cannot prove what it would claim refuses by name (RefusedRead) and leaves what
is published as it was; every such refusal ends with full_read(table), the one way back: a
delivery of the contract's complete shape, which starts the log again from a new snapshot.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol

import pyarrow as pa

from dogana_core.values import Position, Scalar
from dogana_provider.connectors.contract import ConnectorError, Proof, Reading, RefusedRead, Stream

KEY, START, INSIDE = "key:", "start", "inside:"


def columns_difference(
    table: str, first: str, before: list[tuple[Any, ...]], after: list[tuple[Any, ...]]
) -> str | None:
    """Columns (name, then what types it) before and after, their differences named; None when
    they are the same."""
    if before == after:
        return None
    old, new = {c[0]: c[1:] for c in before}, {c[0]: c[1:] for c in after}
    differences = [f"{n} added" for n in new if n not in old]
    differences += [f"{n} removed" for n in old if n not in new]
    differences += [f"{n} retyped" for n in new if n in old and old[n] != new[n]]
    return (
        f"{table}'s columns {first} ({', '.join(old)}) are not its columns now "
        f"({', '.join(new)}): {', '.join(differences) or 'their order changed'}"
    )


def undeclared(
    table: str, declared: Mapping[str, str] | None, now: list[tuple[str, str]]
) -> str | None:
    """How a table's columns now (name, logical type) differ from the declared ones (the
    connector's "columns" option), or None when they do not, or none are declared."""
    if declared is None:
        return None
    return columns_difference(table, "declared", list(declared.items()), list(now))


def full_read(table: str) -> str:
    """What a refusal tells the person to run."""
    return (
        f"a full read resets the chain: run one delivery of {table}'s complete shape "
        "(PlanDeliveryOperator's shape=, or the DAG triggered with that shape)"
    )


# Positions other than the log's -----------------------------------------------------------------


def keys(value: Scalar | None) -> list[Any] | None:
    """A key position ("key:" and the last key read, as JSON) as its values; None from the
    start ("start", or no position)."""
    if value is None or value == START:
        return None
    if isinstance(value, str) and value.startswith(KEY):
        try:
            found = json.loads(value[len(KEY) :])
        except ValueError:
            found = None
        if isinstance(found, list) and found:
            return found
    raise ConnectorError(f"{value!r} is not a position: a log position or {KEY}[the last key]")


def key_position(values: list[Any] | None) -> str:
    return START if values is None else KEY + json.dumps(values, default=str)


def inside(value: str) -> tuple[int, int]:
    """A position inside a transaction a limit cut ("inside:", the log position the read
    resumes from, ":", how many of that transaction's rows were read)."""
    place, _, read = value[len(INSIDE) :].partition(":")
    if not (place.isdigit() and read.isdigit() and int(read) > 0):
        raise ConnectorError(f"{value!r} is not a position inside a transaction")
    return int(place), int(read)


def inside_position(place: int, read: int) -> str:
    return f"{INSIDE}{place}:{read}"


def unproven(stopped_by_limit: bool, skip: int) -> str:
    """Why a log read that is not every change from since to the log's end proves no shape."""
    if stopped_by_limit:
        return "stopped by its limit before the log's end"
    if skip:
        return "a resume inside a transaction a limit cut is not every change after since"
    return "a backfill between two positions"


# Reads of the table itself ----------------------------------------------------------------------


class TableSource(Protocol):
    """What a log connector gives a read of its table."""

    dialect: Any
    snapshot_clock: str

    @property
    def table(self) -> str: ...

    @property
    def fetch_rows(self) -> int: ...

    def quoted(self) -> str: ...

    def table_snapshot(self) -> AbstractContextManager[tuple[Any, datetime]]:
        """A session in a read-only snapshot of its own, and the instant the snapshot shows."""
        ...


class TableReading(Reading):
    """Rows of the table itself (not its log) in key order, from after one key up to another."""

    def __init__(
        self,
        connector: TableSource,
        stream: Stream,
        after: list[Any] | None,
        upto: list[Any] | None,
        *,
        limit: int | None,
    ) -> None:
        self.connector = connector
        self.stream = stream
        self.after = after
        self.upto = upto
        self.limit = limit
        self.rows = 0
        self.last = after
        self.produced_at: datetime | None = None
        self.finished = False
        self.stopped_by_limit = False

    def _select(self, connection: Any) -> Iterator[pa.RecordBatch]:
        """The rows the open transaction sees, each batch cast to the stream's schema."""
        from dogana_provider.sources.columns import Columns

        connector, quote = self.connector, self.connector.dialect.quote
        names = [c.name for c in self.stream.columns if c.name != self.stream.deleted_column]
        typed = {c.name: c.type for c in self.stream.columns}
        table_schema = pa.schema([f for f in self.stream.schema() if f.name in names])
        key = list(self.stream.key)
        row = ", ".join(quote(k) for k in key)
        sql = f"SELECT {', '.join(quote(n) for n in names)} FROM {connector.quoted()}"
        where, params = [], []
        for values, compare in ((self.after, ">"), (self.upto, "<=")):
            if values is not None:
                if len(values) != len(key):
                    raise ConnectorError(f"{values!r} is not a key of {key}")
                where.append(f"({row}) {compare} ({', '.join(['%s'] * len(values))})")
                params += values
        if where:
            sql += " WHERE " + " AND ".join(where)
        if key:
            sql += f" ORDER BY {row}"
        reader = connector.dialect.streaming_cursor(connection)
        reader.execute(sql, tuple(params) or None)
        columns = None
        while True:
            rows = list(reader.fetchmany(connector.fetch_rows))
            if self.limit is not None and self.rows + len(rows) > self.limit:
                rows, self.stopped_by_limit = rows[: self.limit - self.rows], True
            if columns is None:
                columns = Columns(connector.dialect, reader.description, rows, typed, {})
            if rows:
                batch = columns.batch(rows).cast(table_schema)
                deleted = pa.repeat(pa.scalar(False), batch.num_rows)
                batch = pa.RecordBatch.from_arrays(
                    [*batch.columns, deleted], schema=self.stream.schema()
                )
                self.rows += batch.num_rows
                if key:
                    last = batch.slice(batch.num_rows - 1)
                    self.last = [last.column(k)[0].as_py() for k in key]
                yield batch
            if self.stopped_by_limit or len(rows) < connector.fetch_rows:
                break
        reader.close()


class KeyedReading(TableReading):
    """The table's rows in key order, after one key and up to another, in a snapshot of its
    own and from no log position: a limited read from the start, its resume or a backfill
    between two of its positions. It issues key positions, never a log position, and proves no
    shape: a later snapshot continuing an earlier one's keys is not one read of the table, and
    the log does not continue from it (only a whole read fixes the log position the log
    continues from)."""

    def checkpoint(self) -> Position:
        return key_position(self.last)

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        if not self.stream.key:
            raise RefusedRead("no_position", f"{self.connector.table}: positions need a key")
        with self.connector.table_snapshot() as (connection, produced_at):
            self.produced_at = produced_at
            yield from self._select(connection)
        self.finished = True

    def proof(self) -> Proof:
        if self.produced_at is None or not self.finished:
            raise ConnectorError("the read is not finished: read its batches first")
        if self.stopped_by_limit:
            why = "stopped by its limit before the last row"
        elif self.after is None and self.upto is None:
            why = "a limited read issues key positions, not the log's: the log cannot continue it"
        else:
            why = "a later snapshot continuing an earlier one's keys is not one read"
        return Proof(
            None,
            self.produced_at,
            self.connector.snapshot_clock,
            key_position(self.after),
            self.checkpoint(),
            why,
        )
