"""Versioned JSON: how every structured value travels, and how it is identified.

1. Structured values carry version: 4 and kind, the class name. Earlier versions are refused.
2. Field names match constructor arguments, and every field is present, defaults included.
   A number with a zero fraction is the integer it spells wherever an integer is expected.
   Missing or unknown fields, unknown versions or kinds, wrong types, overflowing tags and naive
   datetimes raise SerializationError.
3. The three tags and their exact grammars; strings reject lone surrogates.
4. Canonical JSON; identity is SHA-256 of RFC 8785 over the identity form.
6. Optional future fields at defaults keep identity; unknown versions are refused.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import dataclass, fields
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from wire_strategies import (
    contract_and_manifest,
    contracts,
    manifests,
    shapes,
    shifted,
    wire_values,
)

from dogana_core import (
    Contract,
    InvalidContract,
    Manifest,
    RejectedDelivery,
    SerializationError,
    Shape,
    Wire,
)
from dogana_core.gate import Check, Gate
from dogana_core.jcs import canonicalize
from dogana_core.ledger import Ledger
from dogana_core.shape import Coverage
from dogana_core.wire import (
    Array,
    Choice,
    DateTag,
    DateTimeTag,
    Nested,
    Number,
    Object,
    Optional,
    Text,
    Value,
    decode_duration,
    encode_datetime,
    encode_duration,
    parse_json,
    read_integer,
    read_text,
    wire_field,
)

T = datetime(2026, 10, 18, tzinfo=UTC)

SHAPE = Shape.changes(window=True, tombstones=True, cost=2.5, window_size=timedelta(days=30))
CONTRACT = Contract(
    "orders",
    ("order_id",),
    {"full": Shape.complete(), "recent": SHAPE},
    window_column="order_date",
    cursor_column="updated_at",
    deleted_column="is_deleted",
    types={"order_id": "int", "order_date": "date", "updated_at": "datetime", "is_deleted": "bool"},
    schema_hash="ab" * 32,
)
MANIFEST = CONTRACT.manifest(
    "recent",
    datetime(2026, 10, 18, 12, 0, 0, 250000, tzinfo=UTC),
    window=(date(2026, 9, 19), date(2026, 10, 18)),
    since=datetime(2026, 10, 17, tzinfo=UTC),
    rows=10,
    tombstones=2,
    content_hash="cd" * 32,
)
EXAMPLES: list[Wire] = [SHAPE, CONTRACT, MANIFEST]


def wire_of(value: Wire, **changes: Any) -> dict[str, Any]:
    data = value.to_dict()
    data.update(changes)
    return data


def read(kind: type[Wire], data: Any) -> Wire:
    return kind.from_dict(data)


# 1. Version and kind -----------------------------------------------------------------------------


@pytest.mark.parametrize("value", EXAMPLES, ids=lambda v: type(v).__name__)
def test_structured_values_carry_version_4_and_their_kind(value: Wire) -> None:
    data = value.to_dict()
    assert data["version"] == 4
    assert data["kind"] == type(value).__name__


@pytest.mark.parametrize(
    ("version", "reason"),
    [
        (1, "version 1 manifests \\(dogana 0.1\\) listed keys"),
        (2, "version 2 receipts \\(dogana 0.2 and 0.3\\) carried ledgers"),
        (3, "version 3 contracts \\(dogana 0.4 to 0.6\\) carried a shrink limit"),
    ],
)
def test_earlier_versions_are_refused_with_the_reason(version: int, reason: str) -> None:
    for value in EXAMPLES:
        with pytest.raises(SerializationError, match=reason):
            read(type(value), wire_of(value, version=version))


@pytest.mark.parametrize(
    ("version", "shown"),
    [
        (0, "0"),
        (5, "5"),
        (40, "40"),
        (-4, "-4"),
        ("4", "'4'"),
        (None, "None"),
        (4.5, "4.5"),
        (True, "True"),
        ([4], "[4]"),
        ({"v": 4}, "{'v': 4}"),
    ],
)
def test_unknown_versions_are_refused(version: Any, shown: str) -> None:
    with pytest.raises(SerializationError) as refused:
        read(Shape, wire_of(SHAPE, version=version))
    assert str(refused.value) == f"Shape.version: unknown version {shown}"


def test_a_version_with_a_zero_fraction_is_version_4() -> None:
    assert read(Shape, wire_of(SHAPE, version=4.0)) == SHAPE


def test_a_missing_version_or_kind_is_refused() -> None:
    for name in ("version", "kind"):
        data = SHAPE.to_dict()
        del data[name]
        with pytest.raises(SerializationError) as refused:
            read(Shape, data)
        assert str(refused.value) == f"Shape: missing field {name}"


@pytest.mark.parametrize("kind", ["Contract", "shape", "SHAPE", "Frobnicator", "", None, 4])
def test_another_or_unknown_kind_is_refused(kind: Any) -> None:
    with pytest.raises(SerializationError) as refused:
        read(Shape, wire_of(SHAPE, kind=kind))
    assert str(refused.value) == f"Shape.kind: expected kind Shape, got {kind!r}"


def test_nested_values_carry_their_own_version_and_kind() -> None:
    data = CONTRACT.to_dict()
    assert data["shapes"]["recent"]["version"] == 4
    assert data["shapes"]["recent"]["kind"] == "Shape"
    data["shapes"]["recent"]["version"] = 3
    with pytest.raises(SerializationError, match=r"Contract\.shapes\.recent\.version"):
        read(Contract, data)
    data["shapes"]["recent"].update(version=4, kind="Manifest")
    with pytest.raises(SerializationError, match="expected kind Shape"):
        read(Contract, data)


# 2. Fields ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", EXAMPLES, ids=lambda v: type(v).__name__)
def test_field_names_match_constructor_arguments_and_every_field_is_present(value: Wire) -> None:
    names = [spec.name for spec in fields(value)]  # type: ignore[arg-type]
    assert set(value.to_dict()) == {"version", "kind", *names}
    rebuilt = type(value)(**{name: getattr(value, name) for name in names})
    assert rebuilt == value


def test_fields_at_their_defaults_are_written() -> None:
    assert Shape().to_dict() == {
        "version": 4,
        "kind": "Shape",
        "coverage": "table",
        "deletions": "absence",
        "checkpoint": "none",
        "cost": 1,
        "window_size": None,
        "lookback": {"$seconds": 0},
    }


def test_tuples_are_arrays_enums_strings_and_mappings_objects() -> None:
    data = CONTRACT.to_dict()
    assert data["key"] == ["order_id"]
    assert data["types"] == {
        "is_deleted": "bool",
        "order_date": "date",
        "order_id": "int",
        "updated_at": "datetime",
    }
    assert data["shapes"]["recent"]["coverage"] == "window"
    assert MANIFEST.to_dict()["window"] == [{"$date": "2026-09-19"}, {"$date": "2026-10-18"}]


@pytest.mark.parametrize("value", EXAMPLES, ids=lambda v: type(v).__name__)
def test_a_missing_field_is_refused(value: Wire) -> None:
    for spec in fields(value):  # type: ignore[arg-type]
        data = value.to_dict()
        del data[spec.name]
        with pytest.raises(SerializationError) as refused:
            read(type(value), data)
        assert str(refused.value) == f"{type(value).__name__}: missing field(s) {spec.name}"


def test_missing_fields_are_named_together_in_order() -> None:
    data = SHAPE.to_dict()
    del data["lookback"], data["cost"]
    with pytest.raises(SerializationError) as refused:
        read(Shape, data)
    assert str(refused.value) == "Shape: missing field(s) cost, lookback"


def test_a_field_at_its_default_is_still_required() -> None:
    data = Manifest("orders", "full", T).to_dict()
    del data["rows"]
    with pytest.raises(SerializationError, match="rows"):
        Manifest.from_dict(data)


@pytest.mark.parametrize("value", EXAMPLES, ids=lambda v: type(v).__name__)
def test_an_unknown_field_is_refused(value: Wire) -> None:
    for extra in ("extra", "Version", "shrink_limit", "$date"):
        with pytest.raises(SerializationError) as refused:
            read(type(value), wire_of(value, **{extra: None}))
        assert str(refused.value) == f"{type(value).__name__}: unknown field(s) {extra}"


def test_unknown_fields_are_named_together_in_order() -> None:
    with pytest.raises(SerializationError) as refused:
        read(Shape, wire_of(SHAPE, priority=1, extra=None))
    assert str(refused.value) == "Shape: unknown field(s) extra, priority"


def test_an_unknown_field_in_a_nested_value_is_refused() -> None:
    data = CONTRACT.to_dict()
    data["shapes"]["full"]["priority"] = 1
    with pytest.raises(SerializationError, match=r"Contract\.shapes\.full: unknown field"):
        read(Contract, data)


def test_a_document_is_an_object_with_string_keys() -> None:
    for data, got in (
        (None, "null None"),
        ([], "array []"),
        ("Shape", "string 'Shape'"),
        (4, "number 4"),
    ):
        with pytest.raises(SerializationError) as refused:
            read(Shape, data)
        assert str(refused.value) == f"Shape: expected a Shape object, got {got}"
    with pytest.raises(SerializationError) as refused:
        read(Shape, [SHAPE.to_dict()])
    assert str(refused.value).startswith("Shape: expected a Shape object, got array [{")
    with pytest.raises(SerializationError) as refused:
        read(Shape, {**SHAPE.to_dict(), 1: "one"})
    assert str(refused.value) == "Shape: expected a string, got number 1"


@pytest.mark.parametrize(
    ("kind", "field", "value", "message"),
    [
        (Shape, "coverage", "partition", "Shape.coverage: 'partition' is not one of table, window"),
        (Shape, "coverage", 1, "Shape.coverage: expected a string, got number 1"),
        (Shape, "cost", "1", "Shape.cost: expected a number, got string '1'"),
        (Shape, "cost", True, "Shape.cost: expected a number, got boolean True"),
        (Shape, "cost", None, "Shape.cost: expected a number, got null None"),
        (
            Shape,
            "window_size",
            30,
            'Shape.window_size: expected a {"$seconds": ...} tag, got number 30',
        ),
        (
            Shape,
            "lookback",
            None,
            'Shape.lookback: expected a {"$seconds": ...} tag, got null None',
        ),
        (Contract, "table", 5, "Contract.table: expected a string, got number 5"),
        (Contract, "key", "order_id", "Contract.key: expected an array, got string 'order_id'"),
        (Contract, "key", [1], "Contract.key[0]: expected a string, got number 1"),
        (Contract, "shapes", [], "Contract.shapes: expected an object, got array []"),
        (
            Contract,
            "types",
            {"order_id": "bigint"},
            "Contract.types.order_id: 'bigint' is not one of int, float, str, bool, date, datetime",
        ),
        (
            Contract,
            "types",
            [["order_id", "int"]],
            "Contract.types: expected an object, got array [['order_id', 'int']]",
        ),
        (Contract, "schema_hash", "", "Contract.schema_hash: must not be empty"),
        (
            Contract,
            "start_at",
            "2026-10-18T00:00:00Z",
            'Contract.start_at: expected a {"$datetime": ...} tag, '
            "got string '2026-10-18T00:00:00Z'",
        ),
        (Manifest, "rows", "10", "Manifest.rows: expected an integer, got string '10'"),
        (Manifest, "rows", True, "Manifest.rows: expected an integer, got boolean True"),
        (Manifest, "rows", 10.5, "Manifest.rows: expected an integer, got number 10.5"),
        (Manifest, "rows", None, "Manifest.rows: expected an integer, got null None"),
        (Manifest, "shape", "", "Manifest.shape: must not be empty"),
        (Manifest, "window", [{"$date": "2026-09-19"}], "Manifest.window: expected 2 items, got 1"),
        (
            Manifest,
            "window",
            {"low": 1, "high": 2},
            "Manifest.window: expected an array, got object {'low': 1, 'high': 2}",
        ),
        (
            Manifest,
            "window",
            [None, None],
            "Manifest.window[0]: expected an integer, got null None",
        ),
        (Manifest, "since", 1.5, "Manifest.since: expected an integer, got number 1.5"),
        (Manifest, "since", False, "Manifest.since: expected an integer, got boolean False"),
        (
            Manifest,
            "since",
            {"$time": "12:00"},
            "Manifest.since: expected an integer, a string, $date or $datetime, "
            "got object {'$time': '12:00'}",
        ),
        (Manifest, "since", [1], "Manifest.since: expected an integer, got array [1]"),
        (
            Manifest,
            "since",
            {"$datetime": "2026-10-18T12:00:00"},
            "Manifest.since: $datetime '2026-10-18T12:00:00' carries no UTC offset (naive)",
        ),
        (Manifest, "since", "x\ud800", "Manifest.since: string holds a lone surrogate"),
        (Manifest, "generation", "", "Manifest.generation: must not be empty"),
        (Manifest, "generation", 1.5, "Manifest.generation: expected an integer, got number 1.5"),
        (
            Manifest,
            "produced_at",
            {"$date": "2026-10-18"},
            'Manifest.produced_at: expected a {"$datetime": ...} tag, '
            "got object {'$date': '2026-10-18'}",
        ),
        (Manifest, "content_hash", 5, "Manifest.content_hash: expected a string, got number 5"),
    ],
)
def test_wrong_types_raise_serialization_error(
    kind: type[Wire], field: str, value: Any, message: str
) -> None:
    example = next(e for e in EXAMPLES if isinstance(e, kind))
    with pytest.raises(SerializationError) as refused:
        read(kind, wire_of(example, **{field: value}))
    assert str(refused.value) == message


def test_rule_violations_in_well_formed_json_raise_invalid_contract() -> None:
    with pytest.raises(InvalidContract, match="rows"):
        read(Manifest, wire_of(MANIFEST, rows=-1))
    with pytest.raises(InvalidContract, match="none or tombstone"):
        read(Shape, wire_of(SHAPE, deletions="absence"))


@pytest.mark.parametrize("spelled", [10.0, 1e1, 10])
def test_a_number_with_a_zero_fraction_is_the_integer_it_spells(spelled: Any) -> None:
    read_back = read(Manifest, wire_of(MANIFEST, rows=spelled))
    assert isinstance(read_back, Manifest)
    assert read_back.rows == 10 and type(read_back.rows) is int
    assert read_back == MANIFEST


def test_negative_zero_is_the_integer_zero() -> None:
    read_back = read(Manifest, wire_of(MANIFEST, rows=-0.0, tombstones=-0.0))
    assert isinstance(read_back, Manifest)
    assert (read_back.rows, read_back.tombstones) == (0, 0)
    assert type(read_back.rows) is int
    assert json.loads(read_back.to_json())["rows"] == 0 and '"rows":0' in read_back.to_json()


def test_zero_fraction_bounds_and_positions_are_integers() -> None:
    log = Contract(
        "log",
        ("id",),
        {"tail": Shape.changes(checkpoint="sequence"), "part": Shape.complete(window=True)},
        window_column="id",
        types={"id": "int"},
    )
    tail = log.manifest("tail", T, since=40, generation=42)
    read_back = Manifest.from_dict(wire_of(tail, since=40.0, generation=42.0))
    assert read_back == tail and type(read_back.since) is int and type(read_back.generation) is int
    part = log.manifest("part", T, window=(1, 2))
    assert Manifest.from_dict(wire_of(part, window=[1.0, 2.0])) == part


def test_a_cost_with_a_zero_fraction_reads_and_writes_as_an_integer() -> None:
    read_back = read(Shape, wire_of(SHAPE, cost=3.0))
    assert isinstance(read_back, Shape)
    assert read_back.cost == 3 and type(read_back.cost) is int
    assert '"cost":3,' in read_back.to_json()
    assert read(Shape, wire_of(SHAPE, cost=2.5)) == SHAPE


def test_errors_name_the_path_of_the_field() -> None:
    data = MANIFEST.to_dict()
    data["window"][1] = {"$date": "2026-13-01"}
    with pytest.raises(SerializationError) as caught:
        Manifest.from_dict(data)
    assert caught.value.path == "Manifest.window[1]"


@pytest.mark.parametrize(
    ("data", "got"),
    [
        (None, "null None"),
        (True, "boolean True"),
        (1.5, "number 1.5"),
        ([1], "array [1]"),
        ({"a": 1}, "object {'a': 1}"),
        ((1,), "tuple (1,)"),
    ],
)
def test_a_wrong_type_is_named_by_its_json_type_and_shown(data: Any, got: str) -> None:
    with pytest.raises(SerializationError) as caught:
        read_text(data, "Shape.coverage")
    assert caught.value.message == f"expected a string, got {got}"


def test_a_wrong_string_is_named_string_and_shown() -> None:
    with pytest.raises(SerializationError) as caught:
        read_integer("ten", "Manifest.rows")
    assert caught.value.message == "expected an integer, got string 'ten'"


def test_a_wrong_value_is_shown_cut_to_80_characters() -> None:
    with pytest.raises(SerializationError) as caught:
        read_integer("x" * 200, "Manifest.rows")
    assert caught.value.message == "expected an integer, got string " + repr("x" * 200)[:80]


def test_a_wrong_value_too_large_to_show_is_named_by_its_type() -> None:
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(SerializationError) as caught:
        read_text(deep, "Shape.coverage")
    assert caught.value.message == "expected a string, got array <array too large to show>"
    with pytest.raises(SerializationError) as caught:
        read_text(10**5000, "Shape.coverage")
    assert caught.value.message == "expected a string, got number <number too large to show>"


def test_container_codecs_read_items_and_a_window_is_exactly_a_pair() -> None:
    # The kinds build their codecs once, at import; these are built here so that every
    # constructor is exercised by a test, not only by the import.
    pair = Array(Text(), length=2)
    assert pair.decode(["a", "b"], "w") == ("a", "b")
    with pytest.raises(SerializationError, match="expected 2 items, got 3"):
        pair.decode(["a", "b", "c"], "w")
    assert Array(Text()).decode(["a", "b", "c"], "k") == ("a", "b", "c")
    assert Object(Text()).decode({"b": "x", "a": "y"}, "t") == (("a", "y"), ("b", "x"))
    assert Choice(Coverage).decode("window", "c") is Coverage.WINDOW
    assert Nested(lambda: Shape).decode(SHAPE.to_dict(), "s") == SHAPE


# 3. Tags: dates ----------------------------------------------------------------------------------


def date_bound(text: Any) -> Any:
    data = MANIFEST.to_dict()
    data["window"][0] = {"$date": text} if not isinstance(text, dict) else text
    return Manifest.from_dict(data).window[0]  # type: ignore[index]


def test_dates_are_date_tags() -> None:
    assert date_bound("2026-10-18") == date(2026, 10, 18)
    assert date_bound("0001-01-01") == date.min
    assert date_bound("9999-12-31") == date.max
    assert Manifest.from_dict(MANIFEST.to_dict()) == MANIFEST


def test_the_date_codec_writes_and_reads_a_date_tag() -> None:
    assert DateTag().encode(date(2026, 9, 19), identity=False) == {"$date": "2026-09-19"}
    assert DateTag().decode({"$date": "2026-09-19"}, "w") == date(2026, 9, 19)
    with pytest.raises(SerializationError) as caught:
        DateTag().decode({"$date": "2026-13-01"}, "Manifest.window[0]")
    assert str(caught.value) == "Manifest.window[0]: $date '2026-13-01': month must be in 1..12"
    with pytest.raises(SerializationError) as caught:
        DateTag().decode({"date": "2026-09-19"}, "Manifest.window[0]")
    assert str(caught.value) == (
        "Manifest.window[0]: expected a {\"$date\": ...} tag, got object {'date': '2026-09-19'}"
    )


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("2026-1-8", " is not YYYY-MM-DD"),
        ("26-10-18", " is not YYYY-MM-DD"),
        ("20261018", " is not YYYY-MM-DD"),
        ("2026-10-18T00:00:00Z", " is not YYYY-MM-DD"),
        ("2026-10-18 ", " is not YYYY-MM-DD"),
        ("+2026-10-18", " is not YYYY-MM-DD"),
        ("2026-02-30", ": day is out of range for month"),
        ("2026-13-01", ": month must be in 1..12"),
        ("0000-01-01", ": year 0 is out of range"),
        ("\uff12026-10-18", " is not YYYY-MM-DD"),
        ("", " is not YYYY-MM-DD"),
    ],
)
def test_a_date_outside_its_grammar_is_refused(text: str, rule: str) -> None:
    with pytest.raises(SerializationError) as refused:
        date_bound(text)
    assert str(refused.value) == f"Manifest.window[0]: $date {text!r}{rule}"


def test_a_date_tag_body_is_a_string() -> None:
    for body, got in ((5, "number 5"), (None, "null None")):
        with pytest.raises(SerializationError) as refused:
            date_bound(body)
        assert str(refused.value) == f"Manifest.window[0]: expected a string, got {got}"


def test_a_tag_holds_exactly_its_one_key() -> None:
    for tag in (
        {"$date": "2026-10-18", "$datetime": "2026-10-18T00:00:00Z"},
        {"$date": "2026-10-18", "tz": "UTC"},
        {"date": "2026-10-18"},
        {},
    ):
        with pytest.raises(SerializationError):
            date_bound(tag)


# 3. Tags: datetimes ------------------------------------------------------------------------------


def produced_at(text: Any) -> datetime:
    return Manifest.from_dict(wire_of(MANIFEST, produced_at={"$datetime": text})).produced_at


@pytest.mark.parametrize(
    ("text", "instant"),
    [
        ("2026-10-18T12:00:00Z", datetime(2026, 10, 18, 12, tzinfo=UTC)),
        ("2026-10-18t12:00:00z", datetime(2026, 10, 18, 12, tzinfo=UTC)),
        ("2026-10-18T12:00:00+00:00", datetime(2026, 10, 18, 12, tzinfo=UTC)),
        ("2026-10-18T14:00:00+02:00", datetime(2026, 10, 18, 12, tzinfo=UTC)),
        ("2026-10-18T06:30:00-05:30", datetime(2026, 10, 18, 12, tzinfo=UTC)),
        ("2026-10-18T12:00:00.5Z", datetime(2026, 10, 18, 12, 0, 0, 500000, tzinfo=UTC)),
        ("2026-10-18T12:00:00.000001Z", datetime(2026, 10, 18, 12, 0, 0, 1, tzinfo=UTC)),
        ("2026-10-18T12:00:00.123456+00:00", datetime(2026, 10, 18, 12, 0, 0, 123456, tzinfo=UTC)),
        ("2026-10-18T12:00:00.000000Z", datetime(2026, 10, 18, 12, tzinfo=UTC)),
    ],
)
def test_datetimes_are_rfc3339_with_z_or_an_offset(text: str, instant: datetime) -> None:
    read_back = produced_at(text)
    assert read_back == instant and read_back.tzinfo is UTC
    decoded = DateTimeTag().decode({"$datetime": text}, "Manifest.produced_at")
    assert decoded == instant and decoded.tzinfo is UTC


def test_datetimes_are_emitted_in_utc_without_a_fraction_when_zero() -> None:
    made = Manifest(
        "orders", "full", datetime(2026, 10, 18, 14, 0, tzinfo=timezone(timedelta(hours=2)))
    )
    assert made.to_dict()["produced_at"] == {"$datetime": "2026-10-18T12:00:00+00:00"}
    assert made.identity_dict()["produced_at"] == {"$datetime": "2026-10-18T12:00:00+00:00"}


def test_the_datetime_tag_writes_any_aware_datetime_in_utc() -> None:
    local = datetime(2026, 10, 18, 14, 0, 0, 5, tzinfo=timezone(timedelta(hours=2)))
    assert encode_datetime(local) == {"$datetime": "2026-10-18T12:00:00.000005+00:00"}


def test_datetimes_are_read_and_written_in_utc_whatever_the_machines_time_zone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    local = datetime(2026, 10, 18, 14, 0, tzinfo=timezone(timedelta(hours=2)))
    monkeypatch.setenv("TZ", "IST-5:30")  # a POSIX zone, needing no zone database
    time.tzset()
    try:
        assert encode_datetime(local) == {"$datetime": "2026-10-18T12:00:00+00:00"}
        read_back = DateTimeTag().decode({"$datetime": "2026-10-18T14:00:00+02:00"}, "t")
        assert read_back.isoformat() == "2026-10-18T12:00:00+00:00"
    finally:
        monkeypatch.undo()
        time.tzset()


def test_datetimes_are_emitted_with_six_fractional_digits_otherwise() -> None:
    for micro, text in (
        (500000, "12:00:00.500000"),
        (1, "12:00:00.000001"),
        (999999, "12:00:00.999999"),
    ):
        made = Manifest("orders", "full", datetime(2026, 10, 18, 12, 0, 0, micro, tzinfo=UTC))
        assert made.to_dict()["produced_at"] == {"$datetime": f"2026-10-18T{text}+00:00"}


def test_a_datetime_with_more_than_six_fractional_digits_is_refused_never_truncated() -> None:
    for text in (
        "2026-10-18T12:00:00.1234567Z",
        "2026-10-18T12:00:00.0000001Z",
        "2026-10-18T12:00:00.1000000Z",
    ):
        with pytest.raises(SerializationError) as refused:
            produced_at(text)
        assert str(refused.value) == (
            f"Manifest.produced_at: $datetime {text!r} has more than six fractional digits"
        )


def test_a_datetime_without_an_offset_is_naive_and_refused() -> None:
    for text in ("2026-10-18T12:00:00", "2026-10-18T12:00:00.5", "2026-10-18t12:00:00"):
        with pytest.raises(SerializationError) as refused:
            produced_at(text)
        assert str(refused.value) == (
            f"Manifest.produced_at: $datetime {text!r} carries no UTC offset (naive)"
        )


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("2026-10-18 12:00:00Z", " is not RFC 3339"),
        ("2026-10-18T12:00Z", " is not RFC 3339"),
        ("2026-10-18T12:00:00+0200", " is not RFC 3339"),
        ("2026-10-18T12:00:00+02", " is not RFC 3339"),
        ("2026-10-18T12:00:00.Z", " is not RFC 3339"),
        ("2026-10-18T24:00:00Z", ": hour must be in 0..23"),
        ("2026-10-18T12:60:00Z", ": minute must be in 0..59"),
        ("2026-10-18T23:59:60Z", ": second must be in 0..59"),
        ("2026-10-18T12:00:00+24:00", " has an impossible offset"),
        ("2026-10-18T12:00:00+02:60", " has an impossible offset"),
        ("2026-02-30T12:00:00Z", ": day is out of range for month"),
        ("2026-10-18", " is not RFC 3339"),
        ("2026-10-18T12:00:00UTC", " is not RFC 3339"),
        ("2026-10-18T12:00:00Z ", " is not RFC 3339"),
        ("\uff12026-10-18T12:00:00Z", " is not RFC 3339"),
        ("", " is not RFC 3339"),
    ],
)
def test_a_datetime_outside_its_grammar_is_refused(text: str, rule: str) -> None:
    with pytest.raises(SerializationError) as refused:
        produced_at(text)
    assert str(refused.value) == f"Manifest.produced_at: $datetime {text!r}{rule}"


def test_an_offset_is_at_most_23_hours_59_minutes_either_way() -> None:
    assert produced_at("2026-10-18T12:00:00+23:59") == datetime(2026, 10, 17, 12, 1, tzinfo=UTC)
    assert produced_at("2026-10-18T12:00:00-23:59") == datetime(2026, 10, 19, 11, 59, tzinfo=UTC)


def test_a_datetime_overflowing_the_domain_in_utc_is_refused() -> None:
    for text in ("0001-01-01T00:00:00+00:01", "9999-12-31T23:59:59-00:01"):
        with pytest.raises(SerializationError) as refused:
            produced_at(text)
        assert str(refused.value) == f"Manifest.produced_at: $datetime {text!r} overflows in UTC"
    assert produced_at("0001-01-01T00:01:00+00:01") == datetime(1, 1, 1, tzinfo=UTC)


def test_a_datetime_tag_body_is_a_string() -> None:
    for body, got in (
        (1760788800, "number 1760788800"),
        (None, "null None"),
        (["2026-10-18T12:00:00Z"], "array ['2026-10-18T12:00:00Z']"),
    ):
        with pytest.raises(SerializationError) as refused:
            produced_at(body)
        assert str(refused.value) == f"Manifest.produced_at: expected a string, got {got}"


# 3. Tags: durations ------------------------------------------------------------------------------


def test_durations_are_seconds_tags() -> None:
    assert encode_duration(timedelta(days=7)) == {"$seconds": 604800}
    assert decode_duration({"$seconds": 604800}, "d") == timedelta(days=7)


def test_integral_durations_are_written_as_integers() -> None:
    written = encode_duration(timedelta(days=30))["$seconds"]
    assert written == 2592000 and type(written) is int
    assert type(encode_duration(timedelta(0))["$seconds"]) is int


def test_fractional_durations_are_written_with_exact_microseconds() -> None:
    assert encode_duration(timedelta(seconds=1, microseconds=500000)) == {"$seconds": 1.5}
    assert encode_duration(timedelta(microseconds=1)) == {"$seconds": 1e-06}
    assert encode_duration(timedelta(seconds=0.1)) == {"$seconds": 0.1}
    assert decode_duration({"$seconds": 1.000001}, "d") == timedelta(seconds=1, microseconds=1)
    assert decode_duration({"$seconds": 30.0}, "d") == timedelta(seconds=30)


def test_a_negative_duration_is_refused() -> None:
    for seconds in (-1, -0.5, -1e-06):
        with pytest.raises(SerializationError) as refused:
            decode_duration({"$seconds": seconds}, "d")
        assert str(refused.value) == f"d: $seconds {seconds!r} is negative"
    with pytest.raises(SerializationError) as refused:
        encode_duration(timedelta(microseconds=-1))
    assert str(refused.value) == "duration -1 day, 23:59:59.999999 is negative"
    with pytest.raises(SerializationError) as refused:
        encode_duration(timedelta(microseconds=-1), "Claims.limit")
    assert str(refused.value) == "Claims.limit: duration -1 day, 23:59:59.999999 is negative"


def test_negative_zero_seconds_is_zero() -> None:
    assert decode_duration({"$seconds": -0.0}, "d") == timedelta(0)


def test_a_duration_that_would_round_is_refused() -> None:
    for seconds in (1e-07, 0.0000015, 1.0000001, 0.1234567):
        with pytest.raises(SerializationError) as refused:
            decode_duration({"$seconds": seconds}, "d")
        assert (
            str(refused.value) == f"d: $seconds {seconds!r} is not a whole number of microseconds"
        )
    with pytest.raises(SerializationError) as refused:
        encode_duration(timedelta(days=200_000, microseconds=1))
    assert str(refused.value) == (
        "duration 200000 days, 0:00:00.000001 cannot be written without rounding"
    )


def test_a_duration_overflowing_pythons_range_is_refused() -> None:
    for seconds, shown in (
        (10**14, "100000000000000"),
        (1e14, "100000000000000.0"),
        (1e300, "1e+300"),
    ):
        with pytest.raises(SerializationError) as refused:
            decode_duration({"$seconds": seconds}, "d")
        assert str(refused.value) == f"d: $seconds {shown} overflows a duration"
    with pytest.raises(SerializationError) as refused:
        decode_duration({"$seconds": 10**400}, "d")
    assert str(refused.value) == f"d: $seconds {'1' + '0' * 79} overflows a duration"


def test_a_duration_that_is_not_finite_is_refused() -> None:
    for seconds in (math.inf, -math.inf, math.nan):
        with pytest.raises(SerializationError) as refused:
            decode_duration({"$seconds": seconds}, "d")
        assert str(refused.value) == f"d: $seconds {seconds!r} is not finite"


def test_a_duration_tag_body_is_a_number() -> None:
    for body, got in (
        ("60", "string '60'"),
        (True, "boolean True"),
        (None, "null None"),
        ([60], "array [60]"),
    ):
        with pytest.raises(SerializationError) as refused:
            decode_duration({"$seconds": body}, "d")
        assert str(refused.value) == f"d: expected a number of seconds, got {got}"
    for tag in ({"seconds": 60}, {"$seconds": 60, "$date": "2026-10-18"}, 60):
        with pytest.raises(SerializationError):
            decode_duration(tag, "d")


def test_shape_durations_travel_as_seconds_tags() -> None:
    shape = Shape.changes(lookback=timedelta(minutes=5, microseconds=250))
    assert shape.to_dict()["lookback"] == {"$seconds": 300.00025}
    assert Shape.from_json(shape.to_json()) == shape


# 3. Strings reject lone surrogates ---------------------------------------------------------------


def test_strings_reject_lone_surrogates() -> None:
    data = wire_of(MANIFEST, table="orders\ud800")
    with pytest.raises(SerializationError) as refused:
        Manifest.from_dict(data)
    assert str(refused.value) == "Manifest.table: string holds a lone surrogate"
    with pytest.raises(SerializationError) as refused:
        Manifest.from_json(MANIFEST.to_json().replace('"table":"orders"', '"table":"\\udc00"'))
    assert str(refused.value) == "Manifest.table: string holds a lone surrogate"


def test_lone_surrogates_are_refused_in_keys_and_tag_bodies() -> None:
    with pytest.raises(SerializationError, match="surrogate"):
        Contract.from_dict(wire_of(CONTRACT, shapes={"\ud800": Shape().to_dict()}))
    with pytest.raises(SerializationError, match="surrogate"):
        Shape.from_dict({**SHAPE.to_dict(), "\udfff": 1})
    with pytest.raises(SerializationError, match="surrogate"):
        produced_at("2026-10-18T12:00:00Z\ud800")


def test_a_surrogate_pair_is_one_character_not_a_lone_surrogate() -> None:
    text = '{"table": "\\ud83d\\ude00"}'
    assert parse_json(text) == {"table": "\U0001f600"}


# Parsing JSON text -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{",
        "{'version': 4}",
        '{"a": NaN}',
        '{"a": Infinity}',
        '{"a": -Infinity}',
        '{"a": 1e400}',
        '{"a": 1, "a": 2}',
        b'{"a": "\xff"}',
        "[" * 100_000 + "]" * 100_000,
        '{"a": ' + "9" * 5000 + "}",
    ],
)
def test_text_that_is_not_strict_json_raises_serialization_error(text: str | bytes) -> None:
    with pytest.raises(SerializationError):
        Shape.from_json(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "not JSON: Expecting value: line 1 column 1 (char 0)"),
        ('{"a": NaN}', "NaN is not JSON"),
        ('{"a": -Infinity}', "-Infinity is not JSON"),
        ('{"a": 1e400}', "number 1e400 overflows binary64"),
        ('{"a": 1, "a": 2}', "duplicate key 'a'"),
        (
            b'{"a": "\xff"}',
            "not UTF-8: 'utf-8' codec can't decode byte 0xff in position 7: invalid start byte",
        ),
        ("[" * 100_000 + "]" * 100_000, "JSON nested too deeply"),
        (
            '{"a": ' + "9" * 5000 + "}",
            "not JSON: Exceeds the limit (4300 digits) for integer string conversion: value has "
            "5000 digits; use sys.set_int_max_str_digits() to increase the limit",
        ),
    ],
)
def test_text_that_is_not_strict_json_is_refused_at_the_documents_root(
    text: str | bytes, message: str
) -> None:
    with pytest.raises(SerializationError) as refused:
        parse_json(text)
    assert (refused.value.path, str(refused.value)) == ("", message)


def test_from_json_accepts_utf8_bytes() -> None:
    assert Shape.from_json(SHAPE.to_json().encode("utf-8")) == SHAPE


# 4. Canonical JSON -------------------------------------------------------------------------------


def test_canonical_json_has_sorted_keys_compact_separators_and_ascii_escapes() -> None:
    assert Shape().to_json() == (
        '{"checkpoint":"none","cost":1,"coverage":"table","deletions":"absence","kind":"Shape",'
        '"lookback":{"$seconds":0},"version":4,"window_size":null}'
    )
    made = Manifest("caf\u00e9", "full", T)
    assert '"table":"caf\\u00e9"' in made.to_json()
    assert made.to_json().isascii()


@given(wire_values())
def test_canonical_json_is_the_wire_dict_written_canonically(value: Wire) -> None:
    text = value.to_json()
    assert text.isascii()
    assert json.loads(text) == value.to_dict()
    assert json.dumps(json.loads(text), sort_keys=True, separators=(",", ":")) == text


def test_canonical_json_keeps_exact_large_integers() -> None:
    big = 2**60
    log = Contract(
        "log", ("id",), {"tail": Shape.changes(checkpoint="sequence")}, types={"id": "int"}
    )
    made = log.manifest("tail", T, since=big, generation=big + 256)
    assert f'"generation":{big + 256}' in made.to_json()
    assert Manifest.from_json(made.to_json()).generation == big + 256


# 4. Identity -------------------------------------------------------------------------------------


def test_identity_is_sha256_of_rfc8785_over_the_identity_form() -> None:
    for value in EXAMPLES:
        assert value.identity_json().encode("utf-8") == canonicalize(value.identity_dict())
        assert value.identity == hashlib.sha256(value.identity_json().encode("utf-8")).hexdigest()


def test_the_identity_of_the_default_shape_is_its_kind_alone() -> None:
    assert Shape().identity_dict() == {"kind": "Shape"}
    assert Shape().identity_json() == '{"kind":"Shape"}'
    assert Shape().identity == hashlib.sha256(b'{"kind":"Shape"}').hexdigest()


def test_the_identity_form_omits_the_version() -> None:
    for value in EXAMPLES:
        assert "version" not in value.identity_dict()
        assert value.identity_dict()["kind"] == type(value).__name__


def test_the_identity_form_omits_fields_at_their_defaults() -> None:
    made = Manifest("orders", "full", T)
    assert made.identity_dict() == {
        "kind": "Manifest",
        "table": "orders",
        "shape": "full",
        "produced_at": {"$datetime": "2026-10-18T00:00:00+00:00"},
    }
    assert made.replace(rows=1).identity_dict()["rows"] == 1


class Count(int):
    """An int that is not exactly int, as an IntEnum member is."""


def test_a_number_at_its_default_is_omitted_whatever_int_type_spells_it() -> None:
    made = Manifest("orders", "full", T, rows=Count(0), tombstones=Count(0))
    assert made.identity_dict() == Manifest("orders", "full", T).identity_dict()
    assert Shape(cost=Count(1)).identity_dict() == {"kind": "Shape"}


def test_the_identity_form_keeps_a_value_that_equals_no_default() -> None:
    assert Shape(cost=0).identity_dict() == {"kind": "Shape", "cost": 0}
    assert Shape.changes().identity_dict() == {
        "kind": "Shape",
        "deletions": "none",
        "checkpoint": "timestamp",
    }


def test_defaults_are_omitted_recursively() -> None:
    made = Contract("t", ("k",), {"full": Shape(), "cheap": Shape(cost=0.5)}, types={"k": "int"})
    assert made.identity_dict() == {
        "kind": "Contract",
        "table": "t",
        "key": ["k"],
        "shapes": {"cheap": {"kind": "Shape", "cost": 0.5}, "full": {"kind": "Shape"}},
        "types": {"k": "int"},
    }
    assert made.to_dict()["shapes"]["full"]["version"] == 4


def test_identity_json_is_rfc8785_not_canonical_json() -> None:
    made = Manifest("caf\u00e9", "full", T, rows=2**60)
    assert "caf\u00e9" in made.identity_json()
    assert '"rows":1152921504606847000' in made.identity_json()
    assert f'"rows":{2**60}' in made.to_json()


def test_identity_is_equal_across_equivalent_offsets() -> None:
    plus_two = timezone(timedelta(hours=2))
    local = Contract(
        "events", (), {"append": Shape.changes()}, start_at=datetime(2026, 1, 1, 2, tzinfo=plus_two)
    )
    in_utc = Contract(
        "events", (), {"append": Shape.changes()}, start_at=datetime(2026, 1, 1, tzinfo=UTC)
    )
    assert local.identity == in_utc.identity
    assert local.identity_dict()["start_at"] == {"$datetime": "2026-01-01T00:00:00+00:00"}


def test_equal_values_have_equal_identities_and_unequal_ones_differ() -> None:
    assert MANIFEST.identity == MANIFEST.replace(rows=10).identity
    assert MANIFEST.identity != MANIFEST.replace(rows=11).identity
    assert CONTRACT.identity != CONTRACT.replace(schema_hash=None).identity


def test_an_integer_binary64_cannot_hold_is_refused_never_rounded() -> None:
    log = Contract(
        "log", ("id",), {"tail": Shape.changes(checkpoint="sequence")}, types={"id": "int"}
    )
    with pytest.raises(InvalidContract, match="not exact in binary64"):
        log.manifest("tail", T, since=0, generation=2**53 + 1)
    exact = log.manifest("tail", T, since=0, generation=2**60)
    with pytest.raises(InvalidContract, match="not exact in binary64"):
        Manifest.from_dict(wire_of(exact, generation=2**60 + 1))
    assert Manifest.from_dict(exact.to_dict()).identity == exact.identity


# 6. Optional future fields at defaults keep identity ---------------------------------------------


def test_optional_future_fields_at_their_defaults_keep_identity() -> None:
    @dataclass(frozen=True)
    class Probe(Wire):
        name: str = wire_field(Text())

    today = Probe(name="x")

    @dataclass(frozen=True)  # type: ignore[no-redef]
    class Probe(Wire):
        name: str = wire_field(Text())
        note: str | None = wire_field(Optional(Text()), default=None)

    tomorrow = Probe(name="x")
    assert type(today).__name__ == type(tomorrow).__name__
    assert today.to_dict() != tomorrow.to_dict()
    assert today.identity == tomorrow.identity
    assert Probe(name="x", note="set").identity != today.identity


def test_a_wire_kind_declares_every_field_with_wire_field() -> None:
    @dataclass(frozen=True)
    class Undeclared(Wire):
        name: str

    with pytest.raises(TypeError) as refused:
        Undeclared("x").to_dict()
    assert str(refused.value) == "field name was not declared with wire_field"


# Round trips -------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", EXAMPLES, ids=lambda v: type(v).__name__)
def test_to_dict_and_to_json_round_trip(value: Wire) -> None:
    assert type(value).from_dict(value.to_dict()) == value
    assert type(value).from_json(value.to_json()) == value


@given(shapes())
def test_every_shape_round_trips_through_json(value: Shape) -> None:
    read_back = Shape.from_json(value.to_json())
    assert read_back == value
    assert read_back.identity == value.identity
    assert read_back.to_json() == value.to_json()


@given(contracts())
def test_every_contract_round_trips_through_json(value: Contract) -> None:
    read_back = Contract.from_json(value.to_json())
    assert read_back == value
    assert read_back.identity == value.identity
    assert read_back.to_json() == value.to_json()


@given(contract_and_manifest())
def test_every_manifest_round_trips_through_json(pair: tuple[Contract, Manifest]) -> None:
    contract, value = pair
    read_back = Manifest.from_json(value.to_json())
    assert read_back == value
    assert read_back.identity == value.identity
    read_back.check(contract)


@given(contracts(), st.integers(min_value=-12, max_value=14))
def test_contract_identity_is_stable_across_equivalent_utc_offsets(
    value: Contract, hours: int
) -> None:
    assume(value.start_at is not None)
    assert value.start_at is not None
    moved = shifted(value.start_at, hours)
    assume(moved is not None)
    again = value.replace(start_at=moved)
    assert again == value and again.identity == value.identity


def at_offset(document: Any, hours: int) -> Any:
    """The wire document with every $datetime tag written at another UTC offset, or None when an
    instant falls outside Python's range there."""
    if isinstance(document, list):
        return [at_offset(item, hours) for item in document]
    if not isinstance(document, dict):
        return document
    if set(document) == {"$datetime"}:
        moved = shifted(datetime.fromisoformat(document["$datetime"]), hours)
        assume(moved is not None)
        assert moved is not None
        return {"$datetime": moved.isoformat()}
    return {name: at_offset(value, hours) for name, value in document.items()}


