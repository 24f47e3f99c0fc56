"""The extract's side of the schema versions: the held versions read, the proposals noted, each
in a transaction of its own on the receiver's database (versions.py keeps the statements)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from dogana_provider.dialects import Dialect
from dogana_provider.receiver.store import stamp
from dogana_provider.receiver.transactions import transaction
from dogana_provider.schema.policy import Judged, SchemaPolicy
from dogana_provider.schema.versions import SchemaVersion, SchemaVersions
from dogana_provider.sources.discover import SourceColumn


def held_versions(
    connect: Any, dialect: Dialect, prefix: str, tables: Sequence[str]
) -> dict[str, SchemaVersion | None]:
    """Each table's held version, read in one transaction of the receiver's database."""
    versions = SchemaVersions(dialect, prefix)
    with transaction(connect, dialect, write=False) as connection:
        return {table: versions.held(connection, table) for table in tables}


def propose(
    connect: Any,
    dialect: Dialect,
    prefix: str,
    proposals: Sequence[tuple[str, str, Sequence[SourceColumn], SchemaPolicy, Sequence[Judged]]],
    now: datetime,
) -> None:
    """Note the versions deliveries bring (table, manifest identity, columns, policy, changes),
    in one transaction of the receiver's database, the table created first if missing."""
    versions = SchemaVersions(dialect, prefix)
    with transaction(connect, dialect) as connection:
        versions.create(connection)
    with transaction(connect, dialect) as connection:
        for table, identity, columns, policy, judged in proposals:
            versions.propose(connection, table, identity, columns, policy, judged, stamp(now))
