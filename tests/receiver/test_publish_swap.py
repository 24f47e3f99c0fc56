"""A whole-table replacement publishes its checked staging table itself (actions.py's swap), on
the databases whose DDL joins the publication's transaction; what a swap would break is copied.

The published table's identity tells the two apart: after a swap it is the very table the rows
were staged in (PostgreSQL's oid, SQLite's root page), after a copy the table it was.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg2
import pytest
from receiver_deliveries import NOW, Source, at
from test_receiver_postgres import drop_tables

from dogana_core.gate import Outcome
from dogana_provider.dialects import POSTGRES, SQLITE, Dialect
from dogana_provider.receiver.actions import key_index_name
from dogana_provider.receiver.receiver import Receiver


class Database:
    def __init__(self, connect: Callable[[], Any], dialect: Dialect) -> None:
        self.connect, self.dialect = connect, dialect

    def one(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        connection = self.connect()
        try:
            cursor = connection.cursor()
            cursor.execute(sql, params)
            row = cursor.fetchone() if cursor.description else None
            connection.commit()
            return None if row is None else row[0]
        finally:
            connection.close()

    def identity(self, table: str) -> Any:
        if self.dialect is POSTGRES:
            return self.one("SELECT to_regclass(%s)::oid", (POSTGRES.quote(table),))
        return self.one("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,))


@pytest.fixture
def uid() -> str:
    return uuid.uuid4().hex[:10]


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, tmp_path: Path, uid: str) -> Iterator[Database]:
    if request.param == "sqlite":
        path = tmp_path / "receiver.sqlite"
        yield Database(lambda: sqlite3.connect(path), SQLITE)
        return
    url = request.getfixturevalue("postgres_url")
    yield Database(lambda: psycopg2.connect(url), POSTGRES)
    drop_tables(url, uid)  # every table of the test carries its uid


@pytest.fixture
def source(uid: str, tmp_path: Path) -> Source:
    return Source(f"orders_{uid}", tmp_path)


def published_once(database: Database, uid: str, source: Source) -> Receiver:
    """A receiver that published row 1 of the source, read whole; row 2 then added to it."""
    receiver = Receiver(database.connect, database.dialect, prefix=f"s{uid}", clock=lambda: NOW)
    receiver.register(source.contract)
    source.put(1, 1, "n1", at(1))
    receiver.receive(*source.full(at(2)))
    source.put(2, 2, "n2", at(3))
    return receiver


def published_rows(receiver: Receiver, table: str) -> list[tuple[Any, ...]]:
    with receiver.read(table) as snapshot:
        return sorted((row[0], row[1]) for row in snapshot.rows)


def test_a_full_replacement_publishes_its_checked_staging_table(
    database: Database, uid: str, source: Source
) -> None:
    receiver = published_once(database, uid, source)
    decision = receiver.decide(*source.full(at(4)))
    assert decision.staged is not None
    staged = database.identity(decision.staged.table)
    receipt = receiver.publish(decision)
    assert receipt.outcome is Outcome.ACCEPTED
    assert database.identity(source.table) == staged
    with receiver.read(source.table) as snapshot:
        assert snapshot.columns == ("id", "day", "name", "updated_at")
        assert sorted(row[0] for row in snapshot.rows) == [1, 2]
    receiver.verify(source.table)


def test_a_table_a_view_reads_is_replaced_by_copying_its_rows(
    database: Database, uid: str, source: Source
) -> None:
    receiver = published_once(database, uid, source)
    view, table = database.dialect.quote(f"view_{uid}"), database.dialect.quote(source.table)
    database.one(f"CREATE VIEW {view} AS SELECT id FROM {table}")
    before = database.identity(source.table)
    assert receiver.receive(*source.full(at(4))).outcome is Outcome.ACCEPTED
    assert database.identity(source.table) == before
    assert database.one(f"SELECT count(*) FROM {view}") == 2
    database.one(f"DROP VIEW {view}")


def test_a_changes_delivery_is_applied_to_the_published_table(
    database: Database, uid: str, source: Source
) -> None:
    receiver = published_once(database, uid, source)
    before = database.identity(source.table)
    assert receiver.receive(*source.changes(at(2), at(4))).outcome is Outcome.ACCEPTED
    assert database.identity(source.table) == before
    assert [id_ for id_, _ in published_rows(receiver, source.table)] == [1, 2]


def test_sqlite_stages_with_the_key_index_a_swap_keeps_as_the_published_tables_own(
    tmp_path: Path, uid: str, source: Source
) -> None:
    """The stage builds the staging table's key index (the row checks' COUNT(DISTINCT) reads
    it); swapped in, it is the published table's key index, and no second one is built; the
    next changes delivery finds it too."""
    path = tmp_path / "receiver.sqlite"
    database = Database(lambda: sqlite3.connect(path), SQLITE)
    receiver = published_once(database, uid, source)
    prefix = key_index_name(source.table)

    def indexes(table: str) -> list[str]:
        connection = sqlite3.connect(path)
        try:
            found = connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? "
                "AND name LIKE 'dogana_key_%' ORDER BY name",
                (table,),
            )
            return [name for (name,) in found]
        finally:
            connection.close()

    decision = receiver.decide(*source.full(at(4)))
    assert decision.staged is not None
    [staged] = indexes(decision.staged.table)
    assert staged.startswith(f"{prefix}_")
    assert receiver.publish(decision).outcome is Outcome.ACCEPTED
    assert indexes(source.table) == [staged]
    connection = sqlite3.connect(path)
    try:
        quoted = SQLITE.quote(source.table)
        plan = connection.execute(f"EXPLAIN QUERY PLAN SELECT * FROM {quoted} WHERE id = 2")
        assert staged in " ".join(str(row[-1]) for row in plan)  # a lookup by key reads it
    finally:
        connection.close()
    assert receiver.receive(*source.changes(at(4), at(5))).outcome is Outcome.ACCEPTED
    assert indexes(source.table) == [staged]


@pytest.mark.postgres
@pytest.mark.parametrize("replaced", ["swapped in", "copied behind a view"])
def test_a_replaced_table_has_statistics_so_a_changes_delivery_finds_its_keys_by_index(
    postgres_url: str, uid: str, source: Source, replaced: str
) -> None:
    """A table whose rows were all replaced was never analyzed since: the planner would take
    each key for one value in 200 and a staged-key array for ten keys, and past a few million
    rows delete by scanning the whole table against every staged key. The statistics are
    gathered with the replacement, swapped or copied."""
    database = Database(lambda: psycopg2.connect(postgres_url), POSTGRES)
    receiver = published_once(database, uid, source)
    table = POSTGRES.quote(source.table)
    view = POSTGRES.quote(f"view_{uid}")
    if replaced == "copied behind a view":
        database.one(f"CREATE VIEW {view} AS SELECT id FROM {table}")
    for key in range(3, 2001):
        source.put(key, key, f"n{key}", at(3))
    assert receiver.receive(*source.full(at(4))).outcome is Outcome.ACCEPTED
    # ANALYZE counts the rows; a copy's DELETE and INSERT leave the count the swap made.
    assert database.one("SELECT reltuples FROM pg_class WHERE oid = %s::regclass", (table,)) == 2000
    assert (
        database.one(
            "SELECT n_distinct FROM pg_stats WHERE tablename = %s AND attname = 'id'",
            (source.table,),
        )
        == -1
    )  # every key distinct
    plan = database.one(
        f"EXPLAIN (FORMAT JSON) DELETE FROM {table} "
        f"WHERE {POSTGRES.one_key_match('id', 'SELECT 1')}"
    )
    assert plan[0]["Plan"]["Plans"][-1]["Plan Rows"] <= 10, plan
    database.one(f"DROP VIEW IF EXISTS {view}")
