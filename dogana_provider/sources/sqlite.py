"""SQLite: one read transaction on the database file, marked by PRAGMA data_version.

An SQLite file has no server and so no clock of its own: its writers stamp rows with the clock of
the machine they run on, which for a local file is this one, read here at microseconds. The
snapshot is the read transaction's: BEGIN takes no lock, its first read does (in WAL mode, the
point of the log it reads up to). PRAGMA data_version changes when another connection commits,
so equal values before the clock reading and inside the transaction prove no commit between.

In the default rollback-journal mode a reader blocks writers until it ends, which is consistent
but stalls them; WAL mode lets writers commit while the read runs and is what a live source uses.

SQLite stores datetimes as text in whatever form its writers chose. Comparisons therefore go through
dogana_utc(), a function registered on the connection that spells any ISO 8601 text (with or without
an offset; without one it is UTC) in one fixed-width UTC form, the form values are bound in
(dialects/sqlite.py's sqlite_datetime), so text order is time order; dates likewise through
dogana_date.

The rows of a full read go straight into Arrow through ADBC's SQLite driver (adbc-driver-sqlite,
sources/bulk.py), in a process of its own (sources/sqlite_reader.py: the driver's copy of SQLite
must not share a process with sqlite3's on one file), started at the first such read. Its
connection takes its own read transaction, which must show exactly what the read's shows:
SQLite cannot hand a snapshot from one connection to another. A witness, a third connection
(sqlite3, idle), reads data_version before the clock reading t and again once the reader's
snapshot is taken. Equal values prove no connection committed between the two readings, an
interval that holds t, the read's snapshot and the reader's: both show the database at t. A
commit in between (a busy source) leaves the rows to sqlite3, in the read's own snapshot, as
they are whenever there is no reader: the driver is not installed, the database is not a file
(in memory), other databases are attached to the read's connection (the reader would not see
them), or the statement compares through dogana_utc(), which the reader lacks (a changes read:
few rows, looked up by text ranges). Each case is named in the log. A snapshot whose every read
compares through dogana_utc() or dogana_date() opens no witness (SqliteSnapshots.expect).

The reader's process is started before the read's connection opens when a whole-table read is
expected (SqliteSnapshots.expect), and asked to open the file before the clock reading: it
imports the driver and pyarrow meanwhile, which the read would otherwise wait for. Its snapshot
is still taken only after the witness's first marker, as above. A reader that took no snapshot
is stopped at once when the read ends.
"""

from __future__ import annotations

import importlib.util
import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa

from dogana_provider.dialects import SQLITE, declared_type, sqlite_datetime
from dogana_provider.sources.bulk import sqlite_read, sqlite_serves
from dogana_provider.sources.snapshot import Connect, SlowPath, Snapshot, SnapshotSource


def normalized_datetime(value: Any) -> str | None:
    """Any ISO 8601 text (or datetime) as sqlite_datetime spells it; None stays None."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if not isinstance(value, datetime):
        raise ValueError(f"{value!r} is not an ISO 8601 datetime")
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return sqlite_datetime(value)


def _last_remembered(function: Callable[[Any], str | None]) -> Callable[[Any], str | None]:
    """function, answering again at once for the text it was last called with.

    A filter between two bounds calls it twice on each row's value (dogana_utc(c) > since AND
    dogana_utc(c) <= until), and SQLite evaluates each call anew: remembered, the second
    costs nothing. Only texts are remembered, compared by content; a call that raises
    remembers nothing.
    """
    last: list[tuple[Any, str | None]] = [(None, None)]  # one pair, replaced whole

    def remembered(value: Any) -> str | None:
        seen, answer = last[0]
        if type(value) is str and value == seen:
            return answer
        result = function(value)
        if type(value) is str:
            last[0] = (value, result)
        return result

    return remembered


# Text ranges -------------------------------------------------------------------------------------

DAY_MARGIN = timedelta(days=2)
"""More than the widest offset (under 24 hours) on each side: a stored text's own date is within
a day of the UTC date of the instant it spells; the second day is slack that costs nothing."""
MAX_YEARS = 8
"""Past this many years between the bounds, no ranges: the read scans, as it did."""


def text_ranges(low: datetime, high: datetime) -> list[tuple[str, str]] | None:
    """Text ranges (exclusive at both ends) that hold every text dogana_utc() reads as an instant
    in [low, high], so that a filter through dogana_utc() may first look the cursor column's
    index up by them and call dogana_utc() only on the rows found; None when they would span
    more than MAX_YEARS years.

    Why no such text is missed: dogana_utc() reads a text with datetime.fromisoformat, whose
    every accepted text starts with the four digits of a year and then spells a date in one
    of these forms (tests/sources/test_text_ranges.py holds the list against the Python that
    runs): YYYY-MM-DD, YYYYMMDD, YYYY-Www[-D], YYYYWww[D]. The text spells a local time L with
    an offset under 24 hours from the UTC instant, so L's date is within a day of the instant's
    UTC date, and the extended form's text starts with that date: it sorts between the day
    before the low date's and the day after the high date's (with DAY_MARGIN). The basic form
    sorts among the texts starting with its year and a digit; the week forms among those
    starting with their week-numbering year and W or -W, which is the calendar year of the
    date or the one before or after. Numbers sort before every text and blobs after, so they
    fall in no range: dogana_utc() refused them, and the filter no longer looks at them.
    The bounds are never numbers (SQLite would compare a NUMERIC column with them as numbers).
    """
    try:
        first = normalized_instant(low).date() - DAY_MARGIN
        last = normalized_instant(high).date() + DAY_MARGIN
        extended = ((first - timedelta(days=1)).isoformat(), (last + timedelta(days=1)).isoformat())
    except OverflowError:  # within days of year 1 or 9999
        return None
    if last.year - first.year > MAX_YEARS:
        return None
    ranges = [extended]
    for year in range(first.year, last.year + 1):
        ranges.append((f"{year:04d}/", f"{year:04d}:"))  # a digit follows the year
    for year in range(max(1, first.year - 1), min(9999, last.year + 1) + 1):
        ranges.append((f"{year:04d}W", f"{year:04d}X"))
        ranges.append((f"{year:04d}-W", f"{year:04d}-X"))
    return ranges


def normalized_instant(value: datetime) -> datetime:
    """An aware UTC datetime; a naive one is UTC, as dogana_utc() reads it."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def normalized_date(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return date.fromisoformat(value[:10]).isoformat()
    raise ValueError(f"{value!r} is not an ISO 8601 date")