@settings(max_examples=150)
@given(wire_values(), st.integers(min_value=-12, max_value=14))
def test_identity_is_stable_across_equivalent_utc_offsets_on_the_wire(
    value: Wire, hours: int
) -> None:
    """A sender may write its datetimes at any offset: the value read is the same instant, with
    the same identity, and it writes itself back in UTC."""
    document = at_offset(value.to_dict(), hours)
    read = type(value).from_json(json.dumps(document))
    assert read == value
    assert read.identity == value.identity
    assert read.to_dict() == value.to_dict()


@settings(max_examples=150)
@given(manifests(), st.integers(min_value=-12, max_value=14))
def test_manifest_identity_is_stable_across_equivalent_utc_offsets(
    value: Manifest, hours: int
) -> None:
    def move(item: Any) -> Any:
        if isinstance(item, datetime):
            moved = shifted(item, hours)
            assume(moved is not None)
            return moved
        return item

    window = None if value.window is None else tuple(move(bound) for bound in value.window)
    again = value.replace(
        produced_at=move(value.produced_at), since=move(value.since), window=window
    )
    assert again == value
    assert again.identity == value.identity
    assert again.to_json() == value.to_json()


def test_a_serialization_error_names_its_path_and_keeps_its_message() -> None:
    error = SerializationError("Manifest.rows", "expected an integer")
    assert (str(error), error.path, error.message) == (
        "Manifest.rows: expected an integer",
        "Manifest.rows",
        "expected an integer",
    )
    assert str(SerializationError("", "not JSON")) == "not JSON"


