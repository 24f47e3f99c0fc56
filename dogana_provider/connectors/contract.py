"""The connector contract: the one interface every source keeps, whatever it reads.

    connector = JsonLinesConnector({"path": "s3://drops/orders.jsonl", "key": ["order_id"]})
    connector.validate()             # pure: every problem of the configuration, named; () if none
    connector.connect()              # idempotent; refuses a configuration validate faults
    connector.discover()             # the streams, their key and columns in dogana's types
    connector.health()               # a report, never an exception
    reading = connector.read("orders", limit=1_000)    # Arrow record batches, exactly limit rows
    for batch in reading: ...
    reading.checkpoint()             # the position after the last row yielded
    reading.proof()                  # what the finished read proves: a dogana shape, an instant
    connector.resume("orders", position)               # the rows after a checkpoint, once each
    connector.backfill("orders", low, high)            # a bounded range; an open one is refused
    connector.disconnect()           # idempotent, safe after an error

A read declares what it proves (Proof): the dogana shape its rows establish, the source's instant
they show and whose clock measured it, and the position it issues for the next read. It never
claims more than it saw: a read stopped by its limit proves no complete shape, and a read that
is not one snapshot of its source (a paged API) proves no complete shape at all. The extract
(connectors/extract.py) stamps the manifest from the proof, and refuses a contract whose shape
claims more than the proof.

A position is what the receiver's ledger can hold: an opaque string (a generation) or a
commit-ordered integer (a sequence). The conformance suite (conformance.py) checks all of this
against a configured connector.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

import pyarrow as pa

from dogana_core.shape import Shape
from dogana_core.values import Position, Scalar
from dogana_provider.sources.columns import arrow_type


class ConnectorError(Exception):
    """A source a connector cannot serve as asked; the message names what and why."""


class InvalidConfiguration(ConnectorError):
    """A configuration validate faults: every problem, named, in one message."""

    def __init__(self, kind: str, problems: tuple[str, ...]) -> None:
        self.problems = problems
        super().__init__(f"{kind} connector: " + "; ".join(problems))


class RefusedRead(ConnectorError):
    """A read the connector refuses rather than deliver something untrue: names its rule.

    rule is a fixed name a test or an operator can match (file_shrank, file_rewritten,
    unbounded_backfill, record_does_not_fit...); the message says where and why.
    """

    def __init__(self, rule: str, message: str) -> None:
        self.rule = rule
        super().__init__(f"{rule}: {message}")


class ReleasedPosition(RefusedRead):
    """A read from a position the source's log has released past (a slot confirmed, a binlog
    position recorded, further on): the changes between are no longer there to read.

    released is the position the log keeps changes after. When a receiver has published up to
    released or beyond, nothing is lost: the read's plan is stale (another run published since),
    and planning again reads from the receiver's position. Otherwise the changes are gone.
    """

    def __init__(self, rule: str, message: str, *, since: Position, released: Position) -> None:
        self.since = since
        self.released = released
        super().__init__(rule, message)


class UnknownStream(ConnectorError):
    """A stream the source does not have; the message lists those it has."""


@dataclass(frozen=True)
class StreamColumn:
    """A column of a stream and its dogana logical type (int, float, str, bool, date, datetime,
    decimal(p,s)); a type dogana has none for keeps its source's name, and fails arrow().
    nullable is whether the source says it may hold null: a source whose catalog says so (a
    SQL table, a log's) declares it, one that says nothing (a file, an API) leaves it True."""

    name: str
    type: str
    nullable: bool = True

    def arrow(self) -> pa.DataType:
        return arrow_type(self.type)


@dataclass(frozen=True)
class Stream:
    """One table a source offers: its columns in order, its key, and its deleted column, a bool
    the connector derives (an `_op` of d) when the source says which rows are deletions."""

    name: str
    columns: tuple[StreamColumn, ...]
    key: tuple[str, ...] = ()
    deleted_column: str | None = None

    def schema(self) -> pa.Schema:
        return pa.schema([(c.name, c.arrow()) for c in self.columns])

    def column(self, name: str) -> StreamColumn | None:
        return {column.name: column for column in self.columns}.get(name)


@dataclass(frozen=True)
class Health:
    """What a health probe found: ok, and what it saw or why it failed."""

    ok: bool
    detail: str


@dataclass(frozen=True)
class Proof:
    """What a finished read proves, declared by its connector.

    shape is the dogana shape the rows establish (its coverage, deletions and checkpoint; cost
    and the planning hints are the contract's), or None when the read proves none (stopped by
    its limit before the end of a complete read, a backfill). produced_at is the source's
    instant the rows show, and clock says whose clock measured it. since is where the read
    started, position where it ended: the position it issues, from which the next read resumes.
    """

    shape: Shape | None
    produced_at: datetime
    clock: str
    since: Position | None
    position: Position | None
    why: str = ""

    def __post_init__(self) -> None:
        if self.produced_at.tzinfo is None:
            raise ValueError("Proof.produced_at: a source's instant carries its UTC offset")


class Reading(ABC):
    """One read of one stream: an iterator of Arrow record batches of the stream's schema.

    checkpoint() is the position after the last row yielded so far, exact at every batch;
    proof() is what the read proves, once it is exhausted.
    """

    stream: Stream

    @abstractmethod
    def __iter__(self) -> Iterator[pa.RecordBatch]: ...

    @abstractmethod
    def checkpoint(self) -> Position: ...

    @abstractmethod
    def proof(self) -> Proof: ...


class Connector(ABC):
    """A source behind the nine operations; built from a configuration mapping, with no I/O.

    Subclasses name their kind and options, and implement the operations; the constructor never
    raises on a bad configuration: validate says what is wrong, connect refuses it.
    """

    kind: ClassVar[str]
    options: ClassVar[Mapping[str, str]]
    """Each option the configuration may name, and what it is (validate refuses any other)."""
    required: ClassVar[tuple[str, ...]] = ()

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = dict(config)
        self.connected = False

    def option(self, name: str, default: Any = None) -> Any:
        """The configuration's value of one of the connector's options, or default when the
        configuration leaves it out. A name that is not an option is a mistake in the
        connector, refused rather than read as absent."""
        if name not in self.options:
            raise KeyError(f"{self.kind} connector has no option {name!r}")
        return self.config.get(name, default)

    def validate(self) -> tuple[str, ...]:
        """Every problem of the configuration, named; empty when there is none. No I/O."""
        problems = [
            f"{name!r} is not an option (its options: {', '.join(sorted(self.options))})"
            for name in self.config
            if name not in self.options
        ]
        problems += [f"{name!r} is required" for name in self.required if name not in self.config]
        return tuple(problems) + self.check()

    @abstractmethod
    def check(self) -> tuple[str, ...]:
        """The connector's own problems with its options (pure, fail-closed)."""

    def connect(self) -> None:
        """Open the source; again is nothing. A configuration with a problem is refused."""
        if self.connected:
            return
        problems = self.validate()
        if problems:
            raise InvalidConfiguration(self.kind, problems)
        self.open()
        self.connected = True

    def open(self) -> None:
        """What connecting does beyond validating: nothing unless the source keeps a session."""
        return None

    @abstractmethod
    def discover(self) -> tuple[Stream, ...]: ...

    @abstractmethod
    def health(self) -> Health: ...

    @abstractmethod
    def read(
        self, stream: str, *, since: Scalar | None = None, limit: int | None = None
    ) -> Reading:
        """The stream's rows: from the start (since None) or after a position this connector
        issued (a datetime for a timestamp feed); at most limit rows, exactly limit when the
        source has that many more."""

    def resume(self, stream: str, position: Position, *, limit: int | None = None) -> Reading:
        """The rows after a position a checkpoint gave: none twice, none skipped."""
        if position is None:
            raise ConnectorError("resume needs the position a checkpoint gave")
        return self.read(stream, since=position, limit=limit)

    @abstractmethod
    def backfill(
        self, stream: str, low: Position, high: Position, *, limit: int | None = None
    ) -> Reading:
        """The rows between two positions; an open or reversed range is refused."""

    def disconnect(self) -> None:
        """Close the source; again, or after an error, is nothing."""
        self.connected = False
        self.close()

    def close(self) -> None:
        """What disconnecting releases beyond the flag: nothing unless open() took something."""
        return None

    def stream(self, name: str) -> Stream:
        """The discovered stream of that name, or UnknownStream listing those there are."""
        streams = {stream.name: stream for stream in self.discover()}
        if name in streams:
            return streams[name]
        raise UnknownStream(
            f"{self.kind} connector has no stream {name!r}; its streams: "
            + ", ".join(repr(stream) for stream in streams)
        )

    def __enter__(self) -> Connector:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.disconnect()


def check_limit(limit: int | None) -> None:
    """A limit is a count of rows: None for no limit, else a nonnegative integer."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ConnectorError(f"limit: {limit!r} is not a nonnegative number of rows")


def check_bounded(low: Any, high: Any) -> None:
    """A backfill's range: both ends named; an open end is refused at the interface."""
    missing = [name for name, end in (("low", low), ("high", high)) if end is None]
    if missing:
        raise RefusedRead(
            "unbounded_backfill",
            f"a backfill names both ends of its range; {' and '.join(missing)} is open",
        )
