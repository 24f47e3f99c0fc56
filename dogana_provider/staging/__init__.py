"""Staging: a delivered file's rows streamed into a table where they can be checked.

Rows go from the file to the database one record batch at a time, so memory stays flat in the
file's size: through COPY in its binary format on PostgreSQL (copy_binary.py), LOAD DATA LOCAL
INFILE on MariaDB where the connection allows it, and executemany otherwise; on SQLite the
receiver reads the file first into a private SQLite file that the staging transaction attaches
(sqlite_load.py), and the rows are copied from it in one statement (``preloaded``). The staging
table sits beside, never inside, the published table; nothing here commits, so the caller owns
the transaction.

Every staging table numbers its rows by their position in the file counted from 1 (for a CSV
file, the first line after the header is row 1), in its first column ROW_COLUMN, or on SQLite in
the table's rowid (row_number), which a swap (receiver/actions.py) need not drop: SQLite drops
a column by rewriting every row. Checks quote it in their details, so a person can find the
offending row in the file.

stage_file never raises for a file it cannot read: it drops what it staged and returns a Staged
whose ``unreadable`` says why, with the SHA-256 of the bytes all the same, because the receiver
still reports the row count (which fails) and the content hash (which may pass or not). A value
the database cannot store in its column (out of the type's range, a NaN or an infinity a float
column cannot hold) is refused the same way, marked ``unstorable``: the file is readable, its
values do not fit. Only such data errors are refusals; an operational failure (a lost
connection, a full disk) raises, and the caller's transaction rolls back.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from dogana_core.contract import Contract
from dogana_provider.delivery.files import Column, DeliveredFile, MisnamedColumn, UnreadableFile
from dogana_provider.dialects import Dialect, execute
from dogana_provider.staging import postgres as copy_binary
from dogana_provider.staging import scratch

if TYPE_CHECKING:
    from dogana_provider.staging.sqlite import Preloaded

ROW_COLUMN = "_dogana_row"
ROWID_NAMES = ("_rowid_", "rowid", "oid")
"""SQLite's names of a table's rowid; a column of the same name hides it."""


class UnstorableValue(UnreadableFile):
    """A value of the file that the database cannot store in its column's type."""


@dataclass(frozen=True)
class Staged:
    """A file staged in a table: what was loaded, and what the file itself said."""

    path: str
    table: str
    columns: tuple[tuple[str, str], ...]
    """Each staged column with its logical type, ROW_COLUMN left out."""
    file_columns: tuple[Column, ...]
    """Every column of the file, staged or not, for the column hash; empty when unreadable."""
    rows: int
    sha256: str | None
    """SHA-256 of the file's bytes; None when they could not all be read."""
    unreadable: str | None = None
    """Why the file could not be read as a delivery of its contract; the table is then dropped."""
    unstorable: bool = False
    """unreadable because a value does not fit the database's column, not a malformed file."""
    misnamed: bool = False
    """unreadable because a column's name is one no receiver may create (column_names)."""

    def logical(self, column: str) -> str | None:
        return dict(self.columns).get(column)


def row_number(dialect: Dialect, columns: Iterable[str]) -> str:
    """The SQL name of a staging table's row number, given its staged columns: on SQLite its
    rowid, under the first of its names (ROWID_NAMES) no column takes, since a column of the
    same name hides it; elsewhere (or were all three taken) ROW_COLUMN, quoted."""
    if dialect.name == "sqlite":
        taken = {column.lower() for column in columns}
        free = next((name for name in ROWID_NAMES if name not in taken), None)
        if free is not None:
            return free
    return dialect.quote(ROW_COLUMN)


def stores_row_column(dialect: Dialect, columns: Iterable[str]) -> bool:
    """Whether the staging table has a ROW_COLUMN column (not SQLite's rowid)."""
    return row_number(dialect, columns) == dialect.quote(ROW_COLUMN)


def bound_columns(contract: Contract) -> list[str]:
    """The columns the contract types: key, window, cursor and deleted, in the contract's order."""
    return [column for column, _ in contract.types]


