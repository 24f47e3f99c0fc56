"""The receiver's row checks: one per fact a manifest implies about its rows, named once.

"Plans, checks and receipts" lists what a manifest implies about the rows it describes; the
receiver verifies each fact before deciding and passes the results to the gate as
Check(name, passed, detail). dogana names no row check, so the names are fixed here, once, and
``dogana check`` and the receiver report them identically:

    rows                               the read holds `rows` live rows (a null deleted value is
                                       neither live nor a tombstone, and fails this count too)
    column_names                       its column names are identifiers a receiver can create,
                                       distinct without regard to case (refused while staging)
    tombstones                         ... and `tombstones` tombstones
    deleted_not_null                   no deleted value is null
    column_hash                        its columns hash to schema_hash (deleted column left out)
    column_types                       its columns have the published table's types, and every
                                       value fits its column (needs the published table; a
                                       value out of range is found while staging)
    content_hash                       its bytes hash to content_hash
    key_not_null                       every key, live or tombstoned, is non-null
    key_unique                         ... and appears once
    window_not_null                    every live row's window value is non-null
    window_inside                      a window delivery's window values are inside its window
    cursor_inside                      cursor values are inside the read's interval
    key_not_published_outside_window   a window delivery carries no key already published
                                       outside its window (needs the published table)

A tombstone's values other than its key may be null (Deleted column): its window value is not
required, but when present it must be inside a window delivery's window, and its cursor is null
or inside the interval. A live row's cursor is never null.

Every check but the two hashes is set-based SQL over the staged table (staging/): the counts
share one scan, duplicated keys one GROUP BY, and only a failing check reads a few example rows
for its detail. Statements are built from quoted identifiers and bound parameters only, through a
Dialect (dialects/), so the same functions run on SQLite, PostgreSQL and MySQL/MariaDB.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property
from typing import Any

from dogana_core.contract import Contract
from dogana_core.gate import Check
from dogana_core.manifest import Manifest
from dogana_core.shape import Checkpoint
from dogana_core.values import LogicalType
from dogana_provider.delivery.files import UnreadableFile, file_column_hash
from dogana_provider.dialects import (
    Dialect,
    StatementFailed,
    declared_types_of,
    display,
    run_or_fail,
)
from dogana_provider.report.table import plural
from dogana_provider.staging import Staged, row_number

EXAMPLES = 3  # example rows a failing check quotes


class CheckName(StrEnum):
    ROWS = "rows"
    COLUMN_NAMES = "column_names"
    TOMBSTONES = "tombstones"
    DELETED_NOT_NULL = "deleted_not_null"
    COLUMN_HASH = "column_hash"
    COLUMN_TYPES = "column_types"
    CONTENT_HASH = "content_hash"
    KEY_NOT_NULL = "key_not_null"
    KEY_UNIQUE = "key_unique"
    WINDOW_NOT_NULL = "window_not_null"
    WINDOW_INSIDE = "window_inside"
    CURSOR_INSIDE = "cursor_inside"
    KEY_NOT_PUBLISHED_OUTSIDE_WINDOW = "key_not_published_outside_window"


SOURCE_ACTIVE = "source_active"
"""The receiver's check of a table's activation (receiver/activation.py): not a row fact, so not
a CheckName, but named here with them so that no row check or expectation takes it."""


def _check(name: CheckName, passed: bool, detail: str) -> Check:
    """The one place a row check's result becomes a Check value."""
    return Check(str(name), passed, detail)


# Which checks a delivery calls for ---------------------------------------------------------------


@dataclass(frozen=True)
class NotRun:
    """A check that does not apply to a delivery, and why (for people; never sent to the gate)."""

    name: CheckName
    reason: str


@dataclass(frozen=True)
class Interval:
    """The half-open interval (low, high] a changes read's cursor values fall in."""

    low: Any
    high: Any
    logical: str
    spelled: str


