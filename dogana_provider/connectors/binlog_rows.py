"""The row images of a MariaDB rows event, decoded by a program compiled once per table map.

mysql-replication decodes a rows event's images one value at a time: a dict per image, and for
each column a chain of type tests, a read through its packet wrapper, and for decimals and
temporals arithmetic on strings. A log read spends most of its time there. Here the library
still reads the protocol (the event's header, the table map and its metadata, the bitmaps of
the columns present); what follows them in a rows event is the images, and those are decoded
from the body's bytes by a RowDecoder compiled from the table map once: for each column, its
struct code or a small reader chosen once, and for each NULL bitmap seen, a plan in which the
fixed-width columns between variable ones are one precompiled struct.Struct.

The values are the library's, exactly (the decoder and the library are compared on the same
events in the tests), so that what the connector converts to the stream's types is the same
either way: ints signed and unsigned (BIGINT UNSIGNED past 2**63 included), DECIMAL as an exact
Decimal, FLOAT and DOUBLE, CHAR, VARCHAR, TEXT and BLOB decoded in the column's character set
(UTF-8 where binlog_row_metadata does not log it; bytes where the set is binary), DATE,
DATETIME(n) and TIMESTAMP(n) in MariaDB 10.3's formats (naive, UTC for a TIMESTAMP), ENUM, and
JSON, which MariaDB logs as the LONGTEXT it is.

Anything else falls back to the library's own decoding, per table map and decided once: TIME,
YEAR, SET, BIT, spatial types, the temporal formats of tables made before MariaDB 10.3, and
any type the library knows and this module does not. An event whose images are not whole rows
(binlog_row_image other than FULL in the writing session) falls back too, per event.
"""

from __future__ import annotations

import codecs
import struct
from collections.abc import Callable
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

# The binlog's field types (the table map's) this module decodes.
TINY, SHORT, LONG, FLOAT, DOUBLE, LONGLONG, INT24 = 1, 2, 3, 4, 5, 8, 9
DATE, VARCHAR, TIMESTAMP2, DATETIME2 = 10, 15, 17, 18
NEWDECIMAL, ENUM, BLOB, STRING = 246, 247, 252, 254

_INTEGERS = {TINY: "b", SHORT: "h", LONG: "i", LONGLONG: "q"}
_FRACTION_BYTES = (0, 1, 1, 2, 2, 3, 3)
_DECIMAL_BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)  # bytes of a group of 0 to 9 digits
_EPOCH = datetime(1970, 1, 1)
_LENGTHS = {1: struct.Struct("<B"), 2: struct.Struct("<H"), 4: struct.Struct("<I")}
# Null bitmaps a table's rows show are few; a bound keeps a pathological table's plans small.
_MOST_PLANS = 4096

Image = tuple[Any, ...]
# A step of a plan (a variable-width column's reader is one): appends the values it reads at
# a place in the body, returns the place after them.
Step = Callable[[bytes, int, list[Any]], int]


class Unsupported(Exception):
    """A column this module does not decode: the table's images are the library's."""


class _Field:
    """How one column's value is read: a struct code and a conversion of what it unpacks, or,
    for a value of variable width, a reader."""

    __slots__ = ("code", "convert", "read")

    def __init__(
        self,
        code: str | None = None,
        convert: Callable[[Any], Any] | None = None,
        read: Step | None = None,
    ) -> None:
        self.code, self.convert, self.read = code, convert, read


# Columns --------------------------------------------------------------------------------------


