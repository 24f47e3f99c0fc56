"""What `dogana status` and the freshness report say of quality expectations: each violation of
the last publication with its detail, or none_declared, never a pass.

A SQLite receiver holds two tables: orders, whose warned expectation was violated by the
delivery published, and customers, declaring none.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_fixtures import dogana

from dogana_core import Contract, Shape
from dogana_core.gate import Receipt
from dogana_provider.checks.expectations import Expectations
from dogana_provider.dialects import SQLITE
from dogana_provider.receiver import Receiver

AT = datetime(2026, 11, 23, 2, tzinfo=UTC)
DETAIL = "violated (warn): min -5 (geq_to 0), 1 row"


def contract(table: str) -> Contract:
    return Contract(table, ("id",), {"full": Shape.complete()}, types={"id": "int"})


@pytest.fixture(scope="module")
def receiver(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Receipt]]:
    folder = tmp_path_factory.mktemp("status-expectations")
    path = folder / "warehouse.db"
    receiver = Receiver(lambda: sqlite3.connect(path), SQLITE, clock=lambda: AT + timedelta(1))
    minimum = {"column_mapping": {"amount": {"min": {"geq_to": 0, "on_violation": "warn"}}}}
    receiver.register(contract("orders"), Expectations.from_dict(minimum))
    receiver.register(contract("customers"))
    receipts = {}
    for table in ("orders", "customers"):
        file = folder / f"{table}.parquet"
        pq.write_table(pa.table({"id": [1, 2], "amount": [10, -5]}), file)
        receipts[table] = receiver.receive(file, contract(table).manifest("full", AT, rows=2))
    return path, receipts


def test_status_states_each_violation_of_the_last_publication(
    receiver: tuple[Path, dict[str, Receipt]], tmp_path: Path
) -> None:
    path, _ = receiver
    result = dogana("status", f"sqlite:///{path}", cwd=tmp_path)
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    (orders,) = [line for line in lines if line.startswith("orders ")]
    (customers,) = [line for line in lines if line.startswith("customers ")]
    assert "0 met, 1 violated (warn)" in orders
    assert "none_declared" in customers
    assert f"  orders: amount.min {DETAIL}" in lines


def test_status_of_one_table_names_its_expectations_and_their_results(
    receiver: tuple[Path, dict[str, Receipt]], tmp_path: Path
) -> None:
    path, _ = receiver
    result = dogana("status", f"sqlite:///{path}", "--table", "orders", cwd=tmp_path)
    assert result.code == 0, result.err
    assert "  expectations     amount.min" in result.out
    assert f"    amount.min {DETAIL}" in result.out
    plain = dogana("status", f"sqlite:///{path}", "--table", "customers", "--json", cwd=tmp_path)
    (table,) = json.loads(plain.out)["tables"]
    assert table["expectations"] == {
        "declared": "none_declared",
        "last_publication": "none_declared",
    }


def test_the_freshness_report_states_each_violation_or_none_declared(
    receiver: tuple[Path, dict[str, Receipt]],
) -> None:
    from dogana_provider.operators.freshness import freshness_report, judge

    path, receipts = receiver
    receiving = Receiver(lambda: sqlite3.connect(path), SQLITE)
    now = AT + timedelta(hours=1)
    results = [
        judge(
            table,
            receiving.ledger(table),
            now,
            warn_after=None,
            error_after=timedelta(days=1),
            last=receipts[table],
        )
        for table in ("orders", "customers")
    ]
    report = freshness_report(results, now, "warehouse")
    assert f"  VIOLATED orders: amount.min {DETAIL}" in report.splitlines()
    assert results[0].to_dict()["expectations"] == f"0 met; amount.min {DETAIL}"
    assert results[1].to_dict()["expectations"] == "none_declared"
