"""`dogana holds` and `dogana hold` on live receivers, read by URL as a person at a terminal would:
every rule on SQLite, and a person's whole round (list, show, release, discard) on PostgreSQL and
MariaDB.

The receiver's orders table declares one expectation, amount never negative, on_violation hold;
two deliveries are held: orders-1 with two negative amounts, orders-2 with one.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from cli_fixtures import ORDERS, PRODUCED, dogana, order, write

from dogana_core.gate import Outcome
from dogana_core.group import Group
from dogana_provider.checks.expectations import Expectations
from dogana_provider.dialects import MARIADB, POSTGRES, SQLITE
from dogana_provider.receiver import Receiver

pytestmark = pytest.mark.airflow  # the commands open the receiver through DoganaHook

PERSON = "Ada Lovelace"
HOLD = {"column_mapping": {"amount": {"min": {"geq_to": 0, "on_violation": "hold"}}}}


@dataclass(frozen=True)
class Live:
    url: str
    receiver: Receiver


def hold_two(receiver: Receiver, directory: Path) -> None:
    """orders-1: three orders, two with a negative amount; orders-2: a later read, one."""
    receiver.register(ORDERS, Expectations.from_dict(HOLD))
    first = write(
        directory / "first.parquet",
        [order(1, 1), order(2, 15, amount=-3.0), order(3, 30, amount=-1.5)],
    )
    second = write(directory / "second.parquet", [order(1, 1), order(2, 15, amount=-4.0)])
    held = [
        receiver.decide(first, ORDERS.manifest("nightly", PRODUCED, rows=3)).hold,
        receiver.decide(
            second, ORDERS.manifest("nightly", PRODUCED + timedelta(minutes=5), rows=2)
        ).hold,
    ]
    assert held == ["orders-1", "orders-2"]


def sqlite_live(directory: Path) -> Live:
    path = directory / "warehouse.sqlite"
    receiver = Receiver(lambda: sqlite3.connect(path), SQLITE)
    hold_two(receiver, directory)
    return Live(f"sqlite:///{path}", receiver)


@pytest.fixture
def live(tmp_path: Path) -> Live:
    return sqlite_live(tmp_path)


@pytest.fixture(
    params=[
        pytest.param("postgres", marks=pytest.mark.postgres),
        pytest.param("mariadb", marks=pytest.mark.mariadb),
    ]
)
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Live]:
    """The receiver in a PostgreSQL schema, or a MariaDB database, made for the test."""
    name = f"holds_{uuid.uuid4().hex[:10]}"
    if request.param == "postgres":
        import psycopg2

        url = request.getfixturevalue("postgres_url")
        admin: Callable[[str], None] = lambda sql: _run(psycopg2.connect(url), sql)  # noqa: E731
        admin(f"CREATE SCHEMA {name}")
        options = f"-csearch_path={name}"
        receiver = Receiver(lambda: psycopg2.connect(url, options=options), POSTGRES)
        found = f"{url}?options={options.replace('=', '%3D')}"
        drop = f"DROP SCHEMA {name} CASCADE"
    else:
        import MySQLdb

        request.getfixturevalue("mariadb_url")
        server = {"host": "127.0.0.1", "port": 3306, "user": "root"}
        admin = lambda sql: _run(MySQLdb.connect(**server), sql)  # noqa: E731
        admin(f"CREATE DATABASE {name}")
        receiver = Receiver(lambda: MySQLdb.connect(**server, database=name), MARIADB)
        found = f"mysql://root@127.0.0.1:3306/{name}"
        drop = f"DROP DATABASE {name}"
    try:
        hold_two(receiver, tmp_path)
        yield Live(found, receiver)
    finally:
        admin(drop)


def _run(connection: Any, sql: str) -> None:
    try:
        connection.autocommit = True
        connection.cursor().execute(sql)
    finally:
        connection.close()


def test_holds_lists_each_held_delivery_with_the_expectations_it_violated(
    live: Live, tmp_path: Path
) -> None:
    listed = dogana("holds", live.url, cwd=tmp_path)
    assert listed.code == 0, listed.err
    lines = listed.out.splitlines()
    assert lines[0] == f"receiver {live.url}: 2 held deliveries"
    assert lines[1].split() == ["hold", "tables", "held", "at", "held", "for", "rows", "violated"]
    assert [line.split()[:2] for line in lines[3:]] == [
        ["orders-1", "orders"],
        ["orders-2", "orders"],
    ]
    assert all(line.endswith("amount.min") for line in lines[3:])
    other = dogana("holds", live.url, "--table", "invoices", cwd=tmp_path)
    assert other.out.splitlines() == [f"receiver {live.url}: 0 held deliveries of table invoices"]


def test_status_names_each_held_delivery_until_a_person_ends_it(live: Live, tmp_path: Path) -> None:
    status = dogana("status", live.url, cwd=tmp_path)
    assert status.code == 0, status.err
    held = [line.split(" since ")[0] for line in status.out.splitlines() if " held " in line]
    assert held == ["  orders: held orders-1", "  orders: held orders-2"]
    assert f"(dogana hold show {live.url} orders-1)" in status.out
    table = dogana("status", live.url, "--table", "orders", cwd=tmp_path)
    assert "  held             orders-1, orders-2" in table.out.splitlines()
    dogana("hold", "release", live.url, "orders-1", "--by", PERSON, cwd=tmp_path)
    shown = json.loads(dogana("status", live.url, "--json", cwd=tmp_path).out)
    assert [hold["hold_id"] for hold in shown["tables"][0]["held"]] == ["orders-2"]


def test_hold_show_prints_the_violating_rows_up_to_the_limit_and_their_count(
    live: Live, tmp_path: Path
) -> None:
    shown = dogana("hold", "show", live.url, "orders-1", "--limit", "1", cwd=tmp_path)
    assert shown.code == 0, shown.err
    lines = shown.out.splitlines()
    assert lines[0] == f"hold orders-1 of orders in receiver {live.url}: held"
    assert "orders: amount.min: violated (hold): min -3.0 (geq_to 0), 2 rows" in lines
    assert "  2 rows violate it, the first 1 below" in lines
    at = lines.index("  2 rows violate it, the first 1 below") + 1
    assert lines[at].split() == [
        "_dogana_row", "id", "order_date", "updated_at", "is_deleted", "amount",
    ]  # fmt: skip
    (row,) = [line.split() for line in lines[at + 2 : at + 3]]
    assert (row[1], row[-1]) == ("2", "-3.0")  # the first of the two, in file order
    assert f'  dogana hold release {live.url} orders-1 --by "YOUR NAME"' in lines


def test_hold_release_publishes_it_recording_who_and_when(live: Live, tmp_path: Path) -> None:
    released = dogana("hold", "release", live.url, "orders-1", "--by", PERSON, cwd=tmp_path)
    assert released.code == 0, released.err
    assert released.out.splitlines()[-1] == (
        f"receiver {live.url}: hold orders-1 released by {PERSON}"
    )
    (receipt,) = live.receiver.receipts("orders")
    assert receipt.outcome is Outcome.ACCEPTED
    (check,) = [c for c in receipt.checks if c.name == "amount.min"]
    assert check.passed and f"held as orders-1, released by {PERSON} at " in check.detail
    assert [hold.hold_id for hold in live.receiver.holds()] == ["orders-2"]


def test_hold_discard_records_a_rejection_with_who_and_why(live: Live, tmp_path: Path) -> None:
    why = "negative amounts: the sender reissues the file"
    discarded = dogana(
        "hold", "discard", live.url, "orders-2", "--by", PERSON, "--reason", why, cwd=tmp_path
    )
    assert discarded.code == 0, discarded.err
    (receipt,) = live.receiver.receipts("orders")
    assert receipt.outcome is Outcome.REJECTED
    (failed,) = receipt.failed
    assert f"discarded by {PERSON} at " in failed.detail and failed.detail.endswith(why)
    assert live.receiver.ledger("orders").publication_id is None


def test_a_hold_ends_once_and_the_second_end_refuses(live: Live, tmp_path: Path) -> None:
    assert dogana("hold", "release", live.url, "orders-1", "--by", PERSON, cwd=tmp_path).code == 0
    receipts = live.receiver.receipts("orders")
    for action in ("release", "discard"):
        again = dogana("hold", action, live.url, "orders-1", "--by", "Grace Hopper", cwd=tmp_path)
        assert again.code == 1
        assert f"refused: hold orders-1 was released by {PERSON} at " in again.err
    assert live.receiver.receipts("orders") == receipts


def test_an_unknown_hold_refuses(live: Live, tmp_path: Path) -> None:
    for args in (("show",), ("release", "--by", PERSON), ("discard", "--by", PERSON)):
        found = dogana("hold", args[0], live.url, "orders-9", *args[1:], cwd=tmp_path)
        assert found.code == 1
        assert "refused: no hold 'orders-9' in this receiver" in found.err
    assert len(live.receiver.holds()) == 2


@pytest.mark.parametrize("by", [None, "", "   "])
def test_ending_a_hold_without_a_persons_name_is_a_usage_error(
    live: Live, tmp_path: Path, by: str | None
) -> None:
    named = () if by is None else ("--by", by)
    for action in ("release", "discard"):
        result = dogana("hold", action, live.url, "orders-1", *named, cwd=tmp_path)
        assert result.code == 2, result.err
        assert "--by" in result.err
    assert len(live.receiver.holds()) == 2 and live.receiver.receipts("orders") == []


def test_a_person_ends_holds_from_the_terminal_on_a_database_server(
    server: Live, tmp_path: Path
) -> None:
    listed = dogana("holds", server.url, cwd=tmp_path)
    assert listed.code == 0, listed.err
    assert [line.split()[0] for line in listed.out.splitlines()[3:]] == ["orders-1", "orders-2"]
    shown = dogana("hold", "show", server.url, "orders-1", cwd=tmp_path)
    assert "  2 rows violate it" in shown.out.splitlines(), shown.out + shown.err
    released = dogana("hold", "release", server.url, "orders-1", "--by", PERSON, cwd=tmp_path)
    assert released.code == 0, released.err
    discarded = dogana("hold", "discard", server.url, "orders-2", "--by", PERSON, cwd=tmp_path)
    assert discarded.code == 0, discarded.err
    outcomes = [receipt.outcome for receipt in server.receiver.receipts("orders")]
    assert outcomes == [Outcome.ACCEPTED, Outcome.REJECTED]
    assert server.receiver.holds() == []
    server.receiver.verify("orders")


def test_a_group_held_whole_is_listed_and_shown_with_each_held_tables_rows(
    tmp_path: Path,
) -> None:
    """orders and lines read together, lines' amount negative: one hold over both tables,
    listed with the expectation that holds it (not the together check it fails as a result)."""
    path = tmp_path / "group.sqlite"
    receiver = Receiver(lambda: sqlite3.connect(path), SQLITE)
    lines = replace(ORDERS, table="lines")
    receiver.register(ORDERS)
    receiver.register(lines, Expectations.from_dict(HOLD))
    negative = [order(1, 1), order(2, 2, amount=-1.0)]
    deliveries = {
        "orders": (
            write(tmp_path / "orders.parquet", [order(1, 1)]),
            ORDERS.manifest("nightly", PRODUCED, rows=1),
        ),
        "lines": (
            write(tmp_path / "lines.parquet", negative),
            lines.manifest("nightly", PRODUCED, rows=2),
        ),
    }
    decision = receiver.decide_group(Group((ORDERS, lines)), deliveries)
    assert decision.hold == "orders-1"
    url = f"sqlite:///{path}"
    listed = dogana("holds", url, cwd=tmp_path)
    assert listed.code == 0, listed.err
    (row,) = listed.out.splitlines()[3:]
    assert row.startswith("orders-1  orders, lines") and row.endswith("  amount.min")
    assert "together" not in row
    shown = dogana("hold", "show", url, "orders-1", cwd=tmp_path)
    assert shown.code == 0, shown.err
    out = shown.out.splitlines()
    assert out[0] == f"hold orders-1 of orders, lines in receiver {url}: held"
    assert any(line.startswith("lines: amount.min: violated (hold): ") for line in out)
    assert "  1 row violates it" in out  # one row: the verb agrees
    assert not any(line.startswith("orders: together") for line in out)
    assert f'  dogana hold release {url} orders-1 --by "YOUR NAME"' in out
