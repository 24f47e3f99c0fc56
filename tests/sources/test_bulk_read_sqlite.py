"""SQLite's bulk read (sources/bulk.py, sources/sqlite.py) writes the very file the row-by-row
read writes, from the read's own snapshot, and leaves to the row-by-row read every value the
driver would convert: the same source read both ways, compared byte for byte."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
import uuid
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from row_by_row import RowByRowRead

from dogana_core import Contract, Shape
from dogana_core.planner import ExtractionRequest
from dogana_provider.sources import Read, Relation, SqliteSnapshots, extract, read_all
from dogana_provider.sources.columns import UnsupportedColumn
from dogana_provider.sources.sqlite import Reader

UNTIL = datetime(2026, 1, 1, tzinfo=UTC)
DDL = (
    "id INTEGER PRIMARY KEY, customer TEXT, amount DECIMAL(12,2), day DATE, "
    "at TIMESTAMP, flag BOOLEAN, ratio REAL, small INTEGER, note VARCHAR(20)"
)
LOGGER = "dogana_provider.sources.extract"


class RowByRow(RowByRowRead, SqliteSnapshots):
    """The same source read through sqlite3's cursor alone."""


def contract_of(table: str) -> Contract:
    return Contract(table, ("id",), {"full": Shape.complete()}, types={"id": "int"})


def database(tmp_path: Path, rows: list[tuple[Any, ...]]) -> Path:
    path = tmp_path / f"{uuid.uuid4().hex}.sqlite"
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute(f"CREATE TABLE t ({DDL})")
    marks = ", ".join("?" * 9)
    connection.executemany(f"INSERT INTO t VALUES ({marks})", rows)
    connection.commit()
    connection.close()
    return path


def read(source: SqliteSnapshots, path: Path) -> tuple[Any, str]:
    request = ExtractionRequest("t", "full", UNTIL)
    try:
        [done] = extract(source, [Read(contract_of("t"), request, Relation(table="t"), path)])
    except UnsupportedColumn as refused:
        return ("refused", str(refused)), ""
    assert done.manifest.content_hash is not None
    return pq.read_table(done.path), done.manifest.content_hash


def both(tmp_path: Path, rows: list[tuple[Any, ...]]) -> tuple[Any, Any]:
    """The bulk read's file and the row-by-row read's, each with its hash."""
    file = database(tmp_path, rows)
    example = uuid.uuid4().hex  # tmp_path is one folder for every hypothesis example
    bulk = read(SqliteSnapshots(lambda: sqlite3.connect(file)), tmp_path / f"{example}.b.parquet")
    slow = read(RowByRow(lambda: sqlite3.connect(file)), tmp_path / f"{example}.r.parquet")
    return bulk, slow


# How writers spell values: the row-by-row read's own inputs ---------------------------------------

TEXT = st.characters(exclude_categories=["Cs"])  # a lone surrogate is no text a driver binds
instants = st.datetimes(
    min_value=datetime(1, 1, 3), max_value=datetime(9999, 12, 29), timezones=st.just(UTC)
)
offsets = st.sampled_from([None, UTC, timezone(timedelta(hours=2)), timezone(-timedelta(hours=9))])


@st.composite
def spelled(draw: Any) -> str:
    """A datetime as some writer spells it: ISO 8601, with or without an offset or microseconds."""
    moment = draw(instants)
    zone = draw(offsets)
    local = moment.astimezone(zone).replace(tzinfo=None) if zone is not None else moment
    text = local.isoformat(sep=draw(st.sampled_from([" ", "T"])))
    if zone is not None:
        text += moment.astimezone(zone).isoformat()[-6:]
    return text.replace("+00:00", draw(st.sampled_from(["+00:00", "Z"])))


typed_rows = st.lists(
    st.tuples(
        st.text(st.characters(exclude_characters="\x00", exclude_categories=["Cs"]), max_size=12)
        | st.none(),
        # As SQLite stores a decimal it is given as text: NUMERIC affinity makes it a number.
        st.decimals(min_value=-(10**10) + 1, max_value=10**10 - 1, places=2).map(str) | st.none(),
        st.dates(min_value=date(1, 1, 1), max_value=date(9999, 12, 31)).map(str) | st.none(),
        spelled() | st.none(),
        st.booleans() | st.none(),
        st.floats(allow_nan=False) | st.none(),
        st.integers(-(2**63), 2**63 - 1) | st.none(),
        st.text(TEXT, max_size=5) | st.none(),  # VARCHAR: TEXT affinity; NUL too
    ),
    max_size=40,
)