def cursor_interval(contract: Contract, manifest: Manifest) -> Interval | str:
    """The interval cursor values must fall in, or why the read has none to check."""
    cursor = contract.cursor_column
    if cursor is None:
        return "the contract has no cursor column"
    shape = contract.shape(manifest.shape)
    kind = contract.type_of(cursor)
    if shape.checkpoint is Checkpoint.TIMESTAMP and kind is LogicalType.DATETIME:
        return Interval(manifest.since, manifest.produced_at, kind, "(since, produced_at]")
    if shape.checkpoint is Checkpoint.SEQUENCE and kind is LogicalType.INT:
        return Interval(manifest.since, manifest.generation, kind, "(since, generation]")
    if shape.is_complete:
        return f"shape {manifest.shape!r} is a complete read: it declares no interval"
    return f"a {shape.checkpoint} read declares no interval of {kind} {cursor} values"


def plan(
    contract: Contract, manifest: Manifest, *, published: bool = False
) -> tuple[tuple[CheckName, ...], tuple[NotRun, ...]]:
    """The checks a delivery calls for, in CheckName order, and those it does not, with why.

    published says whether the published table is at hand (the receiver's case); without it
    key_not_published_outside_window cannot run.
    """
    shape = contract.shape(manifest.shape)
    skip: dict[CheckName, str] = {}
    if contract.deleted_column is None:
        reason = "the contract has no deleted column: every row is live"
        skip[CheckName.TOMBSTONES] = skip[CheckName.DELETED_NOT_NULL] = reason
    if manifest.schema_hash is None:
        skip[CheckName.COLUMN_HASH] = "the manifest declares no schema_hash"
    if manifest.content_hash is None:
        skip[CheckName.CONTENT_HASH] = "the manifest declares no content_hash"
    if not contract.keyed:
        reason = "the table is keyless: rows have no identity"
        skip[CheckName.KEY_NOT_NULL] = skip[CheckName.KEY_UNIQUE] = reason
        skip[CheckName.KEY_NOT_PUBLISHED_OUTSIDE_WINDOW] = reason
    if contract.window_column is None:
        reason = "the contract has no window column"
        skip[CheckName.WINDOW_NOT_NULL] = skip[CheckName.WINDOW_INSIDE] = reason
    if not shape.is_window:
        reason = f"shape {manifest.shape!r} covers the whole table"
        skip.setdefault(CheckName.WINDOW_INSIDE, reason)
        skip.setdefault(
            CheckName.KEY_NOT_PUBLISHED_OUTSIDE_WINDOW, f"{reason}, so it may move keys"
        )
    if not published:
        reason = "needs the published table: the receiver runs it"
        skip.setdefault(CheckName.KEY_NOT_PUBLISHED_OUTSIDE_WINDOW, reason)
        skip[CheckName.COLUMN_TYPES] = reason
    interval = cursor_interval(contract, manifest)
    if isinstance(interval, str):
        skip[CheckName.CURSOR_INSIDE] = interval
    run = tuple(name for name in CheckName if name not in skip)
    return run, tuple(NotRun(name, skip[name]) for name in CheckName if name in skip)


# Running them ------------------------------------------------------------------------------------


def verify(
    connection: Any,
    dialect: Dialect,
    staged: Staged,
    contract: Contract,
    manifest: Manifest,
    *,
    published: str | None = None,
    rows: StagedRows | None = None,
) -> list[Check]:
    """Every check the delivery calls for (plan), run on its staged table, in CheckName order.

    rows, when given, is the StagedRows to count with, whose one scan also computes what its
    caller added (its extra: the expectations', expectations.py).

    An unreadable file fails the row count (a count derived from the file checks parsing) and
    still has its bytes hashed; nothing else can be said about its rows. A value its database
    column cannot store fails column_types where that runs (the receiver), the row count
    otherwise (it was not loaded).
    """
    names, _ = plan(contract, manifest, published=published is not None)
    if staged.unreadable is not None:
        if staged.misnamed:
            failed = _check(CheckName.COLUMN_NAMES, False, staged.unreadable)
        elif staged.unstorable and CheckName.COLUMN_TYPES in names:
            failed = _check(CheckName.COLUMN_TYPES, False, f"cannot store: {staged.unreadable}")
        else:
            failed = _check(CheckName.ROWS, False, f"cannot read the file: {staged.unreadable}")
        results = [failed]
        if CheckName.CONTENT_HASH in names:
            results.append(content_hash(staged, manifest))
        return results
    rows = rows or StagedRows(connection, dialect, staged, contract, manifest)
    runners: dict[CheckName, Callable[[], Check]] = {
        CheckName.ROWS: rows.rows,
        CheckName.COLUMN_NAMES: lambda: column_names(staged),
        CheckName.TOMBSTONES: rows.tombstones,
        CheckName.DELETED_NOT_NULL: rows.deleted_not_null,
        CheckName.COLUMN_HASH: lambda: column_hash(staged, contract, manifest),
        CheckName.COLUMN_TYPES: lambda: column_types(
            connection, dialect, staged, contract, str(published)
        ),
        CheckName.CONTENT_HASH: lambda: content_hash(staged, manifest),
        CheckName.KEY_NOT_NULL: rows.key_not_null,
        CheckName.KEY_UNIQUE: rows.key_unique,
        CheckName.WINDOW_NOT_NULL: rows.window_not_null,
        CheckName.WINDOW_INSIDE: rows.window_inside,
        CheckName.CURSOR_INSIDE: rows.cursor_inside,
        CheckName.KEY_NOT_PUBLISHED_OUTSIDE_WINDOW: lambda: rows.key_not_published_outside_window(
            str(published)
        ),
    }
    return [runners[name]() for name in names]


