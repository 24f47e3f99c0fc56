"""One Dialect object per database, found through one registry by every name a hook, a
connection or a person gives that database; the receiver and the snapshot sources share it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from airflow.models.connection import Connection

from dogana_provider.cli.common import connection_of_url
from dogana_provider.dialects import (
    DIALECTS,
    MARIADB,
    POSTGRES,
    SQLITE,
    Dialect,
    UnknownDatabase,
    dialect_for,
)
from dogana_provider.receiver.receiver import Receiver
from dogana_provider.sources import SOURCES, UnsupportedRead, snapshots_for


@pytest.mark.parametrize(
    ("name", "dialect"),
    [
        ("sqlite", SQLITE),
        ("postgresql", POSTGRES),
        ("postgres", POSTGRES),
        ("postgresql+psycopg", POSTGRES),
        ("mysql", MARIADB),
        ("mariadb", MARIADB),
        ("MySQL", MARIADB),
    ],
)
def test_every_name_of_a_supported_database_finds_its_one_dialect(
    name: str, dialect: Dialect
) -> None:
    assert dialect_for(name) is dialect


def test_a_connection_without_a_dialect_name_finds_its_dialect_by_its_type() -> None:
    for conn_type, dialect in [("postgres", POSTGRES), ("mysql", MARIADB), ("sqlite", SQLITE)]:
        assert dialect_for(Connection(conn_id="c", conn_type=conn_type)) is dialect


def test_a_database_dogana_does_not_run_on_is_refused_by_its_name() -> None:
    with pytest.raises(UnknownDatabase, match="'oracle'"):
        dialect_for("oracle")
    with pytest.raises(UnsupportedRead, match=r"no snapshot read: .*'oracle'"):
        snapshots_for(Connection(conn_id="c", conn_type="oracle"))


def test_the_receiver_and_the_sources_know_the_same_databases() -> None:
    assert set(SOURCES) == set(DIALECTS.values())


@pytest.mark.parametrize("name", sorted(DIALECTS))
def test_the_command_line_takes_a_receiver_url_by_every_name_of_the_registry(
    name: str, tmp_path: Path
) -> None:
    """A receiver URL's scheme is read by the registry, and becomes its dialect's own name."""
    dialect = DIALECTS[name]
    if dialect.local_file:
        (tmp_path / "warehouse.db").touch()
        connection, _ = connection_of_url(f"{name}:///{tmp_path / 'warehouse.db'}")
        assert json.loads(connection)["conn_type"] == str(dialect)
    else:
        connection, _ = connection_of_url(f"{name}+driver://loader@db:5432/warehouse")
        assert connection == f"{dialect}://loader@db:5432/warehouse"


def test_a_receiver_and_a_source_over_one_hook_share_its_dialect(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.providers.postgres.hooks.postgres import PostgresHook

    monkeypatch.setenv("AIRFLOW_CONN_DOGANA_BOTH", postgres_url)
    hook = PostgresHook(postgres_conn_id="dogana_both")
    assert Receiver.from_hook(hook).dialect is POSTGRES
    assert snapshots_for(hook).dialect is POSTGRES


def test_a_dialect_reads_as_its_databases_name_in_messages_and_logs() -> None:
    assert [str(d) for d in (SQLITE, POSTGRES, MARIADB)] == ["sqlite", "postgresql", "mysql"]
