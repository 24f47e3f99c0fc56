"""Contract and shapes: the rules of a Contract, and the column hash.

Contract declares table, key, named shapes, optional window_column, cursor_column and
deleted_column, types, optional schema_hash and start_at. Each test below is one sentence of
the section; identifiers are checked so the receiver can quote them in SQL later.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

import pytest

from dogana_core import (
    Checkpoint,
    Contract,
    InvalidContract,
    Manifest,
    Shape,
    column_hash,
    odcs_column_hash,
)
from dogana_core.contract import check_identifier, odcs_type

FULL = Shape.complete()
PART = Shape.complete(window=True)
CHANGES = Shape.changes()
TOMBSTONES = Shape.changes(tombstones=True)
PRODUCED_AT = datetime(2026, 10, 18, tzinfo=UTC)


def contract(**overrides: Any) -> Contract:
    """A keyed contract with every optional column bound; overrides replace its arguments."""
    arguments: dict[str, Any] = {
        "table": "orders",
        "key": ("order_id",),
        "shapes": {"full": FULL, "part": PART, "changes": TOMBSTONES},
        "window_column": "order_date",
        "cursor_column": "updated_at",
        "deleted_column": "is_deleted",
        "types": {
            "order_id": "int",
            "order_date": "date",
            "updated_at": "datetime",
            "is_deleted": "bool",
        },
    }
    arguments.update(overrides)
    table, key, shapes = arguments.pop("table"), arguments.pop("key"), arguments.pop("shapes")
    return Contract(table, key, shapes, **arguments)


def refusal(make: Callable[[], object]) -> str:
    """The message of the InvalidContract that make() raises: it names the field and the rule."""
    with pytest.raises(InvalidContract) as refused:
        make()
    return str(refused.value)


def test_the_example_contract_is_valid() -> None:
    made = contract()
    assert made.keyed and made.window_type == "date"


def test_contract_takes_keywords_after_shapes() -> None:
    with pytest.raises(TypeError):
        Contract("orders", ("id",), {"full": FULL}, None)  # type: ignore[misc]


# Types -------------------------------------------------------------------------------------------


def test_types_map_exactly_the_key_window_cursor_and_deleted_columns() -> None:
    for column in ("order_id", "order_date", "updated_at", "is_deleted"):
        types = dict(contract().types)
        del types[column]
        assert refusal(lambda types=types: contract(types=types)) == (
            "Contract.types: types map exactly the key, window, cursor and deleted columns; "
            f"missing ['{column}']"
        )


def test_types_name_no_other_columns() -> None:
    types = {**dict(contract().types), "amount": "float"}
    assert refusal(lambda: contract(types=types)) == (
        "Contract.types: types map exactly the key, window, cursor and deleted columns; "
        "not bound ['amount']"
    )


def test_types_are_empty_only_when_no_column_is_bound() -> None:
    assert Contract("events", (), {"full": FULL}).types == ()
    with pytest.raises(InvalidContract, match="types"):
        Contract("events", (), {"full": FULL}, types={"at": "datetime"})
    with pytest.raises(InvalidContract, match="types"):
        Contract("orders", ("id",), {"full": FULL})


def test_types_are_the_six_logical_type_names() -> None:
    with pytest.raises(InvalidContract, match="not one of"):
        contract(types={**dict(contract().types), "order_id": "bigint"})
    with pytest.raises(InvalidContract, match="not one of"):
        contract(types={**dict(contract().types), "order_id": 5})


def test_keys_use_ordered_scalar_types() -> None:
    for ordered in ("int", "str", "date", "datetime"):
        Contract("t", ("k",), {"full": FULL}, types={"k": ordered})
    for unordered in ("float", "bool"):
        types = {"k": unordered}
        assert refusal(lambda types=types: Contract("t", ("k",), {"full": FULL}, types=types)) == (
            f"Contract.types: key column 'k' is {unordered}; allowed: date, datetime, int, str"
        )


def test_window_bounds_use_ordered_scalar_types() -> None:
    for ordered in ("int", "str", "date", "datetime"):
        Contract("t", ("k",), {"part": PART}, window_column="w", types={"k": "int", "w": ordered})
    for unordered in ("float", "bool"):
        with pytest.raises(InvalidContract, match="window column"):
            Contract(
                "t", ("k",), {"part": PART}, window_column="w", types={"k": "int", "w": unordered}
            )


def test_the_cursor_is_a_datetime_or_an_int() -> None:
    for allowed in ("datetime", "int"):
        Contract("t", ("k",), {"c": CHANGES}, cursor_column="c", types={"k": "int", "c": allowed})
    for refused in ("str", "date", "float", "bool"):
        with pytest.raises(InvalidContract, match="cursor column"):
            Contract(
                "t", ("k",), {"c": CHANGES}, cursor_column="c", types={"k": "int", "c": refused}
            )


def test_the_deleted_column_is_a_bool() -> None:
    for refused in ("int", "str", "date", "datetime", "float"):
        with pytest.raises(InvalidContract, match="deleted column"):
            contract(types={**dict(contract().types), "is_deleted": refused})


# Window column -----------------------------------------------------------------------------------


def test_a_contract_with_a_window_shape_has_a_window_column() -> None:
    assert refusal(lambda: Contract("t", ("k",), {"part": PART}, types={"k": "int"})) == (
        "Contract.window_column: a contract with a window shape names its window column"
    )


def test_a_window_column_needs_a_window_shape() -> None:
    assert refusal(
        lambda: Contract(
            "t", ("k",), {"full": FULL}, window_column="w", types={"k": "int", "w": "date"}
        )
    ) == ("Contract.window_column: a window column needs a window shape")


def test_a_window_changes_shape_also_needs_the_window_column() -> None:
    with pytest.raises(InvalidContract, match="window_column"):
        Contract("t", ("k",), {"recent": Shape.changes(window=True)}, types={"k": "int"})


# Deleted column ----------------------------------------------------------------------------------


def test_a_contract_with_a_tombstone_shape_has_a_deleted_column() -> None:
    assert refusal(
        lambda: contract(
            deleted_column=None,
            types={"order_id": "int", "order_date": "date", "updated_at": "datetime"},
        )
    ) == ("Contract.deleted_column: a tombstone shape needs a deleted column")


def test_a_deleted_column_needs_a_tombstone_shape() -> None:
    assert refusal(lambda: contract(shapes={"full": FULL, "part": PART, "changes": CHANGES})) == (
        "Contract.deleted_column: a deleted column needs a tombstone shape"
    )


def test_deleted_column_must_differ_from_key_window_and_cursor() -> None:
    assert refusal(
        lambda: Contract(
            "t", ("gone",), {"c": TOMBSTONES}, deleted_column="gone", types={"gone": "bool"}
        )
    ) == ("Contract.deleted_column: 'gone' must differ from the key, window and cursor columns")
    with pytest.raises(InvalidContract, match="must differ"):
        Contract(
            "t",
            ("k",),
            {"c": Shape.changes(window=True, tombstones=True)},
            window_column="gone",
            deleted_column="gone",
            types={"k": "int", "gone": "bool"},
        )
    with pytest.raises(InvalidContract, match="must differ"):
        Contract(
            "t",
            ("k",),
            {"c": TOMBSTONES},
            cursor_column="gone",
            deleted_column="gone",
            types={"k": "int", "gone": "bool"},
        )


# Keyless tables ----------------------------------------------------------------------------------


def test_a_keyless_contract_appends_by_timestamp() -> None:
    appends = Contract("events", (), {"append": CHANGES, "full": FULL})
    assert not appends.keyed
    for checkpoint in (Checkpoint.GENERATION, Checkpoint.SEQUENCE):
        with pytest.raises(InvalidContract, match="keyless"):
            Contract("events", (), {"feed": Shape.changes(checkpoint=checkpoint)})


def test_a_keyless_append_covers_the_whole_table() -> None:
    with pytest.raises(InvalidContract, match="whole table"):
        Contract(
            "events",
            (),
            {"recent": Shape.changes(window=True)},
            window_column="day",
            types={"day": "date"},
        )


def test_a_keyless_contract_may_replace_a_complete_window() -> None:
    made = Contract("events", (), {"day": PART}, window_column="day", types={"day": "date"})
    assert made.window_type == "date"


def test_tombstones_need_keys() -> None:
    with pytest.raises(InvalidContract, match="tombstones need keys"):
        Contract("events", (), {"c": TOMBSTONES}, deleted_column="gone", types={"gone": "bool"})


def test_lookback_is_allowed_only_on_keyed_contracts() -> None:
    looking_back = Shape.changes(lookback=timedelta(minutes=10))
    assert refusal(lambda: Contract("events", (), {"append": looking_back})) == (
        "Contract.shapes.append: a keyless append cannot look back, a reread event would count "
        "twice"
    )
    Contract("orders", ("id",), {"c": looking_back}, types={"id": "int"})


def test_start_at_is_an_aware_datetime_normalized_to_utc() -> None:
    start = datetime(2026, 1, 1, 1, 0, tzinfo=timezone(timedelta(hours=1)))
    made = Contract("events", (), {"append": CHANGES}, start_at=start)
    assert made.start_at == datetime(2026, 1, 1, tzinfo=UTC) and made.start_at.tzinfo is UTC
    assert refusal(
        lambda: Contract("events", (), {"append": CHANGES}, start_at=datetime(2026, 1, 1))
    ) == ("Contract.start_at: naive datetime 2026-01-01T00:00:00 carries no UTC offset")


# One kind of position ----------------------------------------------------------------------------


def test_a_table_uses_one_kind_of_position() -> None:
    assert refusal(
        lambda: Contract(
            "t",
            ("k",),
            {
                "gen": Shape.changes(checkpoint="generation"),
                "seq": Shape.changes(checkpoint="sequence"),
            },
            types={"k": "int"},
        )
    ) == ("Contract.shapes: a table uses one kind of position, generations or sequences, not both")


def test_a_table_with_sequence_shapes_issues_integer_positions_else_strings() -> None:
    sequences = Contract(
        "t", ("k",), {"seq": Shape.changes(checkpoint="sequence")}, types={"k": "int"}
    )
    generations = Contract(
        "t", ("k",), {"gen": Shape.changes(checkpoint="generation")}, types={"k": "int"}
    )
    assert sequences.position_type is int
    assert generations.position_type is str
    assert Contract("t", ("k",), {"full": FULL}, types={"k": "int"}).position_type is str


# Shapes in the contract --------------------------------------------------------------------------


def test_a_contract_names_at_least_one_shape() -> None:
    assert refusal(lambda: Contract("t", ("k",), {}, types={"k": "int"})) == (
        "Contract.shapes: a contract declares at least one shape"
    )
    assert refusal(lambda: Contract("t", ("k",), 5, types={"k": "int"})) == (  # type: ignore[arg-type]
        "Contract.shapes: expected a mapping of names"
    )


def test_shape_names_are_plain_names() -> None:
    with pytest.raises(InvalidContract, match="shape name"):
        Contract("t", ("k",), {"": FULL}, types={"k": "int"})
    with pytest.raises(InvalidContract, match="shape name"):
        Contract("t", ("k",), {"full read": FULL}, types={"k": "int"})
    Contract("t", ("k",), {"daily-v2.full": FULL}, types={"k": "int"})


def test_shapes_are_shape_values() -> None:
    with pytest.raises(InvalidContract, match="expected a Shape"):
        Contract("t", ("k",), {"full": "complete"}, types={"k": "int"})  # type: ignore[dict-item]


def test_shapes_are_kept_sorted_by_name_whatever_the_order_given() -> None:
    first = Contract("t", ("k",), {"b": FULL, "a": CHANGES}, types={"k": "int"})
    second = Contract("t", ("k",), [("a", CHANGES), ("b", FULL)], types={"k": "int"})
    assert first == second and first.identity == second.identity
    assert [name for name, _ in first.shapes] == ["a", "b"]


def test_rolling_durations_need_date_or_datetime_windows() -> None:
    rolling = Shape.complete(window=True, window_size=timedelta(days=7))
    for kind in ("date", "datetime"):
        Contract("t", ("k",), {"r": rolling}, window_column="w", types={"k": "int", "w": kind})
    for kind in ("int", "str"):
        with pytest.raises(InvalidContract, match="date or datetime"):
            Contract("t", ("k",), {"r": rolling}, window_column="w", types={"k": "int", "w": kind})


def test_date_window_sizes_are_whole_days() -> None:
    for size in (timedelta(hours=36), timedelta(days=7, microseconds=1)):
        rolling = Shape.complete(window=True, window_size=size)
        with pytest.raises(InvalidContract, match="whole number of days"):
            Contract(
                "t", ("k",), {"r": rolling}, window_column="w", types={"k": "int", "w": "date"}
            )
        Contract(
            "t", ("k",), {"r": rolling}, window_column="w", types={"k": "int", "w": "datetime"}
        )


# Identifiers -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["", "1st", "order id", "orders;drop table x", 'a"b', "caf\u00e9", "a-b", "a" * 64, "x\x00"],
)
def test_identifiers_are_safe_to_quote_in_sql(name: str) -> None:
    assert refusal(lambda: check_identifier(name, "name")) == (
        f"name: {name!r} is not an identifier (a letter or _, then letters, digits or _; at most "
        "63 characters)"
    )


@pytest.mark.parametrize("name", ["orders", "_private", "Order_Lines2", "a" * 63])
def test_identifiers_are_a_letter_or_underscore_then_letters_digits_or_underscores(
    name: str,
) -> None:
    assert check_identifier(name, "name") == name


def test_every_name_a_contract_binds_is_an_identifier() -> None:
    assert refusal(lambda: contract(table="my orders")).startswith(
        "Contract.table: 'my orders' is not an identifier"
    )
    assert refusal(lambda: contract(key=("order id",))).startswith(
        "Contract.key: 'order id' is not an identifier"
    )
    with pytest.raises(InvalidContract, match=r"Contract\.window_column"):
        contract(window_column="order-date")
    with pytest.raises(InvalidContract, match=r"Contract\.cursor_column"):
        contract(cursor_column="updated at")
    with pytest.raises(InvalidContract, match=r"Contract\.deleted_column"):
        contract(deleted_column="deleted?")


def test_a_key_names_each_column_once() -> None:
    with pytest.raises(InvalidContract, match="twice"):
        Contract("t", ("k", "k"), {"full": FULL}, types={"k": "int"})


def test_a_composite_key_keeps_its_order() -> None:
    made = Contract("t", ("b", "a"), {"full": FULL}, types={"a": "int", "b": "str"})
    assert made.key == ("b", "a")


def test_schema_hash_is_a_nonempty_string_when_present() -> None:
    assert refusal(lambda: contract(schema_hash="")) == (
        "Contract.schema_hash: must be a nonempty string when present"
    )
    assert refusal(lambda: contract(schema_hash=5)) == (
        "Contract.schema_hash: expected a string, got int"
    )
    with pytest.raises(InvalidContract, match="schema_hash"):
        contract(schema_hash="\ud800")


# Contract.manifest -------------------------------------------------------------------------------


def test_contract_manifest_fills_in_the_table_and_the_schema_hash() -> None:
    made = contract(schema_hash="ab" * 32)
    manifest = made.manifest("full", PRODUCED_AT, rows=3)
    assert manifest == Manifest("orders", "full", PRODUCED_AT, rows=3, schema_hash="ab" * 32)


def test_contract_manifest_checks_what_it_builds() -> None:
    with pytest.raises(InvalidContract, match="window"):
        contract().manifest("part", PRODUCED_AT)
    with pytest.raises(InvalidContract, match="no shape named"):
        contract().manifest("weekly", PRODUCED_AT)
    made = contract().manifest("part", PRODUCED_AT, window=(date(2026, 10, 1), date(2026, 10, 18)))
    assert made.window == (date(2026, 10, 1), date(2026, 10, 18))


# The column hash ---------------------------------------------------------------------------------


def test_the_column_hash_is_sha256_of_the_compact_ascii_pairs() -> None:
    columns = [
        ("order_id", "int"),
        ("caf\u00e9", "str"),
        ("amount", "decimal(10,2)"),
        ("at", "datetime"),
    ]
    by_hand = (
        b'[["order_id","int"],["caf\\u00e9","str"],["amount","decimal(10,2)"],["at","datetime"]]'
    )
    assert column_hash(columns) == hashlib.sha256(by_hand).hexdigest()


def test_the_column_hash_keeps_declared_order() -> None:
    forwards = column_hash([("a", "int"), ("b", "str")])
    assert forwards == column_hash({"a": "int", "b": "str"})
    assert forwards != column_hash([("b", "str"), ("a", "int")])


def test_the_column_hash_leaves_the_deleted_column_out() -> None:
    with_flag = [("id", "int"), ("is_deleted", "bool"), ("name", "str")]
    assert (
        column_hash(with_flag, deleted_column="is_deleted")
        == hashlib.sha256(b'[["id","int"],["name","str"]]').hexdigest()
    )
    assert column_hash(with_flag) != column_hash(with_flag, deleted_column="is_deleted")


def test_column_types_are_the_six_names_or_an_exact_decimal_spelled_one_way() -> None:
    for kind in (
        "int",
        "float",
        "str",
        "bool",
        "date",
        "datetime",
        "decimal(1,0)",
        "decimal(38,38)",
    ):
        column_hash([("c", kind)])
    for kind in (
        "string",
        "decimal",
        "decimal(10, 2)",
        "decimal(2,3)",
        "decimal(0,0)",
        "INT",
        "decimal(010,2)",
        "decimal(10,02)",
    ):
        with pytest.raises(InvalidContract, match="column type"):
            column_hash([("c", kind)])


def test_a_column_is_hashed_once() -> None:
    with pytest.raises(InvalidContract, match="twice"):
        column_hash([("a", "int"), ("a", "str")])


ODCS_ORDERS = {
    "name": "orders",
    "physicalName": "orders_v2",
    "description": "Descriptions, quality rules and tags are not columns and are not hashed.",
    "properties": [
        {"name": "order_id", "logicalType": "integer", "physicalType": "bigint", "required": True},
        {
            "name": "amount",
            "logicalType": "number",
            "physicalType": "numeric(12,2)",
            "logicalTypeOptions": {"precision": 12, "scale": 2},
        },
        {"name": "ratio", "logicalType": "number", "physicalType": "double precision"},
        {"name": "customer", "logicalType": "string", "description": "who ordered"},
        {"name": "is_gift", "logicalType": "boolean"},
        {"name": "order_date", "logicalType": "date", "physicalType": "date"},
        {"name": "updated_at", "logicalType": "date", "physicalType": "timestamp with time zone"},
        {"name": "is_deleted", "logicalType": "boolean"},
    ],
}


def test_the_odcs_column_hash_is_one_pair_per_property_in_declared_order() -> None:
    by_hand = (
        b'[["order_id","int"],["amount","decimal(12,2)"],["ratio","float"],["customer","str"],'
        b'["is_gift","bool"],["order_date","date"],["updated_at","datetime"],["is_deleted","bool"]]'
    )
    assert odcs_column_hash(ODCS_ORDERS) == hashlib.sha256(by_hand).hexdigest()


def test_the_odcs_column_hash_leaves_the_deleted_column_out() -> None:
    by_hand = (
        b'[["order_id","int"],["amount","decimal(12,2)"],["ratio","float"],["customer","str"],'
        b'["is_gift","bool"],["order_date","date"],["updated_at","datetime"]]'
    )
    assert (
        odcs_column_hash(ODCS_ORDERS, deleted_column="is_deleted")
        == hashlib.sha256(by_hand).hexdigest()
    )


def test_the_odcs_column_hash_hashes_only_the_pairs() -> None:
    renamed = {**ODCS_ORDERS, "physicalName": "elsewhere", "description": "other words"}
    assert odcs_column_hash(renamed) == odcs_column_hash(ODCS_ORDERS)
    same_columns = [
        (p["name"], t)
        for p, t in zip(
            ODCS_ORDERS["properties"],  # type: ignore[arg-type]
            ["int", "decimal(12,2)", "float", "str", "bool", "date", "datetime", "bool"],
            strict=True,
        )
    ]
    assert odcs_column_hash(ODCS_ORDERS) == column_hash(same_columns)


def test_nested_odcs_types_have_no_flat_name() -> None:
    for nested in ("object", "array"):
        schema = {"properties": [{"name": "payload", "logicalType": nested}]}
        with pytest.raises(InvalidContract, match="no dogana type"):
            odcs_column_hash(schema)
    with pytest.raises(InvalidContract, match="properties"):
        odcs_column_hash({"name": "orders"})


def test_odcs_properties_are_a_list_of_named_properties_refused_by_position() -> None:
    with pytest.raises(InvalidContract) as refused:
        odcs_column_hash({"name": "orders", "properties": {"order_id": "integer"}})
    assert str(refused.value) == "ODCS schema object: properties must be a list"
    for unnamed in ({"logicalType": "string"}, "order_id"):
        schema = {"properties": [{"name": "id", "logicalType": "integer"}, unnamed]}
        with pytest.raises(InvalidContract) as refused:
            odcs_column_hash(schema)
        assert str(refused.value) == "ODCS schema object: properties[1]: a property has a name"


def test_an_odcs_type_without_a_dogana_name_is_refused_naming_the_property_and_the_choices() -> (
    None
):
    schema = {"properties": [{"name": "id", "logicalType": "integer"}, {"name": "payload"}]}
    with pytest.raises(InvalidContract) as refused:
        odcs_column_hash(schema)
    assert str(refused.value) == (
        "ODCS schema object: properties[1].logicalType (payload): '' has no dogana type; one of "
        "boolean, date, datetime, integer, number, string, timestamp"
    )


def test_only_a_number_with_precision_and_scale_is_a_decimal() -> None:
    def kind(prop: dict[str, Any]) -> str:
        return odcs_type({"name": "c", **prop}, "c")

    assert kind({"logicalType": "number", "logicalTypeOptions": {"precision": 9, "scale": 2}}) == (
        "decimal(9,2)"
    )
    assert kind({"logicalType": "number", "logicalTypeOptions": {"scale": 2}}) == "float"
    assert kind({"logicalType": "string", "logicalTypeOptions": {"scale": 2}}) == "str"


def test_an_odcs_date_whose_physical_type_names_a_timestamp_or_datetime_is_a_datetime() -> None:
    def kind(physical: str) -> str:
        return odcs_type({"name": "c", "logicalType": "date", "physicalType": physical}, "c")

    assert kind("TIMESTAMP WITH TIME ZONE") == "datetime"
    assert kind("DATETIME") == "datetime"  # MySQL's and MariaDB's
    assert kind("DATE") == "date"
