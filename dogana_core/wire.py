"""Versioned JSON, wire format version 4: how every structured value travels and is identified.

Every wire value is a frozen dataclass that inherits Wire and declares each field with
wire_field(codec). The codec is the single statement of how that field reads and writes, so
to_dict, from_dict, the identity form and the JSON Schemas all follow from one declaration.

Three forms exist:
- the wire dict (to_dict): version 4, kind, every field present, defaults included;
- canonical JSON (to_json): the wire dict with sorted keys, compact separators, ASCII escapes;
- the identity form (identity_dict): version and fields at their defaults omitted, recursively;
  identity is SHA-256 of its RFC 8785 bytes, so optional fields added later at their defaults
  keep every identity.

Reading is strict and happens before any normalisation: a missing or unknown field, an unknown
or earlier version, another kind, a wrong type, a tag outside its grammar, a duration that would
round, a datetime that would lose digits, a naive datetime or a lone surrogate raises
SerializationError naming the path of the field.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import MISSING, Field, field, fields, replace
from datetime import UTC, date, datetime, timedelta, timezone
from enum import Enum
from fractions import Fraction
from functools import cached_property
from typing import Any, ClassVar, Generic, Self, TypeAlias, TypeVar

from dogana_core.errors import InvalidContract, SerializationError
from dogana_core.jcs import canonicalize
from dogana_core.values import MICROSECOND, is_lone_surrogate_free

WIRE_VERSION = 4

JSON: TypeAlias = Any
"""A plain JSON value: None, bool, int, float, str, list or dict with str keys."""

_EARLIER_VERSIONS = {
    1: "version 1 manifests (dogana 0.1) listed keys",
    2: "version 2 receipts (dogana 0.2 and 0.3) carried ledgers",
    3: "version 3 contracts (dogana 0.4 to 0.6) carried a shrink limit",
}

T = TypeVar("T")
E = TypeVar("E", bound=Enum)
W = TypeVar("W", bound="Wire")


class Codec(Generic[T]):
    """Reads and writes one field's value; decode raises SerializationError naming the path."""

    def encode(self, value: T, identity: bool) -> JSON:
        raise NotImplementedError

    def decode(self, data: JSON, path: str) -> T:
        raise NotImplementedError

    def schema(self, defs: dict[str, JSON]) -> JSON:
        """A JSON Schema fragment; nested kinds are added to defs."""
        raise NotImplementedError


def _type_name(data: JSON) -> str:
    if data is None:
        return "null"
    if isinstance(data, bool):
        return "boolean"
    if isinstance(data, int | float):
        return "number"
    if isinstance(data, str):
        return "string"
    if isinstance(data, list):
        return "array"
    if isinstance(data, dict):
        return "object"
    return type(data).__name__


def _show(data: JSON, limit: int = 80) -> str:
    """repr(data) cut to limit characters, for an error message.

    A value too deep (RecursionError) or an integer too long (ValueError) for repr is named by
    its type, so that reporting bad input never raises anything but the SerializationError.
    """
    try:
        text = repr(data)
    except (ValueError, RecursionError):
        return f"<{_type_name(data)} too large to show>"
    return text[:limit]


def _wrong(path: str, expected: str, data: JSON) -> SerializationError:
    return SerializationError(path, f"expected {expected}, got {_type_name(data)} {_show(data)}")


def read_integer(data: JSON, path: str) -> int:
    """An integer, or a number with a zero fraction, which is the integer it spells."""
    if isinstance(data, bool):
        raise _wrong(path, "an integer", data)
    if isinstance(data, int):
        return data
    if isinstance(data, float) and math.isfinite(data) and data == int(data):
        return int(data)
    raise _wrong(path, "an integer", data)


def read_text(data: JSON, path: str) -> str:
    if not isinstance(data, str):
        raise _wrong(path, "a string", data)
    if not is_lone_surrogate_free(data):
        raise SerializationError(path, "string holds a lone surrogate")
    return data


