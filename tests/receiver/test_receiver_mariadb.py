"""The conformance suite on MariaDB, at 127.0.0.1:3306 (skips when unreachable, not in CI)."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

import MySQLdb
import MySQLdb.cursors
import pyarrow as pa
import pytest
from receiver_conformance import Connect, ReceiverConformance, a_hook_selects_the_database
from receiver_deliveries import Source, at

from dogana_core.gate import Outcome
from dogana_provider.dialects import MARIADB
from dogana_provider.receiver.transactions import Reusing, transaction, unlent

pytestmark = pytest.mark.mariadb


def connector(url: str, **extra: Any) -> Connect:
    """Connections to the database of url; extra are MySQLdb's options (local_infile, say)."""
    parts = urlsplit(url)
    options = {
        "host": parts.hostname or "127.0.0.1",
        "port": parts.port or 3306,
        "user": parts.username or "root",
        "password": parts.password or "",
        "database": parts.path.lstrip("/"),
        "charset": "utf8mb4",
        **extra,
    }
    return lambda: MySQLdb.connect(**options)


def drop_tables(url: str, needle: str) -> None:
    connection = connector(url)()
    try:
        cursor = connection.cursor()
        cursor.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = DATABASE() AND LOCATE(%s, table_name) > 0",
            (needle,),
        )
        names = [name for (name,) in cursor.fetchall()]
        # The staging tables its receiver still notes: a held delivery's are kept by design,
        # and their names hold no uid.
        for noted in [name for name in names if name.endswith("_staging")]:
            cursor.execute(f"SELECT staging_table FROM {MARIADB.quote(noted)}")
            names += [staged for (staged,) in cursor.fetchall()]
        for name in names:
            cursor.execute(f"DROP TABLE IF EXISTS {MARIADB.quote(name)}")
    finally:
        connection.close()


class TestMariaDB(ReceiverConformance):
    driver_error = MySQLdb.Error
    dialect = MARIADB
    unstorable: ClassVar[dict[str, pa.Array]] = {
        "NaN": pa.array([float("nan")]),
        "an infinity": pa.array([float("-inf")]),
    }

    @pytest.fixture
    def connect(self, mariadb_url: str) -> Connect:
        return connector(mariadb_url)

    @pytest.fixture(autouse=True)
    def _drop_tables(self, mariadb_url: str, uid: str) -> Iterator[None]:
        """Drop every table this test created (all carry its uid), so runs do not pile up."""
        yield
        drop_tables(mariadb_url, uid)


