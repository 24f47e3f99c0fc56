"""One transaction per step, with each database's way to take the lock.

Each transaction takes a connection and gives it back when it ends. On SQLite and MariaDB that
is a new connection, closed after (MariaDB's named locks, hold_name, end with their session).
On PostgreSQL a receiver lends the next transaction the connection the last one finished with,
committed or rolled back and idle (Reusing): a delivery's four steps run about a dozen
transactions, and a new connection costs 2.5 ms on an idle machine, tens on a busy one. Nothing
a transaction leaves on its session outlives it there: the isolation level is set per
transaction, and the advisory locks (schema_lock) are transaction-scoped.

A publication must lock the table's head before it compares it with the receipt's base
(The receiver, what it owes 2). PostgreSQL and MariaDB lock the store's row with SELECT ... FOR
UPDATE inside an ordinary transaction (store.py), whose writers read committed data, so a
publisher that waited for the lock sees what the winner committed. SQLite has no row locks:
BEGIN IMMEDIATE takes the database's write lock at the start, so no other writer can commit
between the comparison and the commit. Readers use REPEATABLE READ (SQLite: a read transaction),
so the ledger and the rows they read come from one committed state.

Any exception rolls the transaction back and propagates: an operational failure leaves nothing
half-written, and no receipt is saved for what did not happen.
"""

from __future__ import annotations

import importlib
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

from dogana_provider.dialects import Dialect

Connect = Callable[[], Any]
"""A DB-API connection factory: each call returns a new connection (hook.get_conn, say)."""

IDLE = 0
"""The transaction status of a PostgreSQL session outside any transaction (psycopg 2 and 3)."""


class Reusing:
    """A Connect lending the connections its transactions gave back, idle, to the next ones.

    At most `keep` wait, each for `fresh` seconds at most: a step's transactions follow each
    other within milliseconds, while a receiver a long-lived process keeps (a triggerer's) must
    not meet a connection the server closed while it waited. A connection whose transaction
    raised is closed instead.
    """

    def __init__(self, connect: Connect, keep: int = 2, fresh: float = 10.0) -> None:
        self.connect = connect
        self.keep = keep
        self.fresh = fresh
        self._idle: list[tuple[Any, float]] = []
        self._lock = threading.Lock()

    def __call__(self) -> Any:
        stale = []
        with self._lock:
            while self._idle:
                connection, since = self._idle.pop()
                if time.monotonic() - since <= self.fresh:
                    break
                stale.append(connection)
            else:
                connection = None
        for old in stale:
            with suppress(Exception):
                old.close()
        return self.connect() if connection is None else connection

    def give_back(self, connection: Any, *, ended: bool) -> None:
        """ended: its transaction committed; the connection is kept when it is idle too."""
        if ended and _idle(connection):
            with self._lock:
                if len(self._idle) < self.keep:
                    self._idle.append((connection, time.monotonic()))
                    return
        connection.close()


def _idle(connection: Any) -> bool:
    try:
        return not connection.closed and int(connection.info.transaction_status) == IDLE
    except (AttributeError, TypeError, ValueError):
        return False  # not a psycopg connection: never lent again


@contextmanager
def transaction(connect: Connect, dialect: Dialect, *, write: bool = True) -> Iterator[Any]:
    """A connection inside one transaction, committed on success and rolled back on error."""
    connection = connect()
    ended = False
    try:
        _begin(connection, dialect, write=write)
        try:
            yield connection
        except BaseException:
            # A lost connection cannot roll back (its server already has): keep the real error.
            with suppress(Exception):
                connection.rollback()
            raise
        connection.commit()
        ended = True
    finally:
        if isinstance(connect, Reusing):
            connect.give_back(connection, ended=ended)
        else:
            connection.close()


