"""Where a receiver keeps each table's schema versions: the source's columns, and the policy
that governs the next change.

One table beside the store's (receiver/store.py), named from the same prefix:

    {prefix}_schema_versions   one row per (table, manifest identity) an extract proposed: the
                               source's columns as discovered (name, dogana type, nullable,
                               the catalog's spelling), the policy declared with them, and
                               the changes from the version before, each with its outcome.
                               publication_id and version are NULL until the delivery that
                               brings it is published: its publication's transaction sets them
                               (published), so a version exists exactly when its receipt does,
                               and a refused or abandoned delivery leaves only a proposal.

The held version of a table is its latest published one. The wire format is untouched: no
receipt or manifest carries a version; the version names the receipt's publication instead.

Instants are stored as store.stamp's text, which the callers give. Nothing here commits: the
caller owns the transaction. This module imports nothing of the receiver's, which imports it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from dogana_core.contract import check_identifier
from dogana_core.gate import Receipt
from dogana_provider.dialects import Dialect, declared_types, execute, fetch_all, fetch_one
from dogana_provider.schema.policy import (
    Change,
    Judged,
    Mode,
    Outcome,
    SchemaPolicy,
    column_dict,
    column_of,
)
from dogana_provider.sources.discover import SourceColumn

TABLE = "schema_versions"


@dataclass(frozen=True)
class SchemaVersion:
    """One version of a table's source shape, or a proposal not yet published."""

    table: str
    manifest_identity: str
    columns: tuple[SourceColumn, ...]
    policy: SchemaPolicy
    judged: tuple[Judged, ...]
    proposed_at: str
    version: int | None = None
    publication_id: str | None = None
    published_at: str | None = None

    @property
    def published(self) -> bool:
        return self.publication_id is not None

    @property
    def published_instant(self) -> datetime | None:
        """When its publication committed, as an instant; None for a proposal."""
        return None if self.published_at is None else datetime.fromisoformat(self.published_at)

    def widened(self) -> dict[str, str]:
        """The columns this version widens in the published table, to their new type."""
        return {
            j.change.column: j.change.after.type
            for j in self.judged
            if j.outcome is Outcome.APPLIED and j.change.after is not None
        }


