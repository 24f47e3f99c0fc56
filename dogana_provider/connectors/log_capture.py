"""What the log connectors (pg_logical.py, mariadb_binlog.py) do alike: how a table's columns
differ from the declared ones, what a refusal tells the person to run, how they read the
table itself rather than its log, and how they read a group of tables together (LogGroup:
pg_group.py and mariadb_group.py say what each log does differently).

A log read that cannot prove what it would claim refuses by name (RefusedRead) and leaves what
is published as it was; every such refusal ends with full_read(table), the one way back: a
delivery of the contract's complete shape, which starts the log again from a new snapshot.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, ClassVar, Generic, Protocol, TypeVar

import pyarrow as pa

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


FULL_READ = "a full read resets the chain"


def full_read(table: str) -> str:
    """What a refusal tells the person to run."""
    return (
        f"{FULL_READ}: run one delivery of {table}'s complete shape "
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
    """Rows of the table itself (not its log) in key order, from after one key up to another.

    A read whose snapshot the log continues from sets log_position (the integer the ledger
    holds) once the snapshot is taken; checkpoint is then a key while its rows are read and
    that position once they all are."""

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
        self.log_position: int | None = None

    def checkpoint(self) -> Position:
        if self.log_position is None:
            raise ConnectorError("the read has not started: no snapshot, no log position yet")
        if not self.finished:
            # Inside the snapshot, where the next rows are is a key, not yet a log position.
            return key_position(self.last)
        return self.log_position

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


# The connectors' common part --------------------------------------------------------------------


class LogConnector(Connector):
    """What a log connector's configuration, session and discovery share: the table, the bool
    column a delete becomes, the rows a fetch takes, and the source's hook and dialect once
    opened. Each connector keeps its log, its snapshot and its own options."""

    snapshot_clock: str

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        self.hook: Any = None
        self.dialect: Any = None

    @property
    def table(self) -> str:
        return str(self.option("table", ""))

    @property
    def deleted_column(self) -> str:
        return str(self.option("deleted_column", "deleted"))

    @property
    def fetch_rows(self) -> int:
        return int(self.option("fetch_rows", 10_000))

    def name_problems(self) -> list[str]:
        """What is wrong with the options that name things every log connector has."""
        problems: list[str] = []
        for option in ("conn_id", "table", "deleted_column"):
            value = self.config.get(option)
            if option in self.config and (not isinstance(value, str) or not value):
                problems.append(f"{option}: {value!r} is not a name")
        return problems

    def shape_problems(self) -> list[str]:
        """What is wrong with the declared columns and the fetch size."""
        problems: list[str] = []
        columns = self.config.get("columns")
        if columns is not None and (
            not isinstance(columns, Mapping)
            or not columns
            or not all(isinstance(n, str) and isinstance(t, str) for n, t in columns.items())
        ):
            problems.append("columns: a mapping from column to logical type, not empty")
        size = self.config.get("fetch_rows", 1)
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            problems.append(f"fetch_rows: {size!r} is not a positive number of rows")
        return problems

    def open_source(self, dialect: Any, database: str, why: str) -> None:
        """The source's hook and dialect; a connection to another database is refused."""
        from dogana_provider.dialects import dialect_for
        from dogana_provider.hooks.sql import sql_hook

        self.hook = sql_hook(str(self.config["conn_id"]), "source")
        self.dialect = dialect_for(self.hook)
        if self.dialect is not dialect:
            raise ConnectorError(
                f"connection {self.config['conn_id']!r} is {self.dialect}, not {database}: {why}"
            )

    def close(self) -> None:
        self.hook = None

    def quoted(self) -> str:
        return ".".join(self.dialect.quote(part) for part in self.table.split("."))

    def table_stream(self, columns: list[StreamColumn], key: tuple[str, ...]) -> Stream:
        """The table's stream: its columns, then the deleted column, which must not be one."""
        if self.deleted_column in {c.name for c in columns}:
            raise ConnectorError(
                f"{self.table}: {self.deleted_column!r} is a column of the table; name another "
                "deleted_column"
            )
        columns.append(StreamColumn(self.deleted_column, "bool"))
        return Stream(self.table, tuple(columns), key, self.deleted_column)

    def table_snapshot(self) -> AbstractContextManager[tuple[Any, datetime]]:
        """A session in a read-only snapshot of its own, and the instant the snapshot shows."""
        raise NotImplementedError

    # Which read: the same choice on every log; each connector says how its log is read.

    def snapshot_reading(self, stream: Stream) -> Reading:
        """The whole table at a place the log continues from."""
        raise NotImplementedError

    def log_reading(
        self, stream: Stream, since: Any, *, limit: int | None, end: Any, skip: int = 0
    ) -> Reading:
        """The log from since (a log_position) to its end, or to end."""
        raise NotImplementedError

    def log_position(self, value: Scalar | None) -> Any:
        """A position of the log from the integer the ledger holds; ConnectorError otherwise."""
        raise NotImplementedError

    def reversed_backfill(self, first: Any, last: Any) -> str | None:
        """Why a backfill from first to last is reversed, or None when it is not."""
        raise NotImplementedError

    def read(
        self, stream: str, *, since: Scalar | None = None, limit: int | None = None
    ) -> Reading:
        self.connect()
        check_limit(limit)
        found = self.stream(stream)
        if since is None and limit is None:
            return self.snapshot_reading(found)
        if isinstance(since, str) and since.startswith(INSIDE):
            place, read = inside(since)
            return self.log_reading(
                found, self.log_position(place), limit=limit, end=None, skip=read
            )
        if since is None or isinstance(since, str):
            return KeyedReading(self, found, keys(since), None, limit=limit)
        return self.log_reading(found, self.log_position(since), limit=limit, end=None)

    def backfill(
        self, stream: str, low: Position, high: Position, *, limit: int | None = None
    ) -> Reading:
        check_bounded(low, high)
        self.connect()
        check_limit(limit)
        found = self.stream(stream)
        if isinstance(low, str) and isinstance(high, str):
            return KeyedReading(self, found, keys(low), keys(high), limit=limit)
        first, last = self.log_position(low), self.log_position(high)
        why = self.reversed_backfill(first, last)
        if why is not None:
            raise RefusedRead("reversed_backfill", why)
        return self.log_reading(found, first, limit=limit, end=last)