class Text(Codec[str]):
    def __init__(self, *, nonempty: bool = False) -> None:
        self.nonempty = nonempty

    def encode(self, value: str, identity: bool) -> JSON:
        return value

    def decode(self, data: JSON, path: str) -> str:
        text = read_text(data, path)
        if self.nonempty and not text:
            raise SerializationError(path, "must not be empty")
        return text

    def schema(self, defs: dict[str, JSON]) -> JSON:
        return {"type": "string", "minLength": 1} if self.nonempty else {"type": "string"}


class Integer(Codec[int]):
    def encode(self, value: int, identity: bool) -> JSON:
        return value

    def decode(self, data: JSON, path: str) -> int:
        return read_integer(data, path)

    def schema(self, defs: dict[str, JSON]) -> JSON:
        return {"type": "integer"}


class Number(Codec[int | float]):
    """A finite number; one with a zero fraction is kept as the integer it spells."""

    def encode(self, value: int | float, identity: bool) -> JSON:
        return normalize_number(value)

    def decode(self, data: JSON, path: str) -> int | float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise _wrong(path, "a number", data)
        if isinstance(data, float) and not math.isfinite(data):
            raise SerializationError(path, f"{data} is not a finite number")
        return normalize_number(data)

    def schema(self, defs: dict[str, JSON]) -> JSON:
        return {"type": "number"}


def normalize_number(value: int | float) -> int | float:
    """1.0 and 1 are one number on the wire and in every identity."""
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        return int(value)
    return value


class Boolean(Codec[bool]):
    def encode(self, value: bool, identity: bool) -> JSON:
        return value

    def decode(self, data: JSON, path: str) -> bool:
        if not isinstance(data, bool):
            raise _wrong(path, "true or false", data)
        return data

    def schema(self, defs: dict[str, JSON]) -> JSON:
        return {"type": "boolean"}


# Tags -------------------------------------------------------------------------------------------

_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})", re.ASCII)
_DATETIME = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"(?:\.([0-9]+))?(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))",
    re.ASCII,
)
DATE_PATTERN = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
DATETIME_PATTERN = (
    "^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}"
    "(\\.[0-9]{1,6})?([Zz]|[+-][0-9]{2}:[0-9]{2})$"
)


def _tag_body(data: JSON, tag: str, path: str) -> JSON:
    if not isinstance(data, dict) or set(data) != {tag}:
        raise _wrong(path, f'a {{"{tag}": ...}} tag', data)
    return data[tag]


def encode_date(value: date) -> JSON:
    return {"$date": value.isoformat()}


def decode_date(data: JSON, path: str) -> date:
    text = read_text(_tag_body(data, "$date", path), path)
    match = _DATE.fullmatch(text)
    if match is None:
        raise SerializationError(path, f"$date {text!r} is not YYYY-MM-DD")
    try:
        return date(*(int(part) for part in match.groups()))
    except ValueError as exc:
        raise SerializationError(path, f"$date {text!r}: {exc}") from None


def encode_datetime(value: datetime) -> JSON:
    """UTC, +00:00, no fraction when the microseconds are zero, else exactly six digits."""
    return {"$datetime": value.astimezone(UTC).isoformat()}


def decode_datetime(data: JSON, path: str) -> datetime:
    text = read_text(_tag_body(data, "$datetime", path), path)
    match = _DATETIME.fullmatch(text)
    if match is None:
        if re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9:.]+", text, re.ASCII):
            raise SerializationError(path, f"$datetime {text!r} carries no UTC offset (naive)")
        raise SerializationError(path, f"$datetime {text!r} is not RFC 3339")
    year, month, day, hour, minute, second, fraction, zulu, sign, off_h, off_m = match.groups()
    if fraction is not None and len(fraction) > 6:
        raise SerializationError(path, f"$datetime {text!r} has more than six fractional digits")
    micro = int((fraction or "").ljust(6, "0"))
    if zulu:
        offset = timedelta(0)
    else:
        if int(off_h) > 23 or int(off_m) > 59:
            raise SerializationError(path, f"$datetime {text!r} has an impossible offset")
        offset = timedelta(hours=int(off_h), minutes=int(off_m)) * (1 if sign == "+" else -1)
    try:
        local = datetime(
            int(year),
            int(month),
            int(day),
            int(hour),
            int(minute),
            int(second),
            micro,
            tzinfo=timezone(offset),
        )
    except ValueError as exc:
        raise SerializationError(path, f"$datetime {text!r}: {exc}") from None
    try:
        return local.astimezone(UTC)
    except OverflowError:
        raise SerializationError(path, f"$datetime {text!r} overflows in UTC") from None