class SqliteSnapshots(SnapshotSource):
    dialect = SQLITE
    one_reader = (
        "one reader: an SQLite read is one file's read transaction, which no other connection "
        "can join, and the one reader already reads the file at the disk's pace"
    )

    def __init__(self, connect: Connect, **options: Any) -> None:
        super().__init__(connect, **options)
        # Per open read connection (by id): its witness, or why it has none (SlowPath's text).
        self._witnesses: dict[int, Witness | str] = {}
        self._spare: Reader | None = None
        self._unwitnessed: str | None = None
        """Why the next snapshot's reads need no witness (expect), or None: a witness."""

    def expect(self, reads: Sequence[Any]) -> None:
        """A whole-table read is read by the reader: its process starts now, and imports what
        it reads with while the read's connection opens and its snapshot is taken. A read of
        changes or of a window compares through dogana_utc() or reads few rows: none starts.
        When every read compares through dogana_utc() or dogana_date(), no reader can serve
        any (bulk_read refuses each before it looks for a witness): the snapshot opens none."""
        whole = any(r.request.since is None and r.request.window is None for r in reads)
        if whole and self._spare is None and importlib.util.find_spec("adbc_driver_sqlite"):
            self._spare = Reader()
        refused = [self._refused(read) for read in reads]
        if reads and all(why is not None for why in refused):
            self._unwitnessed = f"no read of the snapshot can be bulk read: {refused[0]}"

    def _refused(self, read: Any) -> str | None:
        """Why the reader cannot serve the read's statement (sqlite_serves), or None."""
        statement = read.statement(SQLITE, self.placeholder)
        if statement is None:
            return None  # refused when read, in the snapshot
        try:
            sqlite_serves(statement)
        except SlowPath as why:
            return str(why)
        return None

    @contextmanager
    def snapshot(self, until: datetime) -> Iterator[Snapshot]:
        try:
            with super().snapshot(until) as snapshot:
                yield snapshot
        finally:
            self._unwitnessed = None
            self._drop_spare()

    def _drop_spare(self) -> None:
        """The reader process expect started, when no witness took it."""
        if self._spare is not None:
            self._spare.close()
            self._spare = None

    def placeholder(self, name: str) -> str:
        return f":{name}"

    def prepare(self, connection: Any) -> None:
        # Statements run as written: sqlite3 opens no transaction behind our back.
        connection.isolation_level = None
        # The read writes nothing; query_only makes sure of it, as READ ONLY does elsewhere.
        connection.execute("PRAGMA query_only = ON")
        connection.create_function(
            "dogana_utc", 1, _last_remembered(normalized_datetime), deterministic=True
        )
        connection.create_function(
            "dogana_date", 1, _last_remembered(normalized_date), deterministic=True
        )

    def clock(self, connection: Any) -> datetime:
        return datetime.now(UTC)

    def marker(self, connection: Any) -> Any:
        return connection.execute("PRAGMA data_version").fetchone()[0]

    def reading(self, connection: Any) -> tuple[Any, datetime]:
        """The witness's marker and the read's, then the clock (see the module docstring)."""
        witness = self._witnesses.get(id(connection))
        if witness is None and self._unwitnessed is not None:
            witness = self._witnesses[id(connection)] = self._unwitnessed
        if witness is None:
            try:
                witness = Witness.beside(connection, self.connect, self._spare)
                self._spare = None
            except SlowPath as why:
                witness = str(why)
                self._drop_spare()
            self._witnesses[id(connection)] = witness
        if isinstance(witness, Witness):
            witness.before = witness.marker()
        return super().reading(connection)

    def begin(self, connection: Any) -> Any:
        try:
            connection.execute("BEGIN")
            # The first read takes the snapshot; the marker is then read inside it.
            connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return connection.execute("PRAGMA data_version").fetchone()[0]
        except BaseException:
            self._close_witness(connection)
            raise

    def settled(self, before: Any, inside: Any) -> bool:
        return bool(before == inside)

    def end(self, connection: Any) -> None:
        self._close_witness(connection)
        if connection.in_transaction:
            connection.execute("ROLLBACK")

    def finish(self, connection: Any) -> None:
        # Closing a connection rolls its read transaction back and releases the file.
        self._close_witness(connection)

    def bulk_serves(self, sql: str) -> None:
        sqlite_serves(sql)

    def bulk_read(
        self,
        snapshot: Snapshot,
        sql: str,
        params: Mapping[str, Any],
        columns: Any,
        relation: Any = None,
    ) -> AbstractContextManager[Any]:
        sqlite_serves(sql)  # before the reader starts
        witness = self._witnesses.get(id(snapshot.connection), "no witness of the read")
        if not isinstance(witness, Witness):
            raise SlowPath(witness)
        try:
            reader = witness.reader()
        except SlowPath as why:
            self._close_witness(snapshot.connection, str(why))
            raise
        declared = declarations(snapshot.connection, relation)
        return sqlite_read(reader, sql, params, columns, declared, snapshot.fetch_rows)

    def declared_types(self, connection: Any, relation: Any) -> dict[str, str]:
        declared = {
            column: declared_type(text)
            for column, text in declarations(connection, relation).items()
        }
        return {column: kind for column, kind in declared.items() if kind is not None}

    def _close_witness(self, connection: Any, why: str | None = None) -> None:
        witness = self._witnesses.pop(id(connection), None)
        if isinstance(witness, Witness):
            witness.close()
        if why is not None:
            self._witnesses[id(connection)] = why