# Groups: several tables read together, at one log position -------------------------------------

Member = TypeVar("Member", bound=LogConnector)


class GroupReading(Protocol):
    """One read of a group's tables: each batch with its table's name, then one proof and one
    position for all of them."""

    def tables(
        self, members: Sequence[tuple[Any, Stream]]
    ) -> Iterator[tuple[str, pa.RecordBatch]]: ...

    def checkpoint(self) -> Position: ...

    def proof(self) -> Proof: ...


class LogGroup(Generic[Member]):
    """The tables of one group, read together: the group's first read (or a reset) reads every
    table whole in one snapshot at one log position (TablesInOneSnapshot), each later read is
    one pass over the log from the position the group published to one end, split by table.
    Either way a transaction touching two of its tables is in both tables' deliveries or in
    neither, and every delivery carries the same since, position and produced_at: the group's
    together check holds and every table is exact at that instant.

    A read's batches are held in memory until every table's are read (Collected): a group reads
    its log often, a few seconds of changes at a time; its first read is as large as its tables.

    Each log says how its members are configured (member_type: the group's options are the
    member's, "tables" for "table", "columns" by table), how its first read is prepared
    (snapshot) and how its log is passed over once (log_pass)."""

    kind: ClassVar[str]
    member_type: type[Member]

    def __init__(self, config: Mapping[str, Any]) -> None:
        allowed = (set(self.member_type.options) - {"table"}) | {"tables", "kind"}
        unknown = sorted(set(config) - allowed)
        tables = config.get("tables")
        if (
            unknown
            or not isinstance(tables, list | tuple)
            or len(tables) < 2
            or len({str(t).lower() for t in tables}) != len(tables)
        ):
            raise ConnectorError(
                f"a {self.kind} group names its tables (two or more, each once) under 'tables'"
                + (f"; not options: {', '.join(unknown)}" if unknown else "")
            )
        columns = config.get("columns") or {}
        if not isinstance(columns, Mapping) or not set(columns) <= set(tables):
            raise ConnectorError(
                f"a {self.kind} group's columns are by table: a mapping from some of its "
                f"tables ({', '.join(map(str, tables))}) to their columns"
            )
        shared = {k: v for k, v in config.items() if k not in ("kind", "tables", "columns")}
        self.members: dict[str, Member] = {
            str(table): self.member_type(
                {**shared, "table": table}
                | ({"columns": columns[table]} if table in columns else {})
            )
            for table in tables
        }

    def member(self, table: str) -> Member:
        for name, member in self.members.items():
            if name.lower() == table.lower():
                return member
        raise ConnectorError(f"{table} is not a table of the group ({', '.join(self.members)})")

    def read(self, since: int | None) -> dict[str, Collected]:
        """Every table's delivery, read together: whole in one snapshot (since None), else the
        log from since to one end."""
        members = list(self.members.values())
        for member in members:
            member.connect()
        pairs = [(member, member.stream(member.table)) for member in members]
        reading = self.snapshot(pairs) if since is None else self.log_pass(pairs, since)
        batches: dict[str, list[pa.RecordBatch]] = {m.table: [] for m in members}
        for table, batch in reading.tables(pairs):
            batches[table].append(batch)
        proof, position = reading.proof(), reading.checkpoint()
        return {m.table: Collected(s, batches[m.table], proof, position) for m, s in pairs}

    def snapshot(self, members: Sequence[tuple[Member, Stream]]) -> GroupReading:
        """The first read: every table whole in one snapshot, at the position the log continues
        from (a TablesInOneSnapshot), once what the log needs of each table is checked."""
        raise NotImplementedError

    def log_pass(self, members: Sequence[tuple[Member, Stream]], since: int) -> GroupReading:
        """One pass over the log from since to its end, every member's changes in it."""
        raise NotImplementedError


