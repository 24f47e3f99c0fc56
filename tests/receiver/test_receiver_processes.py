"""Receivers in processes of their own: publishers at once against one table (PostgreSQL and
MariaDB), and a gate killed while it stages (every database).

The conformance suite races two threads of one process; here each publisher is a process of its
own, with its own connections, as two Airflow workers would be. Bounded: three processes, each
deciding and publishing once, joined with a timeout (a hang fails, never blocks the suite).
Exactly one wins each head, a stale one decides again (accepted on the new head or refused), no
manifest identity is published twice, verify() proves the stored ledger after them all, and the
test's own process, which read the ledger before them, reads theirs after.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from receiver_deliveries import NOW, Source, at, write_many

from dogana_core.gate import Outcome, Receipt
from dogana_core.manifest import Manifest
from dogana_provider.receiver.steps import STAGING_PREFIX

PROCESSES_TIMEOUT = 120  # seconds for all publishers together


def connector(kind: str, url: str) -> Any:
    if kind == "sqlite":
        import sqlite3

        return lambda: sqlite3.connect(url, timeout=30)
    if kind == "postgres":
        import psycopg2

        return lambda: psycopg2.connect(url)
    from test_receiver_mariadb import connector as mariadb

    return mariadb(url)


def receiver_of(kind: str, url: str, prefix: str) -> Any:
    from dogana_provider.dialects import MARIADB, POSTGRES, SQLITE
    from dogana_provider.receiver import Receiver

    dialect = {"sqlite": SQLITE, "postgres": POSTGRES, "mariadb": MARIADB}[kind]
    return Receiver(connector(kind, url), dialect, prefix=prefix, clock=lambda: NOW)


def registered(kind: str, url: str, tmp_path: Path) -> tuple[str, str, Any, Source]:
    """A receiver of a store of its own, with an orders table registered: uid, prefix, both."""
    uid = uuid.uuid4().hex[:10]
    prefix = f"s{uid}"
    receiver = receiver_of(kind, url, prefix)
    source = Source(f"orders_{uid}", tmp_path)
    receiver.register(source.contract)
    return uid, prefix, receiver, source


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
    uid, prefix, receiver, source = registered(kind, url, tmp_path)
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


STAGE_ROWS = 400_000  # enough rows that loading them takes a while on every database
GATE_SWEEP_AFTER = timedelta(days=1)  # GateOperator's default sweep_after


class _Loading:
    """A real connection that sets an event once the staged rows start to load, and then waits
    to be killed there, inside the staging transaction (SQLite's rows, read into a private file
    before it, load in a moment: a kill after the event could otherwise come too late)."""

    def __init__(self, connection: Any, loading: Any) -> None:
        self._connection, self._loading = connection, loading

    def cursor(self) -> Any:
        cursor = self._connection.cursor()
        loading = self._loading

        class Cursor:
            def execute(self, sql: str, params: Any = ()) -> Any:
                result = cursor.execute(sql, params)
                if sql.startswith("CREATE TABLE") and STAGING_PREFIX in sql:  # rows next
                    loading.set()
                    time.sleep(PROCESSES_TIMEOUT)  # killed meanwhile
                return result

            def __getattr__(self, name: str) -> Any:
                return getattr(cursor, name)

        return Cursor()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)


def gate(
    kind: str, url: str, prefix: str, path: str, manifest: str, loading: Any, done: Any
) -> None:
    """A gate's decide in a process of its own, killed by the test while it stages."""
    receiver = receiver_of(kind, url, prefix)
    connect = receiver.connect
    receiver.steps = replace(receiver.steps, connect=lambda: _Loading(connect(), loading))
    receiver.decide(path, Manifest.from_json(manifest))
    done.set()


def staging_tables(kind: str, url: str, prefix: str, manifest: Manifest) -> list[str]:
    """The delivery's staging tables in the database, and every one the store still notes."""
    connection = connector(kind, url)()
    try:
        cursor = connection.cursor()
        if kind == "sqlite":
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        else:
            cursor.execute("SELECT table_name FROM information_schema.tables")
        names = [str(name) for (name,) in cursor.fetchall()]
        cursor.execute(f"SELECT staging_table FROM {prefix}_staging")
        names += [f"noted {name}" for (name,) in cursor.fetchall()]
    finally:
        connection.close()
    mine = STAGING_PREFIX + manifest.identity[:16]
    return [name for name in names if name.startswith((mine, "noted"))]