def stage_file(
    connection: Any,
    dialect: Dialect,
    table: str,
    path: str | Path,
    contract: Contract,
    *,
    columns: Sequence[str] | None = None,
    preloaded: Preloaded | None = None,
) -> Staged:
    """Create ``table`` and stream the file's rows into it: ``columns`` of the file, or all.

    A column named in ``columns`` that the file does not carry is skipped, so a caller can ask
    for the contract's bound columns and get those the file has (the deleted column may be
    absent). The file's bytes are hashed while they are read. With ``preloaded`` (SQLite, every
    column: sqlite_load.py), the rows were read and checked already, and are copied from it.
    """
    path = str(path)
    with DeliveredFile(path, contract) as delivered:
        created = False
        try:
            file_columns = delivered.columns
            staged = [c for c in file_columns if columns is None or c.name in columns]
            if any(c.name == ROW_COLUMN for c in file_columns):
                raise MisnamedColumn(
                    path, "is a name dogana reserves for staging", column=ROW_COLUMN
                )
            for column in staged:
                if column.logical is None:
                    raise UnreadableFile(
                        path, f"cannot be staged: {column.problem}", column=column.name
                    )
            types = tuple((c.name, str(c.logical)) for c in staged)
            _create(connection, dialect, table, types)
            created = True
            digest: str | None
            if preloaded is None:
                rows = _insert(connection, dialect, table, delivered, types)
                digest = delivered.sha256()
            else:
                if preloaded.error is not None:
                    raise preloaded.error
                preloaded.copy(connection, table)
                rows, digest = preloaded.rows, preloaded.sha256
        except UnreadableFile as error:
            if created:
                drop(connection, dialect, table)
            digest_ = _digest_or_none(delivered) if preloaded is None else preloaded.sha256
            return Staged(
                path,
                table,
                (),
                (),
                0,
                digest_,
                str(error),
                unstorable=isinstance(error, UnstorableValue),
                misnamed=isinstance(error, MisnamedColumn),
            )
        return Staged(path, table, types, file_columns, rows, digest)


def drop(connection: Any, dialect: Dialect, table: str) -> None:
    """Drop a staging table; one already gone (a sweep, a retried drop) is no error."""
    execute(connection, f"DROP TABLE IF EXISTS {dialect.quote(table)}")


def _create(
    connection: Any, dialect: Dialect, table: str, types: tuple[tuple[str, str], ...]
) -> None:
    columns = column_definitions(dialect, types)
    options = " ENGINE=Aria TRANSACTIONAL=1" if _aria_stages(connection, dialect) else ""
    execute(connection, f"CREATE TABLE {dialect.quote(table)} ({', '.join(columns)}){options}")


def _aria_stages(connection: Any, dialect: Dialect) -> bool:
    """Whether a MariaDB staging table is an Aria table rather than the default (InnoDB).

    In InnoDB the rows went through its redo log and buffer pool twice, staged and then
    published (104 MB of redo each at the bench's million rows, more than a default log
    holds, so each forced a checkpoint's flushing). An Aria table keeps the staged rows out of
    both: in the bench the load took 2.0 to 3.0 s where InnoDB took 2.7 to 4.0, and the
    publication's copy from it is faster too. Nothing needs the staging table to be
    transactional: CREATE TABLE commits at once on MariaDB, so the load never rolled back with
    anything else; a load that fails drops the table (stage_file), and a killed loader's table
    is swept by its name lock, as before. TRANSACTIONAL=1 is Aria's crash-safe format, so a
    held delivery's staged rows outlive a server crash as InnoDB's did. Not where Aria is
    missing (MySQL), disabled or enforced away (enforce_storage_engine), nor under Galera,
    which replicates InnoDB only: a publication on another node would find no rows.
    """
    if dialect.name != "mysql":
        return False
    cursor = connection.cursor()
    try:
        cursor.execute(
            "SELECT COUNT(*) FROM information_schema.ENGINES "
            "WHERE ENGINE = 'Aria' AND SUPPORT IN ('YES', 'DEFAULT')"
        )
        if not cursor.fetchone()[0]:
            return False
        cursor.execute(
            "SELECT COUNT(*) FROM information_schema.SESSION_VARIABLES "
            "WHERE (VARIABLE_NAME = 'ENFORCE_STORAGE_ENGINE' AND VARIABLE_VALUE <> '') "
            "OR (VARIABLE_NAME = 'WSREP_ON' AND VARIABLE_VALUE = 'ON')"
        )
        return not cursor.fetchone()[0]
    finally:
        cursor.close()


