"""A source read through its DB-API cursor alone, to compare a dialect's bulk read with: put
before the source's class, ``class RowByRow(RowByRowRead, SqliteSnapshots)``, it gives back the
default bulk_read, which refuses with bulk.SlowPath so that every read goes row by row."""

from __future__ import annotations

from dogana_provider.sources.snapshot import SnapshotSource


class RowByRowRead:
    bulk_read = SnapshotSource.bulk_read
