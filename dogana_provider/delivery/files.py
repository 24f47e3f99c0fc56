"""Delivered files: Parquet and CSV read in record batches, hashed while they are read.

A delivery's file is read once, front to back, in record batches, so memory stays flat whatever
its size (a Parquet file is read one row group at a time, so its row groups bound the memory; a
CSV file one block at a time). The SHA-256 of its bytes is computed from the very bytes the
parser reads (HashingReader), so the content_hash a receiver verifies names the rows it loaded,
not another copy of the file read earlier or later.

Every column gets a logical type name, the one the column hash uses:

    int8 ... int64, uint8 ... uint64     int
    float16, float32, float64            float
    string, large_string                 str
    bool                                 bool
    date32, date64                       date
    timestamp with a time zone           datetime
    decimal128(p,s), decimal256(p,s)     decimal(p,s)

A timestamp without a time zone is naive and refuses the whole file (a datetime in a read carries
its UTC offset or is refused). Other types (binary, lists, structs, times, durations) have no
dogana name; such a column is readable, but cannot enter a column hash or a staging table.

CSV carries no types. The columns the contract types (key, window, cursor, deleted) are parsed
with their logical types; every other column is str. So the column hash of a CSV file names str
for every column the contract does not type: a data contract that types other columns needs
Parquet. An unquoted empty field is null; a quoted empty field ("") is the empty string.
Datetimes in CSV carry an offset (2024-01-31T23:59:59Z, or +02:00); booleans are true/false/1/0.

DeliveryWriter writes a delivery the other way round, for an extractor: Parquet in row groups,
rows and tombstones counted and the bytes hashed while they are written.

A delivery read by several readers in one snapshot (sources/parallel.py) is a folder of Parquet
parts, ``<table>.parquet/part-00000.parquet``, ``part-00001.parquet`` ...: one delivery, one
manifest. The protocol's content_hash is "the SHA-256 of the delivered bytes"; a folder's
delivered bytes are its parts' bytes in part order, end to end (parts_sha256), so the manifest
keeps its one hash and the wire format is unchanged. DeliveredFile reads such a folder part
after part, hashing every part's bytes into the one digest as it reads them.

Errors name the file, the column when there is one, and the rule: UnreadableFile.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from dogana_core.contract import IDENTIFIER, Contract, column_hash
from dogana_core.manifest import Manifest

# Rows per batch read from a file: staging's peak memory is about a batch's rows in three forms
# (the file's, COPY's, the driver's), so a batch is the smallest that stages as fast as a larger
# one (the measurement: docs/performance.md).
BATCH_ROWS = 32_768
CHUNK = 1 << 20  # bytes hashed per read when the parser skips a range
PENDING_LIMIT = 64 << 20  # bytes read ahead of the hash kept to compare with later reads

PARQUET = "parquet"
CSV = "csv"
PART_PATTERN = "part-*.parquet"


def part_name(index: int) -> str:
    """The file name of a parted delivery's part index: their names sort in part order."""
    return f"part-{index:05d}.parquet"


def delivery_parts(path: str | Path) -> list[Path]:
    """The files holding a delivery's bytes, in order: the file itself, or a folder's parts."""
    path = Path(path)
    if path.is_dir():
        return sorted(path.glob(PART_PATTERN))
    return [path]


def parts_sha256(parts: Sequence[str | Path]) -> str:
    """The SHA-256 of the parts' bytes end to end: a parted delivery's content_hash."""
    sha = hashlib.sha256()
    for part in parts:
        with open(part, "rb", buffering=0) as source:
            while chunk := source.read(CHUNK):
                sha.update(chunk)
    return sha.hexdigest()


def parts_sha256_as_read(folder: str | Path, parts: Sequence[tuple[Path, str]]) -> str:
    """parts_sha256 of (part, digest) pairs, each part's bytes checked on the way against the
    digest of the bytes its reader parsed: the content hash then names the rows loaded, as a
    DeliveredFile's does. A part whose bytes changed since: UnreadableFile naming it."""
    sha = hashlib.sha256()
    for part, parsed in parts:
        own = hashlib.sha256()
        with open(part, "rb", buffering=0) as source:
            while chunk := source.read(CHUNK):
                sha.update(chunk)
                own.update(chunk)
        if own.hexdigest() != parsed:
            raise UnreadableFile(folder, f"part {part.name} changed after it was read")
    return sha.hexdigest()


