"""Rules both log connectors hold, each one test over PostgreSQL's log and MariaDB's binlog."""

from __future__ import annotations

from pathlib import Path

import pytest
from airflow_runs import states, xcom
from cdc_pipeline import (
    MariaTable,
    PgTable,
    comparable,
    delivered,
    refused,
    started,
    write_pipeline,
)

from dogana_core.manifest import Manifest


def test_a_truncate_in_the_log_refuses_the_read_as_truncate_in_log(
    log_source: PgTable | MariaTable,
) -> None:
    reader, position = started(log_source)
    log_source.execute(f"TRUNCATE TABLE {log_source.quoted}")
    assert refused(reader, log_source.table, position).rule == "truncate_in_log"


@pytest.mark.airflow
def test_a_rejected_delivery_reads_the_same_changes_again(
    airflow_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    log_source: PgTable | MariaTable,
) -> None:
    source, table, now = log_source, log_source.quoted, log_source.now
    block = '"column_mapping": {"amount": {"min": {"geq_to": 0, "on_violation": "block"}}}'
    pipeline = write_pipeline(
        airflow_home, tmp_path, monkeypatch, source, gate_options=f", expectations={{{block}}}"
    )
    source.execute(f"INSERT INTO {table} VALUES (1, 1, {now}, 'one', true)")
    first, _ = delivered(pipeline.run())
    before = pipeline.published()
    source.execute(f"INSERT INTO {table} VALUES (2, -2, {now}, 'two', true)")
    source.execute(f"DELETE FROM {table} WHERE id = 1")
    rejected = pipeline.run()
    assert states(rejected)["gate"] == "failed" and states(rejected)["publish"] != "success"
    manifest = Manifest.from_dict(xcom(rejected, "extract")["manifest"])
    assert (manifest.since, manifest.rows, manifest.tombstones) == (first.generation, 1, 1)
    assert pipeline.published() == before

    source.execute(f"UPDATE {table} SET amount = 2 WHERE id = 2")
    accepted, _ = delivered(pipeline.run())
    assert accepted.since == first.generation, "the rejected changes are read again"
    assert (accepted.rows, accepted.tombstones) == (1, 1)
    assert comparable(pipeline.published()) == comparable(source.rows())
