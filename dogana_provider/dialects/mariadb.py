"""MariaDB (and MySQL): DDL that commits at once, named session locks, DATETIME without offset,
and string collations that must be told to compare bytes."""

from __future__ import annotations

import importlib
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from dogana_provider.dialects.base import (
    CatalogColumn,
    Dialect,
    execute,
    fetch_all,
    identity,
    pylist,
    scalar,
    text,
)

# MariaDB's server errors are 1000-1999 and 3000 up, client ones (a lost connection) 2000-2999;
# among server errors, these are the server's state, not the statement's: disk full, out of
# memory, too many connections, shutdown, network, aborted, lock wait, deadlock, interrupted,
# killed, statement time exceeded.
_OPERATIONAL = frozenset(
    {1021, 1037, 1038, 1040, 1041, 1053, 1077, 1078, 1079, 1080, 1152, 1153, 1154, 1155}
    | {1156, 1157, 1158, 1159, 1160, 1161, 1184, 1205, 1213, 1317, 1927, 1969, 3024}
)

# The field types a cursor's description names, as logical types (decimals: described_type).
_TYPES = {
    1: "int",  # TINY; BOOLEAN is TINYINT(1): typed bool only where the contract or author says
    2: "int",
    3: "int",
    8: "int",
    9: "int",
    13: "int",
    4: "float",
    5: "float",
    7: "datetime",
    12: "datetime",
    10: "date",
    15: "str",
    253: "str",
    254: "str",
    247: "str",
    248: "str",
    # TEXT columns come described as BLOBs; a real BLOB arrives as bytes and fails as str
    249: "str",
    250: "str",
    251: "str",
    252: "str",
}
_DECIMALS = (0, 246)

# keyed_batch: the staged rows below which a delivery is published at once (its pages are
# few, and asking the server its buffer pool would cost a statement), the leaf pages one staged
# key's DELETE and INSERT visit (the key index's and the clustered index's, with room for one
# more index, a window's), and the most batches, each a scan of the staging table, which has no
# index on its row number.
_FEWEST_BATCHED = 1_000
_PAGES_PER_KEY = 4
_MOST_BATCHES = 64


_LEVELS: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
"""The isolation level each connection's session was last set to (MariadbDialect.begin)."""

_NAMING: weakref.WeakSet[Any] = weakref.WeakSet()
"""The connections that asked for a named lock (lock_name): never lent to another transaction."""

# information_schema's DATA_TYPE names, as logical types (decimals: catalog_columns). BOOLEAN is
# TINYINT(1): int, as a cursor describes it, unless the contract or the author types it bool.
_CATALOG = {
    **dict.fromkeys(("tinyint", "smallint", "mediumint", "int", "integer", "bigint"), "int"),
    "year": "int",
    **dict.fromkeys(("float", "double", "real"), "float"),
    **dict.fromkeys(("char", "varchar", "tinytext", "text", "mediumtext", "longtext"), "str"),
    **dict.fromkeys(("enum", "set"), "str"),
    "date": "date",
    "datetime": "datetime",
    "timestamp": "datetime",
}


_UNIQUE_INDEXES = (
    "SELECT INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS "
    "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s AND NON_UNIQUE = 0"
)
"""A table's unique indexes, a row per column, for _index_columns."""


def _index_columns(rows: Sequence[tuple[Any, ...]]) -> dict[str, frozenset[str]]:
    """Rows of (index, column) as each index's name and its columns' folded names."""
    indexes: dict[str, set[str]] = {}
    for index, column in rows:
        indexes.setdefault(text(index), set()).add(text(column).lower())
    return {index: frozenset(columns) for index, columns in indexes.items()}


def _columns(key: Sequence[str]) -> frozenset[str]:
    # Column names are not case-sensitive here: the catalog's may be spelled otherwise.
    return frozenset(name.lower() for name in key)


