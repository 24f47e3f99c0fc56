"""An accepted plan executed on the published table, in set-based SQL from the staging table.

Each Action (Plans, checks and receipts) becomes one or two statements over whole sets of rows,
never a loop over rows in Python:

    replace_all      DELETE every published row; INSERT the live staged rows
    replace_window   DELETE the published rows whose window value is in [low, high], and (keyed)
                     those sharing a key with a live staged row; INSERT the live staged rows
    upsert           DELETE the published rows sharing a key with a live staged row; INSERT those
    tombstone        DELETE the published rows sharing a key with a staged tombstone
    append           INSERT the live staged rows

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
from typing import Any

from dogana_core.contract import Contract
from dogana_core.plan import Action, ActionKind, ApplyPlan
from dogana_provider.sql import Dialect, execute
from dogana_provider.staging import Staged


def published_columns(staged: Staged, contract: Contract) -> list[tuple[str, str]]:
    """The staged columns that are published: all but the deleted column."""
    return [(name, kind) for name, kind in staged.columns if name != contract.deleted_column]


def create_published(connection: Any, dialect: Dialect, staged: Staged, contract: Contract) -> None:
    """Create the published table from a staged delivery's columns, when it does not exist.

    Harmless before a decision: an empty table publishes nothing, and the row checks need it to
    look for keys already published outside a window.
    """
    columns = ", ".join(
        f"{dialect.quote(name)} {dialect.column_type(kind)}"
        for name, kind in published_columns(staged, contract)
    )
    execute(connection, f"CREATE TABLE IF NOT EXISTS {dialect.quote(contract.table)} ({columns})")
    if contract.keyed:
        # Upserts, tombstones and replaced windows find published rows by key: without an
        # index, a small changes delivery would scan the whole table.
        logical = dict(staged.columns)
        keys = ", ".join(_index_column(dialect, k, logical.get(k)) for k in contract.key)
        name = dialect.quote(
            "dogana_key_" + hashlib.sha256(contract.table.encode()).hexdigest()[:20]
        )
        execute(
            connection,
            f"CREATE INDEX IF NOT EXISTS {name} ON {dialect.quote(contract.table)} ({keys})",
        )
    window = contract.window_column
    if window is not None and window in dict(staged.columns):
        # A replaced window deletes the published rows whose window value is in range: without
        # an index, every window delivery would scan the whole table.
        logical = dict(staged.columns)
        name = dialect.quote(
            "dogana_window_" + hashlib.sha256(contract.table.encode()).hexdigest()[:20]
        )
        column = _index_column(dialect, window, logical.get(window))
        execute(
            connection,
            f"CREATE INDEX IF NOT EXISTS {name} ON {dialect.quote(contract.table)} ({column})",
        )


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
    connection: Any, dialect: Dialect, plan: ApplyPlan, staged: Staged, contract: Contract
) -> None:
    """Run every action of an accepted plan, in order, on the published table."""
    published = _Published(connection, dialect, staged, contract)
    for action in plan.actions:
        published.run(action)


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
            self.delete_matching(action.key, live=True)
            self.insert_live()
        elif kind is ActionKind.TOMBSTONE:
            self.delete_matching(action.key, live=False)
        elif kind is ActionKind.APPEND:
            self.insert_live()
        else:  # pragma: no cover - ActionKind is closed
            raise ValueError(f"unknown action {kind}")

    def insert_live(self) -> None:
        names = ", ".join(self.dialect.quote(name) for name, _ in self.columns)
        selected = ", ".join(f"s.{self.dialect.quote(name)}" for name, _ in self.columns)
        where, params = self.staged_where(live=True)
        execute(
            self.connection,
            f"INSERT INTO {self.target} ({names}) SELECT {selected} FROM {self.source} s "
            f"WHERE {where}",
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
