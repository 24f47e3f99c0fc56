"""A delivery of Parquet parts staged by one loader per part, all at once.

A delivery read by several readers is a folder of parts (sources/parallel.py). Where the
receiver's database takes several loaders into one table at once (PARALLEL_LOADS), each part is
loaded on a connection of its own, in a transaction of its own, while the others load: the
server's work on one part and this process's on another (reading Parquet, building COPY's
rows) overlap, on as many cores as the machine has free.

The staging table is created and committed before the loaders begin, since another session sees
a table only once it is committed; the caller notes it LOADING first, so a gate killed meanwhile
leaves it to sweep. Its rows keep their numbers: a part's rows follow the rows its predecessors'
footers declare, and a part that holds other than its footer declares is refused. A part whose
load fails (a lost connection, say) is rolled back alone and loaded again alone, at most
PART_ATTEMPTS times, while the others go on. A refusal (a part unreadable, a value its column
cannot hold) ends the load with None: the caller stages the delivery again by one loader, whose
refusal names file, column and rule as it always does.

The content hash is of the parts' bytes end to end, as one loader computes it: each loader
hashes the bytes it parses, and after the last part the parts are hashed end to end, each
checked against what its loader parsed (parts_sha256_as_read).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from dogana_core.contract import Contract
from dogana_provider.delivery.files import (
    Column,
    UnreadableFile,
    check_columns,
    delivery_parts,
    parts_sha256_as_read,
)
from dogana_provider.dialects import Dialect
from dogana_provider.staging import ROW_COLUMN, load_part

log = logging.getLogger(__name__)

PART_ATTEMPTS = 3
"""How many times one part is loaded before the stage fails."""

Begin = Callable[[], AbstractContextManager[Any]]
"""A new transaction on a connection of its own, committed when its block ends."""


@dataclass(frozen=True)
class Parts:
    """A parted delivery's parts in order, their columns (the same in each) and their rows."""

    folder: str
    files: tuple[Path, ...]
    columns: tuple[Column, ...]
    rows: tuple[int, ...]

    @property
    def types(self) -> tuple[tuple[str, str], ...]:
        """Every column staged, with its logical type."""
        return tuple((column.name, str(column.logical)) for column in self.columns)


def parts_of(path: str | Path, contract: Contract) -> Parts | None:
    """The parts of a delivery that one loader per part can stage: a folder of two or more
    Parquet parts whose footers are readable and give the same columns, each of a logical type;
    otherwise None, and one loader stages it (naming what it refuses)."""
    files = delivery_parts(path)
    if not Path(path).is_dir() or len(files) < 2:
        return None
    columns: tuple[Column, ...] | None = None
    rows = []
    try:
        for file in files:
            metadata = pq.read_metadata(file)
            found = tuple(Column.of(field) for field in metadata.schema.to_arrow_schema())
            check_columns(file, found, contract)
            if columns is not None and found != columns:
                return None
            columns = found
            rows.append(metadata.num_rows)
    except (pa.ArrowException, OSError, UnreadableFile):
        return None
    assert columns is not None
    if ROW_COLUMN in {c.name for c in columns} or any(c.logical is None for c in columns):
        return None
    return Parts(str(path), tuple(files), columns, tuple(rows))


def load_parts(
    begin: Begin, dialect: Dialect, table: str, parts: Parts, contract: Contract
) -> tuple[int, str] | None:
    """Every part into the staging table table (created, committed, empty), each in a
    transaction of its own, at once; the rows loaded and the content hash, or None when a part
    is refused. Raises the last failure of a part that failed PART_ATTEMPTS times."""
    firsts = list(itertools.accumulate(parts.rows, initial=1))  # each part's first row number

    def load(index: int) -> str:
        file = parts.files[index]
        for attempt in range(1, PART_ATTEMPTS + 1):
            try:
                with begin() as connection:
                    return load_part(
                        connection,
                        dialect,
                        table,
                        file,
                        contract,
                        parts.types,
                        firsts[index],
                        parts.rows[index],
                    )
            except UnreadableFile:
                raise  # the same on every try: no retry
            except Exception as exc:
                if attempt == PART_ATTEMPTS:
                    raise
                reason = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                log.warning(
                    "%s: part %s failed on try %d of %d, loaded again alone: %s",
                    table,
                    file.name,
                    attempt,
                    PART_ATTEMPTS,
                    reason or type(exc).__name__,
                )
        raise AssertionError("unreachable")

    count = len(parts.files)
    log.info("%s: staging %d parts by %d loaders at once", table, count, count)
    with ThreadPoolExecutor(max_workers=count, thread_name_prefix="dogana-load") as pool:
        futures = [pool.submit(load, index) for index in range(count)]
        errors = [future.exception() for future in futures]
    refused = next((e for e in errors if isinstance(e, UnreadableFile)), None)
    failed = next((e for e in errors if e is not None), None)
    if refused is None and failed is not None:
        raise failed
    try:
        if refused is not None:
            raise refused
        digests = [str(future.result()) for future in futures]
        sha256 = parts_sha256_as_read(parts.folder, list(zip(parts.files, digests, strict=True)))
    except UnreadableFile as why:
        log.info("%s: a part is refused, staged again by one loader: %s", table, why)
        return None
    return sum(parts.rows), sha256
