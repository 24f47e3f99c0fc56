"""PostgreSQL's binary COPY format, built from Arrow arrays a column at a time.

Staging loads a batch with COPY ... FROM STDIN (FORMAT binary): COPY costs no round trip per
row, as executemany does, and the server reads each value with its type's binary receive
function instead of parsing text, which costs it less than COPY's text format. The format is a
signature, then per row a 16-bit field count and, per field, a 32-bit byte length (-1 for
NULL) and the value's bytes, big-endian; then a 16-bit -1.

Every value is built by Arrow's kernels or by the standard library's array.byteswap, never one
Python object per value: a fixed-width column's values become big-endian bytes in one call, a
field's length prefix is joined to it by binary_join_element_wise, and the fields of a row are
joined the same way, so a batch ends up as one Arrow buffer handed to the driver as it is.

The binary forms (PostgreSQL's own, in src/backend/utils/adt): BIGINT and DOUBLE PRECISION 8
bytes; BOOLEAN 1 byte; DATE 32-bit days and TIMESTAMPTZ 64-bit microseconds, both since
2000-01-01 (UTC); TEXT its UTF-8 bytes; NUMERIC a header (digit count, weight, sign, display
scale, 16 bits each) and base-10000 digits, most significant first. A NUMERIC is written with as
many digits as its precision needs, leading and trailing zero digits included, which the server
strips, and its display scale is its column's scale: the value the text format would give.

Every logical type a delivered file can hold is written so (delivery/files.py): Parquet's decimals
have a scale from 0 to their precision, the only ones a NUMERIC's digits are laid out for here.
"""

from __future__ import annotations

import array
import contextlib
import io
import sys
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from dogana_provider.dialects import Dialect

SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + bytes(8)  # the signature, no flags, no header extension
TRAILER = b"\xff\xff"

_NULL = pa.scalar(b"\xff\xff\xff\xff", pa.binary())
_NOTHING = pa.scalar(b"", pa.binary())
_EPOCH_DAYS = 10_957  # 1970-01-01 to 2000-01-01
_EPOCH_MICROSECONDS = _EPOCH_DAYS * 86_400_000_000
_LITTLE = sys.byteorder == "little"
# The standard library's array type codes of each byte width.
_CODES = {1: "B", 2: "h", 4: "i", 8: "q"}  # 8: "q" holds a float64's bytes as well
_INT64_DIGITS = 18  # a decimal of up to 18 digits has its unscaled integer in an int64


class CopyBinary:
    """A staging table's bulk load through COPY FROM STDIN in the binary format.

    With psycopg 3, one COPY carries every batch: each is written as it is built, and the
    server stores one batch while this process reads and builds the next, where a COPY per
    batch would have each wait for the other. The COPY ends at close, where a value the server
    refused raises; abort ends it unfinished (COPY's own failure message: nothing of it stays).
    psycopg 2 sends a whole COPY per call, so it takes one per batch.
    """

    def __init__(
        self, connection: Any, dialect: Dialect, table: str, quoted: str, logical: Sequence[str]
    ) -> None:
        self.statement = f"COPY {dialect.quote(table)} ({quoted}) FROM STDIN (FORMAT binary)"
        self.logical = list(logical)
        self._streaming: Any = None  # psycopg 3's COPY context, open from the first batch
        self._copy: Any = None

    def load(
        self,
        cursor: Any,
        numbers: range,
        columns: Sequence[pa.Array],
        following: pa.RecordBatch | None = None,
    ) -> bool:
        """Load one batch; always True: COPY needs nothing the connection could refuse."""
        rows = tuples(numbers, columns, self.logical)
        if not hasattr(cursor, "copy"):
            _copy(cursor, self.statement, SIGNATURE, rows, TRAILER)
            return True
        if self._copy is None:
            self._streaming = cursor.copy(self.statement)
            self._copy = self._streaming.__enter__()
            self._copy.write(SIGNATURE)
        self._copy.write(memoryview(rows).cast("B"))
        return True

    def close(self) -> None:
        """End the COPY: every batch written is in, or the server's refusal raises."""
        if self._copy is not None:
            copy, streaming, self._copy, self._streaming = self._copy, self._streaming, None, None
            copy.write(TRAILER)
            streaming.__exit__(None, None, None)

    def abort(self) -> None:
        """End the COPY unfinished, after a failure: the server keeps none of its rows."""
        if self._copy is not None:
            streaming, self._copy, self._streaming = self._streaming, None, None
            failure = RuntimeError("staging stopped")
            with contextlib.suppress(Exception):
                streaming.__exit__(RuntimeError, failure, None)