# Any storage class in any column: what the bulk read must never misrepresent.
anything = (
    st.none()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(TEXT, max_size=6)
    | st.binary(max_size=4)
    | st.sampled_from(["2025-01-02", "2025-01-02 03:04:05.000006+01:00", "12.50", "1"])
)
messy_rows = st.lists(st.tuples(*([anything] * 8)), max_size=12)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=typed_rows)
def test_the_bulk_read_writes_the_file_the_row_by_row_read_writes(
    tmp_path: Path, rows: list[tuple[Any, ...]], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.clear()
    caplog.set_level(logging.INFO, logger=LOGGER)
    (bulk, bulk_hash), (slow, slow_hash) = both(
        tmp_path, [(index, *row) for index, row in enumerate(rows)]
    )
    assert "t: bulk read" in caplog.text
    assert "after all" not in caplog.text, "typed rows must not need the row-by-row read"
    assert bulk.schema == slow.schema
    assert bulk.to_pylist() == slow.to_pylist()
    assert bulk_hash == slow_hash  # the same bytes: the same Parquet file


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=messy_rows)
def test_values_of_any_storage_class_come_out_as_the_row_by_row_read_gives_them(
    tmp_path: Path, rows: list[tuple[Any, ...]]
) -> None:
    (bulk, bulk_hash), (slow, slow_hash) = both(
        tmp_path, [(index, *row) for index, row in enumerate(rows)]
    )
    if isinstance(slow, tuple):  # refused: the bulk read refuses alike, naming the same value
        assert bulk == slow
        return
    assert bulk.to_pylist() == slow.to_pylist()
    assert bulk_hash == slow_hash