def encode_duration(value: timedelta, path: str = "") -> JSON:
    micro = value // MICROSECOND
    if micro < 0:
        raise SerializationError(path, f"duration {value} is negative")
    if micro % 1_000_000 == 0:
        return {"$seconds": micro // 1_000_000}
    seconds = micro / 1_000_000
    if round(Fraction(seconds) * 1_000_000) != micro:
        raise SerializationError(path, f"duration {value} cannot be written without rounding")
    return {"$seconds": seconds}


def decode_duration(data: JSON, path: str) -> timedelta:
    seconds = _tag_body(data, "$seconds", path)
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise _wrong(path, "a number of seconds", seconds)
    if isinstance(seconds, float) and not math.isfinite(seconds):
        raise SerializationError(path, f"$seconds {_show(seconds)} is not finite")
    if seconds < 0:
        raise SerializationError(path, f"$seconds {_show(seconds)} is negative")
    if isinstance(seconds, int):
        micro = seconds * 1_000_000
    else:
        micro = round(Fraction(seconds) * 1_000_000)
        if micro / 1_000_000 != seconds:
            raise SerializationError(
                path, f"$seconds {seconds!r} is not a whole number of microseconds"
            )
    try:
        return timedelta(microseconds=micro)
    except OverflowError:
        raise SerializationError(path, f"$seconds {_show(seconds)} overflows a duration") from None


class DateTag(Codec[date]):
    def encode(self, value: date, identity: bool) -> JSON:
        return encode_date(value)

    def decode(self, data: JSON, path: str) -> date:
        return decode_date(data, path)

    def schema(self, defs: dict[str, JSON]) -> JSON:
        return _tag_schema("$date", {"type": "string", "pattern": DATE_PATTERN})


class DateTimeTag(Codec[datetime]):
    def encode(self, value: datetime, identity: bool) -> JSON:
        return encode_datetime(value)

    def decode(self, data: JSON, path: str) -> datetime:
        return decode_datetime(data, path)

    def schema(self, defs: dict[str, JSON]) -> JSON:
        return _tag_schema("$datetime", {"type": "string", "pattern": DATETIME_PATTERN})


class DurationTag(Codec[timedelta]):
    def encode(self, value: timedelta, identity: bool) -> JSON:
        return encode_duration(value)

    def decode(self, data: JSON, path: str) -> timedelta:
        return decode_duration(data, path)

    def schema(self, defs: dict[str, JSON]) -> JSON:
        return _tag_schema("$seconds", {"type": "number", "minimum": 0})


def _tag_schema(tag: str, body: JSON) -> JSON:
    return {
        "type": "object",
        "properties": {tag: body},
        "required": [tag],
        "additionalProperties": False,
    }


class Value(Codec[Any]):
    """A scalar whose type the contract fixes: int, str, {"$date"} or {"$datetime"}.

    Whether it is the right one of those is checked against the contract, after reading.
    """

    def encode(self, value: Any, identity: bool) -> JSON:
        if isinstance(value, datetime):
            return encode_datetime(value)
        if isinstance(value, date):
            return encode_date(value)
        return value

    def decode(self, data: JSON, path: str) -> Any:
        if isinstance(data, dict):
            if set(data) == {"$date"}:
                return decode_date(data, path)
            if set(data) == {"$datetime"}:
                return decode_datetime(data, path)
            raise _wrong(path, "an integer, a string, $date or $datetime", data)
        if isinstance(data, str):
            return read_text(data, path)
        return read_integer(data, path)

    def schema(self, defs: dict[str, JSON]) -> JSON:
        return {
            "anyOf": [
                {"type": "integer"},
                {"type": "string"},
                DateTag().schema(defs),
                DateTimeTag().schema(defs),
            ]
        }


class Position(Codec[int | str]):
    """A table's position: an integer (sequence tables) or an opaque nonempty string."""

    def encode(self, value: int | str, identity: bool) -> JSON:
        return value

    def decode(self, data: JSON, path: str) -> int | str:
        if isinstance(data, str):
            return Text(nonempty=True).decode(data, path)
        return read_integer(data, path)

    def schema(self, defs: dict[str, JSON]) -> JSON:
        return {"anyOf": [{"type": "integer"}, {"type": "string", "minLength": 1}]}


# Containers -------------------------------------------------------------------------------------


class Optional(Codec[T | None]):
    def __init__(self, inner: Codec[T]) -> None:
        self.inner = inner

    def encode(self, value: T | None, identity: bool) -> JSON:
        return None if value is None else self.inner.encode(value, identity)

    def decode(self, data: JSON, path: str) -> T | None:
        return None if data is None else self.inner.decode(data, path)

    def schema(self, defs: dict[str, JSON]) -> JSON:
        return {"anyOf": [{"type": "null"}, self.inner.schema(defs)]}


class Array(Codec[tuple[T, ...]]):
    """A tuple; with length set, exactly that many items (a window is a pair)."""

    def __init__(self, inner: Codec[T], *, length: int | None = None) -> None:
        self.inner = inner
        self.length = length

    def encode(self, value: tuple[T, ...], identity: bool) -> JSON:
        return [self.inner.encode(item, identity) for item in value]

    def decode(self, data: JSON, path: str) -> tuple[T, ...]:
        if not isinstance(data, list):
            raise _wrong(path, "an array", data)
        if self.length is not None and len(data) != self.length:
            raise SerializationError(path, f"expected {self.length} items, got {len(data)}")
        return tuple(self.inner.decode(item, f"{path}[{i}]") for i, item in enumerate(data))

    def schema(self, defs: dict[str, JSON]) -> JSON:
        out: dict[str, JSON] = {"type": "array", "items": self.inner.schema(defs)}
        if self.length is not None:
            out["minItems"] = out["maxItems"] = self.length
        return out


class Object(Codec[tuple[tuple[str, T], ...]]):
    """A mapping held as a tuple of (name, value) pairs sorted by name, so values stay hashable."""

    def __init__(self, inner: Codec[T]) -> None:
        self.inner = inner

    def encode(self, value: tuple[tuple[str, T], ...], identity: bool) -> JSON:
        return {name: self.inner.encode(item, identity) for name, item in value}

    def decode(self, data: JSON, path: str) -> tuple[tuple[str, T], ...]:
        if not isinstance(data, dict):
            raise _wrong(path, "an object", data)
        return tuple(
            sorted(
                (read_text(name, path), self.inner.decode(item, f"{path}.{name}"))
                for name, item in data.items()
            )
        )

    def schema(self, defs: dict[str, JSON]) -> JSON:
        return {"type": "object", "additionalProperties": self.inner.schema(defs)}


def sorted_pairs(value: Mapping[str, T] | Iterable[tuple[str, T]]) -> tuple[tuple[str, T], ...]:
    """The stored form of a mapping field, from a dict or from pairs."""
    items = value.items() if isinstance(value, Mapping) else value
    return tuple(sorted(items, key=lambda pair: pair[0]))


class Choice(Codec[E]):
    """An enum, as its string value."""

    def __init__(self, enum: type[E]) -> None:
        self.enum = enum

    def encode(self, value: E, identity: bool) -> JSON:
        return value.value

    def decode(self, data: JSON, path: str) -> E:
        text = read_text(data, path)
        try:
            return self.enum(text)
        except ValueError:
            allowed = ", ".join(str(member.value) for member in self.enum)
            raise SerializationError(path, f"{text!r} is not one of {allowed}") from None

    def schema(self, defs: dict[str, JSON]) -> JSON:
        return {"enum": [member.value for member in self.enum]}


class Nested(Codec[W]):
    """Another wire kind, carrying its own version and kind."""

    def __init__(self, kind: Callable[[], type[W]]) -> None:
        # A callable so that a kind can nest one defined later in its module.
        self._kind = kind

    @property
    def kind(self) -> type[W]:
        return self._kind()

    def encode(self, value: W, identity: bool) -> JSON:
        return value.identity_dict() if identity else value.to_dict()

    def decode(self, data: JSON, path: str) -> W:
        return self.kind.from_dict(data, path=path)

    def schema(self, defs: dict[str, JSON]) -> JSON:
        name = self.kind.__name__
        if name not in defs:
            defs[name] = {}
            defs[name] = self.kind.json_schema_body(defs)
        return {"$ref": f"#/$defs/{name}"}


def wire_field(codec: Codec[Any], **kwargs: Any) -> Any:
    """A dataclass field that travels through codec; default= or default_factory= as usual."""
    return field(metadata={"codec": codec}, **kwargs)


def _codec(spec: Field[Any]) -> Codec[Any]:
    codec = spec.metadata.get("codec")
    if codec is None:
        raise TypeError(f"field {spec.name} was not declared with wire_field")
    return codec  # type: ignore[no-any-return]


def _default(spec: Field[Any]) -> Any:
    if spec.default is not MISSING:
        return spec.default
    if spec.default_factory is not MISSING:
        return spec.default_factory()
    return MISSING


# The base class ---------------------------------------------------------------------------------


class Wire:
    """Base of the fourteen wire kinds. Subclasses are frozen dataclasses of wire_field()s."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    def to_dict(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {"version": WIRE_VERSION, "kind": type(self).__name__}
        for spec in fields(self):
            out[spec.name] = _codec(spec).encode(getattr(self, spec.name), False)
        return out

    def to_json(self) -> str:
        """Canonical JSON: sorted keys, compact separators, ASCII escapes."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)

    def identity_source(self) -> Self:
        """The value whose identity this one shares; a replayed receipt is its acceptance."""
        return self

    def identity_dict(self) -> dict[str, JSON]:
        source = self.identity_source()
        out: dict[str, JSON] = {"kind": type(self).__name__}
        for spec in fields(source):
            value = getattr(source, spec.name)
            default = _default(spec)
            if default is not MISSING and _same(value, default):
                continue
            out[spec.name] = _codec(spec).encode(value, True)
        return out

    def identity_json(self) -> str:
        return canonicalize(self.identity_dict()).decode("utf-8")

    @cached_property
    def identity(self) -> str:
        """Lowercase hex SHA-256 of the RFC 8785 bytes of the identity form."""
        return hashlib.sha256(canonicalize(self.identity_dict())).hexdigest()

    @classmethod
    def from_dict(cls, data: JSON, *, path: str | None = None) -> Self:
        path = path or cls.__name__
        if not isinstance(data, dict):
            raise _wrong(path, f"a {cls.__name__} object", data)
        for name in data:
            read_text(name, path)
        _check_envelope(cls.__name__, data, path)
        specs = fields(cls)
        expected = {spec.name for spec in specs} | {"version", "kind"}
        missing = sorted(expected - set(data))
        if missing:
            raise SerializationError(path, f"missing field(s) {', '.join(missing)}")
        unknown = sorted(set(data) - expected)
        if unknown:
            raise SerializationError(path, f"unknown field(s) {', '.join(unknown)}")
        values = {
            spec.name: _codec(spec).decode(data[spec.name], f"{path}.{spec.name}") for spec in specs
        }
        return cls(**values)

    @classmethod
    def from_json(cls, text: str | bytes) -> Self:
        return cls.from_dict(parse_json(text))

    @classmethod
    def json_schema_body(cls, defs: dict[str, JSON]) -> JSON:
        specs = fields(cls)
        properties: dict[str, JSON] = {
            "version": {"const": WIRE_VERSION},
            "kind": {"const": cls.__name__},
        }
        for spec in specs:
            properties[spec.name] = _codec(spec).schema(defs)
        return {
            "type": "object",
            "properties": properties,
            "required": ["version", "kind", *(spec.name for spec in specs)],
            "additionalProperties": False,
        }

    @classmethod
    def json_schema(cls) -> JSON:
        """A self-contained JSON Schema (2020-12) of this kind's wire dict."""
        defs: dict[str, JSON] = {}
        body = cls.json_schema_body(defs)
        defs.pop(cls.__name__, None)
        schema: dict[str, JSON] = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"https://dogana.invalid/schemas/v{WIRE_VERSION}/{cls.__name__}.json",
            "title": cls.__name__,
            **body,
        }
        if defs:
            schema["$defs"] = dict(sorted(defs.items()))
        return schema

    def replace(self, **changes: Any) -> Self:
        return replace(self, **changes)


