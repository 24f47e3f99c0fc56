"""A table read by several readers in one snapshot (sources/parallel.py), on the real PostgreSQL.

The parts together hold exactly the rows one reader reads, in any table: empty, smaller than the
readers' pages, with holes left by deletes; a commit after the export is in no part; a part that
fails is read again alone; a read interrupted after some parts resumes without reading them
again while its snapshot is exported, and starts again, saying so, once it is not. The receiver
stages the folder as one delivery whose content_hash is its parts' bytes end to end. MariaDB and
SQLite keep one reader and say why.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import threading
import uuid
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_source_mariadb import connector as mariadb_connector

from dogana_core import Contract, Shape
from dogana_core.planner import ExtractionRequest
from dogana_provider.delivery.files import delivery_parts, parts_sha256
from dogana_provider.dialects import POSTGRES
from dogana_provider.sources import (
    MySqlSnapshots,
    PostgresSnapshots,
    Read,
    Relation,
    SqliteSnapshots,
    extract,
    read_all,
)
from dogana_provider.sources.parallel import checked_readers
from dogana_provider.sources.snapshot import Snapshot
from dogana_provider.staging import stage_file

UNTIL = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def table(postgres_url: str) -> Iterator[str]:
    name = f"parallel_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute(
            f"CREATE TABLE {name} (id BIGINT PRIMARY KEY, name TEXT, amount NUMERIC(12,2), "
            "at TIMESTAMPTZ, flag BOOLEAN)"
        )
    yield name
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute(f"DROP TABLE IF EXISTS {name}")


def fill(url: str, table: str, rows: int) -> None:
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(
            f"INSERT INTO {table} SELECT i, CASE WHEN i % 7 = 0 THEN NULL ELSE 'Zoë ' || i END, "
            "CASE WHEN i % 11 = 0 THEN NULL ELSE i / 100.0 END, "
            "TIMESTAMPTZ '2025-01-01 00:00:00+00' + i * INTERVAL '1.000001 second', i % 2 = 0 "
            f"FROM generate_series(1, {rows}) i"
        )


def contract_of(table: str) -> Contract:
    return Contract(table, ("id",), {"full": Shape.complete()}, types={"id": "int"})


def reading(table: str, path: Path, readers: int) -> Read:
    request = ExtractionRequest(table, "full", UNTIL)
    return Read(contract_of(table), request, Relation(table=table), path, readers=readers)


def rows_of(path: str | Path) -> pa.Table:
    tables = [pq.read_table(part) for part in delivery_parts(path)]
    return pa.concat_tables(tables).sort_by("id")


def pages(url: str, table: str) -> int:
    with psycopg.connect(url) as connection:
        [(count,)] = connection.execute(
            f"SELECT pg_relation_size('{table}') / current_setting('block_size')::int"
        ).fetchall()
    return int(count)


class Counting(PostgresSnapshots):
    """PostgreSQL's snapshot read, counting each part's reads by its first page; before_part
    runs before a part is read (a commit, a failure), given the part's first page."""

    def __init__(self, *args: Any, before_part: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.before_part = before_part
        self.reads: dict[str, int] = {}
        self.lock = threading.Lock()

    def imported_read(
        self, snapshot: Snapshot, exported: str, sql: str, params: Mapping[str, Any], columns: Any
    ) -> AbstractContextManager[Any]:
        found = re.search(r"ctid >= '\((\d+),0\)'", sql)
        low = found.group(1) if found else "none"
        with self.lock:
            self.reads[low] = self.reads.get(low, 0) + 1
            tries = self.reads[low]
        if self.before_part is not None:
            self.before_part(low, tries)
        return super().imported_read(snapshot, exported, sql, params, columns)


def test_parts_hold_exactly_the_rows_one_reader_reads(
    postgres_url: str, table: str, tmp_path: Path
) -> None:
    fill(postgres_url, table, 20_000)
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute(f"DELETE FROM {table} WHERE id % 5 = 0 OR id BETWEEN 3000 AND 6000")
    source = PostgresSnapshots(lambda: psycopg.connect(postgres_url))
    [one] = extract(source, [reading(table, tmp_path / "one.parquet", 1)])
    for readers in (2, 3):
        [many] = extract(source, [reading(table, tmp_path / f"{readers}.parquet", readers)])
        parts = delivery_parts(many.path)
        assert [part.name for part in parts] == [f"part-0000{i}.parquet" for i in range(readers)]
        assert rows_of(many.path).equals(rows_of(one.path))
        assert many.manifest.rows == one.manifest.rows == 20_000 - 4_000 - (3_001 - 601)
        assert many.manifest.content_hash == parts_sha256(parts)
        with psycopg.connect(postgres_url) as connection:
            staged = stage_file(
                connection, POSTGRES, f"{table}_s{readers}", many.path, contract_of(table)
            )
            connection.rollback()
        assert (staged.rows, staged.sha256, staged.unreadable) == (
            many.manifest.rows,
            many.manifest.content_hash,
            None,
        )


def test_an_empty_table_and_one_smaller_than_the_readers_are_read_whole(
    postgres_url: str, table: str, tmp_path: Path
) -> None:
    source = PostgresSnapshots(lambda: psycopg.connect(postgres_url))
    [empty] = extract(source, [reading(table, tmp_path / "empty.parquet", 4)])
    assert (empty.manifest.rows, len(delivery_parts(empty.path))) == (0, 1)
    fill(postgres_url, table, 10)
    assert pages(postgres_url, table) == 1
    [small] = extract(source, [reading(table, tmp_path / "small.parquet", 4)])
    [one] = extract(source, [reading(table, tmp_path / "one.parquet", 1)])
    assert len(delivery_parts(small.path)) == 1
    assert rows_of(small.path).equals(rows_of(one.path))


def test_commits_after_the_export_are_in_no_part(
    postgres_url: str, table: str, tmp_path: Path
) -> None:
    fill(postgres_url, table, 20_000)
    one_reader = PostgresSnapshots(lambda: psycopg.connect(postgres_url))
    [before] = extract(one_reader, [reading(table, tmp_path / "before.parquet", 1)])
    committed: list[str] = []
    once = threading.Lock()

    def commit_meanwhile(low: str, tries: int) -> None:
        # Once, after the export; every part's reader starts after these commits.
        with once:
            if not committed:
                with psycopg.connect(postgres_url, autocommit=True) as writer:
                    writer.execute(f"UPDATE {table} SET name = 'changed' WHERE id % 3 = 0")
                    writer.execute(f"DELETE FROM {table} WHERE id % 4 = 0")
                    writer.execute(
                        f"INSERT INTO {table} (id) SELECT 100000 + i FROM generate_series(1, 500) i"
                    )
            committed.append(low)

    source = Counting(lambda: psycopg.connect(postgres_url), before_part=commit_meanwhile)
    [during] = extract(source, [reading(table, tmp_path / "during.parquet", 2)])
    assert len(committed) == 2
    assert rows_of(during.path).equals(rows_of(before.path))
    with psycopg.connect(postgres_url) as connection:
        [(now,)] = connection.execute(f"SELECT count(*) FROM {table}").fetchall()
    assert now != during.manifest.rows  # the commits happened, and no part saw them


def test_a_part_that_fails_is_read_again_alone(
    postgres_url: str, table: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fill(postgres_url, table, 20_000)
    failed: list[str] = []

    def fail_second_part_once(low: str, tries: int) -> None:
        if low != "0" and tries == 1:
            failed.append(low)
            raise ConnectionError("the reader's connection was lost")

    source = Counting(lambda: psycopg.connect(postgres_url), before_part=fail_second_part_once)
    caplog.set_level(logging.WARNING, "dogana_provider.sources.parallel")
    [many] = extract(source, [reading(table, tmp_path / "many.parquet", 2)])
    [second] = failed
    assert source.reads == {"0": 1, second: 2}
    assert "failed on try 1 of 3, read again alone" in caplog.text
    one = PostgresSnapshots(lambda: psycopg.connect(postgres_url))
    [single] = extract(one, [reading(table, tmp_path / "one.parquet", 1)])
    assert rows_of(many.path).equals(rows_of(single.path))


def test_an_interrupted_read_resumes_without_reading_its_parts_again_in_its_snapshot(
    postgres_url: str, table: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fill(postgres_url, table, 20_000)
    broken = {"on": True}

    def second_part_fails_while_broken(low: str, tries: int) -> None:
        if low != "0" and broken["on"]:
            raise ConnectionError("the reader's connection was lost")

    source = Counting(
        lambda: psycopg.connect(postgres_url), before_part=second_part_fails_while_broken
    )
    path = tmp_path / "many.parquet"
    with source.snapshot(UNTIL) as snapshot:
        with pytest.raises(ConnectionError):
            read_all(snapshot, [reading(table, path, 2)])
        assert [part.name for part in delivery_parts(path)] == ["part-00000.parquet"]
        assert source.reads["0"] == 1
        broken["on"] = False
        [resumed] = read_all(snapshot, [reading(table, path, 2)])
        assert source.reads["0"] == 1  # the part written is kept, not read again
    one = PostgresSnapshots(lambda: psycopg.connect(postgres_url))
    [single] = extract(one, [reading(table, tmp_path / "one.parquet", 1)])
    assert rows_of(resumed.path).equals(rows_of(single.path))
    assert resumed.manifest.content_hash == parts_sha256(delivery_parts(path))

    # Its snapshot gone (the read ended), the same delivery's parts are all read again.
    broken["on"] = True
    with source.snapshot(UNTIL) as snapshot, pytest.raises(ConnectionError):
        read_all(snapshot, [reading(table, path, 2)])
    broken["on"] = False
    caplog.set_level(logging.WARNING, "dogana_provider.sources.parallel")
    [again] = extract(source, [reading(table, path, 2)])
    assert "reading every part again; the parts found are dropped" in caplog.text
    assert source.reads["0"] == 3
    assert rows_of(again.path).equals(rows_of(single.path))


def test_a_part_whose_snapshot_is_no_longer_exported_is_not_kept(
    postgres_url: str, table: str, tmp_path: Path
) -> None:
    fill(postgres_url, table, 100)
    source = PostgresSnapshots(lambda: psycopg.connect(postgres_url))
    with source.snapshot(UNTIL) as snapshot:
        exported = source.export(snapshot)
        assert source.still_exported(snapshot, exported)
    assert not source.still_exported(snapshot, exported)


def test_mariadb_reads_with_one_reader_and_says_why(
    mariadb_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    connect = mariadb_connector(mariadb_url)
    name = f"parallel_{uuid.uuid4().hex[:10]}"
    connection = connect()
    try:
        cursor = connection.cursor()
        cursor.execute(f"CREATE TABLE {name} (id BIGINT PRIMARY KEY, name TEXT)")
        cursor.execute(f"INSERT INTO {name} VALUES (1, 'one'), (2, 'two')")
        connection.commit()
        caplog.set_level(logging.WARNING, "dogana_provider.sources.extract")
        [done] = extract(MySqlSnapshots(connect), [reading(name, tmp_path / "m.parquet", 2)])
    finally:
        connection.cursor().execute(f"DROP TABLE IF EXISTS {name}")
        connection.close()
    assert Path(done.path).is_file() and done.manifest.rows == 2
    assert "readers=2 asked, read by one reader" in caplog.text
    assert "export no snapshot" in caplog.text


def test_sqlite_and_a_query_read_with_one_reader_and_say_why(
    postgres_url: str, table: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "dogana_provider.sources.extract")
    database = tmp_path / "source.sqlite"
    with sqlite3.connect(database) as connection:
        connection.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, name TEXT)")
        connection.execute("INSERT INTO orders VALUES (1, 'one')")
    sqlite_source = SqliteSnapshots(lambda: sqlite3.connect(database))
    [done] = extract(sqlite_source, [reading("orders", tmp_path / "s.parquet", 2)])
    assert Path(done.path).is_file() and "an SQLite read is one file's" in caplog.text
    fill(postgres_url, table, 10)
    request = ExtractionRequest(table, "full", UNTIL)
    query = Read(
        contract_of(table),
        request,
        Relation(sql=f"SELECT * FROM {table}"),
        tmp_path / "q.parquet",
        readers=2,
    )
    [queried] = extract(PostgresSnapshots(lambda: psycopg.connect(postgres_url)), [query])
    assert Path(queried.path).is_file() and queried.manifest.rows == 10
    assert "a query (table_sql) is read whole" in caplog.text


@pytest.mark.parametrize("wrong", [0, -1, 65, "two", 1.5, True, None])
def test_a_number_of_readers_that_is_no_whole_number_from_1_to_64_is_refused(wrong: Any) -> None:
    with pytest.raises(ValueError, match="readers"):
        checked_readers(wrong)
    assert checked_readers("2") == 2