def test_a_rejected_delivery_carries_its_rejection_receipt_when_there_is_one() -> None:
    ledger = Ledger.new(CONTRACT)
    now = MANIFEST.produced_at
    checks = (*Gate.preflight(ledger, MANIFEST, now=now), Check("content_hash", False, "differs"))
    receipt = Gate.reject(ledger, MANIFEST, checks, now=now)
    error = RejectedDelivery("content_hash differs", receipt)
    assert (str(error), error.receipt) == ("content_hash differs", receipt)
    assert RejectedDelivery("content_hash differs").receipt is None


def test_a_number_field_is_refused_naming_its_path_and_what_it_got() -> None:
    with pytest.raises(SerializationError) as caught:
        Number().decode("1", "Shape.cost")
    assert str(caught.value) == "Shape.cost: expected a number, got string '1'"
    with pytest.raises(SerializationError) as caught:
        Number().decode(float("inf"), "Shape.cost")
    assert (caught.value.path, caught.value.message) == ("Shape.cost", "inf is not a finite number")


def test_a_boolean_field_is_refused_naming_its_path_and_what_it_got() -> None:
    for passed, got in (("true", "string 'true'"), (1, "number 1"), (None, "null None")):
        with pytest.raises(SerializationError) as refused:
            Check.from_dict({**Check("rows", True).to_dict(), "passed": passed})
        assert str(refused.value) == f"Check.passed: expected true or false, got {got}"


