"""An accepted plan executed on the published table, in set-based SQL from the staging table.

Each Action (Plans, checks and receipts) becomes one or two statements over whole sets of rows,
never a loop over rows in Python:

    replace_all      DELETE every published row; INSERT the live staged rows
    replace_window   DELETE the published rows whose window value is in [low, high], and (keyed)
                     those sharing a key with a live staged row; INSERT the live staged rows
    upsert           DELETE the published rows sharing a key with a live staged row; INSERT those
                     (SQLite: UPDATE those rows in place from the staged ones; INSERT the rest)
    tombstone        DELETE the published rows sharing a key with a staged tombstone
    append           INSERT the live staged rows

A whole-table replacement moves the rows once: on PostgreSQL and SQLite, whose DDL joins the
publication's transaction, the checked staging table itself becomes the published table (its
tombstones deleted, its row-number and deleted columns dropped, the old table dropped, the staged
one renamed, the indexes built on the loaded rows), committed with the ledger and the receipt or
not at all. Copying it instead stays for what a swap would break, each case named in swap_refused:
a group's publication (its tables' rows are copied one table after another, as before),
MariaDB (RENAME TABLE commits at once, so a crash could publish rows without their receipt), a
published table whose columns differ from the delivery's (added by an earlier delivery), and one
that other objects hang on (views, foreign keys, triggers, grants, rules), which a dropped table
would lose. A PostgreSQL reader under REPEATABLE READ whose snapshot predates the swap and who
first touches the table after it sees it empty, as after TRUNCATE; Receiver.read locks the table
before its snapshot so that its ledger and rows stay one committed state.

A keyless action matches no keys. The deleted column is never published: the published table is
created without it, and only live rows (deleted false, or no deleted column in the file) are
inserted. Nothing here commits; the caller runs it inside the publication's transaction.

The published table's columns are the file's columns (the deleted one left out), created on the
first delivery; a later file with a column the table lacks adds it (nullable, before the
publication's transaction, since MariaDB commits at every DDL statement), and a column the file
lacks is NULL in the rows it inserts. Types come from the staged columns' logical types.
"""

from __future__ import annotations

import hashlib
import sqlite3
from typing import Any

from dogana_core.contract import Contract
from dogana_core.plan import Action, ActionKind, ApplyPlan
from dogana_provider.dialects import Dialect, create_index, execute
from dogana_provider.receiver.transactions import schema_lock
from dogana_provider.staging import ROW_COLUMN, Staged, stores_row_column


def published_columns(staged: Staged, contract: Contract) -> list[tuple[str, str]]:
    """The staged columns that are published: all but the deleted column."""
    return [(name, kind) for name, kind in staged.columns if name != contract.deleted_column]


def create_published(connection: Any, dialect: Dialect, staged: Staged, contract: Contract) -> None:
    """Create the published table from a staged delivery's columns, when it does not exist.

    Harmless before a decision: an empty table publishes nothing, and the row checks need it to
    look for keys already published outside a window. Deliveries of a new table decided at once
    each create it: schema_lock makes them take turns, the first creating it.
    """
    schema_lock(connection, dialect, dialect.quote(contract.table))
    columns = ", ".join(
        f"{dialect.quote(name)} {dialect.column_type(kind)}"
        for name, kind in published_columns(staged, contract)
    )
    execute(connection, f"CREATE TABLE IF NOT EXISTS {dialect.quote(contract.table)} ({columns})")
    create_indexes(connection, dialect, staged, contract)


def create_indexes(connection: Any, dialect: Dialect, staged: Staged, contract: Contract) -> None:
    """The published table's key and window indexes, when missing (sql.create_index: a stage
    runs this on every delivery and must not wait for the published table's writers)."""
    logical = dict(staged.columns)
    digest = hashlib.sha256(contract.table.encode()).hexdigest()[:20]
    if contract.keyed:
        # Upserts, tombstones and replaced windows find published rows by key: without an
        # index, a small changes delivery would scan the whole table.
        keys = ", ".join(_index_column(dialect, k, logical.get(k)) for k in contract.key)
        create_index(connection, dialect, contract.table, key_index_name(contract.table), keys)
    window = contract.window_column
    if window is not None and window in logical:
        # A replaced window deletes the published rows whose window value is in range: without
        # an index, every window delivery would scan the whole table.
        column = _index_column(dialect, window, logical.get(window))
        create_index(connection, dialect, contract.table, f"dogana_window_{digest}", column)


