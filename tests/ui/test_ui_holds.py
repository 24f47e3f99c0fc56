"""The dogana page shows each delivery held for a person beside its table's claims, as `dogana
status` does, titled with the command that shows its violating rows. The HTML is the page
module's on a real SQLite receiver's status, holding a delivery its expectation held."""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime, timedelta
from html import escape
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dogana_core import Contract, Shape
from dogana_provider.expectations import Expectations
from dogana_provider.ui import page
from dogana_provider.ui.page import when

pytestmark = pytest.mark.airflow  # DoganaHook reads its connection through Airflow

HOLD = {"checks": {"no_bad_names": {"check_statement": "name <> 'bad'", "on_violation": "hold"}}}


def test_the_page_shows_each_held_delivery_with_the_command_that_shows_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dogana_provider.hooks.dogana import DoganaHook
    from dogana_provider.status import read_status

    conn_id = f"receiver_{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{conn_id.upper()}", f'{{"conn_type": "sqlite", "host": "{tmp_path}/r.db"}}'
    )
    hook = DoganaHook(conn_id)
    orders = Contract("orders", ("id",), {"full": Shape.complete()}, types={"id": "int"})
    hook.receiver.register(orders, Expectations.from_dict(HOLD))
    hook.receiver.register(
        Contract("payments", ("id",), {"full": Shape.complete()}, types={"id": "int"})
    )
    path = tmp_path / "orders.parquet"
    pq.write_table(pa.table({"id": [1, 2], "name": ["good", "bad"]}), path)
    produced = datetime.now(UTC) - timedelta(minutes=1)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    decision = hook.receiver.decide(
        path, orders.manifest("full", produced, rows=2, content_hash=digest)
    )
    assert decision.hold == "orders-1", decision.receipt.failed

    status = read_status(hook, datetime.now(UTC) + timedelta(seconds=1), name=conn_id)
    links = {(conn_id, t.table): page.Links("receipts", None) for t in status.tables}
    html = page.receiver_section(status, links)
    assert "<th>held</th>" in html
    (hold,) = next(t for t in status.tables if t.table == "orders").held
    shown = f"orders-1 since {when(hold.held_at)}"
    title = escape(f"dogana hold show {conn_id} orders-1")
    assert f"<span class='failed' title='{title}'>{escape(shown)}</span>" in html
    payments = html.split(">payments</a>", 1)[1].split("</tr>", 1)[0]
    assert "<td>-</td><td><a href='receipts'>" in payments  # nothing held: a dash
