"""A plan reading from a position the slot has released: a stale plan when the receiver has
published past it since (plan again, or superseded when already met), data loss only when not."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from airflow_runs import states, xcom
from cdc_pipeline import COLUMNS, PgTable, Pipeline, write_pipeline

from dogana_core.planner import Requirement
from dogana_provider.connectors import PgLogicalConnector, ReleasedPosition
from dogana_provider.hooks.dogana import DoganaHook
from dogana_provider.operators.superseded import Planned, stale_read

pytestmark = [pytest.mark.postgres, pytest.mark.airflow]


def insert(source: PgTable, key: int) -> None:
    source.execute(f"INSERT INTO \"{source.table}\" VALUES ({key}, 1, now(), 'n', true)")


def started(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: PgTable
) -> tuple[Pipeline, int]:
    """A pipeline whose first delivery is published, a change after it; its position."""
    pipeline = write_pipeline(airflow_home, tmp_path, monkeypatch, source)
    insert(source, 1)
    first = xcom(pipeline.run(), "extract")["manifest"]["generation"]
    insert(source, 2)
    return pipeline, first


def released(source: PgTable, since: int) -> ReleasedPosition:
    config = source.config(columns=COLUMNS)
    config.pop("kind")
    with pytest.raises(ReleasedPosition) as raised:
        list(PgLogicalConnector(config).read(source.table, since=since))
    assert raised.value.rule == "slot_behind"
    return raised.value


def test_a_plan_behind_a_published_position_is_stale_and_asks_for_a_new_plan_not_a_full_read(
    airflow_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    source: PgTable,
    capfd: pytest.CaptureFixture[str],
) -> None:
    pipeline = write_pipeline(airflow_home, tmp_path, monkeypatch, source)
    insert(source, 1)
    pipeline.run()
    insert(source, 2)
    second = pipeline.run()
    stale_request = xcom(second, "plan")
    insert(source, 3)
    assert states(pipeline.run())["publish"] == "success"  # the slot released up to second's end
    before, ledger = pipeline.published(), pipeline.ledger()

    # A run whose plan was made before the last two publications (a request planned then).
    late = write_pipeline(
        airflow_home,
        tmp_path,
        monkeypatch,
        source,
        extract_options=f", request=json.loads({json.dumps(stale_request)!r})",
        name="late",
    )
    capfd.readouterr()
    run = late.run()
    assert states(run)["extract"] == "failed" and states(run)["publish"] != "success"
    logged = capfd.readouterr().out
    assert "stale plan" in logged and "Plan again" in logged and "nothing is lost" in logged
    assert f"to plan again: airflow dags trigger {late.module.dag.dag_id}" in logged
    assert pipeline.published() == before and pipeline.ledger() == ledger


def test_a_stale_read_whose_requirement_is_met_is_superseded(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: PgTable
) -> None:
    pipeline, first = started(airflow_home, tmp_path, monkeypatch, source)
    pipeline.run()
    pipeline.run()  # its read moved the slot to the second run's position
    hook = DoganaHook(pipeline.receiver_id)
    refused = released(source, first)
    old = Requirement(source.table, datetime(2024, 1, 1, tzinfo=UTC))
    reason, met = stale_read(hook, source.table, refused, [Planned(old, "head")]) or ("", None)
    assert met is True and reason.startswith("read superseded")
    reason, met = stale_read(hook, source.table, refused, []) or ("", None)
    assert met is False and reason.startswith("stale plan")


def test_a_released_position_no_receiver_published_is_not_a_stale_plan(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: PgTable
) -> None:
    pipeline, first = started(airflow_home, tmp_path, monkeypatch, source)
    config = source.config(columns=COLUMNS)
    config.pop("kind")
    reading = PgLogicalConnector(config).read(source.table, since=first)
    list(reading)
    list(PgLogicalConnector(config).read(source.table, since=reading.checkpoint()))
    refused = released(source, first)  # the slot moved past what the receiver published
    assert stale_read(DoganaHook(pipeline.receiver_id), source.table, refused, []) is None
    run = pipeline.run()
    assert states(run)["extract"] == "failed"