@pytest.mark.parametrize(
    "kind",
    [
        "sqlite",
        pytest.param("postgres", marks=pytest.mark.postgres),
        pytest.param("mariadb", marks=pytest.mark.mariadb),
    ],
)
def test_a_gate_killed_while_staging_leaves_no_staging_table_after_the_next_run(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """SIGKILL while the rows load: SQLite and PostgreSQL roll the staging table back; MariaDB
    committed its CREATE, and the next gate's sweep finds its loader gone and drops it, however
    young. Nothing is recorded: a kill is no decision."""
    url = (
        str(tmp_path / "receiver.db")
        if kind == "sqlite"
        else request.getfixturevalue("postgres_url" if kind == "postgres" else "mariadb_url")
    )
    uid, prefix, receiver, source = registered(kind, url, tmp_path)
    try:
        path = write_many(tmp_path / "large.parquet", STAGE_ROWS)
        manifest = source.contract.manifest("full", at(2), rows=STAGE_ROWS)
        context = multiprocessing.get_context("spawn")
        loading, done = context.Event(), context.Event()
        process = context.Process(
            target=gate, args=(kind, url, prefix, str(path), manifest.to_json(), loading, done)
        )
        process.start()
        assert loading.wait(PROCESSES_TIMEOUT), "the gate never started loading"
        os.kill(process.pid or 0, signal.SIGKILL)
        process.join(PROCESSES_TIMEOUT)
        assert not done.is_set(), "the gate finished staging before it was killed"
        assert receiver.sweep(GATE_SWEEP_AFTER) is not None  # the next gate run's sweep
        assert staging_tables(kind, url, prefix, manifest) == []
        assert receiver.receipts(source.table) == []  # a kill is no decision: nothing recorded
        assert receiver.verify(source.table).publications == 0
    finally:
        if kind == "mariadb":
            from test_receiver_mariadb import drop_tables
        elif kind == "postgres":
            from test_receiver_postgres import drop_tables
        if kind != "sqlite":
            drop_tables(url, uid)


class _Stalling:
    """A real connection that sets an event, and then waits to be killed, at the first
    statement that matches `at` (a process-wide switch: `after` must have run on some
    connection first, committed, when given)."""

    reached = False  # `after` ran and committed, in this process

    def __init__(self, connection: Any, stalled: Any, at: str, after: str | None) -> None:
        self._connection, self._stalled, self._at, self._after = connection, stalled, at, after
        self._saw_after = False

    def cursor(self) -> Any:
        cursor, outer = self._connection.cursor(), self

        class Cursor:
            def execute(self, sql: str, params: Any = ()) -> Any:
                if (outer._after is None or _Stalling.reached) and outer._at in sql:
                    outer._stalled.set()
                    time.sleep(PROCESSES_TIMEOUT)  # killed meanwhile
                outer._saw_after = outer._saw_after or (
                    outer._after is not None and outer._after in sql
                )
                return cursor.execute(sql, params)

            def __getattr__(self, name: str) -> Any:
                return getattr(cursor, name)

        return Cursor()

    def commit(self) -> None:
        self._connection.commit()
        _Stalling.reached = _Stalling.reached or self._saw_after

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)


def stalled_gate(
    kind: str,
    url: str,
    prefix: str,
    path: str,
    manifest: str,
    at: str,
    after: str | None,
    stalled: Any,
) -> None:
    """A gate's decide in a process of its own, stalled where the test kills it."""
    receiver = receiver_of(kind, url, prefix)
    if kind == "mariadb":
        from test_receiver_mariadb import connector as mariadb

        receiver.steps = replace(receiver.steps, connect=mariadb(url, local_infile=True))
    connect = receiver.steps.connect
    receiver.connect = lambda: _Stalling(connect(), stalled, at, after)
    receiver.steps = replace(receiver.steps, connect=receiver.connect)
    receiver.decide(path, Manifest.from_json(manifest))


