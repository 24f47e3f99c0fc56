"""The Dialect base class: what every database shares, and the helpers written once against it.

A Dialect subclass per database (sqlite.py, postgres.py, mariadb.py) supplies only what differs,
as data (quoting, column types, capability flags) or as a method overriding the base's; code
outside dialects/ asks the dialect and never which database it is.

- quoting: identifiers are validated as dogana identifiers (contract.check_identifier) and then
  quoted, so no name from a file or a contract is ever pasted into SQL unchecked;
- the DB-API placeholder of its driver (paramstyle); values always travel as bound parameters;
- the column type of each logical type, and how a value of that type is bound;
- how strings compare: dogana orders strings by code point, without collation;
- transactions and locks: how a transaction begins, whether DDL joins it, which locks exist;
- how a statement's own fault is told from an operational failure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pyarrow as pa

from dogana_core.contract import check_identifier

DECIMAL_PREFIX = "decimal("


@dataclass(frozen=True)
class CatalogColumn:
    """One column of a table as its database's catalog declares it (Dialect.catalog_columns).

    native is the declared type as the catalog spells it (integer, varchar(20), numeric(10,2));
    logical the dogana type it is read as, None where dogana has none (a blob, json, a range).
    """

    name: str
    native: str
    logical: str | None
    nullable: bool


@dataclass(frozen=True)
class Dialect:
    """What one database needs to stage, check, publish and read rows."""

    name: str
    """The database's SQLAlchemy dialect name (sqlite, postgresql, mysql)."""
    placeholder: str
    """The DB-API placeholder: "?" for sqlite3 (qmark), "%s" for psycopg and MySQLdb (format)."""
    quote_char: str
    types: tuple[tuple[str, str], ...]
    """Logical type -> column type; decimal(p,s) is handled by decimal_type."""
    decimal_type: Callable[[int, int], str]
    bind_datetime: Callable[[datetime], Any]
    bind_date: Callable[[date], Any]
    datetime_array: Callable[[pa.Array], list[Any]]
    date_array: Callable[[pa.Array], list[Any]]
    decimal_array: Callable[[pa.Array], list[Any]]
    text_collation: str | None = None
    """Appended to string expressions so that they compare by code point (None: already so)."""
    stores_nan: bool = True
    """Whether its float column keeps NaN: SQLite turns it into NULL, MariaDB refuses it."""
    stores_infinity: bool = True
    """Whether its float column keeps +-inf: MariaDB's DOUBLE has no infinities."""
    folds_names: bool = False
    """Whether two names differing only in case name one table or column: SQLite's do; so do
    MariaDB's columns, the store's table_name keys (a case-insensitive collation) and, on a
    server with lower_case_table_names, its tables; PostgreSQL's quoted names never do."""
    transactional_ddl: bool = True
    """Whether DDL (CREATE, ALTER, DROP) joins the transaction; MariaDB commits at each."""
    row_locks: bool = True
    """Whether SELECT ... FOR UPDATE locks a row; SQLite's BEGIN IMMEDIATE locks the database."""
    statement_savepoint: bool = False
    """Whether a failed statement aborts its transaction unless a savepoint catches it."""
    locks_outer_join: bool = True
    """Whether SELECT ... FOR UPDATE may lock the rows a LEFT JOIN adds (PostgreSQL refuses)."""
    rowid_names: tuple[str, ...] = ()
    """The names of a table's implicit row number, in the order tried (a column may hide one)."""
    text_datetimes: bool = False
    """Whether datetimes are stored as text (SQLite), which a source read filters by ranges."""
    describes_columns: bool = True
    """Whether a cursor's description types its columns (SQLite's does not)."""
    document_type: str = "TEXT"
    """The column type of the store's JSON documents."""
    deletes_by_join: bool = False
    """Whether a DELETE of the rows matching staged keys joins them (a multi-table DELETE)."""
    log_connector: str | None = None
    """The kind of the connector reading this database's change log (connectors/), if any."""
    staged_key_index: bool = False
    """Whether a staging table gets its key index before the row checks (SQLite: they count
    distinct keys through it; elsewhere the scan's COUNT(DISTINCT) sorts anyway)."""
    local_file: bool = False
    """Whether the database is one local file, its URL naming a path (SQLite's sqlite:///PATH),
    rather than a server its URL reaches (scheme://USER:PASSWORD@HOST:PORT/DATABASE)."""

    def __str__(self) -> str:
        return self.name

    # Names and values ---------------------------------------------------------------------

    def compared_name(self, identifier: str) -> str:
        """identifier as this database compares it with other names (identifiers are ASCII)."""
        return identifier.lower() if self.folds_names else identifier

    def quote(self, identifier: str) -> str:
        """A validated identifier, quoted; anything else raises InvalidContract."""
        check_identifier(identifier, "SQL identifier")
        return f"{self.quote_char}{identifier}{self.quote_char}"

    def column_type(self, logical: str) -> str:
        if logical.startswith(DECIMAL_PREFIX):
            precision, scale = logical[len(DECIMAL_PREFIX) : -1].split(",")
            return self.decimal_type(int(precision), int(scale))
        return dict(self.types)[logical]

    def stored_decimal(self, logical: str) -> bool:
        """Whether a column of this logical type holds a decimal as text (SQLite's)."""
        return False

    def bind(self, logical: str, value: Any) -> Any:
        """A Python value of a logical type, as a parameter that compares with staged values."""
        if value is None:
            return None
        if logical == "datetime":
            return self.bind_datetime(value)
        if logical == "date":
            return self.bind_date(value)
        if logical == "bool":
            return bool(value)
        return value

    def values(self, array: pa.Array, logical: str) -> list[Any]:
        """One staged column of a record batch as parameters, in the same form as bind()."""
        if logical == "datetime":
            return self.datetime_array(array)
        if logical == "date":
            return self.date_array(array)
        if logical.startswith(DECIMAL_PREFIX):
            return self.decimal_array(array)
        return array.to_pylist()  # type: ignore[no-any-return]

    def ordered(self, expression: str, logical: str) -> str:
        """expression as it compares in dogana's order: code points for strings."""
        if logical == "str" and self.text_collation:
            return f"{expression} COLLATE {self.text_collation}"
        return expression

    def cast_text(self, expression: str, length: int | None = None) -> str:
        """expression cast to text (at most length characters, where given)."""
        kind = "TEXT" if length is None else f"VARCHAR({length})"
        return f"CAST({expression} AS {kind})"

    def spelled(self, expression: str, logical: str | None) -> str:
        """A stored value of a logical type as text that spells it alike in every session, for a
        hash that must know the same row again later (checks/released.py)."""
        return self.cast_text(expression)

    def concat(self, parts: Sequence[str]) -> str:
        """The text expressions parts joined end to end."""
        return " || ".join(parts)

    def char_length(self, expression: str) -> str:
        """The length of a text expression in characters."""
        return f"LENGTH({expression})"

    def sha256_hex(self, connection: Any, expression: str) -> str:
        """The SHA-256 of a text expression's UTF-8 bytes, as lowercase hex; on connection,
        which may have to learn the function first."""
        raise NotImplementedError

    def index_column(self, column: str, logical: str | None) -> str:
        """A column as an index names it."""
        return self.quote(column)

    # Reading a source -----------------------------------------------------------------------

    def source_column(self, quoted: str, logical: str) -> str:
        """A source's column as it compares with bound values in dogana's order."""
        return self.ordered(quoted, logical)

    def source_bound(self, placeholder: str, logical: str | None) -> str:
        """A bound value as it compares with source_column."""
        return placeholder

    def described_type(self, column: Sequence[Any]) -> str | None:
        """The logical type a driver's cursor description names, or None to look at values."""
        return None

    def streaming_cursor(self, connection: Any) -> Any:
        """A cursor that fetches a large result from the server in batches, not all at once."""
        return connection.cursor()

    # Transactions and locks -----------------------------------------------------------------

    def begin_statements(self, *, write: bool) -> tuple[str, ...]:
        """The statements that begin a transaction: a writer's, or a reader's of one snapshot."""
        raise NotImplementedError

    def begin(self, connection: Any, *, write: bool) -> None:
        """Begin a transaction on an idle connection: begin_statements, where the driver has
        no cheaper way to the same transaction."""
        cursor = connection.cursor()
        try:
            for statement in self.begin_statements(write=write):
                cursor.execute(statement)
        finally:
            cursor.close()

    def begin_for_ddl(self, connection: Any, *, write: bool) -> None:
        """Begin a transaction whose first statement is DDL: as begin, where DDL joins it."""
        self.begin(connection, write=write)

    def lendable(self, connection: Any) -> bool:
        """Whether a connection whose transaction committed may be lent to the next transaction
        (receiver/transactions.py Reusing): idle, and holding nothing that outlives a
        transaction. Never, where the driver cannot tell."""
        return False

    def lock_schema(self, connection: Any, name: str) -> None:
        """Serialize, until the transaction ends, the callers creating or altering tables under
        name; nothing to do where the database already serializes them."""

    def lock_name(self, connection: Any, name: str) -> None:
        """Hold a named lock for as long as the connection lives, where DDL commits at once;
        raise when another session holds it. Nothing to hold where DDL joins the transaction."""

    def try_lock_name(self, connection: Any, name: str, wait: float) -> bool:
        """Take lock_name's lock once its holder is gone (waiting up to wait seconds): True
        then, held by this connection until it closes; False while a holder lives, and always
        where DDL joins the transaction (nothing holds a name there)."""
        return False

    def lock_before_snapshot(self, connection: Any, table: str) -> None:
        """Wait for a publication swapping the table in before a read's snapshot is taken."""

    def for_update(self, lock: bool) -> str:
        """The clause that locks the rows a SELECT reads, when lock and the database has row
        locks."""
        return " FOR UPDATE" if lock and self.row_locks else ""

    def unless_exists(self, *key: str) -> str:
        """The clause that makes an INSERT do nothing where a row with its key exists."""
        return f"ON CONFLICT ({', '.join(key)}) DO NOTHING"

    # Catalog --------------------------------------------------------------------------------

    def declared_types_query(self, table: str) -> tuple[str, tuple[Any, ...]]:
        """The query of each column's name and declared type, for declared_types."""
        raise NotImplementedError

    declared_types_apart = False
    """Whether declared_types_of reads each table by a statement of its own
    (read_declared_types) rather than one query of them all."""

    def read_declared_types(self, connection: Any, table: str) -> list[tuple[Any, ...]]:
        """Each column's name and declared type, in one statement: declared_types_query's."""
        sql, params = self.declared_types_query(table)
        return fetch_all(connection, sql, params)

    def catalog_columns(
        self, connection: Any, schema: str | None, table: str
    ) -> list[CatalogColumn]:
        """Each column of a table or view in its schema (None: the connection's default), in
        declared order, as the catalog declares it: read from the catalog, never from rows.
        An empty list when no such relation exists."""
        raise NotImplementedError

    def existing_names(self, connection: Any, names: Sequence[str]) -> set[str]:
        """Which of names (tables and indexes of the connection's default schema) exist, in
        one catalog query."""
        raise NotImplementedError

    def has_index(self, connection: Any, table: str, name: str) -> bool:
        """Whether create_index must find the index first (see create_index): False lets
        CREATE INDEX IF NOT EXISTS find it."""
        return False

    def has_key_index(self, connection: Any, table: str, name: str, key: Sequence[str]) -> bool:
        """Whether the table has an index serving its key that create_index, asked for the key
        index name, would not find by that name (a primary key on the key columns: primary_key);
        False lets create_index look."""
        return False

    def has_dependents(self, connection: Any, table: str) -> bool:
        """Whether a view, trigger, rule, foreign key, policy or grant hangs on the table."""
        return True

    # Publishing -----------------------------------------------------------------------------

    def swap_refused(self) -> str | None:
        """Why a staging table cannot be swapped in for a published one; None when it can."""
        if not self.transactional_ddl:
            return f"{self.name} commits at every DDL statement"
        return None

    def widen_column(self, connection: Any, table: str, column: str, logical: str) -> None:
        """Change a published column's type to a wider one of the same values (a decimal's
        precision raised, its scale kept): every value it holds fits, and none changes."""
        execute(
            connection,
            f"ALTER TABLE {self.quote(table)} ALTER COLUMN {self.quote(column)} "
            f"TYPE {self.column_type(logical)}",
        )

    def statistics(self, table: str) -> list[str]:
        """The statements that give the planner a table's statistics, for a table whose rows were
        all replaced at once (a whole-table replacement): none where the planner needs none."""
        return []

    def drop_columns(self, table: str, columns: Sequence[str]) -> list[str]:
        """The statements dropping columns from a table."""
        return [f"ALTER TABLE {table} DROP COLUMN {self.quote(name)}" for name in columns]

    def primary_key(self, kinds: Sequence[str | None]) -> bool:
        """Whether a published table whose key columns have these logical types (None: a key
        column the file lacks) is created with its key as its primary key, for upserts_by_key."""
        return False

    def upserts_by_key(self, connection: Any, table: str, key: Sequence[str], rows: int) -> bool:
        """Whether an upsert of rows staged rows into the table is the database's own upsert
        on the key (upsert_by_key); False without asking where it has none."""
        return False

    def upsert_by_key(
        self,
        target: str,
        source: str,
        columns: Sequence[str],
        key: Sequence[str],
        cleared: Sequence[str],
        where: str,
    ) -> str:
        """The database's own upsert of the published table target from the staging table
        source, aliased s: the quoted columns inserted from s's rows where where holds, and a
        row whose key (quoted columns among them) is published updated instead, the other
        columns set to the row's values and cleared to NULL (upserts_by_key)."""
        raise NotImplementedError

    def updates_in_place(self, rows: int) -> bool:
        """Whether an upsert of rows staged rows UPDATEs the published rows whose key is staged
        rather than deleting and inserting them (where the table has no trigger, has_triggers)."""
        return False

    def has_triggers(self, connection: Any, table: str) -> bool:
        """Whether the table has a trigger of its own: asked only where updates_in_place."""
        raise NotImplementedError

    def update_by_key(
        self,
        target: str,
        source: str,
        assignments: Sequence[tuple[str, str]],
        same: str,
        where: str,
    ) -> str:
        """An UPDATE of the published table target from the staging table source, aliased s:
        each assignment a quoted column of target and its new value (an expression on s), in
        target's rows where same (target's key equals s's) and where (a condition on s) hold."""
        sets = ", ".join(f"{column} = {value}" for column, value in assignments)
        return f"UPDATE {target} SET {sets} FROM {source} s WHERE {same} AND {where}"

    def keyed_batch(self, connection: Any, rows: int) -> int | None:
        """How many staged rows, of a delivery of rows, a publication's DELETE of the published
        rows sharing their keys and its INSERT of them take at a time; None for all at once."""
        return None

    def one_key_match(self, column: str, staged: str) -> str | None:
        """The condition on a published one-column key column matching the keys the staged
        SELECT returns, looked up in the key index; None where the database has none better
        than delete_by_join or EXISTS."""
        return None

    @contextmanager
    def unchecked_inserts(self, connection: Any) -> Iterator[None]:
        """An INSERT into a table with no unique index (but a primary key on the key) and no
        foreign key, without the checks that have nothing to find (see receiver/actions.py)."""
        yield

    def keeps_insert_checks(self, connection: Any, table: str, key: Sequence[str]) -> bool:
        """Whether an INSERT into the table keeps the checks unchecked_inserts turns off: it has
        a unique index or a foreign key of its own, or rows already (what turning them off
        speeds is an insert into an empty table). A primary key on exactly the key columns is
        not one: the row checks prove the staged keys unique (primary_key)."""
        return True

    # Statements that may fail ---------------------------------------------------------------

    def statement_error(self, error: BaseException) -> str | None:
        """error's message when the database refused the statement itself, None when the
        failure is operational (a lost connection, a full disk, a lock timeout), which must
        raise."""
        raise NotImplementedError