def column_names(staged: Staged) -> Check:
    """Passed by every staged file: staging refuses a name no receiver may create
    (delivery/files.py's refuse_misnamed), and verify reports that refusal under this name."""
    count = len(staged.file_columns)
    verdict = "is an identifier" if count == 1 else "are identifiers, distinct regardless of case"
    return _check(
        CheckName.COLUMN_NAMES, True, f"the file's {plural(count, 'column name')} {verdict}"
    )


def column_hash(staged: Staged, contract: Contract, manifest: Manifest) -> Check:
    """The file's columns, in file order with their logical types, hash to schema_hash."""
    try:
        actual = file_column_hash(staged.path, staged.file_columns, contract.deleted_column)
    except UnreadableFile as exc:
        return _check(
            CheckName.COLUMN_HASH,
            False,
            f"the file's columns cannot be hashed: {exc.rule} ({exc.column})",
        )
    columns = [c.name for c in staged.file_columns if c.name != contract.deleted_column]
    if actual == manifest.schema_hash:
        return _check(
            CheckName.COLUMN_HASH,
            True,
            f"the file's {len(columns)} columns hash to the declared schema_hash",
        )
    pairs = ", ".join(
        f"{c.name} {c.logical}" for c in staged.file_columns if c.name != contract.deleted_column
    )
    return _check(
        CheckName.COLUMN_HASH,
        False,
        f"the file's columns ({pairs}) hash to {actual}; "
        f"the manifest declares {manifest.schema_hash}",
    )


def column_types(
    connection: Any,
    dialect: Dialect,
    staged: Staged,
    contract: Contract,
    published: str,
    *,
    widened: Mapping[str, str] | None = None,
) -> Check:
    """Every staged column the published table has is of the type it has there, under the
    name it has there.

    Compared as the database declares them (dialects/base.py's declared_types): the staging table's
    columns were created from the file's logical types exactly as the published ones were, so a
    difference is a column whose type changed since, which the published table cannot hold as it is.
    A file column spelling a published one in another case is refused on every database: SQLite and
    MariaDB would take it for that column, PostgreSQL for a new one.

    widened maps a column to the wider type the delivery's schema version widens it to, which
    its table's schema policy allowed (schema/): staged as that type, it is no difference, and
    the publication widens the published column (actions.widen_columns).
    """
    widened = widened or {}
    have, got = declared_types_of(connection, dialect, (published, staged.table))
    folded = {name.lower(): name for name in have}
    files = [n for n, _ in staged.columns if n != contract.deleted_column]
    recased = {n: folded[n.lower()] for n in files if n not in have and n.lower() in folded}
    common = [n for n in files if n in have]
    kinds = dict(staged.columns)
    differ = [n for n in common if got.get(n) != have[n] and widened.get(n) != kinds[n]]
    grown = [n for n in common if got.get(n) != have[n] and widened.get(n) == kinds[n]]
    if not differ and not recased:
        if grown:
            return _check(
                CheckName.COLUMN_TYPES,
                True,
                "the file's published columns have the published table's types, but "
                + ", ".join(f"{n} widened to {kinds[n]}" for n in grown)
                + " by the delivery's schema version",
            )
        return _check(
            CheckName.COLUMN_TYPES,
            True,
            f"the file's {plural(len(common), 'published column')} "
            f"{'has' if len(common) == 1 else 'have'} the published table's types",
        )
    spelled = [
        f"{n} is {kinds[n]} in the file ({got.get(n)}), {have[n]} in table {published}"
        for n in differ
    ]
    spelled += [
        f"{n} is column {was} of table {published} in another case" for n, was in recased.items()
    ]
    return _check(
        CheckName.COLUMN_TYPES,
        False,
        f"{plural(len(spelled), 'column')} of another type or name than the published table's: "
        + "; ".join(spelled),
    )


