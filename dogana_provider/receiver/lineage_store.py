"""The receiver's own lineage: one edge per (run, input, output), written with the receipt.

OpenLineage events go to a lineage backend, which stays the system of record; but "emitted" is
not "answerable here". So every publication also writes, in the commit that records its receipt
(Steps.apply_accepted), one row of

    {prefix}_lineage    edge_id (the digest of the publication and of its input and output),
                        the receiver's table (the output), the source connection and table
                        (the input, lineage/origin.py), the DAG, run and task that read it, the
                        publication id and manifest identity, the read's produced_at, its rows,
                        and when it was published.

An edge is a publication's: a replay publishes nothing and writes none, a rejection none, and
the edge's id is a digest of what it joins, inserted unless it exists, so the one commit of a
publication writes it exactly once whatever retries the tasks around it made.

A question names its output table or its input source, and is bounded by --since and a limit:
every edge at once is an export, not a query, and is refused (Unfiltered).

A table of its own, beside the store's: a store made before lineage gains it at its next
registration or publication (ensure, in the transaction before the publishing one, since MariaDB
commits at every CREATE). Instants are stored as store.stamp's text, so text order is time order.
Nothing here commits: the caller owns the transaction.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from dogana_core.contract import check_identifier
from dogana_core.gate import Receipt
from dogana_provider.dialects import Dialect, create_index, execute
from dogana_provider.lineage.origin import LONGEST, Origin
from dogana_provider.receiver.own_tables import OwnTables, table_exists
from dogana_provider.receiver.store import stamp

LIMIT = 20
"""How many edges a question answers when it names no limit."""
MOST = 1000
"""The most edges one question answers: more is an export."""


class Unfiltered(ValueError):
    """A lineage question naming neither an output table nor an input source."""


@dataclass(frozen=True)
class Edge:
    """One publication's edge: from its source (the input) to a receiver's table (the output)."""

    edge_id: str
    table: str
    origin: Origin
    publication_id: str
    manifest_identity: str
    produced_at: datetime
    rows: int
    published_at: datetime

    @classmethod
    def of(cls, receipt: Receipt, origin: Origin | None, published_at: datetime) -> Edge:
        """The edge of an accepted receipt's publication, from origin (unknown: None)."""
        origin = origin or Origin()
        assert receipt.publication_id is not None, "an acceptance names its publication"
        return cls(
            edge_id(receipt.publication_id, origin, receipt.table),
            receipt.table,
            origin,
            receipt.publication_id,
            receipt.manifest.identity,
            receipt.manifest.produced_at,
            receipt.manifest.rows,
            published_at,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "edge_id": self.edge_id,
            "table": self.table,
            **self.origin.to_dict(),
            "publication_id": self.publication_id,
            "manifest_identity": self.manifest_identity,
            "produced_at": self.produced_at.isoformat(),
            "rows": self.rows,
            "published_at": self.published_at.isoformat(),
        }


@dataclass(frozen=True)
class Feeding:
    """A source that fed a table: how many of its publications, and the last one's instant."""

    origin: Origin
    publications: int
    last_published_at: datetime

    def to_dict(self) -> dict[str, Any]:
        return {
            "source_conn_id": self.origin.source_conn_id,
            "source": self.origin.source,
            "publications": self.publications,
            "last_published_at": self.last_published_at.isoformat(),
        }


def edge_id(publication_id: str, origin: Origin, table: str) -> str:
    """The digest of a publication and of the input and output it joins."""
    joined = [publication_id, origin.source_conn_id, origin.source, table]
    return hashlib.sha256(json.dumps(joined).encode("utf-8")).hexdigest()


_COLUMNS = (
    "edge_id, table_name, source_conn_id, source_name, dag_id, run_id, task_id, "
    "publication_id, manifest_identity, produced_at, row_count, published_at"
)


