"""One transaction per step, with each database's way to take the lock.

Each transaction takes a connection and gives it back when it ends. A receiver lends the next
transaction the connection the last one finished with, committed and idle (Reusing): a
delivery's four steps run about a dozen transactions, and a new connection costs more than most
of them (on SQLite, the file opened again and its schema read). The dialect says which may be
lent (Dialect.lendable): one holding nothing that outlives its transaction. PostgreSQL sets the
isolation level per transaction and takes transaction-scoped advisory locks; a MariaDB
connection that asked for a named lock (Dialect.lock_name), which ends with its session, is
closed instead; a SQLite connection is lent only to its own thread.

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
from dogana_provider.dialects.base import idle_session

Connect = Callable[[], Any]
"""A DB-API connection factory: each call returns a new connection (hook.get_conn, say)."""


class Reusing:
    """A Connect lending the connections its transactions gave back, idle, to the next ones.

    At most `keep` wait, each for `fresh` seconds at most: a step's transactions follow each
    other within milliseconds, while a receiver a long-lived process keeps (a triggerer's) must
    not meet a connection the server closed while it waited. A connection whose transaction
    raised, or which `lendable` refuses, is closed instead. A connection is lent only to the
    thread that gave it back: sqlite3's refuse any other.
    """

    def __init__(
        self,
        connect: Connect,
        keep: int = 2,
        fresh: float = 10.0,
        *,
        lendable: Callable[[Any], bool] = idle_session,
    ) -> None:
        self.connect = connect
        self.lendable = lendable
        self.keep = keep
        self.fresh = fresh
        self._idle: list[tuple[Any, float, int]] = []
        self._lock = threading.Lock()

    def __call__(self) -> Any:
        stale = []
        thread = threading.get_ident()
        connection = None
        with self._lock:
            for kept in reversed(self._idle):
                if kept[2] != thread:
                    continue
                self._idle.remove(kept)
                if time.monotonic() - kept[1] <= self.fresh:
                    connection = kept[0]
                    break
                stale.append(kept[0])
        for old in stale:
            with suppress(Exception):
                old.close()
        return self.connect() if connection is None else connection

    def give_back(self, connection: Any, *, ended: bool) -> None:
        """ended: its transaction committed; the connection is kept when it is idle too."""
        if ended and self.lendable(connection):
            with self._lock:
                if len(self._idle) < self.keep:
                    self._idle.append((connection, time.monotonic(), threading.get_ident()))
                    return
        connection.close()


def unlent(connect: Connect) -> Connect:
    """A Connect for a transaction whose connection is not lent on after it (a MariaDB named
    lock ends with its session): a new connection, closed after the transaction, so that the
    idle one a Reusing keeps, at its session's isolation level, waits for the transaction
    after it instead of being spent on this one."""
    return connect.connect if isinstance(connect, Reusing) else connect


@contextmanager
def transaction(
    connect: Connect, dialect: Dialect, *, write: bool = True, ddl_first: bool = False
) -> Iterator[Any]:
    """A connection inside one transaction, committed on success and rolled back on error.

    ddl_first: the transaction's first statement is DDL, which commits at once where DDL does
    not join a transaction (Dialect.begin_for_ddl)."""
    connection = connect()
    ended = False
    try:
        if ddl_first:
            dialect.begin_for_ddl(connection, write=write)
        else:
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
        give_back = getattr(connect, "give_back", None)  # a Reusing's, or one wrapping it
        if give_back is not None:
            give_back(connection, ended=ended)
        else:
            connection.close()


def _begin(connection: Any, dialect: Dialect, *, write: bool) -> None:
    dialect.begin(connection, write=write)
