"""JSON Lines files: one record a line, read by exact byte offsets, appended to by their writer.

    JsonLinesConnector({
        "path": "s3://drops/orders.jsonl",        # a local path or any fsspec URL
        "key": ["order_id"],
        "columns": {"order_id": "int", "amount": "float", "placed_at": "datetime", "_op": "str"},
        "whole_history": True,                    # the file starts at the table's first row
    })

A position is a token the ledger holds as a generation: the byte offset after the last line read,
its line number, and the lengths and SHA-256 prefixes of the file's first line and of the line
that ends at the offset. Resuming from it checks both lines: a file shorter than the offset
(file_shrank) or whose lines there differ (file_rewritten) is refused, never read from a wrong
place. A rewrite that keeps both lines byte for byte is not seen.

Each read takes the file's size once, at its start, and reads up to it: its instant (produced_at)
is the worker's clock just before that size was read, and every line the writer finished before
then is in the read. A last line without its newline is a line still being written (or cut by a
crash): it is not delivered, the position stays before it, and the proof says how many bytes
wait there.

An `_op` column (c, u or d, the change-log convention) marks deletions: it becomes the bool
deleted column, true for d, and the stream declares tombstones. Without it every line is live.

What a read proves: from the start of a file that holds the table's whole history
(whole_history), a complete read issuing its position; from a position, the changes since it,
checkpoint generation, with tombstones when the file has an `_op` column. A read stopped by its
limit proves no shape (lines after it were already written), nor does a backfill.

Rows are parsed by Arrow's JSON reader a block at a time, never a Python object per value. A
record that does not fit the declared columns, a line missing its key, a blank line and an `_op`
other than c, u or d refuse the read, naming the line.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from dogana_core.contract import IDENTIFIER
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
from dogana_provider.delivery.files import CANONICAL, NoLogicalType, logical_type

OPS = ("c", "u", "d")
SAMPLE_BYTES = 1 << 20  # what discover reads to infer columns nobody declared
CLOCK = "the worker's clock just before the read took the file's size"


@dataclass(frozen=True)
class Offset:
    """A position in a file: after byte `byte`, which ends line number `line` (0: the start).

    first and last fingerprint the file's first line and the line ending at byte, as
    (length, SHA-256 prefix), so that a resume can tell the file is the one it read.
    """

    byte: int
    line: int
    first: tuple[int, str]
    last: tuple[int, str]

    def token(self) -> str:
        return (
            f"jsonl:{self.byte}:{self.line}:{self.first[0]}-{self.first[1]}:"
            f"{self.last[0]}-{self.last[1]}"
        )

    @classmethod
    def of(cls, token: Scalar) -> Offset:
        found = _TOKEN.fullmatch(str(token)) if isinstance(token, str) else None
        if found is None:
            raise ConnectorError(
                f"{token!r} is not a position of a JSON Lines file (jsonl:BYTE:LINE:...)"
            )
        byte, line, first_len, first_sha, last_len, last_sha = found.groups()
        return cls(int(byte), int(line), (int(first_len), first_sha), (int(last_len), last_sha))


START = Offset(0, 0, (0, ""), (0, ""))
_TOKEN = re.compile(r"jsonl:(\d+):(\d+):(\d+)-([0-9a-f]{0,16}):(\d+)-([0-9a-f]{0,16})")


def fingerprint(line: bytes) -> tuple[int, str]:
    return len(line), hashlib.sha256(line).hexdigest()[:16]


class JsonLinesConnector(Connector):
    """A JSON Lines file as one stream (see the module's text)."""

    kind = "jsonl"
    options: ClassVar[Mapping[str, str]] = {
        "path": "the file: a local path or any fsspec URL the delivery folder reaches",
        "stream": "the stream's name (by default the file's name without .jsonl)",
        "columns": "column -> logical type, in order (by default inferred from the first MiB)",
        "key": "the key columns",
        "op_column": "the change-log column whose d marks a deletion (default _op)",
        "deleted_column": "the bool column a deletion becomes (default deleted)",
        "whole_history": "true when the file starts at the table's first row",
        "batch_bytes": "bytes parsed per batch (default 8 MiB)",
    }
    required = ("path",)

    # Configuration ----------------------------------------------------------------------------

    @property
    def path(self) -> str:
        return str(self.option("path", ""))

    @property
    def op_column(self) -> str:
        return str(self.option("op_column", "_op"))

    @property
    def deleted_column(self) -> str:
        return str(self.option("deleted_column", "deleted"))

    @property
    def batch_bytes(self) -> int:
        return int(self.option("batch_bytes", 8 << 20))

    def check(self) -> tuple[str, ...]:
        problems: list[str] = []
        path = self.config.get("path")
        if "path" in self.config and (not isinstance(path, str) or not path.strip()):
            problems.append(f"path: {path!r} is not a file's path or URL")
        columns = self.config.get("columns")
        if columns is not None:
            if not isinstance(columns, Mapping) or not columns:
                problems.append("columns: a mapping from column to logical type, not empty")
                columns = None
            else:
                for name, kind in columns.items():
                    if not isinstance(name, str) or not IDENTIFIER.fullmatch(name):
                        problems.append(f"columns: {name!r} is not a column name")
                    if kind not in CANONICAL:
                        problems.append(
                            f"columns: {name}: {kind!r} is not one of {', '.join(CANONICAL)}"
                        )
        key = self.config.get("key", [])
        if not isinstance(key, list | tuple) or not all(isinstance(k, str) for k in key):
            problems.append(f"key: {key!r} is not a list of column names")
        elif columns is not None:
            problems += [f"key: {k!r} is not one of the columns" for k in key if k not in columns]
        for option in ("op_column", "deleted_column", "stream"):
            value = self.config.get(option)
            if option in self.config and (not isinstance(value, str) or not value):
                problems.append(f"{option}: {value!r} is not a name")
        if columns is not None and self.deleted_column in columns:
            problems.append(
                f"deleted_column: {self.deleted_column!r} is a column of the file; name another"
            )
        if columns is not None and self.op_column in columns and columns[self.op_column] != "str":
            problems.append(f"columns: {self.op_column} holds c, u or d: type it str")
        if not isinstance(self.config.get("whole_history", False), bool):
            problems.append("whole_history: true or false")
        size = self.config.get("batch_bytes", 1)
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            problems.append(f"batch_bytes: {size!r} is not a positive number of bytes")
        return tuple(problems)

    # The file ---------------------------------------------------------------------------------

    def filesystem(self) -> tuple[Any, str]:
        """The file's fsspec filesystem and path: a URL's as ObjectStoragePath finds it (with
        the connection attached to its scheme), a local path's the local one. Its own open,
        not ObjectStoragePath's, whose wrapper reports every read to Airflow's lineage."""
        if "://" not in self.path:
            from fsspec.implementations.local import LocalFileSystem  # type: ignore[import-untyped]

            return LocalFileSystem(), str(Path(self.path).resolve())
        from airflow.sdk import ObjectStoragePath

        found = ObjectStoragePath(self.path)
        return found.fs, str(found.path)

    def size(self) -> int:
        filesystem, path = self.filesystem()
        return int(filesystem.info(path)["size"])

    def opened(self) -> Any:
        filesystem, path = self.filesystem()
        return filesystem.open(path, "rb")

    def stream_name(self) -> str:
        name = self.option("stream")
        if name:
            return str(name)
        stem = self.path.rstrip("/").rsplit("/", 1)[-1]
        return stem[: -len(".jsonl")] if stem.endswith(".jsonl") else stem.rsplit(".", 1)[0]

    # Operations -------------------------------------------------------------------------------

    def discover(self) -> tuple[Stream, ...]:
        self.connect()
        file_columns = self._file_columns()
        columns = [c for c in file_columns if c.name != self.op_column]
        deletes = len(columns) < len(file_columns)
        if deletes:
            columns.append(StreamColumn(self.deleted_column, "bool"))
        return (
            Stream(
                self.stream_name(),
                tuple(columns),
                tuple(self.option("key", ())),
                self.deleted_column if deletes else None,
            ),
        )

    def health(self) -> Health:
        problems = self.validate()
        if problems:
            return Health(False, "; ".join(problems))
        try:
            size = self.size()
        except FileNotFoundError:
            return Health(False, f"{self.path}: no such file")
        except Exception as exc:  # health reports whatever stops the source; it never raises
            return Health(False, f"{self.path}: {type(exc).__name__}: {exc}")
        return Health(True, f"{self.path}: {size} bytes")

    def read(
        self, stream: str, *, since: Scalar | None = None, limit: int | None = None
    ) -> Reading:
        self.connect()
        check_limit(limit)
        found = self.stream(stream)
        start = START if since is None else Offset.of(since)
        return JsonLinesReading(self, found, start, limit=limit, end=None, from_start=since is None)

    def backfill(
        self, stream: str, low: Position, high: Position, *, limit: int | None = None
    ) -> Reading:
        check_bounded(low, high)
        self.connect()
        check_limit(limit)
        found = self.stream(stream)
        first, last = Offset.of(low), Offset.of(high)
        if last.byte < first.byte:
            raise RefusedRead("reversed_backfill", f"{high!r} is before {low!r}")
        return JsonLinesReading(self, found, first, limit=limit, end=last, from_start=False)

    def _file_columns(self) -> list[StreamColumn]:
        declared = self.option("columns")
        if declared is not None:
            return [StreamColumn(name, kind) for name, kind in declared.items()]
        with self.opened() as handle:
            sample = handle.read(SAMPLE_BYTES)
        sample = sample[: sample.rfind(b"\n") + 1]
        if not sample:
            raise ConnectorError(
                f"{self.path}: no complete line to infer the columns from; declare columns"
            )
        try:
            schema = pa_json.read_json(io.BytesIO(sample)).schema
        except pa.ArrowInvalid as exc:
            raise ConnectorError(f"{self.path}: {exc}; declare columns") from None
        columns = []
        for field in schema:
            try:
                kind = logical_type(field.type)
            except NoLogicalType:
                raise ConnectorError(
                    f"{self.path}: column {field.name} holds {field.type} values, which have no "
                    "dogana type; declare columns"
                ) from None
            if kind.startswith("decimal"):
                kind = "float"
            columns.append(StreamColumn(field.name, kind))
        return columns


class JsonLinesReading(Reading):
    """One read of a JSON Lines file from an offset to the end (or to a backfill's end)."""

    def __init__(
        self,
        connector: JsonLinesConnector,
        stream: Stream,
        start: Offset,
        *,
        limit: int | None,
        end: Offset | None,
        from_start: bool,
    ) -> None:
        self.connector = connector
        self.stream = stream
        self.start = start
        self.limit = limit
        self.end = end
        self.from_start = from_start
        self.at = start
        self.rows = 0
        self.finished = False
        self.stopped_by_limit = False
        self.pending = 0
        self.produced_at: datetime | None = None
        names = [c.name for c in stream.columns if c.name != stream.deleted_column]
        file_columns = connector._file_columns()
        self.file_schema = pa.schema([(c.name, c.arrow()) for c in file_columns])
        self.has_op = connector.op_column in self.file_schema.names
        self.names = names
        self.schema = stream.schema()

    def checkpoint(self) -> Position:
        return self.at.token()

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        self.produced_at = datetime.now(UTC)
        size = self.connector.size()
        with self.connector.opened() as handle:
            self._verify(handle, size)
            stop = size if self.end is None else self.end.byte
            first = self.start.first
            while self.at.byte < stop:
                if self.limit is not None and self.rows >= self.limit:
                    self.stopped_by_limit = self._more_lines(handle, stop)
                    break
                block = self._block(handle, stop)
                if block is None:
                    self.pending = stop - self.at.byte
                    break
                if first[0] == 0:
                    first = fingerprint(block[: block.index(b"\n") + 1])
                batch = self._parse(block)
                last_start = block.rfind(b"\n", 0, len(block) - 1) + 1
                self.at = Offset(
                    self.at.byte + len(block),
                    self.at.line + batch.num_rows,
                    first,
                    fingerprint(block[last_start:]),
                )
                self.rows += batch.num_rows
                yield from batch.to_batches()
        self.finished = True

    def proof(self) -> Proof:
        if self.produced_at is None or not self.finished:
            raise ConnectorError("the read is not finished: read its batches first")
        waiting = (
            f"; {self.pending} bytes after the last newline wait for theirs" if self.pending else ""
        )
        shape: Shape | None
        if self.stopped_by_limit:
            shape, why = None, "stopped by its limit before the end of the file"
        elif self.end is not None:
            shape, why = None, "a backfill rereads a past range; it proves no new shape"
        elif self.from_start:
            if self.connector.config.get("whole_history", False):
                shape, why = Shape.complete(), "the whole file, which holds the table's history"
            else:
                shape, why = None, "the file is not declared to hold the table's whole history"
        else:
            shape = Shape.changes(checkpoint="generation", tombstones=self.has_op)
            why = "the lines after the held position"
        return Proof(
            shape,
            self.produced_at,
            CLOCK,
            None if self.from_start else self.start.token(),
            self.at.token(),
            why + waiting,
        )

    # Reading ----------------------------------------------------------------------------------

    def _verify(self, handle: Any, size: int) -> None:
        """Refuse a file that is not the one the position was taken in."""
        path = self.connector.path
        for offset in (self.start, self.end):
            if offset is None or offset.byte == 0:
                continue
            if size < offset.byte:
                raise RefusedRead(
                    "file_shrank",
                    f"{path} holds {size} bytes, fewer than the position's {offset.byte}: "
                    "it was truncated or replaced; deliver it again from the start",
                )
            length, _ = offset.first
            handle.seek(0)
            first_ok = fingerprint(handle.read(length)) == offset.first
            length, _ = offset.last
            handle.seek(offset.byte - length)
            last = handle.read(length)
            if not first_ok or fingerprint(last) != offset.last or not last.endswith(b"\n"):
                raise RefusedRead(
                    "file_rewritten",
                    f"{path}: the lines at the position (line {offset.line}, byte {offset.byte}) "
                    "are not those it was taken at: the file was rewritten; deliver it again "
                    "from the start",
                )
        handle.seek(self.start.byte)

    def _block(self, handle: Any, stop: int) -> bytes | None:
        """The next whole lines up to stop, at most the rows the limit leaves; None when only a
        line without its newline is left."""
        data = b""
        end = -1
        while end < 0:
            remaining = stop - self.at.byte - len(data)
            if remaining <= 0:
                return None
            chunk = handle.read(min(self.connector.batch_bytes, remaining))
            if not chunk:
                raise RefusedRead(
                    "file_shrank",
                    f"{self.connector.path} ended at byte {self.at.byte + len(data)} while it "
                    f"was read, before the {stop} bytes it held when the read began",
                )
            found = chunk.rfind(b"\n")
            end = found if found < 0 else len(data) + found
            data += chunk
        keep = data[: end + 1]
        if self.limit is not None:
            left = self.limit - self.rows
            if keep.count(b"\n") > left:
                cut = -1
                for _ in range(left):
                    cut = keep.index(b"\n", cut + 1)
                keep = keep[: cut + 1]
        handle.seek(self.at.byte + len(keep))
        return keep

    def _more_lines(self, handle: Any, stop: int) -> bool:
        """Whether a whole line is left before stop: a limit that ends at the last line stopped
        nothing."""
        handle.seek(self.at.byte)
        left = stop - self.at.byte
        while left > 0:
            chunk = handle.read(min(1 << 16, left))
            if not chunk:
                return False
            if b"\n" in chunk:
                return True
            left -= len(chunk)
        return False

    def _parse(self, block: bytes) -> pa.Table:
        lines = block.count(b"\n")
        try:
            table = pa_json.read_json(
                io.BytesIO(block),
                read_options=pa_json.ReadOptions(block_size=len(block) + 1),
                parse_options=pa_json.ParseOptions(
                    explicit_schema=self.file_schema, unexpected_field_behavior="error"
                ),
            )
        except pa.ArrowInvalid as exc:
            raise self._misfit(block, exc) from None
        if table.num_rows != lines:
            blank = next(i for i, line in enumerate(block.split(b"\n")) if not line.strip())
            raise RefusedRead(
                "blank_line",
                f"{self.connector.path}: line {self.at.line + blank + 1} is blank; a JSON Lines "
                "file holds one record a line",
            )
        for name in self.stream.key:
            missing = table.column(name).null_count
            if missing:
                row = pc.index(pc.is_null(table.column(name)), True).as_py()
                raise RefusedRead(
                    "record_missing_key",
                    f"{self.connector.path}: line {self.at.line + row + 1} has no {name}, a key "
                    f"column ({missing} such lines in this batch)",
                )
        columns = [table.column(name) for name in self.names]
        if self.has_op:
            op = table.column(self.connector.op_column)
            bad = pc.invert(pc.fill_null(pc.is_in(op, pa.array(OPS)), False))
            if pc.any(bad).as_py():
                row = pc.index(bad, True).as_py()
                raise RefusedRead(
                    "op_value",
                    f"{self.connector.path}: line {self.at.line + row + 1}: "
                    f"{self.connector.op_column} is {op[row].as_py()!r}, not c, u or d",
                )
            columns.append(pc.equal(op, "d"))
        return pa.Table.from_arrays(columns, schema=self.schema).combine_chunks()

    def _misfit(self, block: bytes, exc: Exception) -> RefusedRead:
        """The first line that does not fit the columns, found line by line (on refusal only)."""
        types = {field.name: field.type for field in self.file_schema}
        for number, line in enumerate(block.splitlines(), start=self.at.line + 1):
            try:
                record = json.loads(line)
            except ValueError as error:
                return RefusedRead(
                    "malformed_json", f"{self.connector.path}: line {number}: {error}"
                )
            if not isinstance(record, dict):
                return RefusedRead(
                    "record_does_not_fit",
                    f"{self.connector.path}: line {number} is {type(record).__name__}, "
                    "not an object",
                )
            extra = sorted(set(record) - set(types))
            if extra:
                return RefusedRead(
                    "record_does_not_fit",
                    f"{self.connector.path}: line {number} has {', '.join(extra)}, which the "
                    f"declared columns do not (they are {', '.join(types)})",
                )
            try:
                pa_json.read_json(
                    io.BytesIO(line + b"\n"),
                    parse_options=pa_json.ParseOptions(explicit_schema=self.file_schema),
                )
            except pa.ArrowInvalid as error:
                return RefusedRead(
                    "record_does_not_fit",
                    f"{self.connector.path}: line {number}: {str(error).split(' in row')[0]}",
                )
        return RefusedRead("record_does_not_fit", f"{self.connector.path}: {exc}")
