"""A pipeline mapped over eight tables, registering at once in an empty receiver, under the real
scheduler, on PostgreSQL and on MariaDB.

dogana_test_mapped (dags/mapped.py) maps plan, extract, gate and publish over eight contracts;
the eight plan tasks start together and each registers its contract into a receiver whose own
tables do not exist yet: a fresh PostgreSQL schema, or a fresh MariaDB database, reached by a
connection the test adds through the REST API. Every mapped task must succeed, and each table be
registered once and published whole.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest
from deployment import Client, Run
from stories import Played, Servers, story

TABLES = [f"item{i}" for i in range(8)]


@dataclass(frozen=True)
class Mapped:
    """A run of dogana_test_mapped into an empty receiver, and its final state."""

    receiver: Receiver
    run: Run
    found: dict[str, Any]


class Receiver:
    """An empty PostgreSQL schema or MariaDB database, and the connection id that reaches it."""

    def __init__(self, kind: str, url: str) -> None:
        self.kind = kind
        self.url = url
        self.name = f"dogana_mapped_{uuid.uuid4().hex[:10]}"
        self.conn_id = self.name

    def create(self, client: Client) -> None:
        parts = urlsplit(self.url)
        fields: dict[str, Any] = {
            "host": parts.hostname,
            "port": parts.port,
            "login": parts.username,
        }
        if self.kind == "postgres":
            self._postgres(f"CREATE SCHEMA {self.name}")
            fields["schema"] = parts.path.lstrip("/")
            fields["extra"] = {"options": f"-csearch_path={self.name}"}
            client.add_connection(self.conn_id, "postgres", **fields)
        else:
            self._mariadb(f"CREATE DATABASE {self.name}")
            client.add_connection(self.conn_id, "mysql", schema=self.name, **fields)

    def drop(self) -> None:
        if self.kind == "postgres":
            self._postgres(f"DROP SCHEMA IF EXISTS {self.name} CASCADE")
        else:
            self._mariadb(f"DROP DATABASE IF EXISTS {self.name}")

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        if self.kind == "postgres":
            with psycopg.connect(self.url, options=f"-csearch_path={self.name}") as connection:
                return [tuple(row) for row in connection.execute(sql).fetchall()]
        connection = self._mariadb_connection(self.name)
        try:
            cursor = connection.cursor()
            cursor.execute(sql)
            return [tuple(row) for row in cursor.fetchall()]
        finally:
            connection.close()

    def _postgres(self, statement: str) -> None:
        with psycopg.connect(self.url, autocommit=True) as connection:
            connection.execute(statement)

    def _mariadb(self, statement: str) -> None:
        connection = self._mariadb_connection(None)
        try:
            connection.cursor().execute(statement)
        finally:
            connection.close()

    def _mariadb_connection(self, database: str | None) -> Any:
        import MySQLdb

        parts = urlsplit(self.url)
        options: dict[str, Any] = {
            "host": parts.hostname,
            "port": parts.port,
            "user": parts.username,
            "password": parts.password or "",
        }
        if database is not None:
            options["database"] = database
        return MySQLdb.connect(**options)


def mapped_run(client: Client, kind: str, url: str | None) -> Mapped | None:
    """Add an empty receiver of kind, run the mapped pipeline into it; None without a server."""
    if url is None:
        return None
    receiver = Receiver(kind, url)
    try:
        receiver.create(client)
        client.wait_parsed(["dogana_test_mapped"])
        client.unpause("dogana_test_mapped")
        run = client.trigger("dogana_test_mapped", conf={"receiver": receiver.conn_id})
        return Mapped(receiver, run, client.wait(run))
    except BaseException:
        receiver.drop()
        raise


@story
def mapped_on_postgres(client: Client, servers: Servers) -> Mapped | None:
    return mapped_run(client, "postgres", servers["postgres"])


@story
def mapped_on_mariadb(client: Client, servers: Servers) -> Mapped | None:
    return mapped_run(client, "mariadb", servers["mariadb"])


@pytest.fixture(
    params=[
        pytest.param(mapped_on_postgres, marks=pytest.mark.postgres, id="postgres"),
        pytest.param(mapped_on_mariadb, marks=pytest.mark.mariadb, id="mariadb"),
    ]
)
def mapped(request: pytest.FixtureRequest, played: Played) -> Iterator[Mapped]:
    found = played.result(request.param)
    assert found is not None, "the server was not reachable"
    try:
        yield found
    finally:
        found.receiver.drop()


def test_a_pipeline_mapped_over_eight_tables_registers_them_at_once_in_an_empty_receiver(
    client: Client, mapped: Mapped
) -> None:
    assert mapped.found["state"] == "success", client.explain(mapped.run)
    assert client.states(mapped.run) == {
        f"{task}[{i}]": "success"
        for task in ("plan", "extract", "gate", "publish")
        for i in range(len(TABLES))
    }
    receiver = mapped.receiver
    registered = receiver.rows("SELECT table_name FROM dogana_tables ORDER BY table_name")
    assert registered == [(table,) for table in TABLES]
    for table in TABLES:
        assert receiver.rows(f"SELECT id, name FROM {table} ORDER BY id") == [
            (1, f"{table} one"),
            (2, f"{table} two"),
        ]