def index_staged_keys(
    connection: Any, dialect: Dialect, staged: Staged, contract: Contract
) -> None:
    """SQLite: the staging table's key index, built once its rows are in, in the stage's write
    transaction (the row checks' is read-only).

    The row checks ask whether a key repeats: without an index SQLite answers COUNT(DISTINCT)
    by inserting each key into a temporary b-tree in the rows' order, 0.15 s for a million keys
    in order and about 2 s for keys in no order (uuids, text). An index is built from a sort,
    0.3 to 0.45 s either way, and answers it in 0.05 s (checks.py); and a whole-table
    replacement swaps the staging table in with its key index built, which the swap built
    before. Its name is the published key index's and a suffix of the staging table's, which
    create_index takes for the published one: index names are one namespace in a schema, and
    SQLite renames no index. Elsewhere the scan's COUNT(DISTINCT) sorts anyway.
    """
    logical = dict(staged.columns)
    if (
        dialect.name != "sqlite"
        or not contract.keyed
        or any(k not in logical for k in contract.key)
    ):
        return
    keys = ", ".join(dialect.quote(k) for k in contract.key)
    suffix = hashlib.sha256(staged.table.encode()).hexdigest()[:8]
    name = dialect.quote(f"{key_index_name(contract.table)}_{suffix}")
    execute(
        connection, f"CREATE INDEX IF NOT EXISTS {name} ON {dialect.quote(staged.table)} ({keys})"
    )


def key_index_name(table: str) -> str:
    """The name of the published table's key index (create_indexes)."""
    return f"dogana_key_{hashlib.sha256(table.encode()).hexdigest()[:20]}"


def _index_column(dialect: Dialect, column: str, logical: str | None) -> str:
    # MariaDB indexes a TEXT column only by a prefix of it; 255 characters tell keys apart.
    if dialect.name == "mysql" and logical == "str":
        return f"{dialect.quote(column)}(255)"
    return dialect.quote(column)


def add_missing_columns(
    connection: Any, dialect: Dialect, staged: Staged, contract: Contract
) -> None:
    """Add the staged columns the published table lacks, nullable: no existing row changes."""
    have = set(existing_columns(connection, dialect, contract.table))
    for name, kind in published_columns(staged, contract):
        if name not in have:
            execute(
                connection,
                f"ALTER TABLE {dialect.quote(contract.table)} ADD COLUMN "
                f"{dialect.quote(name)} {dialect.column_type(kind)}",
            )


def existing_columns(connection: Any, dialect: Dialect, table: str) -> list[str]:
    cursor = connection.cursor()
    try:
        cursor.execute(f"SELECT * FROM {dialect.quote(table)} WHERE 1 = 0")
        return [str(column[0]) for column in cursor.description]
    finally:
        cursor.close()


def count_published(
    connection: Any, dialect: Dialect, contract: Contract, window: tuple[Any, Any] | None
) -> int:
    """The published rows, or those whose window value is in [low, high]."""
    sql = f"SELECT COUNT(*) FROM {dialect.quote(contract.table)}"
    params: tuple[Any, ...] = ()
    if window is not None:
        assert contract.window_column is not None
        kind = str(contract.type_of(contract.window_column))
        column = dialect.ordered(dialect.quote(contract.window_column), kind)
        sql += f" WHERE {column} >= {dialect.placeholder} AND {column} <= {dialect.placeholder}"
        params = (dialect.bind(kind, window[0]), dialect.bind(kind, window[1]))
    cursor = connection.cursor()
    try:
        cursor.execute(sql, params)
        return int(cursor.fetchone()[0])
    finally:
        cursor.close()


def execute_plan(
    connection: Any,
    dialect: Dialect,
    plan: ApplyPlan,
    staged: Staged,
    contract: Contract,
    *,
    swap: bool = False,
) -> None:
    """Run every action of an accepted plan, in order, on the published table; with swap, a
    whole-table replacement swaps the staging table in where swap_refused allows it."""
    refused = swap_refused(connection, dialect, plan, staged, contract) if swap else "copy"
    if refused is None:
        swap_in(connection, dialect, staged, contract)
        return
    published = _Published(connection, dialect, staged, contract)
    for action in plan.actions:
        published.run(action)


def swap_refused(
    connection: Any, dialect: Dialect, plan: ApplyPlan, staged: Staged, contract: Contract
) -> str | None:
    """Why the plan's rows are copied rather than the staging table swapped in; None to swap."""
    if [action.operation for action in plan.actions] != [ActionKind.REPLACE_ALL]:
        return "the plan changes part of the table"
    if dialect.name not in ("postgresql", "sqlite"):
        return f"{dialect.name} commits at every DDL statement"
    names = [name for name, _ in published_columns(staged, contract)]
    if existing_columns(connection, dialect, contract.table) != names:
        return "the published table's columns differ from the delivery's"
    if _dependents(connection, dialect, contract.table):
        return "other objects depend on the published table"
    return None


