"""An accepted plan executed on the published table, in set-based SQL from the staging table.

Each Action (Plans, checks and receipts) becomes one or two statements over whole sets of rows,
never a loop over rows in Python:

    replace_all      DELETE every published row; INSERT the live staged rows
    replace_window   DELETE the published rows whose window value is in [low, high], and (keyed)
                     those sharing a key with a live staged row; INSERT the live staged rows
    upsert           DELETE the published rows sharing a key with a live staged row; INSERT those
                     (SQLite, and MariaDB beyond a few rows: UPDATE those rows in place from the
                     staged ones; INSERT the rest; MariaDB where the key is the table's primary
                     key: INSERT ... ON DUPLICATE KEY UPDATE)
    tombstone        DELETE the published rows sharing a key with a staged tombstone
    append           INSERT the live staged rows

A whole-table replacement moves the rows once: on PostgreSQL and SQLite, whose DDL joins the
publication's transaction, the checked staging table itself becomes the published table (its
tombstones deleted, its row-number and deleted columns dropped, the old table dropped, the staged
one renamed, the indexes built on the loaded rows), committed with the ledger and the receipt or
not at all. Copying it instead stays for what a swap would break, each case named in swap_refused:
a group's publication (its tables' rows are copied one table after another), MariaDB (RENAME TABLE
commits at once, so a crash could publish rows without their receipt), a published table whose
columns differ from the delivery's (added by an earlier delivery), and one that other objects hang
on (views, foreign keys, triggers, grants, rules), which a dropped table would lose. Either way the
replaced table's statistics are gathered (Dialect.statistics) before the commit. A PostgreSQL
reader under REPEATABLE READ whose snapshot predates the swap and who first touches the table after
it sees it empty, as after TRUNCATE; Receiver.read locks the table before its snapshot so that its
ledger and rows stay one committed state.

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
import re
from contextlib import nullcontext
from typing import Any

from dogana_core.contract import Contract
from dogana_core.plan import Action, ActionKind, ApplyPlan
from dogana_provider.dialects import Dialect, create_index, declared_types, execute
from dogana_provider.staging import ROW_COLUMN, Staged, stores_row_column
from dogana_provider.staging.table import row_number

Batch = tuple[str, tuple[Any, ...]]
"""A condition on the staged rows' numbers (" AND ..."), with its parameters."""
EVERY: Batch = ("", ())


def published_columns(staged: Staged, contract: Contract) -> list[tuple[str, str]]:
    """The staged columns that are published: all but the deleted column."""
    return [(name, kind) for name, kind in staged.columns if name != contract.deleted_column]


def create_published(connection: Any, dialect: Dialect, staged: Staged, contract: Contract) -> None:
    """Create the published table from a staged delivery's columns, when it does not exist.

    Harmless before a decision: an empty table publishes nothing, and the row checks need it to
    look for keys already published outside a window. Deliveries of a new table decided at once
    each create it: Dialect.lock_schema makes them take turns, the first creating it.
    """
    dialect.lock_schema(connection, dialect.quote(contract.table))
    columns = ", ".join(
        f"{dialect.quote(name)} {dialect.column_type(kind)}"
        for name, kind in published_columns(staged, contract)
    )
    logical = dict(staged.columns)
    if contract.keyed and dialect.primary_key(tuple(logical.get(k) for k in contract.key)):
        columns += f", PRIMARY KEY ({', '.join(dialect.quote(k) for k in contract.key)})"
    execute(connection, f"CREATE TABLE IF NOT EXISTS {dialect.quote(contract.table)} ({columns})")
    create_indexes(connection, dialect, staged, contract)


def create_indexes(connection: Any, dialect: Dialect, staged: Staged, contract: Contract) -> None:
    """The published table's key and window indexes, when missing (dialects' create_index: a stage
    runs this on every delivery and must not wait for the published table's writers)."""
    logical = dict(staged.columns)
    digest = hashlib.sha256(contract.table.encode()).hexdigest()[:20]
    if contract.keyed:
        # Upserts, tombstones and replaced windows find published rows by key: without an
        # index, a small changes delivery would scan the whole table. A primary key on the key
        # columns is that index (Dialect.primary_key).
        name = key_index_name(contract.table)
        if not dialect.has_key_index(connection, contract.table, name, contract.key):
            keys = ", ".join(dialect.index_column(k, logical.get(k)) for k in contract.key)
            create_index(connection, dialect, contract.table, name, keys)
    window = contract.window_column
    if window is not None and window in logical:
        # A replaced window deletes the published rows whose window value is in range: without
        # an index, every window delivery would scan the whole table.
        column = dialect.index_column(window, logical.get(window))
        create_index(connection, dialect, contract.table, f"dogana_window_{digest}", column)


