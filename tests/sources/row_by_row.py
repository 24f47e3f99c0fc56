"""A source read through its DB-API cursor alone, to compare a dialect's bulk read with: put
before the source's class, ``class RowByRow(RowByRowRead, SqliteSnapshots)``, it gives back the
default bulk_read, which refuses with bulk.SlowPath so that every read goes row by row."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any

from dogana_provider.sources.snapshot import Snapshot, SnapshotSource


class RowByRowRead:
    def bulk_read(
        self,
        snapshot: Snapshot,
        sql: str,
        params: Mapping[str, Any],
        columns: Any,
        relation: Any = None,
    ) -> AbstractContextManager[Any]:
        return SnapshotSource.bulk_read(self, snapshot, sql, params, columns, relation)