def swap_in(connection: Any, dialect: Dialect, staged: Staged, contract: Contract) -> None:
    """The checked staging table becomes the published table (a replace_all), in the caller's
    transaction: live rows only, the published columns only, the old table's indexes rebuilt."""
    source, target = dialect.quote(staged.table), dialect.quote(contract.table)
    deleted = contract.deleted_column
    stored = stores_row_column(dialect, (name for name, _ in staged.columns))
    dropped = [ROW_COLUMN] if stored else []  # SQLite's rowid numbers the rows otherwise
    if deleted is not None and staged.logical(deleted):
        execute(
            connection,
            f"DELETE FROM {source} WHERE {dialect.quote(deleted)} = {dialect.placeholder}",
            (True,),
        )
        dropped.append(deleted)
    if dialect.name == "postgresql":
        # Marks the columns dropped; the rows are not rewritten.
        drops = ", ".join(f"DROP COLUMN {dialect.quote(name)}" for name in dropped)
        execute(connection, f"ALTER TABLE {source} {drops}")
    else:  # SQLite rewrites every row for each (none, most often)
        for name in dropped:
            execute(connection, f"ALTER TABLE {source} DROP COLUMN {dialect.quote(name)}")
    execute(connection, f"DROP TABLE {target}")
    execute(connection, f"ALTER TABLE {source} RENAME TO {target}")
    create_indexes(connection, dialect, staged, contract)


def lock_before_snapshot(connection: Any, dialect: Dialect, table: str) -> None:
    """Wait for a publication swapping the table in before a REPEATABLE READ snapshot is taken.

    PostgreSQL takes the snapshot at the first statement that needs one, which LOCK TABLE and
    SAVEPOINT are not: once the lock is held, no swap can commit before the snapshot, so the
    ledger and the rows read after it are one committed state. A table not published yet has
    nothing to lock. SQLite's read transaction already sees the schema of its snapshot.
    """
    if dialect.name != "postgresql":
        return
    cursor = connection.cursor()
    try:
        cursor.execute("SAVEPOINT dogana_lock")
        try:
            cursor.execute(f"LOCK TABLE {dialect.quote(table)} IN ACCESS SHARE MODE")
        except Exception:
            cursor.execute("ROLLBACK TO SAVEPOINT dogana_lock")
        cursor.execute("RELEASE SAVEPOINT dogana_lock")
    finally:
        cursor.close()


def _dependents(connection: Any, dialect: Dialect, table: str) -> bool:
    """Whether a view, trigger, rule, foreign key, policy or grant hangs on the table."""
    if dialect.name == "sqlite":
        # Views and triggers name tables in their text: any of them could name this one.
        sql = "SELECT count(*) FROM sqlite_master WHERE type IN ('view', 'trigger')"
        params: tuple[Any, ...] = ()
    else:
        # Everything pg_depend records against the table but its own indexes, TOAST table and
        # row type, which go and come with it.
        sql = (
            "SELECT (SELECT count(*) FROM pg_depend d WHERE d.refclassid = 'pg_class'::regclass"
            " AND d.refobjid = c.oid AND d.classid <> 'pg_type'::regclass"
            " AND NOT (d.classid = 'pg_class'::regclass AND EXISTS (SELECT 1 FROM pg_class r"
            " WHERE r.oid = d.objid AND r.relkind IN ('i', 't'))))"
            " + (CASE WHEN c.relacl IS NULL THEN 0 ELSE 1 END)"
            f" FROM pg_class c WHERE c.oid = to_regclass({dialect.placeholder})"
        )
        params = (dialect.quote(table),)
    cursor = connection.cursor()
    try:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    finally:
        cursor.close()
    return row is not None and int(row[0] or 0) > 0