class UnreadableFile(Exception):
    """A file that cannot be read as a delivery of its contract: names file, column and rule."""

    def __init__(self, path: str | Path, rule: str, *, column: str | None = None) -> None:
        self.path = str(path)
        self.column = column
        self.rule = rule
        where = f"{self.path}: column {column}" if column is not None else self.path
        super().__init__(f"{where}: {rule}")


class MisnamedColumn(UnreadableFile):
    """A column name no receiver may create: not an identifier, reserved, or a case twin."""


# Types ------------------------------------------------------------------------------------------

# The Arrow type each logical type is handed over as, whatever width the file used.
CANONICAL = {
    "int": pa.int64(),
    "float": pa.float64(),
    "str": pa.string(),
    "bool": pa.bool_(),
    "date": pa.date32(),
    "datetime": pa.timestamp("us", tz="UTC"),
}


class NoLogicalType(ValueError):
    """An Arrow type with no dogana type name; the message says why."""


def logical_type(arrow_type: pa.DataType) -> str:
    """The column-hash type name of an Arrow type, or NoLogicalType naming the rule."""
    if pa.types.is_dictionary(arrow_type):
        return logical_type(arrow_type.value_type)
    if pa.types.is_boolean(arrow_type):
        return "bool"
    if pa.types.is_integer(arrow_type):
        return "int"
    if pa.types.is_floating(arrow_type):
        return "float"
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "str"
    if pa.types.is_date(arrow_type):
        return "date"
    if pa.types.is_timestamp(arrow_type):
        if arrow_type.tz is None:
            raise NoLogicalType(
                f"{arrow_type} has no time zone: a naive timestamp is refused, a datetime in a "
                "read carries its UTC offset (write it as timestamp with tz='UTC')"
            )
        return "datetime"
    if pa.types.is_decimal(arrow_type):
        return f"decimal({arrow_type.precision},{arrow_type.scale})"
    raise NoLogicalType(
        f"{arrow_type} is not one of int, float, str, bool, date, datetime or decimal(p,s)"
    )


@dataclass(frozen=True)
class Column:
    """One column of a delivered file: its logical type, or why it has none."""

    name: str
    arrow_type: pa.DataType
    logical: str | None
    problem: str | None = None

    @classmethod
    def of(cls, field: pa.Field) -> Column:
        try:
            return cls(field.name, field.type, logical_type(field.type))
        except NoLogicalType as exc:
            return cls(field.name, field.type, None, str(exc))


def column_pairs(
    path: str | Path, columns: Sequence[Column], deleted_column: str | None
) -> list[tuple[str, str]]:
    """The [name, type] pairs of a file in column order, the deleted column left out."""
    pairs = []
    for column in [c for c in columns if c.name != deleted_column]:
        if column.logical is None:
            raise UnreadableFile(path, f"no column-hash type: {column.problem}", column=column.name)
        pairs.append((column.name, column.logical))
    return pairs


def file_column_hash(
    path: str | Path, columns: Sequence[Column], deleted_column: str | None
) -> str:
    """The column hash of the columns a file carries (Contract and shapes, Column hash)."""
    return column_hash(column_pairs(path, columns, deleted_column))


def refuse_misnamed(path: str, names: Sequence[str]) -> None:
    """Raise MisnamedColumn for the first column name no receiver may create.

    The same names are refused on every database, so a file gets one verdict everywhere: each
    must be an identifier (contract.IDENTIFIER: ASCII letters, digits and _, at most 63
    characters, so no quotes, spaces or empty names), and no two may be equal or differ only
    in case, since SQLite and MariaDB would take them for one column. Reserved words
    (select, order) are identifiers: they are quoted wherever they are used.
    """
    seen: dict[str, tuple[int, str]] = {}
    for index, name in enumerate(names):
        if not IDENTIFIER.fullmatch(name):
            raise MisnamedColumn(
                path,
                "is not an identifier a receiver can create (a letter or _, then letters, "
                "digits or _, ASCII; at most 63 characters)",
                column=repr(name),
            )
        first, twin = seen.setdefault(name.lower(), (index, name))
        if first != index:
            rule = (
                "appears twice in the file"
                if twin == name
                else f"and column {twin} are one name to a database comparing names without "
                "regard to case (SQLite, MariaDB)"
            )
            raise MisnamedColumn(path, rule, column=name)


