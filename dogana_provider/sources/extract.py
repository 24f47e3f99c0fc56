"""Read requests in one snapshot and write each as a delivery: Parquet file plus manifest.

extract(source, reads) opens ONE consistent read of the source (snapshot.py) at or after the
requests' boundary and reads every table in it, so a group planned together (plan_together) is
one read with one produced_at. Each table's rows stream from a server-side cursor, batch by
batch, through a DeliveryWriter, which counts rows and tombstones and hashes the bytes as they
are written; the manifest declares those counts and that hash (request.manifest), so it names
exactly the file written.

A sequence read, and a complete read that issues a position, declares the largest cursor value
its snapshot sees as generation (selection.Reading.generation says when that is right).
"""

from __future__ import annotations

import gc
import logging
import shutil
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from dogana_core.contract import Contract
from dogana_core.manifest import Manifest
from dogana_core.planner import ExtractionRequest
from dogana_core.shape import Checkpoint
from dogana_provider.delivery.files import DeliveryWriter, Written
from dogana_provider.dialects import Dialect
from dogana_provider.sources.bulk import BulkRead, numbered, settled_schema
from dogana_provider.sources.columns import Columns, UnsupportedColumn
from dogana_provider.sources.parallel import read_parts
from dogana_provider.sources.selection import Reading, Relation, UnsupportedRead, bounds
from dogana_provider.sources.snapshot import (
    OneReader,
    SlowPath,
    Snapshot,
    SnapshotSource,
    UnreadableSource,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Read:
    """One table of a snapshot read: what to read, from where, into which local file.

    relation is a table name or a DAG author's query; deleted_flag names the source's soft-delete
    flag when it is not called like the contract's deleted column; column_types names logical
    types for columns neither the contract nor the driver types.
    """

    contract: Contract
    request: ExtractionRequest
    relation: Relation
    path: str | Path
    deleted_flag: str | None = None
    column_types: Mapping[str, str] = field(default_factory=dict)
    readers: int = 1
    """Readers of the table in the one snapshot, each writing a part (parallel.py); a source
    that cannot share its snapshot reads with one and logs why."""

    def statement(self, dialect: Dialect, placeholder: Any) -> str | None:
        """The statement that will read its rows, as a source told of it before the snapshot
        (SnapshotSource.expect) sees it; None for a read refused when read."""
        try:
            reading = Reading(
                self.contract,
                self.request,
                self.relation,
                dialect,
                placeholder,
                deleted_flag=self.deleted_flag,
            )
        except UnsupportedRead:
            return None
        return reading.rows()


@dataclass(frozen=True)
class Extracted:
    """A delivery as written: its local file and the manifest that declares it."""

    path: str
    manifest: Manifest


def extract(
    source: SnapshotSource,
    reads: Sequence[Read],
    *,
    row_group_rows: int = 131_072,
    overwrite: bool = False,
) -> list[Extracted]:
    """Read every request in one snapshot at or after their boundary; one Extracted per read."""
    if not reads:
        raise ValueError("nothing to read: name at least one request")
    tables = [read.contract.table.lower() for read in reads]
    if len(set(tables)) != len(tables):
        raise ValueError(f"a snapshot read reads each table once: {tables}")
    until = max(read.request.until for read in reads)
    source.expect(reads)
    with source.snapshot(until) as snapshot:
        log.info(
            "snapshot of %s open: produced_at %s (boundary %s)",
            source.dialect,
            snapshot.produced_at.isoformat(),
            until.isoformat(),
        )
        return read_all(snapshot, reads, row_group_rows=row_group_rows, overwrite=overwrite)


def read_all(
    snapshot: Snapshot,
    reads: Sequence[Read],
    *,
    row_group_rows: int = 131_072,
    overwrite: bool = False,
) -> list[Extracted]:
    """Read every request in an open snapshot, which must be at or after each boundary."""
    late = [r.contract.table for r in reads if r.request.until > snapshot.produced_at]
    if late:
        raise ValueError(f"the snapshot is before the boundary of {late}: open one at or after it")
    return [
        _read(snapshot, read, row_group_rows=row_group_rows, overwrite=overwrite) for read in reads
    ]


def _read(snapshot: Snapshot, read: Read, *, row_group_rows: int, overwrite: bool) -> Extracted:
    contract, request = read.contract, read.request
    reading = Reading(
        contract,
        request,
        read.relation,
        snapshot.dialect,
        snapshot.placeholder,
        deleted_flag=read.deleted_flag,
    )
    produced_at = snapshot.produced_at
    names = _column_names(snapshot, reading)
    _require_columns(reading, names)
    if reading.flag is not None and reading.flag not in names:
        reading.without_flag()
    generation = _generation(snapshot, reading, produced_at) if reading.needs_generation else None
    params = reading.params(produced_at, generation)
    typed = {name: str(kind) for name, kind in contract.types}
    typed.update({name: str(kind) for name, kind in read.column_types.items()})
    declared = snapshot.source.declared_types(snapshot.connection, read.relation)
    log.info("reading %s, shape %s: %s", contract.table, request.shape, bounds(params))
    typed = {**declared, **typed}
    in_parts = _in_parts(snapshot, reading, params, typed, read, row_group_rows)
    if in_parts is not None:
        return Extracted(
            in_parts.path, _manifest(request, contract, produced_at, generation, in_parts)
        )
    if Path(read.path).is_dir():
        shutil.rmtree(read.path)  # the parts of an earlier read by several readers
    writer: DeliveryWriter | None = None
    try:
        with _bulk(snapshot, reading, params, typed, contract) as bulk:
            if bulk is not None:
                writer = _writer(read, bulk.schema, row_group_rows, overwrite)
                try:
                    for batch in bulk.batches:
                        writer.write(batch)
                except SlowPath as why:
                    # Found while reading (SQLite's mixed values): the same snapshot, row by row.
                    log.info("%s: read row by row after all: %s", contract.table, why)
                    writer.abort()
                    writer = None
        if writer is None:
            writer = _row_by_row(snapshot, reading, params, typed, read, row_group_rows, overwrite)
        written = writer.close()
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    return Extracted(written.path, _manifest(request, contract, produced_at, generation, written))


def _manifest(
    request: ExtractionRequest,
    contract: Contract,
    produced_at: datetime,
    generation: Any,
    written: Written,
) -> Manifest:
    log.info(
        "wrote %s: %d rows, %d tombstones, sha256 %s",
        written.path,
        written.rows,
        written.tombstones,
        written.sha256,
    )
    return request.manifest(
        contract,
        produced_at,
        generation=generation,
        rows=written.rows,
        tombstones=written.tombstones,
        content_hash=written.sha256,
    )


def _in_parts(
    snapshot: Snapshot,
    reading: Reading,
    params: Mapping[str, Any],
    typed: Mapping[str, str],
    read: Read,
    row_group_rows: int,
) -> Written | None:
    """The read by read.readers readers in the snapshot, as a folder of parts (parallel.py);
    None, the reason logged, when it is read by one."""
    if read.readers <= 1:
        return None
    contract = read.contract
    folder = Path(read.path)
    try:
        ranges = snapshot.source.page_ranges(snapshot, read.relation, read.readers)
        sql = reading.rows(snapshot.produced_at)
        if any(value is None for value in numbered(sql, params)[1]):
            raise SlowPath("a bound parameter is null, which the bulk read cannot type")
        columns = _settled(snapshot, reading, sql, params, typed)
        written = read_parts(
            snapshot,
            lambda within: reading.rows(snapshot.produced_at, within),
            params,
            columns,
            contract,
            folder,
            ranges,
            row_group_rows=row_group_rows,
        )
    except (OneReader, SlowPath) as why:
        log.warning(
            "%s: readers=%d asked, read by one reader: %s", contract.table, read.readers, why
        )
        if folder.is_dir():
            shutil.rmtree(folder)
        return None
    log.info("%s: read by %d readers in one snapshot", contract.table, len(ranges))
    return written


@contextmanager
def _bulk(
    snapshot: Snapshot,
    reading: Reading,
    params: Mapping[str, Any],
    typed: Mapping[str, str],
    contract: Contract,
) -> Iterator[BulkRead | None]:
    """The bulk read of the statement (bulk.py), or None with the reason it cannot serve it."""
    sql = reading.rows(snapshot.produced_at)
    with ExitStack() as stack:
        try:
            snapshot.source.bulk_serves(sql)
            columns = _settled(snapshot, reading, sql, params, typed)
            bulk = stack.enter_context(
                snapshot.source.bulk_read(snapshot, sql, params, columns, reading.relation)
            )
        except SlowPath as why:
            log.info("%s: read row by row: %s", contract.table, why)
            bulk = None
        else:
            log.info("%s: bulk read", contract.table)
        yield bulk


def _settled(
    snapshot: Snapshot,
    reading: Reading,
    sql: str,
    params: Mapping[str, Any],
    typed: Mapping[str, str],
) -> Columns:
    """The bulk read's columns of the statement (bulk.settled_schema), as the source describes
    them; SlowPath when the bulk read cannot serve them."""
    return settled_schema(
        snapshot,
        snapshot.describe(sql, params),
        typed,
        reading.renames(),
        reading.contract.deleted_column,
    )


def _writer(read: Read, schema: Any, row_group_rows: int, overwrite: bool) -> DeliveryWriter:
    return DeliveryWriter(
        read.path, read.contract, schema, row_group_rows=row_group_rows, overwrite=overwrite
    )


def _row_by_row(
    snapshot: Snapshot,
    reading: Reading,
    params: Mapping[str, Any],
    typed: Mapping[str, str],
    read: Read,
    row_group_rows: int,
    overwrite: bool,
) -> DeliveryWriter:
    """The rows through the driver's cursor, batch by batch, converted by columns.py."""
    writer: DeliveryWriter | None = None
    columns: Columns | None = None
    with _collection_paused():
        try:
            for description, rows in snapshot.stream(reading.rows(snapshot.produced_at), params):
                if columns is None:
                    columns = Columns(
                        snapshot.dialect,
                        description,
                        rows,
                        typed,
                        reading.renames(),
                        false_when_null=read.contract.deleted_column,
                    )
                    writer = _writer(read, columns.schema, row_group_rows, overwrite)
                assert writer is not None
                if rows:
                    writer.write(columns.batch(rows))
        except BaseException:
            if writer is not None:
                writer.abort()
            raise
    assert writer is not None, "a stream yields its first batch, even an empty one"
    return writer


_pausing = threading.Lock()
_paused = 0  # reads inside the pause
_resume = False  # whether the collector was on when the pause began


@contextmanager
def _collection_paused() -> Iterator[None]:
    """The cyclic garbage collector off while rows stream in, back on after.

    Every row is a new tuple the collector counts: it runs every 700 and, now and then, walks
    every older object too (Airflow's imports are hundreds of thousands): a large share of a
    row-by-row read's time, for rows that hold no reference cycles for it to find. Nested or
    concurrent reads share one pause; the last to end resumes it, and only if it was on when
    the first began.
    """
    global _paused, _resume
    with _pausing:
        if _paused == 0:
            _resume = gc.isenabled()
            gc.disable()
        _paused += 1
    try:
        yield
    finally:
        with _pausing:
            _paused -= 1
            if _paused == 0 and _resume:
                gc.enable()


def _column_names(snapshot: Snapshot, reading: Reading) -> set[str]:
    """The relation's columns, from a statement that reads no row; a relation the source cannot
    read (a misspelt table, a query that fails) raises UnreadableSource naming the option that
    named it, with the driver's reason but not dogana's own statement around it."""
    names: set[str] = set()
    params = reading.params(snapshot.produced_at, None)  # an author's query may name them
    try:
        for description, _ in snapshot.stream(reading.probe(), params):
            names.update(str(column[0]) for column in description)
    except Exception as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UnreadableSource(
            f"{reading.contract.table}: {_named(reading.relation)} cannot be read from the "
            f"source: {reason}"
        ) from exc
    return names


def _require_columns(reading: Reading, names: set[str]) -> None:
    """Refuse, before a row is read, a relation without a column the contract reads by name:
    its key, window and cursor columns, and a deleted_flag the task names."""
    contract = reading.contract
    declared: list[tuple[str, str | None]] = [("key", column) for column in contract.key]
    declared += [
        ("window", contract.window_column),
        ("cursor", contract.cursor_column),
        ("deleted_flag", reading.flag if reading.flag_named else None),
    ]
    folded = {name.lower() for name in names}
    missing = [
        f"{role} column {column!r}"
        for role, column in declared
        if column is not None and column.lower() not in folded
    ]
    if missing:
        raise UnsupportedRead(
            f"{contract.table}: {_named(reading.relation)} has no {', no '.join(missing)}; "
            f"its columns are {', '.join(sorted(names))}"
        )


def _named(relation: Relation) -> str:
    """The relation as the task's options name it."""
    if relation.table is not None:
        return f"source_table={relation.table!r}"
    return "the table_sql query"


def _generation(snapshot: Snapshot, reading: Reading, produced_at: datetime) -> int:
    found = snapshot.scalar(reading.generation(), reading.params(produced_at, None))
    since = reading.request.since
    floor = since if isinstance(since, int) else 0
    if found is None:
        return floor
    try:
        position = int(found)
    except (TypeError, ValueError):
        raise UnsupportedColumn(
            f"the cursor column {reading.contract.cursor_column} holds {found!r}, not an integer "
            "position"
        ) from None
    if reading.shape.checkpoint is Checkpoint.SEQUENCE:
        return max(position, floor)
    return position


def describe(extracted: Sequence[Extracted]) -> list[dict[str, Any]]:
    """What a log or an XCom shows of each delivery: its manifest's wire dict and its path."""
    return [{"manifest": e.manifest.to_dict(), "path": e.path} for e in extracted]
