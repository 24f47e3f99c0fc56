"""What a log read refuses, by name, telling the person to run a full read; what is published
stays as it was."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from airflow_runs import states, xcom
from cdc_pipeline import (
    COLUMNS,
    PgTable,
    drop_slot,
    log_connector,
    refused,
    started,
    write_pipeline,
)

from dogana_core.manifest import Manifest
from dogana_provider.connectors import RefusedRead
from dogana_provider.connectors.pgoutput import lsn_text

pytestmark = pytest.mark.postgres


def test_a_dropped_slot_refuses_the_read_as_slot_dropped(source: PgTable) -> None:
    reader, position = started(source)
    drop_slot(source.db, source.slot)
    assert refused(reader, source.table, position).rule == "slot_dropped"


def test_a_position_the_slot_has_passed_refuses_the_read_as_slot_behind(source: PgTable) -> None:
    reader, position = started(source)
    source.execute(f"INSERT INTO \"{source.table}\" VALUES (2, 2, now(), 'two', true)")
    reading = reader.read(source.table, since=position)
    list(reading)
    later = reading.proof().position
    assert isinstance(later, int)
    list(reader.read(source.table, since=later))  # the slot is confirmed at later
    error = refused(reader, source.table, position)
    assert error.rule == "slot_behind" and lsn_text(position) in str(error)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ("ADD COLUMN extra integer DEFAULT 5", "extra added"),
        ("DROP COLUMN flag", "flag removed"),
        ("ALTER COLUMN amount TYPE numeric(14,4)", "amount retyped"),
    ],
)
def test_a_column_added_removed_or_retyped_refuses_the_read_as_relation_changed(
    source: PgTable, change: str, named: str
) -> None:
    reader, position = started(source)
    source.execute(f'UPDATE "{source.table}" SET name = %s WHERE id = 1', ("before",))
    source.execute(f'ALTER TABLE "{source.table}" {change}')
    error = refused(reader, source.table, position)
    assert error.rule == "relation_changed" and named in str(error)


def test_a_change_logged_under_other_columns_refuses_the_read_without_declared_columns(
    source: PgTable,
) -> None:
    source.execute(f"INSERT INTO \"{source.table}\" VALUES (1, 1, now(), 'one', true)")
    reader = log_connector(source)
    del reader.config["columns"]
    reading = reader.read(source.table)
    list(reading)
    position = reading.proof().position
    assert isinstance(position, int)
    source.execute(f'UPDATE "{source.table}" SET name = %s WHERE id = 1', ("before",))
    source.execute(f'ALTER TABLE "{source.table}" ADD COLUMN extra integer')
    error = refused(reader, source.table, position)
    assert error.rule == "relation_changed" and "in the log" in str(error)


@pytest.mark.airflow
def test_a_refused_log_read_keeps_what_is_published(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: PgTable
) -> None:
    pipeline = write_pipeline(airflow_home, tmp_path, monkeypatch, source)
    source.execute(f"INSERT INTO \"{source.table}\" VALUES (1, 1, now(), 'one', true)")
    first = pipeline.run()
    assert states(first)["publish"] == "success"
    before, ledger = pipeline.published(), pipeline.ledger()
    source.execute(f'DELETE FROM "{source.table}" WHERE id = 1')
    drop_slot(source.db, source.slot)
    run = pipeline.run()
    assert states(run)["extract"] == "failed" and states(run)["publish"] != "success"
    assert pipeline.published() == before and pipeline.ledger() == ledger
    assert Manifest.from_dict(xcom(first, "extract")["manifest"]).generation == ledger.generation


def test_a_full_read_under_other_declared_columns_is_refused_before_a_slot_is_made(
    source: PgTable,
) -> None:
    reader = log_connector(source)
    reader.config["columns"] = {**COLUMNS, "extra": "int"}
    with pytest.raises(RefusedRead) as raised:
        list(reader.read(source.table))
    assert raised.value.rule == "relation_changed" and "extra removed" in str(raised.value)
    assert source.confirmed() is None, "no slot made"


def test_a_refusal_needing_a_full_read_prints_the_command_whose_run_resets_the_chain(
    airflow_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    source: PgTable,
    capfd: pytest.CaptureFixture[str],
) -> None:
    pipeline = write_pipeline(airflow_home, tmp_path, monkeypatch, source)
    source.execute(f"INSERT INTO \"{source.table}\" VALUES (1, 1, now(), 'one', true)")
    assert states(pipeline.run())["publish"] == "success"
    drop_slot(source.db, source.slot)
    source.execute(f"INSERT INTO \"{source.table}\" VALUES (2, 2, now(), 'two', true)")
    capfd.readouterr()
    assert states(pipeline.run())["extract"] == "failed"
    logged = capfd.readouterr().out
    dag_id = pipeline.module.dag.dag_id
    conf = json.dumps({"dogana_shape": {source.table: "snapshot"}})
    printed = f"airflow dags trigger {dag_id} --conf '{conf}'"
    assert f"to run the full read: {printed}" in logged
    words = shlex.split(printed)
    assert words[:4] == ["airflow", "dags", "trigger", dag_id] and words[4] == "--conf"
    # The run the command triggers, with its conf: the table read whole, the slot made again.
    reset = pipeline.module.dag.test(run_conf=json.loads(words[5]))
    assert states(reset)["publish"] == "success"
    assert xcom(reset, "extract")["manifest"]["shape"] == "snapshot"
    assert sorted(pipeline.published()) == [1, 2]
    assert source.confirmed() is not None
