"""MariaDB's bulk load, LOAD DATA LOCAL INFILE, and the engine its staging tables use."""

from __future__ import annotations

import re
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from dogana_provider.dialects import Dialect
from dogana_provider.staging import scratch


def table_options(connection: Any) -> str:
    """The options a staging table's CREATE TABLE ends with."""
    return " ENGINE=Aria TRANSACTIONAL=1" if aria_stages(connection) else ""


def aria_stages(connection: Any) -> bool:
    """Whether a MariaDB staging table is an Aria table rather than the default (InnoDB).

    In InnoDB the rows go through its redo log and buffer pool twice, staged and then
    published, a large delivery's redo more than a default log holds, forcing a checkpoint's
    flushing. An Aria table keeps the staged rows out of both, which makes the load and the
    publication's copy from it faster. Nothing needs the staging table to be transactional:
    CREATE TABLE commits at once on MariaDB, so the load never rolls back with anything else;
    a load that fails drops the table (stage_file), and a killed loader's table is swept by
    its name lock. TRANSACTIONAL=1 is Aria's crash-safe format, so a held delivery's staged
    rows outlive a server crash as they would in InnoDB. Not where Aria is
    missing (MySQL), disabled or enforced away (enforce_storage_engine), nor under Galera,
    which replicates InnoDB only: a publication on another node would find no rows.
    """
    cursor = connection.cursor()
    try:
        # One statement: Aria's support, and whatever forbids it on this server or session.
        cursor.execute(
            "SELECT (SELECT COUNT(*) FROM information_schema.ENGINES "
            "WHERE ENGINE = 'Aria' AND SUPPORT IN ('YES', 'DEFAULT')), "
            "(SELECT COUNT(*) FROM information_schema.SESSION_VARIABLES "
            "WHERE (VARIABLE_NAME = 'ENFORCE_STORAGE_ENGINE' AND VARIABLE_VALUE <> '') "
            "OR (VARIABLE_NAME = 'WSREP_ON' AND VARIABLE_VALUE = 'ON'))"
        )
        supported, forbidden = cursor.fetchone()
        return bool(supported) and not forbidden
    finally:
        cursor.close()


class _LoadWarning(ValueError):
    """A value LOAD DATA LOCAL stored otherwise than written (it warns, where INSERT fails)."""


class LocalInfile:
    """MariaDB's bulk load, LOAD DATA LOCAL INFILE, where the connection allows it.

    The client sends a file it names; the batch is written to one in LOAD DATA's text format
    (tab-separated, \\N for null, backslash escapes), built by Arrow (load_data_text). The
    server and the client must both allow LOCAL (local_infile, and the connection's
    local_infile extra for MySqlHook); where either refuses, load says so and the rows go through
    executemany, the named slow path. LOCAL turns a value that does not fit into a warning, so
    any warning refuses the batch as INSERT's error would.
    """

    REFUSED = (1148, 2068, 4166)  # LOCAL not allowed by the server, or by the client

    def __init__(
        self, connection: Any, dialect: Dialect, table: str, quoted: str, logical: Sequence[str]
    ) -> None:
        self.connection = connection
        self.into = f"INTO TABLE {dialect.quote(table)} CHARACTER SET utf8mb4 ({quoted})"
        # The next batch's text is built while the server loads this one: Arrow's kernels and
        # the driver's wait for the server both release the GIL, so the two overlap. One batch
        # ahead, never more.
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
        text = load_data_text(numbers, columns) if built is None else built.result()
        if following is not None:
            after = range(numbers.stop, numbers.stop + following.num_rows)
            self._next = self._builder.submit(load_data_text, after, following.columns)
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


_ESCAPES = (("\\", "\\\\"), ("\t", "\\t"), ("\n", "\\n"), ("\r", "\\r"), ("\x00", "\\0"))


def load_data_text(numbers: range, columns: Sequence[pa.Array]) -> pa.Buffer:
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
            # Formatting a zoned timestamp looks its zone up value by value. The values are UTC
            # instants (delivery/files.py hands datetimes over as UTC): print their naive UTC
            # wall time, in one cast.
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
