"""Declaring expectations: the vocabulary, its refusals, and how results read in a receipt.

Running them on staged rows is the receiver's, in the conformance suite on every database
(tests/receiver/receiver_conformance.py); here is what holds before any row is read.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dogana_core import Contract, Shape
from dogana_core.gate import Check, Gate
from dogana_core.ledger import Ledger
from dogana_provider.checks.expectations import (
    NONE_DECLARED,
    Bounds,
    ColumnCheck,
    ColumnExpectation,
    Consequence,
    Expectations,
    InvalidExpectation,
    Result,
    TableExpectation,
    checks_of,
    held,
    none_declared,
    reported,
)

DECLARED: dict[str, Any] = {
    "column_mapping": {
        "amount_cents": {
            "null_check": {"equal_to": 0, "on_violation": "block"},
            "min": {"geq_to": 0, "tolerance": 0.1, "on_violation": "warn"},
            "max": {"less_than": 10**9, "on_violation": "hold"},
        },
        "booked_on": {"max": {"leq_to": {"$date": "2026-12-31"}, "on_violation": "warn"}},
        "seen_at": {
            "min": {
                "greater_than": {"$datetime": "2026-01-01T00:00:00+00:00"},
                "on_violation": "warn",
            }
        },
        "name": {"distinct_check": {"geq_to": 1, "on_violation": "warn"}},
        "id": {"unique_check": {"equal_to": 0, "on_violation": "block"}},
    },
    "checks": {
        "positive": {"check_statement": "amount_cents >= 0", "on_violation": "warn"},
        "rows_near_last": {"row_count": {"tolerance": 0.5}, "on_violation": "block"},
    },
}


def test_expectations_round_trip_through_json() -> None:
    declared = Expectations.from_dict(DECLARED)
    assert Expectations.from_dict(declared.to_dict()) == declared
    assert declared.to_dict() == DECLARED
    assert declared.names[:2] == ("amount_cents.null_check", "amount_cents.min")


def test_column_checks_are_named_as_common_sql_names_them() -> None:
    expectation = ColumnExpectation("amount", ColumnCheck.MIN, Bounds(geq_to=0), Consequence.BLOCK)
    assert expectation.name == "amount.min"


def test_on_violation_is_required() -> None:
    spec = {"column_mapping": {"amount": {"min": {"geq_to": 0}}}}
    with pytest.raises(InvalidExpectation, match=r"amount\.min: on_violation is required"):
        Expectations.from_dict(spec)
    with pytest.raises(InvalidExpectation, match="on_violation is required"):
        TableExpectation("positive", "amount >= 0", None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "whose"),
    [
        ("manifest", "the spec's check"),
        ("together", "the spec's check"),
        ("rows", "the receiver's check (checks.CheckName.ROWS)"),
        ("key_unique", "the receiver's check (checks.CheckName.KEY_UNIQUE)"),
        (NONE_DECLARED, "the check saying no expectation is declared"),
        ("source_active", "the receiver's check of the table's activation"),
    ],
)
def test_expectation_names_colliding_with_check_names_are_refused(name: str, whose: str) -> None:
    spec = {"checks": {name: {"check_statement": "1 = 1", "on_violation": "warn"}}}
    with pytest.raises(InvalidExpectation) as refused:
        Expectations.from_dict(spec)
    assert f"expectation {name!r} collides with {whose} {name!r}" in str(refused.value)


@pytest.mark.parametrize(
    ("bounds", "rule"),
    [
        ({}, "give one or more of"),
        ({"equal_to": 0, "geq_to": 0}, "equal_to cannot be given with"),
        ({"greater_than": 1, "geq_to": 1}, "give one of greater_than or geq_to"),
        ({"less_than": 1, "leq_to": 1}, "give one of less_than or leq_to"),
        ({"greater_than": 5, "less_than": 5}, "the bounds admit no value"),
        ({"geq_to": 6, "leq_to": 5}, "the bounds admit no value"),
        ({"geq_to": 0, "leq_to": "z"}, "bounds of one check are of one type"),
        ({"geq_to": 0, "tolerance": -1}, "tolerance"),
        ({"geq_to": "a", "tolerance": 0.1}, "tolerance: widens numeric bounds only"),
        ({"geq_to": True}, "is not a number"),
        ({"geq_to": float("nan")}, "not a finite number"),
        ({"equal_to": 2**64, "tolerance": 0.5}, "outside the 64-bit integers"),
    ],
)
def test_bounds_are_refused_as_common_sql_refuses_them(bounds: dict[str, Any], rule: str) -> None:
    with pytest.raises(InvalidExpectation, match=rule):
        Bounds(**bounds)


def test_bounds_compare_as_common_sql_does() -> None:
    """tolerance widens a bound outward, also for a negative one (common-sql's _get_match)."""
    assert Bounds(equal_to=100, tolerance=0.1).admits(90)
    assert not Bounds(equal_to=100, tolerance=0.1).admits(89)
    assert Bounds(greater_than=-10, tolerance=0.5).admits(-14)
    assert not Bounds(greater_than=0).admits(0)
    assert Bounds(geq_to=0).admits(0)
    assert Bounds(leq_to=date(2026, 1, 2)).admits(date(2026, 1, 2))
    assert not Bounds(less_than=datetime(2026, 1, 1, tzinfo=UTC)).admits(
        datetime(2026, 1, 1, tzinfo=UTC)
    )


@pytest.mark.parametrize(
    ("statement", "rule"),
    [
        ("amount > 0; DROP TABLE orders", "holds ';'"),
        ("amount > 0 -- always", "holds a comment"),
        ("amount > 0 /* x */", "holds a comment"),
        ("amount > ?", "holds '?'"),
        ("amount > 0) OR (1 = 1", "closes a parenthesis"),
        ("(amount > 0", "leaves a parenthesis open"),
        ("name = 'it", "leaves a ' quote open"),
        ("   ", "is an SQL boolean expression"),
    ],
)
def test_a_check_statement_is_one_expression(statement: str, rule: str) -> None:
    with pytest.raises(InvalidExpectation, match=rule):
        TableExpectation("t", statement, Consequence.WARN)


def test_a_check_statement_may_quote_what_it_refuses_elsewhere() -> None:
    TableExpectation("t", "name <> 'a;b -- (?' AND \"odd)\" > 0", Consequence.WARN)


def test_partition_clause_is_refused_rather_than_ignored() -> None:
    spec = {"column_mapping": {"a": {"min": {"geq_to": 0, "partition_clause": "b > 0"}}}}
    with pytest.raises(InvalidExpectation, match="partition_clause: not supported"):
        Expectations.from_dict(spec)


def test_row_count_takes_tolerance_only() -> None:
    spec = {"checks": {"r": {"row_count": {"geq_to": 10}, "on_violation": "warn"}}}
    with pytest.raises(InvalidExpectation, match="takes tolerance only"):
        Expectations.from_dict(spec)


def test_an_expectation_declared_twice_is_refused() -> None:
    one = TableExpectation("t", "a > 0", Consequence.WARN)
    with pytest.raises(InvalidExpectation, match="t: declared twice"):
        Expectations((one, one))


def result(consequence: Consequence, *, violated: bool = True) -> Result:
    return Result(
        TableExpectation("positive", "a >= 0", consequence), violated, "3 live rows", rows=3
    )


def test_a_violated_block_fails_its_check() -> None:
    assert result(Consequence.BLOCK).check() == Check(
        "positive", False, "violated (block): 3 live rows, 3 rows"
    )


def test_a_violated_warn_passes_with_a_detail_starting_with_its_verdict() -> None:
    check = result(Consequence.WARN).check()
    assert check.passed and check.detail.startswith("violated (warn): ")


def test_a_violated_hold_fails_unless_held() -> None:
    assert not result(Consequence.HOLD).check().passed
    assert result(Consequence.HOLD).check(held=True).passed


def test_none_declared_is_one_check_saying_so() -> None:
    assert checks_of([]) == [none_declared()] == [Check("expectations", True, "none_declared")]


def test_an_expectation_that_could_not_run_is_a_violation() -> None:
    failed = Result(TableExpectation("t", "a > 0", Consequence.WARN), True, error="no column a")
    assert failed.detail == "violated (warn): could not run: no column a"


def test_a_delivery_is_held_only_when_holds_alone_failed() -> None:
    hold, block = result(Consequence.HOLD), result(Consequence.BLOCK)
    assert held([hold], ["positive"])
    assert not held([hold], ["positive", "rows"])  # a protocol check failed too
    assert not held([block], ["positive"])
    assert not held([result(Consequence.HOLD, violated=False)], [])


JSONISH = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from(["block", "hold", "warn", "min", "null_check", "equal_to", "rows"]),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "column_mapping",
                    "checks",
                    "amount",
                    "min",
                    "max",
                    "null_check",
                    "unique_check",
                    "equal_to",
                    "geq_to",
                    "less_than",
                    "tolerance",
                    "on_violation",
                    "check_statement",
                    "row_count",
                    "$date",
                    "rows",
                ]
            )
            | st.text(max_size=6),
            children,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(JSONISH)
def test_bad_input_is_a_named_error_or_an_acceptance(data: Any) -> None:
    """Whatever a contract file holds, reading it gives Expectations that round-trip, or an
    InvalidExpectation naming what is wrong; never another exception."""
    try:
        declared = Expectations.from_dict(data)
    except InvalidExpectation as exc:
        assert str(exc)
        return
    assert Expectations.from_dict(declared.to_dict()) == declared


def test_a_receipt_reports_as_expectations_only_checks_with_their_verdicts() -> None:
    """A receiver check that is not an expectation (its detail starts with no verdict) is never
    reported as one, met or violated."""
    contract = Contract("orders", ("id",), {"full": Shape.complete()}, types={"id": "int"})
    at = datetime(2026, 11, 23, tzinfo=UTC)
    receipt = Gate.evaluate(
        Ledger.new(contract),
        contract.manifest("full", at, rows=1),
        [
            Check("some_receiver_check", True, "what it checked"),
            Check("amount.min", True, "violated (warn): min -5 (geq_to 0), 1 row"),
        ],
        now=at + timedelta(hours=1),
    )
    found = reported(receipt)
    assert [c.name for c in found.checks] == ["amount.min"]
    assert found.short == "0 met, 1 violated (warn)"
