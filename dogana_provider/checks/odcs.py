"""ODCS v3 quality rules to dogana's expectations: what maps, and a refusal naming what does not.

An ODCS data contract states quality rules beside the columns (``quality`` of a schema object or
of one of its properties). Those a receiver can run on a delivery's rows become expectations
(expectations.py), read by contract_files.py:

    a property's rule, metric nullValues       the column's null_check
    (or missingValues whose only missing value is null)
    a property's rule, metric duplicateValues  the column's unique_check
    thresholds                                 mustBe -> equal_to, mustBeGreaterThan ->
                                               greater_than, mustBeGreaterOrEqualTo -> geq_to,
                                               mustBeLessThan -> less_than,
                                               mustBeLessOrEqualTo -> leq_to,
                                               mustBeBetween [a, b] -> geq_to a and leq_to b
    the rule's customProperties doganaOnViolation   on_violation: block, hold or warn (required;
                                               ODCS's severity is free text, no consequence)
    a schema object's customProperties doganaExpectations   dogana's own form (column_mapping,
                                               checks), for what ODCS cannot say: a
                                               check_statement, a row count near the last one

A text rule describes and declares nothing a receiver runs: it is passed over. Anything else is
refused with its field and the reason: an sql rule (its query reads the whole published table,
not a delivery), a custom engine's rule, rowCount (bounds fixed in a file; use row_count or a
check_statement), invalidValues, a percent unit, mustNotBe and mustNotBeBetween.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dogana_core.errors import InvalidContract
from dogana_core.odcs import custom_properties
from dogana_provider.checks.expectations import (
    Bounds,
    ColumnCheck,
    ColumnExpectation,
    Expectation,
    Expectations,
    InvalidExpectation,
)

METRICS = {"nullValues": ColumnCheck.NULL_CHECK, "duplicateValues": ColumnCheck.UNIQUE_CHECK}
THRESHOLDS = {
    "mustBe": "equal_to",
    "mustBeGreaterThan": "greater_than",
    "mustBeGreaterOrEqualTo": "geq_to",
    "mustBeLessThan": "less_than",
    "mustBeLessOrEqualTo": "leq_to",
}
ON_VIOLATION = "doganaOnViolation"
OWN_FORM = "doganaExpectations"


def odcs_expectations(document: Mapping[str, Any]) -> dict[str, Expectations]:
    """Each table's expectations from an ODCS v3 document (validated already), by table; a table
    declaring none is left out. InvalidContract names the field and the rule of a refusal."""
    found: dict[str, Expectations] = {}
    for index, item in enumerate(document.get("schema") or []):
        where = f"schema[{index}]"
        table = item.get("physicalName") or item.get("name")
        items: list[Expectation] = []
        for number, rule in enumerate(item.get("quality") or []):
            _table_rule(rule, f"{where}.quality[{number}]")
        for number, prop in enumerate(item.get("properties") or []):
            for rank, rule in enumerate(prop.get("quality") or []):
                mapped = _column_rule(
                    prop["name"], rule, f"{where}.properties[{number}].quality[{rank}]"
                )
                if mapped is not None:
                    items.append(mapped)
        own = custom_properties(item, f"{where}.").get(OWN_FORM)
        if own is not None:
            items.extend(Expectations.from_dict(own, f"{where}.customProperties.{OWN_FORM}").items)
        try:
            declared = Expectations(tuple(items))
        except InvalidExpectation as exc:
            raise InvalidContract(f"{where}: {exc}") from None
        if declared:
            found[table] = declared
    return found


def _table_rule(rule: Mapping[str, Any], where: str) -> None:
    kind = _kind(rule)
    if kind == "text":
        return
    if kind == "library":
        raise InvalidContract(
            f"{where}: metric {_metric(rule)!r} on a table cannot be mapped: its bounds are fixed "
            f"in the file; declare a row_count near the last delivery or a check_statement in "
            f"customProperties {OWN_FORM}"
        )
    raise InvalidContract(f"{where}: {_unmapped(kind)}")


def _column_rule(column: str, rule: Mapping[str, Any], where: str) -> Expectation | None:
    kind = _kind(rule)
    if kind == "text":
        return None
    if kind != "library":
        raise InvalidContract(f"{where}: {_unmapped(kind)}")
    metric = _metric(rule)
    check = METRICS.get(str(metric))
    arguments = rule.get("arguments") or {}
    if metric == "missingValues" and list(arguments.get("missingValues") or [None]) == [None]:
        check = ColumnCheck.NULL_CHECK
    if check is None:
        raise InvalidContract(
            f"{where}: metric {metric!r} cannot be mapped: dogana runs nullValues (or "
            "missingValues of null only) and duplicateValues on a column"
        )
    if rule.get("unit") not in (None, "rows"):
        raise InvalidContract(f"{where}.unit: {rule.get('unit')!r} cannot be mapped: rows only")
    for refused in ("mustNotBe", "mustNotBeBetween"):
        if rule.get(refused) is not None:
            raise InvalidContract(f"{where}.{refused}: cannot be mapped: no comparison excludes")
    bounds = {THRESHOLDS[k]: v for k, v in rule.items() if k in THRESHOLDS and v is not None}
    between = rule.get("mustBeBetween")
    if between is not None:
        bounds.update(geq_to=between[0], leq_to=between[1])
    on_violation = custom_properties(rule, f"{where}.").get(ON_VIOLATION)
    if on_violation is None:
        raise InvalidContract(
            f"{where}.customProperties: {ON_VIOLATION} is required (block, hold or warn): an "
            "undeclared consequence must never read as passed"
        )
    try:
        return ColumnExpectation(column, check, Bounds(**bounds), on_violation)
    except InvalidExpectation as exc:
        raise InvalidContract(f"{where}: {exc}") from None


def _kind(rule: Mapping[str, Any]) -> str:
    kind = rule.get("type")
    if kind is None:
        return "library" if _metric(rule) is not None else "text"
    return str(kind)


def _metric(rule: Mapping[str, Any]) -> Any:
    return rule.get("metric") or rule.get("rule")


def _unmapped(kind: str) -> str:
    if kind == "sql":
        return (
            "an sql rule cannot be mapped: its query reads the whole published table, not a "
            f"delivery; declare a check_statement in customProperties {OWN_FORM}"
        )
    return f"a {kind} rule cannot be mapped: dogana runs library rules (nullValues, ...)"
