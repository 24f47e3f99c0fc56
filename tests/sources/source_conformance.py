"""What every snapshot source must do, run against each real database (no mocks, no skip verdict).

A subclass names the database: a fixture ``db`` (a Db: how to create, write and read the source
through a plain connection) and ``source`` (the SnapshotSource under test, reached through the
database's Airflow hook). Each test is one rule of the spec or the brief, named after it.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from dogana_core import Contract, Shape
from dogana_core.manifest import Manifest
from dogana_core.planner import ExtractionRequest
from dogana_provider.cli import main as cli
from dogana_provider.sources import (
    Read,
    Relation,
    SnapshotError,
    SnapshotSource,
    SourceNotReady,
    UnsupportedRead,
    extract,
    read_all,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def day(n: int) -> date:
    return date(2026, 1, 1) + timedelta(days=n)


@dataclass
class Db:
    """A source database as its writers see it: plain connections, autocommit."""

    connect: Callable[[], Any]
    placeholder: str
    ddl: dict[str, str]  # logical column kind -> the database's column type
    bind: Callable[[Any], Any]  # a Python value as the database's writers store it
    clock: Callable[[], datetime]  # the source's clock, as its writers stamp rows with it
    quote: Callable[[str], str]

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        connection = self.connect()
        try:
            cursor = connection.cursor()
            cursor.execute(sql, params)
            rows = [tuple(r) for r in cursor.fetchall()] if cursor.description else []
            connection.commit()
            return rows
        finally:
            connection.close()


COLUMNS = ("id", "day", "plant", "name", "amount", "updated_at", "lsn", "deleted")


def orders_contract(table: str, *, deleted: str = "deleted") -> Contract:
    """Keyed, windowed by day, a timestamp cursor and a soft-delete flag: every usual shape."""
    return Contract(
        table,
        ("id",),
        {
            "full": Shape.complete(),
            "window": Shape.complete(window=True),
            "changes": Shape.changes(checkpoint="timestamp", tombstones=True),
            "changes_live": Shape.changes(checkpoint="timestamp"),
        },
        window_column="day",
        cursor_column="updated_at",
        deleted_column=deleted,
        types={"id": "int", "day": "date", "updated_at": "datetime", deleted: "bool"},
    )


def plants_contract(table: str) -> Contract:
    """Windowed by a string column, so a window bound is a string a DAG author supplies."""
    return Contract(
        table,
        ("id",),
        {"window": Shape.complete(window=True)},
        window_column="plant",
        types={"id": "int", "plant": "str"},
    )


def events_contract(table: str) -> Contract:
    """Keyless: an append-only table read by timestamp."""
    return Contract(
        table,
        (),
        {"append": Shape.changes(checkpoint="timestamp")},
        cursor_column="updated_at",
        types={"updated_at": "datetime"},
        start_at=T0,
    )


def log_contract(table: str) -> Contract:
    """Keyed, fed by an integer position that follows commit order, with tombstones."""
    return Contract(
        table,
        ("id",),
        {
            "full": Shape.complete(),
            "log": Shape.changes(checkpoint="sequence", tombstones=True),
        },
        cursor_column="lsn",
        deleted_column="deleted",
        types={"id": "int", "lsn": "int", "deleted": "bool"},
    )


def rows_of(path: str | Path) -> list[dict[str, Any]]:
    return sorted(pq.read_table(path).to_pylist(), key=lambda row: repr(row.get("id")))


def dogana_check(path: str | Path, contract: Contract, manifest: Manifest) -> None:
    """The file passes `dogana check`: every row check the receiver runs, against the manifest."""
    folder = Path(path).parent
    contract_path = folder / f"{Path(path).name}.contract.json"
    manifest_path = folder / f"{Path(path).name}.manifest.json"
    contract_path.write_text(contract.to_json(), encoding="utf-8")
    manifest_path.write_text(manifest.to_json(), encoding="utf-8")
    code = cli.main(
        ["check", str(path), "--contract", str(contract_path), "--manifest", str(manifest_path)]
    )
    assert code == 0, f"dogana check refused {path} against {json.dumps(manifest.to_dict())}"


class SourceConformance:  # GapRule is mixed in below
    """Every rule, on one database. Subclasses provide the ``db`` and ``source`` fixtures."""

    @pytest.fixture
    def table(self, db: Db) -> Iterator[str]:
        name = f"orders_{uuid.uuid4().hex[:10]}"
        created: list[str] = []

        def create(table: str) -> None:
            types = db.ddl
            db.execute(
                f"CREATE TABLE {db.quote(table)} ("
                f"id {types['key']} PRIMARY KEY, day {types['date']}, plant {types['str']}, "
                f"name {types['text']}, amount {types['decimal']}, "
                f"updated_at {types['datetime']}, lsn {types['int']}, deleted {types['bool']})"
            )
            created.append(table)

        self._create = create
        create(name)
        yield name
        for table in created:
            db.execute(f"DROP TABLE {db.quote(table)}")

    def put(self, db: Db, table: str, *rows: dict[str, Any]) -> None:
        marks = ", ".join([db.placeholder] * len(COLUMNS))
        for row in rows:
            values = tuple(db.bind(row.get(column)) for column in COLUMNS)
            db.execute(f"INSERT INTO {db.quote(table)} VALUES ({marks})", values)

    def seed(self, db: Db, table: str) -> list[dict[str, Any]]:
        rows = [
            {
                "id": n,
                "day": day(n % 4),
                "plant": "north" if n % 2 else "south",
                "name": f"order {n}",
                "amount": Decimal(f"{n}.25"),
                "updated_at": at(n),
                "lsn": n,
                "deleted": n == 5,
            }
            for n in range(1, 9)
        ]
        self.put(db, table, *rows)
        return rows

    def read(
        self,
        source: SnapshotSource,
        contract: Contract,
        request: ExtractionRequest,
        path: Path,
        *,
        relation: Relation | None = None,
        deleted_flag: str | None = None,
    ) -> tuple[Path, Manifest]:
        relation = relation or Relation(table=contract.table)
        [done] = extract(source, [Read(contract, request, relation, path, deleted_flag)])
        return Path(done.path), done.manifest

    # A complete read ---------------------------------------------------------------------------

    def test_a_full_read_equals_the_live_rows_of_the_source(
        self, db: Db, source: SnapshotSource, table: str, tmp_path: Path
    ) -> None:
        seeded = self.seed(db, table)
        contract = orders_contract(table)
        request = ExtractionRequest(table, "full", at(100))
        path, manifest = self.read(source, contract, request, tmp_path / "full.parquet")
        live = [row for row in seeded if not row["deleted"]]
        assert [(r["id"], r["name"], r["amount"]) for r in rows_of(path)] == [
            (r["id"], r["name"], r["amount"]) for r in live
        ]
        assert [r["updated_at"] for r in rows_of(path)] == [r["updated_at"] for r in live]
        assert [r["day"] for r in rows_of(path)] == [r["day"] for r in live]
        assert manifest.rows == len(live) and manifest.tombstones == 0
        assert manifest.produced_at >= request.until
        dogana_check(path, contract, manifest)

    def test_produced_at_is_the_source_clock_before_the_read_and_not_before_until(
        self, db: Db, source: SnapshotSource, table: str, tmp_path: Path
    ) -> None:
        before = db.clock()
        until = before + timedelta(milliseconds=600)
        request = ExtractionRequest(table, "full", until)
        _, manifest = self.read(source, orders_contract(table), request, tmp_path / "f.parquet")
        after = db.clock()
        assert until <= manifest.produced_at <= after

    def test_a_boundary_the_source_has_not_reached_fails_clearly(
        self, source: SnapshotSource, table: str, tmp_path: Path
    ) -> None:
        source.max_wait = timedelta(milliseconds=200)
        request = ExtractionRequest(table, "full", datetime.now(UTC) + timedelta(hours=1))
        with pytest.raises(SourceNotReady, match="before the request's boundary"):
            self.read(source, orders_contract(table), request, tmp_path / "never.parquet")
        assert not (tmp_path / "never.parquet").exists()

    # One snapshot ------------------------------------------------------------------------------

    def test_a_writer_committing_during_the_read_is_not_seen_and_is_after_produced_at(
        self, db: Db, source: SnapshotSource, table: str, tmp_path: Path
    ) -> None:
        self.seed(db, table)
        contract = orders_contract(table)
        request = ExtractionRequest(table, "full", at(100))
        reads = [Read(contract, request, Relation(table=table), tmp_path / "during.parquet")]
        with source.snapshot(request.until) as snapshot:
            # Another connection commits while the snapshot is open, before any row is read:
            # a row stamped by the source's clock, an update and a delete.
            late = {"id": 200, "day": day(1), "name": "late", "deleted": False, "lsn": 200}
            self.put(db, table, {**late, "updated_at": db.clock()})
            db.execute(f"UPDATE {db.quote(table)} SET name = 'changed' WHERE id = 3")
            db.execute(f"DELETE FROM {db.quote(table)} WHERE id = 2")
            [done] = read_all(snapshot, reads)
        rows = {r["id"]: r for r in rows_of(done.path)}
        assert 200 not in rows, "a row committed after the snapshot was taken is in the read"
        assert rows[3]["name"] == "order 3", "an update committed after the snapshot is seen"
        assert 2 in rows, "a delete committed after the snapshot is seen"
        [(stamped,)] = db.execute(f"SELECT updated_at FROM {db.quote(table)} WHERE id = 200")
        assert as_utc(stamped) > done.manifest.produced_at, (
            "the row the read misses must be provably after produced_at"
        )
        dogana_check(done.path, contract, done.manifest)

    def test_the_read_writes_nothing(
        self, db: Db, source: SnapshotSource, table: str, tmp_path: Path
    ) -> None:
        with source.snapshot(at(0)) as snapshot:
            cursor = snapshot.connection.cursor()
            with pytest.raises(Exception, match=r"(?i)read.only|readonly|query_only"):
                cursor.execute(f"DELETE FROM {db.quote(table)}")

    def test_tables_read_together_share_one_snapshot_and_one_produced_at(
        self, db: Db, source: SnapshotSource, table: str, tmp_path: Path
    ) -> None:
        other = f"{table}_lines"
        self._create(other)
        self.seed(db, table)
        self.seed(db, other)
        until = at(100)
        reads = [
            Read(
                orders_contract(name),
                ExtractionRequest(name, "full", until),
                Relation(table=name),
                tmp_path / f"{name}.parquet",
            )
            for name in (table, other)
        ]
        with source.snapshot(until) as snapshot:
            # A transaction that touches both tables commits after the snapshot: neither shows it.
            connection = db.connect()
            try:
                cursor = connection.cursor()
                for name in (table, other):
                    cursor.execute(f"DELETE FROM {db.quote(name)} WHERE id = 1")
                connection.commit()
            finally:
                connection.close()
            first, second = read_all(snapshot, reads)
        assert first.manifest.produced_at == second.manifest.produced_at
        assert 1 in {r["id"] for r in rows_of(first.path)}
        assert 1 in {r["id"] for r in rows_of(second.path)}
        for done, read in zip((first, second), reads, strict=True):
            dogana_check(done.path, read.contract, done.manifest)

    def test_commits_racing_the_snapshot_never_make_produced_at_untruthful(
        self, db: Db, source: SnapshotSource, table: str, tmp_path: Path
    ) -> None:
        """A writer commits rows as fast as it can while reads are taken. Every row whose commit
        returned before produced_at is in the read; where the database lets the clock reading
        and the snapshot be proven one instant (not MariaDB), no row stamped after it is."""
        stop = threading.Event()
        committed: dict[int, datetime] = {}  # id -> the source's clock after its commit returned

        def writer() -> None:
            n = 1000
            while not stop.is_set():
                n += 1
                row = {"id": n, "day": day(0), "name": "racing", "deleted": False, "lsn": n}
                self.put(db, table, {**row, "updated_at": db.clock()})
                committed[n] = db.clock()

        thread = threading.Thread(target=writer, daemon=True)
        thread.start()
        reads = []
        deadline = time.monotonic() + 30
        try:
            attempt = 0
            while attempt < 5 or (len(committed) < 30 and time.monotonic() < deadline):
                attempt += 1
                request = ExtractionRequest(table, "full", at(100))
                path = tmp_path / f"race-{attempt}.parquet"
                _, manifest = self.read(source, orders_contract(table), request, path)
                reads.append((manifest.produced_at, rows_of(path)))
        finally:
            stop.set()
            thread.join(timeout=30)
        assert len(committed) > 5, "the writer committed too little while the reads ran"
        for produced_at, rows in reads:
            seen = {r["id"] for r in rows}
            missed = [n for n, after in committed.items() if after <= produced_at and n not in seen]
            assert not missed, f"rows committed before produced_at are missing: {missed}"
            if self.closes_the_gap:
                ahead = [r["id"] for r in rows if as_utc(r["updated_at"]) > produced_at]
                assert not ahead, f"rows stamped after produced_at are in the read: {ahead}"

    closes_the_gap = True

    # Changes by timestamp ----------------------------------------------------------------------

    def test_a_timestamp_read_holds_exactly_the_rows_changed_in_since_produced_at(
        self, db: Db, source: SnapshotSource, table: str, tmp_path: Path
    ) -> None:
        self.seed(db, table)  # updated_at at(1) .. at(8); id 5 is soft-deleted
        future = datetime.now(UTC) + timedelta(days=3650)
        self.put(
            db,
            table,
            {
                "id": 99,
                "day": day(0),
                "name": "stamped ahead",
                "updated_at": future,
                "deleted": False,
                "lsn": 99,
            },
        )
        contract = orders_contract(table)
        request = ExtractionRequest(table, "changes", at(100), since=at(3))
        path, manifest = self.read(source, contract, request, tmp_path / "changes.parquet")
        rows = rows_of(path)
        assert [r["id"] for r in rows] == [4, 5, 6, 7, 8]  # (since, produced_at]: not 3, not 99
        assert [r["id"] for r in rows if r["deleted"]] == [5]
        assert (manifest.rows, manifest.tombstones) == (4, 1)
        assert manifest.since == at(3)
        dogana_check(path, contract, manifest)

    def test_a_timestamp_read_without_tombstones_leaves_flagged_rows_out(
        self, db: Db, source: SnapshotSource, table: str, tmp_path: Path
    ) -> None:
        self.seed(db, table)
        contract = orders_contract(table)
        request = ExtractionRequest(table, "changes_live", at(100), since=at(3))
        path, manifest = self.read(source, contract, request, tmp_path / "live.parquet")
        assert [r["id"] for r in rows_of(path)] == [4, 6, 7, 8]
        assert (manifest.rows, manifest.tombstones) == (4, 0)
        dogana_check(path, contract, manifest)

    def test_tombstones_from_a_soft_delete_flag_under_another_name(
        self, db: Db, source: SnapshotSource, table: str, tmp_path: Path
    ) -> None:
        self.seed(db, table)
        contract = orders_contract(table, deleted="is_deleted")
        request = ExtractionRequest(table, "changes", at(100), since=at(0))
        path, manifest = self.read(
            source, contract, request, tmp_path / "flag.parquet", deleted_flag="deleted"
        )
        rows = rows_of(path)
        assert "deleted" not in rows[0] and [r["id"] for r in rows if r["is_deleted"]] == [5]
        assert (manifest.rows, manifest.tombstones) == (7, 1)
        dogana_check(path, contract, manifest)

    def test_a_null_flag_is_a_live_row(
        self, db: Db, source: SnapshotSource, table: str, tmp_path: Path
    ) -> None:
        self.put(db, table, {"id": 1, "day": day(0), "updated_at": at(1), "deleted": None})
        contract = orders_contract(table)
        request = ExtractionRequest(table, "changes", at(100), since=at(0))
        path, manifest = self.read(source, contract, request, tmp_path / "null.parquet")
        assert rows_of(path)[0]["deleted"] is False and manifest.rows == 1
        dogana_check(path, contract, manifest)

    def test_a_source_without_the_flag_holds_live_rows_only(
        self, db: Db, source: SnapshotSource, table: str, tmp_path: Path
    ) -> None:
        """A read may omit the deleted column: every row is live. A named flag must exist."""
        plain = f"{table}_plain"
        db.execute(
            f"CREATE TABLE {db.quote(plain)} (id {db.ddl['key']} PRIMARY KEY, "
            f"day {db.ddl['date']}, updated_at {db.ddl['datetime']})"
        )
        try:
            db.execute(
                f"INSERT INTO {db.quote(plain)} VALUES ({db.placeholder}, {db.placeholder}, "
                f"{db.placeholder})",
                (1, db.bind(day(0)), db.bind(at(1))),
            )
            contract = orders_contract(plain)
            request = ExtractionRequest(plain, "changes", at(100), since=at(0))
            path, manifest = self.read(source, contract, request, tmp_path / "plain.parquet")
            assert rows_of(path) == [{"id": 1, "day": day(0), "updated_at": at(1)}]
            assert (manifest.rows, manifest.tombstones) == (1, 0)
            dogana_check(path, contract, manifest)
            with pytest.raises(UnsupportedRead, match="is_gone"):
                self.read(
                    source, contract, request, tmp_path / "named.parquet", deleted_flag="is_gone"
                )
        finally:
            db.execute(f"DROP TABLE {db.quote(plain)}")

    def test_a_keyless_append_reads_the_events_after_since(
        self, db: Db, source: SnapshotSource, table: str, tmp_path: Path
    ) -> None:
        self.seed(db, table)
        contract = events_contract(table)
        request = ExtractionRequest(table, "append", at(100), since=at(6))
        path, manifest = self.read(source, contract, request, tmp_path / "events.parquet")
        # Keyless: the soft-delete flag is just a column, every row is an event.
        assert [r["id"] for r in rows_of(path)] == [7, 8] and manifest.rows == 2
        dogana_check(path, contract, manifest)

    # Windows ---------------------------------------------------------------------------------

    def test_a_window_read_holds_the_live_rows_inside_the_closed_window(
        self, db: Db, source: SnapshotSource, table: str, tmp_path: Path
    ) -> None:
        seeded = self.seed(db, table)
        contract = orders_contract(table)
        request = ExtractionRequest(table, "window", at(100), window=(day(1), day(2)))
        path, manifest = self.read(source, contract, request, tmp_path / "window.parquet")
        expected = [r["id"] for r in seeded if day(1) <= r["day"] <= day(2) and not r["deleted"]]
        assert [r["id"] for r in rows_of(path)] == expected
        assert manifest.window == (day(1), day(2))
        dogana_check(path, contract, manifest)

    def test_an_injection_attempt_in_a_bound_stays_a_value(
        self, db: Db, source: SnapshotSource, table: str, tmp_path: Path
    ) -> None:
        hostile = "x' OR '1'='1"
        self.put(
            db,
            table,
            {"id": 1, "day": day(0), "plant": hostile, "updated_at": at(1), "deleted": False},
            {"id": 2, "day": day(0), "plant": "north", "updated_at": at(1), "deleted": False},
        )
        contract = plants_contract(table)
        request = ExtractionRequest(table, "window", at(100), window=(hostile, hostile))
        path, manifest = self.read(source, contract, request, tmp_path / "hostile.parquet")
        assert [r["id"] for r in rows_of(path)] == [1]
        dogana_check(path, contract, manifest)

    def test_a_string_window_compares_by_code_point(
        self, db: Db, source: SnapshotSource, table: str, tmp_path: Path
    ) -> None:
        # In code-point order "B" < "a" < "b"; a case-insensitive collation would put "B" inside.
        for n, plant in enumerate(["B", "a", "ab", "b", "é"], start=1):
            self.put(
                db,
                table,
                {"id": n, "day": day(0), "plant": plant, "updated_at": at(1), "deleted": False},
            )
        contract = plants_contract(table)
        request = ExtractionRequest(table, "window", at(100), window=("a", "b"))
        path, manifest = self.read(source, contract, request, tmp_path / "order.parquet")
        assert sorted(r["plant"] for r in rows_of(path)) == ["a", "ab", "b"]
        dogana_check(path, contract, manifest)

    # A DAG author's SQL -----------------------------------------------------------------------

    def test_sql_reads_with_the_request_bounds_bound_as_parameters(
        self, db: Db, source: SnapshotSource, table: str, tmp_path: Path
    ) -> None:
        self.seed(db, table)
        contract = orders_contract(table)
        request = ExtractionRequest(table, "changes", at(5), since=at(2))
        cursor = "dogana_utc(updated_at)" if source.dialect.name == "sqlite" else "updated_at"
        sql = (
            f"SELECT id, day, name, updated_at, deleted FROM {db.quote(table)} "
            f"WHERE {cursor} > {source.placeholder('since')} "
            f"AND {cursor} <= {source.placeholder('until')}"
        )
        path, manifest = self.read(
            source, contract, request, tmp_path / "sql.parquet", relation=Relation(sql=sql)
        )
        assert [r["id"] for r in rows_of(path)] == [3, 4, 5]
        assert set(rows_of(path)[0]) == {"id", "day", "name", "updated_at", "deleted"}
        dogana_check(path, contract, manifest)

    def test_sql_with_an_injection_attempt_in_a_bound_keeps_it_a_value(
        self, db: Db, source: SnapshotSource, table: str, tmp_path: Path
    ) -> None:
        hostile = "x'; DROP TABLE " + table + "; --"
        self.put(
            db,
            table,
            {"id": 1, "day": day(0), "plant": hostile, "updated_at": at(1), "deleted": False},
            {"id": 2, "day": day(0), "plant": "north", "updated_at": at(1), "deleted": False},
        )
        contract = plants_contract(table)
        request = ExtractionRequest(table, "window", at(100), window=(hostile, hostile))
        sql = (
            f"SELECT id, plant FROM {db.quote(table)} "
            f"WHERE plant = {source.placeholder('window_low')}"
        )
        path, manifest = self.read(
            source, contract, request, tmp_path / "hostile.parquet", relation=Relation(sql=sql)
        )
        assert rows_of(path) == [{"id": 1, "plant": hostile}]
        assert db.execute(f"SELECT count(*) FROM {db.quote(table)}") == [(2,)]
        dogana_check(path, contract, manifest)

    def test_a_table_read_delivers_the_columns_named_in_their_order(
        self, db: Db, source: SnapshotSource, table: str, tmp_path: Path
    ) -> None:
        self.seed(db, table)
        contract = orders_contract(table)
        request = ExtractionRequest(table, "changes", at(100), since=at(6))
        relation = Relation(table=table, columns=("updated_at", "id", "name", "day"))
        path, manifest = self.read(
            source, contract, request, tmp_path / "columns.parquet", relation=relation
        )
        # A tombstone read carries the soft-delete flag even when the list leaves it out.
        assert pq.read_schema(path).names == ["updated_at", "id", "name", "day", "deleted"]
        assert [r["id"] for r in rows_of(path)] == [7, 8]
        dogana_check(path, contract, manifest)

    def test_sql_cannot_widen_the_interval_the_manifest_declares(
        self, db: Db, source: SnapshotSource, table: str, tmp_path: Path
    ) -> None:
        """The shape's filters wrap the author's query, so cursor_inside holds whatever it says."""
        self.seed(db, table)
        contract = orders_contract(table)
        request = ExtractionRequest(table, "changes", at(100), since=at(6))
        sql = f"SELECT * FROM {db.quote(table)}"
        path, manifest = self.read(
            source, contract, request, tmp_path / "wide.parquet", relation=Relation(sql=sql)
        )
        assert [r["id"] for r in rows_of(path)] == [7, 8]
        dogana_check(path, contract, manifest)

    # Sequences -------------------------------------------------------------------------------

    def test_a_sequence_read_holds_positions_in_since_generation(
        self, db: Db, source: SnapshotSource, table: str, tmp_path: Path
    ) -> None:
        self.seed(db, table)  # lsn 1 .. 8, id 5 flagged
        contract = log_contract(table)
        request = ExtractionRequest(table, "log", at(100), since=3, issue_position=True)
        path, manifest = self.read(source, contract, request, tmp_path / "log.parquet")
        assert manifest.generation == 8 and manifest.since == 3
        assert [r["id"] for r in rows_of(path)] == [4, 5, 6, 7, 8]
        assert (manifest.rows, manifest.tombstones) == (4, 1)
        dogana_check(path, contract, manifest)

    def test_an_empty_sequence_read_declares_its_since_as_generation(
        self, db: Db, source: SnapshotSource, table: str, tmp_path: Path
    ) -> None:
        self.seed(db, table)
        contract = log_contract(table)
        request = ExtractionRequest(table, "log", at(100), since=8, issue_position=True)
        path, manifest = self.read(source, contract, request, tmp_path / "empty.parquet")
        assert manifest.generation == 8 and (manifest.rows, manifest.tombstones) == (0, 0)
        dogana_check(path, contract, manifest)

    def test_a_full_read_issues_the_position_the_next_feed_starts_from(
        self, db: Db, source: SnapshotSource, table: str, tmp_path: Path
    ) -> None:
        self.seed(db, table)
        contract = log_contract(table)
        request = ExtractionRequest(table, "full", at(100), issue_position=True)
        path, manifest = self.read(source, contract, request, tmp_path / "position.parquet")
        assert manifest.generation == 8 and manifest.rows == 7
        dogana_check(path, contract, manifest)

    # Streaming -------------------------------------------------------------------------------

    def test_rows_stream_in_batches_into_row_groups(
        self, db: Db, source: SnapshotSource, table: str, tmp_path: Path
    ) -> None:
        self.seed(db, table)
        source.fetch_rows = 3
        contract = orders_contract(table)
        request = ExtractionRequest(table, "changes", at(100), since=at(0))
        [done] = extract(
            source,
            [Read(contract, request, Relation(table=table), tmp_path / "small.parquet")],
            row_group_rows=2,
        )
        assert pq.ParquetFile(done.path).num_row_groups >= 3
        assert (done.manifest.rows, done.manifest.tombstones) == (7, 1)
        dogana_check(done.path, contract, done.manifest)

    def test_an_empty_read_writes_an_empty_file_that_passes_its_checks(
        self, db: Db, source: SnapshotSource, table: str, tmp_path: Path
    ) -> None:
        contract = orders_contract(table)
        request = ExtractionRequest(table, "changes", at(100), since=at(0))
        path, manifest = self.read(source, contract, request, tmp_path / "empty.parquet")
        assert rows_of(path) == [] and (manifest.rows, manifest.tombstones) == (0, 0)
        dogana_check(path, contract, manifest)


def as_utc(value: Any) -> datetime:
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class GapRule:
    """A commit between the clock reading and the snapshot: retried where it can be seen."""

    def test_a_commit_between_the_clock_reading_and_the_snapshot(
        self, db: Db, source: SnapshotSource, table: str, tmp_path: Path
    ) -> None:
        real_begin = source.begin
        stamps: list[datetime] = []

        def begin_after_a_commit(connection: Any) -> Any:
            if not stamps:
                stamps.append(db.clock())
                row = {"id": 1, "day": day(0), "name": "in the gap", "deleted": False, "lsn": 1}
                self.put(db, table, {**row, "updated_at": stamps[0]})  # type: ignore[attr-defined]
            return real_begin(connection)

        source.begin = begin_after_a_commit  # type: ignore[method-assign]
        contract = orders_contract(table)
        request = ExtractionRequest(table, "full", at(100))
        [done] = extract(
            source, [Read(contract, request, Relation(table=table), tmp_path / "gap.parquet")]
        )
        assert [r["id"] for r in rows_of(done.path)] == [1]
        if getattr(self, "closes_the_gap", True):
            # The snapshot was taken again, with a later clock reading: the commit is before it.
            assert done.manifest.produced_at > stamps[0]
        else:
            # The documented gap: the snapshot shows a commit stamped after produced_at.
            assert done.manifest.produced_at < stamps[0]


class BusySourceRule:
    """A source that commits between every clock reading and its snapshot fails clearly."""

    def test_a_source_that_never_settles_fails_after_the_attempts_allowed(
        self, db: Db, source: SnapshotSource, table: str, tmp_path: Path
    ) -> None:
        real_begin = source.begin
        commits = iter(range(1, 1000))

        def begin_after_a_commit(connection: Any) -> Any:
            n = next(commits)
            row = {"id": n, "day": day(0), "name": "busy", "deleted": False, "lsn": n}
            self.put(db, table, {**row, "updated_at": db.clock()})  # type: ignore[attr-defined]
            return real_begin(connection)

        source.begin = begin_after_a_commit  # type: ignore[method-assign]
        source.settle_attempts = 3
        request = ExtractionRequest(table, "full", at(100))
        read = Read(orders_contract(table), request, Relation(table=table), tmp_path / "x.parquet")
        if not getattr(self, "closes_the_gap", True):
            # Nothing is compared there (see GapRule): the first attempt is taken as it is.
            extract(source, [read])
            assert next(commits) == 2
            return
        with pytest.raises(SnapshotError, match="every one of 3 attempts saw a commit"):
            extract(source, [read])
        assert next(commits) == 4, "three attempts, each taken again after a commit"
        assert not (tmp_path / "x.parquet").exists()


class SnapshotSourceConformance(SourceConformance, GapRule, BusySourceRule):
    """The whole suite: what a database's test class derives from."""
