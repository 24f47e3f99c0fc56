"""Quality expectations in OpenLineage's DataQualityAssertions: an assertion succeeds when its
expectation was met. A warned violation passes its Check (the delivery is published) but is no
successful assertion; the check saying none is declared asserts nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from dogana_core import Contract, Shape
from dogana_core.gate import Check, Gate
from dogana_core.ledger import Ledger

pytestmark = pytest.mark.airflow  # the facets are the OpenLineage provider's

AT = datetime(2026, 11, 23, tzinfo=UTC)


def assertions_of(*checks: Check) -> dict[str, bool]:
    from dogana_provider.lineage.openlineage import assertions

    contract = Contract("orders", ("id",), {"full": Shape.complete()}, types={"id": "int"})
    receipt = Gate.evaluate(
        Ledger.new(contract),
        contract.manifest("full", AT, rows=1),
        [Check("rows", True, "1 live row"), *checks],
        now=AT + timedelta(hours=1),
    )
    return {a.assertion: a.success for a in assertions(receipt).assertions}


def test_a_warned_violation_is_no_successful_assertion() -> None:
    found = assertions_of(
        Check("amount.min", True, "violated (warn): min -5 (geq_to 0), 1 row"),
        Check("name.null_check", True, "met: null count 0 (equal_to 0)"),
    )
    assert found["amount.min"] is False
    assert found["name.null_check"] is True
    assert found["rows"] is True


def test_none_declared_asserts_nothing() -> None:
    assert "expectations" not in assertions_of(Check("expectations", True, "none_declared"))


def test_a_column_expectations_assertion_names_its_column() -> None:
    from dogana_provider.lineage.openlineage import assertions

    contract = Contract("orders", ("id",), {"full": Shape.complete()}, types={"id": "int"})
    receipt = Gate.evaluate(
        Ledger.new(contract),
        contract.manifest("full", AT, rows=1),
        [
            Check("rows", True, "1 live row"),
            Check("amount.min", True, "met: min 5 (geq_to 0)"),
            Check("positive", True, "met: no row violates it"),
        ],
        now=AT + timedelta(hours=1),
    )
    columns = {a.assertion: a.column for a in assertions(receipt).assertions}
    assert columns["amount.min"] == "amount"
    assert columns["positive"] is None  # a table check: on no one column
    assert columns["rows"] is None  # a receiver check, not an expectation
