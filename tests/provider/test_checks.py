"""The receiver's row checks: one test per check, named after it, on real files staged in SQL.

Each test stages an honest file and a file that breaks the check's fact, and fails if the check
is dropped (it must be in verify's results under its name), if it stops refusing, or if it
refuses an honest delivery. The same tests run on PostgreSQL and MariaDB when they are reachable
(skipped with the reason otherwise, failing in CI), since the receiver reuses these functions
there.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st
from row_check_fixtures import (
    EVENTS,
    EVENTS_SCHEMA,
    ORDERS,
    ORDERS_SCHEMA,
    SEPTEMBER,
    T0,
    T1,
    honest_orders,
    order,
    write,
)

from dogana_core import Contract, Manifest, Shape, column_hash
from dogana_core.gate import Check
from dogana_provider.checks.rows import CheckName, plan, verify
from dogana_provider.dialects import MARIADB, POSTGRES, SQLITE, Dialect, sqlite_datetime
from dogana_provider.staging import (
    ROW_COLUMN,
    Staged,
    bound_columns,
    row_number,
    stage_file,
)


@dataclass
class Database:
    connection: Any
    dialect: Dialect
    tables: list[str] = field(default_factory=list)

    def stage(self, path: Path, contract: Contract, columns: Sequence[str] | None) -> Staged:
        table = f"staged_{uuid.uuid4().hex[:12]}"
        self.tables.append(table)
        return stage_file(self.connection, self.dialect, table, path, contract, columns=columns)


@pytest.fixture(params=["sqlite", "postgresql", "mariadb"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    if request.param == "sqlite":
        connection = sqlite3.connect(tmp_path / "staging.sqlite")
        yield Database(connection, SQLITE)
        connection.close()
        return
    if request.param == "postgresql":
        psycopg = pytest.importorskip("psycopg")
        connection = psycopg.connect(request.getfixturevalue("postgres_url"))
        try:
            yield Database(connection, POSTGRES)
        finally:
            connection.rollback()  # every staged table goes with the transaction
            connection.close()
        return
    mysqldb = pytest.importorskip("MySQLdb")
    url = urlsplit(request.getfixturevalue("mariadb_url"))
    connection = mysqldb.connect(
        host=url.hostname, port=url.port, user=url.username, password=url.password or "",
        database=url.path.lstrip("/"), charset="utf8mb4",
    )  # fmt: skip
    database = Database(connection, MARIADB)
    try:
        yield database
    finally:
        # MariaDB commits DDL, so the staged tables are dropped by name.
        connection.rollback()
        cursor = connection.cursor()
        for table in database.tables:
            cursor.execute(f"DROP TABLE IF EXISTS {MARIADB.quote(table)}")
        connection.close()


def run(
    database: Database,
    path: Path,
    manifest: Manifest,
    *,
    contract: Contract = ORDERS,
    published: str | None = None,
    columns: Sequence[str] | None = None,
) -> dict[str, Check]:
    staged = database.stage(path, contract, bound_columns(contract) if columns is None else columns)
    checks = verify(
        database.connection, database.dialect, staged, contract, manifest, published=published
    )
    return {check.name: check for check in checks}


def full(rows: int, **fields: Any) -> Manifest:
    return ORDERS.manifest("full", T1, rows=rows, **fields)


def changes(rows: int, tombstones: int = 0, *, since: datetime = T0, **fields: Any) -> Manifest:
    return ORDERS.manifest("changes", T1, since=since, rows=rows, tombstones=tombstones, **fields)


def month(rows: int, **fields: Any) -> Manifest:
    return ORDERS.manifest("month", T1, window=SEPTEMBER, rows=rows, **fields)


def passes(checks: dict[str, Check], name: CheckName) -> bool:
    assert name in checks, f"check {name} was not run: {sorted(checks)}"
    return checks[name].passed


# The names --------------------------------------------------------------------------------------


def test_names_are_fixed_once_one_per_fact() -> None:
    assert [str(name) for name in CheckName] == [
        "rows",
        "column_names",
        "tombstones",
        "deleted_not_null",
        "column_hash",
        "column_types",
        "content_hash",
        "key_not_null",
        "key_unique",
        "window_not_null",
        "window_inside",
        "cursor_inside",
        "key_not_published_outside_window",
    ]


def test_names_never_take_a_core_checks_name() -> None:
    from dogana_core.gate import RESERVED_CHECKS

    assert set(RESERVED_CHECKS) == {"manifest", "receiver_time", "transition", "together"}
    assert not set(CheckName) & set(RESERVED_CHECKS)


def test_an_honest_delivery_passes_every_check_it_calls_for(
    database: Database, tmp_path: Path
) -> None:
    path = write(tmp_path / "orders.parquet", honest_orders())
    checks = run(database, path, month(3))
    names, _ = plan(ORDERS, month(3))
    assert list(checks) == [str(n) for n in names]
    assert all(check.passed for check in checks.values()), checks


# One test per check ---------------------------------------------------------------------------


def test_rows(database: Database, tmp_path: Path) -> None:
    path = write(tmp_path / "orders.csv", honest_orders())
    assert passes(run(database, path, full(3)), CheckName.ROWS)
    checks = run(database, path, full(4))  # the file was truncated: one row is missing
    assert not passes(checks, CheckName.ROWS)
    assert checks["rows"].detail == "the file holds 3 live rows; the manifest declares 4"


def test_rows_counts_live_rows_only(database: Database, tmp_path: Path) -> None:
    rows = [*honest_orders(), order(4, deleted=True)]
    path = write(tmp_path / "orders.parquet", rows)
    assert passes(run(database, path, changes(3, 1)), CheckName.ROWS)
    assert not passes(run(database, path, changes(4, 0)), CheckName.ROWS)


def test_rows_of_an_unreadable_file_fail_and_its_bytes_are_still_hashed(
    database: Database, tmp_path: Path
) -> None:
    path = write(tmp_path / "orders.parquet", honest_orders())
    path.write_bytes(path.read_bytes()[:-100])  # truncated: the footer is gone
    checks = run(database, path, full(3, content_hash="0" * 64))
    assert set(checks) == {"rows", "content_hash"}
    assert not checks["rows"].passed
    assert "cannot read the file" in checks["rows"].detail
    assert not checks["content_hash"].passed


def test_tombstones(database: Database, tmp_path: Path) -> None:
    rows = [*honest_orders(), order(4, deleted=True), order(5, deleted=True)]
    path = write(tmp_path / "orders.parquet", rows)
    assert passes(run(database, path, changes(3, 2)), CheckName.TOMBSTONES)
    checks = run(database, path, changes(3, 1))
    assert not passes(checks, CheckName.TOMBSTONES)
    assert checks["tombstones"].detail.startswith(
        "the file holds 2 tombstones (is_deleted true); the manifest declares 1: row 4 (id=4"
    )


def test_tombstones_in_a_shape_without_them(database: Database, tmp_path: Path) -> None:
    path = write(tmp_path / "orders.parquet", [*honest_orders(), order(4, deleted=True)])
    checks = run(database, path, full(3))
    assert not passes(checks, CheckName.TOMBSTONES)


def test_deleted_not_null(database: Database, tmp_path: Path) -> None:
    path = write(tmp_path / "orders.csv", [*honest_orders(), order(4, deleted=None)])
    checks = run(database, path, changes(3))
    assert not passes(checks, CheckName.DELETED_NOT_NULL)
    assert checks["deleted_not_null"].detail.startswith(
        "1 row has a null deleted value (is_deleted), neither live nor a tombstone: row 4 (id=4"
    )
    # A null is neither live nor a tombstone, and fails the row count too (Deleted column).
    assert not checks["rows"].passed
    honest = write(tmp_path / "honest.csv", honest_orders())
    assert passes(run(database, honest, changes(3)), CheckName.DELETED_NOT_NULL)


def test_deleted_not_null_when_the_file_omits_the_deleted_column(
    database: Database, tmp_path: Path
) -> None:
    schema = ORDERS_SCHEMA.remove(ORDERS_SCHEMA.get_field_index("is_deleted"))
    rows = [{k: v for k, v in row.items() if k != "is_deleted"} for row in honest_orders()]
    path = write(tmp_path / "orders.parquet", rows, schema)
    checks = run(database, path, changes(3))
    assert passes(checks, CheckName.DELETED_NOT_NULL)
    assert (
        checks["deleted_not_null"].detail == "the file has no is_deleted column: every row is live"
    )
    assert passes(checks, CheckName.ROWS) and passes(checks, CheckName.TOMBSTONES)


def test_column_hash(database: Database, tmp_path: Path) -> None:
    declared = column_hash(
        [("id", "int"), ("order_date", "date"), ("updated_at", "datetime"), ("amount", "float")]
    )
    contract = ORDERS.replace(schema_hash=declared)
    path = write(tmp_path / "orders.parquet", honest_orders())
    manifest = contract.manifest("full", T1, rows=3)
    checks = run(database, path, manifest, contract=contract)
    assert passes(checks, CheckName.COLUMN_HASH), checks["column_hash"].detail
    # Other columns than the data contract's: amount is missing, a note column is there.
    other = ORDERS_SCHEMA.remove(4).append(pa.field("note", pa.string()))
    rows = [{**{k: v for k, v in r.items() if k != "amount"}, "note": "x"} for r in honest_orders()]
    wrong = write(tmp_path / "other.parquet", rows, other)
    checks = run(database, wrong, manifest, contract=contract)
    assert not passes(checks, CheckName.COLUMN_HASH)
    assert (
        "(id int, order_date date, updated_at datetime, note str)" in checks["column_hash"].detail
    )


def test_column_hash_of_a_csv_file_names_str_for_untyped_columns(
    database: Database, tmp_path: Path
) -> None:
    declared = column_hash(
        [("id", "int"), ("order_date", "date"), ("updated_at", "datetime"), ("amount", "str")]
    )
    contract = ORDERS.replace(schema_hash=declared)
    path = write(tmp_path / "orders.csv", honest_orders())
    checks = run(database, path, contract.manifest("full", T1, rows=3), contract=contract)
    assert passes(checks, CheckName.COLUMN_HASH)


def test_content_hash(database: Database, tmp_path: Path) -> None:
    import hashlib

    path = write(tmp_path / "orders.parquet", honest_orders())
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert passes(run(database, path, full(3, content_hash=digest)), CheckName.CONTENT_HASH)
    other = write(tmp_path / "other.parquet", [order(1, 1), order(2, 15), order(3, 30, amount=1.0)])
    checks = run(database, other, full(3, content_hash=digest))
    assert not passes(checks, CheckName.CONTENT_HASH)
    assert f"the manifest declares {digest}" in checks["content_hash"].detail


def test_key_not_null(database: Database, tmp_path: Path) -> None:
    # A tombstone names a key; one without a key names nothing.
    path = write(tmp_path / "orders.parquet", [*honest_orders(), order(None, deleted=True)])
    checks = run(database, path, changes(3, 1))
    assert not passes(checks, CheckName.KEY_NOT_NULL)
    assert checks["key_not_null"].detail == "1 row has a null key (id): row 4 (id=null)"
    honest = write(tmp_path / "honest.parquet", [*honest_orders(), order(4, deleted=True)])
    assert passes(run(database, honest, changes(3, 1)), CheckName.KEY_NOT_NULL)


def test_key_unique(database: Database, tmp_path: Path) -> None:
    path = write(tmp_path / "orders.csv", [*honest_orders(), order(2, 16), order(2, deleted=True)])
    checks = run(database, path, changes(4, 1))
    assert not passes(checks, CheckName.KEY_UNIQUE)
    assert checks["key_unique"].detail == (
        "1 key (id) appears more than once, in 3 rows: id=2 in 3 rows (first row 2)"
    )
    honest = write(tmp_path / "honest.csv", honest_orders())
    assert passes(run(database, honest, changes(3)), CheckName.KEY_UNIQUE)


def test_key_unique_over_a_composite_key(database: Database, tmp_path: Path) -> None:
    rows = [
        {"account": "a", "seq": 1, "gone": False, "note": ""},
        {"account": "b", "seq": 1, "gone": False, "note": ""},
        {"account": "a", "seq": 2, "gone": False, "note": ""},
    ]
    path = write(tmp_path / "events.parquet", rows, EVENTS_SCHEMA)
    manifest = EVENTS.manifest("full", T1, rows=3)
    assert passes(run(database, path, manifest, contract=EVENTS), CheckName.KEY_UNIQUE)
    path = write(tmp_path / "twice.parquet", [*rows, rows[0]], EVENTS_SCHEMA)
    checks = run(database, path, EVENTS.manifest("full", T1, rows=4), contract=EVENTS)
    assert not passes(checks, CheckName.KEY_UNIQUE)
    assert "account='a', seq=1 in 2 rows" in checks["key_unique"].detail


def test_window_not_null(database: Database, tmp_path: Path) -> None:
    path = write(tmp_path / "orders.parquet", [*honest_orders(), order(4, None)])
    checks = run(database, path, full(4))
    assert not passes(checks, CheckName.WINDOW_NOT_NULL)
    assert checks["window_not_null"].detail.startswith(
        "1 live row has a null window value (order_date): row 4"
    )
    # A tombstone's values other than its key may be null (Deleted column).
    tombstone = write(
        tmp_path / "tombstone.parquet", [*honest_orders(), order(4, None, deleted=True)]
    )
    assert passes(run(database, tombstone, changes(3, 1)), CheckName.WINDOW_NOT_NULL)


def test_window_inside(database: Database, tmp_path: Path) -> None:
    # Both ends of the window are inside it.
    path = write(tmp_path / "orders.csv", honest_orders())
    assert passes(run(database, path, month(3)), CheckName.WINDOW_INSIDE)
    outside = [*honest_orders(), {**order(4), "order_date": date(2026, 10, 1)}]
    path = write(tmp_path / "outside.csv", outside)
    checks = run(database, path, month(4))
    assert not passes(checks, CheckName.WINDOW_INSIDE)
    assert checks["window_inside"].detail == (
        "1 row has order_date outside the window [2026-09-01, 2026-09-30]: "
        "row 4 (id=4, order_date=2026-10-01)"
    )


def test_window_inside_applies_to_a_tombstones_window_value(
    database: Database, tmp_path: Path
) -> None:
    rows = [*honest_orders(), {**order(4, deleted=True), "order_date": date(2026, 8, 31)}]
    path = write(tmp_path / "orders.parquet", rows)
    manifest = ORDERS.manifest(
        "month_changes", T1, window=SEPTEMBER, since=T0, rows=3, tombstones=1
    )
    assert not passes(run(database, path, manifest), CheckName.WINDOW_INSIDE)


def test_window_inside_orders_strings_by_code_point(database: Database, tmp_path: Path) -> None:
    contract = Contract(
        "plants",
        ("id",),
        {"plant": Shape.complete(window=True)},
        window_column="plant",
        types={"id": "int", "plant": "str"},
    )
    schema = pa.schema([("id", pa.int64()), ("plant", pa.string())])
    # "Z" < "a" < "é" by code point; a collation would put them otherwise.
    rows = [{"id": 1, "plant": "Z"}, {"id": 2, "plant": "a"}, {"id": 3, "plant": "é"}]
    path = write(tmp_path / "plants.parquet", rows, schema)
    inside = contract.manifest("plant", T1, window=("Z", "a"), rows=3)
    checks = run(database, path, inside, contract=contract)
    assert not passes(checks, CheckName.WINDOW_INSIDE)
    assert "row 3 (id=3, plant='é')" in checks["window_inside"].detail
    assert "row 1" not in checks["window_inside"].detail


def test_cursor_inside(database: Database, tmp_path: Path) -> None:
    # (since, produced_at]: produced_at itself is inside, since is not.
    rows = [order(1, updated=T1), order(2, updated=T0 + timedelta(microseconds=1))]
    path = write(tmp_path / "orders.parquet", rows)
    assert passes(run(database, path, changes(2)), CheckName.CURSOR_INSIDE)
    late = write(
        tmp_path / "late.parquet", [*rows, order(3, updated=T1 + timedelta(microseconds=1))]
    )
    checks = run(database, late, changes(3))
    assert not passes(checks, CheckName.CURSOR_INSIDE)
    assert checks["cursor_inside"].detail == (
        "1 row has updated_at outside (since, produced_at] = "
        "(2026-10-18T02:00:00Z, 2026-10-19T02:00:00Z]: "
        f"row 3 (id=3, updated_at={_spelled(database, T1 + timedelta(microseconds=1))})"
    )
    at_since = write(tmp_path / "since.csv", [*rows, order(3, updated=T0)])
    assert not passes(run(database, at_since, changes(3)), CheckName.CURSOR_INSIDE)


def test_cursor_inside_a_live_rows_cursor_is_never_null(database: Database, tmp_path: Path) -> None:
    rows = [order(1), {**order(2), "updated_at": None}]
    checks = run(database, write(tmp_path / "orders.parquet", rows), changes(2))
    assert not passes(checks, CheckName.CURSOR_INSIDE)
    assert "1 live row has a null updated_at" in checks["cursor_inside"].detail
    # A tombstone's cursor may be null, or in the interval.
    rows = [order(1), {**order(2, deleted=True), "updated_at": None}]
    checks = run(database, write(tmp_path / "tombstone.parquet", rows), changes(1, 1))
    assert passes(checks, CheckName.CURSOR_INSIDE)
    rows = [order(1), order(2, deleted=True, updated=T0)]
    checks = run(database, write(tmp_path / "early.parquet", rows), changes(1, 1))
    assert not passes(checks, CheckName.CURSOR_INSIDE)


def test_cursor_inside_a_sequence_read(database: Database, tmp_path: Path) -> None:
    rows = [
        {"account": "a", "seq": 11, "gone": False, "note": "x"},
        {"account": "b", "seq": 20, "gone": True, "note": None},
    ]
    path = write(tmp_path / "events.parquet", rows, EVENTS_SCHEMA)
    feed = EVENTS.manifest("feed", T1, since=10, generation=20, rows=1, tombstones=1)
    assert passes(run(database, path, feed, contract=EVENTS), CheckName.CURSOR_INSIDE)
    behind = EVENTS.manifest("feed", T1, since=11, generation=20, rows=1, tombstones=1)
    checks = run(database, path, behind, contract=EVENTS)
    assert not passes(checks, CheckName.CURSOR_INSIDE)
    assert "(since, generation] = (11, 20]" in checks["cursor_inside"].detail


def test_key_not_published_outside_window(database: Database, tmp_path: Path) -> None:
    # Published: order 7 of August. A September window delivery carrying order 7 would move it.
    august = write(
        tmp_path / "published.parquet", [order(7), {**order(8), "order_date": date(2026, 8, 5)}]
    )
    published = database.stage(august, ORDERS, bound_columns(ORDERS))
    assert published.unreadable is None
    # Order 7's published row says September 15: it may be redelivered in September.
    honest = write(tmp_path / "honest.parquet", [order(7, 20)])
    checks = run(database, honest, month(1), published=published.table)
    assert passes(checks, CheckName.KEY_NOT_PUBLISHED_OUTSIDE_WINDOW)
    moved = write(tmp_path / "moved.parquet", [order(7, 20), order(8, 21)])
    checks = run(database, moved, month(2), published=published.table)
    assert not passes(checks, CheckName.KEY_NOT_PUBLISHED_OUTSIDE_WINDOW)
    assert checks["key_not_published_outside_window"].detail == (
        "1 row has a key already published outside the window [2026-09-01, 2026-09-30]; only a "
        "whole-table delivery can move a key: row 2 (id=8) is published with order_date=2026-08-05"
    )


# Which checks run ------------------------------------------------------------------------------


def test_plan_names_why_a_check_does_not_apply() -> None:
    _, not_run = plan(ORDERS, full(3))
    reasons = {str(n.name): n.reason for n in not_run}
    assert reasons == {
        "column_hash": "the manifest declares no schema_hash",
        "column_types": "needs the published table: the receiver runs it",
        "content_hash": "the manifest declares no content_hash",
        "window_inside": "shape 'full' covers the whole table",
        "cursor_inside": "shape 'full' is a complete read: it declares no interval",
        "key_not_published_outside_window": (
            "shape 'full' covers the whole table, so it may move keys"
        ),
    }
    keyless = Contract("events", (), {"append": Shape.changes()}, start_at=T0)
    names, _ = plan(keyless, keyless.manifest("append", T1, since=T0))
    assert [str(n) for n in names] == ["rows", "column_names"]


def test_the_published_check_runs_only_where_the_published_table_is(tmp_path: Path) -> None:
    names, not_run = plan(ORDERS, month(3))
    assert CheckName.KEY_NOT_PUBLISHED_OUTSIDE_WINDOW not in names
    assert (
        "needs the published table"
        in {n.name: n.reason for n in not_run}[CheckName.KEY_NOT_PUBLISHED_OUTSIDE_WINDOW]
    )
    names, _ = plan(ORDERS, month(3), published=True)
    assert CheckName.KEY_NOT_PUBLISHED_OUTSIDE_WINDOW in names


# Staging ----------------------------------------------------------------------------------------


def test_staging_numbers_rows_from_one_in_file_order(tmp_path: Path) -> None:
    connection = sqlite3.connect(tmp_path / "s.sqlite")
    path = write(tmp_path / "orders.csv", honest_orders())
    staged = stage_file(connection, SQLITE, "staged", path, ORDERS)
    assert staged.rows == 3
    row = row_number(SQLITE, (name for name, _ in staged.columns))
    rows = connection.execute(f'SELECT {row}, "id" FROM "staged" ORDER BY 1').fetchall()
    assert rows == [(1, 1), (2, 2), (3, 3)]
    assert [name for name, _ in staged.columns] == [f.name for f in ORDERS_SCHEMA]


def test_sqlite_staging_numbers_rows_by_rowid_so_a_swap_drops_no_column(tmp_path: Path) -> None:
    """SQLite drops a column by rewriting every row: the row number is the rowid instead."""
    connection = sqlite3.connect(tmp_path / "s.sqlite")
    staged = stage_file(
        connection, SQLITE, "staged", write(tmp_path / "o.csv", honest_orders()), ORDERS
    )
    columns = [row[1] for row in connection.execute('PRAGMA table_info("staged")')]
    assert ROW_COLUMN not in columns
    assert columns == [name for name, _ in staged.columns]
    assert connection.execute('SELECT max(rowid) FROM "staged"').fetchone() == (3,)


def test_sqlite_staging_keeps_a_row_column_when_columns_hide_every_rowid_name(
    tmp_path: Path,
) -> None:
    connection = sqlite3.connect(tmp_path / "s.sqlite")
    table = pa.table(
        {
            "id": pa.array([7, 8], pa.int64()),
            "_rowid_": pa.array([70, 80], pa.int64()),
            "rowid": pa.array([71, 81], pa.int64()),
            "oid": pa.array([72, 82], pa.int64()),
        }
    )
    pq.write_table(table, tmp_path / "hidden.parquet")
    contract = Contract("hidden", ("id",), {"full": Shape.complete()}, types={"id": "int"})
    stage_file(connection, SQLITE, "staged", tmp_path / "hidden.parquet", contract)
    rows = connection.execute(
        f'SELECT "{ROW_COLUMN}", "_rowid_", "rowid", "oid" FROM "staged" ORDER BY 1'
    ).fetchall()
    assert rows == [(1, 70, 71, 72), (2, 80, 81, 82)]


def test_staging_an_unreadable_file_leaves_no_table(tmp_path: Path) -> None:
    connection = sqlite3.connect(tmp_path / "s.sqlite")
    path = tmp_path / "orders.csv"
    path.write_text(
        "id,order_date,updated_at,is_deleted\n1,2026-09-01,2026-10-18T01:00:00Z,false\nx,,,\n"
    )
    staged = stage_file(connection, SQLITE, "staged", path, ORDERS)
    assert staged.unreadable is not None and "column id" in staged.unreadable
    assert staged.sha256 is not None
    tables = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    assert tables == []


@given(st.datetimes(timezones=st.just(UTC)))
def test_sqlite_stores_a_datetime_in_one_form_whether_staged_or_bound(value: datetime) -> None:
    # Comparisons are text comparisons on SQLite: the staged and the bound forms must agree.
    staged = SQLITE.values(pa.array([value], pa.timestamp("us", tz="UTC")), "datetime")
    assert staged == [sqlite_datetime(value)]
    assert len(staged[0]) == len("2026-10-19 02:00:00.000000")


@given(st.dates())
def test_sqlite_stores_a_date_in_one_form_whether_staged_or_bound(value: date) -> None:
    assert SQLITE.values(pa.array([value], pa.date32()), "date") == [SQLITE.bind("date", value)]


@given(
    st.datetimes(timezones=st.just(UTC)),
    st.datetimes(timezones=st.just(UTC)),
)
def test_sqlite_text_order_is_time_order(a: datetime, b: datetime) -> None:
    assert (sqlite_datetime(a) < sqlite_datetime(b)) == (a < b)


def _spelled(database: Database, value: datetime) -> str:
    """How a staged datetime reads in a detail: SQLite's stored text, else the UTC instant."""
    if database.dialect is SQLITE:
        return sqlite_datetime(value)
    return value.isoformat().replace("+00:00", "Z")
