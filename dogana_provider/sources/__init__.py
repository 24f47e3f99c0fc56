"""One consistent snapshot read of a SQL source, per database, behind one small interface.

    source = snapshots_for(hook)           # SqliteHook, PostgresHook, MySqlHook (common-sql)
    [delivery] = extract(source, [Read(contract, request, Relation(table="orders"), path)])
    delivery.manifest, delivery.path       # the manifest declares exactly the file written

snapshot.py says how each database opens its read and which clock reading produced_at is;
selection.py which rows a request reads; columns.py how rows become Arrow batches; extract.py
streams them to Parquet and builds the manifest.
"""

from __future__ import annotations

from typing import Any

from dogana_provider.dialects import (
    MARIADB,
    POSTGRES,
    SQLITE,
    Dialect,
    UnknownDatabase,
    dialect_for,
)
from dogana_provider.sources.extract import Extracted, Read, extract, read_all
from dogana_provider.sources.mysql import MySqlSnapshots
from dogana_provider.sources.postgres import PostgresSnapshots
from dogana_provider.sources.selection import Relation, UnsupportedRead
from dogana_provider.sources.snapshot import (
    Snapshot,
    SnapshotError,
    SnapshotSource,
    SourceNotReady,
)
from dogana_provider.sources.sqlite import SqliteSnapshots

SOURCES: dict[Dialect, type[SnapshotSource]] = {
    SQLITE: SqliteSnapshots,
    POSTGRES: PostgresSnapshots,
    MARIADB: MySqlSnapshots,
}
"""Each database's snapshot read, by its dialect (dialects.dialect_for)."""


def snapshots_for(hook: Any, **options: Any) -> SnapshotSource:
    """The snapshot source of a common-sql DbApiHook, by its database (dialects.dialect_for)."""
    try:
        dialect = dialect_for(hook)
    except UnknownDatabase as exc:
        raise UnsupportedRead(f"no snapshot read: {exc}") from None
    return SOURCES[dialect](hook.get_conn, **options)


__all__ = [
    "Extracted",
    "MySqlSnapshots",
    "PostgresSnapshots",
    "Read",
    "Relation",
    "Snapshot",
    "SnapshotError",
    "SnapshotSource",
    "SourceNotReady",
    "SqliteSnapshots",
    "UnsupportedRead",
    "extract",
    "read_all",
    "snapshots_for",
]