def tuples(numbers: range, columns: Sequence[pa.Array], logical: Sequence[str]) -> pa.Buffer:
    """The rows of a batch in the binary format, without signature or trailer: the row number
    first, then each column in its logical type (canonical Arrow types, files.CANONICAL)."""
    row_numbers = _big_endian(array.array("q", numbers), len(numbers), 8, None)
    fields = [_prefixed(row_numbers, 8)]
    fields += [_field(column, kind) for column, kind in zip(columns, logical, strict=True)]
    count = pa.scalar(len(fields).to_bytes(2, "big"), pa.binary())
    rows = pc.binary_join_element_wise(count, *fields, _NOTHING)
    _, offsets, data = rows.buffers()
    if data is None:  # no row at all
        return pa.py_buffer(b"")
    bounds = pa.Array.from_buffers(pa.int32(), len(rows) + 1, [None, offsets], offset=rows.offset)
    start, stop = bounds[0].as_py(), bounds[-1].as_py()
    return data.slice(start, stop - start)  # type: ignore[no-any-return]


def _field(column: pa.Array, logical: str) -> pa.Array:
    """One column's fields: length prefix and value, or -1 for a null."""
    if logical in ("int", "float"):
        return _prefixed(_fixed(column, 8), 8)
    if logical == "bool":
        return _prefixed(_fixed(column.cast(pa.uint8()), 1), 1)
    if logical == "date":
        days = pc.subtract(column.cast(pa.int32()), pa.scalar(_EPOCH_DAYS, pa.int32()))
        return _prefixed(_fixed(days, 4), 4)
    if logical == "datetime":
        since = pc.subtract(column.cast(pa.int64()), pa.scalar(_EPOCH_MICROSECONDS, pa.int64()))
        return _prefixed(_fixed(since, 8), 8)
    if logical == "str":
        data = column.cast(pa.binary())
        lengths = _fixed(pc.binary_length(data), 4)
        return _nulls(pc.binary_join_element_wise(lengths, data, _NOTHING), column)
    return _numeric(column)


def _fixed(column: pa.Array, width: int) -> pa.Array:
    """A fixed-width column's values as big-endian binary values of width bytes, nulls kept."""
    validity, values = column.buffers()[0:2]
    raw = array.array(_CODES[width])
    raw.frombytes(memoryview(values)[: (column.offset + len(column)) * width])
    validity = validity if column.null_count else None
    return _big_endian(raw, len(column), width, validity, column.offset)


def _big_endian(
    raw: array.array, length: int, width: int, validity: pa.Buffer | None, offset: int = 0
) -> pa.Array:
    if _LITTLE and width > 1:
        raw.byteswap()
    buffers = [validity, pa.py_buffer(raw)]
    fixed = pa.Array.from_buffers(pa.binary(width), length, buffers, offset=offset)
    return fixed.cast(pa.binary())


def _prefixed(values: pa.Array, width: int) -> pa.Array:
    prefix = pa.scalar(width.to_bytes(4, "big"), pa.binary())
    return _nulls(pc.binary_join_element_wise(prefix, values, _NOTHING), values)


def _nulls(fields: pa.Array, column: pa.Array) -> pa.Array:
    return pc.fill_null(fields, _NULL) if column.null_count else fields


