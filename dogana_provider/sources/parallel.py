"""Several readers of one table in one snapshot, each writing its own Parquet part.

A table too big for one stream is read by N readers, as ``pg_dump -j`` reads one: the read's
own transaction (snapshot.py, the coordinator) exports its snapshot and stays open for the whole
read; each reader opens its own REPEATABLE READ READ ONLY transaction whose first statement is
``SET TRANSACTION SNAPSHOT`` on it, and reads one range of the table's pages (PostgreSQL: a
TID range scan, ``ctid >= '(a,0)' AND ctid < '(b,0)'``, the pages measured inside the read, the
last range open). Every reader sees exactly what the coordinator sees: a commit after the export
is in no part, and a row's visible version is on one page, so in one part. The spec's Premise
names this: "one exported snapshot shared by workers in Postgres" is one read.

The delivery stays one: a folder ``<table>.parquet`` of parts ``part-00000.parquet`` ... in page
order, one manifest whose rows and tombstones are the parts' sums and whose content_hash is the
SHA-256 of the parts' bytes end to end (delivery/files.py), one produced_at, one row check, one
publication. The receiver stages the folder as one delivery, its parts by one loader each at
once where its database allows (staging/parts.py).

A part that fails (a lost connection, a reader killed) is read again alone, at most
``PART_ATTEMPTS`` times, while the others go on; a value that does not fit its column fails the
read at once, as it would with one reader. A part is written as ``part-NNNNN.parquet.partial``
and renamed when whole, and ``_reading.json`` beside the parts records the exported snapshot,
the produced_at and the statement: a read of the same request in the same open read (the
coordinator still exporting that snapshot) keeps the parts it finds and reads only the others.
When the snapshot is no longer exported (the coordinator's transaction ended: a new task try, a
new read), the parts found were read at another instant and are removed; the log says so.

MariaDB and SQLite keep one reader (snapshot.py's ``one_reader`` says why), so does a query
(table_sql), which cannot be cut by pages, and a read the bulk path does not serve (bulk.py's
cases): the log names the case whenever readers > 1 was asked.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dogana_core.contract import Contract
from dogana_provider.delivery.files import (
    Column,
    DeliveryWriter,
    UnreadableFile,
    Written,
    part_name,
    parts_sha256,
)
from dogana_provider.sources.columns import Columns, UnsupportedColumn
from dogana_provider.sources.snapshot import SlowPath, Snapshot

log = logging.getLogger(__name__)

PART_ATTEMPTS = 3
"""How many times one part is read before the read fails."""
STATE = "_reading.json"
MAX_READERS = 64


def checked_readers(value: Any, what: str = "readers") -> int:
    """A number of readers: an integer from 1 to MAX_READERS, else ValueError naming it."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"{what}: expected a whole number of readers, got {value!r}")
    try:
        readers = int(value)
    except ValueError:
        raise ValueError(f"{what}: expected a whole number of readers, got {value!r}") from None
    if not 1 <= readers <= MAX_READERS:
        raise ValueError(f"{what}: {readers} readers; give from 1 to {MAX_READERS}")
    return readers


@dataclass(frozen=True)
class Part:
    """One reader's pages [low, high) (high None: to the table's end), into one file."""

    index: int
    low: int
    high: int | None


