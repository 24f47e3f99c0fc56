"""Publishers in separate processes, at once, against one table (PostgreSQL and MariaDB).

The conformance suite races two threads of one process; here each publisher is a process of its
own, with its own connections, as two Airflow workers would be. Bounded: three processes, each
deciding and publishing once, joined with a timeout (a hang fails, never blocks the suite).
Exactly one wins each head, a stale one decides again (accepted on the new head or refused), no
manifest identity is published twice, verify() proves the stored ledger after them all, and the
test's own process, which read the ledger before them, reads theirs after.
"""

from __future__ import annotations

import multiprocessing
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from receiver_deliveries import NOW, Source, at

from dogana_core.gate import Outcome, Receipt
from dogana_core.manifest import Manifest

PROCESSES_TIMEOUT = 120  # seconds for all publishers together


def connector(kind: str, url: str) -> Any:
    if kind == "postgres":
        import psycopg2

        return lambda: psycopg2.connect(url)
    from test_receiver_mariadb import connector as mariadb

    return mariadb(url)


def receiver_of(kind: str, url: str, prefix: str) -> Any:
    from dogana_provider.receiver import Receiver
    from dogana_provider.sql import MARIADB, POSTGRES

    dialect = POSTGRES if kind == "postgres" else MARIADB
    return Receiver(connector(kind, url), dialect, prefix=prefix, clock=lambda: NOW)


def publisher(
    kind: str, url: str, prefix: str, path: str, manifest: str, start: Any, out: Any
) -> None:
    """One process: wait for the others, then decide and publish; hand back the receipt."""
    receiver = receiver_of(kind, url, prefix)
    start.wait(PROCESSES_TIMEOUT)
    try:
        receipt = receiver.receive(path, Manifest.from_json(manifest))
        out.put(("receipt", receipt.to_json()))
    except BaseException as exc:  # reported to the test, which fails on it
        out.put(("error", f"{type(exc).__name__}: {exc}"))


@pytest.fixture(
    params=[
        pytest.param("postgres", marks=pytest.mark.postgres),
        pytest.param("mariadb", marks=pytest.mark.mariadb),
    ]
)
def database(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    kind = request.param
    url = request.getfixturevalue("postgres_url" if kind == "postgres" else "mariadb_url")
    yield kind, url


def test_publishers_in_separate_processes_win_one_head_each(
    database: tuple[str, str], tmp_path: Path
) -> None:
    kind, url = database
    uid = uuid.uuid4().hex[:10]
    prefix = f"s{uid}"
    receiver = receiver_of(kind, url, prefix)
    source = Source(f"orders_{uid}", tmp_path)
    receiver.register(source.contract)
    try:
        for id_ in range(1, 4):
            source.put(id_, id_, f"n{id_}", at(1))
        assert receiver.receive(*source.full(at(2))).outcome is Outcome.ACCEPTED
        source.put(5, 5, "five", at(3))
        early = source.changes(at(2), at(4))
        source.put(6, 6, "six", at(5))
        late = source.changes(at(2), at(6))
        # Two processes carry the same delivery: one manifest identity, published once at most.
        deliveries = [early, late, early]
        context = multiprocessing.get_context("spawn")
        start = context.Barrier(len(deliveries))
        out = context.Queue()
        processes = [
            context.Process(
                target=publisher,
                args=(kind, url, prefix, str(path), manifest.to_json(), start, out),
            )
            for path, manifest in deliveries
        ]
        for process in processes:
            process.start()
        results = [out.get(timeout=PROCESSES_TIMEOUT) for _ in processes]
        for process in processes:
            process.join(PROCESSES_TIMEOUT)
            if process.is_alive():
                process.terminate()
            assert process.exitcode == 0, "a publisher hung or died"
        errors = [detail for what, detail in results if what == "error"]
        assert not errors, errors
        receipts = [Receipt.from_json(detail) for _, detail in results]
        accepted = [r for r in receipts if r.outcome is Outcome.ACCEPTED]
        assert accepted, receipts
        # One winner per head: no two acceptances built on the same publication.
        assert len({r.base_publication_id for r in accepted}) == len(accepted)
        # No manifest identity published twice: the repeat was replayed or refused.
        stored = receiver.receipts(source.table)
        published = [r.manifest.identity for r in stored if r.outcome is Outcome.ACCEPTED]
        assert len(published) == len(set(published))
        assert published.count(early[1].identity) <= 1
        verified = receiver.verify(source.table)
        assert verified.publications == 1 + len(accepted) == len(published)
        last = [r for r in stored if r.outcome is Outcome.ACCEPTED][-1]
        assert verified.head == last.publication_id
        # This process read and kept the ledger (its chunks, its index) before the others
        # published: what it reads now is what they left, never what it kept from before.
        ledger = receiver.ledger(source.table)
        assert (ledger.head, ledger.identity) == (last.publication_id, last.ledger_identity)
        if late[1].identity in published:
            with receiver.read(source.table) as snapshot:
                ids = {row[snapshot.columns.index("id")] for row in snapshot.rows}
            assert ids == set(source.expected())
    finally:
        if kind == "mariadb":
            from test_receiver_mariadb import drop_tables
        else:
            from test_receiver_postgres import drop_tables
        drop_tables(url, uid)