class _Published:
    def __init__(self, connection: Any, dialect: Dialect, staged: Staged, contract: Contract):
        self.connection = connection
        self.dialect = dialect
        self.contract = contract
        self.p = dialect.placeholder
        self.target = dialect.quote(contract.table)
        self.source = dialect.quote(staged.table)
        self.columns = published_columns(staged, contract)
        deleted = contract.deleted_column
        # A file may omit the deleted column: then every row is live.
        self.deleted = deleted if deleted is not None and staged.logical(deleted) else None

    def staged_where(self, live: bool) -> tuple[str, tuple[Any, ...]]:
        """Live staged rows, or tombstones; a file without the deleted column has only live."""
        if self.deleted is None:
            return ("1 = 1", ()) if live else ("1 = 0", ())
        return f"s.{self.dialect.quote(self.deleted)} = {self.p}", (not live,)

    def run(self, action: Action) -> None:
        kind = action.operation
        if kind is ActionKind.REPLACE_ALL:
            execute(self.connection, f"DELETE FROM {self.target}")
            self.insert_live()
        elif kind is ActionKind.REPLACE_WINDOW:
            self.delete_window(action)
            if action.key:
                self.delete_matching(action.key, live=True)
            self.insert_live()
        elif kind is ActionKind.UPSERT:
            if self.updates_in_place():
                self.update_matching(action.key)
                self.insert_live(absent=action.key)
            else:
                self.delete_matching(action.key, live=True)
                self.insert_live()
        elif kind is ActionKind.TOMBSTONE:
            self.delete_matching(action.key, live=False)
        elif kind is ActionKind.APPEND:
            self.insert_live()
        else:  # pragma: no cover - ActionKind is closed
            raise ValueError(f"unknown action {kind}")

    def insert_live(self, absent: tuple[str, ...] = ()) -> None:
        """INSERT the live staged rows; with absent (a key), only those whose key no published
        row has."""
        names = ", ".join(self.dialect.quote(name) for name, _ in self.columns)
        selected = ", ".join(f"s.{self.dialect.quote(name)}" for name, _ in self.columns)
        where, params = self.staged_where(live=True)
        if absent:
            same = " AND ".join(
                f"p.{self.dialect.quote(k)} = s.{self.dialect.quote(k)}" for k in absent
            )
            where += f" AND NOT EXISTS (SELECT 1 FROM {self.target} p WHERE {same})"
        bulk = self.dialect.name == "mysql" and _nothing_to_check(self.connection, self.contract)
        if bulk:
            execute(
                self.connection,
                "SET @dogana_unique = @@unique_checks, @dogana_foreign = @@foreign_key_checks, "
                "unique_checks = 0, foreign_key_checks = 0",
            )
        try:
            execute(
                self.connection,
                f"INSERT INTO {self.target} ({names}) SELECT {selected} FROM {self.source} s "
                f"WHERE {where}",
                params,
            )
        finally:
            if bulk:
                execute(
                    self.connection,
                    "SET unique_checks = @dogana_unique, foreign_key_checks = @dogana_foreign",
                )

    def updates_in_place(self) -> bool:
        """Whether an upsert UPDATEs the published rows whose key is staged instead of deleting
        and inserting them: on SQLite, which has UPDATE ... FROM since 3.33.

        Each of the rows a changes delivery spreads across a table lies on a page of its own:
        a DELETE rewrites those pages and every key-index page holding one of their keys, and
        the INSERT the index pages again, each page written twice at the commit (to the
        rollback journal, then to the table). An UPDATE that leaves the key alone rewrites the
        table's pages alone: a third less time in the two statements and their commit for
        10,000 spread rows of a million (0.46 s against 0.30 s, median of 8).
        The result is the same: a published keyed table holds each key once (every publication
        deletes the keys it inserts, and staged keys are unique), so each updated row is the
        one the DELETE would have removed, the staged row's values in every published column,
        NULL in those the file lacks, as an insert leaves them; only a trigger could tell the
        two apart, so a table with one keeps DELETE and INSERT. PostgreSQL's UPDATE visits the
        same heap pages as its DELETE and, a freshly loaded page having no room, writes each new
        version elsewhere with its index entry, as the INSERT does: no faster (measured), and a
        plain join lets the planner scan the whole table. MariaDB's was no faster either.
        """
        if self.dialect.name != "sqlite" or sqlite3.sqlite_version_info < (3, 33, 0):
            return False
        # A trigger on the published table would see an UPDATE where it saw a DELETE and an
        # INSERT: such a table keeps them.
        cursor = self.connection.cursor()
        try:
            cursor.execute(
                "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' "
                "AND tbl_name = ? COLLATE NOCASE",
                (self.contract.table,),
            )
            (triggers,) = cursor.fetchone()
        finally:
            cursor.close()
        return int(triggers) == 0

    def update_matching(self, key: tuple[str, ...]) -> None:
        """UPDATE the published rows sharing a key with a live staged row to its values."""
        q = self.dialect.quote
        staged = {name for name, _ in self.columns}
        published = existing_columns(self.connection, self.dialect, self.contract.table)
        sets = [f"{q(name)} = s.{q(name)}" for name, _ in self.columns if name not in key]
        sets += [f"{q(name)} = NULL" for name in published if name not in staged]
        if not sets:  # every column is the key: the matching rows are the staged ones already
            return
        same = " AND ".join(f"{self.target}.{q(k)} = s.{q(k)}" for k in key)
        where, params = self.staged_where(live=True)
        execute(
            self.connection,
            f"UPDATE {self.target} SET {', '.join(sets)} FROM {self.source} s "
            f"WHERE {same} AND {where}",
            params,
        )

    def delete_window(self, action: Action) -> None:
        window = self.contract.window_column
        assert window is not None and action.window is not None
        logical = str(self.contract.type_of(window))
        column = self.dialect.ordered(f"{self.target}.{self.dialect.quote(window)}", logical)
        low, high = (self.dialect.bind(logical, bound) for bound in action.window)
        execute(
            self.connection,
            f"DELETE FROM {self.target} WHERE {column} >= {self.p} AND {column} <= {self.p}",
            (low, high),
        )

    def delete_matching(self, key: tuple[str, ...], *, live: bool) -> None:
        """Delete published rows sharing a key with a staged live row (or tombstone).

        The cost must follow the delivery, not the table: probe the published key index once
        per staged key. A correlated EXISTS lets the planner pick a scan of the whole published
        table instead (SQLite always does; PostgreSQL does whenever its statistics are missing
        or think a scan cheaper, 10x slower at a million rows). So on a one-column key,
        PostgreSQL is handed the staged keys as one array (= ANY(ARRAY(...)), an index scan
        whatever the statistics) and SQLite an IN list it looks up in the index; MariaDB a join
        (below). Other keys keep EXISTS.
        """
        where, params = self.staged_where(live=live)
        if len(key) == 1 and self.dialect.name in ("postgresql", "sqlite"):
            column = self.dialect.quote(key[0])
            staged = f"SELECT s.{column} FROM {self.source} s WHERE {where}"
            if self.dialect.name == "postgresql":
                matching = f"{self.target}.{column} = ANY (ARRAY({staged}))"
            else:
                matching = f"{self.target}.{column} IN ({staged})"
            execute(self.connection, f"DELETE FROM {self.target} WHERE {matching}", params)
            return
        if self.dialect.name == "mysql":
            # MariaDB runs a single-table DELETE's EXISTS (or IN) once per published row, each
            # a scan of the staging table: 150 s for 2,000 keys against 200,000 rows. Its
            # multi-table DELETE joins the distinct staged keys to the key index instead: 5 ms.
            columns = ", ".join(f"s.{self.dialect.quote(k)}" for k in key)
            joined = " AND ".join(
                f"x.{self.dialect.quote(k)} = {self.target}.{self.dialect.quote(k)}" for k in key
            )
            execute(
                self.connection,
                f"DELETE {self.target} FROM {self.target} JOIN "
                f"(SELECT DISTINCT {columns} FROM {self.source} s WHERE {where}) x ON {joined}",
                params,
            )
            return
        same = " AND ".join(
            f"s.{self.dialect.quote(k)} = {self.target}.{self.dialect.quote(k)}" for k in key
        )
        execute(
            self.connection,
            f"DELETE FROM {self.target} WHERE EXISTS "
            f"(SELECT 1 FROM {self.source} s WHERE {same} AND {where})",
            params,
        )


