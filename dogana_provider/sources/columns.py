"""Rows from a DB-API cursor as Arrow record batches of one fixed schema.

A Parquet file has one schema, fixed before its first row group, while rows stream in. So each
column's logical type is settled from the first batch, in this order:

1. the contract types the column (key, window, cursor, deleted): that type;
2. the DAG author names it (column_types): that type;
3. the driver describes it (Dialect.described_type: psycopg's type OIDs, MySQLdb's field
   types), decimals with their precision and scale where the driver gives them;
4. otherwise (SQLite describes nothing) the first non-null value of the first batch; a column
   null throughout the first batch needs column_types.

Every later batch is converted to that schema, and a value that does not fit fails the read,
naming the column: rows are never silently turned into another type. Datetimes are written as
timestamp[us, UTC]: an aware value is converted to UTC, a naive one (MariaDB's DATETIME,
PostgreSQL's timestamp, SQLite text without an offset) is read as UTC, since the sessions run in
UTC. Booleans stored as 0/1 (SQLite, MariaDB's BOOLEAN) become bool where the type is bool.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from functools import partial
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from dogana_provider.delivery.files import CANONICAL
from dogana_provider.dialects import Dialect

DECIMAL_PREFIX = "decimal("


class UnsupportedColumn(ValueError):
    """A column whose values dogana cannot write, or that do not fit its type."""


def arrow_type(logical: str) -> pa.DataType:
    if logical.startswith(DECIMAL_PREFIX):
        precision, scale = (int(x) for x in logical[len(DECIMAL_PREFIX) : -1].split(","))
        return (
            pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)
        )
    try:
        return CANONICAL[logical]
    except KeyError:
        raise UnsupportedColumn(
            f"{logical!r} is not int, float, str, bool, date, datetime or decimal(p,s)"
        ) from None


# What values say -------------------------------------------------------------------------------


def value_type(value: Any) -> str:
    """The logical type of a Python value from a driver."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str | uuid.UUID):
        return "str"
    if isinstance(value, datetime):
        return "datetime"
    if isinstance(value, date):
        return "date"
    if isinstance(value, Decimal):
        scale = max(0, -int(value.as_tuple().exponent))
        return f"decimal(38,{scale})"
    raise UnsupportedColumn(
        f"values of Python type {type(value).__name__} have no dogana type (int, float, str, "
        "bool, date, datetime, decimal); cast the column in the query"
    )


# Converting values ------------------------------------------------------------------------------


def _datetime(value: Any) -> datetime:
    if isinstance(value, bytes):  # undecoded text (mysql.py)
        value = value.decode("utf-8")
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if not isinstance(value, datetime):
        raise TypeError(value)
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def _date(value: Any) -> date:
    if isinstance(value, bytes):  # undecoded text (mysql.py)
        value = value.decode("utf-8")
    if isinstance(value, str):
        return date.fromisoformat(value)
    if isinstance(value, datetime) or not isinstance(value, date):
        raise TypeError(value)
    return value


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise TypeError(value)


def _int(value: Any) -> int:
    if isinstance(value, bool):
        raise TypeError(value)
    if isinstance(value, int):
        return value
    if isinstance(value, Decimal) and value == value.to_integral_value():
        return int(value)
    raise TypeError(value)