def index_staged_keys(
    connection: Any, dialect: Dialect, staged: Staged, contract: Contract
) -> None:
    """The staging table's key index where the dialect wants one (Dialect.staged_key_index:
    SQLite), built once its rows are in, in the stage's write transaction (the row checks' is
    read-only).

    The row checks ask whether a key repeats: without an index SQLite answers COUNT(DISTINCT)
    by inserting each key into a temporary b-tree in the rows' order, slow for keys in no
    order (uuids, text). An index is built from a sort whatever the order, and answers it
    (checks/rows.py); and a whole-table replacement swaps the staging table in with its key
    index built. Its name is the published key index's and a suffix of the staging table's, which
    create_index takes for the published one: index names are one namespace in a schema, and
    SQLite renames no index. Elsewhere the scan's COUNT(DISTINCT) sorts anyway.
    """
    logical = dict(staged.columns)
    if (
        not dialect.staged_key_index
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


def add_missing_columns(
    connection: Any,
    dialect: Dialect,
    staged: Staged,
    contract: Contract,
    *,
    declared: dict[str, str] | None = None,
) -> None:
    """Add the staged columns the published table lacks, nullable: no existing row changes.
    Where DDL commits at once (MariaDB), widen the columns an accepted schema version widens
    here too, before the publication's transaction: ALTER inside it would commit it early.

    declared: the published columns' declared types, read in the caller's transaction, which
    holds the table until it commits (SQLite's publication: one read serves the addition, the
    widening and the upsert's UPDATE); each column added here joins it."""
    if declared is not None:
        have = set(declared)
    elif not dialect.transactional_ddl:  # the columns widening read: widened, still there
        have = set(widen_columns(connection, dialect, staged, contract))
    else:
        have = set(existing_columns(connection, dialect, contract.table))
    for name, kind in published_columns(staged, contract):
        if name not in have:
            spelled = dialect.column_type(kind)
            execute(
                connection,
                f"ALTER TABLE {dialect.quote(contract.table)} ADD COLUMN "
                f"{dialect.quote(name)} {spelled}",
            )
            if declared is not None:
                declared[name] = spelled.lower()


def widen_columns(
    connection: Any,
    dialect: Dialect,
    staged: Staged,
    contract: Contract,
    declared: dict[str, str] | None = None,
) -> dict[str, str]:
    """Widen each published decimal column whose staged type raises its precision and keeps its
    scale, before an accepted delivery's rows go in; the published indexes are built again
    where widening rebuilt the table (SQLite).

    Only an accepted delivery reaches here, and column_types refuses a staged type other than
    the published one unless the delivery's schema version widens that column (schema/), so
    every widening found was allowed by the table's schema policy. The published columns'
    declared types, as read before widening, are returned; declared, when given, is that read
    (add_missing_columns), and each widened column's new type is set in it.
    """
    have = dict(
        declared_types(connection, dialect, contract.table) if declared is None else declared
    )
    chosen = {}
    for name, logical in published_columns(staged, contract):
        held = _decimal(have.get(name, ""))
        wanted = _decimal(logical)
        if held and wanted and held[1] == wanted[1] and held[0] < wanted[0]:
            chosen[name] = logical
    for name, logical in chosen.items():
        dialect.widen_column(connection, contract.table, name, logical)
        if declared is not None:
            declared[name] = dialect.column_type(logical).lower()
    if chosen:
        create_indexes(connection, dialect, staged, contract)
    return have


def _decimal(spelled: str) -> tuple[int, int] | None:
    """A logical or declared decimal type's precision and scale (decimal(10,2), numeric(10,2),
    text decimal(10,2)); None for any other type."""
    found = re.search(r"(?:decimal|numeric)\((\d+),\s*(\d+)\)", spelled.lower())
    return None if found is None else (int(found[1]), int(found[2]))


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
    declared: dict[str, str] | None = None,
) -> None:
    """Run every action of an accepted plan, in order, on the published table; with swap, a
    whole-table replacement swaps the staging table in where swap_refused allows it.
    declared: the published columns' declared types, read in this transaction and current
    (add_missing_columns), or None to read them where needed."""
    refused = swap_refused(connection, dialect, plan, staged, contract) if swap else "copy"
    if refused is None:
        swap_in(connection, dialect, staged, contract)
    else:
        published = _Published(connection, dialect, staged, contract, declared)
        if not published.upserts_with_tombstones(plan):
            for action in plan.actions:
                published.run(action)
    if any(action.operation is ActionKind.REPLACE_ALL for action in plan.actions):
        # Every row is new: the next changes delivery's plans need the table's statistics now,
        # not when autovacuum comes round to it.
        for statement in dialect.statistics(dialect.quote(contract.table)):
            execute(connection, statement)