class SchemaVersions:
    """Statements on the schema versions table, for one dialect and prefix."""

    def __init__(self, dialect: Dialect, prefix: str = "dogana") -> None:
        check_identifier(f"{prefix}_{TABLE}", "store prefix")
        self.dialect = dialect
        self.name = f"{prefix}_{TABLE}"
        self.own_names = (self.name,)
        self.table = dialect.quote(self.name)
        self.p = dialect.placeholder
        self._exists = False
        self.own_tables: Any = None
        """Set by the receiver's Steps: its tables looked up together (receiver/own_tables.py)."""

    def create(self, connection: Any) -> None:
        """Create the table when missing; safe to repeat and to run at once (lock_schema)."""
        self.dialect.lock_schema(connection, self.table)
        document = self.dialect.document_type
        execute(
            connection,
            f"CREATE TABLE IF NOT EXISTS {self.table} ("
            "table_name VARCHAR(64) NOT NULL, "
            "manifest_identity VARCHAR(64) NOT NULL, "
            "version BIGINT, "
            "publication_id VARCHAR(64), "
            "proposed_at VARCHAR(32) NOT NULL, "
            "published_at VARCHAR(32), "
            f"source_columns {document} NOT NULL, "
            f"policy {document} NOT NULL, "
            f"changes {document} NOT NULL, "
            "PRIMARY KEY (table_name, manifest_identity), "
            "UNIQUE (table_name, version))",
        )
        self._exists = True
        if self.own_tables is not None:
            self.own_tables.made(self.own_names)

    def exists(self, connection: Any) -> bool:
        """Whether the table is there: a store that never met a policy has none."""
        if not self._exists:
            if self.own_tables is not None:  # the receiver's tables, looked up together
                self._exists = self.own_tables.exist(connection, (self.name,))
            else:
                self._exists = bool(declared_types(connection, self.dialect, self.name))
        return self._exists

    # Writing --------------------------------------------------------------------------------

    def propose(
        self,
        connection: Any,
        table: str,
        manifest_identity: str,
        columns: Sequence[SourceColumn],
        policy: SchemaPolicy,
        judged: Sequence[Judged],
        proposed_at: str,
    ) -> None:
        """Note the version a delivery brings, to be published with it (or replaced by the
        same delivery's next proposal: an extract retried over the same manifest)."""
        p = self.p
        execute(
            connection,
            f"DELETE FROM {self.table} WHERE table_name = {p} AND manifest_identity = {p} "
            "AND publication_id IS NULL",
            (table, manifest_identity),
        )
        execute(
            connection,
            f"INSERT INTO {self.table} (table_name, manifest_identity, proposed_at, "
            f"source_columns, policy, changes) VALUES ({p}, {p}, {p}, {p}, {p}, {p})",
            (
                table,
                manifest_identity,
                proposed_at,
                json.dumps([column_dict(c) for c in columns]),
                json.dumps(policy.to_dict()),
                json.dumps([judged_dict(j) for j in judged]),
            ),
        )

    def publish(self, connection: Any, receipt: Receipt, published_at: str) -> SchemaVersion | None:
        """In an acceptance's publication transaction: the proposal its manifest brings becomes
        the table's next version, naming the publication. None when it brings none."""
        if not self.exists(connection):
            return None
        proposal = self.proposal(connection, receipt.table, receipt.manifest.identity)
        if proposal is None or proposal.published:
            return proposal
        p = self.p
        last = fetch_one(
            connection,
            f"SELECT MAX(version) FROM {self.table} WHERE table_name = {p}",
            (receipt.table,),
        )
        version = int(last[0] or 0) + 1 if last else 1
        execute(
            connection,
            f"UPDATE {self.table} SET version = {p}, publication_id = {p}, published_at = {p} "
            f"WHERE table_name = {p} AND manifest_identity = {p}",
            (
                version,
                receipt.publication_id,
                published_at,
                receipt.table,
                receipt.manifest.identity,
            ),
        )
        return self.proposal(connection, receipt.table, receipt.manifest.identity)

    # Reading --------------------------------------------------------------------------------

    def held(self, connection: Any, table: str) -> SchemaVersion | None:
        """The table's latest published version, or None."""
        if not self.exists(connection):
            return None
        p = self.p
        rows = fetch_all(
            connection,
            f"{self._select()} WHERE table_name = {p} AND version = "
            f"(SELECT MAX(version) FROM {self.table} WHERE table_name = {p})",
            (table, table),
        )
        return _version(rows[0]) if rows else None

    def proposal(self, connection: Any, table: str, manifest_identity: str) -> SchemaVersion | None:
        """The version a delivery brings (published or not), or None."""
        if not self.exists(connection):
            return None
        p = self.p
        rows = fetch_all(
            connection,
            f"{self._select()} WHERE table_name = {p} AND manifest_identity = {p}",
            (table, manifest_identity),
        )
        return _version(rows[0]) if rows else None

    def history(self, connection: Any, table: str) -> list[SchemaVersion]:
        """The table's published versions, oldest first."""
        if not self.exists(connection):
            return []
        rows = fetch_all(
            connection,
            f"{self._select()} WHERE table_name = {self.p} AND version IS NOT NULL "
            "ORDER BY version",
            (table,),
        )
        return [_version(row) for row in rows]

    def _select(self) -> str:
        return (
            "SELECT table_name, manifest_identity, source_columns, policy, changes, proposed_at, "
            f"version, publication_id, published_at FROM {self.table}"
        )


def judged_dict(judged: Judged) -> dict[str, Any]:
    """A change, its outcome and the mode that decided it, as JSON keeps them."""
    return {**judged.change.to_dict(), "outcome": str(judged.outcome), "mode": str(judged.mode)}


def _version(row: tuple[Any, ...]) -> SchemaVersion:
    table, identity, columns, policy, changes, proposed, version, publication, published = row
    return SchemaVersion(
        str(table),
        str(identity),
        tuple(column_of(c) for c in json.loads(columns)),
        SchemaPolicy.of(json.loads(policy)),
        tuple(
            Judged(Change.from_dict(c), Outcome(c["outcome"]), Mode(c["mode"]))
            for c in json.loads(changes)
        ),
        str(proposed),
        None if version is None else int(version),
        None if publication is None else str(publication),
        None if published is None else str(published),
    )
