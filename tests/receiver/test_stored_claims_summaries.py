"""The chunks' stored summaries (receiver/store.py's {prefix}_summaries) on SQLite, PostgreSQL
and MariaDB: a cache of a pure function of the ledger, written in each publication's own
transaction, from which a new process states a table's claims without decoding a region.

The table's history: 40 daily window deliveries, every other day, folded in the core and
written by the receiver's own storage code (as the ledger bench does), so that its ledger holds
81 regions in two chunks; then real deliveries through the receiver on top of it.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg2
import pytest
from hold_conformance import HOLD
from receiver_deliveries import NOW, Source, at, day
from test_receiver_mariadb import connector
from test_receiver_mariadb import drop_tables as drop_mariadb
from test_receiver_postgres import drop_tables as drop_postgres

from dogana_core.claims import NO_LIMIT
from dogana_core.errors import InconsistentPublication
from dogana_core.gate import Gate, Outcome
from dogana_core.ledger import Ledger
from dogana_core.stored import named, read_summary, summary_form
from dogana_provider.checks.expectations import Expectations
from dogana_provider.dialects import MARIADB, POSTGRES, SQLITE
from dogana_provider.receiver import Receiver
from dogana_provider.receiver.store import forget
from dogana_provider.receiver.transactions import transaction

DAYS = 40
LIMITS = (NO_LIMIT, timedelta(days=300), timedelta(days=30), timedelta(0))


@pytest.fixture
def uid() -> str:
    return uuid.uuid4().hex[:10]


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("postgres", marks=pytest.mark.postgres),
        pytest.param("mariadb", marks=pytest.mark.mariadb),
    ]
)
def receiver(request: pytest.FixtureRequest, tmp_path: Path, uid: str) -> Iterator[Receiver]:
    if request.param == "sqlite":
        path = tmp_path / "receiver.sqlite"

        def on_sqlite() -> sqlite3.Connection:
            return sqlite3.connect(path, timeout=30)

        yield Receiver(on_sqlite, SQLITE, prefix=f"cs{uid}", clock=lambda: NOW)
        return
    if request.param == "postgres":
        url = request.getfixturevalue("postgres_url")
        receiver = Receiver(
            lambda: psycopg2.connect(url), POSTGRES, prefix=f"cs{uid}", clock=lambda: NOW
        )
        drop = drop_postgres
    else:
        url = request.getfixturevalue("mariadb_url")
        receiver = Receiver(connector(url), MARIADB, prefix=f"cs{uid}", clock=lambda: NOW)
        drop = drop_mariadb
    try:
        yield receiver
    finally:
        drop(url, uid)


@pytest.fixture
def source(receiver: Receiver, tmp_path: Path, uid: str) -> Source:
    """The orders table with DAYS daily windows published, stored as publications leave them."""
    source = Source(f"orders_{uid}", tmp_path)
    contract = source.contract
    receiver.register(contract)
    ledger, receipts = Ledger.new(contract), []
    for n in range(DAYS):
        manifest = contract.manifest("window", at(2 * n + 1), window=(day(2 * n), day(2 * n)))
        receipts.append(Gate.evaluate(ledger, manifest, now=NOW))
        ledger = ledger.apply(manifest)
    with transaction(receiver.connect, receiver.dialect) as connection:
        for receipt in receipts:
            receiver.store.save(connection, receipt)
        receiver.store.update_table(connection, ledger)
    assert len(ledger.regions) > 64  # two chunks at least
    return source


def stored_summaries(receiver: Receiver, table: str) -> dict[str, str]:
    with transaction(receiver.connect, receiver.dialect, write=False) as connection:
        cursor = connection.cursor()
        cursor.execute(
            f"SELECT digest, summary FROM {receiver.store.summaries} "
            f"WHERE table_name = {receiver.store.p}",
            (table,),
        )
        found = {str(name): str(text) for name, text in cursor.fetchall()}
        cursor.close()
        return found


def run(receiver: Receiver, sql: str, params: tuple[Any, ...] = ()) -> None:
    with transaction(receiver.connect, receiver.dialect) as connection:
        cursor = connection.cursor()
        cursor.execute(sql, params)
        cursor.close()


def fresh_ledger(receiver: Receiver, table: str) -> Ledger:
    """The table's ledger as a new process reads it: nothing kept from earlier reads."""
    forget()
    with transaction(receiver.connect, receiver.dialect, write=False) as connection:
        state = receiver.store.state(connection, table)
        assert state is not None
        return state.ledger


def assert_claims_are_the_folds(receiver: Receiver, table: str, *, summarized: bool = True) -> None:
    """Claims of a fresh read are those of the fold of the stored receipts, at several limits,
    listed or not: stated from the stored summaries without decoding a region (summarized),
    or from the regions of the chunks whose summary is missing or unreadable."""
    folded = Ledger.from_receipts(receiver.ledger(table).contract, receiver.receipts(table))
    for limit in LIMITS:
        ledger = fresh_ledger(receiver, table)
        claims = ledger.claims(NOW, limit=limit)
        dates = (claims.state, claims.complete_as_of, claims.deletions_as_of, claims.exact_as_of)
        decoded = [chunk.decoded for chunk in ledger.regions.chunks]  # type: ignore[attr-defined]
        assert not any(decoded) if summarized else any(decoded)
        expected = folded.claims(NOW, limit=limit)
        expected_dates = (
            expected.state,
            expected.complete_as_of,
            expected.deletions_as_of,
            expected.exact_as_of,
        )
        assert dates == expected_dates
        assert claims.count == len(expected.regions)
        assert claims == expected and claims.to_json() == expected.to_json()