def check_columns(path: str | Path, columns: Sequence[Column], contract: Contract) -> None:
    """Refuse columns no delivery of the contract can have (UnreadableFile naming the rule).

    A name no receiver may create (refuse_misnamed); a naive timestamp anywhere; a column the
    contract types missing (the deleted column may be: every row is then live) or of another
    logical type.
    """
    refuse_misnamed(str(path), [column.name for column in columns])
    for column in columns:
        if column.problem and pa.types.is_timestamp(column.arrow_type):
            raise UnreadableFile(path, column.problem, column=column.name)
    by_name = {c.name: c for c in reversed(columns)}  # the first of a name, as files read
    for name, kind in contract.types:
        bound = by_name.get(name)
        role = _role(contract, name)
        if bound is None:
            if name == contract.deleted_column:
                continue  # a read may omit the deleted column: every row is live
            raise UnreadableFile(path, f"the {role} column is missing from the file", column=name)
        if bound.logical != kind:
            found = bound.logical or str(bound.arrow_type)
            raise UnreadableFile(
                path,
                f"the {role} column is {found} in the file; the contract types it {kind}",
                column=name,
            )


# Hashing while reading --------------------------------------------------------------------------


class HashingReader(io.RawIOBase):
    """A read-only file whose SHA-256 is computed, in file order, from the bytes a parser reads.

    A CSV parser reads front to back, so every byte is hashed as it is parsed. A Parquet reader
    first reads the footer at the end, then row groups forwards, skipping the columns it does
    not need. While ``sequential`` is false (the footer phase), reads ahead of the hash are kept
    and hashed when the hash reaches them; afterwards a read ahead first hashes the skipped
    range from the file (bytes no parser used). Bytes read twice are compared with the copy
    kept, and ``finish`` refuses a file whose size or modification time changed while it was
    read: a file replaced by rename keeps its old bytes under this open handle, so only a
    change in place can happen, and that is seen.
    """

    def __init__(self, path: str | Path, sha: Any = None) -> None:
        """sha: a hash to go on with (a parted delivery's previous parts), else a new one."""
        super().__init__()
        self.path = str(path)
        self._file = open(path, "rb", buffering=0)  # noqa: SIM115 - closed in close()
        stat = os.fstat(self._file.fileno())
        self._stamp = (stat.st_size, stat.st_mtime_ns)
        self.size = stat.st_size
        self._position = 0
        self._hashed = 0
        self._sha = hashlib.sha256() if sha is None else sha
        self._pending: list[tuple[int, bytes]] = []
        self._pending_bytes = 0
        self.sequential = True

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self.size}[whence]
        self._position = max(0, base + offset)
        return self._position

    def tell(self) -> int:
        return self._position

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        data = self._pread(self._position, len(view))
        view[: len(data)] = data
        self._absorb(self._position, data)
        self._position += len(data)
        return len(data)

    def finish(self) -> str:
        """Hash every byte not hashed yet and return the lowercase hex SHA-256."""
        self._advance(self.size)
        stat = os.fstat(self._file.fileno())
        if (stat.st_size, stat.st_mtime_ns) != self._stamp or self._pread(self.size, 1):
            raise UnreadableFile(self.path, "the file changed while it was read")
        return self._sha.hexdigest()

    def close(self) -> None:
        if not self.closed:
            self._file.close()
        super().close()

    def _pread(self, offset: int, length: int) -> bytes:
        self._file.seek(offset)
        return self._file.read(length) or b""

    def _absorb(self, offset: int, data: bytes) -> None:
        end = offset + len(data)
        for start, kept in self._pending:
            low, high = max(offset, start), min(end, start + len(kept))
            if (
                low < high
                and data[low - offset : high - offset] != kept[low - start : high - start]
            ):
                raise UnreadableFile(self.path, "the file changed while it was read")
        if offset > self._hashed and not self.sequential:
            if self._pending_bytes + len(data) <= PENDING_LIMIT:
                self._pending.append((offset, bytes(data)))
                self._pending.sort()
                self._pending_bytes += len(data)
            return  # beyond the limit the range is hashed from the file when reached
        self._advance(offset)
        if end > self._hashed:
            self._sha.update(data[self._hashed - offset :])
            self._hashed = end
        self._forget_hashed()

    def _advance(self, target: int) -> None:
        """Hash [hashed, target): from kept reads where there are some, else from the file."""
        while self._hashed < target:
            kept = next(((s, b) for s, b in self._pending if s <= self._hashed < s + len(b)), None)
            if kept is not None:
                start, data = kept
                stop = min(target, start + len(data))
                self._sha.update(data[self._hashed - start : stop - start])
                self._hashed = stop
                continue
            following = [s for s, _ in self._pending if s > self._hashed]
            stop = min([target, *following, self._hashed + CHUNK])
            data = self._pread(self._hashed, stop - self._hashed)
            if not data:
                raise UnreadableFile(self.path, "the file is shorter than when it was opened")
            self._sha.update(data)
            self._hashed += len(data)
        self._forget_hashed()

    def _forget_hashed(self) -> None:
        keep = [(s, b) for s, b in self._pending if s + len(b) > self._hashed]
        if len(keep) != len(self._pending):
            self._pending = keep
            self._pending_bytes = sum(len(b) for _, b in keep)