def _field(column: Any) -> _Field:
    """A table map column's field, as the library would decode it; Unsupported otherwise."""
    kind = column.type
    if kind in _INTEGERS:
        code = _INTEGERS[kind]
        return _Field(code.upper() if column.unsigned else code)
    if kind == INT24:
        signed = not column.unsigned
        return _Field("3s", lambda b: int.from_bytes(b, "little", signed=signed))
    if kind == FLOAT:
        return _Field("f")
    if kind == DOUBLE:
        return _Field("d")
    if kind == NEWDECIMAL:
        return _decimal(column.precision, column.decimals)
    if kind == DATE:
        return _Field("3s", _date)
    if kind == DATETIME2:
        return _temporal(column.fsp, 5, _datetime2)
    if kind == TIMESTAMP2:
        return _temporal(column.fsp, 4, _timestamp2)
    if kind == ENUM:
        members = column.enum_values
        if column.size not in (1, 2):
            raise Unsupported(f"an ENUM of {column.size} bytes")
        # Without its members (none logged, none from the catalog) the library gives None.
        member = members.__getitem__ if members else _nothing
        return _Field("B" if column.size == 1 else "H", member)
    if kind in (VARCHAR, STRING):
        return _Field(read=_text(2 if column.max_length > 255 else 1, column))
    if kind == BLOB:
        return _Field(read=_text(column.length_size, column))
    raise Unsupported(f"field type {kind}")


def _nothing(_: Any) -> None:
    return None


def _text(length_size: int, column: Any) -> Step:
    """A length-prefixed string, decoded in the column's character set as the library does it:
    UTF-8 where the log names none, bytes where Python knows no such codec (binary); strictly,
    as the connector's reader asks the library to (it never ignores decode errors)."""
    from pymysqlreplication.row_event import RowsEvent  # type: ignore[import-untyped]

    encoding: str | None = "utf-8"
    if column.character_set_name is not None:
        encoding = RowsEvent.charset_to_encoding(column.character_set_name)
        try:
            codecs.lookup(encoding)
        except LookupError:
            encoding = None
    length = _LENGTHS.get(length_size)
    if length is None and length_size != 3:
        raise Unsupported(f"a string of {length_size} length bytes")

    def read(data: bytes, at: int, values: list[Any]) -> int:
        start = at + length_size
        if length is None:
            size = int.from_bytes(data[at:start], "little")
        else:
            (size,) = length.unpack_from(data, at)
        end = start + size
        raw = data[start:end]
        values.append(raw if encoding is None else raw.decode(encoding))
        return end

    return read


