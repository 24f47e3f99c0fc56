"""The dogana page shows, beside each table's claims, what the receiver's two gates hold back,
as `dogana status` does: the table's activation, marking a table the receiver will not publish
with why, and each delivery held for a person, titled with the command that shows its violating
rows. The HTML is the page module's on a real SQLite receiver's status; the browser test
(test_ui_page.py) shows the page as served."""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime, timedelta
from html import escape
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dogana_core import Contract, Shape
from dogana_provider.checks.expectations import Expectations
from dogana_provider.ui import page
from dogana_provider.ui.page import when

pytestmark = pytest.mark.airflow  # DoganaHook reads its connection through Airflow

HOLD = {"checks": {"no_bad_names": {"check_statement": "name <> 'bad'", "on_violation": "hold"}}}


def contract(table: str) -> Contract:
    return Contract(table, ("id",), {"full": Shape.complete()}, types={"id": "int"})


@pytest.fixture
def receiver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A SQLite receiver behind an Airflow connection of the test's own (its id: conn_id)."""
    from dogana_provider.hooks.dogana import DoganaHook

    conn_id = f"receiver_{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{conn_id.upper()}", f'{{"conn_type": "sqlite", "host": "{tmp_path}/r.db"}}'
    )
    return DoganaHook(conn_id)


def section(hook: Any) -> tuple[Any, str]:
    """The receiver's status now, and the page's section of it."""
    from dogana_provider.report.status import read_status

    status = read_status(hook, datetime.now(UTC) + timedelta(seconds=1), name=hook.receiver_conn_id)
    links = {(hook.receiver_conn_id, t.table): page.Links("receipts", None) for t in status.tables}
    return status, page.receiver_section(status, links)


def test_the_page_shows_each_tables_activation_and_why_one_is_not_published(receiver: Any) -> None:
    for table in ("orders", "payments"):
        receiver.receiver.register(contract(table))
    receiver.receiver.sources.require(True, by="Ada Steward")
    receiver.receiver.sources.activate(
        "payments",
        owner="Bea Owner",
        authorized_by="Carla Grantor",
        expires_at=datetime(2099, 1, 1, tzinfo=UTC),
        licence="internal-use-only",
        purposes=["billing"],
        provenance="nightly read",
        by="Ada Steward",
    )
    status, html = section(receiver)
    assert "<th>activation</th>" in html
    assert "<td>active until 2099-01-01 00:00:00</td>" in html
    pending = next(t for t in status.tables if t.table == "orders").activation
    assert f"<span class='failed' title='{escape(pending.detail())}'>pending</span>" in html


def test_the_page_shows_each_held_delivery_with_the_command_that_shows_it(
    receiver: Any, tmp_path: Path
) -> None:
    orders = contract("orders")
    receiver.receiver.register(orders, Expectations.from_dict(HOLD))
    receiver.receiver.register(contract("payments"))
    path = tmp_path / "orders.parquet"
    pq.write_table(pa.table({"id": [1, 2], "name": ["good", "bad"]}), path)
    produced = datetime.now(UTC) - timedelta(minutes=1)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    decision = receiver.receiver.decide(
        path, orders.manifest("full", produced, rows=2, content_hash=digest)
    )
    assert decision.hold == "orders-1", decision.receipt.failed

    status, html = section(receiver)
    assert "<th>held</th>" in html
    (hold,) = next(t for t in status.tables if t.table == "orders").held
    shown = f"orders-1 since {when(hold.held_at)}"
    title = escape(f"dogana hold show {receiver.receiver_conn_id} orders-1")
    assert f"<span class='failed' title='{title}'>{escape(shown)}</span>" in html
    payments = html.split(">payments</a>", 1)[1].split("</tr>", 1)[0]
    assert "<td>-</td><td><a href='receipts'>" in payments  # nothing held: a dash