READER_BUSY_MS = 1000


class Witness:
    """An idle sqlite3 connection to the read's file whose data_version, read before the clock
    and again after the reader's snapshot, proves the reader's snapshot is the read's."""

    def __init__(
        self, connection: Any, path: str, timeout: int, started: Reader | None = None
    ) -> None:
        self.connection = connection
        self.path = path
        self.timeout = timeout
        self.before: Any = None
        self._reader: Reader | None = None
        self._started = started
        """A reader process started before, its file already asked open: reader() takes it."""

    @classmethod
    def beside(cls, read: Any, connect: Connect, started: Reader | None = None) -> Witness:
        """The witness of a read's connection, or SlowPath when no reader could serve it;
        started: a reader process started before, which it takes."""
        if importlib.util.find_spec("adbc_driver_sqlite") is None:
            raise SlowPath("adbc-driver-sqlite is not installed")
        files = read.execute("PRAGMA database_list").fetchall()
        attached = [name for _, name, _ in files if name not in ("main", "temp")]
        if attached:
            raise SlowPath(f"databases are attached to the read's connection: {attached}")
        [path] = [file for _, name, file in files if name == "main"]
        if not path:
            raise SlowPath("the database is in memory: no other process can read it")
        [(timeout,)] = read.execute("PRAGMA busy_timeout").fetchall()
        connection = connect()
        connection.isolation_level = None
        # A writer waiting on the read's lock (rollback-journal mode) makes the reader wait
        # too: a second at most, and the rows are read through sqlite3 instead.
        witness = cls(connection, str(path), min(int(timeout), READER_BUSY_MS), started)
        if started is not None:
            try:
                started.open(witness.path, witness.timeout)
            except SlowPath:
                connection.close()
                raise
        return witness

    def marker(self) -> Any:
        return self.connection.execute("PRAGMA data_version").fetchone()[0]

    def reader(self) -> Reader:
        """The reader in its snapshot, proven the read's; started at the first call."""
        if self._reader is None:
            reader, self._started = self._started, None
            try:
                if reader is None:
                    reader = Reader()
                    reader.open(self.path, self.timeout)
                reader.opened()
                reader.begin()
                if self.marker() != self.before:
                    raise SlowPath(
                        "a commit fell between the clock reading and the reader's snapshot"
                    )
            except BaseException:
                if reader is not None:
                    reader.close()
                raise
            self._reader = reader
        return self._reader

    def close(self) -> None:
        for reader in (self._reader, self._started):
            if reader is not None:
                reader.close()
        self._reader = self._started = None
        with suppress(Exception):
            self.connection.close()


