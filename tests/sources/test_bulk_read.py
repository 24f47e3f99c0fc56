"""The bulk read (sources/bulk.py) writes the very file the row-by-row read writes, in the very
snapshot: PostgreSQL through ADBC, against the same source read through psycopg's cursor. A read
of few rows is read through the read's own cursor instead, and writes that file too.

MariaDB has no bulk read (no second connection can share its read's snapshot), so its row-by-row
read is the only one and the source conformance suite covers it; SQLite's is
test_bulk_read_sqlite.py's.

The receiver's side of the fast path too: PostgreSQL staging writes COPY's binary format
(staging/postgres.py), which must store every value exactly as the driver's own adaptation of the
file's values stores it, row by row.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from row_by_row import RowByRowRead

from dogana_core import Contract, Shape
from dogana_core.planner import ExtractionRequest
from dogana_provider.dialects import POSTGRES
from dogana_provider.sources import PostgresSnapshots, Read, Relation, extract, read_all
from dogana_provider.staging import ROW_COLUMN, stage_file

pytestmark = [pytest.mark.postgres]

COLUMNS = (
    ("id", "BIGINT PRIMARY KEY"),
    ("customer", "TEXT"),
    ("amount", "NUMERIC(12,2)"),
    ("day", "DATE"),
    ("at", "TIMESTAMPTZ"),
    ("flag", "BOOLEAN"),
    ("ratio", "DOUBLE PRECISION"),
    ("small", "INTEGER"),
    ("naive", "TIMESTAMP"),
)
UNTIL = datetime(2026, 1, 1, tzinfo=UTC)


class RowByRow(RowByRowRead, PostgresSnapshots):
    """The same source read through psycopg's cursor: the bulk read of every other dialect."""


@pytest.fixture
def table(postgres_url: str) -> Iterator[str]:
    name = f"bulk_{uuid.uuid4().hex[:10]}"
    ddl = ", ".join(f"{column} {kind}" for column, kind in COLUMNS)
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute(f"CREATE TABLE {name} ({ddl})")
    yield name
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute(f"DROP TABLE IF EXISTS {name}")


def contract_of(table: str) -> Contract:
    return Contract(table, ("id",), {"full": Shape.complete()}, types={"id": "int"})


def read(source: PostgresSnapshots, table: str, path: Path) -> tuple[Path, str]:
    request = ExtractionRequest(table, "full", UNTIL)
    [done] = extract(source, [Read(contract_of(table), request, Relation(table=table), path)])
    assert done.manifest.content_hash is not None
    return Path(done.path), done.manifest.content_hash


instants = st.datetimes(
    min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
)
rows = st.lists(
    st.tuples(
        st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=12)
        | st.none(),
        st.decimals(min_value=-(10**10) + 1, max_value=10**10 - 1, places=2) | st.none(),
        st.dates(min_value=date(1, 1, 1), max_value=date(9999, 12, 31)) | st.none(),
        instants | st.none(),
        st.booleans() | st.none(),
        st.floats(allow_nan=False) | st.none(),
        st.integers(-(2**31), 2**31 - 1) | st.none(),
        instants.map(lambda moment: moment.replace(tzinfo=None)) | st.none(),
    ),
    max_size=40,
)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=rows)
def test_the_bulk_read_writes_the_file_the_row_by_row_read_writes(
    postgres_url: str, table: str, tmp_path: Path, rows: list[tuple[Any, ...]]
) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute(f"TRUNCATE {table}")
        names = ", ".join(column for column, _ in COLUMNS)
        marks = ", ".join(["%s"] * len(COLUMNS))
        with connection.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO {table} ({names}) VALUES ({marks})",
                [(index, *row) for index, row in enumerate(rows)],
            )
    connect = lambda: psycopg.connect(postgres_url)  # noqa: E731
    example = uuid.uuid4().hex  # tmp_path is one folder for every example
    adbc = PostgresSnapshots(connect, few_rows=0)
    bulk, bulk_hash = read(adbc, table, tmp_path / f"{example}.bulk.parquet")
    slow, slow_hash = read(RowByRow(connect), table, tmp_path / f"{example}.rows.parquet")
    fast_rows, slow_rows = pq.read_table(bulk), pq.read_table(slow)
    assert fast_rows.schema == slow_rows.schema
    assert fast_rows.to_pylist() == slow_rows.to_pylist()
    assert bulk_hash == slow_hash  # the same bytes: the same Parquet file
    _, few_hash = read(PostgresSnapshots(connect), table, tmp_path / f"{example}.few.parquet")
    assert few_hash == slow_hash