def _decimal(precision: int, scale: int) -> _Field:
    """DECIMAL(precision, scale): big-endian groups of nine digits (fewer, packed in fewer
    bytes, at each end), the sign in the first bit, a negative's bytes inverted; the library's
    Decimal, from the same digits."""
    integral = precision - scale
    whole_digits = [integral % 9] * bool(integral % 9) + [9] * (integral // 9)
    fraction_digits = [9] * (scale // 9) + [scale % 9] * bool(scale % 9)
    widths = [_DECIMAL_BYTES[d] for d in whole_digits + fraction_digits]
    size = sum(widths)
    sign_bit, all_bits = 1 << (8 * size - 1), (1 << (8 * size)) - 1
    # Each group as (bits to shift the number right, its mask, the weight of its digits in
    # the whole part or in the fraction): read from the number's value, not from its bytes.
    shifts, right = [], 8 * size
    for width in widths:
        right -= 8 * width
        shifts.append(right)

    def weighted(digits: list[int], first: int) -> list[tuple[int, int, int]]:
        return [
            (shifts[first + i], (1 << (8 * widths[first + i])) - 1, 10 ** sum(digits[i + 1 :]))
            for i in range(len(digits))
        ]

    whole_groups = weighted(whole_digits, 0)
    fraction_groups = weighted(fraction_digits, len(whole_digits))

    def convert(raw: bytes) -> Decimal:
        value = int.from_bytes(raw, "big") ^ sign_bit
        negative = value & sign_bit  # set now where it was clear: the number is negative
        if negative:
            value ^= all_bits
        whole = 0
        for shift, mask, weight in whole_groups:
            whole += (value >> shift & mask) * weight
        sign = "-" if negative else ""
        if not scale:
            return Decimal(f"{sign}{whole}")
        fraction = 0
        for shift, mask, weight in fraction_groups:
            fraction += (value >> shift & mask) * weight
        return Decimal(f"{sign}{whole}.{fraction:0{scale}d}")

    return _Field(f"{size}s", convert)


def _temporal(fsp: int, width: int, whole: Callable[[int, int], datetime | None]) -> _Field:
    """A DATETIME(fsp) or TIMESTAMP(fsp): its seconds in width bytes, then its fraction's
    digits in big-endian bytes (two digits a byte), as microseconds; all one big-endian int."""
    if not 0 <= fsp <= 6:
        raise Unsupported(f"{fsp} fraction digits")
    extra = _FRACTION_BYTES[fsp]
    bits, odd, scale = 8 * extra, fsp % 2, 10 ** (6 - fsp)
    mask = (1 << bits) - 1

    def convert(raw: bytes) -> datetime | None:
        packed = int.from_bytes(raw, "big")
        micro = packed & mask
        if odd:
            micro //= 10
        return whole(packed >> bits, micro * scale)

    return _Field(f"{width + extra}s", convert)


def _datetime2(packed: int, micro: int) -> datetime | None:
    """1 bit sign, 17 bits year * 13 + month, 5 day, 5 hour, 6 minute, 6 second; None for a
    date Python has no value for (a zero date)."""
    year_month = (packed >> 22) & 0x1FFFF
    try:
        return datetime(
            year_month // 13,
            year_month % 13,
            (packed >> 17) & 31,
            (packed >> 12) & 31,
            (packed >> 6) & 63,
            packed & 63,
            micro,
        )
    except ValueError:
        return None


def _timestamp2(packed: int, micro: int) -> datetime:
    """Seconds since the epoch, big-endian and signed: a naive UTC datetime, as the library
    gives it."""
    if packed & 0x80000000:
        packed -= 1 << 32
    return _EPOCH + timedelta(seconds=packed, microseconds=micro)


def _date(raw: bytes) -> date | None:
    """15 bits year, 4 month, 5 day, little-endian; None for a zero date or part."""
    packed = int.from_bytes(raw, "little")
    year, month, day = (packed >> 9) & 0x7FFF, (packed >> 5) & 15, packed & 31
    if not (year and month and day):
        return None
    return date(year, month, day)


# Plans ----------------------------------------------------------------------------------------


def _null(data: bytes, at: int, values: list[Any]) -> int:
    values.append(None)
    return at


def _fixed(layout: struct.Struct, converts: tuple[Callable[[Any], Any] | None, ...]) -> Step:
    """A run of fixed-width columns, unpacked in one call."""
    size = layout.size
    if not any(converts):

        def plain(data: bytes, at: int, values: list[Any]) -> int:
            values.extend(layout.unpack_from(data, at))
            return at + size

        return plain

    changed = [(index, c) for index, c in enumerate(converts) if c is not None]

    def converted(data: bytes, at: int, values: list[Any]) -> int:
        got = list(layout.unpack_from(data, at))
        for index, convert in changed:
            got[index] = convert(got[index])
        values.extend(got)
        return at + size

    return converted


class RowDecoder:
    """The images of one table map's rows events, from the body that follows the bitmaps."""

    def __init__(self, columns: list[Any]) -> None:
        self.fields = [_field(column) for column in columns]
        self.width = len(columns)
        self.null_bytes = (self.width + 7) // 8
        self.plans: dict[bytes, list[Step]] = {}

    def images(self, body: bytes) -> list[Image]:
        """Every image in the body in order: a write's or a delete's row each, an update's
        before image then its after image."""
        found: list[Image] = []
        at, end, nulls_size, plans = 0, len(body), self.null_bytes, self.plans
        while at < end:
            nulls = body[at : at + nulls_size]
            at += nulls_size
            plan = plans.get(nulls)
            if plan is None:
                plan = self._plan(nulls)
            values: list[Any] = []
            for step in plan:
                at = step(body, at, values)
            found.append(tuple(values))
        if at != end:
            raise ValueError(f"row images end at byte {at} of a body of {end}")
        return found

    def _plan(self, nulls: bytes) -> list[Step]:
        """The steps that read an image with this NULL bitmap: each run of non-null fixed-width
        columns one struct, each variable-width or null column a step of its own."""
        bits = int.from_bytes(nulls, "little")
        steps: list[Step] = []
        codes: list[str] = []
        converts: list[Callable[[Any], Any] | None] = []
        for index, field in enumerate(self.fields):
            if field.code is not None and not bits >> index & 1:
                codes.append(field.code)
                converts.append(field.convert)
                continue
            if codes:
                steps.append(_fixed(struct.Struct("<" + "".join(codes)), tuple(converts)))
                codes, converts = [], []
            if bits >> index & 1:
                steps.append(_null)
            else:
                assert field.read is not None
                steps.append(field.read)
        if codes:
            steps.append(_fixed(struct.Struct("<" + "".join(codes)), tuple(converts)))
        if len(self.plans) >= _MOST_PLANS:
            self.plans.clear()
        self.plans[nulls] = steps
        return steps


# Events ---------------------------------------------------------------------------------------


def library_images(event: Any) -> list[Image]:
    """A rows event's images as the library decodes them, in the order RowDecoder gives."""
    from pymysqlreplication.row_event import UpdateRowsEvent  # type: ignore[import-untyped]

    if isinstance(event, UpdateRowsEvent):
        return [
            tuple(row[side].values())
            for row in event.rows
            for side in ("before_values", "after_values")
        ]
    return [tuple(row["values"].values()) for row in event.rows]


def whole_rows(event: Any, width: int) -> bool:
    """Every column is in the event's images (binlog_row_image=FULL)."""
    every = (1 << width) - 1
    bitmaps = [event.columns_present_bitmap]
    if hasattr(event, "columns_present_bitmap2"):
        bitmaps.append(event.columns_present_bitmap2)
    return event.number_of_columns == width and all(
        int.from_bytes(bitmap, "little") == every for bitmap in bitmaps
    )


class RowImages:
    """Rows events' images, by a RowDecoder compiled once for each table map's columns where
    they are all decodable, by the library otherwise."""

    def __init__(self) -> None:
        # A table map's columns (the library's Table) and its decoder, by table id: a new map
        # of the same columns (each transaction logs one) keeps the decoder.
        self._compiled: dict[int, tuple[Any, tuple[Any, ...], RowDecoder | None]] = {}

    def of(self, event: Any) -> list[Image]:
        """The event's images: a write's or a delete's rows, an update's before and after."""
        decoder = self.decoder(event)
        if decoder is None or not whole_rows(event, decoder.width):
            return library_images(event)
        # The library has read the header and the bitmaps; the rest of the event is images.
        body = event.packet.read(event.event_size - event.packet.read_bytes)
        return decoder.images(body)

    def decoder(self, event: Any) -> RowDecoder | None:
        """The event's table map's decoder; None where a column is not decodable here."""
        table = event.table_map[event.table_id]
        cached = self._compiled.get(event.table_id)
        if cached is not None and cached[0] is table:
            return cached[2]
        signature = tuple(_signature(column) for column in table.columns)
        if cached is not None and cached[1] == signature:
            self._compiled[event.table_id] = (table, signature, cached[2])
            return cached[2]
        try:
            decoder: RowDecoder | None = RowDecoder(table.columns)
        except Unsupported:
            decoder = None
        self._compiled[event.table_id] = (table, signature, decoder)
        return decoder


def _signature(column: Any) -> tuple[Any, ...]:
    """What of a table map's column its decoding depends on."""
    return (
        column.type,
        column.unsigned,
        column.character_set_name,
        tuple(column.enum_values or ()),
        *(
            getattr(column, attribute, None)
            for attribute in ("max_length", "length_size", "precision", "decimals", "fsp", "size")
        ),
    )