def _same(value: Any, default: Any) -> bool:
    # 0 == False in Python; a bool field at its default must not hide an int field's 0, and
    # the other way round.
    return (type(value) is type(default) and value == default) or (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and isinstance(default, int | float)
        and not isinstance(default, bool)
        and value == default
    )


def _check_envelope(kind: str, data: dict[str, JSON], path: str) -> None:
    if "version" not in data:
        raise SerializationError(path, "missing field version")
    version = data["version"]
    try:
        number = read_integer(version, f"{path}.version")
    except SerializationError:
        raise SerializationError(f"{path}.version", f"unknown version {_show(version)}") from None
    if number in _EARLIER_VERSIONS:
        raise SerializationError(
            f"{path}.version",
            f"version {number} is refused: {_EARLIER_VERSIONS[number]}; "
            f"this is version {WIRE_VERSION}",
        )
    if number != WIRE_VERSION:
        raise SerializationError(f"{path}.version", f"unknown version {_show(number)}")
    if "kind" not in data:
        raise SerializationError(path, "missing field kind")
    if data["kind"] != kind:
        raise SerializationError(f"{path}.kind", f"expected kind {kind}, got {_show(data['kind'])}")


def parse_json(text: str | bytes) -> JSON:
    """json.loads, refusing what JSON forbids or would silently change: duplicate keys, NaN,
    Infinity, numbers that overflow binary64, invalid UTF-8."""

    def pairs(items: list[tuple[str, JSON]]) -> dict[str, JSON]:
        out: dict[str, JSON] = {}
        for key, value in items:
            if key in out:
                raise SerializationError("", f"duplicate key {key!r:.80}")
            out[key] = value
        return out

    def constant(name: str) -> JSON:
        raise SerializationError("", f"{name} is not JSON")

    def number(token: str) -> float:
        value = float(token)
        if not math.isfinite(value):
            raise SerializationError("", f"number {token:.40} overflows binary64")
        return value

    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        return json.loads(
            text, object_pairs_hook=pairs, parse_constant=constant, parse_float=number
        )
    except UnicodeDecodeError as exc:
        raise SerializationError("", f"not UTF-8: {exc}") from None
    except json.JSONDecodeError as exc:
        raise SerializationError("", f"not JSON: {exc}") from None
    except RecursionError:
        raise SerializationError("", "JSON nested too deeply") from None
    except ValueError as exc:  # int() of a huge literal beyond Python's digit limit
        if isinstance(exc, InvalidContract):
            raise
        raise SerializationError("", f"not JSON: {exc}") from None