@pytest.mark.airflow
def test_a_mysql_hook_selects_the_database(
    mariadb_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An Airflow connection id picks the database: the receiver runs through MySqlHook."""
    from airflow.providers.mysql.hooks.mysql import MySqlHook

    monkeypatch.setenv("AIRFLOW_CONN_DOGANA_TARGET", mariadb_url)
    uid = uuid.uuid4().hex[:10]
    a_hook_selects_the_database(
        MySqlHook(mysql_conn_id="dogana_target"),
        MARIADB,
        uid,
        tmp_path,
        lambda: drop_tables(mariadb_url, uid),
    )


@pytest.fixture
def small_disk() -> Iterator[Path]:
    """An 8 MiB tmpfs the MariaDB server may write to: a real disk that fills up.

    Needs root (to mount) and a server on this machine (to write there); skips with the reason
    otherwise, except in CI, which runs as root beside its server and must run it.
    """
    directory = Path("/mnt") / f"dogana_full_{uuid.uuid4().hex[:8]}"
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
        shutil.chown(directory, "mysql", "mysql")
        yield directory
    finally:
        subprocess.run(["umount", str(directory)], check=False)
        directory.rmdir()


def move_to(url: str, table: str, directory: Path) -> None:
    """Rebuild table with its .ibd file in directory.

    MariaDB ignores DATA DIRECTORY on ALTER TABLE (warning 1618), so the table is created anew
    there from its own definition, filled from the old one, and swapped in by RENAME.
    """
    connection = connector(url)()
    try:
        cursor = connection.cursor()
        cursor.execute(f"SHOW CREATE TABLE {MARIADB.quote(table)}")
        (_, ddl) = cursor.fetchone()
        head = f"CREATE TABLE {MARIADB.quote(table)} "
        assert ddl.startswith(head), ddl
        moving, old = MARIADB.quote(table + "_moving"), MARIADB.quote(table + "_old")
        cursor.execute(
            f"CREATE TABLE {moving} {ddl[len(head) :]} DATA DIRECTORY = %s", (str(directory),)
        )
        cursor.execute(f"INSERT INTO {moving} SELECT * FROM {MARIADB.quote(table)}")
        connection.commit()
        cursor.execute(
            f"RENAME TABLE {MARIADB.quote(table)} TO {old}, {moving} TO {MARIADB.quote(table)}"
        )
        cursor.execute(f"DROP TABLE {old}")
    finally:
        connection.close()
    assert any(directory.rglob(f"{table}.ibd")), f"{table}.ibd is not on {directory}"


def test_a_full_disk_mid_publish_changes_nothing_and_the_staged_rows_wait(
    mariadb_url: str, small_disk: Path, tmp_path: Path
) -> None:
    """ERROR 1114 "The table ... is full" for real: its InnoDB file is on a full disk.

    The published table's .ibd lives on a tmpfs of 8 MiB; a delivery of about 16 MiB fills it
    during the INSERT. The transaction rolls back: rows, ledger and receipts are as they were,
    no receipt claims the publication, and the staging table waits for a retry, which succeeds
    once the disk is remounted with room.
    """
    uid = uuid.uuid4().hex[:10]
    suite = TestMariaDB()
    receiver = suite.make(connector(mariadb_url), uid)
    source = Source(f"orders_{uid}", tmp_path)
    receiver.register(source.contract)
    try:
        source.put(1, 1, "one", at(1))
        suite.publish_checked(receiver, source, source.full(at(2)))
        move_to(mariadb_url, source.table, small_disk)
        before = suite.state(receiver, source.table)
        for id_ in range(2, 60_002):
            source.put(id_, id_ % 30, "x" * 200 + str(id_), at(3))
        decision = receiver.decide(*source.changes(at(2), at(4)))
        assert decision.to_publish, decision.receipt.failed
        with pytest.raises(MySQLdb.OperationalError, match="is full") as raised:
            receiver.publish(decision)
        assert raised.value.args[0] == 1114, raised.value.args
        assert suite.state(receiver, source.table) == before
        receiver.verify(source.table)
        assert len(suite.staging_left(receiver, decision.receipt.manifest)) == 1
        subprocess.run(["mount", "-o", "remount,size=64M", str(small_disk)], check=True)
        receipt = receiver.publish(decision)
        assert receipt.outcome is Outcome.ACCEPTED
        assert suite.published(receiver, source.table) == source.expected()
        assert receiver.verify(source.table).publications == 2
        assert suite.staging_left(receiver, decision.receipt.manifest) == []
    finally:
        drop_tables(mariadb_url, uid)


def test_staging_is_aria_and_a_unique_index_someone_added_still_refuses_a_duplicate(
    mariadb_url: str, tmp_path: Path
) -> None:
    """Staging tables are Aria tables (staging/mariadb.py). The publication's copy turns InnoDB's
    unique and foreign key checks off only where the published table has nothing for them to
    check (actions.py): a unique index someone added still refuses a duplicate, in an empty
    table too, and nothing is published."""
    uid = uuid.uuid4().hex[:10]
    suite = TestMariaDB()
    receiver = suite.make(connector(mariadb_url, local_infile=True), uid)
    source = Source(f"orders_{uid}", tmp_path)
    receiver.register(source.contract)
    connection = connector(mariadb_url)()
    try:
        source.put(1, 1, "same name", at(1))
        source.put(2, 1, "same name", at(1))
        decision = receiver.decide(*source.full(at(2)))
        assert decision.to_publish and decision.staged is not None, decision.receipt.failed
        cursor = connection.cursor()
        cursor.execute(
            "SELECT ENGINE FROM information_schema.TABLES "
            "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s",
            (decision.staged.table,),
        )
        assert cursor.fetchone() == ("Aria",)
        table = MARIADB.quote(source.table)
        cursor.execute(f"CREATE UNIQUE INDEX unique_name ON {table} (name(20))")
        before = suite.state(receiver, source.table)
        with pytest.raises(MySQLdb.IntegrityError) as raised:
            receiver.publish(decision)
        assert raised.value.args[0] == 1062, raised.value.args
        assert suite.state(receiver, source.table) == before
        cursor.execute(f"SELECT COUNT(*) FROM {table}")
        assert cursor.fetchone() == (0,)
    finally:
        connection.close()
        drop_tables(mariadb_url, uid)


def test_inserts_go_unchecked_only_into_an_empty_table_with_nothing_to_check(
    mariadb_url: str,
) -> None:
    """InnoDB's unique and foreign key checks are turned off for a publication's INSERT only
    where the table has neither a unique index nor a foreign key and no row yet: what turning
    them off speeds is an insert into an empty table (dialects/mariadb.py). A primary key on
    exactly the key columns has nothing to check, the row checks having proved the staged keys
    unique; one on other columns has."""
    uid = uuid.uuid4().hex[:10]
    name = f"checked_{uid}"
    table = MARIADB.quote(name)
    connection = connector(mariadb_url)()
    try:
        cursor = connection.cursor()
        cursor.execute(f"CREATE TABLE {table} (id BIGINT, day DATE, name TEXT)")
        assert not MARIADB.keeps_insert_checks(connection, name, ("id",))
        cursor.execute(f"INSERT INTO {table} (id, name) VALUES (1, 'one')")
        assert MARIADB.keeps_insert_checks(connection, name, ("id",))
        cursor.execute(f"DELETE FROM {table}")
        cursor.execute(f"ALTER TABLE {table} ADD PRIMARY KEY (day, id)")
        assert not MARIADB.keeps_insert_checks(connection, name, ("ID", "day"))
        assert MARIADB.keeps_insert_checks(connection, name, ("id",))
        cursor.execute(f"CREATE UNIQUE INDEX unique_id ON {table} (id)")
        assert MARIADB.keeps_insert_checks(connection, name, ("id", "day"))
    finally:
        connection.rollback()
        connection.close()
        drop_tables(mariadb_url, uid)


class Opened:
    """A connection factory that keeps the connections it opens (each a real one)."""

    def __init__(self, url: str) -> None:
        self.connect = connector(url)
        self.opened: list[Any] = []

    def __call__(self) -> Any:
        self.opened.append(self.connect())
        return self.opened[-1]

    def close(self) -> None:
        for connection in self.opened:
            if connection.open:
                connection.close()


def session_level(connection: Any) -> str:
    cursor = connection.cursor()
    try:
        cursor.execute("SELECT @@session.tx_isolation")
        return str(cursor.fetchone()[0])
    finally:
        cursor.close()


def test_a_gate_evaluates_on_the_connection_its_decision_read_on_at_repeatable_read(
    mariadb_url: str, tmp_path: Path
) -> None:
    """The stage's named lock ends with its session, which closes its connection: it runs on a
    new one, and the connection the decision read on waits for the evaluation, lent at the
    reader's REPEATABLE READ it kept; a writer after it reads committed again."""
    uid = uuid.uuid4().hex[:10]
    opened = Opened(mariadb_url)
    receiver = TestMariaDB().make(opened, uid)
    source = Source(f"orders_{uid}", tmp_path)
    try:
        receiver.register(source.contract)
        source.put(1, 1, "one", at(1))
        (registered,) = opened.opened
        decision = receiver.decide(*source.full(at(2)))
        assert decision.to_publish, decision.receipt.failed
        registered_again, staging = opened.opened
        assert registered_again is registered and registered.open
        assert not staging.open, "the stage's connection, with its named lock, is closed"
        with transaction(receiver.connect, MARIADB, write=False) as connection:
            assert connection is registered
            assert session_level(connection) == "REPEATABLE-READ"
        with transaction(receiver.connect, MARIADB) as connection:
            assert connection is registered
            assert session_level(connection) == "READ-COMMITTED"
        assert receiver.publish(decision).outcome is Outcome.ACCEPTED
        assert len(opened.opened) == 2
    finally:
        opened.close()
        drop_tables(mariadb_url, uid)


def test_a_lent_connection_begins_each_transaction_at_its_level(mariadb_url: str) -> None:
    """Whichever level the last transaction left its session at, and whether a named lock's
    transaction took a connection of its own, each transaction runs at the level it needs."""
    opened = Opened(mariadb_url)
    connect = Reusing(opened, lendable=MARIADB.lendable)
    try:
        for write in (True, False, False, True, True, False):
            with transaction(connect, MARIADB, write=write) as connection:
                assert connection is opened.opened[0]
                wanted = "READ-COMMITTED" if write else "REPEATABLE-READ"
                assert session_level(connection) == wanted
            with transaction(unlent(connect), MARIADB) as locking:
                assert locking is not opened.opened[0]
                MARIADB.lock_name(locking, f"dogana_stmts_{uuid.uuid4().hex[:8]}")
                assert session_level(locking) == "READ-COMMITTED"
            assert not locking.open
    finally:
        opened.close()


def test_a_transaction_begun_before_ddl_commits_what_follows_it_or_rolls_it_back(
    mariadb_url: str,
) -> None:
    """No START before a DROP, which commits at once: the statements after it still commit
    together at the end, or are rolled back together on an error, at a writer's level."""
    connect = connector(mariadb_url)
    uid = uuid.uuid4().hex[:10]
    table, notes = MARIADB.quote(f"dropped_{uid}"), MARIADB.quote(f"notes_{uid}")
    setup = connect()
    try:
        cursor = setup.cursor()
        cursor.execute(f"CREATE TABLE {notes} (name VARCHAR(20) PRIMARY KEY) ENGINE=InnoDB")
        cursor.execute(f"INSERT INTO {notes} VALUES ('a'), ('b')")
        setup.commit()
        for name, fails in (("a", True), ("b", False)):
            cursor.execute(f"CREATE TABLE {table} (id INT)")
            with (
                pytest.raises(RuntimeError) if fails else nullcontext(),
                transaction(connect, MARIADB, ddl_first=True) as connection,
            ):
                assert session_level(connection) == "READ-COMMITTED"
                writing = connection.cursor()
                writing.execute(f"DROP TABLE {table}")
                writing.execute(f"DELETE FROM {notes} WHERE name = %s", (name,))
                if fails:
                    raise RuntimeError("after the DELETE")
            setup.commit()
            cursor.execute(f"SELECT name FROM {notes} ORDER BY name")
            kept = [row[0] for row in cursor.fetchall()]
            assert kept == (["a", "b"] if fails else ["a"])
            cursor.execute(
                "SELECT COUNT(*) FROM information_schema.tables "
                "WHERE table_schema = DATABASE() AND table_name = %s",
                (f"dropped_{uid}",),
            )
            assert cursor.fetchone()[0] == 0, "the DROP commits at once"
    finally:
        cursor = setup.cursor()
        cursor.execute(f"DROP TABLE IF EXISTS {table}, {notes}")
        setup.close()


@pytest.mark.parametrize("autocommit", [False, True])
def test_a_writers_statements_commit_together_or_not_at_all_whatever_the_sessions_autocommit(
    mariadb_url: str, autocommit: bool
) -> None:
    """A writer's transaction sends no START where the session opens one at its first
    statement (autocommit off), and does where it commits each statement itself: either way
    its writes are seen by nobody before its commit, and rolled back together on an error."""
    uid = uuid.uuid4().hex[:10]
    notes = MARIADB.quote(f"notes_{uid}")
    other = connector(mariadb_url)()
    other.autocommit(True)
    cursor = other.cursor()
    cursor.execute(f"CREATE TABLE {notes} (name VARCHAR(20) PRIMARY KEY) ENGINE=InnoDB")

    def connect() -> Any:
        connection = connector(mariadb_url)()
        connection.autocommit(autocommit)
        return connection

    def seen() -> list[str]:
        cursor.execute(f"SELECT name FROM {notes} ORDER BY name")
        return [row[0] for row in cursor.fetchall()]

    try:
        for fails in (True, False):
            with (
                pytest.raises(RuntimeError) if fails else nullcontext(),
                transaction(connect, MARIADB) as connection,
            ):
                writing = connection.cursor()
                writing.execute(f"INSERT INTO {notes} VALUES ('a')")
                assert seen() == []
                writing.execute(f"INSERT INTO {notes} VALUES ('b')")
                assert session_level(connection) == "READ-COMMITTED"
                if fails:
                    raise RuntimeError("after both writes")
            assert seen() == ([] if fails else ["a", "b"])
    finally:
        cursor.execute(f"DROP TABLE IF EXISTS {notes}")
        other.close()


def rows_per_batch(connection: Any) -> int:
    """The staged rows a batch of MariadbDialect.keyed_batch takes, asked of the server as it
    asks: the buffer pool's old part's pages over four."""
    cursor = connection.cursor()
    cursor.execute(
        "SELECT @@innodb_buffer_pool_size DIV @@innodb_page_size "
        "* @@innodb_old_blocks_pct DIV 100 DIV 4"
    )
    (per,) = cursor.fetchone()
    cursor.close()
    return int(per)


def publish_spread_changes(
    mariadb_url: str, tmp_path: Path, *before: str, extra: bool = False
) -> tuple[list[str], int, dict[int, Any]]:
    """A changes delivery of more rows than the buffer pool's old part holds the pages of
    (MariadbDialect.keyed_batch): three batches, two whole and one half, of updated, deleted and
    new rows across the batches' edges, after a full one; before: statements run on the
    published table between the two (%s its quoted name). Checked as every publication of the
    suite is (the rows are the source's, the ledger verifies); then the first word of each
    statement the changes delivery ran on the published table, read from a cursor class that
    notes them, the batches there were, and (extra) the published column extra by id, which
    before added."""
    uid = uuid.uuid4().hex[:10]
    statements: list[str] = []

    class Noting(MySQLdb.cursors.Cursor):  # type: ignore[misc]
        def execute(self, query: Any, args: Any = None) -> Any:
            statements.append(str(query))
            return super().execute(query, args)

    suite = TestMariaDB()
    receiver = suite.make(connector(mariadb_url, cursorclass=Noting), uid)
    source = Source(f"orders_{uid}", tmp_path)
    receiver.register(source.contract)
    target = MARIADB.quote(source.table)
    connection = connector(mariadb_url)()
    extras: dict[int, Any] = {}
    try:
        per = rows_per_batch(connection)
        changed = 2 * per + per // 2  # three batches: two whole, one half
        updated, deleted = changed * 8 // 10, tuple(range(2, changed // 5 * 2, 2))
        for id_ in range(1, 2 * changed + 1):
            source.put(id_, id_ % 30, f"n{id_}", at(1))
        suite.publish_checked(receiver, source, source.full(at(2)))
        cursor = connection.cursor()
        for statement in before:
            cursor.execute(statement % target)
        connection.commit()
        for id_ in range(1, 2 * updated, 2):
            source.put(id_, 1, f"changed {id_}", at(3))
        for id_ in deleted:
            source.delete(id_)
        for id_ in range(2 * changed + 1, 2 * changed + 1 + changed - updated - len(deleted)):
            source.put(id_, 2, f"new {id_}", at(3))
        staged = MARIADB.keyed_batch(connection, changed)
        assert staged is not None
        statements.clear()
        suite.publish_checked(receiver, source, source.changes(at(2), at(4), deleted))
        if extra:
            cursor.execute(f"SELECT id, extra FROM {target}")
            extras = dict(cursor.fetchall())
    finally:
        connection.close()
        drop_tables(mariadb_url, uid)
    published = [
        statement.split()[0]
        for statement in statements
        if statement.startswith(
            (f"DELETE {target} ", f"INSERT INTO {target} ", f"UPDATE {target} ")
        )
    ]
    return published, -(-changed // staged), extras


NO_PRIMARY_KEY = "ALTER TABLE %s DROP PRIMARY KEY"
"""A published table keyed by a key index of its own (one created before its key was its
primary key, MariadbDialect.primary_key, as a text key's still is)."""


def test_a_keyed_table_is_created_with_its_key_as_its_primary_key_a_text_key_with_an_index(
    mariadb_url: str, tmp_path: Path
) -> None:
    """A keyed table whose key is an integer, a date or a datetime is created with it as its
    primary key, which is its key index: InnoDB clusters the rows by it, and the database's
    own upsert finds them there (MariadbDialect.primary_key). A text key is indexed by a
    prefix alone, which would refuse two keys sharing it: it keeps a key index that is not
    unique, as every key did before."""
    uid = uuid.uuid4().hex[:10]
    suite = TestMariaDB()
    receiver = suite.make(connector(mariadb_url), uid)
    source = Source(f"orders_{uid}", tmp_path)
    receiver.register(source.contract)
    connection = connector(mariadb_url)()
    try:
        source.put(1, 1, "one", at(1))
        suite.publish_checked(receiver, source, source.full(at(2)))
        cursor = connection.cursor()
        cursor.execute(
            "SELECT INDEX_NAME, NON_UNIQUE, COLUMN_NAME FROM information_schema.STATISTICS "
            "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s AND INDEX_NAME NOT LIKE %s",
            (source.table, "dogana\\_window\\_%"),
        )
        assert cursor.fetchall() == (("PRIMARY", 0, "id"),)
        assert MARIADB.primary_key(("int",)) and MARIADB.primary_key(("date", "datetime"))
        assert not MARIADB.primary_key(("int", "str")) and not MARIADB.primary_key((None,))
    finally:
        connection.close()
        drop_tables(mariadb_url, uid)


def test_a_spread_changes_delivery_into_a_table_keyed_by_its_primary_key_is_one_upsert(
    mariadb_url: str, tmp_path: Path
) -> None:
    """Where the key is the published table's primary key and its only unique index, and no
    trigger would tell an update from a delete and an insert, the live staged rows are
    published by the database's own upsert, INSERT ... ON DUPLICATE KEY UPDATE, however many,
    and the tombstones' rows deleted after: two statements (MariadbDialect.upserts_by_key)."""
    published, _, _ = publish_spread_changes(mariadb_url, tmp_path)
    assert published == ["INSERT", "DELETE"]


def test_a_table_created_before_and_given_its_primary_key_by_hand_is_upserted(
    mariadb_url: str, tmp_path: Path
) -> None:
    """A table created with a key index of its own (an earlier release's) is upserted once
    someone adds the primary key docs/operators.md tells them to: its key index, not unique,
    stays and changes nothing."""
    published, _, _ = publish_spread_changes(
        mariadb_url,
        tmp_path,
        NO_PRIMARY_KEY,
        "CREATE INDEX dogana_test_key ON %s (id)",
        "ALTER TABLE %s ADD PRIMARY KEY (id)",
    )
    assert published == ["INSERT", "DELETE"]


def test_a_table_with_another_unique_index_is_not_upserted_on_it(
    mariadb_url: str, tmp_path: Path
) -> None:
    """INSERT ... ON DUPLICATE KEY UPDATE updates the row of whichever unique index the insert
    collides with: a published table someone gave a second one is published batch by batch,
    its rows updated in place by key."""
    published, batches, _ = publish_spread_changes(
        mariadb_url, tmp_path, "CREATE UNIQUE INDEX dogana_test_unique ON %s (id, name(20))"
    )
    assert published == ["UPDATE", "INSERT", "DELETE"] * batches


def test_a_spread_changes_delivery_is_published_in_batches_the_buffer_pool_holds(
    mariadb_url: str, tmp_path: Path
) -> None:
    """A changes delivery of more rows than the buffer pool's old part holds the pages of, into
    a table keyed by an index of its own, is published batch by batch, in the one transaction;
    the published rows whose key a batch stages live are updated in place
    (MariadbDialect.updates_in_place), each batch's UPDATE by staged key followed by its INSERT
    of the keys not published and its tombstones' DELETE. The key index is the next delivery's
    to build where the table lacks both it and the primary key."""
    published, batches, _ = publish_spread_changes(mariadb_url, tmp_path, NO_PRIMARY_KEY)
    assert batches == 3
    assert published == ["UPDATE", "INSERT", "DELETE"] * batches


def test_a_published_table_with_a_trigger_keeps_delete_and_insert_in_its_batches(
    mariadb_url: str, tmp_path: Path
) -> None:
    """A trigger would see an UPDATE where it saw a DELETE and an INSERT: a published table
    with one, keyed by its primary key too, is published neither by the upsert nor in place
    but as before, each batch's DELETE of its staged keys, live or tombstone, followed by its
    INSERT of the live rows."""
    trigger = f"dogana_test_{uuid.uuid4().hex[:10]}"
    published, batches, _ = publish_spread_changes(
        mariadb_url,
        tmp_path,
        f"CREATE TRIGGER {trigger} BEFORE INSERT ON %s FOR EACH ROW SET NEW.name = NEW.name",
    )
    assert published == ["DELETE", "INSERT"] * batches


@pytest.mark.parametrize(
    ("before", "first"), [((), "INSERT"), ((NO_PRIMARY_KEY,), "UPDATE")], ids=["upsert", "in_place"]
)
def test_a_row_updated_is_null_in_a_published_column_its_file_lacks(
    mariadb_url: str, tmp_path: Path, before: tuple[str, ...], first: str
) -> None:
    """A row the upsert updates, or a batch updates in place, is the staged row, as one deleted
    and inserted anew: a published column the file lacks is NULL in it, and kept in the rows
    the delivery leaves."""
    published, _, extra = publish_spread_changes(
        mariadb_url,
        tmp_path,
        *before,
        "ALTER TABLE %s ADD COLUMN extra BIGINT",
        "UPDATE %s SET extra = 7",
        extra=True,
    )
    assert published[0] == first
    changed = {id_ for id_, value in extra.items() if value is None}
    kept = {id_ for id_, value in extra.items() if value == 7}
    assert changed and kept and changed | kept == set(extra)
    per = rows_per_batch_at(mariadb_url)
    updated = (2 * per + per // 2) * 8 // 10
    assert changed >= set(range(1, 2 * updated, 2))
    assert not kept & set(range(1, 2 * updated, 2))


def rows_per_batch_at(mariadb_url: str) -> int:
    connection = connector(mariadb_url)()
    try:
        return rows_per_batch(connection)
    finally:
        connection.close()


def test_a_changes_delivery_whose_fitting_batches_would_be_too_many_is_published_at_once(
    mariadb_url: str,
) -> None:
    """Batches larger than the buffer pool's old part holds save no page reads, and each batch
    scans the staging table: a delivery that would need more batches than the most that fit is
    published at once, as one of up to 1,000 rows is, and one that needs fewer is batched."""
    connection = connector(mariadb_url)()
    try:
        per = rows_per_batch(connection)
        assert MARIADB.keyed_batch(connection, 1_000) is None
        assert MARIADB.keyed_batch(connection, 64 * per) == per
        assert MARIADB.keyed_batch(connection, 64 * per + 1) is None
    finally:
        connection.close()
