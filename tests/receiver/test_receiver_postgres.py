"""The conformance suite on PostgreSQL, at 127.0.0.1:5432 (skips when unreachable, not in CI)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import psycopg2
import pyarrow as pa
import pytest
from receiver_conformance import Connect, ReceiverConformance
from receiver_deliveries import NOW, Source, at

from dogana_core.gate import Outcome
from dogana_provider.receiver import Receiver
from dogana_provider.sql import POSTGRES

pytestmark = pytest.mark.postgres


class TestPostgres(ReceiverConformance):
    driver_error = psycopg2.Error
    dialect = POSTGRES
    unstorable: ClassVar[dict[str, pa.Array]] = {
        "a NUL character in a string": pa.array(["a\x00b"])
    }

    @pytest.fixture
    def connect(self, postgres_url: str) -> Connect:
        return lambda: psycopg2.connect(postgres_url)

    @pytest.fixture(autouse=True)
    def _drop_tables(self, postgres_url: str, uid: str) -> Iterator[None]:
        """Drop every table this test created (all carry its uid), so runs do not pile up."""
        yield
        with psycopg2.connect(postgres_url) as connection, connection.cursor() as cursor:
            cursor.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema() AND position(%s in table_name) > 0",
                (uid,),
            )
            for (name,) in cursor.fetchall():
                cursor.execute(f"DROP TABLE {POSTGRES.quote(name)}")


@pytest.mark.airflow
def test_a_postgres_hook_selects_the_database(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An Airflow connection id picks the database: the receiver runs through PostgresHook."""
    from airflow.providers.postgres.hooks.postgres import PostgresHook

    monkeypatch.setenv("AIRFLOW_CONN_DOGANA_TARGET", postgres_url)
    uid = uuid.uuid4().hex[:10]
    receiver = Receiver.from_hook(
        PostgresHook(postgres_conn_id="dogana_target"), prefix=f"s{uid}", clock=lambda: NOW
    )
    assert receiver.dialect is POSTGRES
    source = Source(f"orders_{uid}", tmp_path)
    receiver.register(source.contract)
    source.put(1, 1, "one", at(1))
    try:
        receipt = receiver.receive(*source.full(at(2)))
        assert receipt.outcome is Outcome.ACCEPTED, receipt.failed
        assert receiver.verify(source.table).head == receipt.publication_id
    finally:
        with psycopg2.connect(postgres_url) as connection, connection.cursor() as cursor:
            for name in (source.table, f"s{uid}_tables", f"s{uid}_receipts"):
                cursor.execute(f"DROP TABLE IF EXISTS {POSTGRES.quote(name)}")