# Reading ----------------------------------------------------------------------------------------


def file_format(path: str | Path) -> str:
    """parquet for .parquet/.pq or Parquet's magic bytes, csv for .csv and anything else."""
    suffix = Path(path).suffix.lower()
    if suffix in (".parquet", ".pq"):
        return PARQUET
    if suffix == ".csv":
        return CSV
    with open(path, "rb") as probe:
        return PARQUET if probe.read(4) == b"PAR1" else CSV


class DeliveredFile:
    """One delivered file, opened against its contract. Use as a context manager.

    ``columns`` are the file's columns with their logical types. ``batches(names)`` streams the
    named columns once, each in the canonical Arrow type of its logical type (CANONICAL), so
    consumers see int64, float64, string, bool, date32 and timestamp[us, UTC] only.
    ``sha256()`` finishes hashing the bytes and returns the digest; call it after reading (it
    hashes whatever the reader skipped), also after an UnreadableFile.

    Opening refuses, with UnreadableFile, a file whose columns repeat a name, that holds a naive
    timestamp, or that lacks a column the contract types or types it otherwise (the deleted
    column may be absent: every row is then live).
    """

    def __init__(self, path: str | Path, contract: Contract) -> None:
        self.path = str(path)
        self.contract = contract
        self.parts = delivery_parts(path)
        self.format = PARQUET if Path(path).is_dir() else file_format(path)
        self._sha = hashlib.sha256()
        # One part open at a time, each hashed to its end before the next adds its bytes.
        self._reader: HashingReader | None = (
            HashingReader(self.parts[0], self._sha) if self.parts else None
        )
        self._opened = 1
        self._digest: str | None = None
        self._columns: tuple[Column, ...] | None = None
        self._read = False

    def __enter__(self) -> DeliveredFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()

    def sha256(self) -> str:
        if self._digest is None:
            if self._reader is not None:
                self._reader.finish()
            while self._next_part() is not None:
                assert self._reader is not None
                self._reader.finish()
            self._digest = self._sha.hexdigest()
        return self._digest

    def _next_part(self) -> HashingReader | None:
        """The next part's reader, the current one closed (its bytes all hashed); None after
        the last."""
        if self._opened >= len(self.parts):
            return None
        if self._reader is not None:
            self._reader.finish()
            self._reader.close()
        self._reader = HashingReader(self.parts[self._opened], self._sha)
        self._opened += 1
        return self._reader

    @property
    def columns(self) -> tuple[Column, ...]:
        """The file's columns; the first use reads the schema and checks it (UnreadableFile)."""
        if self._columns is None:
            columns = self._open()
            check_columns(self.path, columns, self.contract)
            self._columns = columns
        return self._columns

    def column(self, name: str) -> Column | None:
        return {c.name: c for c in reversed(self.columns)}.get(name)

    # Opening ------------------------------------------------------------------------------------

    def _open(self) -> tuple[Column, ...]:
        if self._reader is None:
            raise UnreadableFile(self.path, f"a delivery folder holds no {PART_PATTERN} part")
        if self.format == PARQUET:
            self._parquet = self._parquet_of(self._reader)
            return tuple(Column.of(field) for field in self._parquet.schema_arrow)
        names = self._csv_header()
        return tuple(
            Column(name, CANONICAL[kind], kind)
            for name in names
            for kind in [self._bound_types().get(name, "str")]
        )

    def _parquet_of(self, reader: HashingReader) -> pq.ParquetFile:
        # The footer is read first, at the end of the file: keep it for the hash.
        reader.sequential = False
        try:
            parquet = pq.ParquetFile(reader, pre_buffer=False)
        except (pa.ArrowException, OSError) as exc:
            where = "" if reader.path == self.path else f"part {Path(reader.path).name}: "
            raise UnreadableFile(self.path, f"{where}not a readable Parquet file: {exc}") from None
        reader.sequential = True
        return parquet

    def _bound_types(self) -> dict[str, str]:
        return {column: str(kind) for column, kind in self.contract.types}

    def _csv_header(self) -> list[str]:
        # Only the header line is read here, to type the columns before Arrow parses the file;
        # Arrow reads it again, from the hashed bytes, and must find the same names.
        try:
            with open(self.path, encoding="utf-8-sig", newline="") as text:
                header = next(csv.reader(text), None)
        except (UnicodeDecodeError, csv.Error) as exc:
            raise UnreadableFile(self.path, f"the CSV header cannot be read: {exc}") from None
        if not header:
            raise UnreadableFile(self.path, "an empty CSV file has no header line")
        return header

    # Reading ------------------------------------------------------------------------------------

    def batches(
        self, names: Sequence[str], batch_size: int = BATCH_ROWS
    ) -> Iterator[pa.RecordBatch]:
        """The named columns, streamed once, in canonical Arrow types (see CANONICAL)."""
        if self._read:
            raise RuntimeError(f"{self.path}: a delivered file is read once")
        self._read = True
        _ = self.columns  # opens the file and checks its columns, once
        columns = []
        for name in names:
            column = self.column(name)
            if column is None:
                raise UnreadableFile(self.path, "is not in the file", column=name)
            if column.logical is None:
                raise UnreadableFile(self.path, f"cannot be loaded: {column.problem}", column=name)
            columns.append(column)
        for batch in self._raw_batches(list(names), batch_size):
            if not columns:
                yield batch  # no columns: the batch still counts its rows
                continue
            arrays = [_canonical(self.path, c, batch.column(i)) for i, c in enumerate(columns)]
            yield pa.RecordBatch.from_arrays(arrays, names=list(names))
            release_unused()

    def _raw_batches(self, names: list[str], batch_size: int) -> Iterator[pa.RecordBatch]:
        try:
            if self.format == PARQUET:
                parquet = self._parquet
                while True:
                    # One thread: pages a worker thread allocated and the reading thread frees
                    # stay with the worker's heap in Arrow's allocator, where release_unused
                    # cannot reach them and the peak grows with the file; worker threads do not
                    # read it faster.
                    yield from parquet.iter_batches(
                        batch_size=batch_size, columns=names, use_threads=False
                    )
                    reader = self._next_part()
                    if reader is None:
                        return
                    parquet = self._parquet_of(reader)
                    if not parquet.schema_arrow.equals(self._parquet.schema_arrow):
                        raise UnreadableFile(
                            self.path,
                            f"part {Path(reader.path).name} has the columns "
                            f"{parquet.schema_arrow}, the first part {self._parquet.schema_arrow}",
                        )
            assert self._reader is not None  # a CSV delivery is one file
            csv_reader = pa_csv.open_csv(
                self._reader,
                read_options=pa_csv.ReadOptions(use_threads=False),
                parse_options=pa_csv.ParseOptions(newlines_in_values=True),
                convert_options=pa_csv.ConvertOptions(
                    column_types={c.name: c.arrow_type for c in self.columns},
                    include_columns=names,
                    null_values=[""],
                    strings_can_be_null=True,
                    quoted_strings_can_be_null=False,
                ),
            )
            for batch in csv_reader:
                yield batch.select(names) if names else batch
        except (pa.ArrowException, OSError) as exc:
            raise self._unreadable(exc) from None

    def _unreadable(self, exc: Exception) -> UnreadableFile:
        message = str(exc).split("\n")[0]
        match = re.search(r"CSV column #(\d+)", message)
        if match and int(match[1]) < len(self.columns):
            return UnreadableFile(self.path, message, column=self.columns[int(match[1])].name)
        return UnreadableFile(self.path, message)


