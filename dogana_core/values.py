"""Scalar domains: the values keys, windows, cursors and checkpoints take.

Six logical types exist (int, float, str, bool, date, datetime). Keys and window bounds use the
four ordered ones (int, str, date, datetime). Every domain here is discrete, so every value has a
successor: the next integer, s + "\\x00" for a string (code-point order, no normalisation), the
next day, the next microsecond. That lets every interval be written one way only: a closed low
end and an open high end, which is the canonical form regions use (see vectors/README.md).

Datetimes are always aware and normalised to UTC before they are compared or subtracted, so two
spellings of one instant (a DST fold included) are one value. A naive datetime is refused.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from enum import StrEnum
from typing import TypeAlias

from dogana_core.errors import InvalidContract


class LogicalType(StrEnum):
    INT = "int"
    FLOAT = "float"
    STR = "str"
    BOOL = "bool"
    DATE = "date"
    DATETIME = "datetime"


ORDERED_TYPES = frozenset(
    {LogicalType.INT, LogicalType.STR, LogicalType.DATE, LogicalType.DATETIME}
)
CURSOR_TYPES = frozenset({LogicalType.INT, LogicalType.DATETIME})

Scalar: TypeAlias = int | str | date | datetime
"""An ordered scalar: a key value, a window bound, a region endpoint. datetime is always UTC."""

Position: TypeAlias = int | str
"""A table's position: an int for sequence tables, an opaque nonempty string for generations."""

DATETIME_MIN = datetime.min.replace(tzinfo=UTC)
DATETIME_MAX = datetime.max.replace(tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)
DAY = timedelta(days=1)


def utc(value: datetime, what: str = "datetime") -> datetime:
    """The same instant in UTC; a naive datetime is refused (Trust model 4)."""
    if not isinstance(value, datetime):
        raise InvalidContract(f"{what}: expected a datetime, got {type(value).__name__}")
    if value.tzinfo is UTC:
        return value  # already the instant in UTC: every decoded and stored date is
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidContract(f"{what}: naive datetime {value.isoformat()} carries no UTC offset")
    try:
        return value.astimezone(UTC)
    except OverflowError as exc:
        raise InvalidContract(f"{what}: {value.isoformat()} is outside the UTC range") from exc


def exact_integer(value: int, what: str) -> int:
    """An integer binary64 holds exactly, so an identity never depends on a rounding.

    Versioned JSON 5: integers must be exact binary64, never rounded; a larger key travels as a
    string. Integers within 2**53 always are; larger ones only when float(value) is value.
    """
    if -(2**53) <= value <= 2**53:
        return value
    try:
        exact = int(float(value)) == value
    except OverflowError:
        exact = False
    if not exact:
        raise InvalidContract(
            f"{what}: a {value.bit_length()}-bit integer is not exact in binary64, so it could "
            "have no identity; send it as a string"
        )
    return value


def is_lone_surrogate_free(text: str) -> bool:
    # A search in C: every string read from the wire passes here, a stored ledger's thousands too.
    return _LONE_SURROGATE.search(text) is None


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def check_text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise InvalidContract(f"{what}: expected a string, got {type(value).__name__}")
    if not is_lone_surrogate_free(value):
        raise InvalidContract(f"{what}: string holds a lone surrogate")
    return value


def type_of(value: object) -> LogicalType:
    """The logical type a Python value spells; bool is not an int, datetime is not a date."""
    if isinstance(value, bool):
        return LogicalType.BOOL
    if isinstance(value, int):
        return LogicalType.INT
    if isinstance(value, float):
        return LogicalType.FLOAT
    if isinstance(value, str):
        return LogicalType.STR
    if isinstance(value, datetime):
        return LogicalType.DATETIME
    if isinstance(value, date):
        return LogicalType.DATE
    raise InvalidContract(f"{type(value).__name__} is not one of the six logical types")


def check_scalar(value: object, expected: LogicalType, what: str) -> Scalar:
    """A key, window or cursor value of the declared type, datetimes normalised to UTC."""
    try:
        actual = type_of(value)
    except InvalidContract as exc:
        raise InvalidContract(f"{what}: {exc}") from None
    if actual is not expected:
        raise InvalidContract(f"{what}: expected {expected}, got {actual} {value!r}")
    if isinstance(value, datetime):
        return utc(value, what)
    if isinstance(value, str):
        return check_text(value, what)
    assert isinstance(value, int | date)
    return value


def successor(value: Scalar) -> Scalar | None:
    """The least value greater than value, or None at the end of a finite domain."""
    if isinstance(value, bool):
        raise InvalidContract("bool is not an ordered domain")
    if isinstance(value, int):
        return value + 1
    if isinstance(value, str):
        return value + "\x00"
    if isinstance(value, datetime):
        return None if value == DATETIME_MAX else value + MICROSECOND
    return None if value == date.max else value + DAY


def is_domain_minimum(value: Scalar) -> bool:
    """True for the smallest value of a domain that has one: "", date.min, datetime.min UTC."""
    if isinstance(value, str):
        return value == ""
    if isinstance(value, datetime):
        return value == DATETIME_MIN
    if isinstance(value, date):
        return value == date.min
    return False
