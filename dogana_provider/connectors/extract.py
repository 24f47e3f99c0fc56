"""A connector's read written as a delivery: Parquet, and a manifest stamped from the read's proof.

    delivered = extract(connector, "orders", contract, request, "/tmp/orders.parquet")
    delivered.manifest, delivered.path

The request names a shape of the contract; the read is asked for from the start (a complete
shape) or from the request's since (a changed-only one), and its batches stream through a
DeliveryWriter, which counts rows and tombstones and hashes the bytes. When the read ends, its
proof must establish the shape the contract names (coverage, deletions and checkpoint alike), or
the delivery is refused (claims_more_than_read) and its file removed: the manifest never claims
more than the connector proved. produced_at is the proof's instant, the position it issues the
manifest's generation.

A changed-only delivery holds one final row per key, and a complete one no tombstones. A change
log can name a key several times in one read, so the keys written are kept (the key columns
only) and, when a key repeats or a complete read met deletions, the file is written again from
itself keeping each key's last row, and only live rows for a complete shape.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from dogana_core.contract import Contract
from dogana_core.manifest import Manifest
from dogana_core.planner import ExtractionRequest
from dogana_core.shape import Checkpoint, Coverage, Deletions, Shape
from dogana_provider.connectors.contract import Connector, ConnectorError, Proof, RefusedRead
from dogana_provider.delivery.files import DeliveryWriter, Written

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Delivered:
    """A connector's read as written: its local file, its manifest, and the proof behind it."""

    path: str
    manifest: Manifest
    proof: Proof


def extract(
    connector: Connector,
    stream: str,
    contract: Contract,
    request: ExtractionRequest,
    path: str | Path,
    *,
    max_wait: timedelta = timedelta(0),
    row_group_rows: int = 131_072,
    overwrite: bool = False,
) -> Delivered:
    """Read the request's shape from the connector's stream and write it as a delivery."""
    shape = contract.shape(request.shape)
    if shape.coverage is Coverage.WINDOW:
        raise ConnectorError(
            f"{contract.table}: shape {request.shape!r} reads a window; a connector reads a "
            "stream from the start or from a position, never a window of it"
        )
    found = connector.stream(stream)
    if found.deleted_column is not None and found.deleted_column != contract.deleted_column:
        raise ConnectorError(
            f"{contract.table}: stream {stream!r} marks deletions in {found.deleted_column!r}; "
            "name it the contract's deleted_column"
        )
    wait_for(request.until, max_wait, contract.table)
    since = None if shape.checkpoint is Checkpoint.NONE else request.since
    reading = connector.read(stream, since=since)
    keys = _Keys(contract.key)
    writer = DeliveryWriter(
        path, contract, found.schema(), row_group_rows=row_group_rows, overwrite=overwrite
    )
    with writer:
        for batch in reading:
            keys.add(batch)
            writer.write(batch)
        proof = reading.proof()
        _require_proven(contract, request, shape, proof)
        written = writer.close()
    live_only = shape.deletions is not Deletions.TOMBSTONE and written.tombstones > 0
    last = keys.last_rows()
    if last is not None or live_only:
        written = _folded(written, contract, last, live_only, row_group_rows)
    manifest = request.manifest(
        contract,
        proof.produced_at,
        generation=proof.position if request.issue_position else None,
        rows=written.rows,
        tombstones=written.tombstones,
        content_hash=written.sha256,
    )
    log.info(
        "%s from %s stream %s: %d rows, %d tombstones, produced_at %s (%s); proves %s",
        contract.table,
        connector.kind,
        stream,
        written.rows,
        written.tombstones,
        proof.produced_at.isoformat(),
        proof.clock,
        proof.why,
    )
    return Delivered(written.path, manifest, proof)