def swap_refused(
    connection: Any, dialect: Dialect, plan: ApplyPlan, staged: Staged, contract: Contract
) -> str | None:
    """Why the plan's rows are copied rather than the staging table swapped in; None to swap."""
    if [action.operation for action in plan.actions] != [ActionKind.REPLACE_ALL]:
        return "the plan changes part of the table"
    refused = dialect.swap_refused()
    if refused is not None:
        return refused
    names = [name for name, _ in published_columns(staged, contract)]
    if existing_columns(connection, dialect, contract.table) != names:
        return "the published table's columns differ from the delivery's"
    if dialect.has_dependents(connection, contract.table):
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
    for statement in dialect.drop_columns(source, dropped):
        execute(connection, statement)
    execute(connection, f"DROP TABLE {target}")
    execute(connection, f"ALTER TABLE {source} RENAME TO {target}")
    create_indexes(connection, dialect, staged, contract)


class _Published:
    def __init__(
        self,
        connection: Any,
        dialect: Dialect,
        staged: Staged,
        contract: Contract,
        declared: dict[str, str] | None = None,
    ):
        self.connection = connection
        self.declared = declared
        self.dialect = dialect
        self.contract = contract
        self.p = dialect.placeholder
        self.target = dialect.quote(contract.table)
        self.source = dialect.quote(staged.table)
        self.columns = published_columns(staged, contract)
        self.staged = staged
        deleted = contract.deleted_column
        # A file may omit the deleted column: then every row is live.
        self.deleted = deleted if deleted is not None and staged.logical(deleted) else None
        self._in_place: bool | None = None
        self._published: list[str] | None = None
        self._checked: bool | None = None

    def staged_where(self, live: bool | None, batch: Batch = EVERY) -> tuple[str, tuple[Any, ...]]:
        """Live staged rows, or tombstones, or (None) both, of the batch; a file without the
        deleted column has only live."""
        where: str
        params: tuple[Any, ...]
        if live is None:
            where, params = "1 = 1", ()
        elif self.deleted is None:
            where, params = ("1 = 1", ()) if live else ("1 = 0", ())
        else:
            where, params = f"s.{self.dialect.quote(self.deleted)} = {self.p}", (not live,)
        return where + batch[0], params + batch[1]

    def batches(self) -> list[Batch]:
        """The staged rows an upsert's DELETE and INSERT take at a time, by their row numbers
        (1 to the staged rows, staging/table.py), as Dialect.keyed_batch says: all at once
        where it says None, where the staging table numbers its rows implicitly (SQLite), and
        into a table whose inserts go unchecked (an empty one: nothing to delete)."""
        rows = self.staged.rows
        names = [name for name, _ in self.staged.columns]
        if not stores_row_column(self.dialect, names):
            return [EVERY]
        size = self.dialect.keyed_batch(self.connection, rows)
        if size is None or not self.dialect.keeps_insert_checks(
            self.connection, self.contract.table, self.contract.key
        ):
            return [EVERY]
        # Every batch's INSERT keeps the checks, asked once: a batch's DELETE may leave the
        # table empty before the next INSERT, which must not then turn them off mid-transaction.
        self._checked = True
        row, p = f"s.{row_number(self.dialect, names)}", self.p
        batches = []
        for first in range(1, rows + 1, size):
            # The first batch open below and the last open above: no staged row is left out.
            low: Batch = (f" AND {row} >= {p}", (first,)) if first > 1 else EVERY
            high: Batch = (f" AND {row} < {p}", (first + size,)) if first + size <= rows else EVERY
            batches.append((low[0] + high[0], low[1] + high[1]))
        return batches

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
            self.upsert(action.key, tombstones=False)
        elif kind is ActionKind.TOMBSTONE:
            self.delete_matching(action.key, live=False)
        elif kind is ActionKind.APPEND:
            self.insert_live()
        else:  # pragma: no cover - ActionKind is closed
            raise ValueError(f"unknown action {kind}")

    def upserts_with_tombstones(self, plan: ApplyPlan) -> bool:
        """Run a changes delivery's upsert and tombstones batch by batch (batches): where the
        upsert deletes and inserts, one DELETE of every staged key of the batch and an INSERT
        of its live rows; where it updates in place (updates_in_place), the batch's UPDATE,
        its INSERT of the live rows whose key is not published, and its tombstones' DELETE.
        The staged keys are unique, live or tombstone (ApplyPlan.for_delivery), so no
        tombstone's DELETE finds a row a live staged row inserted or updated, nor a later
        batch's statements the rows of an earlier one: the same rows as the upsert's
        statements over every batch, then the tombstones'. False, nothing run, for any other
        plan."""
        actions = plan.actions
        if [action.operation for action in actions] != [ActionKind.UPSERT, ActionKind.TOMBSTONE]:
            return False
        key = actions[0].key
        if actions[1].key != key:
            return False
        self.upsert(key, tombstones=True)
        return True

    def upsert(self, key: tuple[str, ...], tombstones: bool) -> None:
        """The live staged rows published by key: by the database's own upsert where the table
        allows it (Dialect.upserts_by_key), else batch by batch (batches), UPDATEd in place and
        the absent ones INSERTed (updates_in_place), or their keys DELETEd and they INSERTed;
        with tombstones, the staged tombstones' rows deleted too (in each batch).

        The database's upsert finds each row once, through the primary key, and changes it
        where it finds it; the statements of a batch find it again in each. It is the same
        result: a published keyed table holds each key once and the staged keys are unique
        (updates_in_place), so the upsert's update of a row is the DELETE and INSERT of it.
        """
        table, rows = self.contract.table, self.staged.rows
        if self.dialect.upserts_by_key(self.connection, table, key, rows):
            self.upsert_by_key(key)
            if tombstones:
                self.delete_matching(key, live=False)
            return
        in_place = self.updates_in_place()
        for batch in self.batches():
            if in_place:
                self.update_matching(key, batch)
                self.insert_live(absent=key, batch=batch)
                if tombstones:
                    self.delete_matching(key, live=False, batch=batch)
            else:
                self.delete_matching(key, live=None if tombstones else True, batch=batch)
                self.insert_live(batch=batch)

    def insert_live(self, absent: tuple[str, ...] = (), batch: Batch = EVERY) -> None:
        """INSERT the live staged rows (of the batch); with absent (a key), only those whose key
        no published row has."""
        names = ", ".join(self.dialect.quote(name) for name, _ in self.columns)
        selected = ", ".join(f"s.{self.dialect.quote(name)}" for name, _ in self.columns)
        where, params = self.staged_where(live=True, batch=batch)
        if absent:
            same = " AND ".join(
                f"p.{self.dialect.quote(k)} = s.{self.dialect.quote(k)}" for k in absent
            )
            where += f" AND NOT EXISTS (SELECT 1 FROM {self.target} p WHERE {same})"
        # A table someone gave a unique index or a foreign key keeps the checks, and so does
        # one holding rows, where turning them off would speed nothing. dogana's own key index
        # is not unique, or is a primary key on the key alone (Dialect.primary_key), which
        # finds nothing: the row checks proved the staged keys unique.
        checked = self._checked
        if checked is None:
            checked = self.dialect.keeps_insert_checks(
                self.connection, self.contract.table, self.contract.key
            )
        unchecked = not checked
        with self.dialect.unchecked_inserts(self.connection) if unchecked else nullcontext():
            execute(
                self.connection,
                f"INSERT INTO {self.target} ({names}) SELECT {selected} FROM {self.source} s "
                f"WHERE {where}",
                params,
            )

    def updates_in_place(self) -> bool:
        """Whether an upsert UPDATEs the published rows whose key is staged instead of deleting
        and inserting them (Dialect.updates_in_place: SQLite's UPDATE ... FROM, MariaDB's
        multi-table UPDATE of more rows than it publishes at once, Dialect.update_by_key).

        Each of the rows a changes delivery spreads across a table lies on a page of its own:
        a DELETE rewrites those pages and every key-index page holding one of their keys, and
        the INSERT the index pages again, each page written twice at the commit (to the
        rollback journal, then to the table). An UPDATE that leaves the key alone rewrites the
        table's pages alone. The result is the same: a published keyed table holds each key
        once (every publication deletes the keys it inserts, and staged keys are unique), so
        each updated row is the one the DELETE would have removed, the staged row's values in
        every published column, NULL in those the file lacks, as an insert leaves them; only a
        trigger could tell the two apart, so a table with one keeps DELETE and INSERT.
        PostgreSQL's UPDATE visits the same heap pages as its DELETE and, a freshly loaded page
        having no room, writes each new version elsewhere with its index entry, as the INSERT
        does, and a plain join lets the planner scan the whole table: it keeps DELETE and
        INSERT. MariaDB's DELETE and INSERT write the key index's pages besides the rows' and
        leave their delete marks for its purge to read again (MariadbDialect.updates_in_place).
        """
        if self._in_place is None:  # asked once a publication: the plan's and its upsert's
            in_place = self.dialect.updates_in_place(self.staged.rows)
            table = self.contract.table
            self._in_place = in_place and not self.dialect.has_triggers(self.connection, table)
        return self._in_place

    def unstaged_columns(self) -> list[str]:
        """The published columns the staged file lacks, which a row it updates holds NULL in,
        as one it inserts does."""
        if self._published is None:  # read once: every batch's UPDATE sets the same columns
            self._published = (
                existing_columns(self.connection, self.dialect, self.contract.table)
                if self.declared is None
                else list(self.declared)
            )
        staged = {name for name, _ in self.columns}
        return [name for name in self._published if name not in staged]

    def upsert_by_key(self, key: tuple[str, ...]) -> None:
        """INSERT the live staged rows, each whose key is published updating that row to its
        values instead (Dialect.upsert_by_key)."""
        q = self.dialect.quote
        names = [q(name) for name, _ in self.columns]
        cleared = [q(name) for name in self.unstaged_columns()]
        where, params = self.staged_where(live=True)
        execute(
            self.connection,
            self.dialect.upsert_by_key(
                self.target, self.source, names, [q(k) for k in key], cleared, where
            ),
            params,
        )

    def update_matching(self, key: tuple[str, ...], batch: Batch = EVERY) -> None:
        """UPDATE the published rows sharing a key with a live staged row (of the batch) to its
        values."""
        q = self.dialect.quote
        sets = [(q(name), f"s.{q(name)}") for name, _ in self.columns if name not in key]
        sets += [(q(name), "NULL") for name in self.unstaged_columns()]
        if not sets:  # every column is the key: the matching rows are the staged ones already
            return
        same = " AND ".join(f"{self.target}.{q(k)} = s.{q(k)}" for k in key)
        where, params = self.staged_where(live=True, batch=batch)
        execute(
            self.connection,
            self.dialect.update_by_key(self.target, self.source, sets, same, where),
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

    def delete_matching(
        self, key: tuple[str, ...], *, live: bool | None, batch: Batch = EVERY
    ) -> None:
        """Delete published rows sharing a key with a staged live row (or tombstone, or either:
        None), of the batch.

        The cost must follow the delivery, not the table: probe the published key index once
        per staged key. A correlated EXISTS lets the planner pick a scan of the whole published
        table instead (SQLite always does; PostgreSQL does whenever its statistics are missing
        or think a scan cheaper). So a one-column key is matched as Dialect.one_key_match says
        (PostgreSQL: the staged keys as one array; SQLite: an IN list it looks up in the
        index). MariaDB runs a single-table DELETE's EXISTS (or IN) once per published row,
        each a scan of the staging table; its multi-table DELETE joins the distinct staged keys
        to the key index instead (Dialect.deletes_by_join). Other keys keep EXISTS.
        """
        where, params = self.staged_where(live=live, batch=batch)
        column = self.dialect.quote(key[0])
        staged = f"SELECT s.{column} FROM {self.source} s WHERE {where}"
        matching = self.dialect.one_key_match(f"{self.target}.{column}", staged)
        if len(key) == 1 and matching is not None:
            execute(self.connection, f"DELETE FROM {self.target} WHERE {matching}", params)
            return
        if self.dialect.deletes_by_join:
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
