"""ODCS v3 (Open Data Contract Standard) to dogana Contracts: the documented mapping.

Each schema object of a data contract is one table; a document with several schema objects is
a group, read together in one snapshot. The table is the object's physicalName (or its name);
the key is its properties with primaryKey true, in primaryKeyPosition order (none: a keyless
table); the logical types of the key, cursor, deleted and window columns come from their
logicalType (string, integer, number, boolean, date, timestamp; a number with precision and
scale is a decimal; a date whose physicalType names a timestamp is a datetime); schema_hash is
odcs_column_hash of the object, so the receiver refuses a delivery whose columns differ.

What ODCS does not say, dogana reads from the schema object's customProperties:

    doganaShapes         {name: {"read": "complete" | "changes", ...}}: the keyword arguments of
                         Shape.complete or Shape.changes, durations (lookback, window_size) in
                         seconds. Required: a table without a shape cannot be delivered.
    doganaCursorColumn   the changes shapes' cursor column
    doganaDeletedColumn  the soft-delete flag a tombstone shape reads
    doganaWindowColumn   the window shapes' column
    doganaStartAt        a keyless append's start (ISO 8601 with an offset)

and, from the document's customProperties, how the pipeline runs (dogana_provider reads them):

    doganaSchedule       a cron expression, or null for no schedule
    doganaRequirement    {"fresh_as_of": ..., "max_age": seconds, "exact_at": ...}

Every error is an InvalidContract naming the field, as schema[0].properties[2].logicalType,
and the rule it breaks.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any

from dogana_core.contract import Contract, odcs_column_hash, odcs_type
from dogana_core.errors import InvalidContract
from dogana_core.shape import Shape

SHAPE_READS = {"complete": Shape.complete, "changes": Shape.changes}
DURATIONS = ("lookback", "window_size")
COLUMNS = {
    "doganaCursorColumn": "cursor_column",
    "doganaDeletedColumn": "deleted_column",
    "doganaWindowColumn": "window_column",
}


def custom_properties(item: Mapping[str, Any], where: str) -> dict[str, Any]:
    """An ODCS customProperties list, [{property, value}], as a mapping."""
    found: dict[str, Any] = {}
    for index, entry in enumerate(item.get("customProperties") or []):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("property"), str):
            raise InvalidContract(f"{where}customProperties[{index}]: names no property")
        found[entry["property"]] = entry.get("value")
    return found


def contracts_of_odcs(document: Mapping[str, Any]) -> list[Contract]:
    """One Contract per schema object of an ODCS v3 document."""
    objects = document.get("schema")
    if not isinstance(objects, list) or not objects:
        raise InvalidContract("schema: an ODCS data contract for dogana lists its tables here")
    return [_contract(item, f"schema[{index}]") for index, item in enumerate(objects)]


def odcs_columns(document: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """Each table's columns in declared order, with dogana's type names: what a source is read
    with, so the delivered file's columns hash to the contract's schema_hash."""
    found = {}
    for index, item in enumerate(document.get("schema") or []):
        where = f"schema[{index}]"
        found[_table(item)] = {
            prop["name"]: odcs_type(prop, f"{where}.properties[{number}]")
            for number, prop in enumerate(item.get("properties") or [])
        }
    return found


def _table(item: Mapping[str, Any]) -> Any:
    return item.get("physicalName") or item.get("name")


def _contract(item: Any, where: str) -> Contract:
    if not isinstance(item, Mapping):
        raise InvalidContract(f"{where}: a schema object is a mapping")
    table = _table(item)
    properties = item.get("properties")
    if not isinstance(properties, list):
        raise InvalidContract(f"{where}.properties: a table lists its columns")
    custom = custom_properties(item, f"{where}.")
    columns: dict[str, tuple[int, Mapping[str, Any]]] = {}
    for index, prop in enumerate(properties):
        if not isinstance(prop, Mapping) or not isinstance(prop.get("name"), str):
            raise InvalidContract(f"{where}.properties[{index}].name: a column has a name")
        columns[prop["name"]] = (index, prop)
    keyed = sorted(
        (prop.get("primaryKeyPosition") or 0, index, name)
        for name, (index, prop) in columns.items()
        if prop.get("primaryKey") is True
    )
    key = tuple(name for _, _, name in keyed)
    named = {
        field: custom.get(prop) for prop, field in COLUMNS.items() if custom.get(prop) is not None
    }
    types: dict[str, Any] = {}
    for column in (*key, *named.values()):
        if column not in columns:
            prop = next(p for p, f in COLUMNS.items() if named.get(f) == column)
            raise InvalidContract(
                f"{where}.customProperties.{prop}: {column!r} is not one of the table's properties"
            )
        index, prop = columns[column]
        types[column] = odcs_type(prop, f"{where}.properties[{index}]")
    start_at = custom.get("doganaStartAt")
    try:
        return Contract(
            table,
            key,
            tuple(_shapes(custom.get("doganaShapes"), f"{where}.customProperties.doganaShapes")),
            types=tuple(types.items()),
            schema_hash=odcs_column_hash(item, deleted_column=named.get("deleted_column")),
            start_at=None if start_at is None else _instant(start_at, f"{where}.doganaStartAt"),
            **named,
        )
    except InvalidContract as error:
        raise InvalidContract(f"{where}: {error}") from None


def _shapes(value: Any, where: str) -> Iterator[tuple[str, Shape]]:
    if not isinstance(value, Mapping) or not value:
        raise InvalidContract(f"{where}: a table declares at least one shape, {{name: {{read}}}}")
    for name, spec in value.items():
        at = f"{where}.{name}"
        if not isinstance(spec, Mapping) or spec.get("read") not in SHAPE_READS:
            raise InvalidContract(f"{at}.read: one of {', '.join(SHAPE_READS)}")
        options = {k: v for k, v in spec.items() if k != "read"}
        for duration in DURATIONS:
            if duration in options:
                seconds = options[duration]
                if not isinstance(seconds, int | float) or isinstance(seconds, bool):
                    raise InvalidContract(f"{at}.{duration}: a number of seconds")
                options[duration] = timedelta(seconds=seconds)
        try:
            yield str(name), SHAPE_READS[spec["read"]](**options)
        except TypeError as error:  # an option the read does not take
            raise InvalidContract(f"{at}: {error}") from None


def _instant(value: Any, where: str) -> datetime:
    if isinstance(value, datetime):
        return value
    try:
        return datetime.fromisoformat(str(value))
    except ValueError:
        raise InvalidContract(f"{where}: {value!r} is not an ISO 8601 instant") from None