def test_a_text_field_may_be_empty_unless_it_says_otherwise() -> None:
    check = Check("rows", True)
    assert check.detail == "" and Check.from_json(check.to_json()) == check
    with pytest.raises(SerializationError) as refused:
        Check.from_dict({**check.to_dict(), "name": ""})
    assert str(refused.value) == "Check.name: must not be empty"
    # The codec itself, built here: a field's codec is otherwise built once, at import.
    assert Text().decode("", "Check.detail") == ""
    assert Text().schema({}) == {"type": "string"}


def test_a_mapping_field_is_refused_naming_its_path_and_what_it_got() -> None:
    with pytest.raises(SerializationError) as caught:
        Object(Text()).decode([1], "Contract.types")
    assert str(caught.value) == "Contract.types: expected an object, got array [1]"
    with pytest.raises(SerializationError) as caught:
        Object(Text()).decode({1: "int"}, "Contract.types")
    assert caught.value.path == "Contract.types"


@pytest.mark.parametrize(
    ("codec", "data", "message"),
    [
        (Text(nonempty=True), "", "Manifest.shape: must not be empty"),
        (
            Value(),
            {"$x": 1},
            "Manifest.shape: expected an integer, a string, $date or $datetime, got object "
            "{'$x': 1}",
        ),
        (Array(Text()), "a", "Manifest.shape: expected an array, got string 'a'"),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_naming_its_path_and_what_was_expected(
    codec: Any, data: Any, message: str
) -> None:
    with pytest.raises(SerializationError) as refused:
        codec.decode(data, "Manifest.shape")
    assert str(refused.value) == message
