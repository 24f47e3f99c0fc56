"""SQLite's bulk load for staging: a delivered file's rows into a private SQLite file by ADBC,
then into the staging table by one INSERT ... SELECT.

sqlite3 binds one Python object per value (executemany), most of a SQLite gate's time. ADBC's
SQLite driver (adbc-driver-sqlite) binds Arrow arrays in C, but carries its own copy of SQLite,
which must never open a file Python's sqlite3 has open in the same process (POSIX locks belong
to a process: either copy would release or override the other's). So it writes a file of its
own, which nothing else opens until it is closed: ``preload`` reads the delivered file exactly as
staging does (the same checks, the same refusals, the same hash), before the staging transaction,
into a table declared as the staging table will be, each batch as sqlite3 would have bound it
(SQLITE.values, as Arrow arrays), so the same column affinities apply to the same values.
The staging transaction then attaches that file (SQLite attaches outside a transaction only,
hence ``attaching``) and copies its table whole (``Preloaded.copy``): two tables declared alike,
SQLite copies the records as they are, rowids (the row numbers, staging.row_number) included.

Where the driver is not installed, or the staging reads only some of a file's columns (the CLI's
check), staging binds each batch (staging/__init__.py's executemany), and says so in the log.

The private file lives in the temporary folder while its loader holds a lock on a file beside
it (flock, which SQLite's own POSIX locks never meet). A loader killed before it removed its
file leaves both behind; the next preload on the machine takes such a lock, proving its holder
gone, and removes the pair.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

from dogana_core.contract import Contract
from dogana_provider.delivery.files import DeliveredFile, MisnamedColumn, UnreadableFile
from dogana_provider.dialects import SQLITE, Dialect, execute
from dogana_provider.staging.table import (
    ROW_COLUMN,
    column_definitions,
    refuse_unstorable,
    stores_row_column,
)

LOADED = "dogana_load"
"""The schema the private file is attached as, and its table's name."""
PREFIX = "dogana-load-"
LOCK = ".lock"
ORPHAN_AFTER = 60  # seconds


@dataclass
class Preloaded:
    """A delivered file read through staging's checks into a private SQLite file."""

    database: str
    """The private file; its table LOADED is declared as the staging table and holds the rows."""
    rows: int
    sha256: str | None
    error: UnreadableFile | None
    """What staging would have refused while reading the rows; then nothing is loaded."""

    def copy(self, connection: Any, table: str) -> None:
        """The loaded rows into the (new, empty, alike) staging table, in the caller's
        transaction, on a connection ``attaching`` made."""
        loaded = f"{SQLITE.quote(LOADED)}.{SQLITE.quote(LOADED)}"
        # One statement, undone alone if it fails; its failure is operational (the rows were
        # checked as they were preloaded) and raises out of the stage's transaction.
        execute(connection, f"INSERT INTO {SQLITE.quote(table)} SELECT * FROM {loaded}")

    lock: Any = None

    def hold(self) -> None:
        """Take the lock beside the file, held until remove()."""
        if fcntl is None:  # no flock here: orphans stay for the system to clean
            return
        self.lock = open(self.database + LOCK, "w")  # noqa: SIM115 - closed in remove()
        fcntl.flock(self.lock, fcntl.LOCK_EX)

    def remove(self) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self.database)
        if self.lock is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.database + LOCK)
            self.lock.close()
            self.lock = None


