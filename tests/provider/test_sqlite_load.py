"""SQLite's bulk load (staging/sqlite.py) stages the very rows, with the very storage classes, that
binding them one by one stages, and refuses what it refuses: both ways, compared."""

from __future__ import annotations

import sqlite3
import uuid
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dogana_core import Contract, Shape
from dogana_provider.dialects import SQLITE
from dogana_provider.staging import Staged, row_number, stage_file
from dogana_provider.staging.sqlite import attaching, preload, preloaded

CONTRACT = Contract("t", ("id",), {"full": Shape.complete()}, types={"id": "int"})
SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("name", pa.string()),
        ("amount", pa.decimal128(12, 2)),
        ("day", pa.date32()),
        ("at", pa.timestamp("us", tz="UTC")),
        ("flag", pa.bool_()),
        ("ratio", pa.float64()),
    ]
)

rows = st.lists(
    st.tuples(
        # NUL, unicode and empty text too; a lone surrogate is no text Arrow holds
        st.text(st.characters(exclude_categories=["Cs"]), max_size=8) | st.none(),
        st.decimals(min_value=-(10**10) + 1, max_value=10**10 - 1, places=2) | st.none(),
        st.dates(min_value=date(1, 1, 1), max_value=date(9999, 12, 31)) | st.none(),
        st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)).map(
            lambda moment: moment.replace(tzinfo=UTC)
        )
        | st.none(),
        st.booleans() | st.none(),
        st.floats() | st.none(),  # NaN is refused both ways
    ),
    max_size=30,
)


def staged_rows(connection: sqlite3.Connection, staged: Staged) -> list[tuple[Any, ...]]:
    if staged.unreadable is not None:
        return []
    names = [name for name, _ in staged.columns]
    row = row_number(SQLITE, names)
    shown = ", ".join(f'typeof("{n}"), "{n}"' for n in names)
    return connection.execute(f'SELECT {row}, {shown} FROM "{staged.table}" ORDER BY 1').fetchall()


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=rows)
def test_the_bulk_load_stages_what_binding_row_by_row_stages(
    tmp_path: Path, rows: list[tuple[Any, ...]]
) -> None:
    example = uuid.uuid4().hex
    path = tmp_path / f"{example}.parquet"
    columns = list(zip(*[(n, *row) for n, row in enumerate(rows)], strict=True)) or [()] * 7
    arrays = [pa.array(c, f.type) for c, f in zip(columns, SCHEMA, strict=True)]
    pq.write_table(pa.table(arrays, schema=SCHEMA), path)

    bound = sqlite3.connect(tmp_path / f"{example}.bound.sqlite")
    by_row = stage_file(bound, SQLITE, "s", path, CONTRACT)

    loaded = preload(str(path), CONTRACT, SQLITE)
    assert loaded is not None
    try:
        copied = attaching(lambda: sqlite3.connect(tmp_path / f"{example}.bulk.sqlite"), loaded)()
        by_load = stage_file(copied, SQLITE, "s", path, CONTRACT, preloaded=loaded)
    finally:
        loaded.remove()
    assert by_load == by_row
    assert staged_rows(copied, by_load) == staged_rows(bound, by_row)


def test_a_nan_is_refused_as_binding_refuses_it(tmp_path: Path) -> None:
    path = tmp_path / "nan.parquet"
    pq.write_table(pa.table({"id": [1, 2], "ratio": [1.5, float("nan")]}), path)
    loaded = preload(str(path), CONTRACT, SQLITE)
    assert loaded is not None and loaded.error is not None
    try:
        connection = attaching(lambda: sqlite3.connect(tmp_path / "r.sqlite"), loaded)()
        staged = stage_file(connection, SQLITE, "s", path, CONTRACT, preloaded=loaded)
    finally:
        loaded.remove()
    assert staged.unstorable and "NaN" in str(staged.unreadable)
    assert staged.sha256 is not None
    assert connection.execute("SELECT count(*) FROM sqlite_master WHERE name = 's'").fetchone() == (
        0,
    )


def test_the_private_file_is_removed_when_staging_fails(tmp_path: Path) -> None:
    path = tmp_path / "one.parquet"
    pq.write_table(pa.table({"id": [1], "amount": pa.array([Decimal("1.50")])}), path)
    seen: list[Path] = []
    with (
        pytest.raises(RuntimeError, match="the transaction failed"),
        preloaded(str(path), CONTRACT, SQLITE) as loaded,
    ):
        assert loaded is not None
        seen.append(Path(loaded.database))
        assert seen[0].exists()
        raise RuntimeError("the transaction failed")
    assert not seen[0].exists()


def test_columns_hiding_every_rowid_name_are_loaded_with_their_row_numbers(tmp_path: Path) -> None:
    path = tmp_path / "hidden.parquet"
    names = ("_rowid_", "rowid", "oid")
    pq.write_table(
        pa.table({"id": [7, 8], **{n: [70 + i, 80 + i] for i, n in enumerate(names)}}), path
    )
    bound = sqlite3.connect(tmp_path / "bound.sqlite")
    by_row = stage_file(bound, SQLITE, "s", path, CONTRACT)
    loaded = preload(str(path), CONTRACT, SQLITE)
    assert loaded is not None
    try:
        copied = attaching(lambda: sqlite3.connect(tmp_path / "bulk.sqlite"), loaded)()
        by_load = stage_file(copied, SQLITE, "s", path, CONTRACT, preloaded=loaded)
    finally:
        loaded.remove()
    assert by_load == by_row
    assert staged_rows(copied, by_load) == staged_rows(bound, by_row)
    assert [row[0] for row in staged_rows(copied, by_load)] == [1, 2]


def test_a_killed_loaders_private_file_is_removed_by_the_next_preload(tmp_path: Path) -> None:
    """A loader killed mid-load leaves its file; the next one removes it once its lock is free
    (a live loader's, held, is left alone), and an old enough one only."""
    import os
    import time

    from dogana_provider.staging.sqlite import (
        LOCK,
        ORPHAN_AFTER,
        PREFIX,
        Preloaded,
        remove_orphans,
    )

    def private(name: str) -> Path:
        database = tmp_path / f"{PREFIX}{name}.sqlite"
        database.write_bytes(b"rows")
        return database

    gone, alive, young = private("gone"), private("alive"), private("young")
    for database in (gone, young):
        Path(str(database) + LOCK).touch()
    holder = Preloaded(str(alive), 0, None, None)
    holder.hold()  # the live loader's lock, as preload takes it
    old = time.time() - ORPHAN_AFTER - 1
    for database in (gone, alive):
        os.utime(str(database) + LOCK, (old, old))
    try:
        assert remove_orphans(tmp_path) == [str(gone)]
    finally:
        holder.remove()
    assert not gone.exists() and not Path(str(gone) + LOCK).exists()
    assert young.exists()
