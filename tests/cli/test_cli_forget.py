"""`dogana forget`: a table a mistake registered and that never published goes, with its rejected
receipts, in one transaction; a table that has published is refused and kept as it was. On a
SQLite file and a PostgreSQL schema, read by URL as a person at a terminal would."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from cli_fixtures import dogana
from several_tables import Live, filled_receiver  # puts tests/receiver on the path

from receiver_deliveries import LogSource, at  # isort: skip

from dogana_core.gate import Outcome
from dogana_provider.receiver.receiver import UnknownTable

pytestmark = pytest.mark.airflow  # the command opens the receiver through DoganaHook


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def live(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Live]:
    server = None if request.param == "sqlite" else request.getfixturevalue("postgres_url")
    with filled_receiver(request.param, tmp_path, server) as found:
        yield found


def misspelt(live: Live, directory: Path) -> None:
    """A table registered under a misspelt name, whose one delivery was rejected."""
    custommers = LogSource("custommers", directory)
    live.receiver.register(custommers.contract)
    custommers.put(1, "one")
    path, manifest = custommers.full(at(1))
    refused = live.receiver.receive(path, replace(manifest, rows=manifest.rows + 1))
    assert refused.outcome is Outcome.REJECTED


def test_forget_removes_a_table_that_never_published_with_its_rejected_receipts(
    live: Live, tmp_path: Path
) -> None:
    misspelt(live, tmp_path)
    kept = {table: live.receiver.receipts(table) for table in live.filled.tables}
    result = dogana("forget", live.url, "custommers", cwd=tmp_path)
    assert result.code == 0, result.err
    assert result.out.splitlines()[-1].endswith(
        ": table custommers forgotten, with its 1 rejected receipt"
    )
    assert live.receiver.receipts("custommers") == []
    with pytest.raises(UnknownTable):
        live.receiver.ledger("custommers")
    status = dogana("status", live.url, cwd=tmp_path)
    assert status.code == 0, status.err
    assert "custommers" not in status.out
    assert {table: live.receiver.receipts(table) for table in live.filled.tables} == kept
    again = dogana("forget", live.url, "custommers", cwd=tmp_path)
    assert again.code == 1 and "custommers" in again.err, again.err


def test_forget_refuses_a_table_that_has_published_and_changes_nothing(
    live: Live, tmp_path: Path
) -> None:
    before = live.receiver.receipts("orders"), live.receiver.ledger("orders")
    result = dogana("forget", live.url, "orders", cwd=tmp_path)
    assert result.code == 1, result.out + result.err
    assert "table 'orders' has published (last publication " in result.err
    assert "never forgotten" in result.err
    assert (live.receiver.receipts("orders"), live.receiver.ledger("orders")) == before