def _role(contract: Contract, name: str) -> str:
    if name in contract.key:
        return "key"
    if name == contract.window_column:
        return "window"
    if name == contract.cursor_column:
        return "cursor"
    return "deleted"


def _canonical(path: str, column: Column, array: pa.Array) -> pa.Array:
    """array in the canonical Arrow type of its logical type, refusing any lossy conversion."""
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    assert column.logical is not None
    target = CANONICAL.get(column.logical)
    if target is None or array.type == target:
        return array
    try:
        return array.cast(target, safe=True)
    except pa.ArrowException as exc:
        rule = str(exc).split("\n")[0]
        if pa.types.is_timestamp(array.type):
            rule = f"dogana's datetimes have microseconds; {rule}"
        raise UnreadableFile(
            path, f"cannot be read as {column.logical}: {rule}", column=column.name
        ) from None


def release_unused() -> None:
    """Hand back to the system the pages Arrow's allocator keeps once a batch is done with.

    mimalloc (pyarrow's default) and jemalloc keep freed pages for the next allocation, so a
    process streaming a large file would hold far more than it uses at its peak; asking after
    each batch costs little."""
    pa.default_memory_pool().release_unused()


# Counting ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RowCounts:
    """What a file holds, counted: live rows, tombstones, and rows whose deleted value is null."""

    live: int
    tombstones: int
    null_deleted: int


