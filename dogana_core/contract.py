"""Contract: the source's guarantees for one table, and the column hash.

A contract declares the table, its key (empty for keyless tables), named shapes, the optional
window, cursor and deleted columns, the logical types of exactly those columns, an optional
schema_hash naming the data contract's columns, and start_at for keyless appends.

Identifiers (table and column names) are checked here once, so the receiver can quote them in
SQL without checking again: a letter or underscore, then letters, digits or underscores, at most
63 characters (PostgreSQL's limit, the tightest of the three databases).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import KW_ONLY, dataclass
from datetime import datetime
from typing import Any

from dogana_core.errors import InvalidContract
from dogana_core.manifest import Manifest
from dogana_core.shape import Checkpoint, Shape
from dogana_core.values import CURSOR_TYPES, DAY, ORDERED_TYPES, LogicalType, check_text, utc
from dogana_core.wire import (
    Array,
    Choice,
    DateTimeTag,
    Nested,
    Object,
    Optional,
    Text,
    Wire,
    sorted_pairs,
    wire_field,
)

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}", re.ASCII)
SHAPE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}", re.ASCII)


def check_identifier(name: object, what: str) -> str:
    """A table or column name that is safe to quote in SQL on every supported database."""
    if not isinstance(name, str) or not IDENTIFIER.fullmatch(name):
        raise InvalidContract(
            f"{what}: {name!r} is not an identifier (a letter or _, then letters, digits or _; "
            "at most 63 characters)"
        )
    return name


@dataclass(frozen=True)
class Contract(Wire):
    """The delivery contract of one table. Contract(table, key, shapes, *, ...)."""

    table: str = wire_field(Text())
    key: tuple[str, ...] = wire_field(Array(Text()))
    shapes: tuple[tuple[str, Shape], ...] = wire_field(Object(Nested(lambda: Shape)))
    _: KW_ONLY
    window_column: str | None = wire_field(Optional(Text()), default=None)
    cursor_column: str | None = wire_field(Optional(Text()), default=None)
    deleted_column: str | None = wire_field(Optional(Text()), default=None)
    types: tuple[tuple[str, LogicalType], ...] = wire_field(Object(Choice(LogicalType)), default=())
    schema_hash: str | None = wire_field(Optional(Text(nonempty=True)), default=None)
    start_at: datetime | None = wire_field(Optional(DateTimeTag()), default=None)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        check_identifier(self.table, "Contract.table")
        key = tuple(self.key) if not isinstance(self.key, str) else (self.key,)
        for column in key:
            check_identifier(column, "Contract.key")
        if len(set(key)) != len(key):
            raise InvalidContract(f"Contract.key: {list(key)} names a column twice")
        set_(self, "key", key)
        shapes = _pairs(self.shapes, "Contract.shapes")
        if not shapes:
            raise InvalidContract("Contract.shapes: a contract declares at least one shape")
        for name, shape in shapes:
            if not SHAPE_NAME.fullmatch(name):
                raise InvalidContract(f"Contract.shapes: {name!r} is not a shape name")
            if not isinstance(shape, Shape):
                raise InvalidContract(f"Contract.shapes.{name}: expected a Shape")
        set_(self, "shapes", shapes)
        for name in ("window_column", "cursor_column", "deleted_column"):
            if getattr(self, name) is not None:
                check_identifier(getattr(self, name), f"Contract.{name}")
        types = tuple(
            (column, _logical(kind, column))
            for column, kind in _pairs(self.types, "Contract.types")
        )
        set_(self, "types", types)
        if self.start_at is not None:
            set_(self, "start_at", utc(self.start_at, "Contract.start_at"))
        if self.schema_hash is not None and not check_text(
            self.schema_hash, "Contract.schema_hash"
        ):
            raise InvalidContract("Contract.schema_hash: must be a nonempty string when present")
        self._check_columns()
        self._check_shapes()

    def _check_columns(self) -> None:
        shapes = [shape for _, shape in self.shapes]
        has_window_shape = any(shape.is_window for shape in shapes)
        if has_window_shape and self.window_column is None:
            raise InvalidContract(
                "Contract.window_column: a contract with a window shape names its window column"
            )
        if not has_window_shape and self.window_column is not None:
            raise InvalidContract("Contract.window_column: a window column needs a window shape")
        has_tombstones = any(shape.has_tombstones for shape in shapes)
        if has_tombstones and self.deleted_column is None:
            raise InvalidContract(
                "Contract.deleted_column: a tombstone shape needs a deleted column"
            )
        if not has_tombstones and self.deleted_column is not None:
            raise InvalidContract(
                "Contract.deleted_column: a deleted column needs a tombstone shape"
            )
        deleted = self.deleted_column
        if deleted is not None and deleted in (*self.key, self.window_column, self.cursor_column):
            raise InvalidContract(
                f"Contract.deleted_column: {deleted!r} must differ from the key, window and "
                "cursor columns"
            )
        bound = set(self.key) | {c for c in (self.window_column, self.cursor_column, deleted) if c}
        typed = dict(self.types)
        if set(typed) != bound:
            missing = sorted(bound - set(typed))
            extra = sorted(set(typed) - bound)
            raise InvalidContract(
                "Contract.types: types map exactly the key, window, cursor and deleted columns"
                + (f"; missing {missing}" if missing else "")
                + (f"; not bound {extra}" if extra else "")
            )
        for column in self.key:
            _require_type(typed[column], ORDERED_TYPES, f"key column {column!r}")
        if self.window_column is not None:
            _require_type(
                typed[self.window_column], ORDERED_TYPES, f"window column {self.window_column!r}"
            )
        if self.cursor_column is not None:
            _require_type(
                typed[self.cursor_column], CURSOR_TYPES, f"cursor column {self.cursor_column!r}"
            )
        if deleted is not None:
            _require_type(typed[deleted], {LogicalType.BOOL}, f"deleted column {deleted!r}")

    def _check_shapes(self) -> None:
        checkpoints = {shape.checkpoint for _, shape in self.shapes}
        if {Checkpoint.GENERATION, Checkpoint.SEQUENCE} <= checkpoints:
            raise InvalidContract(
                "Contract.shapes: a table uses one kind of position, generations or "
                "sequences, not both"
            )
        for name, shape in self.shapes:
            where = f"Contract.shapes.{name}"
            if not self.key:
                if shape.checkpoint in (Checkpoint.GENERATION, Checkpoint.SEQUENCE):
                    raise InvalidContract(
                        f"{where}: keyless tables append by timestamp; "
                        f"{shape.checkpoint}s need keys"
                    )
                if shape.has_tombstones:
                    raise InvalidContract(f"{where}: tombstones need keys")
                if shape.lookback:
                    raise InvalidContract(
                        f"{where}: a keyless append cannot look back, "
                        "a reread event would count twice"
                    )
                if not shape.is_complete and shape.is_window:
                    raise InvalidContract(
                        f"{where}: a keyless shape of changes is an append over the whole table"
                    )
            if shape.window_size is not None:
                window_type = self.window_type
                if window_type not in (LogicalType.DATE, LogicalType.DATETIME):
                    raise InvalidContract(
                        f"{where}.window_size: rolling durations need a date or datetime window"
                    )
                if window_type is LogicalType.DATE and shape.window_size % DAY:
                    raise InvalidContract(
                        f"{where}.window_size: a date window is a whole number of days"
                    )

    # Lookups -------------------------------------------------------------------------------------

    @property
    def keyed(self) -> bool:
        return bool(self.key)

    def shape(self, name: str) -> Shape:
        for shape_name, shape in self.shapes:
            if shape_name == name:
                return shape
        raise InvalidContract(f"Contract {self.table}: no shape named {name!r}")

    def type_of(self, column: str) -> LogicalType:
        for name, kind in self.types:
            if name == column:
                return kind
        raise InvalidContract(f"Contract {self.table}: column {column!r} has no declared type")

    @property
    def window_type(self) -> LogicalType | None:
        return None if self.window_column is None else self.type_of(self.window_column)

    @property
    def position_type(self) -> type[int] | type[str]:
        """The kind of position the table issues: int with sequence shapes, else str."""
        if any(shape.checkpoint is Checkpoint.SEQUENCE for _, shape in self.shapes):
            return int
        return str

    def fixed_fields(self) -> dict[str, Any]:
        """What may not change once the table has history (Contract evolution)."""
        typed = dict(self.types)
        return {
            "table": self.table,
            "key": self.key,
            "window_column": self.window_column,
            "deleted_column": self.deleted_column,
            "key types": tuple(typed[c] for c in self.key),
            "window type": self.window_type,
        }

    def manifest(self, shape: str, produced_at: datetime, **fields: Any) -> Manifest:
        """A manifest of this table and shape, carrying the contract's schema hash, checked."""
        fields.setdefault("schema_hash", self.schema_hash)
        manifest = Manifest(self.table, shape, produced_at, **fields)
        manifest.check(self)
        return manifest


