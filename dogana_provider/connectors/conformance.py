"""The conformance suite: a plain function checking a configured connector against the contract.

    report = conformance(JsonLinesConnector({...}), stream="orders")
    report.passed                  # every check passed
    for check in report.checks:    # Check(name, passed, detail), in the order they ran
        ...

It runs from the tests, from `dogana conformance CONN_ID_OR_URL` against a source a user
configured, and from anywhere else a connector is about to be trusted. There is no skip: a
connector that cannot honestly serve a check fails it, and a check that raises fails with what
it raised. The source is only read, never written; its stream needs at least three rows for
the limit and resume checks to mean anything, and fewer fails them, saying so.

The checks, each named once here:

    validate_is_pure                 validate twice gives the same problems, and no I/O error
    validate_names_every_problem     two wrong options are both named
    connect_is_idempotent            connect twice
    connect_refuses_a_bad_config     connect with an unknown option raises InvalidConfiguration
    discover_types_every_column      the stream exists; its key and every column in dogana's types
    health_reports                   health answers ok for the configured source
    health_never_raises              a broken configuration's health is a report, not an error
    read_yields_arrow_batches        record batches of the stream's schema
    read_honours_limit               limits 0, 1 and 2 give exactly that many rows
    limited_read_claims_no_more      a read its limit stopped proves no complete shape
    proof_declares_a_shape           a read to the end (from the start, else from a checkpoint)
                                     declares a shape, an aware instant and whose clock
    checkpoint_resume_exact          rows to a checkpoint then after it are the whole read, once
    resume_at_the_end_reads_nothing  a resume from the last position never restarts
    unknown_stream_refused           a read of a stream that is not there names it
    backfill_refuses_open_range      a backfill without one of its ends is refused
    backfill_is_bounded              a backfill between two positions holds the rows between
    disconnect_is_idempotent         disconnect twice, and after a failed read
"""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pyarrow as pa

from dogana_core.shape import Coverage, Deletions
from dogana_provider.connectors.contract import (
    Connector,
    ConnectorError,
    Health,
    InvalidConfiguration,
    Reading,
    RefusedRead,
    Stream,
)
from dogana_provider.sources.columns import UnsupportedColumn, arrow_type

MIN_ROWS = 3


@dataclass(frozen=True)
class Check:
    name: str
    passed: bool
    detail: str


@dataclass(frozen=True)
class ConformanceReport:
    """Each check's verdict, in order: passed or failed, never skipped."""

    connector: str
    stream: str | None
    checks: tuple[Check, ...] = field(default_factory=tuple)

    @property
    def passed(self) -> bool:
        return all(check.passed for check in self.checks)

    @property
    def failed(self) -> tuple[str, ...]:
        return tuple(check.name for check in self.checks if not check.passed)

    def check(self, name: str) -> Check:
        return {check.name: check for check in self.checks}[name]

    def to_dict(self) -> dict[str, Any]:
        return {
            "connector": self.connector,
            "stream": self.stream,
            "passed": self.passed,
            "checks": [vars(check) for check in self.checks],
        }


class Failed(Exception):
    """A check's assertion: its message is the check's detail."""


def conformance(connector: Connector, stream: str | None = None) -> ConformanceReport:
    """Run every check against a configured connector, on its stream (by default its first)."""
    suite = _Suite(connector, stream)
    checks = [suite.run(name, method) for name, method in suite.checks()]
    return ConformanceReport(connector.kind, suite.stream_name, tuple(checks))