def test_the_bulk_read_sees_the_read_snapshot_not_a_later_commit(
    postgres_url: str, table: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute(f"INSERT INTO {table} (id, amount) VALUES (1, 1.50)")
    source = PostgresSnapshots(lambda: psycopg.connect(postgres_url), few_rows=0)
    request = ExtractionRequest(table, "full", UNTIL)
    read_ = Read(contract_of(table), request, Relation(table=table), tmp_path / "t.parquet")
    caplog.set_level(logging.INFO, logger="dogana_provider.sources")
    with source.snapshot(UNTIL) as snapshot:
        with psycopg.connect(postgres_url, autocommit=True) as connection:
            connection.execute(f"INSERT INTO {table} (id, amount) VALUES (2, 2.50)")
        [done] = read_all(snapshot, [read_])
    assert f"{table}: bulk read" in caplog.text
    assert "read's own cursor" not in caplog.text
    assert pq.read_table(done.path).column("id").to_pylist() == [1]
    assert done.manifest.rows == 1


def test_a_read_of_few_rows_is_read_through_the_reads_own_cursor_in_its_snapshot(
    postgres_url: str, table: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """ADBC's connection costs more than a few rows take through the read's own cursor."""
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute(f"INSERT INTO {table} (id, amount) VALUES (1, 1.50)")
        connection.execute(f"ANALYZE {table}")
    source = PostgresSnapshots(lambda: psycopg.connect(postgres_url))
    request = ExtractionRequest(table, "full", UNTIL)
    read_ = Read(contract_of(table), request, Relation(table=table), tmp_path / "t.parquet")
    caplog.set_level(logging.INFO, logger="dogana_provider.sources")
    with source.snapshot(UNTIL) as snapshot:
        with psycopg.connect(postgres_url, autocommit=True) as connection:
            connection.execute(f"INSERT INTO {table} (id, amount) VALUES (2, 2.50)")
        [done] = read_all(snapshot, [read_])
    assert "read through the read's own cursor: 1 rows" in caplog.text
    assert pq.read_table(done.path).column("id").to_pylist() == [1]
    assert done.manifest.rows == 1


def test_a_read_of_more_rows_than_the_planner_expected_is_read_by_adbc_after_all(
    postgres_url: str, table: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute(f"INSERT INTO {table} (id) VALUES (0)")
        connection.execute(f"ANALYZE {table}")  # the planner expects about one row
        connection.execute(f"INSERT INTO {table} (id) SELECT generate_series(1, 20)")
    caplog.set_level(logging.INFO, logger="dogana_provider.sources")
    source = PostgresSnapshots(lambda: psycopg.connect(postgres_url), few_rows=5)
    path, _ = read(source, table, tmp_path / "t.parquet")
    assert "read's own cursor" not in caplog.text
    assert f"{table}: bulk read" in caplog.text
    assert pq.read_table(path).column("id").to_pylist() == list(range(21))


def test_a_numeric_without_precision_is_read_row_by_row_and_named(
    postgres_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    name = f"bulk_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute(f"CREATE TABLE {name} (id BIGINT PRIMARY KEY, amount NUMERIC)")
        connection.execute(f"INSERT INTO {name} VALUES (1, 1.25), (2, NULL)")
    try:
        caplog.set_level(logging.INFO, logger="dogana_provider.sources.extract")
        source = PostgresSnapshots(lambda: psycopg.connect(postgres_url))
        path, _ = read(source, name, tmp_path / "n.parquet")
        assert f"{name}: read row by row: column amount: the database does not type it" in (
            caplog.text
        )
        assert pq.read_table(path).column("amount").to_pylist() == [Decimal("1.25"), None]
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as connection:
            connection.execute(f"DROP TABLE IF EXISTS {name}")


def test_timestamps_keep_their_microseconds(postgres_url: str, table: str, tmp_path: Path) -> None:
    moment = datetime(2025, 6, 30, 23, 59, 59, 999999, tzinfo=UTC)
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute(
            f"INSERT INTO {table} (id, at, naive) VALUES (1, %s, %s)",
            (moment, moment.replace(tzinfo=None) - timedelta(microseconds=1)),
        )
        connection.execute(f"ANALYZE {table}")  # the planner expects the one row there is
    for few_rows in (0, 1):  # through ADBC, and through the read's own cursor
        path, _ = read(
            PostgresSnapshots(lambda: psycopg.connect(postgres_url), few_rows=few_rows),
            table,
            tmp_path / f"t{few_rows}.parquet",
        )
        [row] = pq.read_table(path).to_pylist()
        assert row["at"] == moment
        assert row["naive"] == moment - timedelta(microseconds=1)


# Staging in COPY's binary format -------------------------------------------------------------

DECIMALS = {
    # column: its type; the binary format splits a precision up to 18 in int64, wider ones from
    # their text, and lays out a scale that is not a multiple of four with padding digits
    "cents": pa.decimal128(12, 2),
    "fine": pa.decimal128(18, 9),
    "whole": pa.decimal128(4, 0),
    "fraction": pa.decimal128(5, 5),
    "wide": pa.decimal128(30, 7),
    "huge": pa.decimal256(45, 20),
}
STAGED = {
    "id": pa.int64(),
    "customer": pa.string(),
    "day": pa.date32(),
    "at": pa.timestamp("us", tz="UTC"),
    "flag": pa.bool_(),
    "ratio": pa.float64(),
    **DECIMALS,
}


def decimals(kind: pa.Decimal128Type | pa.Decimal256Type) -> st.SearchStrategy[Decimal | None]:
    """Every decimal(p,s) value: its unscaled integer, read from text exactly (st.decimals
    rounds to Python's 28 digits, above which it leaves its bounds)."""
    unscaled = st.integers(-(10**kind.precision) + 1, 10**kind.precision - 1)
    return unscaled.map(lambda n: Decimal(f"{n}E-{kind.scale}")) | st.none()


staged_rows = st.lists(
    st.tuples(
        st.integers(-(2**63), 2**63 - 1) | st.none(),
        st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=12)
        | st.none(),
        st.dates(min_value=date(1, 1, 1), max_value=date(9999, 12, 31)) | st.none(),
        instants | st.none(),
        st.booleans() | st.none(),
        st.floats() | st.none(),  # NaN and the infinities too: DOUBLE PRECISION holds them
        *(decimals(kind) for kind in DECIMALS.values()),
    ),
    max_size=40,
)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=staged_rows)
def test_the_binary_copy_stages_the_values_the_driver_inserts_row_by_row(
    postgres_url: str, tmp_path: Path, rows: list[tuple[Any, ...]]
) -> None:
    """Every value as PostgreSQL prints it (its ::text, so a NUMERIC's scale and a
    timestamp's microseconds count), staged from the file by COPY's binary format and inserted
    from the same file's values by psycopg's executemany."""
    example = uuid.uuid4().hex[:10]
    path = tmp_path / f"{example}.parquet"
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in STAGED]
    pq.write_table(
        pa.table(
            {
                name: pa.array(values, kind)
                for (name, kind), values in zip(STAGED.items(), columns, strict=True)
            }
        ),
        path,
    )
    contract = Contract(
        f"staged_{example}", ("id",), {"full": Shape.complete()}, types={"id": "int"}
    )
    staged, inserted = f"binary_{example}", f"inserted_{example}"
    with psycopg.connect(postgres_url) as connection:
        try:
            result = stage_file(connection, POSTGRES, staged, path, contract)
            assert result.unreadable is None, result.unreadable
            names = [name for name, _ in result.columns]
            ddl = ", ".join(
                f"{POSTGRES.quote(name)} {POSTGRES.column_type(kind)}"
                for name, kind in result.columns
            )
            connection.execute(f"CREATE TABLE {inserted} ({ROW_COLUMN} BIGINT, {ddl})")
            table = pq.read_table(path)
            values = [
                POSTGRES.values(table.column(name).combine_chunks(), kind)
                for name, kind in result.columns
            ]
            marks = ", ".join(["%s"] * (len(names) + 1))
            with connection.cursor() as cursor:
                cursor.executemany(
                    f"INSERT INTO {inserted} VALUES ({marks})",
                    [
                        (number, *row)
                        for number, row in enumerate(zip(*values, strict=True), start=1)
                    ],
                )
            as_text = ", ".join(f"{POSTGRES.quote(name)}::text" for name in [ROW_COLUMN, *names])
            query = f"SELECT {as_text} FROM {{}} ORDER BY {ROW_COLUMN}"
            assert (
                connection.execute(query.format(staged)).fetchall()
                == connection.execute(query.format(inserted)).fetchall()
            )
            assert result.rows == len(rows)
        finally:
            connection.rollback()  # neither table outlives the example