def _pairs(value: Any, what: str) -> tuple[tuple[str, Any], ...]:
    if isinstance(value, Mapping | Iterable):
        try:
            return sorted_pairs(value)
        except (TypeError, ValueError):
            pass
    raise InvalidContract(f"{what}: expected a mapping of names")


def _logical(kind: object, column: str) -> LogicalType:
    if isinstance(kind, str) and kind in LogicalType.__members__.values():
        return LogicalType(kind)
    raise InvalidContract(
        f"Contract.types.{column}: {kind!r} is not one of int, float, str, bool, date, datetime"
    )


def _require_type(kind: LogicalType, allowed: Iterable[LogicalType], what: str) -> None:
    allowed = sorted(allowed)
    if kind not in allowed:
        raise InvalidContract(f"Contract.types: {what} is {kind}; allowed: {', '.join(allowed)}")


# The column hash --------------------------------------------------------------------------------

# One spelling per type, so one hash per column list: no leading zeros, no spaces.
_DECIMAL = re.compile(r"decimal\(([1-9][0-9]*),(0|[1-9][0-9]*)\)", re.ASCII)


def check_column_type(name: str) -> str:
    """One of the six logical type names, or decimal(p,s) for an exact decimal."""
    if name in LogicalType.__members__.values():
        return name
    match = _DECIMAL.fullmatch(name)
    if match and int(match[1]) >= 1 and int(match[2]) <= int(match[1]):
        return name
    raise InvalidContract(
        f"column type {name!r} is not int, float, str, bool, date, datetime or decimal(p,s)"
    )


