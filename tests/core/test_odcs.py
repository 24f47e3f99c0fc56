"""The ODCS v3 mapping (dogana_core.odcs): a data contract's schema objects as dogana Contracts,
one rule per test; every refusal names the field and the rule."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from dogana_core import InvalidContract, Shape, odcs_column_hash
from dogana_core.odcs import contracts_of_odcs, odcs_columns


def document(**changes: Any) -> dict[str, Any]:
    """A data contract of one keyed table with soft deletes; changes replace the schema
    object's entries (a customProperties mapping is turned into ODCS's list)."""
    item: dict[str, Any] = {
        "name": "orders",
        "properties": [
            {"name": "customer", "logicalType": "string"},
            {"name": "order_id", "logicalType": "integer", "primaryKey": True},
            {"name": "updated_at", "logicalType": "timestamp"},
            {"name": "is_deleted", "logicalType": "boolean"},
        ],
        "customProperties": {
            "doganaShapes": {
                "full": {"read": "complete", "cost": 10},
                "changes": {
                    "read": "changes",
                    "checkpoint": "timestamp",
                    "tombstones": True,
                    "lookback": 900,
                },
            },
            "doganaCursorColumn": "updated_at",
            "doganaDeletedColumn": "is_deleted",
        },
    }
    item.update(copy.deepcopy(changes))
    item["customProperties"] = [
        {"property": key, "value": value} for key, value in item["customProperties"].items()
    ]
    return {"apiVersion": "v3.0.2", "kind": "DataContract", "schema": [item]}


def test_a_schema_object_is_a_contract_of_its_table_key_shapes_and_columns() -> None:
    [contract] = contracts_of_odcs(document())
    assert contract.table == "orders"
    assert contract.key == ("order_id",)
    assert dict(contract.shapes) == {
        "full": Shape.complete(cost=10),
        "changes": Shape.changes(
            checkpoint="timestamp", tombstones=True, lookback=timedelta(seconds=900)
        ),
    }
    assert (contract.cursor_column, contract.deleted_column) == ("updated_at", "is_deleted")
    assert dict(contract.types) == {
        "order_id": "int",
        "updated_at": "datetime",
        "is_deleted": "bool",
    }


def test_the_schema_hash_is_the_odcs_column_hash_without_the_deleted_column() -> None:
    data = document()
    [contract] = contracts_of_odcs(data)
    assert contract.schema_hash == odcs_column_hash(data["schema"][0], deleted_column="is_deleted")


def test_the_key_follows_primary_key_position_and_the_table_its_physical_name() -> None:
    properties = [
        {
            "name": "product_id",
            "logicalType": "integer",
            "primaryKey": True,
            "primaryKeyPosition": 2,
        },
        {"name": "warehouse", "logicalType": "string", "primaryKey": True, "primaryKeyPosition": 1},
    ]
    shapes = {"doganaShapes": {"full": {"read": "complete"}}}
    data = document(physicalName="stock", properties=properties, customProperties=shapes)
    [contract] = contracts_of_odcs(data)
    assert (contract.table, contract.key) == ("stock", ("warehouse", "product_id"))


def test_a_table_without_primary_key_is_keyless_and_starts_where_it_says() -> None:
    properties = [
        {"name": "path", "logicalType": "string"},
        {"name": "viewed_at", "logicalType": "timestamp"},
    ]
    custom = {
        "doganaShapes": {"appended": {"read": "changes"}},
        "doganaCursorColumn": "viewed_at",
        "doganaStartAt": "2026-01-01T00:00:00+00:00",
    }
    [contract] = contracts_of_odcs(document(properties=properties, customProperties=custom))
    assert contract.key == ()
    assert contract.start_at == datetime(2026, 1, 1, tzinfo=UTC)


def test_several_schema_objects_are_several_contracts_in_their_order() -> None:
    data = document()
    second = copy.deepcopy(data["schema"][0])
    second["name"] = "order_lines"
    data["schema"].append(second)
    assert [c.table for c in contracts_of_odcs(data)] == ["orders", "order_lines"]
    assert list(odcs_columns(data)) == ["orders", "order_lines"]


def test_the_columns_are_every_property_in_order_with_its_dogana_type() -> None:
    assert odcs_columns(document()) == {
        "orders": {
            "customer": "str",
            "order_id": "int",
            "updated_at": "datetime",
            "is_deleted": "bool",
        }
    }


@pytest.mark.parametrize(
    ("changes", "field", "rule"),
    [
        ({"customProperties": {}}, "schema[0].customProperties.doganaShapes", "at least one"),
        (
            {"customProperties": {"doganaShapes": {"x": {"read": "sometimes"}}}},
            "schema[0].customProperties.doganaShapes.x.read",
            "one of complete, changes",
        ),
        (
            {"customProperties": {"doganaShapes": {"x": {"read": "changes", "tombstones": True}}}},
            "Contract.deleted_column",
            "a tombstone shape needs a deleted column",
        ),
        (
            {"properties": [{"name": "order_id", "logicalType": "object", "primaryKey": True}]},
            "schema[0].properties[0].logicalType",
            "no dogana type",
        ),
    ],
    ids=["no shapes", "unknown read", "tombstones without deleted column", "nested key"],
)
def test_what_dogana_cannot_prove_is_refused_naming_the_field_and_the_rule(
    changes: dict[str, Any], field: str, rule: str
) -> None:
    with pytest.raises(InvalidContract) as refused:
        contracts_of_odcs(document(**changes))
    assert field in str(refused.value) and rule in str(refused.value)


def with_item(**changes: Any) -> dict[str, Any]:
    """document(), its schema object's entries replaced as they are (no list conversion)."""
    data = document()
    data["schema"][0].update(copy.deepcopy(changes))
    return data


