"""A PostgreSQL table delivered from its log through the real operators (plan, extract with the
pg_logical connector, gate, publish): a full read at the slot's consistent point, then the log
from exactly there; the slot moved only up to what the receiver published."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from airflow_runs import states, xcom
from cdc_pipeline import (
    COLUMNS,
    PgTable,
    comparable,
    delivered,
    log_contract,
    write_group_dag,
    write_pipeline,
)

from dogana_core.manifest import Manifest

pytestmark = [pytest.mark.postgres, pytest.mark.airflow]


def test_a_full_read_at_the_slots_consistent_point_then_the_log_publishes_each_change_once(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: PgTable
) -> None:
    pipeline = write_pipeline(airflow_home, tmp_path, monkeypatch, source)
    source.execute(
        f'INSERT INTO "{source.table}" VALUES (1, 10.50, now(), %s, true), '
        "(2, NULL, NULL, '', false), (3, 3, now(), 'three', NULL)",
        ("ünï",),
    )
    inserted = source.execute("SELECT clock_timestamp()").fetchone()[0]
    first, receipt = delivered(pipeline.run())
    assert (first.shape, first.rows, first.tombstones) == ("snapshot", 3, 0)
    assert inserted < first.produced_at <= receipt.received_at
    assert first.generation == source.confirmed(), "the position is the slot's consistent point"
    assert comparable(pipeline.published()) == comparable(source.rows())

    source.execute(f"UPDATE \"{source.table}\" SET name = 'one' WHERE id = 1")
    source.execute(f'DELETE FROM "{source.table}" WHERE id = 3')
    source.execute(f'UPDATE "{source.table}" SET id = 20 WHERE id = 2')
    source.execute(f"INSERT INTO \"{source.table}\" VALUES (4, -1.25, now(), 'four', true)")
    last_write = source.execute("SELECT clock_timestamp()").fetchone()[0]
    changes, receipt = delivered(pipeline.run())
    assert (changes.shape, changes.since) == ("log", first.generation)
    assert (changes.rows, changes.tombstones) == (3, 2)  # 1, 20, 4 live; 2 and 3 deleted
    assert comparable(pipeline.published()) == comparable(source.rows())

    # The dates are true: every write before the read is in it, on the source's clock.
    assert last_write < changes.produced_at <= receipt.received_at
    claims = pipeline.ledger().claims(changes.produced_at, limit=timedelta.max)
    assert claims.exact_as_of == changes.produced_at
    assert pipeline.ledger().generation == changes.generation


def test_the_slot_advances_only_to_the_published_position_at_the_next_read(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: PgTable
) -> None:
    pipeline = write_pipeline(airflow_home, tmp_path, monkeypatch, source)
    source.execute(f"INSERT INTO \"{source.table}\" VALUES (1, 1, now(), 'one', true)")
    first, _ = delivered(pipeline.run())
    source.execute(f"INSERT INTO \"{source.table}\" VALUES (2, 2, now(), 'two', true)")
    second, _ = delivered(pipeline.run())
    assert source.confirmed() == first.generation, "published, but not yet confirmed"
    third, _ = delivered(pipeline.run())
    assert source.confirmed() == second.generation == third.since


def test_writes_during_the_snapshot_are_in_it_or_in_the_log_never_both_never_neither(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: PgTable
) -> None:
    import psycopg

    pipeline = write_pipeline(airflow_home, tmp_path, monkeypatch, source)
    source.execute(
        f"INSERT INTO \"{source.table}\" SELECT i, i, now(), 'row ' || i, i % 2 = 0 "
        "FROM generate_series(1, 200) AS i"
    )
    stop = threading.Event()
    url = source.db.info.dsn

    def write() -> None:
        with psycopg.connect(url, autocommit=True) as db:
            step = 0
            while not stop.is_set():
                step += 1
                db.execute(
                    f'UPDATE "{source.table}" SET amount = amount + 1 WHERE id = %s',
                    (step % 200 + 1,),
                )
                db.execute(
                    f"INSERT INTO \"{source.table}\" VALUES (%s, 0, now(), 'new', false) "
                    "ON CONFLICT (id) DO UPDATE SET name = 'again'",
                    (1000 + step % 50,),
                )
                db.execute(
                    f'DELETE FROM "{source.table}" WHERE id = %s', (1000 + (step + 25) % 50,)
                )

    writer = threading.Thread(target=write)
    writer.start()
    try:
        first, _ = delivered(pipeline.run())
        second, _ = delivered(pipeline.run())
    finally:
        stop.set()
        writer.join()
    third, _ = delivered(pipeline.run())
    assert first.shape == "snapshot" and second.since == first.generation
    assert third.since == second.generation
    assert comparable(pipeline.published()) == comparable(source.rows())


def test_an_extract_killed_mid_read_leaves_the_slot_at_the_published_position(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: PgTable
) -> None:
    pipeline = write_pipeline(airflow_home, tmp_path, monkeypatch, source)
    source.execute(f"INSERT INTO \"{source.table}\" VALUES (1, 1, now(), 'one', true)")
    delivered(pipeline.run())
    source.execute(f"INSERT INTO \"{source.table}\" VALUES (2, 2, now(), 'two', true)")
    second, _ = delivered(pipeline.run())
    for key in range(3, 9):  # one transaction each: a batch each, at fetch_rows=2
        source.execute(f"INSERT INTO \"{source.table}\" VALUES ({key}, {key}, now(), 'n', true)")
        source.execute(f'DELETE FROM "{source.table}" WHERE id = {key - 1}')

    config = source.config(columns=COLUMNS, fetch_rows=2)
    killed = subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).with_name("killed_extract.py")),
            json.dumps(config),
            log_contract(source.table).to_json(),
            str(second.generation),
            str(tmp_path / "killed.parquet"),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    try:
        assert killed.stdout is not None
        lines = iter(killed.stdout.readline, "")  # Airflow may log to stdout first
        assert any(line.strip() == "first batch written" for line in lines)
    finally:
        killed.send_signal(signal.SIGKILL)
        killed.wait()
    assert source.confirmed() == second.generation, "moved to what was published, no further"

    after, _ = delivered(pipeline.run())
    assert after.since == second.generation, "the killed read's changes are read again"
    assert (after.rows, after.tombstones) == (1, 6)
    assert comparable(pipeline.published()) == comparable(source.rows())


def test_delivery_task_group_reads_the_log_through_its_extract_option(
    airflow_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: PgTable
) -> None:
    connector = source.config(columns=COLUMNS)
    contracts = [log_contract(source.table)]
    module, _ = write_group_dag(airflow_home, tmp_path, monkeypatch, connector, contracts)
    source.execute(f"INSERT INTO \"{source.table}\" VALUES (1, 1, now(), 'one', true)")
    first = module.dag.test()
    source.execute(f'DELETE FROM "{source.table}" WHERE id = 1')
    source.execute(f"INSERT INTO \"{source.table}\" VALUES (2, 2, now(), 'two', false)")
    second = module.dag.test()
    task = f"{source.table}.extract"
    shapes = [Manifest.from_dict(xcom(run, task)["manifest"]) for run in (first, second)]
    assert [(m.shape, m.rows, m.tombstones) for m in shapes] == [
        ("snapshot", 1, 0),
        ("log", 1, 1),
    ]
    assert set(states(second).values()) == {"success"}
    assert shapes[1].since == shapes[0].generation
