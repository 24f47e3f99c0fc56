"""ExtractOperator's readers: a PostgreSQL table read by two readers in one snapshot is one
delivery that every receiver stages, checks and publishes once; the number of readers, from
the operator or from [dogana] readers, is refused unless it is a whole number from 1 to 64."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psycopg
import pytest
from delivery_dags import ReceiverConnection

from dogana_core import Contract, Shape
from dogana_core.manifest import Manifest
from dogana_provider import settings
from dogana_provider.hooks.dogana import DoganaHook
from dogana_provider.operators.extract import ExtractOperator
from dogana_provider.operators.gate import GateOperator
from dogana_provider.operators.plan import PlanDeliveryOperator
from dogana_provider.operators.publish import PublishOperator

pytestmark = pytest.mark.airflow

ROWS = 5_000


class Pushed:
    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        self.values[key] = value


@pytest.fixture
def source(postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, str]]:
    uid = uuid.uuid4().hex[:8]
    conn_id, table = f"source_{uid}", f"readers_{uid}"
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute(f"CREATE TABLE {table} (id BIGINT PRIMARY KEY, name TEXT)")
        connection.execute(
            f"INSERT INTO {table} SELECT i, 'name ' || i FROM generate_series(1, {ROWS}) i"
        )
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", postgres_url)
    try:
        yield conn_id, table
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as connection:
            connection.execute(f"DROP TABLE {table}")


def test_a_table_read_by_two_readers_is_one_delivery_published_once(
    airflow_home: Path,
    tmp_path: Path,
    source: tuple[str, str],
    receiver_connection: ReceiverConnection,
) -> None:
    conn_id, table = source
    contract = Contract(table, ("id",), {"full": Shape.complete()}, types={"id": "int"})
    run = {"dag": SimpleNamespace(dag_id="readers"), "run_id": f"r_{uuid.uuid4().hex[:6]}"}
    receiver = receiver_connection.conn_id
    request = PlanDeliveryOperator(
        task_id="plan", contract=contract.to_dict(), receiver_conn_id=receiver, shape="full"
    ).execute({**run, "data_interval_end": datetime.now(UTC), "ti": Pushed()})
    delivery = ExtractOperator(
        task_id="extract",
        source_conn_id=conn_id,
        contract=contract.to_dict(),
        request=request,
        output_folder=(tmp_path / "out").as_uri(),
        readers=2,
    ).execute(run)
    folder = tmp_path / "out" / f"{table}.parquet"
    assert delivery["uri"].endswith(f"/{table}.parquet") and folder.is_dir()
    assert sorted(p.name for p in folder.iterdir()) == ["part-00000.parquet", "part-00001.parquet"]
    manifest = Manifest.from_dict(delivery["manifest"])
    assert manifest.rows == ROWS
    decision = GateOperator(task_id="gate", receiver_conn_id=receiver, delivery=delivery).execute(
        run
    )
    PublishOperator(task_id="publish", receiver_conn_id=receiver, decision=decision).execute(run)
    with DoganaHook(receiver).receiver.read(table) as snapshot:
        ids = sorted(row[snapshot.columns.index("id")] for row in snapshot.rows)
    assert ids == list(range(1, ROWS + 1))


@pytest.mark.parametrize("wrong", [0, 65, "two", True, 1.5])
def test_readers_not_a_whole_number_from_1_to_64_is_refused_when_the_dag_is_parsed(
    wrong: Any,
) -> None:
    with pytest.raises(ValueError, match="extract: readers"):
        ExtractOperator(task_id="extract", source_conn_id="s", contract="c.json", readers=wrong)
    task = ExtractOperator(task_id="extract", source_conn_id="s", contract="c.json", readers=2)
    assert task.readers == 2


def test_readers_from_the_dogana_section_are_checked_and_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(settings.env_var(settings.READERS), "3")
    assert settings.readers() == 3
    monkeypatch.setenv(settings.env_var(settings.READERS), "zero")
    with pytest.raises(ValueError, match=r"\[dogana\] readers"):
        settings.readers()
