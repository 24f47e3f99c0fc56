"""The conformance suite is a plain function: a connector that keeps the contract passes every
check, and one that breaks a rule fails the check named after that rule, never skips it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from jsonl_files import config, order, write

from dogana_core.shape import Shape
from dogana_core.values import Position
from dogana_provider.connectors import JsonLinesConnector
from dogana_provider.connectors.conformance import conformance
from dogana_provider.connectors.contract import Proof, Reading
from dogana_provider.connectors.jsonl import JsonLinesReading


@pytest.fixture
def orders(tmp_path: Path) -> Path:
    return write(tmp_path / "orders.jsonl", [order(n) for n in range(1, 8)])


def test_a_jsonl_file_passes_every_check(orders: Path) -> None:
    report = conformance(JsonLinesConnector(config(orders, whole_history=True)))
    assert report.failed == ()
    assert report.stream == "orders" and len(report.checks) == 17


class IgnoresItsLimit(JsonLinesConnector):
    """Broken on purpose: reads everything whatever the limit."""

    def read(self, stream: str, *, since: Position | None = None, limit: int | None = None):
        return super().read(stream, since=since)


class RestartsWhenResumed(JsonLinesConnector):
    """Broken on purpose, as the peer's API connector was: a resume starts from the beginning."""

    def resume(self, stream: str, position: Position, *, limit: int | None = None) -> Reading:
        return self.read(stream, limit=limit)


class Overclaiming(JsonLinesReading):
    def proof(self) -> Proof:
        return replace(super().proof(), shape=Shape.complete())


class ClaimsCompleteAlways(JsonLinesConnector):
    """Broken on purpose: every read, one stopped by its limit too, claims the whole table."""

    def read(self, stream: str, *, since: Position | None = None, limit: int | None = None):
        reading = super().read(stream, since=since, limit=limit)
        reading.__class__ = Overclaiming
        return reading


def test_a_connector_ignoring_its_limit_fails_read_honours_limit(orders: Path) -> None:
    report = conformance(IgnoresItsLimit(config(orders, whole_history=True)))
    assert "read_honours_limit" in report.failed
    assert "read(limit=0) gave 7 rows" in report.check("read_honours_limit").detail


def test_a_connector_restarting_on_resume_fails_the_resume_checks(orders: Path) -> None:
    report = conformance(RestartsWhenResumed(config(orders, whole_history=True)))
    assert set(report.failed) == {"checkpoint_resume_exact", "resume_at_the_end_reads_nothing"}
    assert "it restarted" in report.check("resume_at_the_end_reads_nothing").detail


def test_a_check_that_raises_fails_naming_what_it_raised(tmp_path: Path) -> None:
    missing = JsonLinesConnector(config(tmp_path / "gone.jsonl"))
    report = conformance(missing, stream="gone")
    assert not report.passed
    assert "health_reports" in report.failed
    assert "FileNotFoundError" in report.check("read_yields_arrow_batches").detail


def test_too_few_rows_fail_rather_than_skip(tmp_path: Path) -> None:
    short = write(tmp_path / "short.jsonl", [order(1)])
    report = conformance(JsonLinesConnector(config(short, whole_history=True)))
    assert "read_yields_arrow_batches" in report.failed
    assert "no skip" in report.check("read_yields_arrow_batches").detail
    assert {check.passed for check in report.checks} == {True, False}


def test_a_limited_read_claiming_the_whole_table_fails_limited_read_claims_no_more(
    orders: Path,
) -> None:
    report = conformance(ClaimsCompleteAlways(config(orders, whole_history=True)))
    assert report.failed == ("limited_read_claims_no_more",)


def test_extract_reads_a_database_or_a_connector_never_both(orders: Path) -> None:
    from dogana_provider.operators.extract import ExtractOperator

    connector = {"kind": "jsonl", "path": str(orders)}
    for both_or_neither in ({"source_conn_id": "shop_db", "connector": connector}, {}):
        with pytest.raises(ValueError, match="either source_conn_id or connector"):
            ExtractOperator(task_id="extract", contract="c.json", **both_or_neither)