def _float(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise TypeError(value)
    return float(value)


def _str(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8")
    raise TypeError(value)


def _decimal(value: Any, scale: int | None = None) -> Decimal:
    if isinstance(value, bytes):  # undecoded text (mysql.py)
        value = value.decode("utf-8")
    if isinstance(value, bool):
        raise TypeError(value)
    if isinstance(value, Decimal):
        return value
    if isinstance(value, int | str):
        try:
            return Decimal(value)
        except InvalidOperation:  # text that is no number: refused naming it, as any misfit
            raise ValueError(value) from None
    if isinstance(value, float):
        # SQLite's NUMERIC affinity stores 1.25 as a REAL: its shortest repr is what was written,
        # as Arrow reads a batch of them (_number_decimals). Arithmetic leaves REALs such as
        # 4095.28 + 1 = 4096.280000000001, whose repr has more decimals than the column: such a
        # double is read to the 15 significant digits it always carries (DBL_DIG), as SQLite
        # spells a REAL as text, so that sum is 4096.28, while 1.255 keeps its third decimal
        # and is refused by a decimal(12,2).
        written = Decimal(repr(value))
        if scale is None or not written.is_finite() or -int(written.as_tuple().exponent) <= scale:
            return written
        return Decimal(format(value, ".15g"))
    raise TypeError(value)


CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "int": _int,
    "float": _float,
    "str": _str,
    "bool": _bool,
    "date": _date,
    "datetime": _datetime,
}


class Columns:
    """The file's schema and the conversion of each batch of rows into it.

    names are the source's column names; renames maps a source name to the file's (the
    soft-delete flag to the contract's deleted column).
    """

    def __init__(
        self,
        dialect: Dialect,
        description: Sequence[Sequence[Any]],
        first_rows: Sequence[Sequence[Any]],
        typed: Mapping[str, str],
        renames: Mapping[str, str],
        *,
        false_when_null: str | None = None,
    ) -> None:
        self.source_names = [str(column[0]) for column in description]
        self.names = [renames.get(name, name) for name in self.source_names]
        if len(set(self.names)) != len(self.names):
            raise UnsupportedColumn(f"the read has a column name twice: {self.names}")
        self.logical: list[str] = []
        for index, (name, column) in enumerate(zip(self.names, description, strict=True)):
            logical = typed.get(name) or dialect.described_type(column)
            if logical is None:
                sample = next((row[index] for row in first_rows if row[index] is not None), None)
                if sample is None and first_rows:
                    raise UnsupportedColumn(
                        f"column {name}: no type is known and the first rows hold no value to "
                        "tell it; name its type in column_types"
                    )
                # An empty read has no value to tell a type by, and no value to misrepresent.
                logical = "str" if sample is None else value_type(sample)
            self.logical.append(logical)
        # The deleted column: a null flag is a live row, and the file refuses null there.
        self.false_when_null = false_when_null
        self.schema = pa.schema(
            [(name, arrow_type(kind)) for name, kind in zip(self.names, self.logical, strict=True)]
        )

    def batch(self, rows: Sequence[Sequence[Any]]) -> pa.RecordBatch:
        columns = list(zip(*rows, strict=True)) if rows else [() for _ in self.names]
        arrays = [
            self._array(name, kind, field.type, values)
            for name, kind, field, values in zip(
                self.names, self.logical, self.schema, columns, strict=True
            )
        ]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def arrow_column(self, index: int, array: pa.Array) -> pa.Array:
        """A column a driver returned as Arrow (ADBC's SQLite reader, bulk.py), converted exactly
        as batch() converts the same values as Python objects.

        The array must hold exactly the values the DB-API driver would return (the caller makes
        sure of it): then batch() would find one Python type in them, the one of the array's
        type, and so take the same path here, in Arrow where batch() does, value by value where
        it does.
        """
        name, kind, arrow = self.names[index], self.logical[index], self.schema[index].type
        base = "decimal" if kind.startswith(DECIMAL_PREFIX) else kind
        python = _PYTHON_TYPES.get(array.type)
        converted: pa.Array | None = None
        if array.null_count == len(array):
            converted = pa.nulls(len(array), arrow)
        elif python in _ARROW_TAKES[base]:
            with suppress(pa.ArrowInvalid):
                converted = array.cast(arrow)
        elif python is not None and (parse := _ARROW_PARSES.get((base, frozenset({python})))):
            converted = parse(array, arrow)
        if converted is None:
            return self._array(name, kind, arrow, array.to_pylist())
        if name == self.false_when_null and converted.null_count:
            converted = pc.fill_null(converted, False)
        return converted

    def _array(self, name: str, kind: str, arrow: pa.DataType, values: Sequence[Any]) -> pa.Array:
        if name == self.false_when_null:
            values = [False if value is None else value for value in values]
        base = "decimal" if kind.startswith(DECIMAL_PREFIX) else kind
        found = set(map(type, values))
        found.discard(type(None))
        if found <= set(_ARROW_TAKES[base]):
            # The driver already returned this type's Python values: Arrow converts them in C.
            # (An aware datetime is converted to UTC; a naive one is read as UTC.)
            try:
                return pa.array(values, type=arrow)
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
                raise UnsupportedColumn(f"column {name}: {exc}") from None
        parse = _ARROW_PARSES.get((base, frozenset(found)))
        if parse is not None:
            parsed = parse(values, arrow)
            if parsed is not None:
                return parsed
        convert = CONVERTERS.get(kind) or partial(_decimal, scale=getattr(arrow, "scale", None))
        converted: list[Any] = []
        for value in values:
            if value is None:
                converted.append(None)
                continue
            try:
                converted.append(convert(value))
            except (TypeError, ValueError):
                raise UnsupportedColumn(
                    f"column {name}: {value!r} is not a {kind} value; cast it in the query "
                    "or name the column's type in column_types"
                ) from None
        try:
            return pa.array(converted, type=arrow)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
            raise UnsupportedColumn(
                f"column {name}: {_misfit(kind, arrow, converted) or exc}"
            ) from None


def _misfit(kind: str, arrow: pa.DataType, values: Sequence[Any]) -> str | None:
    """Which decimal does not fit the column's type, spelled by its value alone: a driver may
    hand one number over as an int (10000000000) or as a float (1e10), and Arrow's own message
    names the precision each spelling has, so the one number would be refused in two ways."""
    if not pa.types.is_decimal(arrow):
        return None
    for value in values:
        if value is None:
            continue
        try:
            pa.array([value], type=arrow)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            return f"{value.normalize():f} does not fit {kind}"
    return None


# The Python types Arrow converts to each logical type exactly as the converters above would;
# anything else (text dates from SQLite, 0/1 booleans, Decimal floats) goes value by value.
_ARROW_TAKES: dict[str, tuple[type, ...]] = {
    "int": (int,),
    "float": (float,),
    "str": (str,),
    "bool": (bool,),
    "date": (date,),
    "datetime": (datetime,),
    "decimal": (Decimal,),
}


# Values of one other Python type that Arrow parses in C exactly as the converters above would:
# text datetimes and dates (SQLite), 0/1 integers as bool, REAL decimals by their shortest
# repr. Each returns None where Arrow refuses a value, and the converters then go value by value,
# so a value that does not fit fails naming it exactly as they do.


# The Python type of each Arrow type a driver returns, as its DB-API cursor would return it.
_PYTHON_TYPES: dict[pa.DataType, type] = {
    pa.int64(): int,
    pa.float64(): float,
    pa.string(): str,
    pa.large_string(): str,
}


def _text(values: Sequence[Any] | pa.Array) -> pa.Array:
    """str values, or the bytes a driver left undecoded (MySQLdb, as mysql.py asks), as text."""
    if isinstance(values, pa.Array):
        return values.cast(pa.string())
    if isinstance(_first(values), bytes):
        return pa.array(values, pa.binary()).cast(pa.string())
    return pa.array(values, pa.string())


def _first(values: Sequence[Any]) -> Any:
    """The first value that is not null, or None."""
    return next((value for value in values if value is not None), None)


def _text_datetimes(values: Sequence[Any] | pa.Array, arrow: pa.DataType) -> pa.Array | None:
    try:
        text = _text(values)
    except pa.ArrowInvalid:  # bytes that are not UTF-8
        return None
    # Arrow refuses an offset when casting to a naive timestamp, and its absence when casting
    # to a zoned one, so at most one of the two casts succeeds and the order changes no value;
    # but a refused cast costs 30 times a successful one. Bytes are MariaDB's DATETIME and
    # TIMESTAMP text (mysql.py), which never carries an offset: naive first there.
    undecoded = not isinstance(values, pa.Array) and isinstance(_first(values), bytes)
    for zoned in (False, True) if undecoded else (True, False):
        with suppress(pa.ArrowInvalid):
            if zoned:
                return text.cast(arrow)  # every value carries its offset
            return text.cast(pa.timestamp("us")).cast(arrow)  # none does: read as UTC
    return None


def _text_dates(values: Sequence[Any] | pa.Array, arrow: pa.DataType) -> pa.Array | None:
    with suppress(pa.ArrowInvalid):
        return _text(values).cast(arrow)
    return None


def _text_decimals(values: Sequence[Any] | pa.Array, arrow: pa.DataType) -> pa.Array | None:
    with suppress(pa.ArrowInvalid):
        return _text(values).cast(arrow)
    return None


def _int_bools(values: Sequence[Any] | pa.Array, arrow: pa.DataType) -> pa.Array | None:
    ints = values if isinstance(values, pa.Array) else pa.array(values, pa.int64())
    bounds = pc.min_max(ints).as_py()
    if bounds["min"] is not None and (bounds["min"] < 0 or bounds["max"] > 1):
        return None
    return ints.cast(arrow)


def _number_decimals(values: Sequence[Any] | pa.Array, arrow: pa.DataType) -> pa.Array | None:
    # SQLite's NUMERIC affinity stores 1.25 as a REAL and 5.00 as the INTEGER 5. Arrow prints a
    # float's shortest round-trip digits, as repr does (1e-07 spelled 1e-7); an integer is exact
    # as a float below 2**53, checked first.
    with suppress(pa.ArrowInvalid, OverflowError):
        floats = (
            values.cast(pa.float64())
            if isinstance(values, pa.Array)
            else pa.array(values, pa.float64())
        )
        largest = pc.max(pc.abs(floats)).as_py()
        if largest is None or largest < 2**53:
            scaled = _scaled_decimals(floats, arrow)
            if scaled is not None:
                return scaled
            with suppress(pa.ArrowInvalid):
                return floats.cast(pa.string()).cast(arrow)
            return _spliced_decimals(floats, arrow)
    return None


_EXACT_DIGITS = 15
"""Up to this many digits, decimals of one scale are each the nearest float of no other."""


def _scaled_decimals(floats: pa.Array, arrow: pa.DataType) -> pa.Array | None:
    """The decimals _number_decimals gives, without printing a float; None where this cannot
    prove them, and the floats are then printed.

    Each float times 10**scale, rounded, is an integer u; when u / 10**scale (one IEEE
    division of two exact doubles, so correctly rounded) gives the float back, the decimal
    u / 10**scale has the float as its nearest. Within 15 digits no other decimal of that
    scale has the same nearest float, and the float's shortest round-trip digits (what
    printing it gives) spell a decimal whose nearest it is, with no more fractional digits
    than the scale (else they would not be the shortest): so they spell u / 10**scale.
    """
    precision, scale = arrow.precision, arrow.scale
    if precision > _EXACT_DIGITS or floats.null_count == len(floats):
        return None
    power = float(10**scale)
    units = pc.round(pc.multiply(floats, power))
    if not pc.all(pc.equal(pc.divide(units, power), floats)).as_py():
        return None
    return _decimals_of_units(units, arrow)


def _spliced_decimals(floats: pa.Array, arrow: pa.DataType) -> pa.Array | None:
    """The decimals the value-by-value path gives (_decimal at the column's scale) for floats
    of which some print more decimals than the column has (arithmetic's 4095.28 + 1): the
    floats _scaled_decimals proves converted as it converts them (what _decimal gives them
    too), only the others one by one; None where one of those does not fit the column, which
    the value-by-value path then refuses, naming it."""
    precision, scale = arrow.precision, arrow.scale
    if precision > _EXACT_DIGITS:
        return None
    power = float(10**scale)
    units = pc.round(pc.multiply(floats, power))
    unproven = pc.fill_null(pc.not_equal(pc.divide(units, power), floats), False)
    exact = []
    for value in floats.filter(unproven).to_pylist():
        decimal = _decimal(value, scale)
        if not decimal.is_finite() or -int(decimal.as_tuple().exponent) > scale:
            return None
        exact.append(float(decimal.scaleb(scale)))  # an integer below 10**15: exact
    spliced = pc.replace_with_mask(units, unproven, pa.array(exact, pa.float64()))
    return _decimals_of_units(spliced, arrow)


def _decimals_of_units(units: pa.Array, arrow: pa.DataType) -> pa.Array | None:
    """Integral floats u as the decimals u / 10**scale; None where one exceeds the precision."""
    largest = pc.max(pc.abs(units)).as_py()
    if largest is not None and largest >= 10**arrow.precision:
        return None
    # A decimal holds its unscaled integer: u as a decimal of scale 0, read at the scale.
    unscaled = units.cast(pa.int64()).cast(pa.decimal128(19, 0))  # what int64 needs
    return pa.Array.from_buffers(
        arrow, len(unscaled), unscaled.buffers(), unscaled.null_count, unscaled.offset
    )


def cast_text(values: Sequence[str | None], arrow: pa.DataType) -> pa.Array | None:
    """Text values cast to an Arrow type in C, as the snapshot path parses them: datetimes
    (with their offset, or none read as UTC), dates, decimals, integers and floats; None where
    Arrow refuses a value, and the caller then goes value by value to name it."""
    if pa.types.is_timestamp(arrow):
        return _text_datetimes(values, arrow)
    if pa.types.is_date(arrow):
        return _text_dates(values, arrow)
    if pa.types.is_decimal(arrow):
        return _text_decimals(values, arrow)
    with suppress(pa.ArrowInvalid):
        return pa.array(values, pa.string()).cast(arrow)
    return None


Parse = Callable[[Any, pa.DataType], "pa.Array | None"]
_ARROW_PARSES: dict[tuple[str, frozenset[type]], Parse] = {
    ("datetime", frozenset({str})): _text_datetimes,
    ("date", frozenset({str})): _text_dates,
    ("bool", frozenset({int})): _int_bools,
    ("decimal", frozenset({float})): _number_decimals,
    ("decimal", frozenset({int, float})): _number_decimals,
    ("datetime", frozenset({bytes})): _text_datetimes,
    ("date", frozenset({bytes})): _text_dates,
    ("decimal", frozenset({bytes})): _text_decimals,
}