class _Suite:
    def __init__(self, connector: Connector, stream: str | None) -> None:
        self.connector = connector
        self.stream_name = stream
        self.found: Stream | None = None

    def checks(self) -> Iterator[tuple[str, Callable[[], str]]]:
        for check in (
            "validate_is_pure",
            "validate_names_every_problem",
            "connect_is_idempotent",
            "connect_refuses_a_bad_config",
            "discover_types_every_column",
            "health_reports",
            "health_never_raises",
            "read_yields_arrow_batches",
            "read_honours_limit",
            "limited_read_claims_no_more",
            "proof_declares_a_shape",
            "checkpoint_resume_exact",
            "resume_at_the_end_reads_nothing",
            "unknown_stream_refused",
            "backfill_refuses_open_range",
            "backfill_is_bounded",
            "disconnect_is_idempotent",
        ):
            yield check, getattr(self, check)

    def run(self, name: str, method: Callable[[], str]) -> Check:
        try:
            return Check(name, True, method())
        except Failed as failure:
            return Check(name, False, str(failure))
        except Exception as exc:  # a check that raises fails, naming what was raised and where
            where = traceback.extract_tb(exc.__traceback__)[-1]
            return Check(
                name,
                False,
                f"raised {type(exc).__name__}: {exc} ({where.filename.rsplit('/', 1)[-1]}:"
                f"{where.lineno})",
            )

    # Helpers ----------------------------------------------------------------------------------

    def stream(self) -> Stream:
        if self.found is None:
            self.connector.connect()
            streams = self.connector.discover()
            if not streams:
                raise Failed("discover found no stream")
            if self.stream_name is None:
                self.stream_name = streams[0].name
            self.found = self.connector.stream(self.stream_name)
        return self.found

    def other(self, config: dict[str, Any]) -> Connector:
        return type(self.connector)(config)

    def rows(self, reading: Reading) -> pa.Table:
        batches = list(reading)
        for batch in batches:
            if not isinstance(batch, pa.RecordBatch):
                raise Failed(f"read yielded {type(batch).__name__}, not a pyarrow RecordBatch")
        schema = self.stream().schema()
        for batch in batches:
            if not batch.schema.equals(schema):
                raise Failed(f"a batch of schema {batch.schema} is not the stream's {schema}")
        return pa.Table.from_batches(batches, schema=schema)

    def whole(self) -> tuple[pa.Table, Reading]:
        reading = self.connector.read(self.stream().name)
        table = self.rows(reading)
        if table.num_rows < MIN_ROWS:
            raise Failed(
                f"the stream holds {table.num_rows} rows; the suite needs at least {MIN_ROWS} "
                "to check limits and resumes (no skip: point it at a stream with rows)"
            )
        return table, reading

    # Checks -----------------------------------------------------------------------------------

    def validate_is_pure(self) -> str:
        first, second = self.connector.validate(), self.connector.validate()
        if first != second:
            raise Failed(f"validate gave {first} then {second}")
        if first:
            raise Failed("the configuration has problems: " + "; ".join(first))
        return "no problem, twice"

    def validate_names_every_problem(self) -> str:
        config = {**self.connector.config, "no_such_option": 1, "nor_this_one": 2}
        problems = " ".join(self.other(config).validate())
        missing = [o for o in ("no_such_option", "nor_this_one") if o not in problems]
        if missing:
            raise Failed(f"validate did not name {', '.join(missing)}: {problems!r}")
        return "both unknown options named"

    def connect_is_idempotent(self) -> str:
        self.connector.connect()
        self.connector.connect()
        return "connected twice"

    def connect_refuses_a_bad_config(self) -> str:
        broken = self.other({**self.connector.config, "no_such_option": 1})
        try:
            broken.connect()
        except InvalidConfiguration as refused:
            if "no_such_option" not in str(refused):
                raise Failed(f"refused without naming the option: {refused}") from None
            return "refused, naming no_such_option"
        finally:
            broken.disconnect()
        raise Failed("connect accepted a configuration validate faults")

    def discover_types_every_column(self) -> str:
        stream = self.stream()
        names = [column.name for column in stream.columns]
        untyped = [f"{c.name} ({c.type})" for c in stream.columns if not _typed(c.type)]
        if untyped:
            raise Failed(f"columns without a dogana type: {', '.join(untyped)}")
        if len(set(names)) != len(names):
            raise Failed(f"a column named twice: {names}")
        missing = [k for k in stream.key if k not in names]
        if missing:
            raise Failed(f"key columns not among the columns: {', '.join(missing)}")
        deleted = stream.deleted_column
        column = None if deleted is None else stream.column(deleted)
        if deleted is not None and (column is None or column.type != "bool"):
            raise Failed(f"the deleted column {deleted} is not a bool column of the stream")
        return f"{stream.name}: {len(names)} columns, key {list(stream.key)}"

    def health_reports(self) -> str:
        health = self.connector.health()
        if not isinstance(health, Health):
            raise Failed(f"health returned {health!r}, not a Health")
        if not health.ok:
            raise Failed(f"the configured source is not healthy: {health.detail}")
        return health.detail

    def health_never_raises(self) -> str:
        health = self.other({"no_such_option": 1}).health()
        if not isinstance(health, Health) or health.ok:
            raise Failed(f"a broken configuration's health was {health!r}")
        return "reported not ok, no exception"

    def read_yields_arrow_batches(self) -> str:
        table, _ = self.whole()
        return f"{table.num_rows} rows in record batches of the stream's schema"

    def read_honours_limit(self) -> str:
        name = self.stream().name
        for limit in (0, 1, 2):
            got = self.rows(self.connector.read(name, limit=limit)).num_rows
            if got != limit:
                raise Failed(f"read(limit={limit}) gave {got} rows")
        return "limits 0, 1 and 2 gave 0, 1 and 2 rows"

    def limited_read_claims_no_more(self) -> str:
        reading = self.connector.read(self.stream().name, limit=1)
        self.rows(reading)
        proof = reading.proof()
        shape = proof.shape
        if shape is not None and (shape.coverage, shape.deletions) == (
            Coverage.TABLE,
            Deletions.ABSENCE,
        ):
            raise Failed(f"a read of 1 row of several claims {shape}")
        return f"claims {proof.shape or 'no shape'}: {proof.why}"

    def proof_declares_a_shape(self) -> str:
        _, reading = self.whole()
        proof = reading.proof()
        if proof.shape is None:
            # A source whose read from the start proves nothing may still prove its changes.
            head = self.connector.read(self.stream().name, limit=1)
            self.rows(head)
            resumed = self.connector.resume(self.stream().name, head.checkpoint())
            self.rows(resumed)
            if resumed.proof().shape is None:
                raise Failed(
                    f"neither a whole read ({proof.why}) nor a resumed one "
                    f"({resumed.proof().why}) proves a shape"
                )
            proof = resumed.proof()
        if not isinstance(proof.produced_at, datetime) or proof.produced_at.tzinfo is None:
            raise Failed(f"produced_at {proof.produced_at!r} is not an aware instant")
        if not proof.clock:
            raise Failed("the proof does not say whose clock measured produced_at")
        return f"{_shape(proof.shape)} at {proof.produced_at.isoformat()} ({proof.clock})"

    def checkpoint_resume_exact(self) -> str:
        whole, _ = self.whole()
        name = self.stream().name
        head = self.connector.read(name, limit=1)
        first = self.rows(head)
        rest = self.rows(self.connector.resume(name, head.checkpoint()))
        joined = pa.concat_tables([first, rest])
        if not joined.equals(whole):
            raise Failed(
                f"1 row then {rest.num_rows} resumed is not the whole read of {whole.num_rows}"
            )
        return f"1 + {rest.num_rows} rows resumed = the whole read"

    def resume_at_the_end_reads_nothing(self) -> str:
        _, reading = self.whole()
        position = reading.checkpoint()
        again = self.rows(self.connector.resume(self.stream().name, position))
        if again.num_rows:
            raise Failed(
                f"a resume from the end ({position!r}) read {again.num_rows} rows: it restarted"
            )
        return f"nothing after {position!r}"

    def unknown_stream_refused(self) -> str:
        missing = "no_such_stream_here"
        try:
            self.rows(self.connector.read(missing))
        except ConnectorError as refused:
            if missing not in str(refused):
                raise Failed(f"refused without naming the stream: {refused}") from None
            return f"refused: {refused}"
        raise Failed("a read of a stream the source does not have gave rows")

    def backfill_refuses_open_range(self) -> str:
        name = self.stream().name
        position = self.connector.read(name, limit=1)
        self.rows(position)
        for low, high in ((None, position.checkpoint()), (position.checkpoint(), None)):
            try:
                self.rows(self.connector.backfill(name, low, high))  # type: ignore[arg-type]
            except RefusedRead as refused:
                if refused.rule != "unbounded_backfill":
                    raise Failed(f"refused by {refused.rule}, not unbounded_backfill") from None
                continue
            raise Failed(f"backfill({low!r}, {high!r}) read an open range")
        return "both open ends refused"

    def backfill_is_bounded(self) -> str:
        whole, _ = self.whole()
        name = self.stream().name
        one, two = self.connector.read(name, limit=1), self.connector.read(name, limit=2)
        self.rows(one)
        self.rows(two)
        between = self.rows(self.connector.backfill(name, one.checkpoint(), two.checkpoint()))
        if not between.equals(whole.slice(1, 1)):
            raise Failed(f"the backfill between rows 1 and 2 gave {between.num_rows} rows")
        return "the backfill between the first and second positions held the second row"

    def disconnect_is_idempotent(self) -> str:
        self.connector.disconnect()
        self.connector.disconnect()
        self.connector.connect()
        with contextlib.suppress(ConnectorError):
            self.rows(self.connector.read("no_such_stream_here"))
        self.connector.disconnect()
        self.connector.disconnect()
        return "twice, and after a failed read"


def _shape(shape: Any) -> str:
    if shape.checkpoint == "none":
        return f"a complete {shape.coverage} read"
    return f"changes by {shape.checkpoint}, deletions {shape.deletions}"


def _typed(kind: str) -> bool:
    try:
        arrow_type(kind)
    except UnsupportedColumn:
        return False
    return True
