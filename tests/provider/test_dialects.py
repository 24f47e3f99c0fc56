"""One Dialect object per database, found through one registry by every name a hook, a
connection or a person gives that database; the receiver and the snapshot sources share it."""

from __future__ import annotations

import pytest
from airflow.models.connection import Connection

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