def with_shapes(shapes: Any) -> dict[str, Any]:
    return document(customProperties={"doganaShapes": shapes})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"schema": []},
            "schema: an ODCS data contract for dogana lists its tables here",
        ),
        ({"schema": ["orders"]}, "schema[0]: a schema object is a mapping"),
        (
            with_item(properties={"order_id": "integer"}),
            "schema[0].properties: a table lists its columns",
        ),
        (
            with_item(customProperties=[{"value": "updated_at"}]),
            "schema[0].customProperties[0]: names no property",
        ),
        (
            with_item(properties=[{"logicalType": "string"}]),
            "schema[0].properties[0].name: a column has a name",
        ),
        (
            document(
                customProperties={
                    "doganaShapes": {"full": {"read": "complete"}},
                    "doganaWindowColumn": "order_date",
                }
            ),
            "schema[0].customProperties.doganaWindowColumn: 'order_date' is not one of the "
            "table's properties",
        ),
        (
            document(
                properties=[{"name": "path", "logicalType": "string"}],
                customProperties={
                    "doganaShapes": {"full": {"read": "complete"}},
                    "doganaStartAt": "soon",
                },
            ),
            "schema[0]: schema[0].doganaStartAt: 'soon' is not an ISO 8601 instant",
        ),
        (
            with_shapes({}),
            "schema[0]: schema[0].customProperties.doganaShapes: a table declares at least one "
            "shape, {name: {read}}",
        ),
        (
            with_shapes({"recent": {"read": "changes", "lookback": True}}),
            "schema[0]: schema[0].customProperties.doganaShapes.recent.lookback: a number of "
            "seconds",
        ),
    ],
    ids=[
        "no tables",
        "a table not a mapping",
        "columns not a list",
        "a custom property without its name",
        "a column without a name",
        "a bound column not in the table",
        "a start that is no instant",
        "no shapes",
        "a duration not a number",
    ],
)
def test_a_document_dogana_cannot_read_is_refused_naming_the_field_exactly(
    data: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidContract) as refused:
        contracts_of_odcs(data)
    assert str(refused.value) == message


def test_a_shape_option_its_read_does_not_take_is_refused_naming_the_shape() -> None:
    with pytest.raises(InvalidContract) as refused:
        contracts_of_odcs(with_shapes({"full": {"read": "complete", "colour": "red"}}))
    assert str(refused.value).startswith(
        "schema[0]: schema[0].customProperties.doganaShapes.full: "
    )
    assert "colour" in str(refused.value)


def test_the_columns_of_a_property_without_a_dogana_type_are_refused_naming_it() -> None:
    data = with_item(properties=[{"name": "payload", "logicalType": "object"}])
    with pytest.raises(InvalidContract) as refused:
        odcs_columns(data)
    assert str(refused.value).startswith(
        "schema[0].properties[0].logicalType (payload): 'object' has no dogana type"
    )


def test_key_columns_without_a_position_come_first_in_declared_order() -> None:
    """ODCS's default primaryKeyPosition is -1: a key column that states none sorts before
    every stated position."""
    properties = [
        {"name": "warehouse", "logicalType": "string", "primaryKey": True, "primaryKeyPosition": 1},
        {"name": "product_id", "logicalType": "integer", "primaryKey": True},
    ]
    shapes = {"doganaShapes": {"full": {"read": "complete"}}}
    [contract] = contracts_of_odcs(document(properties=properties, customProperties=shapes))
    assert contract.key == ("product_id", "warehouse")
