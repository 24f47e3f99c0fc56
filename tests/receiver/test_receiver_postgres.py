"""The conformance suite on PostgreSQL, at 127.0.0.1:5432 (skips when unreachable, not in CI)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import psycopg2
import psycopg2.errors
import pyarrow as pa
import pytest
from hold_conformance import HELD_BY
from receiver_conformance import Connect, ReceiverConformance, a_hook_selects_the_database
from receiver_deliveries import Source, at

from dogana_core.gate import Outcome
from dogana_provider.dialects import POSTGRES
from dogana_provider.receiver import Receiver
from dogana_provider.receiver.transactions import Reusing, transaction

pytestmark = pytest.mark.postgres


def drop_tables(url: str, needle: str) -> None:
    """Drop every table whose name holds needle (a test's uid), and the staging tables its
    receiver still notes (a held delivery's are kept by design; their names hold no uid)."""
    with psycopg2.connect(url) as connection, connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = current_schema() AND position(%s in table_name) > 0",
            (needle,),
        )
        names = [name for (name,) in cursor.fetchall()]
        for noted in [name for name in names if name.endswith("_staging")]:
            cursor.execute(f"SELECT staging_table FROM {POSTGRES.quote(noted)}")
            names += [staged for (staged,) in cursor.fetchall()]
        for name in names:
            cursor.execute(f"DROP TABLE IF EXISTS {POSTGRES.quote(name)}")


class TestPostgres(ReceiverConformance):
    driver_error = psycopg2.Error
    dialect = POSTGRES
    unstorable: ClassVar[dict[str, pa.Array]] = {
        "a NUL character in a string": pa.array(["a\x00b"])
    }

    @pytest.fixture
    def connect(self, postgres_url: str) -> Connect:
        return lambda: psycopg2.connect(postgres_url)

    def test_a_released_row_is_known_again_whatever_the_sessions_time_zone(
        self, postgres_url: str, receiver: Receiver, source: Source, uid: str
    ) -> None:
        """A row's content hash spells its instants in UTC: a receiver whose sessions run in
        another TimeZone (a role's or a database's setting) knows the released row again."""
        self.released(receiver, source)
        elsewhere = self.make(
            lambda: psycopg2.connect(postgres_url, options="-c TimeZone=Asia/Kathmandu"), uid
        )
        receipt = self.publish_checked(elsewhere, source, source.full(at(5)))
        (check,) = [c for c in receipt.checks if c.name == HELD_BY]
        assert check.passed and "all released earlier" in check.detail

    @pytest.fixture(autouse=True)
    def _drop_tables(self, postgres_url: str, uid: str) -> Iterator[None]:
        """Drop every table this test created (all carry its uid), so runs do not pile up."""
        yield
        drop_tables(postgres_url, uid)


@pytest.mark.airflow
def test_a_postgres_hook_selects_the_database(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An Airflow connection id picks the database: the receiver runs through PostgresHook."""
    from airflow.providers.postgres.hooks.postgres import PostgresHook

    monkeypatch.setenv("AIRFLOW_CONN_DOGANA_TARGET", postgres_url)
    uid = uuid.uuid4().hex[:10]
    a_hook_selects_the_database(
        PostgresHook(postgres_conn_id="dogana_target"),
        POSTGRES,
        uid,
        tmp_path,
        lambda: drop_tables(postgres_url, uid),
    )


@pytest.fixture
def small_tablespace(postgres_url: str) -> Iterator[str]:
    """A PostgreSQL tablespace on an 8 MiB tmpfs: a real disk that fills up.

    Needs root (to mount) and a server on this machine (to write there); skips with the reason
    otherwise, except in CI, which runs as root beside its server and must run it.
    """
    name = f"dogana_full_{uuid.uuid4().hex[:8]}"
    directory = Path("/mnt") / name
    reason = None
    if os.geteuid() != 0:
        reason = "not root: cannot mount a small tmpfs to fill"
    else:
        directory.mkdir(parents=True)
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=8M", "tmpfs", str(directory)],
            capture_output=True,
            text=True,
        )
        if mounted.returncode != 0:
            directory.rmdir()
            reason = f"mount -t tmpfs refused: {mounted.stderr.strip()}"
    if reason is not None:
        if os.environ.get("CI", "").strip().lower() == "true":
            pytest.fail(f"{reason} (CI=true runs as root: the disk-full test must run)")
        pytest.skip(reason)
    try:
        shutil.chown(directory, "postgres", "postgres")
        connection = psycopg2.connect(postgres_url)
        connection.autocommit = True  # CREATE TABLESPACE runs outside a transaction block
        try:
            with connection.cursor() as cursor:
                cursor.execute(f"CREATE TABLESPACE {name} LOCATION %s", (str(directory),))
            yield name
        finally:
            with connection.cursor() as cursor:
                cursor.execute(f"DROP TABLESPACE IF EXISTS {name}")
            connection.close()
    finally:
        subprocess.run(["umount", str(directory)], check=False)
        directory.rmdir()


def test_a_full_disk_mid_publish_changes_nothing_and_the_staged_rows_wait(
    postgres_url: str, small_tablespace: str, tmp_path: Path
) -> None:
    """ "could not extend file ...: No space left on device" for real, half way through publishing.

    The published table lives on a tablespace of 8 MiB; a delivery of about 16 MiB fills it
    during the INSERT. The transaction rolls back: rows, ledger and receipts are as they were,
    no receipt claims the publication, and the staging table waits for a retry, which succeeds
    once the table is moved to a disk with room.
    """
    uid = uuid.uuid4().hex[:10]
    suite = TestPostgres()
    receiver = suite.make(lambda: psycopg2.connect(postgres_url), uid)
    source = Source(f"orders_{uid}", tmp_path)
    receiver.register(source.contract)
    try:
        source.put(1, 1, "one", at(1))
        suite.publish_checked(receiver, source, source.full(at(2)))
        published = POSTGRES.quote(source.table)
        with psycopg2.connect(postgres_url) as connection, connection.cursor() as cursor:
            cursor.execute(f"ALTER TABLE {published} SET TABLESPACE {small_tablespace}")
        before = suite.state(receiver, source.table)
        for id_ in range(2, 60_002):
            source.put(id_, id_ % 30, "x" * 200 + str(id_), at(3))
        decision = receiver.decide(*source.changes(at(2), at(4)))
        assert decision.to_publish, decision.receipt.failed
        with pytest.raises(psycopg2.errors.DiskFull, match="No space left on device"):
            receiver.publish(decision)
        assert suite.state(receiver, source.table) == before
        receiver.verify(source.table)
        assert len(suite.staging_left(receiver, decision.receipt.manifest)) == 1
        with psycopg2.connect(postgres_url) as connection, connection.cursor() as cursor:
            cursor.execute(f"ALTER TABLE {published} SET TABLESPACE pg_default")
        receipt = receiver.publish(decision)
        assert receipt.outcome is Outcome.ACCEPTED
        assert suite.published(receiver, source.table) == source.expected()
        assert receiver.verify(source.table).publications == 2
        assert suite.staging_left(receiver, decision.receipt.manifest) == []
    finally:
        drop_tables(postgres_url, uid)


def test_neither_a_registration_nor_a_stage_waits_for_a_transaction_writing_their_tables(
    postgres_url: str, tmp_path: Path
) -> None:
    """A registration and a stage look the receipts' and the published table's indexes up in
    the catalog: no CREATE INDEX IF NOT EXISTS, whose SHARE lock would wait for a writer of
    the table (here: fail at once, its lock_timeout short) and hold back every writer queued
    behind it, a publication's receipt among them."""
    uid = uuid.uuid4().hex[:10]
    suite = TestPostgres()
    receiver = suite.make(
        lambda: psycopg2.connect(postgres_url, options="-c lock_timeout=100"), uid
    )
    source = Source(f"orders_{uid}", tmp_path)
    receiver.register(source.contract)
    writer = psycopg2.connect(postgres_url)
    try:
        source.put(1, 1, "one", at(1))
        suite.publish_checked(receiver, source, source.full(at(2)))
        with writer.cursor() as cursor:  # writes, left open: ROW EXCLUSIVE held on both
            cursor.execute(f"DELETE FROM {POSTGRES.quote(source.table)} WHERE id = 0")
            cursor.execute(f"DELETE FROM {POSTGRES.quote(f's{uid}_receipts')} WHERE seq < 0")
        receiver.register(source.contract)
        source.put(2, 2, "two", at(3))
        decision = receiver.decide(*source.changes(at(2), at(4)))
        assert decision.to_publish, decision.receipt.failed
        writer.rollback()
        assert receiver.publish(decision).outcome is Outcome.ACCEPTED
        assert suite.published(receiver, source.table) == source.expected()
    finally:
        writer.close()
        drop_tables(postgres_url, uid)


class Counted:
    """A connection factory that counts the connections it opens (each a real one)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.opened: list[Any] = []

    def __call__(self) -> Any:
        self.opened.append(psycopg2.connect(self.url))
        return self.opened[-1]


def test_a_postgres_receiver_lends_its_next_transaction_the_connection_the_last_gave_back(
    postgres_url: str, tmp_path: Path
) -> None:
    """A delivery's steps run about a dozen transactions, one after another: one connection."""
    uid = uuid.uuid4().hex[:10]
    counted = Counted(postgres_url)
    receiver = TestPostgres().make(counted, uid)
    source = Source(f"orders_{uid}", tmp_path)
    try:
        receiver.register(source.contract)
        source.put(1, 1, "one", at(1))
        assert receiver.receive(*source.full(at(2))).outcome is Outcome.ACCEPTED
        assert len(counted.opened) == 1
    finally:
        for connection in counted.opened:
            connection.close()
        drop_tables(postgres_url, uid)


def test_a_connection_whose_transaction_raised_is_closed_not_lent_again(
    postgres_url: str,
) -> None:
    counted = Counted(postgres_url)
    receiver = TestPostgres().make(counted, uuid.uuid4().hex[:10])
    with (
        pytest.raises(psycopg2.errors.UndefinedTable),
        transaction(receiver.connect, receiver.dialect) as connection,
    ):
        connection.cursor().execute("SELECT * FROM dogana_no_such_table")
    with transaction(receiver.connect, receiver.dialect) as connection:
        assert connection is not counted.opened[0]
    assert counted.opened[0].closed
    assert len(counted.opened) == 2
    counted.opened[1].close()


def test_a_connection_that_waited_longer_than_it_stays_fresh_is_closed_not_lent(
    postgres_url: str,
) -> None:
    """A receiver a long-lived process keeps must not meet a connection the server closed."""
    counted = Counted(postgres_url)
    connect = Reusing(counted, fresh=0.05)
    with transaction(connect, POSTGRES):
        pass
    time.sleep(0.1)
    with transaction(connect, POSTGRES) as connection:
        assert connection is not counted.opened[0]
    assert counted.opened[0].closed
    counted.opened[1].close()


@pytest.mark.parametrize("driver", ["psycopg", "psycopg2"])
def test_a_postgres_transaction_begins_at_its_isolation_level_in_its_own_begin(
    postgres_url: str, driver: str
) -> None:
    """A writer reads committed rows and a reader one snapshot; both psycopgs name the level
    in the BEGIN they send before the first statement, so begin sends nothing itself."""
    import psycopg

    connect = psycopg.connect if driver == "psycopg" else psycopg2.connect
    connection = connect(postgres_url)
    try:
        for write, level in ((True, "read committed"), (False, "repeatable read")):
            POSTGRES.begin(connection, write=write)
            assert connection.info.transaction_status == 0, "a statement was sent"
            cursor = connection.cursor()
            cursor.execute("SHOW transaction_isolation")
            assert cursor.fetchone()[0] == level
            connection.rollback()
    finally:
        connection.close()
