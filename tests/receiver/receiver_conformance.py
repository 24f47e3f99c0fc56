"""The receiver's conformance suite: one test class every database's test module inherits.

Source activation's cases are in activation_conformance.py, lineage edges' in
lineage_conformance.py, held deliveries' in
hold_conformance.py: classes this one inherits.

A subclass sets ``dialect`` and provides a ``connect`` fixture (a factory of new DB-API
connections to its real database). Nothing here skips: a store that cannot honestly pass a check
fails it. Every test uses its own store prefix and table names, so runs never collide.
"""

from __future__ import annotations

import json
import threading
import tracemalloc
import uuid
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import pytest
from activation_conformance import ActivationConformance
from hold_conformance import HoldConformance
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lineage_conformance import LineageConformance
from receiver_deliveries import (
    NOW,
    SCHEMA,
    EventsSource,
    LogSource,
    Source,
    at,
    day,
    events_contract,
    orders_contract,
    sequence_contract,
    sha256,
    write,
    write_many,
)

from dogana_core.contract import column_hash
from dogana_core.errors import InconsistentPublication, InvalidContract
from dogana_core.gate import Check, Outcome, Receipt
from dogana_core.group import Group
from dogana_core.ledger import Ledger
from dogana_core.plan import ActionKind
from dogana_core.planner import Requirement, plan_delivery
from dogana_provider.checks import expectations
from dogana_provider.checks.expectations import Expectations
from dogana_provider.delivery.files import BATCH_ROWS
from dogana_provider.dialects import Dialect, execute
from dogana_provider.receiver import Decision, Receiver, UnknownTable
from dogana_provider.receiver.steps import STAGING_PREFIX
from dogana_provider.receiver.transactions import transaction

Connect = Callable[[], Any]
THREADS_TIMEOUT = 60  # seconds two concurrent publishers may take; a hang fails the test


REFUSALS: dict[str, tuple[list[Any], dict[str, Any], str]] = {
    # case: (rows of the file, manifest fields, the check that must fail)
    "bad count": ([(1, 1, at(3))], {"rows": 2}, "rows"),
    "null key": ([(None, 1, at(3))], {}, "key_not_null"),
    "duplicated key": ([(1, 1, at(3)), (1, 2, at(3))], {}, "key_unique"),
    "cursor outside the interval": ([(1, 1, at(9))], {}, "cursor_inside"),
    "null cursor on a live row": ([(1, 1, None)], {}, "cursor_inside"),
    "wrong content hash": ([(1, 1, at(3))], {"content_hash": "0" * 64}, "content_hash"),
}


DAYS_TO_YEAR_10000 = 2_932_897  # 1970-01-01 to 10000-01-01
UNSTORABLE: dict[str, pa.Array] = {
    # case: a column of values no database may store for dogana (years 1 to 9999 only)
    "a date in year 10000": pa.array([DAYS_TO_YEAR_10000], pa.date32()),
    "a datetime in year 10000": pa.array(
        [DAYS_TO_YEAR_10000 * 86_400_000_000], pa.timestamp("us", tz="UTC")
    ),
}


MISNAMED: dict[str, str] = {
    # case: a column name beside the orders columns that no receiver may create
    "empty": "",
    "a space": "total due",
    "unicode": "montant_dû",
    "a double quote": 'say "hi"',
    "a backtick": "a`b",
    "a single quote": "o'clock",
    "64 characters": "x" * 64,
    "a leading digit": "1st",
    "the staging row number": "_dogana_row",
    "a case twin of another file column": "NAME",
}
FUZZED_NAMES = st.one_of(
    st.sampled_from(
        [
            *("", "select", "order", "id", "ID", "Name", "NAME", "_dogana_row", "x" * 63),
            *("x" * 64, 'a"b', "a`b", "a'b", "a b", "1a", "ü", "名前", "a;DROP TABLE t"),
        ]
    ),
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,70}", fullmatch=True),
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=70),
)
"""Column and table names a hostile sender might use: every one is refused by name or taken."""
REFUSED_BY_NAME = {"column_names", "column_types"}
FUZZ = settings(
    max_examples=25,
    deadline=None,
    # Each database's subclass runs the fuzz tests (differing executors); each example makes its
    # own tables, so the function-scoped receiver may serve them all.
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.differing_executors,
    ],
)

NAMED: tuple[str, ...] = ("select", "order", "from", "table", "x" * 63, "_under")
"""Column names every receiver creates: reserved words are quoted, 63 characters fit all."""


def one_changed_row(columns: dict[str, pa.Array]) -> pa.Table:
    """Order 1, changed at 3h, with these columns after the orders columns."""
    table = pa.table(
        {
            "id": pa.array([1], pa.int64()),
            "day": pa.array([day(1)], pa.date32()),
            "name": pa.array(["x"]),
            "updated_at": pa.array([at(3)], pa.timestamp("us", tz="UTC")),
            "deleted": pa.array([False]),
        }
    )
    for name, values in columns.items():
        table = table.append_column(pa.field(name, values.type), values)
    return table


def a_hook_selects_the_database(
    hook: Any, dialect: Dialect, uid: str, tmp_path: Path, drop_tables: Callable[[], None]
) -> None:
    """A receiver made from a common-sql hook runs on the hook's database, then drops its tables."""
    receiver = Receiver.from_hook(hook, prefix=f"s{uid}", clock=lambda: NOW)
    assert receiver.dialect is dialect
    source = Source(f"orders_{uid}", tmp_path)
    receiver.register(source.contract)
    source.put(1, 1, "one", at(1))
    try:
        receipt = receiver.receive(*source.full(at(2)))
        assert receipt.outcome is Outcome.ACCEPTED, receipt.failed
        assert receiver.verify(source.table).head == receipt.publication_id
    finally:
        drop_tables()


class FaultyConnection:
    """A real connection whose cursor raises right after a statement containing ``needle`` ran.

    It injects an operational failure in the middle of a publication: the statement has already
    changed rows inside the transaction when the failure comes.
    """

    def __init__(
        self, connection: Any, needle: str, *, lose: bool = False, before: bool = False
    ) -> None:
        self._connection = connection
        self._needle = needle
        self._lose = lose
        self._before = before  # the process dies before the statement runs, not after

    def cursor(self) -> Any:
        return _FaultyCursor(self, self._connection.cursor())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)


class _FaultyCursor:
    def __init__(self, connection: FaultyConnection, cursor: Any) -> None:
        self._owner = connection
        self._cursor = cursor

    def execute(self, sql: str, params: Any = ()) -> Any:
        if self._owner._before and self._owner._needle in sql:
            self._owner._connection.close()
            raise ConnectionError(f"injected crash before: {sql[:60]}")
        result = self._cursor.execute(sql, params)
        if self._owner._needle in sql:
            if self._owner._lose:  # the connection is lost mid-transaction
                self._owner._connection.close()
            raise ConnectionError(f"injected fault after: {sql[:60]}")
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)


