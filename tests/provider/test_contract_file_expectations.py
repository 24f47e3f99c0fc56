"""Expectations declared in contract files: dogana's JSON "expectations", and ODCS v3 quality
rules mapped where they fit; what cannot be mapped is refused naming the file, field and rule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from dogana_core import Contract, Shape
from dogana_provider.checks.expectations import Expectations
from dogana_provider.contract_files import InvalidContractFile, read_contract_file

LINES = {
    "column_mapping": {"amount_cents": {"min": {"geq_to": 0, "on_violation": "block"}}},
    "checks": {
        "lines_have_an_invoice": {
            "check_statement": "invoice_id IN (SELECT invoice_id FROM invoices)",
            "on_violation": "warn",
        }
    },
}


def contract(table: str) -> dict[str, Any]:
    return Contract(table, ("id",), {"full": Shape.complete()}, types={"id": "int"}).to_dict()


def test_a_dogana_file_declares_a_tables_expectations(tmp_path: Path) -> None:
    path = tmp_path / "lines.json"
    path.write_text(json.dumps({"contracts": [contract("lines")], "expectations": LINES}))
    found = read_contract_file(path)
    assert found.expectations == {"lines": Expectations.from_dict(LINES)}
    assert found.gate() == {"expectations": {"lines": LINES}}


def test_a_dogana_group_file_declares_them_by_table(tmp_path: Path) -> None:
    path = tmp_path / "billing.json"
    contracts = [contract("invoices"), contract("lines")]
    path.write_text(json.dumps({"contracts": contracts, "expectations": {"lines": LINES}}))
    assert set(read_contract_file(path).expectations) == {"lines"}
    none = Expectations().to_dict()  # the file is the whole declaration: invoices declares none
    assert read_contract_file(path).gate() == {"expectations": {"invoices": none, "lines": LINES}}
    path.write_text(json.dumps({"contracts": contracts, "expectations": {"orders": LINES}}))
    with pytest.raises(InvalidContractFile, match="orders: not a table of the file"):
        read_contract_file(path)


def test_a_dogana_file_with_a_bad_expectation_names_the_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "lines.json"
    bad = {"column_mapping": {"amount_cents": {"min": {"geq_to": 0}}}}
    path.write_text(json.dumps({"contracts": [contract("lines")], "expectations": bad}))
    with pytest.raises(InvalidContractFile) as refused:
        read_contract_file(path)
    assert str(refused.value).startswith(f"{path}: expectations.column_mapping.amount_cents.min")
    assert "on_violation is required" in str(refused.value)


def odcs(quality: list[dict[str, Any]], *, on_table: bool = False) -> dict[str, Any]:
    amount: dict[str, Any] = {"name": "amount_cents", "logicalType": "integer"}
    item: dict[str, Any] = {
        "name": "lines",
        "properties": [{"name": "id", "logicalType": "integer", "primaryKey": True}, amount],
        "customProperties": [{"property": "doganaShapes", "value": {"full": {"read": "complete"}}}],
    }
    (item if on_table else amount)["quality"] = quality
    return {
        "apiVersion": "v3.0.2",
        "kind": "DataContract",
        "id": "lines",
        "version": "1.0.0",
        "status": "active",
        "schema": [item],
    }


def read_odcs(tmp_path: Path, document: dict[str, Any]) -> Any:
    path = tmp_path / "lines.odcs.yaml"
    path.write_text(yaml.safe_dump(document))
    return read_contract_file(path)


def warn(**rule: Any) -> dict[str, Any]:
    return {**rule, "customProperties": [{"property": "doganaOnViolation", "value": "warn"}]}


def test_odcs_quality_rules_map_to_column_checks(tmp_path: Path) -> None:
    rules = [
        warn(metric="nullValues", mustBe=0),
        warn(type="library", metric="duplicateValues", mustBeLessOrEqualTo=2),
        {"type": "text", "description": "amounts are in cents"},
    ]
    found = read_odcs(tmp_path, odcs(rules)).expectations["lines"]
    assert found.to_dict()["column_mapping"] == {
        "amount_cents": {
            "null_check": {"equal_to": 0, "on_violation": "warn"},
            "unique_check": {"leq_to": 2, "on_violation": "warn"},
        }
    }


def test_odcs_must_be_between_is_two_inclusive_bounds(tmp_path: Path) -> None:
    found = read_odcs(tmp_path, odcs([warn(metric="nullValues", mustBeBetween=[0, 3])]))
    (expectation,) = found.expectations["lines"].items
    assert (expectation.bounds.geq_to, expectation.bounds.leq_to) == (0, 3)


@pytest.mark.parametrize(
    ("rule", "on_table", "field", "reason"),
    [
        ({"metric": "nullValues", "mustBe": 0}, False, "quality[0].customProperties",
         "doganaOnViolation is required"),
        (warn(type="sql", query="SELECT COUNT(*) FROM lines", mustBe=0), False, "quality[0]",
         "an sql rule cannot be mapped"),
        (warn(metric="invalidValues", mustBe=0), False, "quality[0]",
         "metric 'invalidValues' cannot be mapped"),
        (warn(metric="nullValues", mustBe=0, unit="percent"), False, "quality[0].unit",
         "cannot be mapped: rows only"),
        (warn(metric="nullValues", mustNotBe=3), False, "quality[0].mustNotBe",
         "cannot be mapped"),
        (warn(metric="rowCount", mustBeGreaterThan=0), True, "schema[0].quality[0]",
         "metric 'rowCount' on a table cannot be mapped"),
        (warn(type="custom", engine="soda", implementation="x"), False, "quality[0]",
         "a custom rule cannot be mapped"),
    ],
)  # fmt: skip
def test_odcs_quality_that_cannot_be_mapped_is_refused_naming_file_field_and_rule(
    tmp_path: Path, rule: dict[str, Any], on_table: bool, field: str, reason: str
) -> None:
    with pytest.raises(InvalidContractFile) as refused:
        read_odcs(tmp_path, odcs([rule], on_table=on_table))
    message = str(refused.value)
    assert message.startswith(str(tmp_path / "lines.odcs.yaml")) and field in message, message
    assert reason in message, message


def test_odcs_custom_property_declares_what_odcs_cannot(tmp_path: Path) -> None:
    document = odcs([])
    document["schema"][0]["customProperties"].append(
        {"property": "doganaExpectations", "value": {"checks": LINES["checks"]}}
    )
    found = read_odcs(tmp_path, document).expectations["lines"]
    assert found.names == ("lines_have_an_invoice",)