READ_AHEAD = 4
"""Batches the reader process may send before the read asks for them."""
_END = object()


class Reader:
    """The reader process (sources/sqlite_reader.py), its connection open on the read's file."""

    SCRIPT = Path(__file__).with_name("sqlite_reader.py")

    def __init__(self) -> None:
        """The process started, importing what it reads with; open() names its file."""
        # Without site (-S): the process imports the driver and pyarrow only, from the paths
        # this one imports them from, and so starts quickly.
        environment = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self.process = subprocess.Popen(
            [sys.executable, "-S", str(self.SCRIPT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=environment,
        )
        self.usable = True
        self.begun = False
        self._opening = False

    def open(self, path: str, timeout: int) -> None:
        """Ask the process to open the file, without waiting: opened() reads its answer."""
        self._send(op="open", path=path, busy_timeout=timeout)
        self._opening = True

    def opened(self) -> None:
        """The answer to open(): the file is open, or SlowPath why not."""
        if self._opening:
            self._opening = False
            self._answer()

    def _send(self, **command: Any) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(command).encode() + b"\n")
            self.process.stdin.flush()
        except OSError as exc:
            raise SlowPath(f"the reader process is gone: {exc}") from None

    def _ask(self, **command: Any) -> Any:
        self._send(**command)
        return self._answer()

    def _answer(self) -> Any:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            self.usable = False
            raise SlowPath(f"the reader process ended (exit code {self.process.poll()})")
        answer = json.loads(line)
        if "error" in answer:
            raise SlowPath(f"the reader: {answer['error']}")
        return answer["ok"]

    def begin(self) -> None:
        self._ask(op="begin")
        self.begun = True

    @contextmanager
    def read(
        self, sql: str, params: Mapping[str, Any], batch_rows: int
    ) -> Iterator[Iterator[pa.RecordBatch]]:
        """The statement's record batches, as the driver typed them; SlowPath if it cannot."""
        if not self.usable:
            raise SlowPath("the reader stopped in the middle of an earlier read")
        plain = (str, int, float, bool, type(None))
        if not all(isinstance(value, plain) for value in params.values()):
            raise SlowPath("a bound value is no text, number or null")
        self._ask(op="read", sql=sql, params=dict(params), batch_rows=batch_rows)
        self.usable = False  # until the stream and its last line are read
        yield self._batches()

    def _batches(self) -> Iterator[pa.RecordBatch]:
        # A thread takes the batches off the pipe as the process sends them: read one by one
        # between the caller's conversions and writes, the pipe (64 KiB) would hold the process
        # back until the caller came for the next, and the two would take turns instead of
        # running on two cores.
        ahead: queue.Queue[Any] = queue.Queue(maxsize=READ_AHEAD)
        stopped = threading.Event()

        def put(item: Any) -> bool:
            while not stopped.is_set():
                with suppress(queue.Full):
                    ahead.put(item, timeout=0.1)
                    return True
            return False

        def take() -> None:
            try:
                for batch in pa.ipc.open_stream(self.process.stdout):
                    if not put(batch):
                        return
                put(_END)
            except BaseException as error:  # raised again in the caller's thread
                put(error)

        taker = threading.Thread(target=take, name="dogana-sqlite-reader", daemon=True)
        taker.start()
        try:
            while (item := ahead.get()) is not _END:
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            # A caller that stops early leaves the process in the middle of its stream:
            # close() kills it, which ends the thread's read.
            stopped.set()
        taker.join()
        self._answer()  # the driver's error, if it stopped
        self.usable = True

    def close(self) -> None:
        if not self.usable or not self.begun:
            # Stopped in the middle of a stream, it could wait forever; never begun, it holds
            # no transaction, and may still be importing what it would have read with.
            self.process.kill()
        with suppress(Exception):
            assert self.process.stdin is not None
            self.process.stdin.close()  # the end of its input: it rolls back and leaves
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        with suppress(Exception):
            assert self.process.stdout is not None
            self.process.stdout.close()


def declarations(connection: Any, relation: Any) -> dict[str, str]:
    """Each column of a table relation with its declared type as written; {} for a query."""
    table = getattr(relation, "table", None)
    if table is None:
        return {}
    schema, _, name = table.rpartition(".")
    pragma = f"PRAGMA {SQLITE.quote(schema)}.table_info" if schema else "PRAGMA table_info"
    rows = connection.execute(f"{pragma}({SQLITE.quote(name)})").fetchall()
    return {row[1]: row[2] or "" for row in rows}
