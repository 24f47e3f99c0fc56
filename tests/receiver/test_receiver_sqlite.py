"""The conformance suite on SQLite: a database file per test, no server."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import ClassVar
from urllib.parse import quote

import pyarrow as pa
import pytest
from receiver_conformance import Connect, ReceiverConformance, a_hook_selects_the_database
from receiver_deliveries import Source, at

from dogana_core.gate import Outcome
from dogana_provider.dialects import SQLITE


class TestSQLite(ReceiverConformance):
    driver_error = sqlite3.Error
    dialect = SQLITE
    unstorable: ClassVar[dict[str, pa.Array]] = {
        "NaN, which SQLite stores as NULL": pa.array([float("nan")])
    }

    @pytest.fixture
    def connect(self, tmp_path: Path) -> Connect:
        path = tmp_path / "receiver.sqlite"
        # timeout: a second writer waits for BEGIN IMMEDIATE's lock instead of failing at once.
        return lambda: sqlite3.connect(path, timeout=30)


def test_a_full_disk_mid_publish_changes_nothing_and_the_staged_rows_wait(tmp_path: Path) -> None:
    """SQLITE_FULL for real: the database may not grow past max_page_count while publishing.

    The INSERT into the published table runs out of pages half way; the transaction rolls back,
    so rows, ledger and receipts are as they were, no receipt claims the publication, and the
    staging table survives for a retry that succeeds once the database may grow again.
    """
    path = tmp_path / "full.sqlite"
    suite = TestSQLite()
    receiver = suite.make(lambda: sqlite3.connect(path, timeout=30), "full")
    source = Source("orders_full", tmp_path)
    receiver.register(source.contract)
    source.put(1, 1, "one", at(1))
    suite.publish_checked(receiver, source, source.full(at(2)))
    before = suite.state(receiver, source.table)
    for id_ in range(2, 5002):
        source.put(id_, id_ % 30, "x" * 200 + str(id_), at(3))
    decision = receiver.decide(*source.changes(at(2), at(4)))
    assert decision.to_publish, decision.receipt.failed
    with sqlite3.connect(path) as probe:
        (pages,) = probe.execute("PRAGMA page_count").fetchone()

    def capped() -> sqlite3.Connection:
        connection = sqlite3.connect(path, timeout=30)
        connection.execute(f"PRAGMA max_page_count = {int(pages) + 8}")
        return connection

    with pytest.raises(sqlite3.OperationalError, match="database or disk is full"):
        suite.make(capped, "full").publish(decision)
    assert suite.state(receiver, source.table) == before
    receiver.verify(source.table)
    assert len(suite.staging_left(receiver, decision.receipt.manifest)) == 1
    receipt = receiver.publish(decision)
    assert receipt.outcome is Outcome.ACCEPTED
    assert suite.published(receiver, source.table) == source.expected()
    assert receiver.verify(source.table).publications == 2
    assert suite.staging_left(receiver, decision.receipt.manifest) == []


@pytest.mark.parametrize("trigger", [False, True])
def test_changed_rows_are_updated_in_place_unless_a_trigger_watches_the_table(
    tmp_path: Path, trigger: bool
) -> None:
    """A changes delivery updates the published rows whose key it carries (the key index left
    alone) and inserts the others; a table a trigger watches keeps DELETE and INSERT, which the
    trigger sees as before. Either way the published rows are the source's."""
    path = tmp_path / "inplace.sqlite"
    suite = TestSQLite()
    receiver = suite.make(lambda: sqlite3.connect(path, timeout=30), "inplace")
    source = Source("orders_inplace", tmp_path)
    receiver.register(source.contract)
    for id_ in range(1, 4):
        source.put(id_, id_, f"n{id_}", at(1))
    suite.publish_checked(receiver, source, source.full(at(2)))
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE seen (what TEXT)")
        if trigger:
            connection.execute(
                f"CREATE TRIGGER gone AFTER DELETE ON {source.table} "
                "BEGIN INSERT INTO seen VALUES ('deleted ' || old.id); END"
            )
        rowids = dict(connection.execute(f"SELECT id, rowid FROM {source.table}").fetchall())
    source.put(2, 2, "changed", at(3))
    source.put(9, 9, "new", at(3))
    suite.publish_checked(receiver, source, source.changes(at(2), at(4)))
    with sqlite3.connect(path) as connection:
        after = dict(connection.execute(f"SELECT id, rowid FROM {source.table}").fetchall())
        seen = [row[0] for row in connection.execute("SELECT what FROM seen")]
    assert seen == (["deleted 2"] if trigger else [])
    assert (after[2] == rowids[2]) is not trigger  # the same row, or a new one
    assert set(after) == {1, 2, 3, 9}
    receiver.verify(source.table)


@pytest.mark.airflow
def test_a_sqlite_hook_selects_the_database(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An Airflow connection id picks the database: the receiver runs through SqliteHook."""
    from airflow.providers.sqlite.hooks.sqlite import SqliteHook

    # Airflow reads a SQLite connection's file from the URI's host, percent-encoded.
    database = quote(str(tmp_path / "hook.sqlite"), safe="")
    monkeypatch.setenv("AIRFLOW_CONN_DOGANA_TARGET", f"sqlite://{database}")
    a_hook_selects_the_database(
        SqliteHook(sqlite_conn_id="dogana_target"), SQLITE, "hook", tmp_path, lambda: None
    )
    assert (tmp_path / "hook.sqlite").stat().st_size > 0  # the connection's file, not another