def column_definitions(dialect: Dialect, types: tuple[tuple[str, str], ...]) -> list[str]:
    """A staging table's columns as CREATE TABLE declares them (the row number's first)."""
    columns = []
    if stores_row_column(dialect, (name for name, _ in types)):
        columns.append(f"{dialect.quote(ROW_COLUMN)} {dialect.column_type('int')} NOT NULL")
    columns += [f"{dialect.quote(name)} {dialect.column_type(kind)}" for name, kind in types]
    return columns


def _insert(
    connection: Any,
    dialect: Dialect,
    table: str,
    delivered: DeliveredFile,
    types: tuple[tuple[str, str], ...],
) -> int:
    names = [ROW_COLUMN, *(name for name, _ in types)]
    row = row_number(dialect, names[1:])
    quoted = ", ".join([row, *(dialect.quote(n) for n in names[1:])])
    if dialect.name == "postgresql":
        # COPY is PostgreSQL's bulk load: executemany costs a round trip per row (~50x slower).
        # Its binary format costs the server half what parsing text does (copy_binary.py).
        statement = f"COPY {dialect.quote(table)} ({quoted}) FROM STDIN (FORMAT binary)"
    else:
        statement = (
            f"INSERT INTO {dialect.quote(table)} ({quoted}) "
            f"VALUES ({', '.join(dialect.placeholder for _ in names)})"
        )
    rows = 0
    # The DB-API driver's data error (PEP 249's optional connection attribute): a value out of
    # its column's range. PostgreSQL then aborts the transaction, so the load runs under a
    # savepoint that rolls it back and lets the caller drop the table and record a rejection.
    data_error = getattr(connection, "DataError", None) or _NoError
    local = _LocalInfile(connection, dialect, table, quoted) if dialect.name == "mysql" else None
    cursor = connection.cursor()
    try:
        cursor.execute("SAVEPOINT dogana_stage")
        for batch, following in _paired(delivered.batches([name for name, _ in types])):
            numbers = range(rows + 1, rows + batch.num_rows + 1)
            try:
                refuse_unstorable(dialect, delivered.path, batch, types)
                if dialect.name == "postgresql":
                    logical = [kind for _, kind in types]
                    tuples = copy_binary.tuples(numbers, batch.columns, logical)
                    _copy(cursor, statement, copy_binary.SIGNATURE, tuples, copy_binary.TRAILER)
                elif local is not None and local.load(cursor, numbers, batch.columns, following):
                    pass
                else:
                    if local is not None:
                        local.close()
                    local = None  # the connection does not allow it: executemany from now on
                    values = [
                        dialect.values(batch.column(i), kind) for i, (_, kind) in enumerate(types)
                    ]
                    cursor.executemany(statement, zip(numbers, *values, strict=True))
            except (OverflowError, ValueError, data_error) as exc:
                # ValueError: a date Python cannot hold (year 10000), met converting to bind it.
                cursor.execute("ROLLBACK TO SAVEPOINT dogana_stage")
                rule = str(exc).split("\n")[0]
                # Drivers name the column in the message (PostgreSQL's COPY context, MariaDB's
                # "for column 'x'"); only a staged column's name is taken from it.
                named = re.findall(r"column '?(\w+)'?", str(exc))
                column = next((n for n in named if n in dict(types)), None)
                raise UnstorableValue(
                    delivered.path,
                    f"a value does not fit the {dialect.name} column it is staged in: {rule}",
                    column=column,
                ) from None
            rows += batch.num_rows
        cursor.execute("RELEASE SAVEPOINT dogana_stage")
    finally:
        if local is not None:
            local.close()
        cursor.close()
    return rows


def _paired(batches: Iterable[pa.RecordBatch]) -> Iterator[tuple[pa.RecordBatch, Any]]:
    """Each batch with the one after it (None after the last), read before it is staged."""
    iterator = iter(batches)
    current = next(iterator, None)
    while current is not None:
        following = next(iterator, None)
        yield current, following
        current = following


