"""The dogana page shows each table's activation beside its claims, as `dogana status` does, and
marks a table the receiver will not publish, with why. The HTML is the page module's on a real
SQLite receiver's status; the browser test (test_ui_page.py) shows the page as served."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from html import escape
from pathlib import Path

import pytest

from dogana_core import Contract, Shape
from dogana_provider.ui import page

pytestmark = pytest.mark.airflow  # DoganaHook reads its connection through Airflow


def test_the_page_shows_each_tables_activation_and_why_one_is_not_published(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dogana_provider.hooks.dogana import DoganaHook
    from dogana_provider.status import read_status

    conn_id = f"receiver_{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{conn_id.upper()}", f'{{"conn_type": "sqlite", "host": "{tmp_path}/r.db"}}'
    )
    hook = DoganaHook(conn_id)
    for table in ("orders", "payments"):
        hook.receiver.register(
            Contract(table, ("id",), {"full": Shape.complete()}, types={"id": "int"})
        )
    hook.receiver.sources.require(True, by="Ada Steward")
    hook.receiver.sources.activate(
        "payments",
        owner="Bea Owner",
        authorized_by="Carla Grantor",
        expires_at=datetime(2099, 1, 1, tzinfo=UTC),
        licence="internal-use-only",
        purposes=["billing"],
        provenance="nightly read",
        by="Ada Steward",
    )
    status = read_status(hook, datetime.now(UTC) + timedelta(seconds=1), name=conn_id)
    links = {(conn_id, t.table): page.Links("receipts", None) for t in status.tables}
    html = page.receiver_section(status, links)
    assert "<th>activation</th>" in html
    assert "<td>active until 2099-01-01 00:00:00</td>" in html
    pending = next(t for t in status.tables if t.table == "orders").activation
    assert f"<span class='failed' title='{escape(pending.detail())}'>pending</span>" in html