def test_a_number_among_datetimes_sends_the_read_row_by_row_naming_the_column(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rows = [(n, None, None, None, "2025-01-02 03:04:05", None, None, None, None) for n in range(5)]
    rows.append((9, None, None, None, 20250102, None, None, None, None))
    caplog.set_level(logging.INFO, logger=LOGGER)
    (bulk, _), (slow, _) = both(tmp_path, rows)
    assert "t: read row by row after all: column at: " in caplog.text
    assert bulk == slow and bulk[0] == "refused" and "20250102" in bulk[1]


def test_a_number_too_large_for_its_decimal_is_refused_alike_however_it_is_stored(
    tmp_path: Path,
) -> None:
    """1e10 in a DECIMAL(12,2): SQLite keeps it an INTEGER (NUMERIC affinity) which ADBC hands
    over as a float, and sqlite3 as an int; both reads refuse it naming the one number."""
    for stored in (10_000_000_000.0, 10_000_000_000, "10000000000.00"):
        (bulk, _), (slow, _) = both(
            tmp_path, [(1, None, stored, None, None, None, None, None, None)]
        )
        assert bulk == slow == ("refused", "column amount: 10000000000 does not fit decimal(12,2)")


def test_a_real_left_by_arithmetic_is_read_to_the_digits_a_double_carries(
    tmp_path: Path,
) -> None:
    """`amount = amount + 1` leaves 4096.280000000001 in a DECIMAL(12,2) holding 4095.28: SQLite
    spells it 4096.28, and so do both reads; a third decimal that was written is still refused."""
    file = database(tmp_path, [(1, None, "4095.28", None, None, None, None, None, None)])
    connection = sqlite3.connect(file)
    connection.execute("UPDATE t SET amount = amount + 1")
    connection.commit()
    [(stored, spelled)] = connection.execute("SELECT amount, CAST(amount AS TEXT) FROM t")
    connection.close()
    assert repr(stored) == "4096.280000000001" and spelled == "4096.28"
    bulk, slow = (
        read(source, tmp_path / f"{kind}.parquet")
        for kind, source in (
            ("bulk", SqliteSnapshots(lambda: sqlite3.connect(file))),
            ("slow", RowByRow(lambda: sqlite3.connect(file))),
        )
    )
    for table, _ in (bulk, slow):
        assert table.column("amount").to_pylist() == [Decimal("4096.28")]
    (bulk, _), (slow, _) = both(tmp_path, [(1, None, 1.255, None, None, None, None, None, None)])
    assert bulk == slow == ("refused", "column amount: 1.255 does not fit decimal(12,2)")


def test_a_real_is_read_alike_whatever_else_its_batch_holds(tmp_path: Path) -> None:
    """A REAL whose shortest repr fits its column (123456789012345.67 in a DECIMAL(20,2)) keeps
    that repr, as Arrow reads a batch of such; a REAL left by arithmetic beside it in the batch,
    which sends the batch value by value, changes neither."""
    file = tmp_path / "wide.sqlite"
    connection = sqlite3.connect(file)
    connection.execute("CREATE TABLE wide (id INTEGER PRIMARY KEY, amount DECIMAL(20,2))")
    connection.execute("INSERT INTO wide VALUES (1, 123456789012345.67)")
    connection.commit()
    request = ExtractionRequest("wide", "full", UNTIL)
    alone_and_beside = []
    for batch in ("alone", "beside"):
        if batch == "beside":
            connection.execute("INSERT INTO wide VALUES (2, 4095.28 + 1)")
            connection.commit()
        for kind, source in (
            ("bulk", SqliteSnapshots(lambda: sqlite3.connect(file))),
            ("slow", RowByRow(lambda: sqlite3.connect(file))),
        ):
            read = Read(
                contract_of("wide"), request, Relation(table="wide"), tmp_path / f"{kind}.pq"
            )
            [done] = extract(source, [read], overwrite=True)
            alone_and_beside.append(pq.read_table(done.path).column("amount").to_pylist())
    connection.close()
    first = Decimal("123456789012345.67")
    assert alone_and_beside == [[first]] * 2 + [[first, Decimal("4096.28")]] * 2


def test_a_decimal_too_large_for_a_real_is_read_row_by_row_exactly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    huge = 2**53 + 1  # a REAL would make it 2**53
    file = database(tmp_path, [(1, None, 1.25, None, None, None, None, None, None)])
    connection = sqlite3.connect(file)
    connection.execute("CREATE TABLE big (id INTEGER PRIMARY KEY, amount DECIMAL(20,0))")
    connection.execute("INSERT INTO big VALUES (1, ?), (2, 7)", (huge,))
    connection.commit()
    connection.close()
    caplog.set_level(logging.INFO, logger=LOGGER)
    request = ExtractionRequest("big", "full", UNTIL)
    source = SqliteSnapshots(lambda: sqlite3.connect(file))
    [done] = extract(
        source, [Read(contract_of("big"), request, Relation(table="big"), tmp_path / "b.parquet")]
    )
    assert "big: read row by row after all" in caplog.text
    amounts = pq.read_table(done.path).column("amount").to_pylist()
    assert amounts == [Decimal(huge), Decimal(7)]


def test_a_commit_before_the_readers_snapshot_leaves_the_rows_to_the_reads_own_snapshot(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The witness saw a commit between the clock reading and the reader's snapshot: the reader
    might show it, so the rows come through sqlite3, in the read's snapshot, without it."""
    file = database(tmp_path, [(1, "before", None, None, None, None, None, None, None)])
    source = SqliteSnapshots(lambda: sqlite3.connect(file))
    request = ExtractionRequest("t", "full", UNTIL)
    read_ = Read(contract_of("t"), request, Relation(table="t"), tmp_path / "t.parquet")
    caplog.set_level(logging.INFO, logger=LOGGER)
    with source.snapshot(UNTIL) as snapshot:
        writer = sqlite3.connect(file)
        writer.execute("INSERT INTO t (id, customer) VALUES (2, 'after')")
        writer.commit()
        writer.close()
        [done] = read_all(snapshot, [read_])
    assert "a commit fell between the clock reading and the reader's snapshot" in caplog.text
    assert pq.read_table(done.path).column("id").to_pylist() == [1]


def test_the_reader_reads_in_the_reads_snapshot_when_no_commit_came_between(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    file = database(tmp_path, [(1, "before", None, None, None, None, None, None, None)])
    source = SqliteSnapshots(lambda: sqlite3.connect(file))
    request = ExtractionRequest("t", "full", UNTIL)
    read_ = Read(contract_of("t"), request, Relation(table="t"), tmp_path / "t.parquet")
    caplog.set_level(logging.INFO, logger=LOGGER)
    with source.snapshot(UNTIL) as snapshot:
        [done] = read_all(snapshot, [read_])
        # Committed once the reader has its snapshot: neither read sees it.
        writer = sqlite3.connect(file)
        writer.execute("INSERT INTO t (id, customer) VALUES (2, 'after')")
        writer.commit()
        writer.close()
    assert "t: bulk read" in caplog.text and "after all" not in caplog.text
    assert pq.read_table(done.path).column("id").to_pylist() == [1]


def test_an_in_memory_database_is_read_row_by_row_and_named(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    name = f"file:{uuid.uuid4().hex}?mode=memory&cache=shared"
    keep = sqlite3.connect(name, uri=True)  # the database lives while a connection does
    keep.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, customer TEXT)")
    keep.execute("INSERT INTO t VALUES (1, 'a')")
    keep.commit()
    caplog.set_level(logging.INFO, logger=LOGGER)
    source = SqliteSnapshots(lambda: sqlite3.connect(name, uri=True))
    table, _ = read(source, tmp_path / "m.parquet")
    keep.close()
    assert "t: read row by row: the database is in memory" in caplog.text
    assert table.column("id").to_pylist() == [1]


def test_a_whole_table_read_starts_its_reader_before_the_snapshot_and_reads_with_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    file = database(tmp_path, [(1, "before", None, None, None, None, None, None, None)])
    source = SqliteSnapshots(lambda: sqlite3.connect(file))
    request = ExtractionRequest("t", "full", UNTIL)
    read_ = Read(contract_of("t"), request, Relation(table="t"), tmp_path / "t.parquet")
    caplog.set_level(logging.INFO, logger=LOGGER)
    source.expect([read_])
    started = source._spare
    assert started is not None and started.process.poll() is None  # before any connection
    with source.snapshot(UNTIL) as snapshot:
        [done] = read_all(snapshot, [read_])
        witness = source._witnesses[id(snapshot.connection)]
        assert not isinstance(witness, str) and witness._reader is started
    assert "t: bulk read" in caplog.text
    assert pq.read_table(done.path).column("id").to_pylist() == [1]
    assert started.process.poll() is not None


def test_a_read_of_changes_starts_no_reader_before_its_snapshot(tmp_path: Path) -> None:
    file = database(tmp_path, [])
    source = SqliteSnapshots(lambda: sqlite3.connect(file))
    contract = Contract(
        "t",
        ("id",),
        {"changes": Shape.changes(checkpoint="timestamp")},
        cursor_column="at",
        types={"id": "int", "at": "datetime"},
    )
    request = ExtractionRequest("t", "changes", UNTIL, since=UNTIL - timedelta(days=1))
    source.expect([Read(contract, request, Relation(table="t"), tmp_path / "t.parquet")])
    assert source._spare is None


def changes_of_t(tmp_path: Path) -> Read:
    """A changes read by a datetime cursor, which compares through dogana_utc()."""
    contract = Contract(
        "t",
        ("id",),
        {"changes": Shape.changes(checkpoint="timestamp")},
        cursor_column="at",
        types={"id": "int", "at": "datetime"},
    )
    request = ExtractionRequest("t", "changes", UNTIL, since=UNTIL - timedelta(days=1))
    return Read(contract, request, Relation(table="t"), tmp_path / "t.parquet")


def test_a_snapshot_no_reader_can_serve_a_read_of_opens_no_witness(tmp_path: Path) -> None:
    file = database(tmp_path, [(1, "a", None, None, "2025-12-31 12:00:00", None, None, 1, None)])
    opened: list[sqlite3.Connection] = []

    def connect() -> sqlite3.Connection:
        opened.append(sqlite3.connect(file))
        return opened[-1]

    [done] = extract(SqliteSnapshots(connect), [changes_of_t(tmp_path)])
    assert len(opened) == 1  # the read's: no witness beside it
    assert pq.read_table(done.path).column("id").to_pylist() == [1]


def test_a_statement_no_reader_can_serve_is_not_described_for_one(tmp_path: Path) -> None:
    file = database(tmp_path, [])
    statements: list[str] = []

    def connect() -> sqlite3.Connection:
        connection = sqlite3.connect(file)
        connection.set_trace_callback(statements.append)
        return connection

    extract(SqliteSnapshots(connect), [changes_of_t(tmp_path)])
    assert any("dogana_utc(" in sql for sql in statements)  # the rows' statement, read
    assert not any("dogana_described" in sql for sql in statements)


def test_a_reader_started_before_a_snapshot_nothing_read_with_is_stopped_with_it(
    tmp_path: Path,
) -> None:
    file = database(tmp_path, [(1, "a", None, None, None, None, None, None, None)])
    source = SqliteSnapshots(lambda: sqlite3.connect(file))
    request = ExtractionRequest("t", "full", UNTIL)
    source.expect([Read(contract_of("t"), request, Relation(table="t"), tmp_path / "t.parquet")])
    started = source._spare
    assert started is not None
    with source.snapshot(UNTIL):
        pass
    assert started.process.poll() is not None and source._spare is None


def test_the_reader_sends_its_batches_ahead_of_a_caller_still_busy_with_one(
    tmp_path: Path,
) -> None:
    # Three batches of some 300 KB each: more than a pipe holds, fewer than the read keeps ahead.
    rows = [(i, "x" * 100, None, None, None, None, None, None, None) for i in range(3000)]
    file = database(tmp_path, rows)
    reader = Reader()
    try:
        reader.open(str(file), 1000)
        reader.opened()
        reader.begin()
        earlier = set(threading.enumerate())
        with reader.read("SELECT id, customer FROM t ORDER BY id", {}, 1000) as batches:
            first = next(batches)
            # While the caller holds the first batch, the read takes the rest off the pipe, and
            # the process sends its last line after them: then it has nothing left to send.
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and any(
                thread.name == "dogana-sqlite-reader" and thread not in earlier
                for thread in threading.enumerate()
            ):
                time.sleep(0.01)
            assert reader.process.stdout is not None
            reader.process.stdout.peek(1)
            reader.process.kill()
            rest = list(batches)
        assert first.num_rows + sum(batch.num_rows for batch in rest) == 3000
    finally:
        reader.close()
