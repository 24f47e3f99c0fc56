"""The conformance suite on MariaDB, at 127.0.0.1:3306 (skips when unreachable, not in CI)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar
from urllib.parse import urlsplit

import MySQLdb
import pyarrow as pa
import pytest
from receiver_conformance import Connect, ReceiverConformance, a_hook_selects_the_database

from dogana_provider.sql import MARIADB

pytestmark = pytest.mark.mariadb


def connector(url: str) -> Connect:
    parts = urlsplit(url)
    options = {
        "host": parts.hostname or "127.0.0.1",
        "port": parts.port or 3306,
        "user": parts.username or "root",
        "password": parts.password or "",
        "database": parts.path.lstrip("/"),
        "charset": "utf8mb4",
    }
    return lambda: MySQLdb.connect(**options)


def drop_tables(url: str, needle: str) -> None:
    connection = connector(url)()
    try:
        cursor = connection.cursor()
        cursor.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = DATABASE() AND LOCATE(%s, table_name) > 0",
            (needle,),
        )
        for (name,) in cursor.fetchall():
            cursor.execute(f"DROP TABLE {MARIADB.quote(name)}")
    finally:
        connection.close()


class TestMariaDB(ReceiverConformance):
    driver_error = MySQLdb.Error
    dialect = MARIADB
    unstorable: ClassVar[dict[str, pa.Array]] = {
        "NaN": pa.array([float("nan")]),
        "an infinity": pa.array([float("-inf")]),
    }

    @pytest.fixture
    def connect(self, mariadb_url: str) -> Connect:
        return connector(mariadb_url)

    @pytest.fixture(autouse=True)
    def _drop_tables(self, mariadb_url: str, uid: str) -> Iterator[None]:
        """Drop every table this test created (all carry its uid), so runs do not pile up."""
        yield
        drop_tables(mariadb_url, uid)


@pytest.mark.airflow
def test_a_mysql_hook_selects_the_database(
    mariadb_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An Airflow connection id picks the database: the receiver runs through MySqlHook."""
    from airflow.providers.mysql.hooks.mysql import MySqlHook

    monkeypatch.setenv("AIRFLOW_CONN_DOGANA_TARGET", mariadb_url)
    uid = uuid.uuid4().hex[:10]
    a_hook_selects_the_database(
        MySqlHook(mysql_conn_id="dogana_target"),
        MARIADB,
        uid,
        tmp_path,
        lambda: drop_tables(mariadb_url, uid),
    )