def column_hash(
    columns: Mapping[str, str] | Iterable[tuple[str, str]], *, deleted_column: str | None = None
) -> str:
    """SHA-256 of the [name, type] pairs in declared order, the deleted column left out.

    json.dumps(pairs, ensure_ascii=True, separators=(",", ":")), ASCII-encoded, exactly as the
    protocol's recipe states; only the pairs are hashed.
    """
    items = columns.items() if isinstance(columns, Mapping) else columns
    pairs = [[name, check_column_type(kind)] for name, kind in items if name != deleted_column]
    names = [name for name, _ in pairs]
    if len(set(names)) != len(names):
        raise InvalidContract(f"column hash: a column is listed twice in {names}")
    text = json.dumps(pairs, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


_ODCS_TYPES = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "date": "date",
    "timestamp": "datetime",
    "datetime": "datetime",
}


def odcs_column_hash(schema_object: Mapping[str, Any], *, deleted_column: str | None = None) -> str:
    """The column hash of an ODCS (Open Data Contract Standard) schema object.

    One [name, type] pair per property in declared order. logicalType maps to dogana's names;
    a number with logicalTypeOptions precision and scale is decimal(p,s); a date whose
    physicalType names a timestamp is a datetime. Nested types (object, array) have no flat name
    and are refused: flatten them in the data contract first.
    """
    properties = schema_object.get("properties")
    if not isinstance(properties, list):
        raise InvalidContract("ODCS schema object: properties must be a list")
    pairs: list[tuple[str, str]] = []
    for index, prop in enumerate(properties):
        where = f"ODCS schema object: properties[{index}]"
        if not isinstance(prop, Mapping) or not isinstance(prop.get("name"), str):
            raise InvalidContract(f"{where}: a property has a name")
        pairs.append((prop["name"], odcs_type(prop, where)))
    return column_hash(pairs, deleted_column=deleted_column)


def odcs_type(prop: Mapping[str, Any], where: str) -> str:
    """dogana's type name of an ODCS property: its logicalType, a number with precision and
    scale a decimal(p,s), a date whose physicalType names a timestamp a datetime."""
    logical = str(prop.get("logicalType", "")).lower()
    if logical not in _ODCS_TYPES:
        raise InvalidContract(
            f"{where}.logicalType ({prop.get('name')}): {logical!r} has no dogana type; one of "
            f"{', '.join(sorted(_ODCS_TYPES))}"
        )
    kind = _ODCS_TYPES[logical]
    options = prop.get("logicalTypeOptions") or {}
    if logical == "number" and "precision" in options and "scale" in options:
        kind = f"decimal({int(options['precision'])},{int(options['scale'])})"
    physical = str(prop.get("physicalType", "")).lower()
    if logical == "date" and ("timestamp" in physical or "datetime" in physical):
        kind = "datetime"
    return kind