def wait_for(until: datetime, max_wait: timedelta, table: str) -> None:
    """A read's instant is its start: wait until the boundary has passed, as far as allowed."""
    ahead = until - datetime.now(UTC)
    if ahead <= timedelta(0):
        return
    if ahead > max_wait:
        raise ConnectorError(
            f"{table}: the request's boundary {until.isoformat()} is {ahead} ahead, more than "
            f"max_wait {max_wait}: a read now could not show the source at it"
        )
    time.sleep(ahead.total_seconds())


def _require_proven(
    contract: Contract, request: ExtractionRequest, shape: Shape, proof: Proof
) -> None:
    proven = proof.shape
    if proven is None or (proven.coverage, proven.deletions, proven.checkpoint) != (
        shape.coverage,
        shape.deletions,
        shape.checkpoint,
    ):
        raise RefusedRead(
            "claims_more_than_read",
            f"{contract.table}: shape {request.shape!r} claims {_described(shape)}, the read "
            f"proves {_described(proven)} ({proof.why})",
        )


def _described(shape: Shape | None) -> str:
    if shape is None:
        return "no shape"
    if shape.checkpoint is Checkpoint.NONE:
        return f"a complete {shape.coverage} read"
    return f"changes by {shape.checkpoint}, deletions {shape.deletions}"


class _Keys:
    """The key columns of every row written, in order: all that folding needs."""

    def __init__(self, key: tuple[str, ...]) -> None:
        self.key = list(key)
        self.parts: list[pa.RecordBatch] = []

    def add(self, batch: pa.RecordBatch) -> None:
        if self.key:
            self.parts.append(batch.select(self.key))

    def last_rows(self) -> pa.Array | None:
        """The ordinals of each key's last row, or None when no key repeats."""
        if not self.parts:
            return None
        table = pa.Table.from_batches(self.parts)
        if not self._repeats(table):
            return None
        ordinals = pc.subtract(
            pc.cumulative_sum(pa.repeat(pa.scalar(1, pa.int64()), table.num_rows)), 1
        )
        last = table.append_column("_ordinal", ordinals).group_by(self.key)
        return last.aggregate([("_ordinal", "max")]).column("_ordinal_max").combine_chunks()

    def _repeats(self, table: pa.Table) -> bool:
        """Whether a key comes twice: for one key column by sorting it, which holds a third of
        what a hash grouping of a million keys holds; for several, by grouping."""
        if len(self.key) > 1:
            return bool(table.group_by(self.key).aggregate([]).num_rows != table.num_rows)
        ordered = pc.take(table.column(0), pc.sort_indices(table.column(0)))
        if len(ordered) < 2:
            return False
        same = pc.equal(ordered.slice(1), ordered.slice(0, len(ordered) - 1))
        return bool(pc.any(same).as_py())


def _folded(
    written: Written,
    contract: Contract,
    last: pa.Array | None,
    live_only: bool,
    row_group_rows: int,
) -> Written:
    """The file written again from itself: each key's last row, only live rows if live_only."""
    unfolded = Path(written.path).with_suffix(".unfolded.parquet")
    Path(written.path).replace(unfolded)
    try:
        source = pq.ParquetFile(unfolded)
        deleted = contract.deleted_column
        with DeliveryWriter(
            written.path, contract, source.schema_arrow, row_group_rows=row_group_rows
        ) as writer:
            start = 0
            for batch in source.iter_batches(batch_size=row_group_rows):
                keep = pa.repeat(pa.scalar(True), batch.num_rows)
                if last is not None:
                    ordinals = pc.add(
                        pc.subtract(
                            pc.cumulative_sum(pa.repeat(pa.scalar(1, pa.int64()), batch.num_rows)),
                            1,
                        ),
                        start,
                    )
                    keep = pc.is_in(ordinals, value_set=last)
                if live_only and deleted is not None:
                    keep = pc.and_(keep, pc.invert(batch.column(deleted)))
                writer.write(batch.filter(keep))
                start += batch.num_rows
            return writer.close()
    finally:
        unfolded.unlink(missing_ok=True)