def _naive_utc(value: datetime) -> datetime:
    # DATETIME holds no offset: dogana stores UTC, so every value is converted to it first.
    return value.astimezone(UTC).replace(tzinfo=None)


def _naive_utc_array(array: pa.Array) -> list[Any]:
    # delivery/files.py hands datetimes over as timestamp[us, tz=UTC]; dropping the zone keeps UTC.
    return array.cast(pa.timestamp("us")).to_pylist()  # type: ignore[no-any-return]


@dataclass(frozen=True)
class MariadbDialect(Dialect):
    def index_column(self, column: str, logical: str | None) -> str:
        # A TEXT column is indexed only by a prefix of it; 255 characters tell keys apart.
        if logical == "str":
            return f"{self.quote(column)}(255)"
        return self.quote(column)

    def cast_text(self, expression: str, length: int | None = None) -> str:
        # CAST takes CHAR, never VARCHAR (outside Oracle mode); an over-long value is then
        # refused by the column it goes into, not cut here.
        return f"CAST({expression} AS CHAR)"

    def concat(self, parts: Sequence[str]) -> str:
        # || is OR here, unless PIPES_AS_CONCAT.
        return f"CONCAT({', '.join(parts)})"

    def char_length(self, expression: str) -> str:
        # LENGTH counts bytes here.
        return f"CHAR_LENGTH({expression})"

    def sha256_hex(self, connection: Any, expression: str) -> str:
        return f"SHA2({expression}, 256)"

    def source_column(self, quoted: str, logical: str) -> str:
        # The UTF-8 bytes compare in code-point order, whatever the column's collation.
        if logical == "str":
            return f"CAST({quoted} AS BINARY)"
        return quoted

    def source_bound(self, placeholder: str, logical: str | None) -> str:
        if logical == "str":
            return f"CAST({placeholder} AS BINARY)"
        return placeholder

    def described_type(self, column: Sequence[Any]) -> str | None:
        type_code = column[1]
        if type_code in _DECIMALS:
            length, scale = column[3], column[5]
            # The display length counts a sign and, with a scale, the point.
            return f"decimal({max(1, length - 1 - (1 if scale else 0))},{scale})"
        return _TYPES.get(type_code)

    def streaming_cursor(self, connection: Any) -> Any:
        # MySQLdb's default cursor holds the whole result in memory; SSCursor streams it.
        if type(connection).__module__.startswith("MySQLdb"):
            cursors = importlib.import_module("MySQLdb.cursors")
            return connection.cursor(cursors.SSCursor)
        return connection.cursor()

    def begin_statements(self, *, write: bool) -> tuple[str, ...]:
        # SET TRANSACTION applies to the next transaction, started explicitly.
        level = "READ COMMITTED" if write else "REPEATABLE READ"
        snapshot = "" if write else " WITH CONSISTENT SNAPSHOT"
        return (f"SET TRANSACTION ISOLATION LEVEL {level}", f"START TRANSACTION{snapshot}")

    def begin(self, connection: Any, *, write: bool) -> None:
        # A connection lent on (lendable) keeps its session's level: set for the session, and
        # only when it differs from the last one this connection was given, the begin is one
        # statement where begin_statements are two.
        self._begin(connection, write=write, start=True)

    def begin_for_ddl(self, connection: Any, *, write: bool) -> None:
        # DDL commits at once, ending any transaction begun before it: the session's level is
        # set, and what follows the DDL runs in the transaction the session (autocommit off)
        # opens at the next statement, or alone (autocommit on), as after a START.
        self._begin(connection, write=write, start=False)

    def _begin(self, connection: Any, *, write: bool, start: bool) -> None:
        set_level, started = self.begin_statements(write=write)
        cursor = connection.cursor()
        try:
            if _LEVELS.get(connection) != set_level:
                _LEVELS.pop(connection, None)  # unknown until the SET succeeds
                cursor.execute(set_level.replace("SET TRANSACTION", "SET SESSION TRANSACTION"))
                _LEVELS[connection] = set_level
            if start:
                cursor.execute(started)
        finally:
            cursor.close()

    def lendable(self, connection: Any) -> bool:
        # A named lock (lock_name) ends with its session, however the session ends: a
        # connection that took one is closed after its transaction, never lent on with it.
        return connection not in _NAMING

    def lock_name(self, connection: Any, name: str) -> None:
        # A staging table's CREATE commits at once, so its half-loaded rows outlive a killed
        # loader; the loader's session lock on the table's name, which the server releases when
        # the session ends however it ends, is what tells sweep the loader is gone.
        _NAMING.add(connection)  # before asking: a lock granted as the call fails is held too
        if scalar(connection, "SELECT GET_LOCK(%s, 0)", (name,)) != 1:
            raise RuntimeError(f"the lock on {name!r} is held by another session")

    def try_lock_name(self, connection: Any, name: str, wait: float) -> bool:
        _NAMING.add(connection)
        return bool(scalar(connection, "SELECT GET_LOCK(%s, %s)", (name, wait)) == 1)

    def unless_exists(self, *key: str) -> str:
        # INSERT IGNORE would also silence truncation and type errors: only the key's.
        return f"ON DUPLICATE KEY UPDATE {key[-1]} = {key[-1]}"

    def existing_names(self, connection: Any, names: Sequence[str]) -> set[str]:
        marks = ", ".join("%s" for _ in names)
        rows = fetch_all(
            connection,
            "SELECT table_name FROM information_schema.tables "
            f"WHERE table_schema = DATABASE() AND table_name IN ({marks}) "
            "UNION SELECT index_name FROM information_schema.statistics "
            f"WHERE table_schema = DATABASE() AND index_name IN ({marks})",
            (*names, *names),
        )
        return {str(name) for (name,) in rows}

    def declared_types_query(self, table: str) -> tuple[str, tuple[Any, ...]]:
        sql = (
            "SELECT column_name, CONCAT(column_type, COALESCE(CONCAT(' COLLATE ', "
            "collation_name), '')) FROM information_schema.columns "
            "WHERE table_schema = DATABASE() AND table_name = %s"
        )
        return sql, (table,)

    def widen_column(self, connection: Any, table: str, column: str, logical: str) -> None:
        execute(
            connection,
            f"ALTER TABLE {self.quote(table)} MODIFY COLUMN {self.quote(column)} "
            f"{self.column_type(logical)}",
        )

    def catalog_columns(
        self, connection: Any, schema: str | None, table: str
    ) -> list[CatalogColumn]:
        rows = fetch_all(
            connection,
            "SELECT column_name, data_type, column_type, is_nullable, numeric_precision, "
            "numeric_scale FROM information_schema.columns "
            "WHERE table_schema = COALESCE(%s, DATABASE()) AND table_name = %s "
            "ORDER BY ordinal_position",
            (schema, table),
        )
        found = []
        for name, data_type, column_type, nullable, precision, scale in rows:
            kind = text(data_type).lower()
            logical = _CATALOG.get(kind)
            if kind in ("decimal", "numeric"):
                logical = f"decimal({precision},{scale or 0})"
            native = text(column_type).lower()
            found.append(CatalogColumn(text(name), native, logical, text(nullable) == "YES"))
        return found

    @contextmanager
    def unchecked_inserts(self, connection: Any) -> Iterator[None]:
        # With no foreign key and no unique index but a primary key on the key, whose staged
        # values the row checks proved unique (keeps_insert_checks), InnoDB's unique_checks
        # and foreign_key_checks have nothing to find, and turning them off changes no outcome;
        # what it changes is how InnoDB inserts into an empty table: one undo record for the
        # table instead of one per row, the indexes sorted and built page by page. The table's
        # lock is then held to the commit, and an error rolls back the whole transaction, not
        # the statement alone: a publication is all or nothing anyway.
        execute(
            connection,
            "SET @dogana_unique = @@unique_checks, @dogana_foreign = @@foreign_key_checks, "
            "unique_checks = 0, foreign_key_checks = 0",
        )
        try:
            yield
        finally:
            execute(
                connection,
                "SET unique_checks = @dogana_unique, foreign_key_checks = @dogana_foreign",
            )

    def keyed_batch(self, connection: Any, rows: int) -> int | None:
        # A multi-table DELETE or UPDATE (updates_in_place) reads each matching row through the
        # key index and the clustered index (dogana's published table has no primary key: the
        # key index is a secondary one), keeps its position, and changes it in a second pass
        # that visits its pages again; the INSERT then visits the key index's page once more.
        # A page read from disk enters the buffer pool's LRU list at the head of its old part
        # (innodb_old_blocks_pct), and the pages read after it push it out once that part is
        # full. Keys spread over a table larger than the pool each lie on pages of their own:
        # all at once, every visit after the first reads the page from disk again; in batches
        # whose pages fit the old part, the second and third visits find them there.
        if rows <= _FEWEST_BATCHED:
            return None
        pages = scalar(
            connection,
            "SELECT @@innodb_buffer_pool_size DIV @@innodb_page_size "
            "* @@innodb_old_blocks_pct DIV 100",
        )
        batch = int(pages) // _PAGES_PER_KEY
        # Batches larger than fit save no page reads, and more than the most cost more scans of
        # the staging table than they save: such a delivery is published at once.
        if batch < 1 or batch >= rows or -(-rows // batch) > _MOST_BATCHES:
            return None
        return batch

    def updates_in_place(self, rows: int) -> bool:
        # A DELETE and an INSERT of a spread row write its clustered page and its key index's
        # page (a delete mark and a new entry), and leave both marks for InnoDB's purge, which
        # reads the pages again after the commit; an UPDATE that leaves the key alone writes the
        # clustered page alone and leaves the old version in the undo log only. Where the rows
        # are few (no batches, keyed_batch), their pages are too, and the DELETE of every
        # staged key and the INSERT are a statement fewer.
        return rows > _FEWEST_BATCHED

    def has_triggers(self, connection: Any, table: str) -> bool:
        triggers = scalar(
            connection,
            "SELECT COUNT(*) FROM information_schema.TRIGGERS "
            "WHERE EVENT_OBJECT_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = %s",
            (table,),
        )
        return int(triggers) != 0

    def update_by_key(
        self,
        target: str,
        source: str,
        assignments: Sequence[tuple[str, str]],
        same: str,
        where: str,
    ) -> str:
        # No UPDATE ... FROM: a multi-table UPDATE joins the staging table, and its SET names
        # the target's columns by table, both tables having them.
        sets = ", ".join(f"{target}.{column} = {value}" for column, value in assignments)
        return f"UPDATE {target} JOIN {source} s ON {same} SET {sets} WHERE {where}"

    def keeps_insert_checks(self, connection: Any, table: str, key: Sequence[str]) -> bool:
        # A primary key on exactly the key columns has nothing to find: the row checks proved
        # the staged keys unique, and the table is empty. A foreign key or a row is marked
        # by an index named "".
        rows = fetch_all(
            connection,
            f"{_UNIQUE_INDEXES} UNION ALL SELECT '', CONSTRAINT_NAME "
            "FROM information_schema.REFERENTIAL_CONSTRAINTS "
            "WHERE CONSTRAINT_SCHEMA = DATABASE() AND TABLE_NAME = %s "
            f"UNION ALL SELECT '', '' FROM DUAL WHERE EXISTS (SELECT 1 FROM {self.quote(table)})",
            (table, table),
        )
        unique = _index_columns(rows)
        if unique.get("PRIMARY") == _columns(key):
            del unique["PRIMARY"]
        return bool(unique)

    def primary_key(self, kinds: Sequence[str | None]) -> bool:
        # InnoDB clusters a table by its primary key: the upsert (upserts_by_key) finds each
        # row there in one descent and changes it in place. A text key is indexed by a prefix
        # alone (index_column), which would refuse two keys sharing it: such a key, like a
        # table created before, keeps a key index of its own.
        return bool(kinds) and all(kind in ("int", "date", "datetime") for kind in kinds)

    def has_key_index(self, connection: Any, table: str, name: str, key: Sequence[str]) -> bool:
        rows = fetch_all(
            connection,
            "SELECT INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS "
            "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s AND INDEX_NAME IN ('PRIMARY', %s)",
            (table, name),
        )
        indexes = _index_columns(rows)
        return name in indexes or indexes.get("PRIMARY") == _columns(key)

    def upserts_by_key(self, connection: Any, table: str, key: Sequence[str], rows: int) -> bool:
        # Where the rows are few, so are their pages (updates_in_place): the DELETE of the
        # staged keys and the INSERT are fewer statements than asking the catalog, reading
        # the columns the upsert clears and upserting. INSERT ... ON DUPLICATE KEY UPDATE
        # updates the row of whichever unique index the insert collides with: the key's
        # primary key must be the only one. A trigger would see an update where it saw a
        # delete and an insert; one is marked by an index named "".
        if rows <= _FEWEST_BATCHED:
            return False
        found = fetch_all(
            connection,
            f"{_UNIQUE_INDEXES} UNION ALL SELECT '', TRIGGER_NAME FROM information_schema.TRIGGERS "
            "WHERE EVENT_OBJECT_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = %s",
            (table, table),
        )
        return _index_columns(found) == {"PRIMARY": _columns(key)}

    def upsert_by_key(
        self,
        target: str,
        source: str,
        columns: Sequence[str],
        key: Sequence[str],
        cleared: Sequence[str],
        where: str,
    ) -> str:
        # VALUES(c) is the value the row would have inserted; the target's columns are named
        # by table, the staging table having them too.
        sets = [f"{target}.{column} = VALUES({column})" for column in columns if column not in key]
        sets += [f"{target}.{column} = NULL" for column in cleared]
        if not sets:  # every column is the key: the published row is the staged one already
            sets = [f"{target}.{key[-1]} = {target}.{key[-1]}"]
        selected = ", ".join(f"s.{column}" for column in columns)
        return (
            f"INSERT INTO {target} ({', '.join(columns)}) SELECT {selected} FROM {source} s "
            f"WHERE {where} ON DUPLICATE KEY UPDATE {', '.join(sets)}"
        )

    def statement_error(self, error: BaseException) -> str | None:
        args = getattr(error, "args", ())
        code = args[0] if args and isinstance(args[0], int) else None
        if code is None or 2000 <= code < 3000 or code < 1000 or code in _OPERATIONAL:
            return None
        return " ".join(str(error).split())


MARIADB = MariadbDialect(
    name="mysql",
    placeholder="%s",
    quote_char="`",
    types=(
        ("int", "BIGINT"),
        ("float", "DOUBLE"),
        # The default collations ignore case and trailing spaces; nopad_bin compares the UTF-8
        # bytes, which is code-point order, and keeps "a" and "a " apart.
        ("str", "TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin"),
        ("bool", "BOOLEAN"),
        ("date", "DATE"),
        ("datetime", "DATETIME(6)"),
    ),
    decimal_type=lambda precision, scale: f"DECIMAL({precision},{scale})",
    bind_datetime=_naive_utc,
    bind_date=identity,
    datetime_array=_naive_utc_array,
    date_array=pylist,
    decimal_array=pylist,
    text_collation=None,
    stores_nan=False,
    stores_infinity=False,
    folds_names=True,
    transactional_ddl=False,
    # The store's documents are JSON of unbounded length: TEXT stops at 64 KiB.
    document_type="LONGTEXT",
    deletes_by_join=True,
    log_connector="mariadb_binlog",
)
