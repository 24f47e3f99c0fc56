"""The rules of receiver/activation.py on their own: who counts as a named person, and the name
of the check that carries a table's activation. How a receiver applies them is the conformance
suite's (tests/receiver/activation_conformance.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from dogana_core.gate import RESERVED_CHECKS, Check, Gate
from dogana_core.ledger import Ledger
from dogana_provider.checks.expectations import reported
from dogana_provider.checks.rows import CheckName
from dogana_provider.receiver.activation import SOURCE_ACTIVE, not_a_person, same_person

ACCOUNTS = (
    "svc_loader", "SVC_x", "svc-orders", "svcorders", "Svc.Crm", "System ", "SYSTEM", "system2",
    "automation", "data-automation", "Automation Bot", "airflow", "root", "admin", "orders_bot",
    "service-account", "crm-daemon", "svc-a@corp.example", "  svc_x  ",
    "\uff53\uff56\uff43_wide",  # svc in fullwidth letters, which NFKC folds to svc
)  # fmt: skip
PEOPLE = (
    "Carla Grantor", "José Álvarez", "c.grantor@corp.example", "Robotham", "Systema Ng",
    "Botha", "Adminah Diallo", "Li Wei", "Ozan", "Dr. Katherine Johnson",
)  # fmt: skip


@pytest.mark.parametrize("name", ACCOUNTS)
def test_an_account_is_not_a_named_person(name: str) -> None:
    reason = not_a_person(name)
    assert reason is not None and "is an account" in reason


@pytest.mark.parametrize("name", PEOPLE)
def test_a_named_person_is_one(name: str) -> None:
    assert not_a_person(name) is None


@pytest.mark.parametrize("name", [None, "", "   ", "1234", "--"])
def test_no_name_names_no_person(name: str | None) -> None:
    assert not_a_person(name) is not None


def test_two_names_are_one_person_but_for_letter_case_and_blanks() -> None:
    assert same_person("Ada Steward", "  ada   STEWARD ")
    assert not same_person("Ada Steward", "Ada Stewart")
    assert not same_person("", "")


def test_the_activation_check_is_named_apart_from_the_spec_and_the_row_checks() -> None:
    assert SOURCE_ACTIVE not in RESERVED_CHECKS
    assert SOURCE_ACTIVE not in {str(name) for name in CheckName}


def test_the_activation_check_is_never_reported_as_an_expectation() -> None:
    from dogana_core import Contract, Shape

    contract = Contract("t", ("id",), {"full": Shape.complete()}, types={"id": "int"})
    at = datetime(2026, 11, 1, tzinfo=UTC)
    for passed in (True, False):
        receipt = Gate.evaluate(
            Ledger.new(contract),
            contract.manifest("full", at, rows=1),
            [Check(SOURCE_ACTIVE, passed, "table t ...")],
            now=at,
        )
        assert not reported(receipt).declared