def _nothing_to_check(connection: Any, contract: Contract) -> bool:
    """Whether the published table has no unique index and no foreign key of its own.

    Then InnoDB's unique_checks and foreign_key_checks have nothing to check on an insert into
    it, and turning them off changes no outcome; what it does change is how InnoDB inserts into
    an empty table (a whole-table replacement, or the first delivery): one undo record for the
    table instead of one per row, the indexes sorted and built page by page (MariaDB 10.6 and
    later), a third less time for the bench's copy of a million rows. The table's lock is then
    held to the commit, and an error rolls back the whole transaction, not the statement
    alone: a publication is all or nothing anyway. Dogana's own indexes are not unique (the
    row checks find duplicate keys); a table someone gave a primary key, a unique index or a
    foreign key keeps the checks.
    """
    cursor = connection.cursor()
    try:
        cursor.execute(
            "SELECT (SELECT COUNT(*) FROM information_schema.STATISTICS "
            "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s AND NON_UNIQUE = 0) "
            "+ (SELECT COUNT(*) FROM information_schema.REFERENTIAL_CONSTRAINTS "
            "WHERE CONSTRAINT_SCHEMA = DATABASE() AND TABLE_NAME = %s)",
            (contract.table, contract.table),
        )
        return int(cursor.fetchone()[0]) == 0
    finally:
        cursor.close()