class ReceiverConformance(ActivationConformance, HoldConformance, LineageConformance):
    dialect: Dialect
    driver_error: type[Exception]
    """The DB-API driver's base error: a lost connection may surface as one."""
    unstorable: ClassVar[dict[str, pa.Array]] = {}
    """Values this database cannot store in their column's type, besides UNSTORABLE's."""

    # Fixtures --------------------------------------------------------------------------------

    @pytest.fixture
    def connect(self) -> Connect:  # pragma: no cover - every subclass overrides it
        raise NotImplementedError("a database's test module provides connect")

    @pytest.fixture
    def uid(self) -> str:
        return uuid.uuid4().hex[:10]

    @pytest.fixture
    def receiver(self, connect: Connect, uid: str) -> Receiver:
        return self.make(connect, uid)

    @pytest.fixture
    def source(self, receiver: Receiver, uid: str, tmp_path: Path) -> Source:
        source = Source(f"orders_{uid}", tmp_path)
        receiver.register(source.contract)
        return source

    def make(self, connect: Connect, uid: str) -> Receiver:
        return Receiver(connect, self.dialect, prefix=f"s{uid}", clock=lambda: NOW)

    # Helpers ---------------------------------------------------------------------------------

    def published(self, receiver: Receiver, table: str) -> dict[Any, tuple[str, str]]:
        with receiver.read(table) as snapshot:
            names = snapshot.columns
            rows = [dict(zip(names, row, strict=True)) for row in snapshot.rows]
        return {row["id"]: (row["name"], str(row["day"])[:10]) for row in rows}

    def state(self, receiver: Receiver, table: str) -> tuple[Any, ...]:
        """Everything a rejection must leave unchanged: rows, ledger, receipts before it."""
        with receiver.read(table) as snapshot:
            rows = sorted(tuple(map(str, row)) for row in snapshot.rows)
            ledger = snapshot.ledger
        return rows, ledger.identity, [r.identity for r in receiver.receipts(table)]

    def staging_left(self, receiver: Receiver, *manifests: Any) -> list[str]:
        """Staging tables still present for these manifests (named from their identities)."""
        if self.dialect.name == "sqlite":
            sql = "SELECT name FROM sqlite_master WHERE type = 'table'"
        else:
            sql = "SELECT table_name FROM information_schema.tables"
        connection = receiver.connect()
        try:
            cursor = connection.cursor()
            cursor.execute(sql)
            names = [str(row[0]) for row in cursor.fetchall()]
        finally:
            connection.close()
        prefixes = tuple(STAGING_PREFIX + m.identity[:16] for m in manifests)
        return [name for name in names if name.startswith(prefixes)]

    def assert_refused_changes_nothing(
        self, receiver: Receiver, table: str, before: tuple[Any, ...], receipt: Receipt
    ) -> None:
        """A refusal adds its own receipt and nothing else: rows, ledger and earlier receipts as
        they were, no staging table left, the stored ledger still the fold of the receipts."""
        assert receipt.outcome is Outcome.REJECTED
        after = self.state(receiver, table)
        assert after[:2] == before[:2] and after[2] == [*before[2], receipt.identity]
        assert self.staging_left(receiver, receipt.manifest) == []
        receiver.verify(table)

    def receive_verified(
        self, receiver: Receiver, table: str, delivery: tuple[Path, Any]
    ) -> tuple[Any, list[dict[str, Any]]]:
        """Receive an acceptable delivery, verify, and read back the ledger and rows as dicts."""
        receipt = receiver.receive(*delivery)
        assert receipt.outcome is Outcome.ACCEPTED, receipt.failed
        assert receiver.verify(table).head == receipt.publication_id
        with receiver.read(table) as snapshot:
            names = snapshot.columns
            rows = [dict(zip(names, row, strict=True)) for row in snapshot.rows]
        return snapshot.ledger, rows

    def publish_checked(
        self, receiver: Receiver, source: Source, delivery: tuple[Path, Any]
    ) -> Receipt:
        receipt = receiver.receive(*delivery)
        assert receipt.outcome is Outcome.ACCEPTED, [c for c in receipt.checks if not c.passed]
        verified = receiver.verify(source.table)
        assert verified.head == receipt.publication_id
        assert self.published(receiver, source.table) == source.expected()
        return receipt

    # Every action kind -----------------------------------------------------------------------

    def test_replace_all_publishes_the_full_read(self, receiver: Receiver, source: Source) -> None:
        for id_ in range(1, 6):
            source.put(id_, id_, f"n{id_}", at(1))
        receipt = self.publish_checked(receiver, source, source.full(at(2)))
        assert [a.operation for a in receipt.transition.plan.actions] == [ActionKind.REPLACE_ALL]
        source.delete(3)
        source.put(2, 2, "changed", at(3))
        self.publish_checked(receiver, source, source.full(at(4)))
        assert receiver.verify(source.table).publications == 2

    def test_awkward_values_are_published_as_the_file_holds_them(
        self, receiver: Receiver, source: Source, tmp_path: Path
    ) -> None:
        names = ["tab\there", "line\nbreak\r", "back\\slash \\N", "", None, "ü€😀", "trailing "]
        rows = [
            {"id": i, "day": day(1), "name": name, "updated_at": at(1), "deleted": False}
            for i, name in enumerate(names)
        ]
        path = write(tmp_path, rows)
        receipt = receiver.receive(path, source.contract.manifest("full", at(2), rows=len(rows)))
        assert receipt.outcome is Outcome.ACCEPTED, receipt.failed
        published = self.published(receiver, source.table)
        assert {id_: name for id_, (name, _) in published.items()} == dict(enumerate(names))

    def test_a_csv_delivery_is_published_as_a_parquet_one(
        self, receiver: Receiver, source: Source, tmp_path: Path
    ) -> None:
        for id_ in range(1, 6):
            source.put(id_, id_, f"n{id_}, with a comma", at(1))
        parquet, manifest = source.full(at(2))
        path = tmp_path / "full.csv"
        pa_csv.write_csv(pq.read_table(parquet), path)
        receipt = receiver.receive(path, manifest.replace(content_hash=sha256(path)))
        assert receipt.outcome is Outcome.ACCEPTED, receipt.failed
        assert self.published(receiver, source.table) == source.expected()
        receiver.verify(source.table)

    def test_replace_window_replaces_its_window_only(
        self, receiver: Receiver, source: Source
    ) -> None:
        for id_ in range(1, 9):
            source.put(id_, id_, f"n{id_}", at(1))
        self.publish_checked(receiver, source, source.full(at(2)))
        source.delete(4)
        source.put(5, 5, "changed", at(3))
        source.put(20, 4, "new", at(3))
        receipt = self.publish_checked(receiver, source, source.window(3, 5, at(4)))
        action = receipt.transition.plan.actions[0]
        assert action.operation is ActionKind.REPLACE_WINDOW

    def test_a_window_carrying_a_key_published_outside_it_is_refused(
        self, receiver: Receiver, source: Source, tmp_path: Path
    ) -> None:
        for id_ in range(1, 5):
            source.put(id_, id_, f"n{id_}", at(1))
        self.publish_checked(receiver, source, source.full(at(2)))
        before = self.state(receiver, source.table)
        # Key 1 is published on day 1; this file moves it into the window [3, 4].
        rows = [
            {"id": 1, "day": day(3), "name": "moved", "updated_at": at(3), "deleted": False},
            {"id": 3, "day": day(3), "name": "n3", "updated_at": at(1), "deleted": False},
            {"id": 4, "day": day(4), "name": "n4", "updated_at": at(1), "deleted": False},
        ]
        path = write(tmp_path, rows)
        manifest = source.contract.manifest("window", at(4), window=(day(3), day(4)), rows=3)
        receipt = receiver.receive(path, manifest)
        assert receipt.outcome is Outcome.REJECTED
        assert [c.name for c in receipt.failed] == ["key_not_published_outside_window"]
        after = self.state(receiver, source.table)
        assert after[:2] == before[:2] and after[2][:-1] == before[2]
        receiver.verify(source.table)

    def test_changes_upsert_and_tombstone(self, receiver: Receiver, source: Source) -> None:
        for id_ in range(1, 6):
            source.put(id_, id_, f"n{id_}", at(1))
        self.publish_checked(receiver, source, source.full(at(2)))
        source.put(2, 2, "changed", at(3))
        source.put(9, 9, "new", at(3))
        source.delete(4)
        receipt = self.publish_checked(receiver, source, source.changes(at(2), at(4), (4,)))
        kinds = [a.operation for a in receipt.transition.plan.actions]
        assert kinds == [ActionKind.UPSERT, ActionKind.TOMBSTONE]
        # The deleted column is never published.
        with receiver.read(source.table) as snapshot:
            assert "deleted" not in snapshot.columns
            list(snapshot.rows)

    def test_keyless_append_and_window_replacement(
        self, receiver: Receiver, uid: str, tmp_path: Path
    ) -> None:
        contract = events_contract(f"events_{uid}")
        receiver.register(contract)
        schema = pa.schema([("day", pa.date32()), ("what", pa.string())])
        first = [
            {"day": day(1), "what": "a"},
            {"day": day(1), "what": "a"},
            {"day": day(2), "what": "b"},
        ]
        path = write(tmp_path, first, schema)
        manifest = contract.manifest("append", at(2), since=contract.start_at, rows=3)
        receipt = receiver.receive(path, manifest)
        assert receipt.outcome is Outcome.ACCEPTED, receipt.failed
        assert [a.operation for a in receipt.transition.plan.actions] == [ActionKind.APPEND]
        second = [{"day": day(2), "what": "c"}]
        path = write(tmp_path, second, schema)
        receipt = receiver.receive(path, contract.manifest("append", at(3), since=at(2), rows=1))
        assert receipt.outcome is Outcome.ACCEPTED, receipt.failed
        # Keyless replacement matches no keys: the window [2, 2] is replaced, day 1 kept twice.
        third = [{"day": day(2), "what": "d"}, {"day": day(2), "what": "d"}]
        path = write(tmp_path, third, schema)
        manifest = contract.manifest("window", at(4), window=(day(2), day(2)), rows=2)
        receipt = receiver.receive(path, manifest)
        assert receipt.outcome is Outcome.ACCEPTED, receipt.failed
        with receiver.read(contract.table) as snapshot:
            rows = sorted((str(row[0])[:10], row[1]) for row in snapshot.rows)
        assert rows == [
            ("2026-01-02", "a"),
            ("2026-01-02", "a"),
            ("2026-01-03", "d"),
            ("2026-01-03", "d"),
        ]
        assert receiver.verify(contract.table).publications == 3

    def test_sequence_deliveries(self, receiver: Receiver, uid: str, tmp_path: Path) -> None:

        schema = pa.schema(
            [("id", pa.int64()), ("lsn", pa.int64()), ("v", pa.string()), ("deleted", pa.bool_())]
        )
        contract = sequence_contract(f"seq_{uid}")
        receiver.register(contract)
        rows = [{"id": i, "lsn": i, "v": f"v{i}", "deleted": False} for i in (1, 2, 3)]
        path = write(tmp_path, rows, schema)
        receipt = receiver.receive(path, contract.manifest("full", at(1), rows=3, generation=3))
        assert receipt.outcome is Outcome.ACCEPTED, receipt.failed
        log = [{"id": 2, "lsn": 4, "v": "v2b", "deleted": False}, {"id": 3, "deleted": True}]
        path = write(tmp_path, log, schema)
        manifest = contract.manifest(
            "log", at(2), since=3, generation=5, rows=1, tombstones=1, content_hash=sha256(path)
        )
        receipt = receiver.receive(path, manifest)
        assert receipt.outcome is Outcome.ACCEPTED, receipt.failed
        with receiver.read(contract.table) as snapshot:
            names = snapshot.columns
            got = sorted((row[names.index("id")], row[names.index("v")]) for row in snapshot.rows)
        assert got == [(1, "v1"), (2, "v2b")]
        assert receiver.ledger(contract.table).generation == 5
        receiver.verify(contract.table)

    # Replay ----------------------------------------------------------------------------------

    def test_replay_without_content_hash_never_reads_the_rows(
        self, receiver: Receiver, source: Source, tmp_path: Path
    ) -> None:
        for id_ in range(1, 4):
            source.put(id_, id_, f"n{id_}", at(1))
        path, manifest = source.full(at(2))
        manifest = manifest.replace(content_hash=None)
        first = receiver.receive(path, manifest)
        assert first.outcome is Outcome.ACCEPTED
        before = self.state(receiver, source.table)
        # Other bytes under the same manifest: without content_hash it is the same delivery.
        other = write(tmp_path, [{"id": 99, "day": day(1), "name": "x", "deleted": False}])
        again = receiver.receive(other, manifest)
        assert again.outcome is Outcome.REPLAYED
        assert again.identity == first.identity
        assert self.state(receiver, source.table) == before
        # Not even the bytes are read: a file that is gone is answered the same.
        gone = receiver.receive(tmp_path / "gone.parquet", manifest)
        assert gone.outcome is Outcome.REPLAYED and gone.identity == first.identity

    def test_replay_with_content_hash_checks_the_bytes(
        self, receiver: Receiver, source: Source, tmp_path: Path
    ) -> None:
        for id_ in range(1, 4):
            source.put(id_, id_, f"n{id_}", at(1))
        path, manifest = source.full(at(2))
        first = receiver.receive(path, manifest)
        before = self.state(receiver, source.table)
        again = receiver.receive(path, manifest)
        assert again.outcome is Outcome.REPLAYED and again.identity == first.identity
        assert self.state(receiver, source.table) == before
        other = write(tmp_path, [{"id": 99, "day": day(1), "name": "x", "deleted": False}])
        refused = receiver.receive(other, manifest)
        assert refused.outcome is Outcome.REJECTED
        assert [c.name for c in refused.failed] == ["content_hash"]
        after = self.state(receiver, source.table)
        assert after[:2] == before[:2] and after[2][:-1] == before[2]
        assert receiver.verify(source.table).receipts == 2

    # Rejections ------------------------------------------------------------------------------

    def test_a_rejected_delivery_leaves_everything_unchanged(
        self, receiver: Receiver, source: Source, tmp_path: Path
    ) -> None:
        for id_ in range(1, 4):
            source.put(id_, id_, f"n{id_}", at(1))
        self.publish_checked(receiver, source, source.full(at(2)))
        before = self.state(receiver, source.table)
        duplicated = [
            {"id": 1, "day": day(1), "name": "a", "updated_at": at(3), "deleted": False},
            {"id": 1, "day": day(1), "name": "b", "updated_at": at(3), "deleted": False},
        ]
        path = write(tmp_path, duplicated)
        manifest = source.contract.manifest("changes", at(4), since=at(2), rows=3)
        receipt = receiver.receive(path, manifest)
        assert receipt.outcome is Outcome.REJECTED
        assert {c.name for c in receipt.failed} == {"rows", "key_unique"}
        after = self.state(receiver, source.table)
        assert after[:2] == before[:2] and after[2][:-1] == before[2]
        assert receiver.receipts(source.table)[-1] == receipt
        assert receiver.verify(source.table).receipts == 2
        assert self.staging_left(receiver, manifest) == []

    @pytest.mark.parametrize("case", sorted(REFUSALS))
    def test_every_refused_delivery_leaves_everything_unchanged(
        self, receiver: Receiver, source: Source, tmp_path: Path, case: str
    ) -> None:
        for id_ in range(1, 4):
            source.put(id_, id_, f"n{id_}", at(1))
        self.publish_checked(receiver, source, source.full(at(2)))
        before = self.state(receiver, source.table)
        rows, fields, failing = REFUSALS[case]
        path = write(
            tmp_path,
            [
                {"id": id_, "day": day(d), "name": "x", "updated_at": t, "deleted": False}
                for id_, d, t in rows
            ],
        )
        fields = {"rows": len(rows), **fields}
        manifest = source.contract.manifest("changes", at(4), since=at(2), **fields)
        receipt = receiver.receive(path, manifest)
        assert receipt.outcome is Outcome.REJECTED
        assert failing in {c.name for c in receipt.failed}, receipt.failed
        self.assert_refused_changes_nothing(receiver, source.table, before, receipt)

    def test_a_window_value_outside_the_window_is_refused(
        self, receiver: Receiver, source: Source, tmp_path: Path
    ) -> None:
        source.put(1, 3, "n1", at(1))
        self.publish_checked(receiver, source, source.full(at(2)))
        before = self.state(receiver, source.table)
        row = {"id": 1, "day": day(5), "name": "x", "updated_at": at(1), "deleted": False}
        path = write(tmp_path, [row])
        manifest = source.contract.manifest("window", at(3), window=(day(3), day(4)), rows=1)
        receipt = receiver.receive(path, manifest)
        assert [c.name for c in receipt.failed] == ["window_inside"]
        self.assert_refused_changes_nothing(receiver, source.table, before, receipt)
        assert receiver.verify(source.table).publications == 1

    def test_wrong_columns_are_refused_by_the_column_hash(
        self, receiver: Receiver, uid: str, tmp_path: Path
    ) -> None:
        declared = column_hash(
            [("id", "int"), ("day", "date"), ("name", "str"), ("updated_at", "datetime")]
        )
        contract = orders_contract(f"hashed_{uid}", schema_hash=declared)
        receiver.register(contract)
        row = {"id": 1, "day": day(1), "name": "x", "updated_at": at(1), "deleted": False}
        good = write(tmp_path, [row])
        receipt = receiver.receive(good, contract.manifest("full", at(2), rows=1))
        assert receipt.outcome is Outcome.ACCEPTED, receipt.failed
        schema = pa.schema(
            [(n, t) for n, t in zip(SCHEMA.names, SCHEMA.types, strict=True) if n != "name"]
        )
        wrong = write(tmp_path, [row], schema)
        before = self.state(receiver, contract.table)
        receipt = receiver.receive(wrong, contract.manifest("full", at(3), rows=1))
        assert [c.name for c in receipt.failed] == ["column_hash"]
        self.assert_refused_changes_nothing(receiver, contract.table, before, receipt)
        assert receiver.verify(contract.table).publications == 1

    def test_a_column_of_another_type_than_the_published_one_is_refused(
        self, receiver: Receiver, source: Source, tmp_path: Path
    ) -> None:
        for id_ in range(1, 4):
            source.put(id_, id_, f"n{id_}", at(1))
        self.publish_checked(receiver, source, source.full(at(2)))
        before = self.state(receiver, source.table)
        # name was published as str; this file carries it as int (and on SQLite, as INTEGER).
        schema = pa.schema(
            [f if f.name != "name" else pa.field("name", pa.int64()) for f in SCHEMA]
        )
        row = {"id": 1, "day": day(1), "name": 7, "updated_at": at(1), "deleted": False}
        path = write(tmp_path, [row], schema)
        manifest = source.contract.manifest("full", at(4), rows=1)
        receipt = receiver.receive(path, manifest)
        assert receipt.outcome is Outcome.REJECTED
        assert [c.name for c in receipt.failed] == ["column_types"], receipt.failed
        assert "name is int in the file" in receipt.failed[0].detail
        self.assert_refused_changes_nothing(receiver, source.table, before, receipt)

    def test_an_accepted_receipt_names_the_column_types_check(
        self, receiver: Receiver, source: Source
    ) -> None:
        source.put(1, 1, "n1", at(1))
        receipt = self.publish_checked(receiver, source, source.full(at(2)))
        assert "column_types" in {c.name for c in receipt.checks if c.passed}

    def test_a_value_the_database_cannot_store_is_refused(
        self, receiver: Receiver, source: Source, tmp_path: Path
    ) -> None:
        for id_ in range(1, 4):
            source.put(id_, id_, f"n{id_}", at(1))
        self.publish_checked(receiver, source, source.full(at(2)))
        before = self.state(receiver, source.table)
        for case, values in {**UNSTORABLE, **self.unstorable}.items():
            table = one_changed_row({"extra": values})
            path = tmp_path / f"unstorable-{len(case)}-{uuid.uuid4().hex[:6]}.parquet"
            pq.write_table(table, path)
            manifest = source.contract.manifest("changes", at(4), since=at(2), rows=1)
            receipt = receiver.receive(path, manifest)
            assert receipt.outcome is Outcome.REJECTED, case
            assert [c.name for c in receipt.failed] == ["column_types"], (case, receipt.failed)
            assert "cannot store" in receipt.failed[0].detail, (case, receipt.failed)
            after = self.state(receiver, source.table)
            assert after[:2] == before[:2], case
            assert self.staging_left(receiver, manifest) == [], case
            receiver.verify(source.table)
        # Nothing was published of them, not even the new column.
        with receiver.read(source.table) as snapshot:
            assert "extra" not in snapshot.columns
            list(snapshot.rows)

    def deliver_extra(
        self, receiver: Receiver, source: Source, tmp_path: Path, columns: dict[str, pa.Array]
    ) -> tuple[tuple[Any, ...], Receipt]:
        """After a first full read, a changes read of one row carrying these extra columns."""
        for id_ in range(1, 4):
            source.put(id_, id_, f"n{id_}", at(1))
        self.publish_checked(receiver, source, source.full(at(2)))
        before = self.state(receiver, source.table)
        table = one_changed_row(columns)
        path = tmp_path / f"extra-{uuid.uuid4().hex[:8]}.parquet"
        pq.write_table(table, path)
        manifest = source.contract.manifest("changes", at(4), since=at(2), rows=1)
        return before, receiver.receive(path, manifest)

    @pytest.mark.parametrize("case", sorted(MISNAMED))
    def test_a_column_name_no_receiver_can_create_is_refused_by_column_names(
        self, receiver: Receiver, source: Source, tmp_path: Path, case: str
    ) -> None:
        before, receipt = self.deliver_extra(
            receiver, source, tmp_path, {MISNAMED[case]: pa.array([1.5])}
        )
        assert [c.name for c in receipt.failed] == ["column_names"], receipt.failed
        assert MISNAMED[case] in receipt.failed[0].detail
        self.assert_refused_changes_nothing(receiver, source.table, before, receipt)

    def test_reserved_words_and_63_characters_are_column_names_every_receiver_creates(
        self, receiver: Receiver, source: Source, tmp_path: Path
    ) -> None:
        _, receipt = self.deliver_extra(
            receiver, source, tmp_path, {name: pa.array([i]) for i, name in enumerate(NAMED)}
        )
        assert receipt.outcome is Outcome.ACCEPTED, receipt.failed
        with receiver.read(source.table) as snapshot:
            rows = [dict(zip(snapshot.columns, row, strict=True)) for row in snapshot.rows]
        (changed,) = [row for row in rows if row["id"] == 1]
        assert {name: changed[name] for name in NAMED} == {n: i for i, n in enumerate(NAMED)}
        receiver.verify(source.table)

    def test_an_upserted_row_is_null_in_a_published_column_its_file_lacks(
        self, receiver: Receiver, source: Source, tmp_path: Path
    ) -> None:
        """A changed row is the staged row, whichever way the receiver replaces it (SQLite
        updates it in place): a published column added by an earlier file, which this file
        lacks, is NULL in it, as in a row inserted anew."""
        rows = self.deliver_one_changed_row_after_extra(receiver, source, tmp_path, {})
        assert rows == {1: ("again", None), 2: ("n2", None), 3: ("n3", None)}
        receiver.verify(source.table)

    def deliver_one_changed_row_after_extra(
        self, receiver: Receiver, source: Source, tmp_path: Path, columns: dict[str, pa.Array]
    ) -> dict[Any, tuple[Any, ...]]:
        """A file adding the column extra is published; then a changes file of one changed row
        named "again", with columns besides the row's own: the published rows by key, as
        (name, extra, *columns)."""
        _, receipt = self.deliver_extra(receiver, source, tmp_path, {"extra": pa.array([7])})
        assert receipt.outcome is Outcome.ACCEPTED, receipt.failed
        table = one_changed_row(columns).set_column(2, "name", pa.array(["again"]))
        table = table.set_column(3, "updated_at", pa.array([at(5)], pa.timestamp("us", tz="UTC")))
        path = tmp_path / f"changed-{uuid.uuid4().hex[:8]}.parquet"
        pq.write_table(table, path)
        manifest = source.contract.manifest("changes", at(6), since=at(4), rows=1)
        receipt = receiver.receive(path, manifest)
        assert receipt.outcome is Outcome.ACCEPTED, receipt.failed
        names = ["name", "extra", *columns]
        with receiver.read(source.table) as snapshot:
            return {
                row["id"]: tuple(row[name] for name in names)
                for row in (dict(zip(snapshot.columns, r, strict=True)) for r in snapshot.rows)
            }

    def test_a_column_one_file_adds_is_published_while_one_it_lacks_is_null(
        self, receiver: Receiver, source: Source, tmp_path: Path
    ) -> None:
        """One publication adds the file's new column and nulls a published one the file
        lacks in the row it changes (SQLite reads the published columns once for both)."""
        later = {"later": pa.array([8])}
        rows = self.deliver_one_changed_row_after_extra(receiver, source, tmp_path, later)
        assert rows == {1: ("again", None, 8), 2: ("n2", None, None), 3: ("n3", None, None)}
        receiver.verify(source.table)

    @FUZZ
    @given(names=st.lists(FUZZED_NAMES, min_size=1, max_size=4))
    def test_fuzzed_file_column_names_are_refused_by_name_or_published(
        self, receiver: Receiver, uid: str, tmp_path: Path, names: list[str]
    ) -> None:
        """Any column names beside the contract's: accepted and published, or refused by a
        named check with nothing changed; never an exception."""
        source = Source(f"fuzz_{uid}_{uuid.uuid4().hex[:6]}", tmp_path)  # uid: dropped after
        receiver.register(source.contract)
        table = pa.table(
            {
                "id": pa.array([1], pa.int64()),
                "day": pa.array([day(1)], pa.date32()),
                "updated_at": pa.array([at(1)], pa.timestamp("us", tz="UTC")),
            }
        )
        for i, name in enumerate(names):
            table = table.append_column(pa.field(name, pa.int64()), pa.array([i], pa.int64()))
        path = tmp_path / f"fuzz-{uuid.uuid4().hex[:8]}.parquet"
        pq.write_table(table, path)
        receipt = receiver.receive(path, source.contract.manifest("full", at(2), rows=1))
        if receipt.outcome is Outcome.REJECTED:
            assert {c.name for c in receipt.failed} <= REFUSED_BY_NAME, receipt.failed
            assert receiver.verify(source.table).publications == 0
        else:
            assert receipt.outcome is Outcome.ACCEPTED
            assert receiver.verify(source.table).publications == 1
        assert self.staging_left(receiver, receipt.manifest) == []

    @FUZZ
    @given(name=FUZZED_NAMES)
    def test_fuzzed_table_names_and_their_case_twins_are_refused_by_name_or_registered(
        self, receiver: Receiver, uid: str, name: str
    ) -> None:
        """A table name is an identifier or refused as a contract; its case twin is refused at
        registration naming both where the database folds case, registered apart elsewhere."""
        try:
            contract = orders_contract(f"{name}{uuid.uuid4().hex[:6]}"[:63])
        except InvalidContract:
            return  # a named refusal: not an identifier
        twin = orders_contract(contract.table.swapcase())
        try:
            receiver.register(contract)
        except InvalidContract as exc:  # one of the receiver's own names
            assert contract.table in str(exc)
            return
        if twin.table == contract.table:
            return  # no letters: no twin
        try:
            receiver.register(twin)
        except InvalidContract as exc:
            assert self.dialect.folds_names
            assert contract.table in str(exc) and twin.table in str(exc)
        else:
            assert not self.dialect.folds_names
            assert receiver.ledger(twin.table).contract == twin
        assert receiver.ledger(contract.table).contract == contract

    def test_a_published_column_in_another_case_is_refused_by_column_types(
        self, receiver: Receiver, source: Source, tmp_path: Path
    ) -> None:
        """NAME for the published name: one column to SQLite and MariaDB, a new one to
        PostgreSQL; refused on all three, so the file gets one verdict."""
        published = SCHEMA.field("name")
        assert published.name == "name"
        for id_ in range(1, 4):
            source.put(id_, id_, f"n{id_}", at(1))
        self.publish_checked(receiver, source, source.full(at(2)))
        before = self.state(receiver, source.table)
        schema = pa.schema([f.with_name("NAME") if f.name == "name" else f for f in SCHEMA])
        row = {"id": 1, "day": day(1), "NAME": "x", "updated_at": at(3), "deleted": False}
        path = write(tmp_path, [row], schema)
        receipt = receiver.receive(
            path, source.contract.manifest("changes", at(4), since=at(2), rows=1)
        )
        assert [c.name for c in receipt.failed] == ["column_types"], receipt.failed
        assert "NAME is column name" in receipt.failed[0].detail
        self.assert_refused_changes_nothing(receiver, source.table, before, receipt)

    @pytest.mark.parametrize("kind", ["date", "datetime", "decimal(9,2)"])
    def test_free_text_for_a_published_date_datetime_or_decimal_column_is_refused(
        self, receiver: Receiver, source: Source, tmp_path: Path, uid: str, kind: str
    ) -> None:
        """Published as a date, a datetime or a decimal, delivered as text ("not a date"):
        refused by column_types on every receiver, SQLite's text storage included."""
        typed = {
            "date": pa.array([day(1)], pa.date32()),
            "datetime": pa.array([at(1)], pa.timestamp("us", tz="UTC")),
            "decimal(9,2)": pa.array([Decimal("1.50")], pa.decimal128(9, 2)),
        }[kind]
        for id_ in range(1, 4):
            source.put(id_, id_, f"n{id_}", at(1))
        first = pa.table(
            {
                "id": pa.array([1, 2, 3], pa.int64()),
                "day": pa.array([day(1)] * 3, pa.date32()),
                "updated_at": pa.array([at(1)] * 3, pa.timestamp("us", tz="UTC")),
                "extra": pa.concat_arrays([typed] * 3),
            }
        )
        path = tmp_path / f"typed-{uid}.parquet"
        pq.write_table(first, path)
        accepted = receiver.receive(path, source.contract.manifest("full", at(2), rows=3))
        assert accepted.outcome is Outcome.ACCEPTED, accepted.failed
        before = self.state(receiver, source.table)
        path = tmp_path / f"text-{uid}.parquet"
        pq.write_table(first.set_column(3, "extra", pa.array(["not a date"] * 3)), path)
        receipt = receiver.receive(path, source.contract.manifest("full", at(3), rows=3))
        assert [c.name for c in receipt.failed] == ["column_types"], receipt.failed
        assert "extra is str in the file" in receipt.failed[0].detail
        self.assert_refused_changes_nothing(receiver, source.table, before, receipt)

    def test_a_key_of_the_wrong_type_is_refused(
        self, receiver: Receiver, source: Source, tmp_path: Path
    ) -> None:
        source.put(1, 1, "n1", at(1))
        self.publish_checked(receiver, source, source.full(at(2)))
        before = self.state(receiver, source.table)
        schema = pa.schema([("id", pa.string()), ("day", pa.date32()), ("name", pa.string())])
        path = write(tmp_path, [{"id": "one", "day": day(1), "name": "x"}], schema)
        receipt = receiver.receive(path, source.contract.manifest("full", at(3), rows=1))
        assert receipt.outcome is Outcome.REJECTED
        assert "rows" in {c.name for c in receipt.failed}
        self.assert_refused_changes_nothing(receiver, source.table, before, receipt)
        assert receiver.verify(source.table).publications == 1

    def test_a_receipt_is_filed_under_the_contract_table(
        self, receiver: Receiver, source: Source, tmp_path: Path
    ) -> None:
        path = write(tmp_path, [])
        manifest = source.contract.manifest("full", at(2)).replace(table="elsewhere")
        receipt = receiver.receive(path, manifest, table=source.table)
        assert receipt.outcome is Outcome.REJECTED and receipt.table == source.table
        assert [c.name for c in receipt.failed] == ["manifest", "transition"]
        assert receiver.receipts(source.table) == [receipt]
        with pytest.raises(UnknownTable):
            receiver.receive(path, manifest)

    def test_a_delivery_for_another_table_than_the_configured_one_is_refused_naming_both(
        self, receiver: Receiver, source: Source, uid: str, tmp_path: Path
    ) -> None:
        """A gate or a publish for orders handed payroll's delivery: refused and filed under
        orders, naming both tables; payroll's rows, ledger and receipts are untouched."""
        payroll = Source(f"payroll_{uid}", tmp_path)
        receiver.register(payroll.contract)
        for each in (source, payroll):
            each.put(1, 1, "one", at(1))
            self.publish_checked(receiver, each, each.full(at(2)))
        orders_before, payroll_before = (self.state(receiver, s.table) for s in (source, payroll))
        payroll.put(2, 2, "two", at(3))
        named = f"'{payroll.table}' is not the contract's table '{source.table}'"
        gated = receiver.decide(*payroll.full(at(4)), table=source.table).receipt
        assert (gated.outcome, gated.table) == (Outcome.REJECTED, source.table)
        assert named in gated.failed[0].detail
        decision = receiver.decide(*payroll.full(at(5)))  # a gate told no table
        assert decision.to_publish
        refused = receiver.publish(decision, table=source.table)
        assert (refused.outcome, refused.table) == (Outcome.REJECTED, source.table)
        assert named in refused.failed[0].detail
        assert self.state(receiver, payroll.table) == payroll_before
        after = self.state(receiver, source.table)
        assert after[:2] == orders_before[:2]
        assert after[2] == [*orders_before[2], gated.identity, refused.identity]
        assert self.staging_left(receiver, decision.receipt.manifest) == []
        receiver.verify(source.table)
        receiver.verify(payroll.table)

    def test_a_failed_preflight_is_recorded_and_nothing_else_happens(
        self, receiver: Receiver, source: Source, tmp_path: Path
    ) -> None:
        path = tmp_path / "never-read.parquet"  # does not exist: preflight fails first
        manifest = source.contract.manifest("full", NOW.replace(year=NOW.year + 1), rows=1)
        receipt = receiver.receive(path, manifest)
        assert receipt.outcome is Outcome.REJECTED
        assert [c.name for c in receipt.failed] == ["receiver_time"]
        assert receiver.receipts(source.table) == [receipt]
        assert receiver.verify(source.table).publications == 0

    def test_a_malformed_file_is_refused(
        self, receiver: Receiver, source: Source, tmp_path: Path
    ) -> None:
        source.put(1, 1, "n1", at(1))
        self.publish_checked(receiver, source, source.full(at(2)))
        before = self.state(receiver, source.table)
        path = tmp_path / "broken.parquet"
        path.write_bytes(b"not parquet at all")
        receipt = receiver.receive(path, source.contract.manifest("full", at(3), rows=1))
        assert receipt.outcome is Outcome.REJECTED
        assert "rows" in {c.name for c in receipt.failed}
        self.assert_refused_changes_nothing(receiver, source.table, before, receipt)

    # Faults, staleness, concurrency ----------------------------------------------------------

    @pytest.mark.parametrize("lose", [False, True], ids=["statement fails", "connection lost"])
    def test_a_fault_after_the_first_published_rows_changes_nothing(
        self, connect: Connect, receiver: Receiver, source: Source, uid: str, lose: bool
    ) -> None:
        for id_ in range(1, 4):
            source.put(id_, id_, f"n{id_}", at(1))
        self.publish_checked(receiver, source, source.full(at(2)))
        before = self.state(receiver, source.table)
        source.put(7, 7, "new", at(3))
        decision = receiver.decide(*source.changes(at(2), at(4)))
        needle = f"INSERT INTO {self.dialect.quote(source.table)}"
        faulty = self.make(lambda: FaultyConnection(connect(), needle, lose=lose), uid)
        with pytest.raises((ConnectionError, self.driver_error)):
            faulty.publish(decision)
        assert self.state(receiver, source.table) == before
        receiver.verify(source.table)
        # The staged rows survive the failure: publishing again succeeds.
        assert len(self.staging_left(receiver, decision.receipt.manifest)) == 1
        receipt = receiver.publish(decision)
        assert receipt.outcome is Outcome.ACCEPTED
        assert self.published(receiver, source.table) == source.expected()
        receiver.verify(source.table)
        assert self.staging_left(receiver, decision.receipt.manifest) == []

    def test_sweep_drops_the_staging_table_a_crash_at_its_drop_left(
        self, connect: Connect, receiver: Receiver, source: Source, uid: str
    ) -> None:
        for id_ in range(1, 4):
            source.put(id_, id_, f"n{id_}", at(1))
        self.publish_checked(receiver, source, source.full(at(2)))
        source.put(7, 7, "new", at(3))
        decision = receiver.decide(*source.changes(at(2), at(4)))
        manifest = decision.receipt.manifest
        # The publishing process dies just before it drops the staging table.
        crashing = self.make(lambda: FaultyConnection(connect(), "DROP TABLE", before=True), uid)
        with pytest.raises((ConnectionError, self.driver_error)):
            crashing.publish(decision)
        (left,) = self.staging_left(receiver, manifest)
        if self.dialect.transactional_ddl:
            # The drop was inside the publication's transaction: nothing was published, and
            # the staged rows still wait for their publish, so a sweep by age keeps them.
            assert receiver.verify(source.table).publications == 1
            assert receiver.sweep(timedelta(days=1)) == ()
            assert receiver.publish(decision).outcome is Outcome.ACCEPTED
        else:
            # MariaDB committed the publication, then died: the decision is recorded, so the
            # table is swept whatever its age.
            assert receiver.verify(source.table).publications == 2
            assert receiver.sweep(timedelta(days=1)) == (left,)
            assert receiver.sweep(timedelta(days=1)) == ()
        assert self.staging_left(receiver, manifest) == []
        assert self.published(receiver, source.table) == source.expected()
        assert receiver.verify(source.table).publications == 2

    def test_sweep_drops_a_decision_nobody_published_once_it_is_old(
        self, connect: Connect, receiver: Receiver, source: Source, uid: str
    ) -> None:
        source.put(1, 1, "n1", at(1))
        self.publish_checked(receiver, source, source.full(at(2)))
        before = self.state(receiver, source.table)
        source.put(2, 2, "n2", at(3))
        abandoned = receiver.decide(*source.changes(at(2), at(4)))
        (left,) = self.staging_left(receiver, abandoned.receipt.manifest)
        assert receiver.sweep(timedelta(hours=1)) == ()  # young: it may still be published
        later = Receiver(
            connect, self.dialect, prefix=f"s{uid}", clock=lambda: NOW + timedelta(hours=2)
        )
        assert later.sweep(timedelta(hours=1)) == (left,)
        assert self.staging_left(receiver, abandoned.receipt.manifest) == []
        # Publishing what was swept fails as an operational error and changes nothing.
        with pytest.raises(self.driver_error):
            receiver.publish(abandoned)
        assert self.state(receiver, source.table) == before
        receiver.verify(source.table)
        # A rejection and an acceptance leave nothing to sweep.
        source.put(3, 3, "n3", at(5))
        self.publish_checked(receiver, source, source.full(at(6)))
        path, manifest = source.changes(at(6), at(7))
        refused = receiver.receive(path, manifest.replace(rows=manifest.rows + 1))
        assert refused.outcome is Outcome.REJECTED
        assert later.sweep(timedelta(0)) == ()

    def test_a_connection_lost_while_staging_raises_and_records_nothing(
        self, connect: Connect, receiver: Receiver, source: Source, uid: str
    ) -> None:
        """An operational failure in decide is no rejection: it raises, no receipt is saved."""
        source.put(1, 1, "n1", at(1))
        self.publish_checked(receiver, source, source.full(at(2)))
        before = self.state(receiver, source.table)
        source.put(2, 2, "n2", at(3))
        delivery = source.changes(at(2), at(4))
        # Lost right after the staging table is made, before its rows load.
        staging = "CREATE TABLE " + self.dialect.quote(STAGING_PREFIX)[:-1]
        lost = self.make(lambda: FaultyConnection(connect(), staging, lose=True), uid)
        with pytest.raises((ConnectionError, self.driver_error)):
            lost.decide(*delivery)
        assert self.state(receiver, source.table) == before
        # Where CREATE TABLE commits at once (MariaDB) the half-made staging table is noted,
        # so a sweep clears it; elsewhere the rollback took it.
        receiver.sweep(timedelta(0))
        assert self.staging_left(receiver, delivery[1]) == []
        assert receiver.receive(*delivery).outcome is Outcome.ACCEPTED
        assert self.published(receiver, source.table) == source.expected()

    def test_a_stale_decision_is_made_again_never_rebased(
        self, receiver: Receiver, source: Source
    ) -> None:
        for id_ in range(1, 4):
            source.put(id_, id_, f"n{id_}", at(1))
        self.publish_checked(receiver, source, source.full(at(2)))
        source.put(5, 5, "five", at(3))
        early = receiver.decide(*source.changes(at(2), at(4)))
        source.put(6, 6, "six", at(5))
        late = receiver.decide(*source.changes(at(2), at(6)))
        assert early.receipt.base_publication_id == late.receipt.base_publication_id
        first = receiver.publish(early)
        assert first.outcome is Outcome.ACCEPTED
        second = receiver.publish(late)
        # Decided again against the new head: accepted on top of it, a different receipt.
        assert second.outcome is Outcome.ACCEPTED
        assert second.base_publication_id == first.publication_id != late.receipt.publication_id
        assert self.published(receiver, source.table) == source.expected()
        assert receiver.verify(source.table).publications == 3
        assert self.staging_left(receiver, early.receipt.manifest, late.receipt.manifest) == []

    def test_a_stale_decision_the_new_ledger_refuses_is_rejected(
        self, receiver: Receiver, source: Source
    ) -> None:
        for id_ in range(1, 4):
            source.put(id_, id_, f"n{id_}", at(1))
        self.publish_checked(receiver, source, source.full(at(2)))
        source.put(5, 5, "five", at(3))
        early = receiver.decide(*source.changes(at(2), at(4)))
        late = receiver.decide(*source.changes(at(2), at(6)))
        assert receiver.publish(late).outcome is Outcome.ACCEPTED
        before = self.state(receiver, source.table)
        refused = receiver.publish(early)
        assert refused.outcome is Outcome.REJECTED
        assert [c.name for c in refused.failed] == ["transition"]
        after = self.state(receiver, source.table)
        assert after[:2] == before[:2] and after[2][:-1] == before[2]
        receiver.verify(source.table)

    def test_a_decision_handed_over_as_json_publishes_in_another_task(
        self, connect: Connect, receiver: Receiver, source: Source, uid: str
    ) -> None:
        for id_ in range(1, 4):
            source.put(id_, id_, f"n{id_}", at(1))
        self.publish_checked(receiver, source, source.full(at(2)))
        source.put(5, 5, "five", at(3))
        early = receiver.decide(*source.changes(at(2), at(4)))
        source.put(6, 6, "six", at(5))
        late = receiver.decide(*source.changes(at(2), at(6)))
        handed = [Decision.from_dict(json.loads(json.dumps(d.to_dict()))) for d in (early, late)]
        assert handed == [early, late]
        other = self.make(connect, uid)  # the publish task: another receiver, same database
        assert other.publish(handed[0]).outcome is Outcome.ACCEPTED
        second = other.publish(handed[1])  # stale: decided again from the handed-over staging
        assert second.outcome is Outcome.ACCEPTED, second.failed
        assert self.published(receiver, source.table) == source.expected()
        assert receiver.verify(source.table).publications == 3

    def _concurrently(
        self, *calls: Callable[[], Receipt], timeout: float = THREADS_TIMEOUT
    ) -> list[Receipt | BaseException]:
        """Run calls at once in threads; wait up to timeout, then hand back what finished.

        With a short timeout the caller goes on while a call may still run (blocked on a lock
        the caller holds); _finish waits for the rest.
        """
        barrier = threading.Barrier(len(calls))
        results: list[Receipt | BaseException] = [RuntimeError("did not finish")] * len(calls)

        def run(index: int, call: Callable[[], Receipt]) -> None:
            try:
                barrier.wait(timeout=THREADS_TIMEOUT)
                results[index] = call()
            except BaseException as exc:
                results[index] = exc

        threads = [
            threading.Thread(target=run, args=(i, c), daemon=True) for i, c in enumerate(calls)
        ]
        for thread in threads:
            thread.start()
        self._threads = threads
        for thread in threads:
            thread.join(timeout)
        if timeout >= THREADS_TIMEOUT:
            self._finish(results)
        return results

    def _finish(self, results: list[Receipt | BaseException]) -> None:
        for thread in self._threads:
            thread.join(THREADS_TIMEOUT)
            assert not thread.is_alive(), "a publisher hung"
        assert all(isinstance(r, Receipt) for r in results), results

    def test_two_concurrent_publishers_one_wins_each_head(
        self, connect: Connect, receiver: Receiver, source: Source, uid: str
    ) -> None:
        for id_ in range(1, 4):
            source.put(id_, id_, f"n{id_}", at(1))
        self.publish_checked(receiver, source, source.full(at(2)))
        source.put(5, 5, "five", at(3))
        one = receiver.decide(*source.changes(at(2), at(4)))
        source.put(6, 6, "six", at(5))
        two = receiver.decide(*source.changes(at(2), at(6)))
        other = self.make(connect, uid)
        results = self._concurrently(lambda: receiver.publish(one), lambda: other.publish(two))
        assert all(isinstance(r, Receipt) for r in results), results
        receipts = [r for r in results if isinstance(r, Receipt)]
        accepted = [r for r in receipts if r.outcome is Outcome.ACCEPTED]
        assert accepted, receipts
        # Each accepted one built on a distinct head: no lost update.
        assert len({r.base_publication_id for r in accepted}) == len(accepted)
        verified = receiver.verify(source.table)
        assert verified.publications == 1 + len(accepted)
        if len(accepted) == 2:
            assert self.published(receiver, source.table) == source.expected()

    def test_one_manifest_published_twice_at_once_is_published_once(
        self, connect: Connect, receiver: Receiver, source: Source, uid: str
    ) -> None:
        for id_ in range(1, 4):
            source.put(id_, id_, f"n{id_}", at(1))
        delivery = source.full(at(2))
        one = receiver.decide(*delivery)
        two = receiver.decide(*delivery)
        other = self.make(connect, uid)
        results = self._concurrently(lambda: receiver.publish(one), lambda: other.publish(two))
        outcomes = sorted(str(r.outcome) for r in results if isinstance(r, Receipt))
        assert outcomes == ["accepted", "replayed"], results
        assert self.staging_left(receiver, delivery[1]) == []
        assert receiver.verify(source.table).publications == 1
        assert self.published(receiver, source.table) == source.expected()

    def test_a_reader_gets_rows_and_ledger_from_one_committed_state(
        self, connect: Connect, receiver: Receiver, source: Source, uid: str
    ) -> None:
        for id_ in range(1, 4):
            source.put(id_, id_, f"n{id_}", at(1))
        first = self.publish_checked(receiver, source, source.full(at(2)))
        held = dict(source.expected())
        source.put(8, 8, "eight", at(3))
        decision = receiver.decide(*source.full(at(4)))
        writer = self.make(connect, uid)
        with receiver.read(source.table) as snapshot:
            # A publication commits while the reader is open (SQLite's writer waits for it).
            results = self._concurrently(lambda: writer.publish(decision), timeout=2)
            names = snapshot.columns
            rows = [dict(zip(names, row, strict=True)) for row in snapshot.rows]
            assert snapshot.ledger.head == first.publication_id
            assert {r["id"]: (r["name"], str(r["day"])[:10]) for r in rows} == held
        self._finish(results)
        assert self.published(receiver, source.table) == source.expected()
        receiver.verify(source.table)

    # Contracts -------------------------------------------------------------------------------

    def test_contract_evolution_keeps_history_and_refuses_fixed_changes(
        self, receiver: Receiver, source: Source
    ) -> None:
        source.put(1, 1, "n1", at(1))
        first = self.publish_checked(receiver, source, source.full(at(2)))
        cheaper = orders_contract(
            source.table, cursor_column=None, types={"id": "int", "day": "date", "deleted": "bool"}
        )
        ledger = receiver.register(cheaper)
        assert ledger.head == first.publication_id and ledger.contract == cheaper
        receiver.verify(source.table)
        with pytest.raises(InvalidContract):
            receiver.register(
                orders_contract(
                    source.table,
                    deleted_column=None,
                    types={"id": "int", "day": "date", "updated_at": "datetime"},
                )
            )
        assert receiver.ledger(source.table).contract == cheaper
        source.put(2, 2, "n2", at(3))
        self.publish_checked(receiver, source, source.full(at(4)))

    def test_a_table_name_colliding_as_the_database_compares_names_is_refused(
        self, receiver: Receiver, source: Source, uid: str, tmp_path: Path
    ) -> None:
        """ORDERS_x beside orders_x: one table on SQLite (and one store key on MariaDB), whose
        rows two ledgers would each claim, so it is refused at registration naming both; two
        tables on PostgreSQL, kept apart. The store's own names are refused everywhere."""
        for id_ in range(1, 4):
            source.put(id_, id_, f"n{id_}", at(1))
        self.publish_checked(receiver, source, source.full(at(2)))
        before = self.state(receiver, source.table)
        upper = Source(f"ORDERS_{uid}", tmp_path)
        if self.dialect.folds_names:
            with pytest.raises(InvalidContract, match=f"'{upper.table}'.*'{source.table}'"):
                receiver.register(upper.contract)
        else:
            receiver.register(upper.contract)
            upper.put(9, 9, "upper", at(1))
            self.publish_checked(receiver, upper, upper.full(at(2)))
        assert self.state(receiver, source.table) == before
        receiver.verify(source.table)
        owned = ("tables", "RECEIPTS", "staging", "lineage", "schema_versions")
        for own in (*(f"s{uid}_{name}" for name in owned), STAGING_PREFIX + "x"):
            table = own if self.dialect.folds_names or own.islower() else own.lower()
            with pytest.raises(InvalidContract, match=f"'{table}'.*the receiver's own"):
                receiver.register(orders_contract(table))
        assert self.state(receiver, source.table) == before

    def test_verify_refuses_published_rows_that_disagree_with_the_latest_complete_read(
        self, receiver: Receiver, source: Source, uid: str
    ) -> None:
        for id_ in range(1, 6):
            source.put(id_, id_ % 3, f"n{id_}", at(1))
        self.publish_checked(receiver, source, source.full(at(2)))
        source.put(6, 1, "six", at(3))
        self.publish_checked(receiver, source, source.window(1, 1, at(4)))
        # Something besides the receiver deletes a published row: the ledger still claims it.
        connection = receiver.connect()
        try:
            cursor = connection.cursor()
            cursor.execute(f"DELETE FROM {self.dialect.quote(source.table)} WHERE id = 6")
            connection.commit()
        finally:
            connection.close()
        with pytest.raises(InconsistentPublication, match=r"2 published rows in window.* 3 rows"):
            receiver.verify(source.table)

    def test_a_requirement_with_deletions_after_complete_is_planned_and_met(
        self, receiver: Receiver, source: Source
    ) -> None:
        """Deletions as of MON with completeness as of SUN (negation asks for it): planned as
        a read until MON or later, and once that is published, nothing more is planned."""
        sunday, monday = at(2), at(26)
        for id_ in range(1, 4):
            source.put(id_, id_, f"n{id_}", at(1))
        self.publish_checked(receiver, source, source.full(sunday))
        requirement = Requirement(source.table, sunday, deletions_as_of=monday)
        request = plan_delivery(receiver.ledger(source.table), requirement)
        assert request is not None and request.until >= monday
        source.delete(2)
        source.put(4, 4, "n4", at(25))
        if request.since is None:
            delivery = source.full(request.until)
        else:
            delivery = source.changes(request.since, request.until, (2,))
        self.publish_checked(receiver, source, delivery)
        assert plan_delivery(receiver.ledger(source.table), requirement) is None

    # The stored ledger ---------------------------------------------------------------------------

    def stored_ledger(self, receiver: Receiver, table: str) -> str:
        with transaction(receiver.connect, receiver.dialect, write=False) as connection:
            cursor = connection.cursor()
            cursor.execute(
                f"SELECT ledger FROM {receiver.store.tables} WHERE table_name = {receiver.store.p}",
                (table,),
            )
            (text,) = cursor.fetchone()
        return str(text)

    def store_ledger(self, receiver: Receiver, table: str, text: str) -> None:
        """Write the ledger column as another writer (an older dogana, or a hand) could."""
        p = receiver.store.p
        with transaction(receiver.connect, receiver.dialect) as connection:
            execute(
                connection,
                f"UPDATE {receiver.store.tables} SET ledger = {p} WHERE table_name = {p}",
                (text, table),
            )

    def test_a_ledger_stored_as_its_wire_json_still_decides_and_is_stored_anew(
        self, receiver: Receiver, source: Source
    ) -> None:
        """A store written before the ledger's stored form holds its wire JSON."""
        source.put(1, 1, "n1", at(1))
        self.publish_checked(receiver, source, source.full(at(2)))
        ledger = receiver.ledger(source.table)
        self.store_ledger(receiver, source.table, ledger.to_json())
        assert receiver.ledger(source.table) == ledger
        receiver.verify(source.table)
        source.put(2, 2, "n2", at(3))
        self.publish_checked(receiver, source, source.changes(at(2), at(4)))
        assert self.stored_ledger(receiver, source.table).startswith('{"chunks":')

    def test_a_stored_ledger_other_than_the_fold_of_the_receipts_fails_verify(
        self, receiver: Receiver, source: Source
    ) -> None:
        source.put(1, 1, "n1", at(1))
        self.publish_checked(receiver, source, source.full(at(2)))
        ledger = receiver.ledger(source.table)
        (region,) = ledger.regions
        c, _ = region.evidence
        assert c is not None
        # Deletions a second earlier, stored as the store stores any ledger: a well-formed
        # stored ledger that is not the fold.
        wrong = Ledger(
            ledger.contract,
            (region.with_evidence((c, c - timedelta(seconds=1))),),
            ledger.generation,
            ledger.publication_id,
        )
        with transaction(receiver.connect, receiver.dialect) as connection:
            receiver.store.update_table(connection, wrong)
        with pytest.raises(InconsistentPublication, match="is not the fold of its 1 receipts"):
            receiver.verify(source.table)
        with transaction(receiver.connect, receiver.dialect) as connection:
            receiver.store.update_table(connection, ledger)
            execute(connection, f"UPDATE {receiver.store.chunks} SET regions = '[]'")
        with pytest.raises(InconsistentPublication, match=r"the stored ledger: .* are another's"):
            receiver.verify(source.table)

    def test_a_publication_by_another_connection_is_read_by_the_next_decision(
        self, connect: Connect, uid: str, source: Source
    ) -> None:
        """Each chunk read is kept in this process, by the digest of its bytes: a publication
        through another receiver (another connection, as another process would) names other
        chunks, so the next decision here reads its ledger, never one kept from before."""
        here, there = self.make(connect, uid), self.make(connect, uid)
        for id_ in range(1, 4):
            source.put(id_, id_, f"n{id_}", at(1))
        self.publish_checked(here, source, source.full(at(2)))
        read = here.ledger(source.table)
        source.put(4, 4, "n4", at(3))
        receipt = there.receive(*source.window(4, 4, at(4)))
        assert receipt.outcome is Outcome.ACCEPTED, receipt.failed
        after = here.ledger(source.table)
        assert after.head == receipt.publication_id != read.head
        assert after.identity == receipt.ledger_identity
        late = here.decide(*source.window(4, 4, at(3)))  # older than what `there` published
        assert late.receipt.outcome is Outcome.REJECTED
        assert late.receipt.base_publication_id == receipt.publication_id

    # Tables together ---------------------------------------------------------------------------

    def pair(self, receiver: Receiver, uid: str, tmp_path: Path) -> tuple[Group, Source, Source]:
        orders, lines = Source(f"orders_{uid}", tmp_path), Source(f"lines_{uid}", tmp_path)
        for source in (orders, lines):
            receiver.register(source.contract)
            for id_ in range(1, 4):
                source.put(id_, id_, f"{source.table[:5]}{id_}", at(1))
        return Group((orders.contract, lines.contract)), orders, lines

    def test_a_group_is_published_in_one_commit_and_replays_whole(
        self, receiver: Receiver, uid: str, tmp_path: Path
    ) -> None:
        group, orders, lines = self.pair(receiver, uid, tmp_path)
        deliveries = {orders.table: orders.full(at(2)), lines.table: lines.full(at(2))}
        receipts = receiver.receive_group(group, deliveries)
        assert [r.outcome for r in receipts] == [Outcome.ACCEPTED] * 2, [r.failed for r in receipts]
        assert all("together" in {c.name for c in r.checks} for r in receipts)
        for source in (orders, lines):
            assert self.published(receiver, source.table) == source.expected()
            receiver.verify(source.table)
        before = [self.state(receiver, s.table) for s in (orders, lines)]
        again = receiver.receive_group(group, deliveries)
        assert [r.outcome for r in again] == [Outcome.REPLAYED] * 2
        assert [r.identity for r in again] == [r.identity for r in receipts]
        assert [self.state(receiver, s.table) for s in (orders, lines)] == before

    def test_a_group_repeated_over_other_bytes_is_refused_for_every_table(
        self, receiver: Receiver, uid: str, tmp_path: Path
    ) -> None:
        group, orders, lines = self.pair(receiver, uid, tmp_path)
        deliveries = {orders.table: orders.full(at(2)), lines.table: lines.full(at(2))}
        receipts = receiver.receive_group(group, deliveries)
        assert [r.outcome for r in receipts] == [Outcome.ACCEPTED] * 2, [r.failed for r in receipts]
        before = [self.state(receiver, s.table) for s in (orders, lines)]
        other = write(tmp_path, [{"id": 99, "day": day(1), "name": "other", "updated_at": at(1)}])
        _, manifest = deliveries[orders.table]  # the same manifest, declaring the first bytes
        again = receiver.receive_group(group, {**deliveries, orders.table: (other, manifest)})
        assert [r.outcome for r in again] == [Outcome.REJECTED] * 2
        assert [c.name for c in again[0].failed] == ["content_hash"]
        assert [c.name for c in again[1].failed] == ["together"]
        for source, was, receipt in zip((orders, lines), before, again, strict=True):
            self.assert_refused_changes_nothing(receiver, source.table, was, receipt)

    def test_a_group_is_all_or_nothing(self, receiver: Receiver, uid: str, tmp_path: Path) -> None:
        group, orders, lines = self.pair(receiver, uid, tmp_path)
        receiver.receive_group(
            group, {orders.table: orders.full(at(2)), lines.table: lines.full(at(2))}
        )
        before = [self.state(receiver, s.table) for s in (orders, lines)]
        orders.put(9, 9, "new", at(3))
        lines.put(9, 9, "new", at(3))
        path, manifest = lines.full(at(4))
        wrong = manifest.replace(rows=manifest.rows + 1)  # a truncated file, say
        deliveries = {orders.table: orders.full(at(4)), lines.table: (path, wrong)}
        receipts = receiver.receive_group(group, deliveries)
        assert [r.outcome for r in receipts] == [Outcome.REJECTED] * 2
        assert [c.name for c in receipts[0].failed] == ["together"]
        assert {c.name for c in receipts[1].failed} == {"rows", "together"}
        after = [self.state(receiver, s.table) for s in (orders, lines)]
        for old, new in zip(before, after, strict=True):
            assert new[:2] == old[:2] and new[2][:-1] == old[2]
        manifests = [d[1] for d in deliveries.values()]
        assert self.staging_left(receiver, *manifests) == []

    def test_a_fault_in_a_group_publication_changes_no_table(
        self, connect: Connect, receiver: Receiver, uid: str, tmp_path: Path
    ) -> None:
        group, orders, lines = self.pair(receiver, uid, tmp_path)
        deliveries = {orders.table: orders.full(at(2)), lines.table: lines.full(at(2))}
        decision = receiver.decide_group(group, deliveries)
        before = [self.state(receiver, s.table) for s in (orders, lines)]
        # The first table's rows are published when the second table's insert fails.
        needle = f"INSERT INTO {self.dialect.quote(lines.table)}"
        faulty = self.make(lambda: FaultyConnection(connect(), needle), uid)
        with pytest.raises((ConnectionError, self.driver_error)):
            faulty.publish_group(decision)
        assert [self.state(receiver, s.table) for s in (orders, lines)] == before
        receipts = receiver.publish_group(decision)
        assert [r.outcome for r in receipts] == [Outcome.ACCEPTED] * 2
        for source in (orders, lines):
            assert self.published(receiver, source.table) == source.expected()
            receiver.verify(source.table)

    def test_a_stale_group_is_decided_again(
        self, receiver: Receiver, uid: str, tmp_path: Path
    ) -> None:
        group, orders, lines = self.pair(receiver, uid, tmp_path)
        decision = receiver.decide_group(
            group, {orders.table: orders.full(at(2)), lines.table: lines.full(at(2))}
        )
        # A later read of one table is published alone in between: the group's read is late.
        self.publish_checked(receiver, orders, orders.full(at(3)))
        receipts = receiver.publish_group(decision)
        assert [r.outcome for r in receipts] == [Outcome.REJECTED] * 2
        assert "transition" in {c.name for c in receipts[0].failed}
        assert receiver.verify(lines.table).publications == 0
        assert receiver.verify(orders.table).publications == 1

    # A scripted history -----------------------------------------------------------------------

    def test_scripted_history_publishes_what_the_source_held(
        self, receiver: Receiver, source: Source
    ) -> None:
        for id_ in range(1, 21):
            source.put(id_, id_ % 10, f"n{id_}", at(1))
        self.publish_checked(receiver, source, source.full(at(2)))
        source.put(3, 3, "three", at(3))
        source.delete(8)
        source.put(30, 5, "thirty", at(3))
        self.publish_checked(receiver, source, source.changes(at(2), at(4), (8,)))
        source.delete(13)  # day 3
        source.put(33, 3, "new on day 3", at(5))
        self.publish_checked(receiver, source, source.window(3, 3, at(6)))
        source.put(1, 1, "again", at(7))
        source.delete(2)
        self.publish_checked(receiver, source, source.changes(at(4), at(8), (2,)))
        source.delete(30)
        source.put(40, 9, "forty", at(9))
        self.publish_checked(receiver, source, source.full(at(10)))
        assert receiver.verify(source.table).publications == 5

    def test_scripted_sequence_history_publishes_what_the_source_held(
        self, receiver: Receiver, uid: str, tmp_path: Path
    ) -> None:
        """Full and log reads by an integer position: upserts and tombstones, then a full read."""
        source = LogSource(f"seq_{uid}", tmp_path)
        receiver.register(source.contract)

        def deliver(delivery: tuple[Path, Any]) -> None:
            ledger, rows = self.receive_verified(receiver, source.table, delivery)
            assert {r["id"]: (r["lsn"], r["v"]) for r in rows} == source.expected()
            assert ledger.generation == source.position

        for id_ in range(1, 11):
            source.put(id_, f"v{id_}")
        deliver(source.full(at(1)))
        read = source.position
        source.put(3, "three")
        source.delete(7)
        source.put(11, "eleven")
        deliver(source.log(read, at(2)))
        read = source.position
        source.put(11, "eleven again")
        source.delete(1)
        source.put(1, "one reborn")
        source.delete(4)
        deliver(source.log(read, at(3)))
        source.delete(11)
        source.put(12, "twelve")
        deliver(source.full(at(4)))
        assert receiver.verify(source.table).publications == 4

    def test_scripted_append_history_publishes_what_the_source_held(
        self, receiver: Receiver, uid: str, tmp_path: Path
    ) -> None:
        """Keyless appends, and a window read replacing a corrected day, duplicates kept."""
        source = EventsSource(f"events_{uid}", tmp_path)
        receiver.register(source.contract)

        def deliver(delivery: tuple[Path, Any]) -> None:
            _, rows = self.receive_verified(receiver, source.table, delivery)
            assert sorted((str(r["day"])[:10], r["what"]) for r in rows) == source.expected()

        source.add(1, "a", at(1))
        source.add(1, "a", at(1))
        source.add(2, "b", at(1))
        deliver(source.append(source.contract.start_at, at(2)))
        source.add(2, "c", at(3))
        source.add(3, "d", at(3))
        deliver(source.append(at(2), at(4)))
        source.drop_day(2)
        source.add(2, "b corrected", at(5))
        source.add(2, "b corrected", at(5))
        # The last step: after it, day 2 and the rest are complete as of different instants,
        # and an append must start where every region it covers ends (Transitions 3).
        deliver(source.window(2, 2, at(6)))
        assert receiver.verify(source.table).publications == 3

    # Performance -----------------------------------------------------------------------------

    def test_memory_is_flat_in_the_delivery_size(
        self, receiver: Receiver, uid: str, tmp_path: Path
    ) -> None:
        """Rows stream from file to database a batch at a time: a delivery twice as large peaks
        at about the same memory, Python's (tracemalloc) and Arrow's (a proxy of its pool, made
        the default for the delivery). Holding every batch of the file raises Arrow's by half."""

        def peak(table: str, rows: int) -> tuple[int, int]:
            contract = orders_contract(table)
            receiver.register(contract)
            path = write_many(tmp_path / f"{table}.parquet", rows)
            default = pa.default_memory_pool()
            arrow = pa.proxy_memory_pool(default)
            pa.set_memory_pool(arrow)
            tracemalloc.start()
            try:
                receipt = receiver.receive(path, contract.manifest("full", at(2), rows=rows))
                _, top = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
                pa.set_memory_pool(default)
            assert receipt.outcome is Outcome.ACCEPTED, receipt.failed
            return top, arrow.max_memory()

        # Two batches already reach the plateau: one read ahead while the other is loaded.
        small = peak(f"small_{uid}", 2 * BATCH_ROWS)
        large = peak(f"large_{uid}", 4 * BATCH_ROWS)
        assert large[0] < 1.5 * small[0], ("Python", small, large)
        assert large[1] < 1.25 * small[1], ("Arrow", small, large)

    # Quality expectations (checks/expectations.py) ---------------------------------------------

    def expect(self, receiver: Receiver, source: Source, **mappings: Any) -> None:
        """Register the source's contract with these expectations (column_mapping, checks)."""
        receiver.register(source.contract, Expectations.from_dict(mappings))

    def baseline(self, receiver: Receiver, source: Source) -> tuple[Any, ...]:
        """Three orders published, and everything a refusal must then leave as it was."""
        for id_ in range(1, 4):
            source.put(id_, id_, f"n{id_}", at(1))
        self.publish_checked(receiver, source, source.full(at(2)))
        return self.state(receiver, source.table)

    def test_a_violated_block_expectation_rejects_and_changes_nothing(
        self, receiver: Receiver, source: Source
    ) -> None:
        before = self.baseline(receiver, source)
        null = {"null_check": {"equal_to": 0, "on_violation": "block"}}
        self.expect(receiver, source, column_mapping={"name": null})
        source.put(4, 4, None, at(3))  # type: ignore[arg-type]
        source.put(5, 5, None, at(3))  # type: ignore[arg-type]
        receipt = receiver.receive(*source.full(at(4)))
        self.assert_refused_changes_nothing(receiver, source.table, before, receipt)
        (failed,) = receipt.failed
        assert failed.name == "name.null_check"
        assert failed.detail == "violated (block): null count 2 (equal_to 0), 2 rows"

    def test_a_violated_warn_expectation_publishes_and_counts(
        self, receiver: Receiver, source: Source
    ) -> None:
        self.baseline(receiver, source)
        minimum = {"min": {"geq_to": 2, "on_violation": "warn"}}
        self.expect(receiver, source, column_mapping={"id": minimum})
        source.put(0, 1, "zero", at(3))
        receipt = self.publish_checked(receiver, source, source.full(at(4)))
        (warned,) = [c for c in receipt.checks if c.name == "id.min"]
        assert warned.passed
        assert warned.detail == "violated (warn): min 0 (geq_to 2), 2 rows"
        assert expectations.reported(receipt).summary == (
            "0 met; id.min violated (warn): min 0 (geq_to 2), 2 rows"
        )

    def test_no_expectations_declared_says_none_declared(
        self, receiver: Receiver, source: Source
    ) -> None:
        receipt = self.publish_checked(receiver, source, self.baseline_delivery(source))
        assert Check("expectations", True, "none_declared") in receipt.checks
        assert expectations.reported(receipt).summary == "none_declared"

    def baseline_delivery(self, source: Source) -> tuple[Path, Any]:
        source.put(1, 1, "one", at(1))
        return source.full(at(2))

    def test_met_expectations_publish_and_say_met(self, receiver: Receiver, source: Source) -> None:
        self.expect(
            receiver,
            source,
            column_mapping={"name": {"null_check": {"equal_to": 0, "on_violation": "block"}}},
        )
        receipt = self.publish_checked(receiver, source, self.baseline_delivery(source))
        (met,) = [c for c in receipt.checks if c.name == "name.null_check"]
        assert met == Check("name.null_check", True, "met: null count 0 (equal_to 0)")

    UNRUNNABLE: ClassVar[dict[str, dict[str, Any]]] = {
        # case: the declaration of an expectation the receiver cannot run (on_violation added)
        "an unknown column": {"column_mapping": {"amount": {"max": {"leq_to": 5}}}},
        "an SQL error": {"checks": {"broken": {"check_statement": "no_such_column > 0"}}},
        "a type it cannot compare": {"column_mapping": {"day": {"min": {"geq_to": 3}}}},
        "a runtime SQL error": {"checks": {"overflows": {"check_statement": "OVERFLOW"}}},
    }
    OVERFLOW: ClassVar[dict[str, str]] = {
        # A statement that compiles and fails on a row's value only, in the scan: SQLite turns
        # an overflowing sum into a float, but abs() of the smallest integer raises.
        "sqlite": "abs(id - 9223372036854775807 - 2) > 0",
        "postgresql": "id + 9223372036854775807 > 0",
        "mysql": "id + 9223372036854775807 > 0",
    }

    @pytest.mark.parametrize("consequence", ["block", "hold", "warn"])
    @pytest.mark.parametrize("case", UNRUNNABLE)
    def test_an_expectation_that_cannot_run_violates_its_consequence(
        self, receiver: Receiver, source: Source, case: str, consequence: str
    ) -> None:
        text = json.dumps(self.UNRUNNABLE[case]).replace(
            "OVERFLOW", self.OVERFLOW[self.dialect.name]
        )
        declared = json.loads(text)
        for mapping in declared.values():
            for spec in mapping.values():
                for check in spec.values() if "check_statement" not in spec else [spec]:
                    check["on_violation"] = consequence
        before = self.baseline(receiver, source)
        receiver.register(source.contract, Expectations.from_dict(declared))
        source.put(9, 9, "nine", at(3))
        delivery = source.full(at(4))
        if consequence == "warn":
            receipt = self.publish_checked(receiver, source, delivery)
            (warned,) = expectations.reported(receipt).violations
            assert warned.passed and warned.detail.startswith("violated (warn): could not run: ")
            return
        decision = receiver.decide(*delivery)
        if consequence == "hold":  # held: nothing published, nothing recorded (holds.py)
            assert decision.held and self.state(receiver, source.table) == before
            receipt = decision.receipt
        else:
            receipt = decision.receipt
            self.assert_refused_changes_nothing(receiver, source.table, before, receipt)
        (failed,) = receipt.failed
        assert failed.detail.startswith(f"violated ({consequence}): could not run: ")

    def test_a_violated_hold_publishes_nothing(self, receiver: Receiver, source: Source) -> None:
        """Held, not published, nothing recorded (hold_conformance.py has the rest)."""
        before = self.baseline(receiver, source)
        maximum = {"max": {"less_than": 4, "on_violation": "hold"}}
        self.expect(receiver, source, column_mapping={"id": maximum})
        source.put(7, 1, "seven", at(3))
        decision = receiver.decide(*source.full(at(4)))
        assert decision.held and self.state(receiver, source.table) == before
        (failed,) = decision.receipt.failed
        assert failed.detail == "violated (hold): max 7 (less_than 4), 1 row"

    def test_a_hold_beside_a_block_is_rejected_as_the_block(
        self, receiver: Receiver, source: Source
    ) -> None:
        before = self.baseline(receiver, source)
        self.expect(
            receiver,
            source,
            column_mapping={
                "id": {"max": {"less_than": 4, "on_violation": "hold"}},
                "name": {"null_check": {"equal_to": 0, "on_violation": "block"}},
            },
        )
        source.put(7, 1, None, at(3))  # type: ignore[arg-type]
        receipt = receiver.receive(*source.full(at(4)))
        self.assert_refused_changes_nothing(receiver, source.table, before, receipt)
        assert {c.name for c in receipt.failed} == {"id.max", "name.null_check"}

    COLUMN_CASES: ClassVar[dict[str, tuple[str, str, dict[str, Any], bool, str]]] = {
        # case: column, check, bounds, violated, observed (ids 1, 2, 3 and 3 names n1, n1, None)
        "null_check equal_to": ("name", "null_check", {"equal_to": 0}, True, "null count 1"),
        "null_check leq_to": ("name", "null_check", {"leq_to": 1}, False, "null count 1"),
        "distinct_check equal_to": ("name", "distinct_check", {"equal_to": 1}, False, "1"),
        "distinct_check greater_than": (
            "name",
            "distinct_check",
            {"greater_than": 1},
            True,
            "distinct count 1",
        ),
        "unique_check equal_to": ("name", "unique_check", {"equal_to": 0}, True, "duplicates 1"),
        "unique_check on the key": ("id", "unique_check", {"equal_to": 0}, False, "duplicates 0"),
        "min geq_to": ("id", "min", {"geq_to": 1}, False, "min 1"),
        "min greater_than": ("id", "min", {"greater_than": 1}, True, "min 1"),
        "min tolerance": ("id", "min", {"greater_than": 1.1, "tolerance": 0.1}, False, "min 1"),
        "max less_than": ("id", "max", {"less_than": 3}, True, "max 3"),
        "max leq_to": ("id", "max", {"leq_to": 3}, False, "max 3"),
        "max equal_to with tolerance": ("id", "max", {"equal_to": 2, "tolerance": 0.5}, False, "3"),
        "max of a date": ("day", "max", {"leq_to": {"$date": "2026-01-03"}}, True, "2026-01-04"),
        "min of a datetime": (
            "updated_at",
            "min",
            {"geq_to": {"$datetime": "2026-01-01T01:00:00Z"}},
            False,
            "min",
        ),
        "min of a string in code-point order": ("name", "min", {"geq_to": "n"}, False, "'n1'"),
        "max of a string": ("name", "max", {"less_than": "n1"}, True, "max 'n1'"),
    }

    @pytest.mark.parametrize("case", COLUMN_CASES)
    def test_each_column_check_compares_as_common_sql_does(
        self, receiver: Receiver, source: Source, case: str
    ) -> None:
        column, check, bounds, violated, observed = self.COLUMN_CASES[case]
        spec = {check: {**bounds, "on_violation": "warn"}}
        self.expect(receiver, source, column_mapping={column: spec})
        source.put(1, 1, "n1", at(1))
        source.put(2, 2, "n1", at(1))
        source.put(3, 3, None, at(1))  # type: ignore[arg-type]
        receipt = self.publish_checked(receiver, source, source.full(at(2)))
        (found,) = [c for c in receipt.checks if c.name == f"{column}.{check}"]
        assert found.passed
        assert found.detail.startswith("violated (warn): " if violated else "met: "), found
        assert observed in found.detail, found

    def test_a_row_check_statement_counts_the_live_rows_it_fails(
        self, receiver: Receiver, source: Source
    ) -> None:
        """A tombstone is not checked: its values other than its key may be null."""
        self.baseline(receiver, source)
        statement = {"check_statement": "id % 2 = 1 AND name LIKE 'n%'", "on_violation": "warn"}
        self.expect(receiver, source, checks={"odd_and_named": statement})
        source.put(4, 4, "n4", at(3))
        source.put(5, 5, "x", at(3))
        source.put(7, 5, "n7", at(3))
        receipt = receiver.receive(*source.changes(at(2), at(4), deleted=(8,)))
        assert receipt.outcome is Outcome.ACCEPTED, receipt.failed
        (found,) = [c for c in receipt.checks if c.name == "odd_and_named"]
        assert found.detail == (
            "violated (warn): 2 live rows not satisfying id % 2 = 1 AND name LIKE 'n%', 2 rows"
        )

    def test_an_aggregate_check_statement_holds_once_over_the_delivery(
        self, receiver: Receiver, source: Source
    ) -> None:
        self.expect(
            receiver,
            source,
            checks={
                "some_rows": {"check_statement": "COUNT(*) >= 1", "on_violation": "block"},
                "many_rows": {"check_statement": "COUNT(*) > 100", "on_violation": "warn"},
            },
        )
        receipt = self.publish_checked(receiver, source, self.baseline_delivery(source))
        found = {c.name: c.detail for c in receipt.checks}
        assert found["some_rows"] == "met: COUNT(*) >= 1 is true"
        assert found["many_rows"] == "violated (warn): COUNT(*) > 100 is false"

    def test_an_orphan_check_reads_another_published_table(
        self, receiver: Receiver, uid: str, tmp_path: Path
    ) -> None:
        orders, lines = Source(f"orders_{uid}", tmp_path), Source(f"lines_{uid}", tmp_path)
        receiver.register(orders.contract)
        orders.put(1, 1, "o1", at(1))
        self.publish_checked(receiver, orders, orders.full(at(2)))
        orphans = {
            "check_statement": f"id IN (SELECT id FROM {orders.table})",
            "on_violation": "block",
        }
        self.expect(receiver, lines, checks={"lines_have_an_order": orphans})
        lines.put(1, 1, "l1", at(1))
        lines.put(2, 1, "l2", at(1))
        receipt = receiver.receive(*lines.full(at(2)))
        assert [c.detail for c in receipt.failed] == [
            f"violated (block): 1 live row not satisfying {orphans['check_statement']}, 1 row"
        ]

    def test_row_count_compares_with_the_last_accepted_delivery(
        self, receiver: Receiver, source: Source
    ) -> None:
        near = {"row_count": {"tolerance": 0.5}, "on_violation": "block"}
        self.expect(receiver, source, checks={"rows_near_last": near})
        first = self.publish_checked(receiver, source, self.baseline_delivery(source))
        assert {c.name: c.detail for c in first.checks}["rows_near_last"] == (
            "met: 1 live row; no accepted delivery yet to compare with"
        )
        source.put(2, 2, "two", at(3))
        receipt = receiver.receive(*source.full(at(4)))
        assert [c.detail for c in receipt.failed] == [
            "violated (block): 2 live rows, the last accepted delivery 1 (tolerance 0.5)"
        ]

    def test_expectations_are_stored_with_the_contract(
        self, receiver: Receiver, source: Source
    ) -> None:
        declared = Expectations.from_dict(
            {"column_mapping": {"id": {"min": {"geq_to": 0, "on_violation": "block"}}}}
        )
        receiver.register(source.contract, declared)
        assert receiver.expectations(source.table) == declared
        receiver.register(source.contract)  # a task declaring none leaves them
        assert receiver.expectations(source.table) == declared
        receiver.register(source.contract, Expectations())
        assert receiver.expectations(source.table) == Expectations()

    def test_a_group_with_a_blocked_table_is_rejected_as_one(
        self, receiver: Receiver, uid: str, tmp_path: Path
    ) -> None:
        group, orders, lines = self.pair(receiver, uid, tmp_path)
        minimum = {"min": {"geq_to": 2, "on_violation": "block"}}
        self.expect(receiver, lines, column_mapping={"id": minimum})
        receipts = receiver.receive_group(
            group, {orders.table: orders.full(at(2)), lines.table: lines.full(at(2))}
        )
        assert [r.outcome for r in receipts] == [Outcome.REJECTED] * 2
        assert [c.name for c in receipts[0].failed] == ["together"]
        assert {c.name for c in receipts[1].failed} == {"id.min", "together"}

    def test_an_operational_failure_in_the_expectations_scan_raises(
        self, connect: Connect, receiver: Receiver, source: Source, uid: str
    ) -> None:
        """A failure of the connection while the expectations run is no violation: it raises,
        and no receipt is recorded for what did not happen."""
        before = self.baseline(receiver, source)
        self.expect(
            receiver,
            source,
            column_mapping={"id": {"max": {"leq_to": 9, "on_violation": "block"}}},
        )
        faulty = Receiver(
            # The expectation's own aggregate: the store's statements use MAX too.
            lambda: FaultyConnection(connect(), f"MAX({self.dialect.quote('id')})"),
            self.dialect,
            prefix=f"s{uid}",
            clock=lambda: NOW,
        )
        source.put(4, 4, "four", at(3))
        with pytest.raises((ConnectionError, self.driver_error)):
            faulty.receive(*source.full(at(4)))
        assert self.state(receiver, source.table) == before

    def test_violating_rows_are_selected_with_their_count(
        self, receiver: Receiver, source: Source, tmp_path: Path
    ) -> None:
        """What a person is shown of a held delivery: the rows an expectation faults."""
        for id_ in range(1, 6):
            source.put(id_, id_, None if id_ % 2 else f"n{id_}", at(1))  # type: ignore[arg-type]
        path, manifest = source.full(at(2))
        staged = receiver.steps.stage(str(path), manifest, source.contract)
        declared = Expectations.from_dict(
            {
                "column_mapping": {"name": {"null_check": {"equal_to": 0, "on_violation": "hold"}}},
                "checks": {
                    "small": {"check_statement": "id < 3", "on_violation": "hold"},
                    "few": {"check_statement": "COUNT(*) < 3", "on_violation": "hold"},
                },
            }
        )
        nulls, small, few = declared.items
        try:
            with transaction(receiver.connect, self.dialect, write=False) as connection:
                found = expectations.violating_rows(
                    connection, self.dialect, staged, nulls, contract=source.contract, limit=2
                )
                over = expectations.violating_rows(
                    connection, self.dialect, staged, small, contract=source.contract
                )
                whole = expectations.violating_rows(
                    connection, self.dialect, staged, few, contract=source.contract
                )
        finally:
            receiver.steps.discard((staged,))
        assert found.count == 3 and [row[1] for row in found.rows] == [1, 3]
        assert found.columns[:2] == ("_dogana_row", "id")
        assert over.count == 3 and [row[1] for row in over.rows] == [3, 4, 5]
        assert whole.count is None and whole.reason
