"""Registration at once: any number of callers creating the receiver's own tables, registering
contracts and evolving one, in threads and in processes, on SQLite, PostgreSQL and MariaDB.

Each test starts from a receiver whose own tables do not exist: a SQLite file, a PostgreSQL
schema or a MariaDB database of its own, made for the test and dropped after it, so the
CREATE TABLE statements really race (on PostgreSQL two of them used to fail with a
UniqueViolation on pg_type). The callers wait at a barrier, then call register() together; each
reports what it got back, or its error, and the test fails on any error. Bounded: every caller
is joined with a timeout, so a deadlock fails instead of hanging the suite.
"""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest
from receiver_deliveries import NOW, Source, at, orders_contract

from dogana_core.contract import Contract, Shape
from dogana_core.gate import Outcome
from dogana_core.ledger import Ledger
from dogana_core.manifest import Manifest

CALLERS = 8
TIMEOUT = 120  # seconds for every caller together


@dataclass(frozen=True)
class Empty:
    """A database where the receiver's tables do not exist yet, reachable from any process."""

    kind: str
    where: str  # the SQLite file, the PostgreSQL URL with its schema, the MariaDB URL

    def receiver(self) -> Any:
        """A receiver on it, its clock the deliveries' (receiver_deliveries.NOW)."""
        from dogana_provider.dialects import MARIADB, POSTGRES, SQLITE
        from dogana_provider.receiver import Receiver

        def clock() -> Any:
            return NOW

        if self.kind == "sqlite":
            return Receiver(lambda: sqlite3.connect(self.where, timeout=60), SQLITE, clock=clock)
        if self.kind == "postgres":
            import psycopg2

            url, schema = self.where.rsplit("#", 1)
            return Receiver(
                lambda: psycopg2.connect(url, options=f"-csearch_path={schema}"),
                POSTGRES,
                clock=clock,
            )
        from test_receiver_mariadb import connector

        return Receiver(connector(self.where), MARIADB, clock=clock)


@pytest.fixture(
    params=[
        "sqlite",
        pytest.param("postgres", marks=pytest.mark.postgres),
        pytest.param("mariadb", marks=pytest.mark.mariadb),
    ]
)
def empty(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Empty]:
    name = f"dogana_reg_{uuid.uuid4().hex[:10]}"
    if request.param == "sqlite":
        yield Empty("sqlite", str(tmp_path / "receiver.sqlite"))
    elif request.param == "postgres":
        url = request.getfixturevalue("postgres_url")
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute(f"CREATE SCHEMA {name}")
        try:
            yield Empty("postgres", f"{url}#{name}")
        finally:
            with psycopg.connect(url, autocommit=True) as connection:
                connection.execute(f"DROP SCHEMA {name} CASCADE")
    else:
        url = request.getfixturevalue("mariadb_url")
        server = urlsplit(url)._replace(path="").geturl()
        _mariadb(server, f"CREATE DATABASE {name}")
        try:
            yield Empty("mariadb", f"{server}/{name}")
        finally:
            _mariadb(server, f"DROP DATABASE {name}")


def _mariadb(server: str, statement: str) -> None:
    from test_receiver_mariadb import connector

    connection = connector(server)()
    try:
        connection.cursor().execute(statement)
    finally:
        connection.close()


def _call(
    empty: Empty, job: Callable[[Any, Any], str], argument: Any, start: Any, out: Any
) -> None:
    """One caller: wait for the others, run job(receiver, argument), report its text or error."""
    receiver = empty.receiver()
    start.wait(TIMEOUT)
    try:
        out.put(("ok", job(receiver, argument)))
    except BaseException as exc:  # reported to the test, which fails on it
        out.put(("error", f"{type(exc).__name__}: {exc}"))