class TablesInOneSnapshot(TableReading):
    """The group's first read: a log's whole-table read (its snapshot at a log position, the
    first member's) reading every member's table, one after the other, in that one snapshot.
    Mixed in before the log's own snapshot reading, whose __iter__ opens the snapshot and
    fixes the position, then calls _select."""

    def tables(self, members: Sequence[tuple[Any, Stream]]) -> Iterator[tuple[str, pa.RecordBatch]]:
        self.readings = [KeyedReading(m, s, None, None, limit=None) for m, s in members]
        for batch in self:
            yield self.current, batch

    def _select(self, connection: Any) -> Iterator[pa.RecordBatch]:
        for reading in self.readings:
            self.current = reading.connector.table
            yield from reading._select(connection)


class Collected(Reading):
    """One table's part of a group read, read already."""

    def __init__(
        self, stream: Stream, batches: list[pa.RecordBatch], proof: Proof, position: Position
    ) -> None:
        self.stream = stream
        self.batches = batches
        self.read_proof = proof
        self.position = position

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        return iter(self.batches)

    def checkpoint(self) -> Position:
        return self.position

    def proof(self) -> Proof:
        return self.read_proof


class OneOfGroup(Connector):
    """A table of a group as a connector whose one stream is the table and whose read is its
    part of the group's read (what extract writes as the table's delivery)."""

    kind = "one_of_group"
    options: ClassVar[Mapping[str, str]] = {}

    def __init__(self, member: LogConnector, reading: Collected) -> None:
        super().__init__({})
        self.member = member
        self.reading = reading

    def check(self) -> tuple[str, ...]:
        return ()

    def discover(self) -> tuple[Stream, ...]:
        return (self.reading.stream,)

    def health(self) -> Health:
        return Health(True, f"{self.member.table}: read with its group")

    def read(
        self, stream: str, *, since: Scalar | None = None, limit: int | None = None
    ) -> Reading:
        return self.reading

    def backfill(
        self, stream: str, low: Position, high: Position, *, limit: int | None = None
    ) -> Reading:
        raise ConnectorError(f"{self.member.table}: a group is read whole or from its position")