def idle_session(connection: Any) -> bool:
    """Whether a psycopg (2 or 3) connection is open and outside any transaction; False for
    another driver's, which cannot tell."""
    try:
        return not connection.closed and int(connection.info.transaction_status) == 0
    except (AttributeError, TypeError, ValueError):
        return False


def execute(connection: Any, sql: str, params: tuple[Any, ...] = ()) -> None:
    """Run one statement that returns no rows on a DB-API connection, closing its cursor."""
    cursor = connection.cursor()
    try:
        cursor.execute(sql, params)
    finally:
        cursor.close()


def fetch_one(connection: Any, sql: str, params: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
    """The first row of one statement on a DB-API connection (None if none), closing its cursor."""
    cursor = connection.cursor()
    try:
        cursor.execute(sql, params)
        row = cursor.fetchone()
        return None if row is None else tuple(row)
    finally:
        cursor.close()


def fetch_all(connection: Any, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every row of one statement on a DB-API connection, closing its cursor; for small
    results only (a catalog's columns), never a table's rows."""
    cursor = connection.cursor()
    try:
        cursor.execute(sql, params)
        return [tuple(row) for row in cursor.fetchall()]
    finally:
        cursor.close()


def text(value: Any) -> str:
    """A catalog's text value; MySQLdb hands some information_schema columns over as bytes."""
    return value.decode("utf-8") if isinstance(value, bytes | bytearray) else str(value)


def scalar(connection: Any, sql: str, params: tuple[Any, ...] = ()) -> Any:
    """The first column of the first row of one statement (None if no row)."""
    row = fetch_one(connection, sql, params)
    return None if row is None else row[0]


def declared_types(connection: Any, dialect: Dialect, table: str) -> dict[str, str]:
    """Each column of a table with the type its database declares for it, as its catalog says.

    Two tables created through the same Dialect.column_type compare equal column by column, so
    the receiver can tell a staged column from a published one of another type without mapping
    catalog spellings back to logical types. SQLite declares what it was told (its types name
    the logical type beside the affinity that stores it); MariaDB's collation is part of a
    string's type, since it decides how values compare.
    """
    rows = dialect.read_declared_types(connection, table)
    return {str(name): str(kind).lower() for name, kind in rows}


def declared_types_of(
    connection: Any, dialect: Dialect, tables: Sequence[str]
) -> list[dict[str, str]]:
    """declared_types of each of tables, in one statement (Dialect.declared_types_apart: one
    each)."""
    if dialect.declared_types_apart:
        return [declared_types(connection, dialect, table) for table in tables]
    queries: list[str] = []
    params: list[Any] = []
    for number, table in enumerate(tables):
        sql, bound = dialect.declared_types_query(table)
        queries.append(f"SELECT {number}, d.* FROM ({sql}) d")
        params.extend(bound)
    found: list[dict[str, str]] = [{} for _ in tables]
    for number, name, kind in fetch_all(connection, " UNION ALL ".join(queries), tuple(params)):
        found[int(number)][str(name)] = str(kind).lower()
    return found


def create_index(connection: Any, dialect: Dialect, table: str, name: str, columns: str) -> None:
    """CREATE INDEX name ON table (columns), unless the table has an index of that name.

    Where IF NOT EXISTS would wait for a lock before it finds the index (PostgreSQL),
    Dialect.has_index looks in the catalog first.
    """
    if dialect.has_index(connection, table, name):
        return
    execute(
        connection,
        f"CREATE INDEX IF NOT EXISTS {dialect.quote(name)} ON {dialect.quote(table)} ({columns})",
    )


def display(value: Any, logical: str | None = None) -> str:
    """A staged or declared value as a person reads it in a check's detail.

    Strings are quoted so that "" and trailing spaces show; dates and datetimes are not, even
    where a dialect stores them as text (SQLite).
    """
    if value is None:
        return "null"
    if isinstance(value, str) and logical in ("date", "datetime"):
        return value
    if isinstance(value, datetime):
        if value.tzinfo is None:
            # A dialect without offsets (MariaDB's DATETIME) stores UTC.
            value = value.replace(tzinfo=UTC)
        return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, Decimal):
        return str(value)
    return str(value)


@dataclass(frozen=True)
class StatementFailed:
    """The database refused one statement (an unknown column, a syntax or type error, a division
    by zero): its message. Never an operational failure, which raises."""

    message: str


def statement_error(dialect: Dialect, error: BaseException) -> str | None:
    """error's message when the database refused the statement itself, None when the failure is
    operational (a lost connection, a full disk, a lock timeout), which must raise."""
    return dialect.statement_error(error)


def run_or_fail(
    connection: Any, dialect: Dialect, sql: str, params: tuple[Any, ...]
) -> list[tuple[Any, ...]] | StatementFailed:
    """One query's rows, or StatementFailed when the database refuses the statement itself;
    an operational failure raises. Where a failed statement aborts the whole transaction
    (PostgreSQL), it runs under a savepoint that a refusal rolls back to."""
    cursor = connection.cursor()
    savepoint = dialect.statement_savepoint
    try:
        if savepoint:
            cursor.execute("SAVEPOINT dogana_statement")
        try:
            cursor.execute(sql, params)
            rows = [tuple(row) for row in cursor.fetchall()]
        except Exception as exc:
            refused = dialect.statement_error(exc)
            if refused is None:
                raise
            if savepoint:
                cursor.execute("ROLLBACK TO SAVEPOINT dogana_statement")
            return StatementFailed(refused)
        if savepoint:
            cursor.execute("RELEASE SAVEPOINT dogana_statement")
        return rows
    finally:
        cursor.close()


def identity(value: Any) -> Any:
    return value


def pylist(array: pa.Array) -> list[Any]:
    return array.to_pylist()  # type: ignore[no-any-return]