def at_once(
    empty: Empty, job: Callable[[Any, Any], str], arguments: list[Any], mode: str
) -> list[str]:
    """job(receiver, argument) for each argument, all at once, in threads or in processes."""
    Worker: Callable[..., Any]
    if mode == "threads":
        import queue

        start: Any = threading.Barrier(len(arguments))
        out: Any = queue.Queue()
        Worker = threading.Thread
    else:
        context = multiprocessing.get_context("fork")
        start, out, Worker = context.Barrier(len(arguments)), context.Queue(), context.Process
    workers = [
        Worker(target=_call, args=(empty, job, argument, start, out)) for argument in arguments
    ]
    for worker in workers:
        worker.start()
    results = [out.get(timeout=TIMEOUT) for _ in workers]
    for worker in workers:
        worker.join(TIMEOUT)
    errors = [text for kind, text in results if kind == "error"]
    assert not errors, errors
    return [text for _, text in results]


def register(receiver: Any, contract: Contract) -> str:
    return str(receiver.register(contract).to_json())


def registered_at_once(empty: Empty, contracts: list[Contract], mode: str) -> list[Ledger]:
    return [Ledger.from_json(text) for text in at_once(empty, register, contracts, mode)]


def decide(receiver: Any, delivery: tuple[Path, Manifest]) -> str:
    return str(receiver.decide(*delivery).receipt.outcome)


MODES = ["threads", "processes"]


@pytest.mark.parametrize("mode", MODES)
def test_many_tables_registered_at_once_in_an_empty_receiver_are_each_registered_once(
    empty: Empty, mode: str
) -> None:
    contracts = [orders_contract(f"t{i}_{uuid.uuid4().hex[:6]}") for i in range(CALLERS)]
    registered_at_once(empty, contracts, mode)
    receiver = empty.receiver()
    for contract in contracts:
        assert receiver.ledger(contract.table) == Ledger.new(contract)


@pytest.mark.parametrize("mode", MODES)
def test_one_contract_registered_at_once_by_many_gives_each_the_same_new_ledger(
    empty: Empty, mode: str
) -> None:
    contract = orders_contract(f"orders_{uuid.uuid4().hex[:6]}")
    ledgers = registered_at_once(empty, [contract] * CALLERS, mode)
    assert ledgers == [Ledger.new(contract)] * CALLERS
    assert empty.receiver().ledger(contract.table) == Ledger.new(contract)


@pytest.mark.parametrize("mode", MODES)
def test_a_contract_evolved_at_once_by_many_ends_as_the_evolved_contract(
    empty: Empty, mode: str
) -> None:
    table = f"orders_{uuid.uuid4().hex[:6]}"
    empty.receiver().register(orders_contract(table))
    # A shape added: an evolution any table may take (shapes are not fixed fields).
    first = orders_contract(table)
    evolved = replace(first, shapes=(*first.shapes, ("weekly", Shape.complete(cost=10))))
    ledgers = registered_at_once(empty, [evolved] * CALLERS, mode)
    expected = Ledger.new(orders_contract(table)).with_contract(evolved)
    assert ledgers == [expected] * CALLERS
    assert empty.receiver().ledger(table).contract == evolved


@pytest.mark.parametrize("mode", MODES)
def test_one_new_table_decided_at_once_by_many_creates_its_published_table_once(
    empty: Empty, mode: str, tmp_path: Path
) -> None:
    """Each decision stages its rows and creates the published table when missing (the row
    checks read it): the first delivery of a table, gated by many at once, creates it once."""
    source = Source(f"orders_{uuid.uuid4().hex[:6]}", tmp_path)
    empty.receiver().register(source.contract)
    source.put(1, 1, "one", at(1))
    outcomes = at_once(empty, decide, [source.full(at(2))] * CALLERS, mode)
    assert outcomes == [str(Outcome.ACCEPTED)] * CALLERS


def test_a_registration_on_a_store_with_every_table_creates_nothing(tmp_path: Path) -> None:
    from dogana_provider.dialects import SQLITE
    from dogana_provider.receiver import Receiver

    path = tmp_path / "receiver.sqlite"
    Receiver(lambda: sqlite3.connect(path), SQLITE).register(orders_contract("orders"))
    statements: list[str] = []

    def traced() -> sqlite3.Connection:
        connection = sqlite3.connect(path)
        connection.set_trace_callback(statements.append)
        return connection

    Receiver(traced, SQLITE).register(orders_contract("lines"))
    assert statements, "the trace saw the registration"
    assert not [s for s in statements if s.lstrip().upper().startswith("CREATE")]


