"""Schema policies declared in contract files: a pipeline file's "schema_policy", an ODCS
contract's doganaSchemaPolicy, and the folder's default for every file declaring none."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dogana_core import Contract, Shape
from dogana_provider.contract_files import InvalidContractFile, read_contract_file
from dogana_provider.schema.policy import SchemaPolicy

FROZEN = SchemaPolicy.of("freeze").to_dict()


def contract(table: str) -> dict[str, Any]:
    return Contract(table, ("id",), {"full": Shape.complete()}, types={"id": "int"}).to_dict()


def test_a_pipeline_file_declares_its_tables_policy(tmp_path: Path) -> None:
    path = tmp_path / "lines.json"
    path.write_text(json.dumps({"contracts": [contract("lines")], "schema_policy": "freeze"}))
    assert read_contract_file(path).extract()["schema_policy"] == {"lines": FROZEN}


def test_a_files_policy_wins_over_the_folders_default(tmp_path: Path) -> None:
    declared = tmp_path / "lines.json"
    declared.write_text(json.dumps({"contracts": [contract("lines")], "schema_policy": "freeze"}))
    silent = tmp_path / "orders.json"
    silent.write_text(json.dumps(contract("orders")))
    evolve = SchemaPolicy.of("evolve").to_dict()
    assert read_contract_file(declared).extract("evolve")["schema_policy"] == {"lines": FROZEN}
    assert read_contract_file(silent).extract("evolve")["schema_policy"] == {"orders": evolve}
    assert "schema_policy" not in read_contract_file(silent).extract()


def test_a_group_files_policy_is_by_table(tmp_path: Path) -> None:
    path = tmp_path / "billing.json"
    contracts = [contract("invoices"), contract("lines")]
    path.write_text(json.dumps({"contracts": contracts, "schema_policy": {"lines": "freeze"}}))
    assert read_contract_file(path).extract()["schema_policy"] == {"lines": FROZEN}
    path.write_text(json.dumps({"contracts": contracts, "schema_policy": {"orders": "freeze"}}))
    with pytest.raises(InvalidContractFile, match="schema_policy: orders: not a table"):
        read_contract_file(path)


def test_an_odcs_contract_declares_it_in_a_custom_property(tmp_path: Path) -> None:
    path = tmp_path / "regions.odcs.yaml"
    text = (Path(__file__).parents[2] / "dags/examples/contracts/regions.odcs.yaml").read_text()
    declared = "\ncustomProperties:\n  - {property: doganaSchemaPolicy, value: freeze}"
    path.write_text(text.replace("\ncustomProperties:", declared, 1))
    found = read_contract_file(path)
    tables = [contract.table for contract in found.contracts]
    assert found.extract()["schema_policy"] == dict.fromkeys(tables, FROZEN)


def test_a_policy_that_does_not_parse_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "lines.json"
    path.write_text(json.dumps({"contracts": [contract("lines")], "schema_policy": "thaw"}))
    with pytest.raises(InvalidContractFile, match=f"{path}: schema_policy: 'thaw' is not one"):
        read_contract_file(path)