def uncheckable(reason: object) -> Check:
    """The rows could not be checked at all (the contract cannot plan them): a refusal."""
    return _check(CheckName.ROWS, False, f"cannot check the rows: {reason}")


def replayed_over_other_bytes(manifest: Manifest, sha256: str | None) -> Check:
    """A manifest already accepted, delivered again over bytes its content_hash does not match."""
    return _check(
        CheckName.CONTENT_HASH,
        False,
        f"manifest {manifest.identity} was accepted for other bytes: the file's bytes hash to "
        f"{sha256}, the manifest declares {manifest.content_hash}",
    )


def content_hash(staged: Staged, manifest: Manifest) -> Check:
    """The file's bytes, hashed as they were read, hash to content_hash."""
    if staged.sha256 is None:
        return _check(
            CheckName.CONTENT_HASH, False, "the file's bytes could not all be read to hash them"
        )
    if staged.sha256 == manifest.content_hash:
        return _check(
            CheckName.CONTENT_HASH, True, "the file's bytes hash to the declared content_hash"
        )
    return _check(
        CheckName.CONTENT_HASH,
        False,
        f"the file's bytes hash to {staged.sha256}; the manifest declares {manifest.content_hash}: "
        "these are other bytes than the manifest describes",
    )


def live_condition(dialect: Dialect, staged: Staged, contract: Contract) -> tuple[str, list[Any]]:
    """The SQL condition of a live row (deleted value false), with its parameters; every row
    when the file has no deleted column."""
    deleted = contract.deleted_column
    if deleted is None or not staged.logical(deleted):
        return EVERY_ROW, []
    return f"{dialect.quote(deleted)} = {dialect.placeholder}", [False]


EVERY_ROW = "1 = 1"
NO_ROW = "1 = 0"
"""The conditions of every row and of none: the counting scan counts them without a sum."""


Extra = tuple[tuple[str, tuple[Any, ...]], ...]
"""A caller's aggregates that join the counting scan: SQL expressions with their parameters."""