def _numeric(column: pa.Array) -> pa.Array:
    """decimal(p,s) values as NUMERIC: a header and a fixed count of base-10000 digits.

    The digits are those of the unscaled integer with zeros appended to a multiple of four
    fractional digits, so the decimal point falls between two base-10000 digits."""
    precision, scale = column.type.precision, column.type.scale
    pad = (4 - scale % 4) % 4
    fraction, whole = (scale + pad) // 4, (precision - scale + 3) // 4
    count = whole + fraction
    split = _int64_digits if precision <= _INT64_DIGITS else _text_digits
    negative, digits = split(column, pad, count)

    def header(sign: int) -> pa.Scalar:
        length = (8 + 2 * count).to_bytes(4, "big")
        parts = (count, whole - 1, sign, scale)
        return pa.scalar(length + b"".join(p.to_bytes(2, "big", signed=True) for p in parts))

    fields = [pc.if_else(negative, header(0x4000), header(0))]
    fields += [_fixed(digit, 2) for digit in digits]
    return _nulls(pc.binary_join_element_wise(*fields, _NOTHING), column)


def _int64_digits(column: pa.Array, pad: int, count: int) -> tuple[pa.Array, list[pa.Array]]:
    """The signs, and the base-10000 digits of |unscaled| * 10**pad computed in int64 (a
    precision up to 18 fits): the last digit holds the unscaled integer's last 4 - pad
    digits followed by pad zeros, every other digit four of them."""
    unscaled = _unscaled(column).cast(pa.int64())
    rest = pc.abs(unscaled.fill_null(0) if column.null_count else unscaled)
    digits = []
    for place in range(count):
        unit = pa.scalar(10 ** (4 - pad) if place == 0 else 10_000, pa.int64())
        above = pc.divide(rest, unit)  # integer division: both int64, neither negative
        digit = pc.subtract(rest, pc.multiply(above, unit))
        if place == 0 and pad:
            digit = pc.multiply(digit, pa.scalar(10**pad, pa.int64()))
        digits.append(digit.cast(pa.int16()))
        rest = above
    return pc.less(unscaled, pa.scalar(0, pa.int64())), digits[::-1]


def _text_digits(column: pa.Array, pad: int, count: int) -> tuple[pa.Array, list[pa.Array]]:
    """The signs and base-10000 digits read from the unscaled integer's text (any precision;
    at scale 0 Arrow writes every digit, never an exponent)."""
    text = pc.cast(_unscaled(column), pa.string())
    negative = pc.starts_with(text, "-")
    digits = pc.replace_substring(text.fill_null("0") if column.null_count else text, "-", "")
    if pad:
        digits = pc.binary_join_element_wise(digits, "0" * pad, "")
    digits = pc.utf8_lpad(digits, count * 4, "0")
    return negative, [
        pc.cast(pc.utf8_slice_codeunits(digits, 4 * place, 4 * place + 4), pa.int16())
        for place in range(count)
    ]


def _unscaled(column: pa.Array) -> pa.Array:
    """A decimal column's unscaled integers: its very values read at scale 0."""
    kind = pa.decimal256 if pa.types.is_decimal256(column.type) else pa.decimal128
    integers = kind(column.type.precision, 0)
    return pa.Array.from_buffers(integers, len(column), column.buffers(), offset=column.offset)


def _copy(cursor: Any, statement: str, *chunks: bytes | pa.Buffer) -> None:
    """One batch through COPY FROM STDIN: psycopg 3's copy(), or psycopg2's copy_expert.

    The chunks go to the driver as they are (Arrow buffers included), never joined first."""
    if hasattr(cursor, "copy"):
        with cursor.copy(statement) as copy:
            for chunk in chunks:
                copy.write(memoryview(chunk).cast("B"))
        return
    cursor.copy_expert(statement, _Chunks(chunks), size=1 << 20)


class _Chunks(io.RawIOBase):
    """The chunks as one file that copy_expert reads, copying each part once."""

    def __init__(self, chunks: Sequence[bytes | pa.Buffer]) -> None:
        super().__init__()
        self._chunks = [memoryview(chunk).cast("B") for chunk in chunks]

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while self._chunks and not len(self._chunks[0]):
            self._chunks.pop(0)
        if not self._chunks:
            return 0
        target = memoryview(buffer).cast("B")
        size = min(len(target), len(self._chunks[0]))
        target[:size] = self._chunks[0][:size]
        self._chunks[0] = self._chunks[0][size:]
        return size