def count_rows(delivered: DeliveredFile) -> RowCounts:
    """Count live rows and tombstones from the deleted column, streaming.

    Every column the contract types is read and converted, as staging reads it, so a file the
    receiver could not read is refused here too rather than counted. Every row is live when the
    contract has no deleted column or the file omits it.
    """
    contract = delivered.contract
    names = [c for c, _ in contract.types if delivered.column(c) is not None]
    deleted = contract.deleted_column if contract.deleted_column in names else None
    live = tombstones = nulls = 0
    for batch in delivered.batches(names):
        if deleted is None:
            live += batch.num_rows
            continue
        values = batch.column(names.index(deleted))
        true = pc.sum(values.cast(pa.int64())).as_py() or 0
        nulls += values.null_count
        tombstones += true
        live += len(values) - values.null_count - true
    return RowCounts(live, tombstones, nulls)


# Writing ----------------------------------------------------------------------------------------


class HashingWriter(io.RawIOBase):
    """A new file whose SHA-256 is computed from the bytes as they are written, in order."""

    def __init__(self, path: str | Path, *, overwrite: bool = False) -> None:
        super().__init__()
        self._file = open(path, "wb" if overwrite else "xb")  # noqa: SIM115 - closed in close()
        self._sha = hashlib.sha256()
        self._size = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        written = self._file.write(view) or 0
        self._sha.update(view[:written])
        self._size += written
        return written

    def tell(self) -> int:
        return self._size

    def flush(self) -> None:
        if not self._file.closed:
            self._file.flush()

    def close(self) -> None:
        super().close()  # flushes first
        self._file.close()

    def hexdigest(self) -> str:
        return self._sha.hexdigest()


@dataclass(frozen=True)
class Written:
    """A delivery as written: what the manifest declares, counted and hashed while writing."""

    path: str
    rows: int
    tombstones: int
    sha256: str
    columns: tuple[Column, ...]

    def manifest(
        self, contract: Contract, shape: str, produced_at: datetime, **fields: Any
    ) -> Manifest:
        """The manifest of this file: rows, tombstones and content_hash as counted, checked."""
        return contract.manifest(
            shape,
            produced_at,
            rows=self.rows,
            tombstones=self.tombstones,
            content_hash=self.sha256,
            **fields,
        )