class LineageStore:
    """Statements on the lineage table, for one dialect and store prefix."""

    def __init__(self, dialect: Dialect, prefix: str = "dogana") -> None:
        check_identifier(f"{prefix}_lineage_source", "store prefix")
        self.dialect = dialect
        self.name = f"{prefix}_lineage"
        self.own_names = (self.name, f"{prefix}_lineage_output", f"{prefix}_lineage_source")
        self.table = dialect.quote(self.name)
        self.p = dialect.placeholder
        self._ready = False
        self.own_tables: OwnTables | None = None
        """Set by the receiver's Steps: its tables looked up together (own_tables.py)."""

    def create(self, connection: Any) -> None:
        """Create the table and its two indexes when missing; safe to repeat at once."""
        self.dialect.lock_schema(connection, self.table)
        text = f"VARCHAR({LONGEST})"
        execute(
            connection,
            f"CREATE TABLE IF NOT EXISTS {self.table} ("
            "edge_id VARCHAR(64) NOT NULL PRIMARY KEY, "
            "table_name VARCHAR(64) NOT NULL, "
            f"source_conn_id {text}, source_name {text}, dag_id {text}, run_id {text}, "
            f"task_id {text}, "
            "publication_id VARCHAR(64) NOT NULL, "
            "manifest_identity VARCHAR(64) NOT NULL, "
            "produced_at VARCHAR(32) NOT NULL, "
            "row_count BIGINT NOT NULL, "
            "published_at VARCHAR(32) NOT NULL)",
        )
        create_index(
            connection, self.dialect, self.name, self.own_names[1], "table_name, published_at"
        )
        create_index(
            connection, self.dialect, self.name, self.own_names[2], "source_name, published_at"
        )
        if self.own_tables is not None:
            self.own_tables.made(self.own_names)

    def ensure(self, connection: Any) -> None:
        """Create the table unless it exists, where a publication writes; once seen, it is not
        looked up again."""
        if not self._ready and not table_exists(
            connection, self.dialect, self.name, self.own_tables
        ):
            self.create(connection)
        self._ready = True

    def record(self, connection: Any, edge: Edge) -> None:
        """Insert the edge unless one with its id exists; the caller holds the table's lock."""
        origin = edge.origin
        execute(
            connection,
            f"INSERT INTO {self.table} ({_COLUMNS}) VALUES ({', '.join([self.p] * 12)}) "
            f"{self.dialect.unless_exists('edge_id')}",
            (
                edge.edge_id,
                edge.table,
                origin.source_conn_id,
                origin.source,
                origin.dag_id,
                origin.run_id,
                origin.task_id,
                edge.publication_id,
                edge.manifest_identity,
                stamp(edge.produced_at),
                edge.rows,
                stamp(edge.published_at),
            ),
        )

    def edges(
        self,
        connection: Any,
        *,
        output: str | None = None,
        source: str | None = None,
        source_conn_id: str | None = None,
        since: datetime | None = None,
        limit: int = LIMIT,
    ) -> list[Edge]:
        """The edges into output, or out of source (of source_conn_id, when given), published
        at or after since, newest first, at most limit. Unfiltered when neither is named."""
        if output is None and source is None:
            raise Unfiltered(
                "name an output table or an input source: every edge at once is an export, "
                "not a query"
            )
        if not 1 <= limit <= MOST:
            raise ValueError(f"limit: {limit} edges; a question answers 1 to {MOST}")
        where, params = self._where(output, source, source_conn_id, since)
        if not self._exists(connection):
            return []
        cursor = connection.cursor()
        try:
            cursor.execute(
                f"SELECT {_COLUMNS} FROM {self.table} WHERE {where} "
                f"ORDER BY published_at DESC, produced_at DESC, edge_id LIMIT {int(limit)}",
                params,
            )
            return [_edge(row) for row in cursor.fetchall()]
        finally:
            cursor.close()

    def sources_of(self, connection: Any, table: str, limit: int = LIMIT) -> list[Feeding]:
        """The sources that fed table, the most recent first, at most limit of them."""
        if not self._exists(connection):
            return []
        cursor = connection.cursor()
        try:
            cursor.execute(
                "SELECT source_conn_id, source_name, COUNT(*), MAX(published_at) "
                f"FROM {self.table} WHERE table_name = {self.p} "
                "GROUP BY source_conn_id, source_name "
                f"ORDER BY MAX(published_at) DESC LIMIT {int(limit)}",
                (table,),
            )
            return [
                Feeding(Origin(conn, source), int(count), datetime.fromisoformat(last))
                for conn, source, count, last in cursor.fetchall()
            ]
        finally:
            cursor.close()

    def _where(
        self,
        output: str | None,
        source: str | None,
        source_conn_id: str | None,
        since: datetime | None,
    ) -> tuple[str, tuple[Any, ...]]:
        conditions, params = [], []
        for column, value in (
            ("table_name", output),
            ("source_name", source),
            ("source_conn_id", source_conn_id),
        ):
            if value is not None:
                conditions.append(f"{column} = {self.p}")
                params.append(value)
        if since is not None:
            conditions.append(f"published_at >= {self.p}")
            params.append(stamp(since))
        return " AND ".join(conditions), tuple(params)

    def _exists(self, connection: Any) -> bool:
        """Whether the table exists: a store made before lineage has answered nothing yet."""
        if not self._ready:
            self._ready = table_exists(connection, self.dialect, self.name, self.own_tables)
        return self._ready


def _edge(row: tuple[Any, ...]) -> Edge:
    origin = Origin(*(None if value is None else str(value) for value in row[2:7]))
    return Edge(
        str(row[0]),
        str(row[1]),
        origin,
        str(row[7]),
        str(row[8]),
        datetime.fromisoformat(row[9]),
        int(row[10]),
        datetime.fromisoformat(row[11]),
    )