def remove_orphans(folder: Path) -> list[str]:
    """Remove the private files in folder whose loader is gone (its lock is free); their names."""
    removed = []
    if fcntl is None:
        return removed
    for lock_path in folder.glob(f"{PREFIX}*.sqlite{LOCK}"):
        try:
            if time.time() - lock_path.stat().st_mtime < ORPHAN_AFTER:
                continue  # its loader may be between creating it and taking it
            with open(lock_path, "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                database = str(lock_path)[: -len(LOCK)]
                with contextlib.suppress(OSError):
                    os.unlink(database)
                os.unlink(lock_path)
                removed.append(database)
        except OSError:  # held by a live loader, or already removed by another
            continue
    return removed


def preload(path: str, contract: Contract, dialect: Dialect) -> Preloaded | None:
    """The file's rows in a private SQLite file, or None where this load does not serve."""
    if dialect is not SQLITE:
        return None
    try:
        dbapi = importlib.import_module("adbc_driver_sqlite.dbapi")
    except ImportError:
        logging.getLogger(__name__).info("staging binds row by row: adbc-driver-sqlite is missing")
        return None
    remove_orphans(Path(tempfile.gettempdir()))
    handle, database = tempfile.mkstemp(prefix=PREFIX, suffix=".sqlite")
    os.close(handle)
    loaded = Preloaded(database, 0, None, None)
    loaded.hold()
    try:
        with DeliveredFile(path, contract) as delivered:
            try:
                loaded.rows = _load(dbapi, database, delivered, dialect)
                loaded.sha256 = delivered.sha256()
            except UnreadableFile as error:
                loaded.error = error
                with contextlib.suppress(UnreadableFile):
                    loaded.sha256 = delivered.sha256()
    except BaseException:
        loaded.remove()
        raise
    return loaded


def _load(dbapi: Any, database: str, delivered: DeliveredFile, dialect: Dialect) -> int:
    """staging.stage_file's reading of every column, into the private file."""
    columns = delivered.columns
    if ROW_COLUMN in {c.name for c in columns}:
        raise MisnamedColumn(
            delivered.path, "is a name dogana reserves for staging", column=ROW_COLUMN
        )
    for column in columns:
        if column.logical is None:
            raise UnreadableFile(
                delivered.path, f"cannot be staged: {column.problem}", column=column.name
            )
    types = tuple((c.name, str(c.logical)) for c in columns)
    numbered = stores_row_column(dialect, (name for name, _ in types))
    definitions = column_definitions(dialect, types)
    marks = ", ".join("?" for _ in definitions)
    connection = dbapi.connect(database, autocommit=True)
    rows = 0
    try:
        cursor = connection.cursor()
        try:
            # A private scratch file: nothing to recover after a crash.
            cursor.execute("PRAGMA journal_mode = OFF")
            cursor.execute("PRAGMA synchronous = OFF")
            cursor.execute(f"CREATE TABLE {dialect.quote(LOADED)} ({', '.join(definitions)})")
            cursor.execute("BEGIN")
            insert = f"INSERT INTO {dialect.quote(LOADED)} VALUES ({marks})"
            fields = [f"c{i}" for i in range(len(definitions))]
            # The driver binds a batch without the GIL: the next batch is read from the file
            # and converted meanwhile, the two on two cores where there are two. Each row gets
            # the next rowid, so the rowids number the rows in file order from 1.
            with ThreadPoolExecutor(1, thread_name_prefix="dogana-load") as binder:
                binding: Future[Any] | None = None
                for batch in delivered.batches([name for name, _ in types]):
                    refuse_unstorable(dialect, delivered.path, batch, types)
                    arrays = [_bound(batch.column(i), kind) for i, (_, kind) in enumerate(types)]
                    if numbered:  # every rowid name is a column's: ROW_COLUMN numbers them
                        numbers = range(rows + 1, rows + batch.num_rows + 1)
                        arrays.insert(0, pa.array(numbers, pa.int64()))
                    if binding is not None:
                        binding.result()
                    bound = pa.RecordBatch.from_arrays(arrays, names=fields)
                    binding = binder.submit(cursor.executemany, insert, bound)
                    rows += batch.num_rows
                if binding is not None:
                    binding.result()
            cursor.execute("COMMIT")
        finally:
            cursor.close()
    finally:
        connection.close()
    return rows


def _bound(array: pa.Array, logical: str) -> pa.Array:
    """A column as sqlite3 binds SQLITE.values(array, logical): text for dates, datetimes and
    decimals (in the very spelling SQLITE.values gives them), 0/1 for booleans, the rest as
    it is."""
    if logical == "datetime":
        return array.cast(pa.timestamp("us")).cast(pa.string())
    if logical in ("date",) or logical.startswith("decimal("):
        return array.cast(pa.string())
    if logical == "bool":
        return array.cast(pa.int64())
    return array


def attaching(connect: Callable[[], Any], loaded: Preloaded) -> Attaching:
    """connect, each connection with the private file attached (before any transaction)."""
    return Attaching(connect, loaded)


class Attaching:
    """attaching's connect. A connection its transaction gives back (transactions.py) is
    detached and given back to connect, where connect lends connections on (Reusing): the
    file must not stay open in a connection that outlives the load."""

    def __init__(self, connect: Callable[[], Any], loaded: Preloaded) -> None:
        self.connect = connect
        self.loaded = loaded

    def __call__(self) -> Any:
        connection = self.connect()
        try:
            connection.execute(
                f"ATTACH DATABASE ? AS {SQLITE.quote(LOADED)}", (self.loaded.database,)
            )
        except BaseException:
            connection.close()
            raise
        return connection

    def give_back(self, connection: Any, *, ended: bool) -> None:
        lender = getattr(self.connect, "give_back", None)
        if lender is not None and ended:
            try:
                connection.execute(f"DETACH DATABASE {SQLITE.quote(LOADED)}")
            except sqlite3.Error:
                ended = False  # closed below: the file goes with the connection
            else:
                lender(connection, ended=True)
                return
        connection.close()


@contextlib.contextmanager
def preloaded(path: str, contract: Contract, dialect: Dialect) -> Iterator[Preloaded | None]:
    """preload, its private file removed on the way out."""
    loaded = preload(path, contract, dialect)
    try:
        yield loaded
    finally:
        if loaded is not None:
            loaded.remove()