def _begin(connection: Any, dialect: Dialect, *, write: bool) -> None:
    if dialect.name == "sqlite":
        # sqlite3 would open a deferred transaction at the first write, too late for a lock.
        statement = "BEGIN IMMEDIATE" if write else "BEGIN"
    elif dialect.name == "postgresql":
        # psycopg opens the transaction at the first statement; fix its isolation first.
        statement = "SET TRANSACTION ISOLATION LEVEL " + (
            "READ COMMITTED" if write else "REPEATABLE READ"
        )
    else:
        # MySQL/MariaDB: SET TRANSACTION applies to the next transaction, started explicitly.
        level = "READ COMMITTED" if write else "REPEATABLE READ"
        snapshot = "" if write else " WITH CONSISTENT SNAPSHOT"
        statement = f"SET TRANSACTION ISOLATION LEVEL {level}; START TRANSACTION{snapshot}"
    cursor = connection.cursor()
    try:
        for part in statement.split("; "):
            cursor.execute(part)
    finally:
        cursor.close()


def schema_lock(connection: Any, dialect: Dialect, name: str) -> None:
    """Serialize, until the transaction ends, the callers that create or alter tables under name.

    PostgreSQL's CREATE TABLE IF NOT EXISTS is not safe against itself: two transactions that
    both see no table both insert its row type, and the second fails with a UniqueViolation on
    pg_type. A transaction-scoped advisory lock, keyed by the schema and the name, makes the
    second wait for the first's commit and then find the table. MariaDB takes a metadata lock
    on the table's name for each DDL statement, and SQLite's BEGIN IMMEDIATE holds the
    database's write lock: both already serialize.
    """
    if dialect.name != "postgresql":
        return
    cursor = connection.cursor()
    try:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(current_schema() || '.' || %s, 0))",
            (name,),
        )
    finally:
        cursor.close()


def transactional_ddl(dialect: Dialect) -> bool:
    """Whether DDL (CREATE, ALTER, DROP) joins the transaction; MySQL/MariaDB commit at each."""
    return dialect.name in ("sqlite", "postgresql")


def streaming_cursor(connection: Any, dialect: Dialect) -> Any:
    """A cursor that fetches a large result from the server in batches.

    The default cursors of psycopg and MySQLdb hold a whole result in client memory; a named
    (server-side) cursor and MySQLdb's SSCursor do not. sqlite3 already steps through rows.
    """
    if dialect.name == "postgresql":
        return connection.cursor(name=f"dogana_{secrets.token_hex(8)}")
    if dialect.name == "mysql" and type(connection).__module__.startswith("MySQLdb"):
        cursors = importlib.import_module("MySQLdb.cursors")
        return connection.cursor(cursors.SSCursor)
    return connection.cursor()


def hold_name(connection: Any, dialect: Dialect, name: str) -> None:
    """Hold a named lock for as long as the connection lives, where DDL commits at once.

    MariaDB commits a staging table's CREATE at once, so its half-loaded rows outlive a killed
    loader; the loader's session lock on the table's name, which the server releases when the
    session ends however it ends, is what tells sweep the loader is gone. Elsewhere the load is
    one transaction, which a kill rolls back: nothing to hold.
    """
    if transactional_ddl(dialect):
        return
    if _scalar(connection, "SELECT GET_LOCK(%s, 0)", (name,)) != 1:
        raise RuntimeError(f"the lock on {name!r} is held by another session")


def name_released(connection: Any, dialect: Dialect, name: str, wait: float = 1.0) -> bool:
    """Take the named lock of hold_name when its holder is gone (waiting up to wait seconds):
    True then, and it is held by this connection until it closes; False while a holder lives,
    and always where DDL joins the transaction (nothing holds a name there)."""
    if transactional_ddl(dialect):
        return False
    return _scalar(connection, "SELECT GET_LOCK(%s, %s)", (name, wait)) == 1


def _scalar(connection: Any, sql: str, params: tuple[Any, ...]) -> Any:
    cursor = connection.cursor()
    try:
        cursor.execute(sql, params)
        return cursor.fetchone()[0]
    finally:
        cursor.close()
