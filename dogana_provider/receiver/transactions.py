"""One transaction per step, with each database's way to take the lock.

Each transaction takes a connection and gives it back when it ends. On SQLite and MariaDB that
is a new connection, closed after (MariaDB's named locks, Dialect.lock_name, end with their
session). On PostgreSQL a receiver lends the next transaction the connection the last one
finished with, committed or rolled back and idle (Reusing): a delivery's four steps run about a
dozen transactions, and a new connection costs more than most of them. Nothing
a transaction leaves on its session outlives it there: the isolation level is set per
transaction, and the advisory locks (Dialect.lock_schema) are transaction-scoped.

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
    dialect.begin(connection, write=write)