class _LoadWarning(ValueError):
    """A value LOAD DATA LOCAL stored otherwise than written (it warns, where INSERT fails)."""


class _LocalInfile:
    """MariaDB's bulk load, LOAD DATA LOCAL INFILE, where the connection allows it.

    The client sends a file it names; the batch is written to one in LOAD DATA's text format
    (tab-separated, \\N for null, backslash escapes), built by Arrow (_load_data_text). The
    server and the client must both allow LOCAL (local_infile, and the connection's
    local_infile extra for MySqlHook); where either refuses, load says so and the rows go through
    executemany, the named slow path. LOCAL turns a value that does not fit into a warning, so
    any warning refuses the batch as INSERT's error would.
    """

    REFUSED = (1148, 2068, 4166)  # LOCAL not allowed by the server, or by the client

    def __init__(self, connection: Any, dialect: Dialect, table: str, quoted: str) -> None:
        self.connection = connection
        self.into = f"INTO TABLE {dialect.quote(table)} CHARACTER SET utf8mb4 ({quoted})"
        # The next batch's text is built while the server loads this one: Arrow's kernels and
        # the driver's wait for the server both release the GIL, so the two overlap (a fifth
        # of the staging's time at a million rows). One batch ahead, never more.
        self._builder = ThreadPoolExecutor(1, thread_name_prefix="dogana-load-data")
        self._next: Future[pa.Buffer] | None = None

    def close(self) -> None:
        """Stop building ahead; the text built for a batch never loaded is dropped."""
        self._builder.shutdown(wait=True, cancel_futures=True)
        self._next = None

    def load(
        self,
        cursor: Any,
        numbers: range,
        columns: Sequence[pa.Array],
        following: pa.RecordBatch | None = None,
    ) -> bool:
        """Load one batch (the following one's text is built meanwhile, when given); False,
        having loaded nothing, when LOCAL is not allowed."""
        built, self._next = self._next, None
        text = _load_data_text(numbers, columns) if built is None else built.result()
        if following is not None:
            after = range(numbers.stop, numbers.stop + following.num_rows)
            self._next = self._builder.submit(_load_data_text, after, following.columns)
        # Held while it loads: a gate killed meanwhile leaves it for the next sweep (scratch.py).
        with scratch.held_file() as (file, name):
            file.write(memoryview(text).cast("B"))
            file.flush()
            if not re.fullmatch(r"[\w./-]+", name):
                return False  # a temporary folder whose name a literal would have to escape
            try:
                cursor.execute(f"LOAD DATA LOCAL INFILE '{name}' {self.into}")
            except Exception as exc:  # the driver's OperationalError, by its code
                if exc.args and exc.args[0] in self.REFUSED:
                    return False
                raise
        if self.connection.warning_count():
            cursor.execute("SHOW WARNINGS LIMIT 1")
            _, code, message = cursor.fetchone()
            raise _LoadWarning(f"({code}) {message}")
        return True


class _NoError(Exception):
    """Stands for a driver without a DataError attribute: never raised."""


YEARS = (1, 9999)
"""The years a date or datetime may have: Python's, which every driver reads values back into
(a year-10000 timestamp stored by PostgreSQL could never be read), and the four digits of
SQLite's fixed-width text, whose order is time order only while every year has four."""


def refuse_unstorable(
    dialect: Dialect, path: str, batch: pa.RecordBatch, types: tuple[tuple[str, str], ...]
) -> None:
    """Values the database would refuse, lose or misorder, which no driver error reports.

    SQLite turns a NaN into NULL and MariaDB refuses NaN and infinities in the client; years
    outside YEARS are refused everywhere. Vectorised over the batch, so cheap.
    """
    for i, (name, kind) in enumerate(types):
        column = batch.column(i)
        if kind == "float" and not (dialect.stores_nan and dialect.stores_infinity):
            nan = not dialect.stores_nan and pc.any(pc.is_nan(column)).as_py()
            inf = not dialect.stores_infinity and pc.any(pc.is_inf(column)).as_py()
            if nan or inf:
                raise UnstorableValue(
                    path,
                    f"holds {'NaN' if nan else 'an infinity'}, which a {dialect.name} float "
                    "column cannot store",
                    column=name,
                )
        elif kind in ("date", "datetime") and column.null_count < len(column):
            years = pc.min_max(pc.year(column)).as_py()
            if years["min"] < YEARS[0] or years["max"] > YEARS[1]:
                raise UnstorableValue(
                    path,
                    f"holds a year outside {YEARS[0]} to {YEARS[1]} "
                    f"({years['min']} to {years['max']}), which dogana's dates cannot hold",
                    column=name,
                )