def kill_gate_at(
    kind: str, url: str, prefix: str, path: Path, manifest: Manifest, at: str, after: str | None
) -> None:
    context = multiprocessing.get_context("spawn")
    stalled = context.Event()
    process = context.Process(
        target=stalled_gate,
        args=(kind, url, prefix, str(path), manifest.to_json(), at, after, stalled),
    )
    process.start()
    deadline = time.monotonic() + PROCESSES_TIMEOUT
    while not stalled.wait(0.5):
        assert process.is_alive(), f"the gate ended ({process.exitcode}) before it was killed"
        assert time.monotonic() < deadline, "the gate never got where it is killed"
    os.kill(process.pid or 0, signal.SIGKILL)
    process.join(PROCESSES_TIMEOUT)
    assert process.exitcode == -signal.SIGKILL


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("mariadb", marks=pytest.mark.mariadb)])
def test_a_gate_killed_while_it_checks_its_staged_rows_leaves_no_staging_table_to_the_next_sweep(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The staging committed, the gate killed while it checks the rows: its staging table is
    no decision anyone will publish, and the next sweep drops it at once, not a day later;
    while a gate that handed back its decision keeps its table until that is published."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the gates' temporary folder, and ours
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    url = (
        str(tmp_path / "receiver.db")
        if kind == "sqlite"
        else request.getfixturevalue("mariadb_url")
    )
    uid, prefix, receiver, source = registered(kind, url, tmp_path)
    try:
        for id_ in range(1, 4):
            source.put(id_, id_, f"n{id_}", at(1))
        path, manifest = source.full(at(2))
        # The first statement on the staged rows after their transaction committed: a check.
        kill_gate_at(kind, url, prefix, path, manifest, at="dogana_stage_", after="dogana_stage_")
        (left,) = staging_tables(kind, url, prefix, manifest)[:1]
        assert receiver.sweep(GATE_SWEEP_AFTER) == (left,)
        assert staging_tables(kind, url, prefix, manifest) == []
        assert list(tmp_path.glob("dogana-deciding-*")) == []
        waiting = receiver.decide(path, manifest)  # handed back: its table waits for publish
        assert waiting.staged is not None
        assert receiver.sweep(GATE_SWEEP_AFTER) == ()
        assert receiver.publish(waiting).outcome is Outcome.ACCEPTED
    finally:
        if kind == "mariadb":
            from test_receiver_mariadb import drop_tables

            drop_tables(url, uid)


@pytest.mark.mariadb
def test_a_gate_killed_while_mariadb_loads_a_batch_leaves_no_batch_file_to_the_next_sweep(
    mariadb_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LOAD DATA LOCAL reads each batch from a file in the temporary folder: a gate killed
    while the server loads it leaves the file, and the next sweep removes it (its writer is
    gone), never a file a live gate is loading."""
    from dogana_provider.staging import scratch

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    uid, prefix, receiver, source = registered("mariadb", mariadb_url, tmp_path)
    try:
        for id_ in range(1, 4):
            source.put(id_, id_, f"n{id_}", at(1))
        path, manifest = source.full(at(2))
        kill_gate_at("mariadb", mariadb_url, prefix, path, manifest, "LOAD DATA LOCAL", None)
        (batch,) = tmp_path.glob("dogana-stage-*.tsv")
        with scratch.held_file() as (_, live):  # a live gate's batch, loading meanwhile
            receiver.sweep(GATE_SWEEP_AFTER)
            assert list(tmp_path.glob("dogana-stage-*.tsv")) == [Path(live)]
        assert not batch.exists()
        assert staging_tables("mariadb", mariadb_url, prefix, manifest) == []
    finally:
        from test_receiver_mariadb import drop_tables

        drop_tables(mariadb_url, uid)


def test_a_failed_decisions_free_mark_is_removed_once_older_than_the_sweeps_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A decision that raised leaves its mark free, whether or not its table outlived it; once
    older than the sweep's limit its table would go for its age anyway, and so does the mark."""
    from dogana_provider.staging import scratch

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    _, _, receiver, _ = registered("sqlite", str(tmp_path / "receiver.db"), tmp_path)
    with pytest.raises(ConnectionError), scratch.deciding("dogana_stage_failed"):
        raise ConnectionError("the database went away while the rows were checked")
    (mark,) = tmp_path.glob("dogana-deciding-*")
    receiver.sweep(GATE_SWEEP_AFTER)
    assert mark.exists()  # its table, were there one, may be another store's: not old yet
    receiver.sweep(timedelta(0))
    assert not mark.exists()
