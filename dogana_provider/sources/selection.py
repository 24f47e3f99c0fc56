"""The statement a request reads: which rows, from a table or a DAG author's SQL, with bound bounds.

The rows come from a relation, either a table (a validated, quoted name, schema-qualified with a
dot) or a DAG author's query, read as a subquery. Whichever it is, the shape's filters are
applied outside it, so they hold whatever the query does:

    complete, whole table     every live row
    complete, window          window value in [low, high]
    timestamp changes         cursor in (since, produced_at]   (append: the same, keyless)
    sequence changes          cursor in (since, generation]
    with a window             and the window filter too

On SQLite a datetime cursor or window compares through dogana_utc() (sources/sqlite.py), a
Python function no index can serve; the filter is then preceded by text ranges of the column
that hold every text it can match (sqlite.text_ranges), so that a changes read looks its rows
up in the cursor column's index and calls dogana_utc() on those alone, not on every row.

A live row is one whose soft-delete flag is false or null. Only a tombstone shape delivers the
flagged rows, as tombstones; every other shape leaves them out, since only a tombstone shape may
deliver true (Contract and shapes, Deleted column).

Every bound is a bound parameter, never pasted: the author's query may use the same names to
push them down (SQLite :since, PostgreSQL and MariaDB %(since)s): since, until, produced_at,
window_low, window_high, generation. Literal percent signs in an author's query for psycopg or
MySQLdb are written %%, as those drivers require whenever parameters are passed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from dogana_core.contract import Contract
from dogana_core.planner import ExtractionRequest
from dogana_core.shape import Checkpoint, Deletions
from dogana_core.values import Position
from dogana_provider.dialects import Dialect
from dogana_provider.sources.sqlite import text_ranges

SUBQUERY = "dogana_source"


class UnsupportedRead(ValueError):
    """A request this extractor cannot read from a SQL source; the message says why."""


@dataclass(frozen=True)
class Relation:
    """Where the rows come from: a table name, or a DAG author's query.

    columns, with a table, names the columns to deliver (a data contract's columns, say) in
    order; by default every column of the table. A tombstone read adds the soft-delete flag.
    """

    table: str | None = None
    sql: str | None = None
    columns: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if (self.table is None) == (self.sql is None):
            raise UnsupportedRead("name either a table or a query (table_sql), not both")
        if self.columns is not None:
            if self.sql is not None:
                raise UnsupportedRead("columns name a table's columns; a query selects its own")
            object.__setattr__(self, "columns", tuple(self.columns))

    def render(self, dialect: Dialect) -> str:
        if self.table is not None:
            return ".".join(dialect.quote(part) for part in self.table.split("."))
        query = str(self.sql).strip().rstrip(";").strip()
        if not query:
            raise UnsupportedRead("table_sql is empty")
        return f"({query}) AS {SUBQUERY}"


class Reading:
    """One request against one contract and relation: the statements that read it."""

    def __init__(
        self,
        contract: Contract,
        request: ExtractionRequest,
        relation: Relation,
        dialect: Dialect,
        placeholder: Any,
        *,
        deleted_flag: str | None = None,
    ) -> None:
        if request.table != contract.table:
            raise UnsupportedRead(
                f"the request reads {request.table!r}, the contract is {contract.table!r}'s"
            )
        self.contract = contract
        self.request = request
        self.shape = contract.shape(request.shape)
        self.relation = relation
        self.dialect = dialect
        self.ph = placeholder
        if deleted_flag is not None and contract.deleted_column is None:
            raise UnsupportedRead(
                f"deleted_flag {deleted_flag!r} names a soft-delete flag, but table "
                f"{contract.table!r} has no deleted column (no tombstone shape)"
            )
        self.flag = deleted_flag or contract.deleted_column
        self.flag_named = deleted_flag is not None
        if self.flag is not None:
            dialect.quote(self.flag)  # validates it
        if self.shape.checkpoint is Checkpoint.GENERATION:
            raise UnsupportedRead(
                f"shape {request.shape!r} is a generation feed: its positions come from the "
                "system that issues them, not from a SQL snapshot"
            )
        needs_position = self.shape.checkpoint is Checkpoint.SEQUENCE or request.issue_position
        if needs_position and contract.position_type is not int:
            raise UnsupportedRead(
                f"shape {request.shape!r} issues a generation string: a SQL snapshot issues "
                "integer sequence positions only"
            )
        changes = self.shape.checkpoint is not Checkpoint.NONE
        if changes and contract.cursor_column is None and relation.sql is None:
            raise UnsupportedRead(
                f"shape {request.shape!r} reads changes, but the contract has no cursor "
                "column to select them by: give table_sql that selects them"
            )

    def without_flag(self) -> None:
        """The source has no column named like the deleted column: every row is live.

        Only a flag the contract implies may be missing; one named with deleted_flag must exist.
        """
        if self.flag_named:
            raise UnsupportedRead(f"deleted_flag {self.flag!r} is not a column of the source")
        self.flag = None

    def probe(self) -> str:
        """A statement that returns no row, only the relation's column names."""
        return f"SELECT * FROM {self.relation.render(self.dialect)} WHERE 1 = 0"

    @property
    def tombstones(self) -> bool:
        return self.shape.deletions is Deletions.TOMBSTONE

    @property
    def needs_generation(self) -> bool:
        return self.shape.checkpoint is Checkpoint.SEQUENCE or self.request.issue_position

    def renames(self) -> dict[str, str]:
        deleted = self.contract.deleted_column
        if self.flag is not None and deleted is not None and self.flag != deleted:
            return {self.flag: deleted}
        return {}

    # Bound values ---------------------------------------------------------------------------

    def params(self, produced_at: datetime, generation: Position | None) -> dict[str, Any]:
        contract, request, dialect = self.contract, self.request, self.dialect
        window = request.window or (None, None)
        window_type = str(contract.window_type) if contract.window_type else None
        since = request.since
        if isinstance(since, datetime):
            since = dialect.bind("datetime", since)
        params = {
            "since": since,
            "until": dialect.bind("datetime", request.until),
            "produced_at": dialect.bind("datetime", produced_at),
            "window_low": dialect.bind(window_type, window[0]) if window_type else None,
            "window_high": dialect.bind(window_type, window[1]) if window_type else None,
            "generation": generation,
        }
        for column, ranges in self._ranges(produced_at).items():
            for index, (low, high) in enumerate(ranges):
                params[f"dogana_{column}_{index}_low"] = low
                params[f"dogana_{column}_{index}_high"] = high
        return params

    def _ranges(self, produced_at: datetime | None) -> dict[str, list[tuple[str, str]]]:
        """SQLite's text ranges (sqlite.text_ranges) of the window and the cursor filters, by
        the filter's name, where the database stores datetimes as text, the column is a
        datetime and the bounds allow them."""
        if not self.dialect.text_datetimes:
            return {}
        contract, request = self.contract, self.request
        found: dict[str, list[tuple[str, str]]] = {}
        low, high = request.window or (None, None)
        if isinstance(low, datetime) and isinstance(high, datetime):
            found["window"] = text_ranges(low, high) or []
        cursor = contract.cursor_column
        since = request.since
        if (
            self.shape.checkpoint is Checkpoint.TIMESTAMP
            and cursor is not None
            and str(contract.type_of(cursor)) == "datetime"
            and isinstance(since, datetime)
            and produced_at is not None
        ):
            found["cursor"] = text_ranges(since, produced_at) or []
        return {name: ranges for name, ranges in found.items() if ranges}

    # Expressions ----------------------------------------------------------------------------

    def _column(self, name: str) -> str:
        """A column as it compares in dogana's order (SQLite text datetimes normalized)."""
        kind = str(self.contract.type_of(name))
        return self.dialect.source_column(self.dialect.quote(name), kind)

    def _bound(self, name: str, kind: str | None = None) -> str:
        return self.dialect.source_bound(self.ph(name), kind)

    def _live(self) -> str | None:
        if self.flag is None:
            return None
        quoted = self.dialect.quote(self.flag)
        # A null flag is not deleted. PostgreSQL wants a boolean flag column.
        return f"({quoted} IS NULL OR {quoted} = FALSE)"

    def _in_ranges(self, name: str, column: str, ranges: list[tuple[str, str]]) -> str:
        """The stored text of column inside one of the ranges bound for the filter name."""
        quoted = self.dialect.quote(column)
        return (
            "("
            + " OR ".join(
                f"({quoted} > {self.ph(f'dogana_{name}_{i}_low')} "
                f"AND {quoted} < {self.ph(f'dogana_{name}_{i}_high')})"
                for i in range(len(ranges))
            )
            + ") AND "
        )

    def _filters(self, produced_at: datetime | None = None) -> list[str]:
        contract, shape = self.contract, self.shape
        ranges = self._ranges(produced_at)
        filters = []
        if self.request.window is not None and contract.window_column is not None:
            column = self._column(contract.window_column)
            kind = str(contract.window_type)
            looked_up = ""
            if "window" in ranges:
                looked_up = self._in_ranges("window", contract.window_column, ranges["window"])
            filters.append(
                f"{looked_up}{column} >= {self._bound('window_low', kind)} "
                f"AND {column} <= {self._bound('window_high', kind)}"
            )
        cursor = contract.cursor_column
        if shape.checkpoint is Checkpoint.TIMESTAMP and cursor is not None:
            column = self._column(cursor)
            high = self.ph("produced_at")
            looked_up = ""
            if "cursor" in ranges:
                looked_up = self._in_ranges("cursor", cursor, ranges["cursor"])
            filters.append(f"{looked_up}{column} > {self.ph('since')} AND {column} <= {high}")
        if shape.checkpoint is Checkpoint.SEQUENCE and cursor is not None:
            column = self._column(cursor)
            high = self.ph("generation")
            filters.append(f"{column} > {self.ph('since')} AND {column} <= {high}")
        live = self._live()
        if live is not None and not self.tombstones:
            filters.append(live)
        return filters

    def _where(self, filters: list[str]) -> str:
        return f" WHERE {' AND '.join(filters)}" if filters else ""

    def rows(self, produced_at: datetime | None = None, within: str | None = None) -> str:
        """The statement that streams the delivery's rows (a null flag is written false); with
        the read's produced_at, SQLite's cursor filter looks its rows up by text ranges too.
        within, a condition on the table's own rows (a page range), narrows it to a part."""
        relation = self.relation.render(self.dialect)
        columns = list(self.relation.columns or ())
        if columns and self.tombstones and self.flag is not None and self.flag not in columns:
            columns.append(self.flag)
        chosen = ", ".join(self.dialect.quote(c) for c in columns) if columns else "*"
        filters = self._filters(produced_at)
        if within is not None:
            if self.relation.table is None:
                raise UnsupportedRead("a query (table_sql) is read whole, not by parts")
            filters.append(within)
        return f"SELECT {chosen} FROM {relation}{self._where(filters)}"

    def generation(self) -> str:
        """The statement that finds the position the read issues: the largest cursor visible.

        Positions must follow commit order (Manifest 2): then every position up to the largest
        one this snapshot sees has committed, and none can commit below it later. A cursor
        assigned at insert (an auto-increment id) does not follow commit order; read such a
        table with a lookback of overlapping sequence reads, or deliver complete reads.
        """
        relation = self.relation.render(self.dialect)
        cursor = self.contract.cursor_column
        if cursor is None:
            raise UnsupportedRead("a sequence position needs the contract's cursor column")
        return f"SELECT MAX({self.dialect.quote(cursor)}) FROM {relation}"


def bounds(params: Mapping[str, Any]) -> str:
    """The bounds of a read as a log line shows them (no credentials are among them)."""
    shown = {k: v for k, v in params.items() if v is not None and not k.startswith("dogana_")}
    return ", ".join(f"{k}={v}" for k, v in shown.items())