class DeliveryWriter:
    """Write a delivery as Parquet, counting rows and tombstones and hashing bytes as it goes.

    For an extractor streaming rows from a source: ``write`` takes record batches, buffers at
    most ``row_group_rows`` rows and writes each full buffer as one row group, so memory stays
    flat; ``close`` returns what the manifest declares (Written). The schema is checked against
    the contract first (check_columns), datetimes are written at microseconds (a value that
    would lose digits is refused), and a row whose deleted value is null is refused: it is
    neither live nor a tombstone. On an error inside ``with``, the partial file is removed.
    """

    def __init__(
        self,
        path: str | Path,
        contract: Contract,
        schema: pa.Schema,
        *,
        row_group_rows: int = 131_072,
        overwrite: bool = False,
    ) -> None:
        self.path = str(path)
        self.contract = contract
        self.schema = schema
        self.columns = tuple(Column.of(field) for field in schema)
        check_columns(self.path, self.columns, contract)
        deleted = contract.deleted_column
        self._deleted = deleted if deleted in schema.names else None
        self._row_group_rows = row_group_rows
        self._sink = HashingWriter(path, overwrite=overwrite)
        # No dictionary pages: on mostly distinct values building them costs more than the rest
        # of the write together, and the file comes out larger.
        self._writer = pq.ParquetWriter(
            self._sink,
            schema,
            coerce_timestamps="us",
            allow_truncated_timestamps=False,
            use_dictionary=False,
        )
        self._buffer: list[pa.RecordBatch] = []
        self._buffered = 0
        self._rows = 0
        self._tombstones = 0

    def __enter__(self) -> DeliveryWriter:
        return self

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        if error is not None:
            self.abort()

    def write(self, rows: pa.RecordBatch | pa.Table) -> None:
        if not rows.schema.equals(self.schema):
            raise UnreadableFile(
                self.path,
                f"rows of schema {rows.schema} do not fit the file's schema {self.schema}",
            )
        batches = rows.to_batches() if isinstance(rows, pa.Table) else [rows]
        for batch in batches:
            self._count(batch)
            # A batch larger than a row group (a bulk read's) is cut at the row groups' edges.
            start = 0
            while start < batch.num_rows:
                take = min(batch.num_rows - start, self._row_group_rows - self._buffered)
                self._buffer.append(batch.slice(start, take))
                self._buffered += take
                start += take
                if self._buffered >= self._row_group_rows:
                    self._flush()

    def close(self) -> Written:
        self._flush()
        try:
            self._writer.close()
        finally:
            self._sink.close()
        return Written(
            self.path, self._rows, self._tombstones, self._sink.hexdigest(), self.columns
        )

    def abort(self) -> None:
        """Stop writing and remove the partial file."""
        # The partial file goes whatever closing it says.
        with contextlib.suppress(pa.ArrowException, OSError, ValueError):
            self._writer.close()
        self._sink.close()
        Path(self.path).unlink(missing_ok=True)

    def _count(self, batch: pa.RecordBatch) -> None:
        if self._deleted is None:
            self._rows += batch.num_rows
            return
        values = batch.column(self._deleted)
        if values.null_count:
            raise UnreadableFile(
                self.path,
                f"{values.null_count} rows have a null deleted value; a row is live (false) or "
                "a tombstone (true), never null",
                column=self._deleted,
            )
        true = pc.sum(values.cast(pa.int64())).as_py() or 0
        self._tombstones += true
        self._rows += batch.num_rows - true

    def _flush(self) -> None:
        if not self._buffer:
            return
        table = pa.Table.from_batches(self._buffer, schema=self.schema)
        try:
            self._writer.write_table(
                table, row_group_size=max(self._row_group_rows, table.num_rows)
            )
        except pa.ArrowException as exc:
            raise UnreadableFile(self.path, str(exc).split("\n")[0]) from None
        self._buffer, self._buffered = [], 0
        del table  # its batches' pages, free now, go back with the rest
        release_unused()