def assert_summaries_are_the_chunks(receiver: Receiver, table: str) -> None:
    """One stored summary per chunk of the stored ledger, each that chunk's own, none more."""
    chunks = named(receiver.ledger(table))
    assert stored_summaries(receiver, table) == {
        name: summary_form(chunk) for name, chunk in chunks.items()
    }
    assert_claims_are_the_folds(receiver, table)


def test_the_stored_summaries_are_the_ledgers_after_every_publication_and_refusal(
    receiver: Receiver, source: Source
) -> None:
    table = source.table
    assert_summaries_are_the_chunks(receiver, table)
    source.put(1, 2 * DAYS, "one", at(2 * DAYS))
    receipt = receiver.receive(*source.window(2 * DAYS, 2 * DAYS, at(2 * DAYS + 1)))
    assert receipt.outcome is Outcome.ACCEPTED, receipt.failed
    assert_summaries_are_the_chunks(receiver, table)
    late = receiver.receive(*source.window(2, 2, at(1)))  # not after complete_as_of there
    assert late.outcome is Outcome.REJECTED
    assert_summaries_are_the_chunks(receiver, table)
    source.put(2, 4, "two", at(2 * DAYS + 2))
    changes = receiver.receive(*source.changes(at(0), at(2 * DAYS + 3)))
    assert changes.outcome is Outcome.REJECTED  # an unknown day between two windows
    source.put(3, 0, "three", at(2 * DAYS + 3))
    whole = receiver.receive(*source.full(at(2 * DAYS + 4)))  # every region replaced
    assert whole.outcome is Outcome.ACCEPTED, whole.failed
    assert_summaries_are_the_chunks(receiver, table)
    source.delete(2)
    deleted = receiver.receive(*source.changes(at(2 * DAYS + 4), at(2 * DAYS + 5), (2,)))
    assert deleted.outcome is Outcome.ACCEPTED, deleted.failed
    assert_summaries_are_the_chunks(receiver, table)


def test_a_held_delivery_and_one_released_after_the_table_moved_on_leave_the_summaries_the_ledgers(
    receiver: Receiver, source: Source
) -> None:
    table = source.table
    receiver.register(source.contract, Expectations.from_dict(HOLD))
    source.put(7, 2 * DAYS, "bad", at(2 * DAYS))
    held = receiver.decide(*source.window(2 * DAYS, 2 * DAYS, at(2 * DAYS + 1)))
    assert held.held and held.hold is not None
    assert_summaries_are_the_chunks(receiver, table)
    source.delete(7)
    source.put(8, 2 * DAYS, "good", at(2 * DAYS + 2))
    moved = receiver.receive(*source.window(2 * DAYS, 2 * DAYS, at(2 * DAYS + 3)))
    assert moved.outcome is Outcome.ACCEPTED, moved.failed
    (superseded,) = receiver.release(held.hold, by="Ada Lovelace")
    assert superseded.outcome is Outcome.REJECTED  # decided again: the table moved on
    assert_summaries_are_the_chunks(receiver, table)


def test_a_store_without_summaries_answers_and_its_next_publication_writes_them(
    receiver: Receiver, source: Source
) -> None:
    table = source.table
    run(receiver, f"DROP TABLE {receiver.store.summaries}")
    older = Receiver(
        receiver.connect, receiver.dialect, prefix=receiver.store.prefix, clock=lambda: NOW
    )
    # Every chunk's summary is computed from its regions.
    assert_claims_are_the_folds(older, table, summarized=False)
    older.register(source.contract)  # creates the missing table, as every registration does
    source.put(1, 2 * DAYS, "one", at(2 * DAYS))
    receipt = older.receive(*source.window(2 * DAYS, 2 * DAYS, at(2 * DAYS + 1)))
    assert receipt.outcome is Outcome.ACCEPTED, receipt.failed
    assert_summaries_are_the_chunks(older, table)


def test_a_stored_summary_in_another_form_is_computed_again_and_rewritten(
    receiver: Receiver, source: Source
) -> None:
    table = source.table
    (name, *_) = stored_summaries(receiver, table)
    store = receiver.store
    run(
        receiver,
        f"UPDATE {store.summaries} SET summary = {store.p} "
        f"WHERE table_name = {store.p} AND digest = {store.p}",
        ('[0,"a form to come"]', table, name),
    )
    assert read_summary('[0,"a form to come"]') is None
    assert_claims_are_the_folds(receiver, table, summarized=False)
    source.put(1, 2 * DAYS, "one", at(2 * DAYS))
    receipt = receiver.receive(*source.window(2 * DAYS, 2 * DAYS, at(2 * DAYS + 1)))
    assert receipt.outcome is Outcome.ACCEPTED, receipt.failed
    assert_summaries_are_the_chunks(receiver, table)


def test_verify_refuses_a_stored_summary_that_is_not_its_chunks(
    receiver: Receiver, source: Source
) -> None:
    table = source.table
    found = stored_summaries(receiver, table)
    (first, second, *_) = found
    store = receiver.store
    run(
        receiver,
        f"UPDATE {store.summaries} SET summary = {store.p} "
        f"WHERE table_name = {store.p} AND digest = {store.p}",
        (found[second], table, first),
    )
    forget()
    with pytest.raises(InconsistentPublication, match="summary"):
        receiver.verify(table)
