"""`dogana sweep` on a live SQLite receiver, read by URL as a person at a terminal would."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cli_fixtures import ORDERS, PRODUCED, dogana, honest, write

from dogana_provider.dialects import SQLITE
from dogana_provider.receiver.receiver import Receiver

pytestmark = pytest.mark.airflow  # the command opens the receiver through DoganaHook


def test_sweep_drops_what_nothing_will_use_and_keeps_what_may_be_published(
    tmp_path: Path,
) -> None:
    """A decision staged two days ago and never published is swept; one staged now is kept,
    unless --older-than says it is old too."""
    path = tmp_path / "warehouse.sqlite"

    def receiver(age: timedelta) -> Receiver:
        return Receiver(
            lambda: sqlite3.connect(path), SQLITE, clock=lambda: datetime.now(UTC) - age
        )

    receiver(timedelta(0)).register(ORDERS)
    file = write(tmp_path / "orders.parquet", honest())
    old = receiver(timedelta(days=2)).decide(file, ORDERS.manifest("nightly", PRODUCED, rows=3))
    later = PRODUCED + timedelta(hours=1)
    young = receiver(timedelta(0)).decide(file, ORDERS.manifest("nightly", later, rows=3))
    assert old.staged is not None and young.staged is not None

    swept = dogana("sweep", f"sqlite:///{path}", cwd=tmp_path)
    assert swept.code == 0, swept.err
    assert swept.out.splitlines() == [
        f"dropped {old.staged.table}",
        f"receiver sqlite:///{path}: 1 staging table swept",
    ]
    again = dogana("sweep", f"sqlite:///{path}", cwd=tmp_path)
    assert again.out.splitlines()[-1].endswith(": 0 staging tables swept")
    now = dogana("sweep", f"sqlite:///{path}", "--older-than", "0s", cwd=tmp_path)
    assert f"dropped {young.staged.table}" in now.out.splitlines()