def test_a_store_missing_one_of_its_tables_gets_it_at_the_next_registration(
    empty: Empty,
) -> None:
    from dogana_provider.receiver.transactions import transaction

    receiver = empty.receiver()
    receiver.register(orders_contract("orders"))
    missing = receiver.steps.store.own_names[-1]
    with transaction(receiver.connect, receiver.dialect) as connection:
        connection.cursor().execute(f"DROP TABLE {receiver.dialect.quote(missing)}")
    again = empty.receiver()
    again.register(orders_contract("orders"))
    with transaction(again.connect, again.dialect, write=False) as connection:
        names = again.steps.created_names
        assert set(names) <= again.dialect.existing_names(connection, names)


def registered_and_traced(tmp_path: Path) -> tuple[Source, Callable[[], Any], list[str]]:
    """A source table registered in a SQLite receiver, and a maker of new receivers of that
    file (each as a new task process has) whose connections record every statement they run
    in the list."""
    from dogana_provider.dialects import SQLITE
    from dogana_provider.receiver import Receiver

    path = tmp_path / "receiver.sqlite"
    source = Source("orders", tmp_path)
    Receiver(lambda: sqlite3.connect(path), SQLITE, clock=lambda: NOW).register(source.contract)
    statements: list[str] = []

    def traced() -> sqlite3.Connection:
        connection = sqlite3.connect(path)
        connection.set_trace_callback(statements.append)
        return connection

    return source, lambda: Receiver(traced, SQLITE, clock=lambda: NOW), statements


def test_a_receiver_looks_its_own_tables_up_together_not_one_by_one(tmp_path: Path) -> None:
    source, new_receiver, statements = registered_and_traced(tmp_path)
    receiver = new_receiver()
    source.put(1, 1, "one", at(1))
    assert receiver.receive(*source.full(at(2))).outcome is Outcome.ACCEPTED
    own = receiver.steps.own_names
    alone = [s for s in statements if "table_info" in s and any(f"'{n}'" in s for n in own)]
    assert alone == []


CATALOG = "FROM sqlite_master WHERE type IN ('table', 'index')"  # Dialect.existing_names


def test_a_step_reads_the_catalog_of_its_own_tables_once(tmp_path: Path) -> None:
    """Within one step (Receiver.step: decide, publish) a receiver's own table the catalog did
    not show (here the schema versions', which no policy made) is not looked up again."""
    source, new_receiver, statements = registered_and_traced(tmp_path)
    source.put(1, 1, "one", at(1))
    decision = new_receiver().decide(*source.full(at(2)))
    assert decision.to_publish, decision.receipt.failed
    assert sum(CATALOG in s for s in statements) == 1
    statements.clear()
    receipt = new_receiver().publish(decision)
    assert receipt.outcome is Outcome.ACCEPTED
    assert sum(CATALOG in s for s in statements) == 1


def test_a_table_a_step_creates_is_seen_in_that_step(tmp_path: Path) -> None:
    """A registration in a step creates the receiver's tables the step's catalog read did not
    show: the step sees them (OwnTables.made), so a sweep in it finds the staging it noted."""
    from contextlib import closing
    from datetime import timedelta

    from dogana_provider.dialects import SQLITE
    from dogana_provider.receiver import Receiver

    path = tmp_path / "receiver.sqlite"
    source = Source("orders", tmp_path)
    receiver = Receiver(lambda: sqlite3.connect(path), SQLITE, clock=lambda: NOW)
    source.put(1, 1, "one", at(1))
    with receiver.step(), closing(sqlite3.connect(path)) as connection:
        assert not receiver.steps.created(connection)  # the step's catalog read: none yet
        receiver.register(source.contract)
        decision = receiver.decide(*source.full(at(2)))
        assert decision.staged is not None, decision.receipt.failed
        assert receiver.sweep(timedelta(0)) == (decision.staged.table,)