class StagedRows:
    """The row checks of one staged delivery, as SQL over its staging table.

    extra holds a caller's groups of aggregates (expectations.py), set before the counts are
    read: they join the one counting scan, and extra_values holds each group's values, or the
    StatementFailed that kept it from running.
    """

    def __init__(
        self,
        connection: Any,
        dialect: Dialect,
        staged: Staged,
        contract: Contract,
        manifest: Manifest,
    ) -> None:
        self.connection = connection
        self.dialect = dialect
        self.staged = staged
        self.contract = contract
        self.manifest = manifest
        self.table = dialect.quote(staged.table)
        self.row = row_number(dialect, (name for name, _ in staged.columns))
        self.p = dialect.placeholder
        deleted = contract.deleted_column
        self.deleted = deleted if deleted is not None and staged.logical(deleted) else None
        self.extra: list[Extra] = []
        self.extra_values: list[tuple[Any, ...] | StatementFailed] = []

    # SQL building blocks ----------------------------------------------------------------------

    def q(self, column: str, alias: str = "") -> str:
        return f"{alias}.{self.dialect.quote(column)}" if alias else self.dialect.quote(column)

    def ordered(self, column: str, alias: str = "") -> str:
        return self.dialect.ordered(self.q(column, alias), str(self.contract.type_of(column)))

    def bind(self, column: str, value: Any) -> Any:
        return self.dialect.bind(str(self.contract.type_of(column)), value)

    @property
    def live(self) -> tuple[str, list[Any]]:
        """Rows whose deleted value is false; every row when the file has no deleted column."""
        return live_condition(self.dialect, self.staged, self.contract)

    @property
    def tombstone(self) -> tuple[str, list[Any]]:
        if self.deleted is None:
            return NO_ROW, []
        return f"{self.q(self.deleted)} = {self.p}", [True]

    def outside(
        self, column: str, low: Any, high: Any, *, open_low: bool, alias: str = ""
    ) -> tuple[str, list[Any]]:
        """column's value below [low or (low, or above high]."""
        below = "<=" if open_low else "<"
        value = self.ordered(column, alias)
        sql = f"({value} {below} {self.p} OR {value} > {self.p})"
        return sql, [self.bind(column, low), self.bind(column, high)]

    def execute(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        cursor = self.connection.cursor()
        try:
            cursor.execute(sql, tuple(params))
            return list(cursor.fetchall())
        finally:
            cursor.close()

    # Counting, in one scan -------------------------------------------------------------------

    def predicates(self) -> dict[str, tuple[str, list[Any]]]:
        """Every condition a check counts, by name; the counts share one scan of the table."""
        live, live_params = self.live
        conditions = {"live": self.live, "tombstones": self.tombstone}
        if self.deleted is not None:
            conditions["null_deleted"] = (f"{self.q(self.deleted)} IS NULL", [])
        if self.contract.keyed:
            conditions["null_key"] = (
                " OR ".join(f"{self.q(k)} IS NULL" for k in self.contract.key),
                [],
            )
        window = self.contract.window_column
        if window is not None:
            conditions["null_window"] = (f"({live}) AND {self.q(window)} IS NULL", live_params)
            if self.manifest.window is not None:
                low, high = self.manifest.window
                sql, params = self.outside(window, low, high, open_low=False)
                conditions["outside_window"] = (f"{self.q(window)} IS NOT NULL AND {sql}", params)
        interval = cursor_interval(self.contract, self.manifest)
        if isinstance(interval, Interval):
            cursor = self.contract.cursor_column
            assert cursor is not None
            sql, params = self.outside(cursor, interval.low, interval.high, open_low=True)
            tombstone, tombstone_params = self.tombstone
            # A live row's cursor is never null; a tombstone's may be. A row whose deleted value
            # is null is neither, and deleted_not_null reports it.
            conditions["null_cursor"] = (f"({live}) AND {self.q(cursor)} IS NULL", live_params)
            conditions["outside_cursor"] = (
                f"(({live}) OR ({tombstone})) AND {self.q(cursor)} IS NOT NULL AND {sql}",
                [*live_params, *tombstone_params, *params],
            )
        return conditions

    @cached_property
    def counts(self) -> dict[str, int]:
        """Every count the checks read, in one scan, which also computes extra's aggregates.

        When the database refuses that statement, one of extra's groups is at fault (the row
        checks' own SQL is built from checked names only): the counts run alone, and each group
        alone, so that only the groups at fault are left without values.
        """
        conditions = self.predicates()
        # What the scan's other aggregates tell needs no sum of its own, each a test per row:
        # every row's condition (no deleted column) counts COUNT(*), no row's counts 0, and one
        # key column's nulls are the rows COUNT(key) leaves out.
        told = {name: sql for name, (sql, _) in conditions.items() if sql in (EVERY_ROW, NO_ROW)}
        if len(self.contract.key) == 1 and "null_key" in conditions:
            told["null_key"] = "keys"
        summed = {name: c for name, c in conditions.items() if name not in told}
        sums = [f"SUM(CASE WHEN {sql} THEN 1 ELSE 0 END)" for sql, _ in summed.values()]
        params = [value for _, values in summed.values() for value in values]
        distinct: dict[str, str] = {}
        apart: dict[str, str] = {}
        if len(self.contract.key) == 1:
            # One key column: whether a key repeats is COUNT vs COUNT(DISTINCT) in this same
            # scan, a sort the databases do in memory; GROUP BY, on a staged table with no
            # statistics, is planned for 200 groups and spills to disk.
            key = self.q(self.contract.key[0])
            distinct = {"keys": f"COUNT({key})", "distinct_keys": f"COUNT(DISTINCT {key})"}
            if self.dialect.staged_key_index:
                # In a subquery of its own, SQLite answers it from the staging table's key
                # index (actions.index_staged_keys); in the scan it would insert every key
                # into a temporary b-tree, slow for keys in no order.
                apart = {"distinct_keys": distinct.pop("distinct_keys")}
        columns = ["COUNT(*)", *sums, *distinct.values()]
        # An aggregate the counts or another group already compute (a unique_check on the key)
        # is computed once.
        known: dict[tuple[str, tuple[Any, ...]], int] = {
            (sql, ()): index for index, sql in enumerate(columns) if sql in distinct.values()
        }
        alone = [(sql, ()) for sql in apart.values()]
        shared: dict[tuple[str, tuple[Any, ...]], int] = {}
        for group in self.extra:
            for part in group:
                if part not in known and part not in alone and part not in shared:
                    shared[part] = len(columns) + len(shared)
        extra_sql = [sql for sql, _ in shared]
        extra_params = [value for _, values in shared for value in values]
        shared.update(known)
        # The aggregates asked alone follow the scan's in the row the groups read.
        shared.update({part: len(columns) + len(extra_sql) + i for i, part in enumerate(alone)})
        # Each asked alone is a subquery of its own, planned as its own statement would be.
        alone_sql = [f"(SELECT {sql} FROM {self.table})" for sql, _ in alone]
        found = (
            run_or_fail(
                self.connection,
                self.dialect,
                f"SELECT {', '.join([*columns, *extra_sql, *alone_sql])} FROM {self.table}",
                tuple([*params, *extra_params]),
            )
            if self.extra
            else None
        )
        if isinstance(found, StatementFailed) or found is None:
            (row,) = self.execute(
                f"SELECT {', '.join([*columns, *alone_sql])} FROM {self.table}", params
            )
            self.extra_values = [self._alone(group) for group in self.extra]
        else:
            row = found[0]
            self.extra_values = [tuple(row[shared[part]] for part in group) for group in self.extra]
        apart_values = row[len(row) - len(alone) :]
        total, *rest = (int(value or 0) for value in [*row[: len(columns)], *apart_values])
        names = [*summed, *distinct, *apart]
        counted = {"total": total, **dict(zip(names, rest, strict=True))}
        derived = {EVERY_ROW: total, NO_ROW: 0, "keys": total - counted.get("keys", 0)}
        # In the order the conditions are named, as each was summed before.
        return {
            "total": total,
            **{name: derived[told[name]] if name in told else counted[name] for name in conditions},
            **{name: counted[name] for name in [*distinct, *apart]},
        }

    def _alone(self, group: Extra) -> tuple[Any, ...] | StatementFailed:
        if not group:
            return ()
        found = run_or_fail(
            self.connection,
            self.dialect,
            f"SELECT {', '.join(sql for sql, _ in group)} FROM {self.table}",
            tuple(value for _, values in group for value in values),
        )
        return found if isinstance(found, StatementFailed) else found[0]

    def examples(self, condition: str, subject: str | None = None) -> str:
        """Up to EXAMPLES rows meeting a condition: their row number, key and subject column."""
        sql, params = self.predicates()[condition]
        shown = [
            *self.contract.key,
            *([subject] if subject and subject not in self.contract.key else []),
        ]
        columns = ", ".join([self.row, *(self.q(c) for c in shown)])
        rows = self.execute(
            f"SELECT {columns} FROM {self.table} WHERE {sql} ORDER BY {self.row} LIMIT {EXAMPLES}",
            params,
        )
        return "; ".join(
            f"row {row[0]}" + (f" ({self.spell(shown, row[1:])})" if shown else "") for row in rows
        )

    def spell(self, columns: Sequence[str], values: Sequence[Any]) -> str:
        kinds = dict(self.staged.columns)
        return ", ".join(
            f"{c}={display(v, kinds.get(c))}" for c, v in zip(columns, values, strict=True)
        )

    def key_names(self) -> str:
        return ", ".join(self.contract.key)

    # The checks ----------------------------------------------------------------------------------

    def rows(self) -> Check:
        live, declared = self.counts["live"], self.manifest.rows
        nulls = self.counts.get("null_deleted", 0)
        if live == declared and not nulls:
            return _check(
                CheckName.ROWS, True, f"{plural(live, 'live row')}, as the manifest declares"
            )
        verb = (
            "is neither live nor a tombstone" if nulls == 1 else "are neither live nor tombstones"
        )
        neither = (
            f"; {plural(nulls, 'row')} with a null deleted value ({self.deleted}) {verb}"
            if nulls
            else ""
        )
        return _check(
            CheckName.ROWS,
            False,
            f"the file holds {plural(live, 'live row')}; the manifest declares {declared}{neither}",
        )

    def tombstones(self) -> Check:
        found, declared = self.counts["tombstones"], self.manifest.tombstones
        if self.deleted is None:
            return _check(
                CheckName.TOMBSTONES,
                found == declared,
                f"the file has no {self.contract.deleted_column} column: no tombstones; "
                f"the manifest declares {declared}",
            )
        found_ = f"{plural(found, 'tombstone')} ({self.deleted} true)"
        if found == declared:
            return _check(CheckName.TOMBSTONES, True, f"{found_}, as the manifest declares")
        # More tombstones than declared: show some, since they are the surprise.
        examples = f": {self.examples('tombstones', self.deleted)}" if found > declared else ""
        return _check(
            CheckName.TOMBSTONES,
            False,
            f"the file holds {found_}; the manifest declares {declared}{examples}",
        )

    def deleted_not_null(self) -> Check:
        column = self.contract.deleted_column
        if self.deleted is None:
            return _check(
                CheckName.DELETED_NOT_NULL,
                True,
                f"the file has no {column} column: every row is live",
            )
        nulls = self.counts["null_deleted"]
        if not nulls:
            return _check(
                CheckName.DELETED_NOT_NULL, True, f"no row has a null deleted value ({column})"
            )
        return _check(
            CheckName.DELETED_NOT_NULL,
            False,
            f"{plural(nulls, 'row has', 'rows have')} a null deleted value ({column}), "
            "neither live nor a tombstone: " + self.examples("null_deleted", column),
        )

    def key_not_null(self) -> Check:
        nulls = self.counts["null_key"]
        if not nulls:
            return _check(CheckName.KEY_NOT_NULL, True, f"every row has a key ({self.key_names()})")
        return _check(
            CheckName.KEY_NOT_NULL,
            False,
            f"{plural(nulls, 'row has', 'rows have')} a null key ({self.key_names()}): "
            + self.examples("null_key"),
        )

    def key_unique(self) -> Check:
        keys = ", ".join(self.q(k) for k in self.contract.key)
        present = " AND ".join(f"{self.q(k)} IS NOT NULL" for k in self.contract.key)
        grouped = f"FROM {self.table} WHERE {present} GROUP BY {keys} HAVING COUNT(*) > 1"
        counts = self.counts
        if "distinct_keys" in counts and counts["keys"] == counts["distinct_keys"]:
            duplicated, rows = 0, 0  # counted in the one scan; GROUP BY only to tell which
        else:
            ((duplicated, rows),) = self.execute(
                f"SELECT COUNT(*), COALESCE(SUM(n), 0) FROM (SELECT COUNT(*) AS n {grouped}) dup",
                [],
            )
        if not duplicated:
            return _check(
                CheckName.KEY_UNIQUE, True, f"every key ({self.key_names()}) appears once"
            )
        examples = self.execute(
            f"SELECT {keys}, COUNT(*), MIN({self.row}) {grouped} "
            f"ORDER BY MIN({self.row}) LIMIT {EXAMPLES}",
            [],
        )
        width = len(self.contract.key)
        spelled = "; ".join(
            f"{self.spell(self.contract.key, row[:width])} in {row[width]} rows "
            f"(first row {row[width + 1]})"
            for row in examples
        )
        return _check(
            CheckName.KEY_UNIQUE,
            False,
            f"{plural(int(duplicated), 'key')} ({self.key_names()}) "
            f"{'appears' if duplicated == 1 else 'appear'} more than once, "
            f"in {plural(int(rows), 'row')}: {spelled}",
        )

    def window_not_null(self) -> Check:
        window = self.contract.window_column
        nulls = self.counts["null_window"]
        if not nulls:
            return _check(
                CheckName.WINDOW_NOT_NULL, True, f"every live row has a window value ({window})"
            )
        return _check(
            CheckName.WINDOW_NOT_NULL,
            False,
            f"{plural(nulls, 'live row has', 'live rows have')} a null window value ({window}): "
            + self.examples("null_window", window),
        )

    def window_inside(self) -> Check:
        window = self.contract.window_column
        assert window is not None and self.manifest.window is not None
        low, high = self.manifest.window
        spelled = f"[{display(low)}, {display(high)}]"
        outside = self.counts["outside_window"]
        if not outside:
            return _check(
                CheckName.WINDOW_INSIDE,
                True,
                f"every {window} value is inside the window {spelled}",
            )
        return _check(
            CheckName.WINDOW_INSIDE,
            False,
            f"{plural(outside, 'row has', 'rows have')} {window} outside the window {spelled}: "
            + self.examples("outside_window", window),
        )

    def cursor_inside(self) -> Check:
        interval = cursor_interval(self.contract, self.manifest)
        assert isinstance(interval, Interval)
        cursor = self.contract.cursor_column
        spelled = f"{interval.spelled} = ({display(interval.low)}, {display(interval.high)}]"
        outside, nulls = self.counts["outside_cursor"], self.counts["null_cursor"]
        if not outside and not nulls:
            return _check(
                CheckName.CURSOR_INSIDE, True, f"every {cursor} value is inside {spelled}"
            )
        found = []
        if outside:
            found.append(
                f"{plural(outside, 'row has', 'rows have')} {cursor} outside {spelled}: "
                + self.examples("outside_cursor", cursor)
            )
        if nulls:
            found.append(
                f"{plural(nulls, 'live row has', 'live rows have')} a null {cursor}, "
                "which a live row never has: " + self.examples("null_cursor", cursor)
            )
        return _check(CheckName.CURSOR_INSIDE, False, "; ".join(found))

    def key_not_published_outside_window(self, published: str) -> Check:
        """No staged key is already published with a window value outside this delivery's window.

        A window delivery replaces its window only; a key published in another region keeps
        that region's claim, so a delivery carrying it is refused (Contract and shapes, Window
        column). Runs against the published table, which only the receiver has.
        """
        window = self.contract.window_column
        assert window is not None and self.manifest.window is not None
        low, high = self.manifest.window
        same_key = " AND ".join(f"{self.q(k, 'p')} = {self.q(k, 's')}" for k in self.contract.key)
        outside, params = self.outside(window, low, high, open_low=False, alias="p")
        published_table = self.dialect.quote(published)
        joined = f"FROM {self.table} s JOIN {published_table} p ON {same_key} WHERE {outside}"
        ((count,),) = self.execute(
            f"SELECT COUNT(*) FROM {self.table} s WHERE EXISTS "
            f"(SELECT 1 FROM {self.dialect.quote(published)} p WHERE {same_key} AND {outside})",
            params,
        )
        spelled = f"[{display(low)}, {display(high)}]"
        if not count:
            return _check(
                CheckName.KEY_NOT_PUBLISHED_OUTSIDE_WINDOW,
                True,
                f"no key of the delivery is published outside the window {spelled}",
            )
        keys = ", ".join(self.q(k, "s") for k in self.contract.key)
        examples = self.execute(
            f"SELECT s.{self.row}, {keys}, {self.q(window, 'p')} {joined} "
            f"ORDER BY s.{self.row} LIMIT {EXAMPLES}",
            params,
        )
        width = len(self.contract.key)
        kind = str(self.contract.type_of(window))
        spelled_rows = "; ".join(
            f"row {row[0]} ({self.spell(self.contract.key, row[1 : width + 1])}) "
            f"is published with {window}={display(row[width + 1], kind)}"
            for row in examples
        )
        return _check(
            CheckName.KEY_NOT_PUBLISHED_OUTSIDE_WINDOW,
            False,
            f"{plural(int(count), 'row has', 'rows have')} a key already published outside "
            f"the window {spelled}; only a whole-table delivery can move a key: {spelled_rows}",
        )