def _copy(cursor: Any, statement: str, *chunks: bytes | pa.Buffer) -> None:
    """One batch through COPY FROM STDIN: psycopg 3's copy(), or psycopg2's copy_expert.

    The chunks go to the driver as they are (Arrow buffers included), never joined first."""
    if hasattr(cursor, "copy"):
        with cursor.copy(statement) as copy:
            for chunk in chunks:
                copy.write(memoryview(chunk).cast("B"))
        return
    cursor.copy_expert(statement, _Chunks(chunks), size=1 << 20)


class _Chunks(io.RawIOBase):
    """The chunks as one file that copy_expert reads, copying each part once."""

    def __init__(self, chunks: Sequence[bytes | pa.Buffer]) -> None:
        super().__init__()
        self._chunks = [memoryview(chunk).cast("B") for chunk in chunks]

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while self._chunks and not len(self._chunks[0]):
            self._chunks.pop(0)
        if not self._chunks:
            return 0
        target = memoryview(buffer).cast("B")
        size = min(len(target), len(self._chunks[0]))
        target[:size] = self._chunks[0][:size]
        self._chunks[0] = self._chunks[0][size:]
        return size


_ESCAPES = (("\\", "\\\\"), ("\t", "\\t"), ("\n", "\\n"), ("\r", "\\r"), ("\x00", "\\0"))


def _load_data_text(numbers: range, columns: Sequence[pa.Array]) -> pa.Buffer:
    """A batch in the text format LOAD DATA reads (UTF-8), built by Arrow's compute kernels,
    never value by value in Python: the lines end up back to back in one Arrow buffer, handed
    over as it is.

    Arrow spells every staged type as MariaDB reads it: shortest round-trip floats, booleans
    1/0, ISO dates, and timestamps as their naive UTC wall time (DATETIME holds no zone). Text
    escapes backslash, tab, newline, carriage return and NUL; a null is \\N.
    """
    texts = [pa.array(numbers, pa.int64()).cast(pa.string())]
    for column in columns:
        if pa.types.is_dictionary(column.type):
            column = column.dictionary_decode()
        if pa.types.is_timestamp(column.type) and column.type.tz is not None:
            # Formatting a zoned timestamp looks its zone up value by value (50x slower). The
            # values are UTC instants (files.py hands datetimes over as UTC): print their naive
            # UTC wall time.
            text = pc.cast(column.cast(pa.timestamp(column.type.unit)), pa.string())
        elif pa.types.is_boolean(column.type):
            text = pc.cast(pc.cast(column, pa.int8()), pa.string())
        else:
            text = pc.cast(column, pa.string())
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            for raw, escaped in _ESCAPES:
                text = pc.replace_substring(text, raw, escaped)
        texts.append(pc.fill_null(text, "\\N"))
    lines = pc.binary_join_element_wise(*texts, "\t")
    lines = pc.binary_join_element_wise(lines, "\n", "")  # every line ends in its newline
    _, offsets_buffer, data = lines.buffers()
    if data is None:  # no line at all
        return pa.py_buffer(b"")
    offsets = pa.Array.from_buffers(
        pa.int32(), len(lines) + 1, [None, offsets_buffer], offset=lines.offset
    )
    start, stop = offsets[0].as_py(), offsets[-1].as_py()
    return data.slice(start, stop - start)  # type: ignore[no-any-return]


def _digest_or_none(delivered: DeliveredFile) -> str | None:
    try:
        return delivered.sha256()
    except UnreadableFile:
        return None