def read_parts(
    snapshot: Snapshot,
    rows_within: Callable[[str], str],
    params: Mapping[str, Any],
    columns: Columns,
    contract: Contract,
    folder: Path,
    ranges: list[tuple[int, int | None]],
    *,
    row_group_rows: int,
) -> Written:
    """Read every range in its own reader and part; the parts' sums and content hash.

    rows_within(condition) is the read's statement narrowed by a condition on the table's rows.
    SlowPath or OneReader before any part is kept send the caller to one reader."""
    source = snapshot.source
    parts = [Part(index, low, high) for index, (low, high) in enumerate(ranges)]
    statement = {
        "sql": rows_within(source.page_filter(0, None)[0]),
        "params": {k: str(v) for k, v in sorted(params.items())},
        "ranges": ranges,
    }
    exported, done = _resumed(snapshot, folder, statement)
    if exported is None:
        exported = source.export(snapshot)
        _save(folder, exported, snapshot, statement, {})
    lock = threading.Lock()

    def read(part: Part) -> dict[str, Any]:
        condition, bounds = source.page_filter(part.low, part.high)
        sql, values = rows_within(condition), {**params, **bounds}
        path = folder / part_name(part.index)
        for attempt in range(1, PART_ATTEMPTS + 1):
            try:
                counted = _read_part(
                    snapshot, exported, sql, values, columns, contract, path, row_group_rows
                )
            except (SlowPath, UnsupportedColumn, UnreadableFile):
                raise  # the same on every try: no retry
            except Exception as exc:
                if attempt == PART_ATTEMPTS:
                    raise
                log.warning(
                    "part %d (pages %s to %s) failed on try %d of %d, read again alone: %s",
                    part.index,
                    part.low,
                    "the end" if part.high is None else part.high,
                    attempt,
                    PART_ATTEMPTS,
                    str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__,
                )
                continue
            with lock:
                done[str(part.index)] = counted
                _save(folder, exported, snapshot, statement, done)
            return counted
        raise AssertionError("unreachable")

    left = [part for part in parts if str(part.index) not in done]
    if len(left) < len(parts):
        log.info(
            "%d of %d parts kept from the interrupted read", len(parts) - len(left), len(parts)
        )
    log.info("reading %d parts of %s in %d readers", len(left), contract.table, len(left))
    if left:
        with ThreadPoolExecutor(max_workers=len(left), thread_name_prefix="dogana-part") as pool:
            futures = [pool.submit(read, part) for part in left]
            # Every part runs to its end, so the parts read are kept for a resumed read.
            errors = [future.exception() for future in futures]
        first = next((error for error in errors if error is not None), None)
        if first is not None:
            raise first
    files = [folder / part_name(part.index) for part in parts]
    (folder / STATE).unlink(missing_ok=True)
    counts = [done[str(part.index)] for part in parts]
    return Written(
        str(folder),
        sum(c["rows"] for c in counts),
        sum(c["tombstones"] for c in counts),
        parts_sha256(files),
        tuple(Column.of(field) for field in columns.schema),
    )


def _read_part(
    snapshot: Snapshot,
    exported: str,
    sql: str,
    params: Mapping[str, Any],
    columns: Columns,
    contract: Contract,
    path: Path,
    row_group_rows: int,
) -> dict[str, Any]:
    """One part, read in the exported snapshot into a file renamed into place once whole."""
    partial = path.with_name(path.name + ".partial")
    with snapshot.source.imported_read(snapshot, exported, sql, params, columns) as bulk:
        writer = DeliveryWriter(
            partial, contract, bulk.schema, row_group_rows=row_group_rows, overwrite=True
        )
        try:
            for batch in bulk.batches:
                writer.write(batch)
            written = writer.close()
        except BaseException:
            writer.abort()
            raise
    partial.replace(path)
    return {"rows": written.rows, "tombstones": written.tombstones}


def _resumed(
    snapshot: Snapshot, folder: Path, statement: Mapping[str, Any]
) -> tuple[str | None, dict[str, Any]]:
    """The snapshot an interrupted read of this statement exported and the parts it wrote,
    when that snapshot is still exported and is this read's; otherwise nothing, the folder
    emptied, and the log says why any part found is not kept."""
    state = _state(folder)
    exported = None if state is None else str(state.get("snapshot"))
    if state is None:
        why = "no record of the read that wrote them"
    elif state.get("statement") != _digest(statement):
        why = "they read another request"
    elif state.get("produced_at") != snapshot.produced_at.isoformat():
        why = f"they were read at {state.get('produced_at')}, not at this read's instant"
    elif not snapshot.source.still_exported(snapshot, str(exported)):
        why = f"their snapshot {exported} is no longer exported (the read that took it ended)"
    else:
        return exported, dict(state.get("parts", {}))
    if folder.is_dir():
        if any(folder.glob("part-*")):
            log.warning(
                "%s: reading every part again; the parts found are dropped: %s", folder, why
            )
        shutil.rmtree(folder)
    elif folder.exists():
        folder.unlink()  # a delivery written by one reader before
    folder.mkdir(parents=True)
    return None, {}


def _state(folder: Path) -> dict[str, Any] | None:
    try:
        state = json.loads((folder / STATE).read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def _save(
    folder: Path,
    exported: str,
    snapshot: Snapshot,
    statement: Mapping[str, Any],
    done: Mapping[str, Any],
) -> None:
    record = {
        "snapshot": exported,
        "produced_at": snapshot.produced_at.isoformat(),
        "statement": _digest(statement),
        "parts": dict(done),
    }
    temporary = folder / (STATE + ".partial")
    temporary.write_text(json.dumps(record, sort_keys=True))
    temporary.replace(folder / STATE)


def _digest(statement: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(statement, sort_keys=True).encode()).hexdigest()
